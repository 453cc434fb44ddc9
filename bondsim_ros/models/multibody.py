"""Seed 003 (Boudon et al., bond-graph multibody benchmarks): planar pendulum and slider crank.

Every variant of the paper that this engine can express is a built-in model:

================================  =========================================================
``pendulum_minimal``              one angle, I = J_G + m (L/2)^2 on a 1-junction [Fig. 20]
``pendulum_zcp``                  Cartesian inertias tied to the angle by modulated TFs: the
                                  dependent inertias (derivative causality, ZCP method)
``pendulum_lagrange[_scalar]``    bar in x, y, theta; pivot = two Sf(0) whose efforts are
                                  the Lagrange multipliers (the paper's MSe method)
``pendulum_parasitic[_scalar]``   pivot = parasitic C (1e6 N/m) and R (200 N s/m) [Table 6]
``slider_crank_minimal``          crank angle only: virtual inertia J(gamma) and gyristor
                                  1/2 J'(gamma) gamma'^2 [Fig. 28, App. B eq. 23]
``slider_crank_lagrange[_scalar]``     isostatic planar slider crank, Sf(0) joints
``slider_crank_parasitic[_scalar]``    the same with parasitic C/R joints (1e7 N/m, 200 N s/m,
                                  section 4.2.5)
``slider_crank_hyperstatic_parasitic`` 3 revolute + 1 prismatic joints *in 3-D* (out-of-plane
                                  velocities included, 12 constraints on 9): runs with R/C
``slider_crank_hyperstatic_lagrange``  the same with Sf(0): the engine reports the redundant
                                  constraints by name (ModelError), no singular matrix
``slider_crank_isostatic3d_lagrange``  3-D joints of Table 3 (revolute, cylindrical,
                                  spherical, prismatic): 9 out-of-plane constraints on 9
================================  =========================================================

"Vector" variants group the x/y (and rotation) bonds of a joint into one multi-bond between a
body component and a joint component (ports of dimension 2-3); "scalar" variants draw the same
elements flat in the model, one scalar bond each. The engine flattens vector bonds into scalar
ones before deriving equations, so both give the same DAE (the paper's small vector/scalar
time difference is a 20-sim property, not one of the method).

Conventions (the paper's Figs. 17/27 are not in the text): planar x right, y up, gravity -y.
Pendulum angle theta from the downward vertical, pivot at the origin. Slider crank: crank
pivot O at the origin, crank angle gamma from +x, piston on the x axis to the right, rod angle
theta2 of the vector A->B (sin theta2 = -r sin(gamma)/l).
"""
from __future__ import annotations

from bondsim_ros.plotting import save_figure

import math

import numpy as np

from bondsim_ros.bondgraph import (
    TF, C, Component, EffortJunction, FlowJunction, Function, I, Integrator, Model, R, Recorder, Se, Sf,
)

from . import ModelEntry

G = 9.81  # gravity [m/s^2]; the paper does not state it

# Table 6 (pendulum). The text leaves bar length and mass blank; J = 0.083 kg m^2 is the
# inertia of a 1 kg, 1 m uniform bar about its centre (m L^2/12), so L = 1 m, m = 1 kg.
# theta0 is not given: released from rest at 90 deg (horizontal), our choice.
PENDULUM = dict(m=1.0, L=1.0, J=0.083, B=10.0, k=1e6, c=200.0, theta0=math.pi / 2)

# Table 7 (slider crank) is empty in the text: our choice, documented in docs/examples/003.md.
# Uniform bars (J = m l^2/12); the piston's own rotation is locked by the guide, its J only
# matters to the Lagrange/parasitic models and is set to 0.01 kg m^2. Released from rest at
# gamma0 = 45 deg under gravity, no drive torque (the crank swings through bottom dead centre).
# Parasitic elements: section 4.2.5 gives the slider crank's "parasitic stiffness = 10^-7 N/m",
# which only makes sense as a compliance 1e-7 m/N, i.e. k = 1e7 N/m; damping 200 N s/m (there
# and Table 6). With Table 6's pendulum stiffness 1e6 N/m the piston-velocity error is 5x larger
# (docs/examples/003.md); pass k=1e6 to get it.
SLIDER = dict(r=0.2, l=0.6, m1=1.0, m2=1.0, m3=1.0, J3=0.01, k=1e7, c=200.0, gamma0=math.pi / 4)


