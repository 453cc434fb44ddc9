"""Rigid spatial bodies and joints as bond graphs, after Qian & Rahmani section IV (Figs. 9-17):
a link in its own frame with the Eulerian junction structure, a revolute joint as the
modulated transformer of the frame rotation, rolling without slip of a wheel and a floor
support. Ports carry the velocity channels named in CHANNELS (body-frame angular velocity,
then point velocity).
"""
from __future__ import annotations

import numpy as np

from bondsim_ros.bondgraph import GY, TF, Component, EffortJunction, FlowJunction, Function, I, Integrator, Se, Sf

from . import G
from . import number as _f
from .rotations import rotation_law


AXES = "xyz"
CHANNELS = ("wx", "wy", "wz", "vx", "vy", "vz")


class Link(Component):
    """Rigid body i in its own frame (paper eqs. 6-14, Fig. 16).

    ports: {port name: (point in the body frame, channels)}; a port's bonds are the point's
    velocity channels in the order given (from "wx wy wz vx vy vz"), power out of the link.
    g0: gravity in the body frame at t = 0 (None: constant (0, 0, -g), a body that only yaws).
    Controls: w_x..w_z (body rates) and v_x..v_z (centre-of-mass velocity) as outputs.
    """

    def __init__(self, name, mass, inertia, com, ports, g0=None):
        controls = {f"{k}_{a}": "out" for k in ("w", "v") for a in AXES}
        super().__init__(name, ports={p: "out" for p in ports}, controls=controls)
        self.mass, self.inertia, self.com, self.port_spec, self.g0 = mass, inertia, com, ports, g0

    def build(self):
        m, Jd = self.mass, self.inertia
        jw = [self.add(EffortJunction(f"w{a}", output=True)) for a in AXES]
        jv = [self.add(EffortJunction(f"v{a}", output=True)) for a in AXES]
        for k, a in enumerate(AXES):
            self.add(I(f"J{a}", float(Jd[k])), I(f"m{a}", float(m)))
            self.bond(jw[k], f"J{a}")
            self.bond(jv[k], f"m{a}")
            self.connect(jw[k].out, self.port(f"w_{a}"))
            self.connect(jv[k].out, self.port(f"v_{a}"))
        # EJS-T (eq. 13): GY_k with ratio h_k = J_k w_k from w_{k+1} to w_{k+2}
        # EJS-F (eq. 14): GY_k with ratio m w_k from v_{k+2} to v_{k+1}
        for k, a in enumerate(AXES):
            k1, k2 = (k + 1) % 3, (k + 2) % 3
            self.add(GY(f"ejsT_{a}", f"{_f(Jd[k])}*w", inputs=["w"]), GY(f"ejsF_{a}", f"{_f(m)}*w", inputs=["w"]))
            self.bond(jw[k1], f"ejsT_{a}.p1")
            self.bond(f"ejsT_{a}.p2", jw[k2])
            self.bond(jv[k2], f"ejsF_{a}.p1")
            self.bond(f"ejsF_{a}.p2", jv[k1])
            self.connect(jw[k].out, f"ejsT_{a}.w", f"ejsF_{a}.w")
        # gravity m g_i (eq. 9): g_i' = g_i x w_i keeps g_i in the body frame
        if self.g0 is None:
            self.add(Se("weight", -m * G))
            self.bond("weight", jv[2])
        else:
            for k, a in enumerate(AXES):
                self.add(Integrator(f"g{a}", float(self.g0[k])))
                self.add(Se(f"weight_{a}", f"{_f(m)}*g", inputs=["g"]))
                self.bond(f"weight_{a}", jv[k])
                self.connect(f"g{a}.out", f"weight_{a}.g")
            for k, a in enumerate(AXES):
                k1, k2 = (k + 1) % 3, (k + 2) % 3
                self.add(Function(f"dg{a}", "g1*w2 - g2*w1", inputs=["g1", "w1", "g2", "w2"]))
                self.connect(f"g{AXES[k1]}.out", f"dg{a}.g1")
                self.connect(f"g{AXES[k2]}.out", f"dg{a}.g2")
                self.connect(jw[k1].out, f"dg{a}.w1")
                self.connect(jw[k2].out, f"dg{a}.w2")
                self.connect(f"dg{a}.out", f"g{a}.in_")
        # joint points: v_P = v_c + w x r, r = P - c (eqs. 7-8); a 1-junction shares v_P
        needed = {}
        for pt, chans in self.port_spec.values():
            key = tuple(np.round(np.asarray(pt, float), 12))
            needed.setdefault(key, set()).update(AXES.index(ch[1]) for ch in chans if ch[0] == "v")
        users = {}
        for pt, _ in self.port_spec.values():
            key = tuple(np.round(np.asarray(pt, float), 12))
            users[key] = users.get(key, 0) + 1
        points = {key: self._point(f"p{k}", np.array(key) - self.com, axes, jw, jv, shared=users[key] > 1)
                  for k, (key, axes) in enumerate(needed.items())}
        for port, (pt, chans) in self.port_spec.items():
            pj = points[tuple(np.round(np.asarray(pt, float), 12))]
            for ch in chans:
                src = jw[AXES.index(ch[1])] if ch[0] == "w" else pj[AXES.index(ch[1])]
                self.bond(src, self.ports[port])

    def _point(self, pre, r, axes, jw, jv, shared):
        if not np.any(np.abs(r) > 1e-15):
            return jv
        # (w x r)_x = w_y r_z - w_z r_y, ... ; TF k on the 0-junction subtracts k w
        lever = {0: ((1, r[2]), (2, -r[1])), 1: ((2, r[0]), (0, -r[2])), 2: ((0, r[1]), (1, -r[0]))}
        out = {}
        for k in sorted(axes):
            a = AXES[k]
            z = self.add(FlowJunction(f"{pre}_{a}0"))
            self.bond(jv[k], z)
            for j, coef in lever[k]:
                if coef == 0.0:
                    continue
                tf = f"{pre}_{a}_tw{AXES[j]}"
                self.add(TF(tf, -float(coef)))
                self.bond(z, f"{tf}.p1")
                self.bond(f"{tf}.p2", jw[j])
            if shared:  # several ports use v_P: a 1-junction gives each the same flow
                one = self.add(EffortJunction(f"{pre}_{a}"))
                self.bond(z, one)
                out[k] = one
            else:
                out[k] = z
        return out


