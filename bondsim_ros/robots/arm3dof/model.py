"""The 3-DOF planar arm (Boiadjiev et al., "A Novel, Oriented to Graphs Model of Robot Arm Dynamics",
Robotics 2021, 10, 128): the 3-DOF planar arm, inverse dynamics and a bond-graph forward model.

Data (section 3.1 and Table 1 of the paper):

* link lengths a1, a2, a3 = 0.15, 0.10, 0.10 m (Table 1; joints 4 and 5 are locked, so link 3
  ends at the gripper point), mass centres in the middle of the links;
* m = 0.18, 0.13, 0.17 kg and I_zz = 0.0481, 0.0139, 0.0229 kg m^2 about the mass centres;
* joint range -pi/2 <= q_i <= pi/2 (Table 1);
* task (section 3.2.2): the gripper moves from A = (233, -172, 0) mm to B = (269, 155, 0) mm
  in 2 s with a trapezoidal velocity profile.

Choices where the paper leaves room (docs/examples/arm3dof.md):

* **No gravity in the plane.** The paper's right-hand side B (section 3.2.1) has only the drive
  torques and velocity terms: the arm moves in a horizontal plane, gravity along -z is carried by
  the bearings and gives no torque about the vertical joint axes.
* **Joint-space trapezoid.** The paper gives maximal velocities and accelerations per joint
  ("smooth movement in the joints"), so each joint follows a trapezoidal velocity profile from
  q(A) to q(B); the three are synchronised with one blend time T_ACC = 0.4 s (the paper's torques
  peak at t = 0.4 s, the end of the acceleration phase).
* **Redundancy.** Inverse kinematics at A and B with a fixed gripper orientation: link 3 along
  the base x axis (q1 + q2 + q3 = 0), elbow q2 > 0; all joints then stay inside Table 1's range.

The forward model is the Newton-Euler form as a bond graph (components of bondsim_ros.physics.
bodies): each link is a planar rigid body (I elements m, m, I_zz on 1-junctions of vx, vy,
omega; pose by integrators), each revolute
joint is two Sf(0) sources on the relative velocity of the joint points (like
``examples.pendulum``: their efforts are the joint reaction forces, index-2 multipliers) and a
torque source Se(T_i) acting on link i and, reversed, on link i-1. The torques are the
inverse-dynamics torques of the trajectory, written as expressions of t.

``arm3dof_trajectory`` (``COMMAND_MODELS``) replaces the torque sources by DC-motor
drives with PID position servos (``physics.drives.ServoDrive``) following run-time references, the
interface of a JointTrajectory; the motors are our choice (docs/examples.md).
"""
from __future__ import annotations

import math

import numpy as np

from bondsim_ros.bondgraph import Function, Input, Model, Recorder

from bondsim_ros.robots.plugin import ModelEntry
from bondsim_ros.physics.bodies import PlanarBody, RevoluteJoint
from bondsim_ros.physics.drives import ServoDrive, servo_gains

# Table 1: a_{i-1} of joints 2, 3, 4 are the lengths of links 1, 2, 3.
LENGTHS = (0.15, 0.10, 0.10)
# Section 3.1: masses and central moments of inertia about z.
MASSES = (0.18, 0.13, 0.17)
INERTIAS = (0.0481, 0.0139, 0.0229)
COM = tuple(0.5 * l for l in LENGTHS)  # "mass centres in the middle of the links"
# Section 3.2.2: gripper path and time.
POINT_A = (0.233, -0.172)
POINT_B = (0.269, 0.155)
DURATION = 2.0
T_ACC = 0.4  # our choice: blend time of the synchronised trapezoid (paper: torque peak at 0.4 s)
GRIPPER_ANGLE = 0.0  # our choice for the redundant joint: link 3 along the base x axis at A and B
JOINT_NAMES = ("q1", "q2", "q3")


# --------------------------------------------------------------------------------------
# Kinematics
# --------------------------------------------------------------------------------------
def forward_kinematics(q, lengths=LENGTHS):
    """Gripper point (x, y) and orientation q1 + q2 + q3; q may be arrays (one row per joint)."""
    q1, q2, q3 = q
    th1, th2, th3 = q1, q1 + q2, q1 + q2 + q3
    l1, l2, l3 = lengths
    x = l1 * np.cos(th1) + l2 * np.cos(th2) + l3 * np.cos(th3)
    y = l1 * np.sin(th1) + l2 * np.sin(th2) + l3 * np.sin(th3)
    return x, y, th3