def _f(x) -> str:
    return repr(float(x))


# --------------------------------------------------------------------------------------
# Generic planar pieces. A "channel" of a body point is one scalar velocity: ("x", a, b) or
# ("y", a, b) for the point at body-frame offset (a, b) from the centre of mass, ("w",) for the
# body rotation, and for the out-of-plane layer ("z", a, b), ("wx",), ("wy",).
# --------------------------------------------------------------------------------------
def _add_body(doc, pre, m, J, x0, y0, th0, points, gravity=True, out_of_plane=None, fixed_angle=False):
    """Rigid planar body drawn into ``doc`` (a Model or a Component) with name prefix ``pre``.

    Centre-of-mass velocities on 1-junctions (I elements m, m, J), pose by integrators. A point
    velocity v_P = v_G + w x r (r = R(theta) (a, b)) is a 0-junction summing v_G and the
    rotation through a TF modulated by theta: x: -r_y w, y: +r_x w. ``points`` maps a port
    name to its channel list; returns {port: [junction, ...]} for the caller to bond, and the
    names of the angle/velocity signals.
    ``out_of_plane=(Jp,)`` adds vz, wx, wy (inertias m, Jp, Jp: in-plane isotropic, so
    the world-frame tensor does not turn with theta) for the 3-D joint analysis.
    """
    jx = doc.add(EffortJunction(f"{pre}vx", output=True))
    jy = doc.add(EffortJunction(f"{pre}vy", output=True))
    jw = doc.add(EffortJunction(f"{pre}w", output=True))
    doc.add(I(f"{pre}mx", m), I(f"{pre}my", m), I(f"{pre}J", J))
    doc.bond(jx, f"{pre}mx")
    doc.bond(jy, f"{pre}my")
    doc.bond(jw, f"{pre}J")
    if gravity:
        doc.add(Se(f"{pre}weight", -m * G))
        doc.bond(f"{pre}weight", jy)
    doc.add(Integrator(f"{pre}X", x0), Integrator(f"{pre}Y", y0), Integrator(f"{pre}TH", th0))
    doc.connect(jx.out, f"{pre}X.in_")
    doc.connect(jy.out, f"{pre}Y.in_")
    doc.connect(jw.out, f"{pre}TH.in_")
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
    for port, channels in points.items():
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
                rx = f"({_f(a)}*cos(th) - {_f(b)}*sin(th))"
                ry = f"({_f(a)}*sin(th) + {_f(b)}*cos(th))"
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
                    doc.connect(f"{pre}TH.out", f"{name}.th")
                doc.bond(pj, f"{name}.p1")
                doc.bond(f"{name}.p2", jrot)
            juncs.append(pj)
        ports[port] = juncs
    return ports


