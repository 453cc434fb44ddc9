"""The dual-arm mobile manipulator (Qian & Rahmani, "Bond Graph Modeling and Simulation of a Dual-Arm Mobile
Manipulator", LAGIS / Ecole Centrale de Lille): an 18-DOF nonholonomic mobile manipulator as a
Newton-Euler bond graph, driven open loop by an independent inverse-dynamics computation.

The robot (paper section II, Table I; section V: 18 DOFs without neck, eyes and hands) is the
mechanism XML ``urdf/dualarm/robots/DualArm.xml`` (+ ``Arm.xml`` attached twice): a
differential-drive platform with two driven wheels and two passive casters, a 2-DOF waist and two
7-DOF arms in modified Denavit-Hartenberg form. The bond graph is built *from that XML* (frames,
joint axes, masses and inertias of the loaded mechanism), so the URDF that Pinocchio reads (the
tests' oracle, test/oracles/dualarm_pinocchio.py) and the bond graph describe the same robot;
the dynamics algorithms are independent.

Bond graph (paper section IV, Figs. 9-17), from the component library bondsim_ros.physics:

* ``spatial.Link`` - one rigid body in its own frame (eqs. 6-14): 1-junctions of the body-frame angular
  velocity and of the centre-of-mass velocity with I elements J_xx, J_yy, J_zz and m, m, m; the
  Eulerian junction structure as two rings of modulated gyrators (EJS-T: ratio J_k w_k between
  the w junctions; EJS-F: ratio m w_k between the v junctions), gravity m g_i as Se on the v
  junctions, g_i (gravity in the link frame) integrated from g' = g x w (the paper's
  integrator block for the orientation, section IV.D). Joint points P are 0-junctions
  v_P = v_c + w x r (eqs. 7-8) with constant TFs.
* ``spatial.Joint`` - the MTF of eq. (6): parent-frame point velocities are rotated into the child
  frame by ^iR_{i-1} = (R0 Rot(axis, q))^T (one TF per non-zero entry, modulated by q), and the
  joint's relative rate enters the axis channel through a 0-junction (eq. 5, Fig. 11): its
  common effort is the joint torque of eq. (4).
* ``drives.VoltageDrive`` - Fig. 9, the engine's ``DCMotor`` under a voltage law: voltage source,
  R_a, L_a, GY (k_t), rotor I_a and viscous B_m, gear TF k_r. The shaft is rigid (the paper's
  C = 1/K is left out, see docs/examples/dualarm.md).
* Platform: the chassis is a ``Link`` whose out-of-plane channels (v_z, w_x, w_y) and the
  lateral velocity of the axle midpoint (the nonholonomic constraint, eq. 1) are Sf(0) (their
  efforts are the floor reaction and the lateral constraint force lambda); each wheel is a
  ``Link`` on a ``Joint`` and a ``Rolling`` constraint v_x - r w_y - r theta' = 0 (Sf(0), its
  effort the longitudinal contact force). The paper's stiff C/R floor (section IV.D) is
  replaced by these ideal constraints.

Inputs: the motor voltages U(t) of the inverse motor model, from the joint torques of a
recursive Newton-Euler inverse dynamics in body frames (``newton_euler``, paper eqs. 6-11;
planar base, its generalized forces mapped to the two wheel torques and lambda), along the
reference trajectories of section V. The tests hold ``newton_euler`` against Pinocchio's RNEA.
Each U(t) is a Chebyshev series in t (fitted on Chebyshev nodes; the fit error is measured and
reported), so the model is an ordinary bond graph with Se(U(t)) sources, run open loop as in
the paper.

``dualarm_command`` (``COMMAND_MODELS``) is the same bond graph with every motor under
feedback instead: PI wheel-speed loops following a body twist (cmd_vel) through the
differential-drive kinematics, PID servos on the waist and arm joints following run-time
references (JointTrajectory); gains and choices in docs/examples.md.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from bondsim_ros.bondgraph import Function, Gain, Input, Integrator, Model, Recorder
from bondsim_ros.robots.plugin import ModelEntry
from bondsim_ros.paths import share_file
from bondsim_ros.physics import G
from bondsim_ros.physics import number as _f
from bondsim_ros.physics.drives import ServoDrive, VoltageDrive, servo_gains, wheel_speed_gains
from bondsim_ros.physics.rotations import rot, rotate_planar
from bondsim_ros.physics.spatial import CHANNELS, Joint, Link, Rolling, Support

XML_DIR = share_file("urdf", "dualarm")
PROJECT_XML = XML_DIR / "DualArm_project.xml"
ROBOT_XML = XML_DIR / "robots" / "DualArm.xml"

T_END = 2.0  # our choice: the t^2 references of section V reach 3.6 rad on q_r7 at 2 s
WHEEL_RADIUS = 0.08  # must match the XML (checked in build_chain)
WHEEL_TRACK = 0.44

# Section V: platform v_d = 0.1 t, w_d = 0.05 t; joints q_d = c t^2 with these c.
V_RATE, W_RATE = 0.1, 0.05
JOINT_COEF = {"w_q1": 0.1, "w_q2": 0.2,
              **{f"r_q{k}": 0.1 * (k + 2) for k in range(1, 8)},
              **{f"l_q{k}": -0.1 * (k + 2) for k in range(1, 8)}}
ARM_JOINTS = tuple(JOINT_COEF)  # waist + right + left, the paper's order
WHEELS = ("wheel_l", "wheel_r")
ACTUATED = WHEELS + ARM_JOINTS  # the 18 motors

# DC motors and gears (paper Fig. 9 names; values: plausible, chosen here - docs/examples/dualarm.md).
# (R_a [ohm], L_a [H], k_t = k_e [N m/A], I_a [kg m^2], B_m [N m s/rad], k_r [-])
MOTORS = {
    "wheel": (0.6, 2.0e-4, 0.06, 1.5e-5, 2.0e-6, 30.0),
    "waist": (0.5, 2.0e-4, 0.07, 2.0e-5, 2.0e-6, 160.0),
    "shoulder": (1.0, 3.0e-4, 0.05, 1.0e-5, 1.0e-6, 120.0),  # q1, q2
    "arm": (1.2, 3.0e-4, 0.04, 6.0e-6, 1.0e-6, 100.0),  # q3, q4
    "wrist": (2.0, 4.0e-4, 0.03, 3.0e-6, 5.0e-7, 80.0),  # q5..q7
}


def motor_of(joint: str) -> tuple:
    if joint in WHEELS:
        return MOTORS["wheel"]
    if joint.startswith("w_"):
        return MOTORS["waist"]
    k = int(joint[-1])
    return MOTORS["shoulder" if k <= 2 else "arm" if k <= 4 else "wrist"]


CHEB_DEGREE = 40  # Chebyshev degree of the voltage laws (fit error reported by fit_report())


# --------------------------------------------------------------------------------------
# The robot as rigid bodies, read from the mechanism XML
# --------------------------------------------------------------------------------------
@dataclass
class Body:
    name: str  # the joint name (the chassis: "base")
    parent: str | None
    rot0: np.ndarray  # parent body frame -> joint frame at q = 0 (3x3)
    pos0: np.ndarray  # joint origin in the parent body frame
    axis: int  # 0, 1, 2: joint axis x, y, z of the joint frame
    mass: float
    com: np.ndarray  # in the body frame
    inertia: np.ndarray  # principal inertias (diagonal of the tensor about the com, body frame)
    children: list


def _clean(a: np.ndarray) -> np.ndarray:
    """Round the 1e-17 residues of cos(90 deg) so constant TFs of zero are not drawn."""
    a = np.where(np.abs(a) < 1e-12, 0.0, a)
    return np.where(np.abs(np.abs(a) - 1.0) < 1e-12, np.sign(a), a)


@functools.lru_cache(maxsize=4)
def build_chain(xml: str = str(ROBOT_XML)) -> dict:
    """Bodies of the robot from the XML, keyed by joint name, in document order (dict order).

    Fixed edges (the arm attachments, probes) are folded into the next joint's transform; the
    links they carry must be massless. Each body's inertia tensor must be diagonal in its frame
    (the XML is built so: one massive shape per link, on one axis).
    """
    from bondsim_ros.mechanism import load_mechanism
    from bondsim_ros.mechanism.geometry import link_inertial

    mech = load_mechanism(xml)
    unit = mech.robots[0]
    if not unit.planar:
        raise ValueError(f"{xml}: the robot must start with the virtual planar base base_x, base_y, base_phi")
    edges = unit.edges[3:]
    root = unit.edges[2].child
    owner = {root: ("base", np.eye(4))}  # link -> (body, transform body -> link)
    bodies = {}

    def inertial(link):
        p = link_inertial(unit.links[link])
        return (0.0, np.zeros(3), np.zeros((3, 3))) if p is None else p

    m, c, J = inertial(root)
    bodies["base"] = Body("base", None, np.eye(3), np.zeros(3), 2, m, c, J, [])
    for e in edges:
        if e.parent not in owner:
            raise ValueError(f"{xml}: joint {e.name} hangs from unknown link {e.parent}")
        body, t_bp = owner[e.parent]
        t = t_bp @ e.origin
        if e.kind == "fixed":
            mm, _, _ = inertial(e.child)
            if mm:
                raise ValueError(f"{xml}: link {e.child} is fixed to body {body} and has a mass; "
                                 f"put its mass on the body's own link")
            owner[e.child] = (body, t)
            continue
        if e.kind != "revolute":
            raise ValueError(f"{xml}: joint {e.name}: only revolute joints are modelled, got {e.kind}")
        axis = [k for k in range(3) if abs(e.axis[k]) == 1.0]
        if len(axis) != 1 or e.axis[axis[0]] != 1.0:
            raise ValueError(f"{xml}: joint {e.name}: axis must be +x, +y or +z of its frame, got {e.axis}")
        m, c, J = inertial(e.child)
        bodies[e.name] = Body(e.name, body, _clean(t[:3, :3]), t[:3, 3].copy(), axis[0], m, c, J, [])
        bodies[body].children.append(e.name)
        owner[e.child] = (e.name, np.eye(4))
    for b in bodies.values():
        off = b.inertia - np.diag(np.diag(b.inertia))
        if np.abs(off).max() > 1e-9 * max(np.abs(b.inertia).max(), 1e-12):
            raise ValueError(f"{xml}: body {b.name}: inertia tensor not diagonal in its frame: {b.inertia.tolist()}")
        b.inertia = np.diag(b.inertia).copy()
        if b.mass <= 0:
            raise ValueError(f"{xml}: body {b.name} has no mass")
    missing = set(ACTUATED) - set(bodies)
    if missing or len(bodies) != 1 + len(ACTUATED):
        raise ValueError(f"{xml}: expected joints {', '.join(ACTUATED)}; missing {sorted(missing)}, "
                         f"found {[b for b in bodies if b != 'base']}")
    for w, side in zip(WHEELS, (1, -1)):
        p = bodies[w].pos0
        if not np.allclose(p, (0.0, side * WHEEL_TRACK / 2, WHEEL_RADIUS), atol=1e-12) or bodies[w].axis != 1:
            raise ValueError(f"{xml}: wheel {w} must turn about y at (0, {side * WHEEL_TRACK / 2}, {WHEEL_RADIUS}), "
                             f"is at {p.tolist()} about axis {bodies[w].axis}")
    return bodies


# --------------------------------------------------------------------------------------
# Reference trajectories (section V)
# --------------------------------------------------------------------------------------
def platform_reference(t):
    """x, y, phi of the axle midpoint and v, w, v', w' for v_d = 0.1 t, w_d = 0.05 t.

    phi = 0.025 t^2 and, since v/w = 2 m, x = 2 sin(phi), y = 2 (1 - cos(phi)) in closed form.
    """
    t = np.asarray(t, float)
    phi = 0.5 * W_RATE * t**2
    rad = V_RATE / W_RATE
    return dict(x=rad * np.sin(phi), y=rad * (1 - np.cos(phi)), phi=phi, v=V_RATE * t, w=W_RATE * t,
                dv=V_RATE + 0 * t, dw=W_RATE + 0 * t)


def joint_reference(t):
    """q, q', q'' of the 18 actuated joints (dicts by name); wheels from v, w by rolling."""
    t = np.asarray(t, float)
    q, qd, qdd = {}, {}, {}
    for n, c in JOINT_COEF.items():
        q[n], qd[n], qdd[n] = c * t**2, 2 * c * t, 2 * c + 0 * t
    half = WHEEL_TRACK / 2
    for n, s in (("wheel_l", -1), ("wheel_r", 1)):  # wheel centre speed v -+ w b/2
        k = (V_RATE + s * W_RATE * half) / WHEEL_RADIUS
        q[n], qd[n], qdd[n] = 0.5 * k * t**2, k * t, k + 0 * t
    return q, qd, qdd


