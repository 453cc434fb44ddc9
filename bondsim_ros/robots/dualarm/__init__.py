"""The dual-arm mobile manipulator of Qian & Rahmani (model.py) bound to
urdf/dualarm/DualArm_project.xml: 18 joints (two wheels, waist, two 7-DOF arms), planar base."""
from __future__ import annotations


def robot():
    from . import model as m

    from .._xml_robot import xml_robot

    return xml_robot("dualarm", "dual-arm mobile manipulator (Qian & Rahmani) on the paper's section V trajectories",
                     m, m.dualarm, ("dualarm", "DualArm_project.xml"), mobile=True,
                     body_velocity={"vx": "vx", "vy": "vy", "wz": "wz"})  # the commanded variant's, base frame


ROBOT = robot


def MODELS():  # noqa: N802 - the plug-in's models (model.py imported only when they are asked for)
    import dataclasses

    from .model import ENTRIES
    from .plots import plot_dualarm  # (matplotlib only when a figure is drawn)

    return [dataclasses.replace(e, plot=plot_dualarm) for e in ENTRIES]
