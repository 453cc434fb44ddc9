"""Planar poses (x, y, yaw): composition and inverse (the twin's placement, the simulated sensors'
mountings) and headings wrapped to one turn."""
from __future__ import annotations

import math


def compose(a, b) -> tuple:
    """Pose ``a`` composed with ``b`` given in ``a``'s frame (a ∘ b)."""
    c, s = math.cos(a[2]), math.sin(a[2])
    return a[0] + c * b[0] - s * b[1], a[1] + s * b[0] + c * b[1], a[2] + b[2]


def inverse(a) -> tuple:
    """The pose ``a⁻¹``: compose(a, inverse(a)) is the identity."""
    c, s = math.cos(a[2]), math.sin(a[2])
    return -(c * a[0] + s * a[1]), s * a[0] - c * a[1], -a[2]


def wrap_angle(a: float) -> float:
    """``a`` in (-pi, pi]."""
    r = math.remainder(a, math.tau)
    return r + math.tau if r <= -math.pi else r