def _add_constraint(doc, pre, kind, k=None, c=None, damping=None):
    """One scalar joint channel: the relative velocity on a 0-junction ``pre`` (the caller bonds
    side a *into* it and side b through TF(-1), so its flows give v_a - v_b).

    kind "lagrange": Sf(0), its effort is the multiplier; "parasitic": 1-junction with
    C (1/k) and R (c); "free": R(damping) (a joint's own friction, Table 6's B), or nothing.
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


class Joint(Component):
    """Vector-bond joint: ports ``a`` (and ``b``), one channel per scalar bond of the port.

    ``kinds`` lists per channel "lagrange" / "parasitic" / "free" (see _add_constraint).
    Body b enters through TF(-1), so each channel constrains v_a - v_b and applies +F to a
    and -F to b (action and reaction).
    """

    def __init__(self, name, kinds, two_sided, k=None, c=None, damping=None):
        ports = {"a": "in", "b": "in"} if two_sided else {"a": "in"}
        super().__init__(name, ports=ports)
        self.kinds, self.two_sided, self.k, self.c, self.damping = kinds, two_sided, k, c, damping

    def build(self):
        for i, kind in enumerate(self.kinds):
            j = _add_constraint(self, f"ch{i}", kind, self.k, self.c, self.damping)
            self.bond(self.a, j)
            if self.two_sided:
                self.add(TF(f"ch{i}_neg", -1.0))
                self.bond(self.b, f"ch{i}_neg.p1")
                self.bond(f"ch{i}_neg.p2", j)


class Body(Component):
    """Vector-bond rigid body: one output power port per joint point (dimension = channels)."""

    def __init__(self, name, m, J, pose, points, **kw):
        super().__init__(name, ports={p: "out" for p in points}, controls={"x": "out", "y": "out", "theta": "out",
                                                                           "vx": "out", "vy": "out", "w": "out"})
        self.args = (m, J, pose, points, kw)

    def build(self):
        m, J, (x0, y0, th0), points, kw = self.args
        ports = _add_body(self, "", m, J, x0, y0, th0, points, **kw)
        for port, juncs in ports.items():
            for j in juncs:  # multi-bond: channels in the order of the points list
                self.bond(j, self.ports[port])
        self.connect("X.out", self.x)
        self.connect("Y.out", self.y)
        self.connect("TH.out", self.theta)
        self.connect("vx.out", self.vx)
        self.connect("vy.out", self.vy)
        self.connect("w.out", self.w)


def _mechanism(model, bodies, joints, vector, k, c):
    """Draw bodies and joints with vector bonds (components) or scalar bonds (flat).

    bodies: {name: (m, J, pose, points, kw)}; joints: [(name, kinds, a=(body, point),
    b=(body, point) or None, damping)]. Returns {body: prefix for its signals}: in the vector
    form "<body>.x"-style control ports, in the scalar form "<body>_X.out"-style blocks.
    """
    sig = {}
    if vector:
        for bname, (m, J, pose, points, kw) in bodies.items():
            model.add(Body(bname, m, J, pose, points, **kw))
            sig[bname] = {s: f"{bname}.{s}" for s in ("x", "y", "theta", "vx", "vy", "w")}
        for jname, kinds, a, b, damping in joints:
            model.add(Joint(jname, kinds, b is not None, k, c, damping))
            model.bond(f"{a[0]}.{a[1]}", f"{jname}.a")
            if b is not None:
                model.bond(f"{b[0]}.{b[1]}", f"{jname}.b")
        return sig
    ports = {}
    for bname, (m, J, pose, points, kw) in bodies.items():
        ports[bname] = _add_body(model, f"{bname}_", m, J, *pose, points, **kw)
        sig[bname] = {"x": f"{bname}_X.out", "y": f"{bname}_Y.out", "theta": f"{bname}_TH.out",
                      "vx": f"{bname}_vx.out", "vy": f"{bname}_vy.out", "w": f"{bname}_w.out"}
    for jname, kinds, a, b, damping in joints:
        ja = ports[a[0]][a[1]]
        jb = ports[b[0]][b[1]] if b is not None else None
        for i, kind in enumerate(kinds):
            j = _add_constraint(model, f"{jname}_ch{i}", kind, k, c, damping)
            model.bond(ja[i], j)
            if jb is not None:
                model.add(TF(f"{jname}_ch{i}_neg", -1.0))
                model.bond(jb[i], f"{jname}_ch{i}_neg.p1")
                model.bond(f"{jname}_ch{i}_neg.p2", j)
    return sig


# --------------------------------------------------------------------------------------
# Planar pendulum [section 4.1]
# --------------------------------------------------------------------------------------
def pendulum_minimal(**over) -> Model:
    """theta'' (J + m L^2/4) = -m g L/2 sin(theta) - B theta' [Fig. 20]: one 1-junction."""
    p = {**PENDULUM, **over}
    m, L = p["m"], p["L"]
    model = Model("pendulum_minimal", "planar pendulum in its angle (minimal coordinates)")
    w = model.add(EffortJunction("w", output=True))
    model.add(I("J", p["J"] + m * (L / 2) ** 2), R("B", p["B"]))
    model.add(Se("gravity", f"-{_f(m * G * L / 2)}*sin(th)", inputs=["th"]))
    model.add(Integrator("TH", p["theta0"]))
    for n in ("J", "B"):
        model.bond(w, n)
    model.bond("gravity", w)
    model.connect(w.out, "TH.in_")
    model.connect("TH.out", "gravity.th")
    model.add(Recorder("rec", ["theta", "omega"]))
    model.connect("TH.out", "rec.theta")
    model.connect(w.out, "rec.omega")
    return model


