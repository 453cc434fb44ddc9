"""The plug-in types: a Robot, a ModelEntry (a model ``bondsim-ros simulate`` runs by name) and
the error a plug-in or binding raises.

Their own module, below both registries (bondsim_ros.robots, bondsim_ros.models), so that a
plug-in's modules and the modules the registries load (yaml_binding) import them without
importing a registry back. It imports nothing else of the package."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


class RobotError(ValueError):
    """An unknown robot, or a plug-in / binding that does not fit (the message names what and where)."""


@dataclass
class Robot:
    """A robot plug-in.

    ``make_twin(command, options=, limits=, log=, config=)`` returns a Twin
    (bondsim_ros.twin.protocol); ``command`` is "builtin" (the model's own reference), "twist"
    (/cmd_vel) or "trajectory" (joint_trajectory), one of ``commands`` or "builtin";
    ``options``: its solver's (a ``SolverOptions``; None: ``twin.protocol.TWIN_OPTIONS``).
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
    # twin_bridge's parameter file for the robot's real driver (``bondsim-ros up --bridge``); None: none
    bridge: Path | None = None
    # a Nav2 map (map.yaml) of the scene the mechanism draws: what the demo's simulated sensors
    # scan, so the scan is of the world in the video; None: the demo runs no sensors
    world: Path | None = None
    # sensor_node's layout of the robot's sensors (a ROS 2 parameter file with a sensor_node section:
    # laser_pose, ir_radius, ir_frame_z, footprint_radius), applied by `up --sensors`, the demo,
    # nav2.launch.py and driver.launch.py; None: the robot declares none, and sensor_node's defaults
    # place the Robotino's
    sensors: Path | None = None
    # what the twin's built-in reference is called (the Robotino's "rose"), for the dynamics node's
    # log; "": the model's own path, named "builtin"
    builtin_path: str = ""


@dataclass
class ModelEntry:
    """A model known by name (``bondsim-ros simulate NAME``, ``bondsim-ros models``)."""

    name: str
    build: Callable  # build() -> bondsim_ros.bondgraph.Model
    description: str
    # plot(result, out_png) -> list of written files: the model's figures for `simulate --plot`
    # (the built-in robots': robots/<name>/plots.py); None: the generic plot of every column
    plot: Callable | None = None
    defaults: dict = field(default_factory=dict)  # suggested simulate span (t_end, dt_out)
    postprocess: Callable | None = None  # postprocess(result) -> result with derived columns
    # postprocess_rows(names) -> derive: derive(rows) the columns postprocess appends (named
    # derive.names), for the table's next rows (2-D, columns ``names``, handed over in order),
    # bit for bit; lets `simulate --csv` write them while the solve runs. None: after it
    postprocess_rows: Callable | None = None
    # write_config(estimates: dict, out_path, notes: dict): the model's parameter file with fitted
    # values substituted (``bondsim-ros fit --config-out``), for models built from one
    write_config: Callable | None = None


__all__ = ["Robot", "RobotError", "ModelEntry"]
