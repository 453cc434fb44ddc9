"""bondsim_ros.mechanism: the mechanism XML of Damic & Cohodar Husic (BondSim3DVisual) -> URDF, kinematics, rendering.

ROS-free. The format is docs/mechanism-xml.md; the conversion and rendering, docs/mechanism.md.

The names below are imported on first use (PEP 562): the converter pulls in trimesh (about a
second), which `bondsim-ros simulate` and the other commands that only register their
arguments here must not pay for.
"""
import importlib

_EXPORTS = {
    "MechanismError": ".errors",
    "load_mechanism": ".loader",
    "Mechanism": ".model",
    "JointInfo": ".model",
    "Probe": ".model",
    "forward_kinematics": ".model",
    "to_urdf": ".urdf",
    "ConversionResult": ".urdf",
}


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_EXPORTS)
