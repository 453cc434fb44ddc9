"""The plug-in types of bondsim_ros.robots: a Robot and the error a plug-in or binding raises.

Their own module, so that the modules the registry loads (yaml_binding) import them without
importing the registry back."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


class RobotError(ValueError):
    """An unknown robot, or a plug-in / binding that does not fit (the message names what and where)."""


@dataclass
class Robot:
    """A robot plug-in.

    ``make_twin(command, rtol=, atol=, hmax=, limits=, log=, config=)`` returns a Twin
    (bondsim_ros.twin.protocol); ``command`` is "builtin" (the model's own reference), "twist"
    (/cmd_vel) or "trajectory" (joint_trajectory), one of ``commands`` or "builtin".
    ``model`` is the name ``bondsim-ros simulate`` knows the built-in reference model by (or a
    model file path)."""

    name: str
    description: str
    mechanism: Path
    make_twin: Callable
    commands: tuple = ()
    urdf: Path | None = None  # a packaged URDF (with meshes); None: generated from the mechanism
    model: str = ""
    extra: dict = field(default_factory=dict)
    # other programs' ROS interfaces the twin can stand in for (name -> profile mapping,
    # bondsim_ros.twin.interface_profile), e.g. the Robotino's "driver"
    interfaces: dict = field(default_factory=dict)


__all__ = ["Robot", "RobotError"]