def wheel_mapping(gen: dict) -> dict:
    """Base generalized forces and wheel RNEA terms -> wheel torques, contact forces, lambda.

    Constraints (Pinocchio velocity coordinates, body frame): rolling of wheel L/R
    v_x -+ (b/2) w - r theta'_{L/R} = 0, no lateral slip v_y = 0 (eq. 1). RNEA = S tau + A^T mu
    with mu = (F_L, F_R, lambda) the contact forces on the wheels: F_L + F_R = Fx,
    (b/2)(F_R - F_L) = Mz, lambda = Fy, and tau_{L/R} = RNEA_{L/R} + r F_{L/R}.
    """
    half, r = WHEEL_TRACK / 2, WHEEL_RADIUS
    diff = gen["Mz"] / half  # F_R - F_L
    f_r, f_l = 0.5 * (gen["Fx"] + diff), 0.5 * (gen["Fx"] - diff)
    return dict(wheel_l=gen["wheel_l"] + r * f_l, wheel_r=gen["wheel_r"] + r * f_r, F_l=f_l, F_r=f_r,
                lam=gen["Fy"])


def reference_base(t: float) -> tuple:
    p = platform_reference(t)
    return (float(p["x"]), float(p["y"]), float(p["phi"]), float(p["v"]), 0.0, float(p["w"]), float(p["dv"]), 0.0,
            float(p["dw"]))