class Joint(Component):
    """Revolute joint i between parent point a (parent frame) and child origin b (child frame).

    Velocities: child = M(q) parent, M = (^{i-1}R_i)^T = (R0 Rot(axis, q))^T, both for w and v
    (eq. 6; the point velocity already carries w x r, eq. 8); efforts go back as M^T.
    The joint rate enters the axis channel of w through a 0-junction (eq. 5): its common
    effort is the joint torque (eq. 4). Port ``drive`` takes the actuator (power in);
    ``spin`` (optional) shares the joint rate (the wheels' rolling constraint).
    Control ``q``: the joint angle (integrator of the rate).
    """

    def __init__(self, name, rot0, axis, spin=False):
        ports = {"a": "in", "b": "in", "drive": "in"}
        if spin:
            ports["spin"] = "out"
        super().__init__(name, ports=ports, controls={"q": "out", "qd": "out"})
        self.rot0, self.axis, self.has_spin = np.asarray(rot0, float), int(axis), spin

    def build(self):
        laws = rotation_law(self.rot0, self.axis)
        qd = self.add(EffortJunction("rate", output=True))
        self.add(Integrator("angle", 0.0))
        self.connect(qd.out, "angle.in_", self.qd)
        self.connect("angle.out", self.q)
        A = [self.add(EffortJunction(f"a_{c}")) for c in CHANNELS]
        B = [self.add(FlowJunction(f"b_{c}")) for c in CHANNELS]
        for k in range(6):
            self.bond(self.a, A[k])
            self.bond(self.b, B[k])
        for blk in (0, 3):  # w block, v block
            for i in range(3):
                for j in range(3):
                    law = laws[i][j]
                    if law is None:
                        continue
                    name = f"M{CHANNELS[blk + i]}_{CHANNELS[blk + j]}"
                    if law.free_symbols:
                        self.add(TF(name, str(law), inputs=["q"]))
                        self.connect("angle.out", f"{name}.q")
                    else:
                        self.add(TF(name, float(law)))
                    self.bond(B[blk + i], f"{name}.p1")
                    self.bond(f"{name}.p2", A[blk + j])
        self.bond(B[self.axis], qd)  # child w_axis = (M w_parent)_axis + q'
        self.bond(self.drive, qd)
        if self.has_spin:
            self.bond(qd, self.ports["spin"])


class Rolling(Component):
    """Rolling without slip of a wheel (Fig. 10): v_x(hub) - r w_y(chassis) - r theta' = 0 as
    Sf(0) on a 0-junction; its effort (output ``force``) is the longitudinal contact force."""

    def __init__(self, name, radius):
        super().__init__(name, ports={"hub": "in", "spin": "in"}, controls={"force": "out"})
        self.radius = radius

    def build(self):
        s = self.add(FlowJunction("slip", output=True))
        jwy, jsp = self.add(EffortJunction("chassis_wy")), self.add(EffortJunction("spin_rate"))
        self.add(Sf("no_slip", 0.0), TF("r_wy", self.radius), TF("r_spin", self.radius))
        self.bond(self.hub, s)  # channel 1: v_x of the wheel centre
        self.bond(self.hub, jwy)  # channel 2: w_y of the chassis
        self.bond(self.spin, jsp)
        self.bond("no_slip", s)
        self.bond(s, "r_wy.p1")
        self.bond("r_wy.p2", jwy)
        self.bond(s, "r_spin.p1")
        self.bond("r_spin.p2", jsp)
        self.connect(s.out, self.force)


class Support(Component):
    """The floor and the nonholonomic constraint at the axle midpoint: Sf(0) on the channels
    given (w_x, w_y, v_y, v_z of the chassis origin). Output ``lam``: effort of the v_y one,
    the lateral constraint force (eq. 1-2's multiplier)."""

    def __init__(self, name, channels):
        super().__init__(name, ports={"p": "in"}, controls={"lam": "out"})
        self.channels = channels

    def build(self):
        for ch in self.channels:
            j = self.add(FlowJunction(f"c_{ch}", output=True))
            self.add(Sf(f"sf_{ch}", 0.0))
            self.bond(self.p, j)
            self.bond(f"sf_{ch}", j)
        self.connect("c_vy.out", self.lam)


__all__ = ["AXES", "CHANNELS", "Link", "Joint", "Rolling", "Support"]
