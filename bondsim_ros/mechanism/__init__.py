"""bondsim_ros.mechanism: the mechanism XML of seed 000 (BondSim3DVisual) -> URDF, kinematics, rendering.

ROS-free. The format is /work/shared/spec/mechanism-xml.md, summarised in docs/mechanism.md.
"""
from .errors import MechanismError
from .loader import load_mechanism
from .model import JointInfo, Mechanism, Probe, forward_kinematics
from .urdf import ConversionResult, to_urdf

__all__ = ["MechanismError", "load_mechanism", "Mechanism", "JointInfo", "Probe", "forward_kinematics",
           "to_urdf", "ConversionResult"]