def pendulum_zcp(**over) -> Model:
    """Bar with all three inertias, the Cartesian ones slaved to the angle by modulated TFs.

    v_Gx = (L/2) cos(theta) w, v_Gy = (L/2) sin(theta) w: the translational I elements are
    dependent (derivative causality); the BDF solver takes the DAE as it is.
    """
    p = {**PENDULUM, **over}
    m, L = p["m"], p["L"]
    model = Model("pendulum_zcp", "planar pendulum, dependent Cartesian inertias (ZCP method)")
    w = model.add(EffortJunction("w", output=True))
    jx, jy = model.add(EffortJunction("vx")), model.add(EffortJunction("vy"))
    model.add(I("J", p["J"]), R("B", p["B"]), I("mx", m), I("my", m), Se("weight", -m * G))
    model.add(TF("tx", f"{_f(L / 2)}*cos(th)", inputs=["th"]), TF("ty", f"{_f(L / 2)}*sin(th)", inputs=["th"]))
    model.add(Integrator("TH", p["theta0"]))
    model.bond(w, "J")
    model.bond(w, "B")
    model.bond(jx, "mx")
    model.bond(jy, "my")
    model.bond("weight", jy)
    for tf, j in (("tx", jx), ("ty", jy)):
        model.bond(j, f"{tf}.p1")  # f1 = k f2: the CoM velocity is k times the angular rate
        model.bond(f"{tf}.p2", w)
        model.connect("TH.out", f"{tf}.th")
    model.connect(w.out, "TH.in_")
    model.add(Recorder("rec", ["theta", "omega"]))
    model.connect("TH.out", "rec.theta")
    model.connect(w.out, "rec.omega")
    return model


def _pendulum_cartesian(kind, vector, **over) -> Model:
    p = {**PENDULUM, **over}
    m, L, th0 = p["m"], p["L"], p["theta0"]
    name = f"pendulum_{kind}" + ("" if vector else "_scalar")
    model = Model(name, f"planar pendulum in x, y, theta; pivot by {kind} ({'vector' if vector else 'scalar'} bonds)")
    # pivot at body-frame (0, L/2) above the centre of mass; channel w carries the joint damping B
    points = {"pivot": [("x", 0.0, L / 2), ("y", 0.0, L / 2), ("w",)]}
    pose = (L / 2 * math.sin(th0), -L / 2 * math.cos(th0), th0)
    bodies = {"bar": (m, p["J"], pose, points, {})}
    joints = [("pivot", [kind, kind, "free"], ("bar", "pivot"), None, p["B"])]
    sig = _mechanism(model, bodies, joints, vector, p["k"], p["c"])
    model.add(Recorder("rec", ["theta", "omega", "x", "y"]))
    model.connect(sig["bar"]["theta"], "rec.theta")
    model.connect(sig["bar"]["w"], "rec.omega")
    model.connect(sig["bar"]["x"], "rec.x")
    model.connect(sig["bar"]["y"], "rec.y")
    return model


def pendulum_lagrange(**over):
    return _pendulum_cartesian("lagrange", True, **over)


