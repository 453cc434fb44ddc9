"""The bond-graph multibody benchmarks (Boudon et al.): planar pendulum and slider crank.

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

import math

import numpy as np

from bondsim_ros.bondgraph import TF, EffortJunction, Function, I, Integrator, Model, R, Recorder, Se
from bondsim_ros.robots.plugin import ModelEntry
from bondsim_ros.physics import G  # gravity [m/s^2]; the paper does not state it
from bondsim_ros.physics import number as _f
from bondsim_ros.physics.bodies import PlanarBody, PlanarJoint, joint_channel, planar_body

# Table 6 (pendulum). The text leaves bar length and mass blank; J = 0.083 kg m^2 is the
# inertia of a 1 kg, 1 m uniform bar about its centre (m L^2/12), so L = 1 m, m = 1 kg.
# theta0 is not given: released from rest at 90 deg (horizontal), our choice.
PENDULUM = dict(m=1.0, L=1.0, J=0.083, B=10.0, k=1e6, c=200.0, theta0=math.pi / 2)

# Table 7 (slider crank) is empty in the text: our choice, documented in docs/examples/multibody.md.
# Uniform bars (J = m l^2/12); the piston's own rotation is locked by the guide, its J only
# matters to the Lagrange/parasitic models and is set to 0.01 kg m^2. Released from rest at
# gamma0 = 45 deg under gravity, no drive torque (the crank swings through bottom dead centre).
# Parasitic elements: section 4.2.5 gives the slider crank's "parasitic stiffness = 10^-7 N/m",
# which only makes sense as a compliance 1e-7 m/N, i.e. k = 1e7 N/m; damping 200 N s/m (there
# and Table 6). With Table 6's pendulum stiffness 1e6 N/m the piston-velocity error is 5x larger
# (docs/examples/multibody.md); pass k=1e6 to get it.
SLIDER = dict(r=0.2, l=0.6, m1=1.0, m2=1.0, m3=1.0, J3=0.01, k=1e7, c=200.0, gamma0=math.pi / 4)


# --------------------------------------------------------------------------------------
# Mechanisms from the planar bodies and joints of bondsim_ros.physics.bodies
# --------------------------------------------------------------------------------------
def _mechanism(model, bodies, joints, vector, k, c):
    """Draw bodies and joints with vector bonds (components) or scalar bonds (flat).

    bodies: {name: (m, J, pose, points, kw)}; joints: [(name, kinds, a=(body, point),
    b=(body, point) or None, damping)]. Returns {body: prefix for its signals}: in the vector
    form "<body>.x"-style control ports, in the scalar form "<body>_X.out"-style blocks.
    """
    sig = {}
    if vector:
        for bname, (m, J, pose, points, kw) in bodies.items():
            model.add(PlanarBody(bname, m, J, pose, points, gravity=G, **kw))
            sig[bname] = {s: f"{bname}.{s}" for s in ("x", "y", "theta", "vx", "vy", "w")}
        for jname, kinds, a, b, damping in joints:
            model.add(PlanarJoint(jname, kinds, b is not None, k, c, damping))
            model.bond(f"{a[0]}.{a[1]}", f"{jname}.a")
            if b is not None:
                model.bond(f"{b[0]}.{b[1]}", f"{jname}.b")
        return sig
    ports = {}
    for bname, (m, J, pose, points, kw) in bodies.items():
        ports[bname] = planar_body(model, f"{bname}_", m, J, pose, points, gravity=G, **kw)
        sig[bname] = {"x": f"{bname}_X.out", "y": f"{bname}_Y.out", "theta": f"{bname}_TH.out",
                      "vx": f"{bname}_vx.out", "vy": f"{bname}_vy.out", "w": f"{bname}_w.out"}
    for jname, kinds, a, b, damping in joints:
        ja = ports[a[0]][a[1]]
        jb = ports[b[0]][b[1]] if b is not None else None
        for i, kind in enumerate(kinds):
            j = joint_channel(model, f"{jname}_ch{i}", kind, k, c, damping)
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
_VARIANTS = [
    (pendulum_minimal, "pendulum benchmark (Boudon et al.), minimal coordinate (reference)"),
    (pendulum_zcp, "pendulum benchmark (Boudon et al.), dependent inertias (ZCP)"),
    (pendulum_lagrange, "pendulum benchmark (Boudon et al.), Sf(0) multipliers, vector bonds"),
    (pendulum_lagrange_scalar, "pendulum benchmark (Boudon et al.), Sf(0) multipliers, scalar bonds"),
    (pendulum_parasitic, "pendulum benchmark (Boudon et al.), parasitic C/R pivot, vector bonds"),
    (pendulum_parasitic_scalar, "pendulum benchmark (Boudon et al.), parasitic C/R pivot, scalar bonds"),
    (slider_crank_minimal, "slider-crank benchmark (Boudon et al.), minimal coordinate (reference)"),
    (slider_crank_lagrange, "slider-crank benchmark (Boudon et al.), Sf(0) joints, vector bonds"),
    (slider_crank_lagrange_scalar, "slider-crank benchmark (Boudon et al.), Sf(0) joints, scalar bonds"),
    (slider_crank_parasitic, "slider-crank benchmark (Boudon et al.), parasitic C/R joints, vector bonds"),
    (slider_crank_parasitic_scalar, "slider-crank benchmark (Boudon et al.), parasitic C/R joints, scalar bonds"),
    (slider_crank_hyperstatic_parasitic,
     "hyperstatic slider-crank benchmark (Boudon et al.) in 3-D (3 revolute + prismatic), parasitic C/R"),
    (slider_crank_hyperstatic_lagrange,
     "hyperstatic slider-crank benchmark (Boudon et al.) with Sf(0): fails on load, naming the redundant constraints"),
    (slider_crank_isostatic3d_lagrange,
     "isostatic slider-crank benchmark (Boudon et al.) in 3-D (Table 3 joints), Sf(0)"),
]
ENTRIES = [
    ModelEntry(build.__name__, build, text, defaults=_PD, postprocess=add_pendulum_joint_columns)
    if build.__name__.startswith("pendulum") else
    ModelEntry(build.__name__, build, text, defaults=_SD, postprocess=add_slider_joint_columns)
    for build, text in _VARIANTS
]