def inverse_kinematics(point, phi=GRIPPER_ANGLE, elbow=+1, lengths=LENGTHS):
    """Joint angles putting the gripper at ``point`` with link 3 at absolute angle ``phi``."""
    l1, l2, l3 = lengths
    wx = point[0] - l3 * math.cos(phi)  # wrist = joint 3
    wy = point[1] - l3 * math.sin(phi)
    c2 = (wx * wx + wy * wy - l1 * l1 - l2 * l2) / (2 * l1 * l2)
    if not -1.0 <= c2 <= 1.0:
        raise ValueError(f"point {point} unreachable with gripper angle {phi}")
    q2 = elbow * math.acos(c2)
    q1 = math.atan2(wy, wx) - math.atan2(l2 * math.sin(q2), l1 + l2 * math.cos(q2))
    q3 = phi - q1 - q2
    return np.array([q1, q2, q3])


# --------------------------------------------------------------------------------------
# Trajectory: synchronised joint-space trapezoid
# --------------------------------------------------------------------------------------
def _profile_pieces(T=DURATION, ta=T_ACC):
    """Normalised path s(t) in [0, 1] per phase: (upper time bound, s, s', s'') as sympy of t."""
    import sympy as sp  # here, not at the top: listing the built-in models must not load sympy

    t = sp.Symbol("t")
    a = 1.0 / (ta * (T - ta))  # s'' in the blends, so that s(T) = 1
    return t, [
        (0.0, sp.Float(0.0), sp.Float(0.0), sp.Float(0.0)),  # before the start: at rest in A
        (ta, 0.5 * a * t**2, a * t, sp.Float(a)),
        (T - ta, a * ta * (t - 0.5 * ta), sp.Float(a * ta), sp.Float(0.0)),
        (T, 1.0 - 0.5 * a * (T - t) ** 2, a * (T - t), sp.Float(-a)),
        (math.inf, sp.Float(1.0), sp.Float(0.0), sp.Float(0.0)),  # after the end: at rest in B
    ]


def trapezoid(t, T=DURATION, ta=T_ACC):
    """Numeric s, s', s'' of the trapezoidal profile at times ``t``; a switching instant belongs
    to the next phase, as in the Piecewise laws of the model (``t < bound``)."""
    t = np.asarray(t, dtype=float)
    a = 1.0 / (ta * (T - ta))
    phase = np.searchsorted(np.array([0.0, ta, T - ta, T]), t, side="right")  # 0 before, 4 after
    tc = np.clip(t, 0.0, T)
    zero = 0.0 * tc
    s = np.choose(phase, [zero, 0.5 * a * tc**2, a * ta * (tc - 0.5 * ta), 1.0 - 0.5 * a * (T - tc) ** 2, zero + 1.0])
    sd = np.choose(phase, [zero, a * tc, zero + a * ta, a * (T - tc), zero])
    sdd = np.choose(phase, [zero, zero + a, zero, zero - a, zero])
    return s, sd, sdd


def joint_endpoints():
    """q at A and at B (inverse kinematics with the fixed gripper orientation)."""
    return inverse_kinematics(POINT_A), inverse_kinematics(POINT_B)


def joint_trajectory(t):
    """q, q', q'' (each shape (3, len(t))) of the synchronised trapezoid from q(A) to q(B)."""
    qa, qb = joint_endpoints()
    s, sd, sdd = trapezoid(t)
    dq = (qb - qa)[:, None]
    return qa[:, None] + dq * s, dq * sd, dq * sdd


