"""Rigid planar bodies and planar joints as bond graphs (Newton-Euler form).

A body's centre-of-mass velocities v_x, v_y and rate w sit on 1-junctions with I elements
m, m, J; its pose comes from integrators. A point P at body-frame offset (a, b) from the centre
of mass moves with v_P = v_G + w k x r, r = R(theta) (a, b): a 0-junction summing v_G and the
rate through a TF modulated by theta (x: -r_y w, y: +r_x w). Used by the multibody benchmark mechanisms,
the 3-DOF arm and (without points) the chassis of the omni robots.

A joint "channel" of a body point is one scalar velocity: ("x", a, b) or ("y", a, b) for the
point at (a, b), ("w",) for the body rotation; for an out-of-plane layer ("z", a, b), ("wx",),
("wy",).
"""
from __future__ import annotations

import math

from bondsim_ros.bondgraph import TF, C, Component, EffortJunction, FlowJunction, I, Integrator, R, Se, Sf

from . import number as _f
from .rotations import rotate_planar


# Names of a body's elements (without prefix): velocity junctions, inertias, pose integrators.
BODY_NAMES = dict(vx="vx", vy="vy", w="w", mx="mx", my="my", J="J", X="X", Y="Y", TH="TH")


def planar_body(doc, pre, m, J, pose, points=None, gravity=None, out_of_plane=None, fixed_angle=False,
                names=None):
    """Rigid planar body drawn into ``doc`` (a Model or a Component) with name prefix ``pre``.

    ``pose``: (x0, y0, theta0) of the centre of mass. ``points`` maps a port name to its channel
    list; returns {port: [junction, ...]} for the caller to bond. ``gravity``: g [m/s^2] along
    -y (None: none). ``out_of_plane=(Jp,)`` adds vz, wx, wy (inertias m, Jp, Jp: in-plane
    isotropic, so the world-frame tensor does not turn with theta) for a 3-D joint analysis.
    ``fixed_angle``: the body never turns (constant levers). ``names`` overrides BODY_NAMES
    (a chassis keeps the names its model has always had).
    """
    nm = {k: pre + v for k, v in {**BODY_NAMES, **(names or {})}.items()}
    x0, y0, th0 = pose
    jx = doc.add(EffortJunction(nm["vx"], output=True))
    jy = doc.add(EffortJunction(nm["vy"], output=True))
    jw = doc.add(EffortJunction(nm["w"], output=True))
    doc.add(I(nm["mx"], m), I(nm["my"], m), I(nm["J"], J))
    doc.bond(jx, nm["mx"])
    doc.bond(jy, nm["my"])
    doc.bond(jw, nm["J"])
    if gravity is not None:
        doc.add(Se(f"{pre}weight", -m * gravity))
        doc.bond(f"{pre}weight", jy)
    doc.add(Integrator(nm["X"], x0), Integrator(nm["Y"], y0), Integrator(nm["TH"], th0))
    doc.connect(jx.out, f"{nm['X']}.in_")
    doc.connect(jy.out, f"{nm['Y']}.in_")
    doc.connect(jw.out, f"{nm['TH']}.in_")
    jz = jwx = jwy = None
    if out_of_plane is not None:
        jz = doc.add(EffortJunction(f"{pre}vz"))
        jwx = doc.add(EffortJunction(f"{pre}wx"))
        jwy = doc.add(EffortJunction(f"{pre}wy"))
        doc.add(I(f"{pre}mz", m), I(f"{pre}Jx", out_of_plane[0]), I(f"{pre}Jy", out_of_plane[0]))
        doc.bond(jz, f"{pre}mz")
        doc.bond(jwx, f"{pre}Jx")
        doc.bond(jwy, f"{pre}Jy")
    ports = {}
    for port, channels in (points or {}).items():
        juncs = []
        for ch in channels:
            kind = ch[0]
            if kind == "w":
                juncs.append(jw)
                continue
            if kind in ("wx", "wy"):
                juncs.append(jwx if kind == "wx" else jwy)
                continue
            a, b = ch[1], ch[2]
            if fixed_angle:  # the body never turns: constant levers, no modulation needed
                rx = _f(a * math.cos(th0) - b * math.sin(th0))
                ry = _f(a * math.sin(th0) + b * math.cos(th0))
            else:
                rx, ry = (f"({r})" for r in rotate_planar("th", _f(a), _f(b)))
            pj = doc.add(FlowJunction(f"{pre}{port}_{kind}"))
            if kind == "x":
                doc.bond(jx, pj)
                levers = [(f"{pre}{port}_tx", ry, jw)]  # v_Px = vx - r_y w
            elif kind == "y":
                doc.bond(jy, pj)
                levers = [(f"{pre}{port}_ty", f"-{rx}", jw)]  # v_Py = vy + r_x w
            else:  # z: v_Pz = vz + wx r_y - wy r_x
                doc.bond(jz, pj)
                levers = [(f"{pre}{port}_tzx", f"-{ry}", jwx), (f"{pre}{port}_tzy", rx, jwy)]
            for name, law, jrot in levers:
                if fixed_angle:
                    doc.add(TF(name, float(law.replace("--", ""))))
                else:
                    doc.add(TF(name, law, inputs=["th"]))
                    doc.connect(f"{nm['TH']}.out", f"{name}.th")
                doc.bond(pj, f"{name}.p1")
                doc.bond(f"{name}.p2", jrot)
            juncs.append(pj)
        ports[port] = juncs
    return ports