def joint_torques(t) -> dict:
    """Actuator torques (18 joints) and platform contact forces along the reference, by name,
    each an array over ``t``: body-frame Newton-Euler (``newton_euler``) + wheel mapping (the
    paper's open-loop 'exact mathematical model', section V)."""
    t = np.atleast_1d(np.asarray(t, float))
    q, qd, qdd = joint_reference(t)
    bodies = build_chain()
    rows = []
    for k, tk in enumerate(t):
        pick = lambda d: {n: float(d[n][k]) for n in d}  # noqa: E731
        gen = newton_euler(reference_base(tk), pick(q), pick(qd), pick(qdd), bodies)
        rows.append({**gen, **wheel_mapping(gen)})
    return {n: np.array([r[n] for r in rows]) for n in rows[0]}


# --------------------------------------------------------------------------------------
# Inverse dynamics: recursive Newton-Euler in body frames (paper eqs. 6-11), numpy
# --------------------------------------------------------------------------------------
def _cross(a, b):
    """a x b of two 3-vectors: np.cross's axis handling costs 31 us a call (this: 1.3 us), 15k calls per build
    (a1 b2 - a2 b1, ... as np.cross computes them: the same values)."""
    a0, a1, a2 = float(a[0]), float(a[1]), float(a[2])
    b0, b1, b2 = float(b[0]), float(b[1]), float(b[2])
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def newton_euler(base, q, qd, qdd, bodies=None) -> dict:
    """Generalized forces in Pinocchio's convention (Fx, Fy, Mz of the planar base in its
    frame, joint torques), written from the paper's body-frame relations, independent of
    Pinocchio: forward pass eqs. (6)-(8) for velocities and accelerations, backward pass
    eqs. (9)-(11) for forces; gravity enters as a base acceleration +g."""
    bodies = bodies or build_chain()
    _, _, _, vx, vy, w, ax, ay, dw = base
    kin = {}
    for n, b in bodies.items():
        if b.parent is None:
            om, al = np.array([0.0, 0.0, w]), np.array([0.0, 0.0, dw])
            # classical acceleration of the origin in the rotating body frame, plus gravity
            acc = np.array([ax - w * vy, ay + w * vx, G])
            kin[n] = (np.eye(3), om, al, acc)
            continue
        _, omp, alp, accp = kin[b.parent]
        Rm = b.rot0 @ rot(b.axis, q[n])
        e = np.zeros(3)
        e[b.axis] = 1.0
        om_rel = Rm.T @ omp
        om = om_rel + e * qd[n]
        al = Rm.T @ alp + e * qdd[n] + _cross(om_rel, e * qd[n])
        acc = Rm.T @ (accp + _cross(alp, b.pos0) + _cross(omp, _cross(omp, b.pos0)))
        kin[n] = (Rm, om, al, acc)
    force, moment = {}, {}
    for n in reversed(list(bodies)):
        b = bodies[n]
        Rm, om, al, acc = kin[n]
        ac = acc + _cross(al, b.com) + _cross(om, _cross(om, b.com))
        F = b.mass * ac
        Jw = b.inertia * om
        N = b.inertia * al + _cross(om, Jw)  # eq. (11), EJS-T: w x J w
        f, nn = F.copy(), N + _cross(b.com, F)
        for c in b.children:
            Rc = kin[c][0]
            fc = Rc @ force[c]
            f += fc
            nn += Rc @ moment[c] + _cross(bodies[c].pos0, fc)
        force[n], moment[n] = f, nn
    out = dict(Fx=force["base"][0], Fy=force["base"][1], Mz=moment["base"][2])
    for n, b in bodies.items():
        if b.parent is not None:
            out[n] = moment[n][b.axis]
    return out


