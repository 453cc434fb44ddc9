"""The 3-DOF planar arm (Boiadjiev et al. 2021): mechanism XML -> URDF, inverse dynamics
against Pinocchio's RNEA and an independent sympy Lagrangian, bond-graph forward model driven
by the computed torques."""
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from bondsim_ros.bondgraph import simulate
from bondsim_ros.mechanism import forward_kinematics, load_mechanism, to_urdf
from bondsim_ros.robots.arm3dof import model as arm
from bondsim_ros.models import registry
from bondsim_ros.solver import SolverOptions

XML = Path(__file__).resolve().parents[1] / "urdf" / "arm3dof" / "Arm3DOF.xml"
# paper section 3.1 and Table 1, written out again so a change in the module is caught
PAPER_M = (0.18, 0.13, 0.17)
PAPER_IZZ = (0.0481, 0.0139, 0.0229)
PAPER_L = (0.15, 0.10, 0.10)
A_MM, B_MM = (233.0, -172.0), (269.0, 155.0)


@pytest.fixture(scope="module")
def urdf_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("arm3dof") / "arm3dof.urdf"
    to_urdf(XML, out)
    return out


@pytest.fixture(scope="module")
def times():
    # includes the phase switches 0.4 and 1.6 s and both ends
    return np.linspace(0.0, arm.DURATION, 201)


def test_urdf_inertials_are_the_papers(urdf_path):
    root = ET.parse(urdf_path).getroot()
    links = {ln.get("name"): ln for ln in root.findall("link")}
    for i in range(3):
        inertial = links[f"link{i + 1}"].find("inertial")
        assert float(inertial.find("mass").get("value")) == pytest.approx(PAPER_M[i], rel=1e-12)
        assert float(inertial.find("inertia").get("izz")) == pytest.approx(PAPER_IZZ[i], rel=1e-9)
        com = [float(v) for v in inertial.find("origin").get("xyz").split()]
        assert com == pytest.approx([PAPER_L[i] / 2, 0.0, 0.0], abs=1e-12)  # mass centre mid-link
    joints = {j.get("name"): j for j in root.findall("joint")}
    for i, name in enumerate(arm.JOINT_NAMES):
        j = joints[name]
        assert j.get("type") == "revolute" and j.find("axis").get("xyz") == "0 0 1"
        lim = j.find("limit")
        assert float(lim.get("lower")) == pytest.approx(-math.pi / 2, abs=1e-9)
        assert float(lim.get("upper")) == pytest.approx(math.pi / 2, abs=1e-9)
        if i > 0:  # joint i+1 sits a_i along x of link i (Table 1)
            xyz = [float(v) for v in j.find("origin").get("xyz").split()]
            assert xyz == pytest.approx([PAPER_L[i - 1], 0, 0], abs=1e-12)


def test_gripper_starts_at_A_and_ends_at_B():
    mech = load_mechanism(XML)
    assert [j.name for j in mech.joints] == list(arm.JOINT_NAMES)
    qa, qb = arm.joint_endpoints()
    for q, target in ((qa, A_MM), (qb, B_MM)):
        assert np.all(np.abs(q) <= math.pi / 2)  # Table 1 joint range
        # the XML's own kinematics (probe at the end of link 3), not the module's formula
        frames = forward_kinematics(mech, dict(zip(arm.JOINT_NAMES, q)))
        p = frames["probe_gripper"][:3, 3] * 1000.0
        assert p == pytest.approx([target[0], target[1], 0.0], abs=1e-9)
        assert sum(q) == pytest.approx(arm.GRIPPER_ANGLE, abs=1e-12)  # redundancy choice


def test_trajectory_is_a_synchronised_trapezoid(times):
    q, qd, qdd = arm.joint_trajectory(times)
    qa, qb = arm.joint_endpoints()
    assert q[:, 0] == pytest.approx(qa, abs=1e-15) and q[:, -1] == pytest.approx(qb, abs=1e-12)
    assert np.abs(qd[:, [0, -1]]).max() < 1e-12  # rest at both ends
    assert np.all(np.abs(q) <= math.pi / 2)
    # velocity: ramp, plateau, ramp; q' integrates to q (trapezoid rule on the fine grid)
    t = np.linspace(0.0, arm.DURATION, 20001)
    q2, qd2, _ = arm.joint_trajectory(t)
    steps = np.cumsum(0.5 * (qd2[:, 1:] + qd2[:, :-1]) * np.diff(t), axis=1)
    integral = np.concatenate([np.zeros((3, 1)), steps], axis=1)
    assert np.abs(q2 - qa[:, None] - integral).max() < 1e-8
    plateau = (t > arm.T_ACC + 1e-9) & (t < arm.DURATION - arm.T_ACC - 1e-9)
    assert np.ptp(qd2[:, plateau], axis=1) == pytest.approx([0, 0, 0], abs=1e-12)