# --------------------------------------------------------------------------------------
# Inverse dynamics: planar recursive Newton-Euler, written once for numpy and sympy
# --------------------------------------------------------------------------------------
def inverse_dynamics(q, qd, qdd, lib=np, lengths=LENGTHS, masses=MASSES, inertias=INERTIAS, com=COM):
    """Joint torques T1, T2, T3 (no gravity in the plane, see the module doc).

    Forward pass: absolute angle, rate and angular acceleration of each link, acceleration of
    its joint point and mass centre. Backward pass: force f_i of link i-1 on link i at joint i
    and torque T_i from the Newton and Euler equations of link i about its mass centre.
    """
    cos, sin = lib.cos, lib.sin
    th = w = al = 0
    ap = (0, 0)  # acceleration of the current joint point (joint 1 is fixed)
    links = []
    for i in range(3):
        th, w, al = th + q[i], w + qd[i], al + qdd[i]
        ux, uy = cos(th), sin(th)
        c, l = com[i], lengths[i]
        # a_P = a_joint + alpha k x r - omega^2 r, r = d u
        ag = (ap[0] - al * c * uy - w * w * c * ux, ap[1] + al * c * ux - w * w * c * uy)
        links.append((ux, uy, al, ag))
        ap = (ap[0] - al * l * uy - w * w * l * ux, ap[1] + al * l * ux - w * w * l * uy)
    tau = [0, 0, 0]
    fn, tn = (0, 0), 0  # force and torque of the next link on this one's distal joint (reversed)
    for i in (2, 1, 0):
        ux, uy, al, ag = links[i]
        c, l, m = com[i], lengths[i], masses[i]
        f = (m * ag[0] + fn[0], m * ag[1] + fn[1])
        # Euler about the mass centre: J al = T_i - T_{i+1} + r_p x f_i - r_d x f_{i+1},
        # r_p = -c u (joint i), r_d = (l - c) u (joint i+1)
        rp_x_f = -c * (ux * f[1] - uy * f[0])
        rd_x_fn = (l - c) * (ux * fn[1] - uy * fn[0])
        tau[i] = inertias[i] * al + tn - rp_x_f + rd_x_fn
        fn, tn = f, tau[i]
    return tau


def torque_trajectory(t):
    """Numeric inverse-dynamics torques (3, len(t)) along the trajectory."""
    q, qd, qdd = joint_trajectory(t)
    return np.array(inverse_dynamics(q, qd, qdd))


def torque_laws():
    """T_i(t) as expression strings for Se elements: Piecewise over the trajectory's phases."""
    import sympy as sp

    qa, qb = joint_endpoints()
    t, pieces = _profile_pieces()
    branches = [[], [], []]
    for bound, s, sd, sdd in pieces:
        q = [float(qa[i]) + float(qb[i] - qa[i]) * s for i in range(3)]
        qd = [float(qb[i] - qa[i]) * sd for i in range(3)]
        qdd = [float(qb[i] - qa[i]) * sdd for i in range(3)]
        tau = inverse_dynamics(q, qd, qdd, lib=sp)
        cond = sp.true if math.isinf(bound) else (t < bound)
        for i in range(3):
            branches[i].append((sp.sympify(tau[i]), cond))
    return [str(sp.Piecewise(*b)) for b in branches]


# --------------------------------------------------------------------------------------
# Bond graph
# --------------------------------------------------------------------------------------
def _link(i, pose) -> PlanarBody:
    """Link i (1..3) at ``pose``: a planar body with its joint points, proximal (-c, 0) and, but
    for the last link (the free gripper), distal (l - c, 0), each a port (x, y, w)."""
    c, length = COM[i - 1], LENGTHS[i - 1]
    points = {"proximal": [("x", -c, 0.0), ("y", -c, 0.0), ("w",)]}
    if i < 3:
        points["distal"] = [("x", length - c, 0.0), ("y", length - c, 0.0), ("w",)]
    return PlanarBody(f"link{i}", MASSES[i - 1], INERTIAS[i - 1], pose, points)


def _record_links(model):
    """Pose of each link's mass centre into the recorder columns x_i, y_i, th_i."""
    for i in (1, 2, 3):
        for k, port in (("x", "x"), ("y", "y"), ("th", "theta")):
            model.connect(f"link{i}.{port}", f"rec.{k}{i}")


def link_poses(q):
    """Mass-centre poses (x, y, th) of the three links at joint angles q."""
    poses, px, py, th = [], 0.0, 0.0, 0.0
    for i in range(3):
        th += q[i]
        poses.append((px + COM[i] * math.cos(th), py + COM[i] * math.sin(th), th))
        px += LENGTHS[i] * math.cos(th)
        py += LENGTHS[i] * math.sin(th)
    return poses