# --------------------------------------------------------------------------------------
# Inverse motor model -> voltage laws (Chebyshev series in t)
# --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def voltage_series(t_end: float = T_END, degree: int = CHEB_DEGREE) -> dict:
    """Per motor: Chebyshev coefficients (in s = 2 t / t_end - 1) of U(t), i(t) and the joint
    torque tau(t), from the inverse motor model of Fig. 9 with a rigid shaft:
    tau_m = tau / k_r + I_a w_m' + B_m w_m,  i = tau_m / k_t,  U = R_a i + L_a i' + k_t w_m,
    with w_m = k_r q'. Returns {joint: dict(U=..., i=..., tau=...)} and 'nodes_error'."""
    from numpy.polynomial import chebyshev as C

    n = 2 * degree + 1
    s = np.cos(np.pi * (np.arange(n) + 0.5) / n)  # Chebyshev nodes in (-1, 1)
    t = 0.5 * t_end * (s + 1)
    tau = joint_torques(t)
    _, qd, qdd = joint_reference(t)
    out = {}
    for j in ACTUATED:
        Ra, La, kt, Ia, Bm, kr = motor_of(j)
        wm, dwm = kr * qd[j], kr * qdd[j]
        i = (tau[j] / kr + Ia * dwm + Bm * wm) / kt
        ci = C.chebfit(s, i, degree)
        di = C.chebder(ci) * (2.0 / t_end)  # d/dt = (2 / t_end) d/ds
        U = Ra * C.chebval(s, ci) + La * C.chebval(s, di) + kt * wm
        out[j] = dict(U=C.chebfit(s, U, degree), i=ci, tau=C.chebfit(s, tau[j], degree))
    for k in ("lam", "F_l", "F_r"):
        out[k] = dict(tau=C.chebfit(s, tau[k], degree))
    return out


