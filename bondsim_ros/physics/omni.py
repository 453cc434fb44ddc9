"""Three-wheel omnidirectional bases (Damic & Cohodar Husic section 3, after Fig. 19; the 5DPO robot reuses the
layout): the chassis as a planar body in world coordinates, the wheel-frame <-> world
transform, the inverse kinematics of eq. 24 and an ideal omni wheel."""
from __future__ import annotations

import functools
import math

import numpy as np

from bondsim_ros.bondgraph import TF, Component, EffortJunction, FlowJunction, Function, I, Integrator, Se

from .bodies import planar_body
from .rotations import planar_rotation_matrix

# Wheel directions alpha_i in the chassis frame [Damic & Cohodar Husic eq. 4]; the 5DPO has the same layout
ALPHA = (math.pi / 3, math.pi, -math.pi / 3)

# The chassis of an omni base: a planar body whose velocity junctions are the world X, Y and
# the yaw rate W, the wheel transforms' 1-junctions [Fig. 25]
CHASSIS_NAMES = dict(vx="X", vy="Y", w="W", mx="mass_x", my="mass_y", J="inertia_z", X="pos_x", Y="pos_y",
                     TH="heading")


def omni_chassis(doc, m, Izz, start):
    """The chassis [Figs. 25-27] drawn into ``doc``: returns its junctions (X, Y, W); the pose
    is ``pos_x.out``, ``pos_y.out``, ``heading.out``."""
    planar_body(doc, "", m, Izz, start, names=CHASSIS_NAMES)
    return tuple(doc.children[n] for n in ("X", "Y", "W"))


class Transform(Component):
    """Wheel frame (x_i, y_i) <-> world (X, Y, phi) [Fig. 19, eqs. 5-6, 23].

    0-junctions sum the transformed velocities, 1-junctions the transformed forces:
    v_ix = cos(a) X' + sin(a) Y',  v_iy = -sin(a) X' + cos(a) Y' + R phi'.
    """

    def __init__(self, name, radius):
        super().__init__(name, ports={"local": "in", "X": "out", "Y": "out", "W": "out"}, controls={"angle": "in"})
        self.radius = radius

    def build(self):
        lx, ly = self.add(FlowJunction("vx")), self.add(FlowJunction("vy"))
        wx, wy, ww = (self.add(EffortJunction(n)) for n in ("FX", "FY", "M"))
        self.bond(self.local, lx)  # the local port is a 2-vector: x first, then y
        self.bond(self.local, ly)
        (r00, r01), (r10, r11) = planar_rotation_matrix("a")  # world = R(a) local
        tfs = {"cx": (r00, lx, wx), "sx": (r10, lx, wy), "sy": (r01, ly, wx), "cy": (r11, ly, wy)}
        for name, (law, src, dst) in tfs.items():
            self.add(TF(name, law, inputs=["a"]))
            self.bond(src, f"{name}.p1")
            self.bond(f"{name}.p2", dst)
            self.connect(self.angle, f"{name}.a")
        self.add(TF("arm", self.radius))  # moment of the y force about the centre
        self.bond(ly, "arm.p1")
        self.bond("arm.p2", ww)
        self.bond(wx, self.X)
        self.bond(wy, self.Y)
        self.bond(ww, self.W)


def wheel_frame(doc, i, alpha, radius, chassis):
    """Wheel i's Transform at direction ``alpha`` and ``radius`` from the centre, turned by
    phi_i = phi + alpha_i (from ``heading.out``) and bonded to the chassis junctions."""
    tr = doc.add(Transform(f"transform{i}", radius))
    doc.add(Function(f"phi{i}", f"phi + {alpha!r}", inputs=["phi"]))
    doc.connect("heading.out", f"phi{i}.phi")
    doc.connect(f"phi{i}.out", tr.angle)
    for port, junction in zip((tr.X, tr.Y, tr.W), chassis):
        doc.bond(port, junction)
    return tr


def wheel_speed_law(alpha, radius, rw, body_frame=False):
    """Inverse kinematics [eq. 24]: omega_i = -(R wz - vX sin(phi_i) + vY cos(phi_i)) / R_w."""
    if body_frame:  # (vx, vy) in the robot frame: phi drops out
        return f"-({radius!r}*wz - vx*sin({alpha!r}) + vy*cos({alpha!r}))/{rw!r}"
    return f"-({radius!r}*wz - vX*sin(phi + {alpha!r}) + vY*cos(phi + {alpha!r}))/{rw!r}"


@functools.lru_cache(maxsize=16)
def _wheel_speed_fn(alpha, radius, rw):
    import sympy as sp

    law = sp.sympify(wheel_speed_law(alpha, radius, rw, body_frame=True))
    return sp.lambdify(sp.symbols("vx vy wz"), law, "math")


def wheel_speeds(vx, vy, wz, alphas, radius, rw) -> np.ndarray:
    """Eq. 24 for a body twist, numerically (the same law the models are built from)."""
    return np.array([_wheel_speed_fn(float(a), float(radius), float(rw))(vx, vy, wz) for a in alphas])


class OmniWheel(Component):
    """Ideal omni wheel [Magalhães et al. eq. 1]: rolls without slip along its rolling direction
    (RotLin v_y = -r_w omega, a rigid TF into the chassis, no contact force unknown) and its
    rollers turn freely sideways (zero force along the axle)."""

    def __init__(self, name, radius, inertia):
        super().__init__(name, ports={"axle": "in", "hub": "out"}, controls={"omega": "out", "theta": "out"})
        self.radius, self.inertia = radius, inertia

    def build(self):
        spin = self.add(EffortJunction("spin", output=True))
        self.add(I("inertia", self.inertia), TF("rotlin", -1.0 / self.radius), Se("free_roller", 0.0))
        self.add(Integrator("angle", 0.0))
        self.bond(self.axle, spin)
        self.bond(spin, "inertia")
        self.bond(spin, "rotlin.p1")
        self.bond("free_roller", self.hub)  # hub is a 2-vector: x (along the axle) first, then y
        self.bond("rotlin.p2", self.hub)
        self.connect(spin.out, "angle.in_", self.omega)
        self.connect("angle.out", self.theta)


__all__ = ["ALPHA", "CHASSIS_NAMES", "omni_chassis", "Transform", "wheel_frame", "wheel_speed_law", "wheel_speeds",
           "OmniWheel"]
