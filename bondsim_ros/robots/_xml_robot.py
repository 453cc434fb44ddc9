"""Bindings of the built-in robot models (bondsim_ros/robots/<name>/model.py) to their mechanism XML
(urdf/...): every non-virtual joint of the XML, document order, to the model column of the same name (added per
row by the model's own postprocessor where the model records something else, e.g. absolute link
angles), and the planar base pose of the mobile ones."""
from __future__ import annotations

from bondsim_ros.paths import share_file

from . import command_models, model_robot


def xml_robot(name, description, module, build, xml: tuple, *, mobile: bool, derive=None, velocities=None,
              model="", body_velocity=None):
    from bondsim_ros.twin.model_twin import mechanism_joints

    mechanism = share_file("urdf", *xml)
    joints = {j.name: j.name for j in mechanism_joints(mechanism)}
    base = {"x": "x", "y": "y", "yaw": "phi"} if mobile else None
    return model_robot(name, description, build, mechanism, joints, base=base, derive=derive, velocities=velocities,
                       command_models=command_models(module), model=model or name, body_velocity=body_velocity)