def series_value(coef, t, t_end: float = T_END):
    from numpy.polynomial import chebyshev as C

    return C.chebval(2.0 * np.asarray(t, float) / t_end - 1.0, coef)


def _cheb_law(coef) -> str:
    """sum c_k T_k(s) with T_k(s) = cos(k th), th = acos(s): stable for any degree."""
    terms = [repr(float(coef[0]))] + [f"{float(c)!r}*cos({k}*th)" for k, c in enumerate(coef) if k > 0]
    return " + ".join(terms).replace("+ -", "- ")


# --------------------------------------------------------------------------------------
# The model (components: bondsim_ros.physics.spatial and .drives)
# --------------------------------------------------------------------------------------
def initial_gravity(bodies) -> dict:
    """Gravity in each body frame at q = 0 (the chassis is level)."""
    rot = {}
    g = {}
    for n, b in bodies.items():
        rot[n] = np.eye(3) if b.parent is None else rot[b.parent] @ b.rot0
        g[n] = rot[n].T @ np.array([0.0, 0.0, -G])
    return g


def _platform_pose(model, c):
    """Pose integrators X, Y, PHI of the axle midpoint O and the lateral-slip residual ``slip``:
    v_O = v_c + w x (O - c); x' = v_Ox cos phi - v_Oy sin phi, y' = v_Ox sin phi + v_Oy cos phi."""
    model.add(Integrator("PHI", 0.0), Integrator("X", 0.0), Integrator("Y", 0.0))
    vox = f"(vx + {_f(-c[2])}*wy - {_f(-c[1])}*wz)"
    voy = f"(vy + {_f(-c[0])}*wz - {_f(-c[2])}*wx)"
    xdot, ydot = rotate_planar("phi", vox, voy)
    model.add(Function("xdot", xdot, inputs=["vx", "vy", "wx", "wy", "wz", "phi"]),
              Function("ydot", ydot, inputs=["vx", "vy", "wx", "wy", "wz", "phi"]),
              Function("slip", "yd*cos(phi) - xd*sin(phi)", inputs=["xd", "yd", "phi"]))
    for fn in ("xdot", "ydot"):
        for k in ("vx", "vy", "wx", "wy", "wz"):
            model.connect(f"L_base.{k[0]}_{k[1]}", f"{fn}.{k}")
        model.connect("PHI.out", f"{fn}.phi")
    model.connect("L_base.w_z", "PHI.in_")
    model.connect("xdot.out", "X.in_", "slip.xd")
    model.connect("ydot.out", "Y.in_", "slip.yd")
    model.connect("PHI.out", "slip.phi")


def _add_links(model, bodies):
    """One Link per body: its joint points (prox: the joint to its parent, to_<child>: each
    child's joint origin) with all six channels; the chassis also has the floor support and the
    wheels' rolling points."""
    g0 = initial_gravity(bodies)
    six = list(CHANNELS)
    for n, b in bodies.items():
        ports = {}
        if b.parent is not None:
            ports["prox"] = (np.zeros(3), six)
        for c in b.children:
            if c in bodies:
                ports[f"to_{c}"] = (bodies[c].pos0, six)
        if b.parent is None:
            ports["support"] = (np.zeros(3), ["wx", "wy", "vy", "vz"])
            for w in WHEELS:
                ports[f"roll_{w}"] = (bodies[w].pos0, ["vx", "wy"])
        model.add(Link(f"L_{n}", b.mass, b.inertia, b.com, ports, g0=None if b.parent is None else g0[n]))