def arm3dof(torques=None) -> Model:
    """Forward model driven by ``torques`` (3 expressions of t; default: inverse dynamics of the
    A -> B trapezoid), starting at rest in A."""
    torques = torque_laws() if torques is None else torques
    model = Model("arm3dof", "3-DOF planar arm (Boiadjiev et al.), Newton-Euler bond graph driven by joint torques")
    qa, _ = joint_endpoints()
    cols = [f"{k}{i}" for i in (1, 2, 3) for k in ("x", "y", "th")] + ["T1", "T2", "T3"]
    model.add(Recorder("rec", cols))
    for i, pose in enumerate(link_poses(qa), start=1):
        model.add(_link(i, pose))
        model.add(RevoluteJoint(f"joint{i}", grounded=(i == 1)))
        model.add(Input(f"torque{i}", torques[i - 1]))
        model.connect(f"torque{i}.out", f"joint{i}.torque", f"rec.T{i}")
        if i > 1:
            model.bond(f"link{i - 1}.distal", f"joint{i}.a")
        model.bond(f"link{i}.proximal", f"joint{i}.b")
    _record_links(model)
    return model


# --------------------------------------------------------------------------------------
# Commanded arm: joint servos tracking run-time references (JointTrajectory)
# --------------------------------------------------------------------------------------
# The paper gives no drives. Our choice: a small 24 V gear motor per joint (R_a, L_a, K, J_m,
# B_m, gear k_r); with k_r = 50 the links' inertia is about the motor's, so one tuning serves
# all three joints.
SERVO_MOTOR = (2.0, 1.0e-3, 0.03, 2.0e-6, 1.0e-6, 50.0)
SERVO_SUPPLY = 24.0  # [V]
SERVO_WN = 25.0  # [rad/s] closed-loop double pole of each joint's PD loop
# about the joint axis with the outer links stretched (the largest load each motor sees)
_J_LOAD = (0.0481 + 0.0139 + 0.0229 + 0.18 * 0.075**2 + 0.13 * 0.2**2 + 0.17 * 0.3**2,
           0.0139 + 0.0229 + 0.13 * 0.05**2 + 0.17 * 0.15**2, 0.0229 + 0.17 * 0.05**2)


def servo_params(model: Model, joints, loads, motor, wn, prefix_doc="") -> dict:
    """Declare kp_J, ki_J, kd_J (``physics.drives.servo_gains``) for each joint; returns
    {joint: (kp, ki, kd)}."""
    motor_of = motor if callable(motor) else (lambda _j: motor)  # one motor for all, or per joint
    out = {}
    for j, load in zip(joints, loads):
        Ra, _, K, Jm, _, kr = motor_of(j)
        kp, ki, kd = servo_gains(Ra, K, kr, load, Jm, wn)
        model.parameter(f"kp_{j}", kp, f"{prefix_doc}position gain of joint {j} [V/rad]")
        model.parameter(f"ki_{j}", ki, f"{prefix_doc}integral gain of joint {j} [V/(rad s)]")
        model.parameter(f"kd_{j}", kd, f"{prefix_doc}rate gain of joint {j} [V s/rad]")
        out[j] = (f"kp_{j}", f"ki_{j}", f"kd_{j}")
    return out


