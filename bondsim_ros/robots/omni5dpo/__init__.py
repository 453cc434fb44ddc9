"""The 5DPO omnidirectional robot of Magalhães et al. (model.py) bound to
urdf/omni5dpo/Omni5DPO_project.xml: three wheel axles (speeds w1..w3), planar base."""
from __future__ import annotations


def robot():
    from . import model as m

    from .._xml_robot import xml_robot

    return xml_robot("omni5dpo", "5DPO omni robot (Magalhães et al.), yaw-rate step", m, m.omni5dpo,
                     ("omni5dpo", "Omni5DPO_project.xml"), mobile=True,
                     velocities={f"wheel{i}_axle": f"w{i}" for i in (1, 2, 3)},
                     body_velocity={"vx": "vx", "vy": "vy", "wz": "wz"})  # recorded in the base's frame


ROBOT = robot


def MODELS():  # noqa: N802 - the plug-in's models (model.py imported only when they are asked for)
    import dataclasses

    from .model import ENTRIES
    from .plots import plot_omni5dpo  # (matplotlib only when a figure is drawn)

    return [dataclasses.replace(e, plot=plot_omni5dpo) for e in ENTRIES]
