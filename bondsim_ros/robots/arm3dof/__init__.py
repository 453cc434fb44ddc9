"""The 3-DOF planar arm of Boiadjiev et al. (model.py) bound to urdf/arm3dof/Arm3DOF.xml:
joints q1..q3 are relative angles, computed per row from the recorded link angles by the
model's own postprocessor (add_columns), as ``bondsim-ros simulate arm3dof`` does."""
from __future__ import annotations


def robot():
    from . import model as m

    from .._xml_robot import xml_robot

    return xml_robot("arm3dof", "3-DOF planar arm (Boiadjiev et al.), A -> B in 2 s", m, m.arm3dof,
                     ("arm3dof", "Arm3DOF.xml"),
                     mobile=False, derive=m.add_columns)


ROBOT = robot


def MODELS():  # noqa: N802 - the plug-in's models (model.py imported only when they are asked for)
    import dataclasses

    from .model import ENTRIES
    from .plots import plot_arm3dof  # (matplotlib only when a figure is drawn)

    return [dataclasses.replace(e, plot=plot_arm3dof) for e in ENTRIES]