def pendulum_lagrange_scalar(**over):
    return _pendulum_cartesian("lagrange", False, **over)


def pendulum_parasitic(**over):
    return _pendulum_cartesian("parasitic", True, **over)


def pendulum_parasitic_scalar(**over):
    return _pendulum_cartesian("parasitic", False, **over)


def pendulum_reference(t, **over):
    """Independent reference: SciPy's solve_ivp (DOP853, rtol 1e-12) on the closed-form ODE."""
    from scipy.integrate import solve_ivp

    p = {**PENDULUM, **over}
    m, L = p["m"], p["L"]
    Jo = p["J"] + m * L**2 / 4

    def rhs(_t, s):
        return [s[1], (-m * G * L / 2 * math.sin(s[0]) - p["B"] * s[1]) / Jo]

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [p["theta0"], 0.0], method="DOP853", t_eval=t, rtol=1e-12, atol=1e-12)
    return sol.y[0], sol.y[1]


# --------------------------------------------------------------------------------------
# Slider crank [section 4.2]
# --------------------------------------------------------------------------------------
def slider_kinematics(gamma, **over):
    """Closed-form position analysis: rod angle, CoM positions, piston x (numpy, vectorised)."""
    p = {**SLIDER, **over}
    r, l = p["r"], p["l"]
    s, c = np.sin(gamma), np.cos(gamma)
    S = np.sqrt(l**2 - (r * s) ** 2)
    th2 = np.arcsin(-r * s / l)
    return dict(theta2=th2, x1=r / 2 * c, y1=r / 2 * s, x2=r * c + S / 2, y2=r * s / 2, xB=r * c + S)


def _slider_sympy(**over):
    """J(gamma), J'(gamma), generalised gravity force Q(gamma), piston x and T_x [App. B eq. 23]."""
    import sympy as sp

    p = {**SLIDER, **over}
    r, l, m1, m2, m3 = (sp.Float(p[k]) for k in ("r", "l", "m1", "m2", "m3"))
    J1, J2 = m1 * r**2 / 12, m2 * l**2 / 12
    g = sp.Symbol("gam")
    S = sp.sqrt(l**2 - (r * sp.sin(g)) ** 2)
    x1, y1 = r / 2 * sp.cos(g), r / 2 * sp.sin(g)
    x2, y2 = r * sp.cos(g) + S / 2, r * sp.sin(g) / 2
    xB = r * sp.cos(g) + S
    th2 = sp.asin(-r * sp.sin(g) / l)
    d = lambda e: sp.diff(e, g)  # noqa: E731
    Jg = J1 + m1 * (d(x1) ** 2 + d(y1) ** 2) + J2 * d(th2) ** 2 + m2 * (d(x2) ** 2 + d(y2) ** 2) + m3 * d(xB) ** 2
    Jg = sp.simplify(Jg)
    Q = -sp.Float(G) * (m1 * d(y1) + m2 * d(y2))  # -dV/dgamma, the piston stays at y = 0
    return dict(J=Jg, dJ=sp.diff(Jg, g), Q=Q, xB=xB, Tx=d(xB), sym=g)


def slider_crank_minimal(**over) -> Model:
    """One generalised momentum p = J(gamma) gamma' [Fig. 28]: Lagrange's equation
    p' = Q(gamma) + 1/2 J'(gamma) gamma'^2, the second term the paper's gyristor (an Se
    modulated by gamma and gamma')."""
    p = {**SLIDER, **over}
    e = _slider_sympy(**over)
    model = Model("slider_crank_minimal", "slider crank in the crank angle (minimal coordinates)")
    w = model.add(EffortJunction("w", output=True))
    model.add(I("J", str(e["J"]), inputs=["gam"]))
    model.add(Se("gravity", str(e["Q"]), inputs=["gam"]))
    model.add(Se("gyristor", f"0.5*({e['dJ']})*om**2", inputs=["gam", "om"]))
    model.add(Integrator("GAM", p["gamma0"]))
    model.bond(w, "J")
    model.bond("gravity", w)
    model.bond("gyristor", w)
    model.connect(w.out, "GAM.in_", "gyristor.om")
    model.connect("GAM.out", "J.gam", "gravity.gam", "gyristor.gam")
    model.add(Function("xB", str(e["xB"]), inputs=["gam"]), Function("vB", f"({e['Tx']})*om", inputs=["gam", "om"]))
    model.connect("GAM.out", "xB.gam", "vB.gam")
    model.connect(w.out, "vB.om")
    model.add(Recorder("rec", ["gamma", "omega", "x_piston", "v_piston"]))
    model.connect("GAM.out", "rec.gamma")
    model.connect(w.out, "rec.omega")
    model.connect("xB.out", "rec.x_piston")
    model.connect("vB.out", "rec.v_piston")
    return model