def _add_joint(model, n, b):
    """Joint n between its parent's point and its body (a wheel's also shares its rate)."""
    model.add(Joint(f"J_{n}", b.rot0, b.axis, spin=n in WHEELS))
    model.bond(f"L_{b.parent}.to_{n}", f"J_{n}.a")
    model.bond(f"L_{n}.prox", f"J_{n}.b")


def _add_rolling(model, wheel):
    model.add(Rolling(f"roll_{wheel}", WHEEL_RADIUS))
    model.bond(f"L_base.roll_{wheel}", f"roll_{wheel}.hub")
    model.bond(f"J_{wheel}.spin", f"roll_{wheel}.spin")


def _add_floor(model, chassis_com):
    """The floor and the nonholonomic constraint on the chassis, the platform pose integrators."""
    model.add(Support("floor", ["wx", "wy", "vy", "vz"]))
    model.bond("L_base.support", "floor.p")
    _platform_pose(model, chassis_com)


def dualarm(joints=None, t_end: float = T_END, degree: int = CHEB_DEGREE) -> Model:
    """The 18-DOF bond graph driven by the inverse-motor-model voltages.

    joints: subset of the arm/waist joints to keep (the others' bodies are dropped with their
    subtrees; for tests of the structure only - the voltages are those of the full robot).
    Run-time parameters gain_<joint> (default 1) scale each motor's voltage (a wrong input,
    to show that the tracking check can fail, without a rebuild).
    """
    bodies = build_chain()
    keep = set(ARM_JOINTS if joints is None else joints) | set(WHEELS) | {"base"}
    bodies = {n: b for n, b in bodies.items() if n in keep and (b.parent is None or b.parent in keep)}
    series = voltage_series(t_end, degree)
    model = Model("dualarm",
                  "dual-arm mobile manipulator (Qian & Rahmani), Newton-Euler bond graph, open-loop voltages")
    model.add(Function("cheb", f"acos(clip({_f(2.0 / t_end)}*t - 1.0, -1.0, 1.0))", inputs=()))
    cols = ["x", "y", "phi", "slip", "lam", "F_l", "F_r"]
    _add_links(model, bodies)
    for n, b in bodies.items():
        if b.parent is None:
            continue
        wheel = n in WHEELS
        _add_joint(model, n, b)
        # run-time gain on the voltage (1: the inverse motor model); a parameter, so a wrong
        # input can be tried without rebuilding the model
        model.parameter(f"gain_{n}", 1.0)
        i0 = float(series_value(series[n]["i"], 0.0, t_end))
        model.add(VoltageDrive(f"M_{n}", motor_of(n), f"gain_{n}*({_cheb_law(series[n]['U'])})", i0))
        model.connect("cheb.out", f"M_{n}.th")
        model.bond(f"M_{n}.shaft", f"J_{n}.drive")
        if wheel:
            _add_rolling(model, n)
        cols += [n, f"tau_{n}", f"i_{n}", f"U_{n}"]
    _add_floor(model, bodies["base"].com)
    model.add(Recorder("rec", cols))
    model.connect("X.out", "rec.x")
    model.connect("Y.out", "rec.y")
    model.connect("PHI.out", "rec.phi")
    model.connect("slip.out", "rec.slip")
    # the Sf(0) efforts are what the robot exerts on the constraint: record the force on the
    # robot (Pinocchio's multiplier convention, wheel_mapping)
    for src, col in (("floor.lam", "lam"), ("roll_wheel_l.force", "F_l"), ("roll_wheel_r.force", "F_r")):
        model.add(Gain(f"sign_{col}", -1.0))
        model.connect(src, f"sign_{col}.in_")
        model.connect(f"sign_{col}.out", f"rec.{col}")
    for n in bodies:
        if n == "base":
            continue
        model.connect(f"J_{n}.q", f"rec.{n}")
        model.connect(f"M_{n}.tau", f"rec.tau_{n}")
        model.connect(f"M_{n}.current", f"rec.i_{n}")
        model.connect(f"M_{n}.voltage", f"rec.U_{n}")
    return model


# --------------------------------------------------------------------------------------
# Commanded robot: cmd_vel on the platform, joint servos on waist and arms
# --------------------------------------------------------------------------------------
SUPPLY = 48.0  # [V] our choice, a common bus; section V's largest back-emf is 8.6 V (q_r7 at 2 s)
SERVO_WN = 40.0  # [rad/s] closed-loop double pole of each arm/waist joint's PD loop (docs/examples.md: why 40)
WHEEL_WN = 20.0  # [rad/s] closed-loop double pole of each wheel's PI speed loop


