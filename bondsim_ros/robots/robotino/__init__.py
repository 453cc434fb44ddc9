"""The Festo Robotino (Damic & Cohodar Husic 2025) as a plug-in: model, parameters and reference
(model.py, config/robotino.yaml), its twin (twin.py: a ModelTwin whose roller joints are derived from the
wheel angles)."""
from __future__ import annotations

from bondsim_ros.paths import share_file

from .. import Robot

# (bondsim_ros.twin is imported by the functions below, not here: a warm `simulate robotino` imports
# this module for its model entries alone, and the twin's protocol module was 1 % of its time)


def _make_twin(command: str | None = None, options=None, limits=None, log=None, config=None):
    from bondsim_ros.twin.protocol import BUILTIN, TWIST

    from .. import RobotError
    from .twin import RobotinoTwin

    command = BUILTIN if command is None else command
    if command not in (BUILTIN, TWIST):
        raise RobotError(f"robotino: no {command} command (has: twist)")
    return RobotinoTwin(command, options, limits=limits, config=config, log=log)


def robot() -> Robot:
    from bondsim_ros.twin.protocol import TWIST

    from .driver_profile import DRIVER

    return Robot("robotino", "Festo Robotino on the rose path of Damic & Cohodar Husic (2025), or driven by /cmd_vel",
                 share_file("urdf", "robotino", "Robotino_project.xml"), _make_twin, (TWIST,),
                 urdf=share_file("urdf", "robotino.urdf"), model="robotino", interfaces={"driver": DRIVER},
                 bridge=share_file("config", "robotino_bridge.yaml"),
                 world=share_file("config", "maps", "robotino_floor.yaml"),
                 sensors=share_file("config", "robotino_sensors.yaml"), builtin_path="rose")


ROBOT = robot


def MODELS():  # noqa: N802 - the plug-in's models (model.py imported only when they are asked for)
    import dataclasses

    from .model import ENTRIES
    from .plots import plot_robotino  # (matplotlib only when a figure is drawn)

    # the firmware variant has the generic figure of every column
    return [e if e.name == "robotino_firmware" else dataclasses.replace(e, plot=plot_robotino) for e in ENTRIES]