def slider_crank_reference(t, **over):
    """Independent reference: solve_ivp on J(gamma) gamma'' = Q - 1/2 J'(gamma) gamma'^2 (numpy)."""
    import sympy as sp
    from scipy.integrate import solve_ivp

    p = {**SLIDER, **over}
    e = _slider_sympy(**over)
    Jf, dJf, Qf, Txf = (sp.lambdify(e["sym"], e[k], "math") for k in ("J", "dJ", "Q", "Tx"))

    def rhs(_t, s):
        g, om = s
        return [om, (Qf(g) - 0.5 * dJf(g) * om**2) / Jf(g)]

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [p["gamma0"], 0.0], method="DOP853", t_eval=t, rtol=1e-12, atol=1e-12)
    v = np.array([Txf(g) for g in sol.y[0]]) * sol.y[1]
    return sol.y[0], sol.y[1], v


# joint channel kinds in 3-D (out-of-plane part; the planar part is always x, y / y, w):
# revolute about z: vz, wx, wy; cylindrical (Table 3 "rotational joint", slides along z):
# wx, wy; spherical: vz; prismatic along x: vz, wx, wy.
_OOP = {"revolute": ["z", "wx", "wy"], "cylindrical": ["wx", "wy"], "spherical": ["z"], "prismatic": ["z", "wx", "wy"]}


def _slider_crank(kind, vector, spatial=None, **over) -> Model:
    """Cartesian slider crank: 3 bodies, joints O (ground-crank), A (crank-rod), B (rod-piston),
    P (piston guide, prismatic along x). ``spatial``: None (planar, isostatic), "hyperstatic"
    (3 revolute + prismatic in 3-D) or "isostatic" (Table 3's joints in 3-D)."""
    p = {**SLIDER, **over}
    r, l, g0 = p["r"], p["l"], p["gamma0"]
    kin = slider_kinematics(g0, **over)
    suffix = "" if vector else "_scalar"
    if spatial:
        name = f"slider_crank_{spatial}{'' if spatial == 'hyperstatic' else '3d'}_{kind}{suffix}"
    else:
        name = f"slider_crank_{kind}{suffix}"
    model = Model(name, f"slider crank in absolute coordinates, {kind} joints, "
                        f"{spatial or 'planar isostatic'}, {'vector' if vector else 'scalar'} bonds")
    J1, J2 = p["m1"] * r**2 / 12, p["m2"] * l**2 / 12
    joint_types = {"O": "revolute", "A": "revolute", "B": "revolute", "P": "prismatic"}
    if spatial == "isostatic":
        joint_types.update(A="cylindrical", B="spherical")

    def chans(joint, a, b):  # channel list of a joint point on a body
        planar = [("y", a, b), ("w",)] if joint == "P" else [("x", a, b), ("y", a, b)]
        if not spatial:
            return planar
        return planar + [("z", a, b) if ch == "z" else (ch,) for ch in _OOP[joint_types[joint]]]

    oop = lambda J: dict(out_of_plane=(J,)) if spatial else {}  # noqa: E731
    bodies = {
        "crank": (p["m1"], J1, (kin["x1"], kin["y1"], g0), {"O": chans("O", -r / 2, 0.0), "A": chans("A", r / 2, 0.0)},
                  oop(J1)),
        "rod": (p["m2"], J2, (kin["x2"], kin["y2"], kin["theta2"]), {"A": chans("A", -l / 2, 0.0),
                                                                     "B": chans("B", l / 2, 0.0)}, oop(J2)),
        # the piston never turns (its rotation is a constrained channel): constant levers
        "piston": (p["m3"], p["J3"], (kin["xB"], 0.0, 0.0), {"B": chans("B", 0.0, 0.0), "P": chans("P", 0.0, 0.0)},
                   dict(fixed_angle=True, **oop(p["J3"]))),
    }
    n = lambda j: len(chans(j, 0, 0))  # noqa: E731
    joints = [("jO", [kind] * n("O"), ("crank", "O"), None, None),
              ("jA", [kind] * n("A"), ("crank", "A"), ("rod", "A"), None),
              ("jB", [kind] * n("B"), ("rod", "B"), ("piston", "B"), None),
              ("jP", [kind] * n("P"), ("piston", "P"), None, None)]
    sig = _mechanism(model, bodies, joints, vector, p["k"], p["c"])
    # theta_rod: the rod's own angle, for the render joint columns (add_slider_joint_columns)
    model.add(Recorder("rec", ["gamma", "omega", "x_piston", "v_piston", "theta_rod"]))
    model.connect(sig["rod"]["theta"], "rec.theta_rod")
    model.connect(sig["crank"]["theta"], "rec.gamma")
    model.connect(sig["crank"]["w"], "rec.omega")
    model.connect(sig["piston"]["x"], "rec.x_piston")
    model.connect(sig["piston"]["vx"], "rec.v_piston")
    return model