@functools.lru_cache(maxsize=2)
def start_loads(xml: str = str(ROBOT_XML)) -> dict:
    """At the start pose (all q = 0, at rest): each motor's load inertia [kg m^2] and the static
    joint torque holding the robot against gravity, both from ``newton_euler`` (no Pinocchio
    needed to build the model). The load is the joint's diagonal entry of the mass matrix,
    tau_j(q'' = e_j) - tau_j(0); for a wheel, the robot's mass M and yaw inertia I_z seen
    through the rolling constraint, r^2 (M/4 + I_z/b^2), plus the wheel's own entry. The wheels'
    static torques come through ``wheel_mapping``."""
    bodies = build_chain(xml)
    zero = {n: 0.0 for n in ACTUATED}
    rest = newton_euler((0.0,) * 9, zero, zero, zero, bodies)
    load = {}
    for n in ACTUATED:
        load[n] = float(newton_euler((0.0,) * 9, zero, zero, {**zero, n: 1.0}, bodies)[n] - rest[n])
    mass = newton_euler((0.0,) * 6 + (1.0, 0.0, 0.0), zero, zero, zero, bodies)["Fx"] - rest["Fx"]
    iz = newton_euler((0.0,) * 8 + (1.0,), zero, zero, zero, bodies)["Mz"] - rest["Mz"]
    for w in WHEELS:
        load[w] += WHEEL_RADIUS**2 * (mass / 4 + iz / WHEEL_TRACK**2)
    wheels = wheel_mapping(rest)
    torque = {**{n: float(rest[n]) for n in ARM_JOINTS}, **{w: float(wheels[w]) for w in WHEELS}}
    return dict(load=load, torque=torque)


def dualarm_command() -> Model:
    """The 18-DOF bond graph with feedback on every motor: the wheels' PI speed loops follow
    the body twist (vx_cmd [m/s], wz_cmd [rad/s]) through the differential-drive kinematics,
    the waist and arm joints' servos (``drives.ServoDrive``) follow q_ref_J, qd_ref_J.

    Starts at rest at q = 0 on a level floor: each motor starts with the current that holds the
    static load and a constant voltage u_hold = R_a i0 keeps it (the gravity term at the start
    pose, ``start_loads``); the PID integrals take up the load's change as the arms move.
    """
    bodies = build_chain()
    start = start_loads()
    model = Model("dualarm_command", "dual-arm mobile manipulator (Qian & Rahmani), Newton-Euler bond graph, "
                  "cmd_vel wheel-speed loops and joint servos")
    model.parameter("vx_cmd", 0.0, "platform forward velocity command [m/s] (axle midpoint, body frame)")
    model.parameter("wz_cmd", 0.0, "platform yaw rate command [rad/s]")
    model.parameter("kff", 1.0, "weight of every drive's back-emf feedforward K k_r times the rate reference "
                    "(1: full, 0: none)")
    cols = ["x", "y", "phi", "vx", "vy", "wz", "slip", "lam"]
    _add_links(model, bodies)
    half = WHEEL_TRACK / 2
    for n, b in bodies.items():
        if b.parent is None:
            continue
        wheel = n in WHEELS
        Ra, La, kt, Ia, Bm, kr = motor_of(n)
        _add_joint(model, n, b)
        load = start["load"][n]
        if wheel:
            kp, ki = wheel_speed_gains(Ra, kt, kr, load, Ia, WHEEL_WN)
            kd = 0.0
            # wheel centre speed v -+ w b/2 = r theta' (left: -, right: +), as joint_reference
            sign = "-" if n == "wheel_l" else "+"
            model.add(Input(f"ref_{n}", f"(vx_cmd {sign} {_f(half)}*wz_cmd)/{_f(WHEEL_RADIUS)}"))
            measured, ref, ff = f"J_{n}.qd", f"ref_{n}.out", f"ref_{n}.out"  # speed loop, back-emf of the ref
        else:
            kp, ki, kd = servo_gains(Ra, kt, kr, load, Ia, SERVO_WN)
            model.parameter(f"q_ref_{n}", 0.0, f"reference angle of joint {n} [rad]")
            model.parameter(f"qd_ref_{n}", 0.0, f"reference rate of joint {n} [rad/s]")
            model.add(Input(f"ref_{n}", f"q_ref_{n}"), Input(f"rate_ref_{n}", f"qd_ref_{n}"))
            measured, ref, ff = f"J_{n}.q", f"ref_{n}.out", f"rate_ref_{n}.out"
        model.parameter(f"kp_{n}", kp, f"proportional gain of motor {n} [V/rad or V s/rad]")
        model.parameter(f"ki_{n}", ki, f"integral gain of motor {n}")
        if not wheel:
            model.parameter(f"kd_{n}", kd, f"rate gain of motor {n} [V s/rad]")
        i0 = start["torque"][n] / (kr * kt)
        model.add(ServoDrive(f"M_{n}", motor_of(n), (f"kp_{n}", f"ki_{n}", 0.0 if wheel else f"kd_{n}"), SUPPLY,
                             u_hold=Ra * i0, i0=i0, feedforward="kff"))
        model.connect(measured, f"M_{n}.q")
        model.connect(ref, f"M_{n}.q_ref")
        model.connect(ff, f"M_{n}.qd_ref")
        model.bond(f"M_{n}.shaft", f"J_{n}.drive")
        if wheel:
            _add_rolling(model, n)
        # a wheel's reference is its speed, a joint's its angle
        cols += [n, f"{n}_rate", f"{n}_rate_ref" if wheel else f"{n}_ref", f"tau_{n}", f"i_{n}", f"U_{n}"]
    _add_floor(model, bodies["base"].com)
    # body-frame velocity of the axle midpoint (what cmd_vel commands)
    model.add(Function("body_vx", "xd*cos(phi) + yd*sin(phi)", inputs=["xd", "yd", "phi"]))
    model.connect("xdot.out", "body_vx.xd")
    model.connect("ydot.out", "body_vx.yd")
    model.connect("PHI.out", "body_vx.phi")
    model.add(Recorder("rec", cols))
    for src, col in (("X.out", "x"), ("Y.out", "y"), ("PHI.out", "phi"), ("body_vx.out", "vx"), ("slip.out", "vy"),
                     ("L_base.w_z", "wz"), ("slip.out", "slip"), ("floor.lam", "lam")):
        model.connect(src, f"rec.{col}")
    for n in bodies:
        if n == "base":
            continue
        model.connect(f"J_{n}.q", f"rec.{n}")  # angle under the joint's name (the twin's /joint_states)
        model.connect(f"J_{n}.qd", f"rec.{n}_rate")
        model.connect(f"ref_{n}.out", f"rec.{n}_rate_ref" if n in WHEELS else f"rec.{n}_ref")
        model.connect(f"M_{n}.tau", f"rec.tau_{n}")
        model.connect(f"M_{n}.current", f"rec.i_{n}")
        model.connect(f"M_{n}.voltage", f"rec.U_{n}")
    return model