class PlanarBody(Component):
    """A rigid planar body as a component: one output power port per joint point (a multi-bond,
    channels in the order of its list); controls x, y, theta (pose of the centre of mass) and
    vx, vy, w. Keywords as :func:`planar_body`."""

    def __init__(self, name, m, J, pose, points, **kw):
        super().__init__(name, ports={p: "out" for p in points}, controls={"x": "out", "y": "out", "theta": "out",
                                                                           "vx": "out", "vy": "out", "w": "out"})
        self.args = (m, J, pose, points, kw)

    def build(self):
        m, J, pose, points, kw = self.args
        ports = planar_body(self, "", m, J, pose, points, **kw)
        for port, juncs in ports.items():
            for j in juncs:  # multi-bond: channels in the order of the points list
                self.bond(j, self.ports[port])
        self.connect("X.out", self.x)
        self.connect("Y.out", self.y)
        self.connect("TH.out", self.theta)
        self.connect("vx.out", self.vx)
        self.connect("vy.out", self.vy)
        self.connect("w.out", self.w)


def joint_channel(doc, pre, kind, k=None, c=None, damping=None):
    """One scalar joint channel: the relative velocity on a 0-junction ``pre`` (the caller bonds
    side a *into* it and side b through TF(-1), so its flows give v_a - v_b).

    kind "lagrange": Sf(0), its effort is the multiplier; "parasitic": 1-junction with
    C (1/k) and R (c); "free": R(damping) (a joint's own friction), or nothing.
    """
    j = doc.add(FlowJunction(pre))
    if kind == "lagrange":
        doc.add(Sf(f"{pre}_sf", 0.0))
        doc.bond(f"{pre}_sf", j)
    elif kind == "parasitic":
        kj = doc.add(EffortJunction(f"{pre}_rel"))
        doc.add(C(f"{pre}_k", 1.0 / k), R(f"{pre}_c", c))
        doc.bond(j, kj)
        doc.bond(kj, f"{pre}_k")
        doc.bond(kj, f"{pre}_c")
    elif kind == "free":
        if damping:
            doc.add(R(f"{pre}_b", damping))
            doc.bond(j, f"{pre}_b")
        else:
            raise ValueError("a free channel without damping is just an absent bond")
    else:
        raise ValueError(kind)
    return j


class PlanarJoint(Component):
    """Vector-bond joint: ports ``a`` (and ``b``), one channel per scalar bond of the port.

    ``kinds`` lists per channel "lagrange" / "parasitic" / "free" (see :func:`joint_channel`).
    Body b enters through TF(-1), so each channel constrains v_a - v_b and applies +F to a
    and -F to b (action and reaction).
    """

    def __init__(self, name, kinds, two_sided, k=None, c=None, damping=None):
        ports = {"a": "in", "b": "in"} if two_sided else {"a": "in"}
        super().__init__(name, ports=ports)
        self.kinds, self.two_sided, self.k, self.c, self.damping = kinds, two_sided, k, c, damping

    def build(self):
        for i, kind in enumerate(self.kinds):
            j = joint_channel(self, f"ch{i}", kind, self.k, self.c, self.damping)
            self.bond(self.a, j)
            if self.two_sided:
                self.add(TF(f"ch{i}_neg", -1.0))
                self.bond(self.b, f"ch{i}_neg.p1")
                self.bond(f"ch{i}_neg.p2", j)


class RevoluteJoint(Component):
    """Driven planar revolute joint between port ``a`` (link i-1's distal point, absent for the
    base joint) and port ``b`` (link i's proximal point), both 3-vectors (x, y, w).

    x, y: Sf(0) on the relative velocity v_a - v_b (b enters through TF(-1)); the Sf efforts
    are the joint reaction forces. w: a 0-junction whose common effort is the torque T of
    Se(T) (control input ``torque``); its flows give w_b - w_a to the source, so T acts on link
    i and -T on link i-1. ``driven``: a port ``drive`` (a motor's gear output) takes the place
    of Se(T).
    """

    def __init__(self, name, grounded=False, driven=False):
        ports = {"b": "in"} if grounded else {"a": "in", "b": "in"}
        if driven:  # a drive's shaft bonds to port ``drive`` instead of the torque source
            ports["drive"] = "in"
        super().__init__(name, ports=ports, controls={} if driven else {"torque": "in"})
        self.grounded, self.driven = grounded, driven

    def build(self):
        chans = []
        for axis in ("x", "y"):
            j = self.add(FlowJunction(f"v{axis}"))
            self.add(Sf(f"fix_{axis}", 0.0))
            self.bond(f"fix_{axis}", j)
            chans.append(j)
        jw = self.add(FlowJunction("w"))
        if self.driven:
            self.bond(self.drive, jw)
        else:
            self.add(Se("T", "u", inputs=["u"]))  # drive torque from the control input
            self.bond("T", jw)
            self.connect(self.torque, "T.u")
        chans.append(jw)
        for k, j in enumerate(chans):
            if not self.grounded:
                self.bond(self.a, j)
            self.add(TF(f"neg{k}", -1.0))
            self.bond(self.b, f"neg{k}.p1")
            self.bond(f"neg{k}.p2", j)


__all__ = ["BODY_NAMES", "planar_body", "PlanarBody", "joint_channel", "PlanarJoint", "RevoluteJoint"]