def slider_crank_lagrange(**over):
    return _slider_crank("lagrange", True, **over)


def slider_crank_lagrange_scalar(**over):
    return _slider_crank("lagrange", False, **over)


def slider_crank_parasitic(**over):
    return _slider_crank("parasitic", True, **over)


def slider_crank_parasitic_scalar(**over):
    return _slider_crank("parasitic", False, **over)


def slider_crank_hyperstatic_parasitic(**over):
    return _slider_crank("parasitic", True, "hyperstatic", **over)


def slider_crank_hyperstatic_lagrange(**over):
    return _slider_crank("lagrange", True, "hyperstatic", **over)


def slider_crank_isostatic3d_lagrange(**over):
    return _slider_crank("lagrange", True, "isostatic", **over)


# --------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------
def _plot(result, out_png, cols, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(cols), 1, figsize=(7, 2.2 * len(cols)), sharex=True)
    for ax, (col, label) in zip(np.atleast_1d(axes), cols):
        ax.plot(result.t, result[col])
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_title(title)
    np.atleast_1d(axes)[-1].set_xlabel("t [s]")
    return [save_figure(fig, out_png)]


def plot_pendulum(result, out_png):
    return _plot(result, out_png, [("theta", "theta [rad]"), ("omega", "omega [rad/s]")], "planar pendulum")


def plot_slider(result, out_png):
    return _plot(result, out_png, [("gamma", "crank angle [rad]"), ("x_piston", "piston x [m]"),
                                   ("v_piston", "piston velocity [m/s]")], "slider crank")


# --------------------------------------------------------------------------------------
# Joint columns for ``bondsim-ros render`` (urdf/multibody/Pendulum.xml, SliderCrank.xml)
# --------------------------------------------------------------------------------------
PENDULUM_JOINTS = ("pivot_joint",)
SLIDER_JOINTS = ("crank_joint", "rod_joint", "piston_joint")


def add_pendulum_joint_columns(result):
    """pivot_joint = theta (every variant records the bar angle from the downward vertical, which
    is the XML joint's angle: the bar hangs along the joint frame's -y)."""
    return result.with_columns(PENDULUM_JOINTS, [result["theta"]])


