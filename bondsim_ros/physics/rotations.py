"""Rotations, written once: elementary rotation matrices about a frame axis (numeric or
symbolic) and the planar rotation as element laws (strings of the engine's law language)."""
from __future__ import annotations

import math

import numpy as np


def rot(axis: int, q, lib=math):
    """Rot(axis, q), the rotation by q about x (0), y (1) or z (2): a numpy array for numbers
    (``lib=math``), a sympy Matrix for a symbol (``lib=sympy``)."""
    c, s = lib.cos(q), lib.sin(q)
    rows = {0: [[1, 0, 0], [0, c, -s], [0, s, c]], 1: [[c, 0, s], [0, 1, 0], [-s, 0, c]],
            2: [[c, -s, 0], [s, c, 0], [0, 0, 1]]}[axis]
    return np.array(rows) if lib is math else lib.Matrix(rows)


def rotation_law(rot0: np.ndarray, axis: int):
    """Entries of M(q) = (R0 Rot(axis, q))^T as sympy expressions in q (None where zero): the
    modulated transformer of a revolute joint from the parent frame into the child's."""
    import sympy as sp

    q = sp.Symbol("q")
    R0 = sp.Matrix(3, 3, [sp.Integer(int(v)) if float(v).is_integer() else sp.Float(float(v)) for v in rot0.ravel()])
    M = (R0 * rot(axis, q, sp)).T
    laws = [[None] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(3):
            e = sp.expand(M[i, j])
            if e != 0:
                laws[i][j] = e
    return laws


def rotate_planar(angle: str, x: str, y: str) -> tuple:
    """R(angle) (x, y) as two law strings: (x cos - y sin, x sin + y cos)."""
    return f"{x}*cos({angle}) - {y}*sin({angle})", f"{x}*sin({angle}) + {y}*cos({angle})"


def planar_rotation_matrix(angle: str) -> tuple:
    """Entries of R(angle) as law strings, ((r00, r01), (r10, r11))."""
    return (f"cos({angle})", f"-sin({angle})"), (f"sin({angle})", f"cos({angle})")


__all__ = ["rot", "rotation_law", "rotate_planar", "planar_rotation_matrix"]