# Command interfaces for a live twin. One builder has both: the platform's twist and
# the waist/arm joints' references are all run-time parameters of dualarm_command, so both kinds
# map to the same builder (one build of this large model serves both).
COMMAND_MODELS = {
    "twist": (dualarm_command, {"vx": "vx_cmd", "vy": None, "wz": "wz_cmd"}),
    "trajectory": (dualarm_command, {j: (f"q_ref_{j}", f"qd_ref_{j}") for j in ARM_JOINTS}),
}


# --------------------------------------------------------------------------------------
# Derived columns, registry entry (the plots: plots.py)
# --------------------------------------------------------------------------------------
def add_columns(result):
    """References and errors: {joint}_ref, x_ref, y_ref, phi_ref, tau_{joint}_ref (the inverse
    dynamics, ``joint_torques``, at each output time), lam_ref, F_l_ref, F_r_ref, and the
    largest tracking errors."""
    t = result.t
    q, _, _ = joint_reference(t)
    p = platform_reference(t)
    tau = joint_torques(t)
    names, cols = [], []
    present = [j for j in ACTUATED if j in result]
    for j in present:
        names.append(f"{j}_ref")
        cols.append(q[j])
    for k in ("x", "y", "phi"):
        names.append(f"{k}_ref")
        cols.append(p[k])
    for j in present:
        names.append(f"tau_{j}_ref")
        cols.append(tau[j])
    names += ["lam_ref", "F_l_ref", "F_r_ref", "err_joint", "err_pose"]
    err_joint = np.max([np.abs(result[j] - q[j]) for j in present], axis=0)
    err_pose = np.hypot(result["x"] - p["x"], result["y"] - p["y"])
    cols += [tau["lam"], tau["F_l"], tau["F_r"], err_joint, err_pose]
    return result.with_columns(names, cols)


ENTRIES = [
    ModelEntry("dualarm", dualarm,
               "dual-arm mobile manipulator (Qian & Rahmani, 18 DOF), Newton-Euler bond graph driven open loop by "
               "inverse-motor-model voltages from its Newton-Euler inverse dynamics, section V references",
               defaults=dict(t_end=T_END, dt_out=0.01), postprocess=add_columns),
]