def add_slider_joint_columns(result):
    """crank_joint = gamma, rod_joint = theta2 - gamma (the rod relative to the crank: the XML is a
    tree ground -> crank -> rod), piston_joint = x_piston, each from the variant's own states.

    The minimal model has no rod angle: theta2 = asin(-r sin(gamma)/l) from its gamma, the same
    closed form its x_piston comes from. Cartesian variants record the rod body's angle
    (theta_rod), so a joint drift shows as a gap between the rod's end and the piston.
    """
    gamma = result["gamma"]
    if "theta_rod" in result:
        theta2 = result["theta_rod"]
    else:
        theta2 = slider_kinematics(gamma)["theta2"]
    return result.with_columns(SLIDER_JOINTS, [gamma, theta2 - gamma, result["x_piston"]])


_PD = dict(t_end=3.0, dt_out=0.01)
_SD = dict(t_end=2.0, dt_out=0.002)
ENTRIES = [
    ModelEntry("pendulum_minimal", pendulum_minimal, "seed 003 pendulum, minimal coordinate (reference)",
               plot_pendulum, _PD, add_pendulum_joint_columns),
    ModelEntry("pendulum_zcp", pendulum_zcp, "seed 003 pendulum, dependent inertias (ZCP)", plot_pendulum, _PD, add_pendulum_joint_columns),
    ModelEntry("pendulum_lagrange", pendulum_lagrange, "seed 003 pendulum, Sf(0) multipliers, vector bonds",
               plot_pendulum, _PD, add_pendulum_joint_columns),
    ModelEntry("pendulum_lagrange_scalar", pendulum_lagrange_scalar,
               "seed 003 pendulum, Sf(0) multipliers, scalar bonds", plot_pendulum, _PD, add_pendulum_joint_columns),
    ModelEntry("pendulum_parasitic", pendulum_parasitic, "seed 003 pendulum, parasitic C/R pivot, vector bonds",
               plot_pendulum, _PD, add_pendulum_joint_columns),
    ModelEntry("pendulum_parasitic_scalar", pendulum_parasitic_scalar,
               "seed 003 pendulum, parasitic C/R pivot, scalar bonds", plot_pendulum, _PD, add_pendulum_joint_columns),
    ModelEntry("slider_crank_minimal", slider_crank_minimal, "seed 003 slider crank, minimal coordinate (reference)",
               plot_slider, _SD, add_slider_joint_columns),
    ModelEntry("slider_crank_lagrange", slider_crank_lagrange, "seed 003 slider crank, Sf(0) joints, vector bonds",
               plot_slider, _SD, add_slider_joint_columns),
    ModelEntry("slider_crank_lagrange_scalar", slider_crank_lagrange_scalar,
               "seed 003 slider crank, Sf(0) joints, scalar bonds", plot_slider, _SD, add_slider_joint_columns),
    ModelEntry("slider_crank_parasitic", slider_crank_parasitic,
               "seed 003 slider crank, parasitic C/R joints, vector bonds", plot_slider, _SD, add_slider_joint_columns),
    ModelEntry("slider_crank_parasitic_scalar", slider_crank_parasitic_scalar,
               "seed 003 slider crank, parasitic C/R joints, scalar bonds", plot_slider, _SD, add_slider_joint_columns),
    ModelEntry("slider_crank_hyperstatic_parasitic", slider_crank_hyperstatic_parasitic,
               "seed 003 hyperstatic slider crank in 3-D (3 revolute + prismatic), parasitic C/R", plot_slider, _SD, add_slider_joint_columns),
    ModelEntry("slider_crank_hyperstatic_lagrange", slider_crank_hyperstatic_lagrange,
               "seed 003 hyperstatic slider crank with Sf(0): fails on load, naming the redundant constraints",
               plot_slider, _SD, add_slider_joint_columns),
    ModelEntry("slider_crank_isostatic3d_lagrange", slider_crank_isostatic3d_lagrange,
               "seed 003 isostatic slider crank in 3-D (Table 3 joints), Sf(0)", plot_slider, _SD, add_slider_joint_columns),
]
