"""Joint transforms of a URDF, as robot_state_publisher computes them.

robot_state_publisher is not on PyPI; the pip environment's ``state_publisher`` node uses this
to publish the same /tf and /tf_static from /joint_states. yourdfpy parses the URDF once; the
per-message work is one 4x4 product per moving joint (no scene graph in the hot path).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from transforms3d.axangles import axangle2mat
from transforms3d.quaternions import mat2quat

MOVING = ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class UrdfJoint:
    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray  # 4x4, parent frame -> joint frame
    axis: np.ndarray  # unit vector in the joint frame


def _transform(rot: np.ndarray, trans) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = rot
    T[:3, 3] = trans
    return T


class UrdfChain:
    """Fixed and moving joint transforms of one URDF (file path or XML text)."""

    def __init__(self, urdf: str, is_text: bool = False):
        import io

        import yourdfpy
        from defusedxml import DefusedXmlException
        from defusedxml.ElementTree import ParseError, fromstring

        where = "robot_description" if is_text else urdf
        data = urdf.encode("utf-8") if is_text else Path(urdf).read_bytes()
        # defusedxml first: no entities or DTD from a parameter anyone may set, and a parse
        # error named here (yourdfpy's fallback parser hides it behind a TypeError)
        try:
            if fromstring(data).tag != "robot":
                raise ValueError(f"{where}: not a URDF (root element is not <robot>)")
        except (ParseError, DefusedXmlException) as exc:
            raise ValueError(f"{where}: not a URDF: {exc}") from None
        robot = yourdfpy.URDF.load(io.BytesIO(data), build_scene_graph=False, load_meshes=False,
                                   build_collision_scene_graph=False, load_collision_meshes=False)
        self.root = robot.base_link
        self.joints = []
        for j in robot.robot.joints:
            origin = np.eye(4) if j.origin is None else np.asarray(j.origin, dtype=float)
            axis = np.array([1.0, 0.0, 0.0]) if j.axis is None else np.asarray(j.axis, dtype=float)
            norm = float(np.linalg.norm(axis))
            if j.type in MOVING and not norm:
                raise ValueError(f"URDF joint {j.name!r}: zero axis")
            self.joints.append(UrdfJoint(j.name, j.type, j.parent, j.child, origin, axis / (norm or 1.0)))
        self.fixed = [j for j in self.joints if j.type not in MOVING and j.type != "floating"]
        self.moving = [j for j in self.joints if j.type in MOVING]

    @staticmethod
    def joint_transform(joint: UrdfJoint, q: float) -> np.ndarray:
        """parent -> child at joint coordinate q."""
        if joint.type == "prismatic":
            return joint.origin @ _transform(np.eye(3), joint.axis * q)
        if joint.type in ("revolute", "continuous"):
            return joint.origin @ _transform(axangle2mat(joint.axis, q), np.zeros(3))
        return joint.origin

    def moving_transforms(self, positions: dict) -> list:
        """[(parent, child, 4x4)] for the moving joints present in ``positions`` (name -> q)."""
        return [(j.parent, j.child, self.joint_transform(j, positions[j.name]))
                for j in self.moving if j.name in positions and math.isfinite(positions[j.name])]

    def fixed_transforms(self) -> list:
        return [(j.parent, j.child, j.origin) for j in self.fixed]

    def link_poses(self, positions: dict) -> dict:
        """Every link's pose in the root frame; joints missing from ``positions`` count as 0."""
        poses = {self.root: np.eye(4)}
        pending = list(self.joints)
        while pending:
            rest = []
            for j in pending:
                if j.parent in poses:
                    poses[j.child] = poses[j.parent] @ self.joint_transform(j, positions.get(j.name, 0.0))
                else:
                    rest.append(j)
            if len(rest) == len(pending):
                raise ValueError(f"URDF joints not connected to {self.root!r}: {[j.name for j in rest]}")
            pending = rest
        return poses


def translation_quaternion(T: np.ndarray):
    """(x, y, z), (qx, qy, qz, qw) of a 4x4 transform, in ROS message order."""
    w, x, y, z = mat2quat(T[:3, :3])
    return tuple(float(v) for v in T[:3, 3]), (float(x), float(y), float(z), float(w))