def arm3dof_trajectory() -> Model:
    """The arm with a DC-motor servo on each joint (``physics.drives.ServoDrive``) tracking the
    run-time references q_ref_qi, qd_ref_qi; at rest in A, references default to A."""
    model = Model("arm3dof_trajectory",
                  "3-DOF planar arm (Boiadjiev et al.), joint servos on DC motors tracking references")
    qa, _ = joint_endpoints()
    gains = servo_params(model, JOINT_NAMES, _J_LOAD, SERVO_MOTOR, SERVO_WN)
    model.parameter("kff", 1.0, "weight of the servos' back-emf feedforward K k_r qd_ref (1: full, 0: none)")
    cols = [f"{k}{i}" for i in (1, 2, 3) for k in ("x", "y", "th")]
    # joint angles under the joint names (the twin's /joint_states), then reference, torque,
    # current and voltage of each drive
    cols += [c for j in JOINT_NAMES for c in (j, f"{j}_ref", f"tau_{j}", f"i_{j}", f"u_{j}")]
    model.add(Recorder("rec", cols))
    for i, (pose, j) in enumerate(zip(link_poses(qa), JOINT_NAMES), start=1):
        model.parameter(f"q_ref_{j}", float(qa[i - 1]), f"reference angle of joint {j} [rad]")
        model.parameter(f"qd_ref_{j}", 0.0, f"reference rate of joint {j} [rad/s]")
        model.add(_link(i, pose))
        model.add(RevoluteJoint(f"joint{i}", grounded=(i == 1), driven=True))
        model.add(ServoDrive(f"drive{i}", SERVO_MOTOR, gains[j], SERVO_SUPPLY, feedforward="kff"))
        model.add(Input(f"ref_{j}", f"q_ref_{j}"), Input(f"rate_ref_{j}", f"qd_ref_{j}"))
        # joint angle: link angle relative to the previous link's
        if i > 1:
            model.add(Function(f"angle_{j}", "th - th_prev", inputs=["th", "th_prev"]))
        else:
            model.add(Function(f"angle_{j}", "th", inputs=["th"]))
        model.connect(f"link{i}.theta", f"angle_{j}.th")
        if i > 1:
            model.connect(f"link{i - 1}.theta", f"angle_{j}.th_prev")
            model.bond(f"link{i - 1}.distal", f"joint{i}.a")
        model.bond(f"link{i}.proximal", f"joint{i}.b")
        model.bond(f"drive{i}.shaft", f"joint{i}.drive")
        model.connect(f"angle_{j}.out", f"drive{i}.q", f"rec.{j}")
        model.connect(f"ref_{j}.out", f"drive{i}.q_ref", f"rec.{j}_ref")
        model.connect(f"rate_ref_{j}.out", f"drive{i}.qd_ref")
        model.connect(f"drive{i}.tau", f"rec.tau_{j}")
        model.connect(f"drive{i}.current", f"rec.i_{j}")
        model.connect(f"drive{i}.voltage", f"rec.u_{j}")
    _record_links(model)
    return model


# Command interfaces for a live twin: kind -> (builder, parameter names).
# "trajectory": per joint of urdf/arm3dof/Arm3DOF.xml, (angle reference, rate reference).
COMMAND_MODELS = {
    "trajectory": (arm3dof_trajectory, {j: (f"q_ref_{j}", f"qd_ref_{j}") for j in JOINT_NAMES}),
}


# --------------------------------------------------------------------------------------
# Derived columns, registry entry (the plots: plots.py)
# --------------------------------------------------------------------------------------
def add_columns(result):
    """Joint angles q1..q3, their reference, gripper point and the largest joint gap [m]."""
    th = [result[f"th{i}"] for i in (1, 2, 3)]
    q = [th[0], th[1] - th[0], th[2] - th[1]]
    q_ref, _, _ = joint_trajectory(result.t)
    x3, y3 = result["x3"], result["y3"]
    gx = x3 + (LENGTHS[2] - COM[2]) * np.cos(th[2])
    gy = y3 + (LENGTHS[2] - COM[2]) * np.sin(th[2])
    # joint i: proximal point of link i against the distal point of link i-1 (or the origin);
    # the Sf(0) joints hold velocities, so a gap is the drift of the integrated positions
    gap = np.zeros_like(result.t)
    prev = (np.zeros_like(x3), np.zeros_like(x3))
    for i in range(3):
        x, y = result[f"x{i + 1}"], result[f"y{i + 1}"]
        px, py = x - COM[i] * np.cos(th[i]), y - COM[i] * np.sin(th[i])
        gap = np.maximum(gap, np.hypot(px - prev[0], py - prev[1]))
        d = LENGTHS[i] - COM[i]
        prev = (x + d * np.cos(th[i]), y + d * np.sin(th[i]))
    names = list(JOINT_NAMES) + [f"{n}_ref" for n in JOINT_NAMES] + ["gripper_x", "gripper_y", "joint_gap"]
    return result.with_columns(names, q + list(q_ref) + [gx, gy, gap])


ENTRIES = [
    ModelEntry("arm3dof", arm3dof,
               "3-DOF planar arm (Boiadjiev et al.) driven by inverse-dynamics torques, A -> B in 2 s",
               defaults=dict(t_end=DURATION, dt_out=0.01), postprocess=add_columns),
]
