"""Shared physics of the robot models, written once: the component library the
robot plug-ins (bondsim_ros/robots/<name>/model.py) build their bond graphs from.

- :mod:`.rotations`: elementary rotations (numeric and symbolic), planar rotation laws;
- :mod:`.bodies`: rigid planar bodies, planar joints (Lagrange / parasitic / driven revolute);
- :mod:`.spatial`: rigid spatial bodies (links in their own frame), revolute joints, rolling
  wheels and floor support (Qian & Rahmani);
- :mod:`.omni`: three-wheel omnidirectional bases: chassis, wheel-frame transform, inverse
  kinematics (Damic & Cohodar Husic eq. 24), ideal omni wheel;
- :mod:`.drives`: DC-motor drives (joint servo, open-loop voltage drive) and their gains.

It imports the engine (bondsim_ros.bondgraph) and nothing of the robots, the CLI or ROS.
"""
G = 9.81  # gravity [m/s^2]; the seed papers do not state it


def number(x) -> str:
    """A number as it goes into an element law: repr of the float, so the law is exact."""
    return repr(float(x))
