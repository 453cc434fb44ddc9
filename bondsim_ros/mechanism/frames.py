"""Homogeneous transforms (4x4 numpy arrays) and joint motions."""
from __future__ import annotations

import math

import numpy as np
from transforms3d.axangles import axangle2mat
from transforms3d.euler import mat2euler

IDENTITY = np.eye(4)
AXES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def translation(x=0.0, y=0.0, z=0.0) -> np.ndarray:
    t = np.eye(4)
    t[:3, 3] = (x, y, z)
    return t


def rotation(axis, angle_rad: float) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = axangle2mat(axis, angle_rad)
    return t


def z_to(axis) -> np.ndarray:
    """Rotation taking +z onto `axis` (cylinders, cones and bodies of revolution are built along z)."""
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    z = np.array([0.0, 0.0, 1.0])
    c = float(np.dot(z, a))
    if c > 1 - 1e-12:
        return np.eye(4)
    if c < -1 + 1e-12:
        return rotation((1.0, 0.0, 0.0), math.pi)
    return rotation(np.cross(z, a), math.acos(max(-1.0, min(1.0, c))))


def motion(kind: str, axis, q: float) -> np.ndarray:
    """Transform produced by a joint coordinate q about/along the unit `axis`."""
    if kind == "revolute":
        return rotation(axis, q)
    if kind == "prismatic":
        return translation(*(np.asarray(axis, float) * q))
    return IDENTITY


def is_identity(t: np.ndarray, tol: float = 1e-12) -> bool:
    return bool(np.max(np.abs(t - IDENTITY)) <= tol)  # = allclose(atol=tol, rtol=0), without its overhead


def xyz_rpy(t: np.ndarray):
    """URDF origin of a transform: xyz and fixed-axis roll, pitch, yaw (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    return t[:3, 3].copy(), np.array(mat2euler(t[:3, :3], "sxyz"))


def planar(x: float, y: float, yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    t = np.eye(4)
    t[:2, :2] = ((c, -s), (s, c))
    t[0, 3], t[1, 3] = x, y
    return t