def test_torques_equal_pinocchio_rnea(urdf_path, times):
    pin = pytest.importorskip("pinocchio")
    model = pin.buildModelFromUrdf(str(urdf_path))
    data = model.createData()
    assert [model.names[i] for i in range(1, model.njoints)] == list(arm.JOINT_NAMES)
    q, qd, qdd = arm.joint_trajectory(times)
    tau = arm.torque_trajectory(times)
    # Pinocchio keeps its default gravity (0, 0, -9.81): along the joint axes, no torque,
    # which is the paper's horizontal-plane arm
    ref = np.array([pin.rnea(model, data, q[:, k], qd[:, k], qdd[:, k]) for k in range(times.size)]).T
    scale = np.abs(ref).max(axis=1)
    assert np.all(scale > 1e-3)  # non-trivial torques on every joint
    assert (np.abs(tau - ref).max(axis=1) / scale).max() < 1e-9
    # random states too, not only the trajectory's
    rng = np.random.default_rng(4)
    for _ in range(20):
        qq, vv, aa = rng.uniform(-1.5, 1.5, (3, 3))
        got = np.array(arm.inverse_dynamics(qq, vv, aa))
        want = pin.rnea(model, data, qq, vv, aa)
        assert np.abs(got - want).max() <= 1e-9 * np.abs(want).max()


def test_torques_equal_sympy_lagrangian(times):
    """Independent of Pinocchio and of the Newton-Euler code: tau = d/dt dT/dq' - dT/dq."""
    q = sp.symbols("q1:4")
    qd = sp.symbols("qd1:4")
    qdd = sp.symbols("qdd1:4")
    T, th, px, py = 0, 0, 0, 0
    for i in range(3):
        th = th + q[i]
        gx, gy = px + PAPER_L[i] / 2 * sp.cos(th), py + PAPER_L[i] / 2 * sp.sin(th)
        vx = sum(sp.diff(gx, q[j]) * qd[j] for j in range(3))
        vy = sum(sp.diff(gy, q[j]) * qd[j] for j in range(3))
        w = sum(qd[: i + 1])
        T += sp.Rational(1, 2) * PAPER_M[i] * (vx**2 + vy**2) + sp.Rational(1, 2) * PAPER_IZZ[i] * w**2
        px, py = px + PAPER_L[i] * sp.cos(th), py + PAPER_L[i] * sp.sin(th)
    tau = []
    for k in range(3):
        p = sp.diff(T, qd[k])
        dpdt = sum(sp.diff(p, q[j]) * qd[j] + sp.diff(p, qd[j]) * qdd[j] for j in range(3))
        tau.append(dpdt - sp.diff(T, q[k]))
    f = sp.lambdify([q, qd, qdd], tau, "numpy")
    qt, qdt, qddt = arm.joint_trajectory(times)
    ref = np.array(f(qt, qdt, qddt))
    got = arm.torque_trajectory(times)
    assert (np.abs(got - ref).max(axis=1) / np.abs(ref).max(axis=1)).max() < 1e-9


def test_forward_model_follows_the_trajectory():
    entry = registry()["arm3dof"]
    res = simulate(entry.build(), t_end=arm.DURATION, dt_out=0.01, options=SolverOptions(rtol=1e-8, atol=1e-10))
    res = entry.postprocess(res)
    q = np.array([res[n] for n in arm.JOINT_NAMES])
    q_ref, _, _ = arm.joint_trajectory(res.t)
    err = np.abs(q - q_ref).max()
    assert err < 1e-6, err  # measured 1.7e-8 rad at rtol 1e-8
    gx, gy = res["gripper_x"], res["gripper_y"]
    assert [gx[0] * 1e3, gy[0] * 1e3] == pytest.approx(A_MM, abs=1e-9)
    assert [gx[-1] * 1e3, gy[-1] * 1e3] == pytest.approx(B_MM, abs=1e-3)  # within 1 micrometre
    # the Sf(0) joints hold: joint points of adjacent links stay together (velocity-level
    # constraints, so only integration drift)
    assert res["joint_gap"].max() < 1e-7
    # the torques fed to the model are the inverse-dynamics ones
    # (away from the switching instants, where the torque jumps and the output time's last bit
    # decides the side)
    away = np.min(np.abs(res.t[:, None] - np.array([0.0, arm.T_ACC, arm.DURATION - arm.T_ACC, arm.DURATION])),
                  axis=1) > 1e-9
    tau = arm.torque_trajectory(res.t[away])
    assert np.array([res[f"T{i}"][away] for i in (1, 2, 3)]) == pytest.approx(tau, abs=1e-12)


def test_forward_model_detects_wrong_torques():
    """The tracking check can fail: 10 % less torque on joint 1 leaves the gripper off B."""
    laws = arm.torque_laws()
    laws[0] = f"0.9*({laws[0]})"
    res = simulate(arm.arm3dof(torques=laws), t_end=arm.DURATION, dt_out=0.05,
                   options=SolverOptions(rtol=1e-8, atol=1e-10))
    res = arm.add_columns(res)
    miss = math.hypot(res["gripper_x"][-1] * 1e3 - B_MM[0], res["gripper_y"][-1] * 1e3 - B_MM[1])
    assert miss > 5.0  # mm
