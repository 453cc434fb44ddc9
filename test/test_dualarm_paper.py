"""The dual-arm mobile manipulator (Qian & Rahmani). Mechanism XML -> URDF (check_urdf,
yourdfpy, Pinocchio), a body-frame Newton-Euler inverse dynamics against Pinocchio's RNEA, the
wheel/lambda mapping against Pinocchio's constrained dynamics, and the 18-DOF bond graph driven
open loop by the inverse-motor-model voltages: tracking, no lateral slip, torques, render.

The bond graph takes about 3.6 min to build cold (sympy elimination + numba); afterwards it is
loaded from the engine's cache (~2 s), so this file runs in well under a minute once built.
"""
import csv
import math
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.bondgraph import simulate
from bondsim_ros.mechanism import forward_kinematics, load_mechanism, to_urdf
from bondsim_ros.robots.dualarm import model as da
from oracles.dualarm_pinocchio import pin_vectors, pinocchio_model, pinocchio_rnea, pinocchio_torques
from bondsim_ros.models import registry
from bondsim_ros.solver import SolverOptions

RTOL, ATOL = 1e-8, 1e-10


@pytest.fixture(scope="module")
def urdf_path(tmp_path_factory):
    out = tmp_path_factory.mktemp("dualarm") / "DualArm.urdf"
    to_urdf(da.ROBOT_XML, out)
    return out


@pytest.fixture(scope="module")
def compiled():
    from bondsim_ros.bondgraph.codegen import compile_model

    return compile_model(registry()["dualarm"].build())


@pytest.fixture(scope="module")
def result(compiled):
    res = simulate(compiled, t_end=da.T_END, dt_out=0.02, options=SolverOptions(rtol=RTOL, atol=ATOL))
    return da.add_columns(res)


def _random_state(rng):
    base = tuple(rng.uniform(-2, 2, 9))
    q, qd, qdd = ({n: rng.uniform(-3, 3) for n in da.ACTUATED} for _ in range(3))
    return base, q, qd, qdd


# ---------------------------------------------------------------- mechanism, URDF ---------
def test_xml_has_the_papers_structure():
    mech = load_mechanism(da.PROJECT_XML)
    names = [j.name for j in mech.joints]
    # Table I / section V: planar base (virtual x, y, yaw), 2 wheels, 2 waist, 2 x 7 arm joints
    assert names[:3] == ["base_x", "base_y", "base_phi"] and all(j.virtual for j in mech.joints[:3])
    assert names[3:] == list(da.WHEELS) + list(da.ARM_JOINTS)
    fk = forward_kinematics(mech)
    # section II: roughly 140 cm tall
    assert fk["probe_head_top"][2, 3] == pytest.approx(1.40, abs=0.02)
    # arms hang down at q = 0, hands symmetric about the sagittal plane
    r, l = fk["r_probe_hand"][:3, 3], fk["l_probe_hand"][:3, 3]
    assert r == pytest.approx(l * np.array([1, -1, 1]), abs=1e-12) and r[2] < fk["r_link1"][2, 3] - 0.6


@pytest.mark.skipif(shutil.which("check_urdf") is None, reason="check_urdf (liburdfdom-tools) not installed")
def test_check_urdf_accepts_it(urdf_path):
    proc = subprocess.run(["check_urdf", str(urdf_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_urdf_loads_everywhere(urdf_path):
    root = ET.parse(urdf_path).getroot()
    movable = [j.get("name") for j in root.findall("joint") if j.get("type") != "fixed"]
    assert sorted(movable) == sorted(da.ACTUATED)  # the virtual planar base is left to odom
    yourdfpy = pytest.importorskip("yourdfpy")
    robot = yourdfpy.URDF.load(str(urdf_path))
    assert sorted(robot.actuated_joint_names) == sorted(da.ACTUATED)
    pin = pytest.importorskip("pinocchio")
    model, _, _ = pinocchio_model()
    # planar root (3) + 18 joints; unlimited revolute joints are continuous: (cos, sin) each
    assert model.nv == 3 + 18 and model.nq == 4 + 2 * 18
    assert pin.computeTotalMass(model) == pytest.approx(80.0, abs=0.5)  # section II: ~80 kg


# ---------------------------------------------------------------- inverse dynamics --------
def test_newton_euler_equals_pinocchio_rnea():
    pytest.importorskip("pinocchio")
    rng = np.random.default_rng(1)
    for _ in range(25):
        state = _random_state(rng)
        want = pinocchio_rnea(*state)
        got = da.newton_euler(*state)
        scale = max(abs(v) for v in want.values())
        # the URDF stores 10 significant digits (rpy of 90 deg rotations, inertias): 3.5e-10
        assert max(abs(got[k] - want[k]) for k in want) <= 1e-9 * scale


def test_wheel_mapping_solves_the_constrained_dynamics():
    """tau and (F_l, F_r, lambda) of wheel_mapping, put into M a = S tau + A^T mu - h and
    A a = -A' v, give back the reference accelerations and the same multipliers."""
    pin = pytest.importorskip("pinocchio")
    model, data, _ = pinocchio_model()
    half, r = da.WHEEL_TRACK / 2, da.WHEEL_RADIUS
    iv = {n: model.idx_vs[model.getJointId(n)] for n in da.ACTUATED}
    ib = model.idx_vs[model.getJointId("root_joint")]
    A = np.zeros((3, model.nv))
    A[0, ib], A[0, ib + 2], A[0, iv["wheel_l"]] = 1.0, -half, -r
    A[1, ib], A[1, ib + 2], A[1, iv["wheel_r"]] = 1.0, half, -r
    A[2, ib + 1] = 1.0
    for t in (0.3, 1.1, 2.0):
        q, qd, qdd = (({n: float(v[n]) for n in v}) for v in da.joint_reference(t))
        qv, v, a = pin_vectors(model, da.reference_base(t), q, qd, qdd)
        assert np.abs(A @ v).max() < 1e-14  # the reference obeys rolling and no lateral slip
        gen = pinocchio_rnea(da.reference_base(t), q, qd, qdd)
        mp = da.wheel_mapping(gen)
        tau = np.zeros(model.nv)
        for n in da.ARM_JOINTS:
            tau[iv[n]] = gen[n]
        for n in da.WHEELS:
            tau[iv[n]] = mp[n]
        M = pin.crba(model, data, qv)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(model, data, qv, v)
        kkt = np.block([[M, -A.T], [A, np.zeros((3, 3))]])
        sol = np.linalg.solve(kkt, np.concatenate([tau - h, np.zeros(3)]))  # A' v = 0: A is constant
        assert sol[:model.nv] == pytest.approx(a, abs=1e-9)
        assert sol[model.nv:] == pytest.approx([mp["F_l"], mp["F_r"], mp["lam"]], rel=1e-9, abs=1e-9)


def test_voltage_laws_reproduce_the_torques():
    """The Chebyshev series behind the Se(U) laws, checked off their fitting nodes."""
    t = np.linspace(0.0, da.T_END, 57)
    tau = da.joint_torques(t)
    series = da.voltage_series()
    for j in da.ACTUATED:
        err = np.abs(da.series_value(series[j]["tau"], t) - tau[j]).max()
        assert err <= 1e-9 * np.abs(tau[j]).max(), (j, err)


def test_the_model_is_built_without_pinocchio():
    """Pinocchio is a test dependency only (the oracle in test/oracles): building the dual-arm
    model and its voltage laws, as ``bondsim-ros simulate dualarm`` does, must not import it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p]))
    code = ("import sys; sys.modules['pinocchio'] = None  # any import of it fails\n"
            "from bondsim_ros.models import registry\n"
            "from bondsim_ros.robots.dualarm.model import ACTUATED\n"
            "model = registry()['dualarm'].build()\n"
            "print(all(f'gain_{j}' in model.parameters for j in ACTUATED))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


def test_the_consistent_start_does_not_depend_on_the_blas_thread_count(tmp_path):
    """The 225-unknown start is solved with numpy's LAPACK, whose OpenBLAS splits large products
    by its thread count: a program run (one thread) and a Python session (one per core) got
    starts differing in their last bits, and runs of 475 or 474 steps. Bit for bit the same now."""
    script = ("import hashlib\n"
              "from bondsim_ros.models import buildcache\n"
              "from bondsim_ros.model_commands import _load\n"
              "from bondsim_ros.bondgraph.simulation import Simulation\n"
              "from bondsim_ros.solver import SolverOptions\n"
              "c = buildcache.resolve('dualarm', use_cache=True, load=_load).compile(log=None)\n"
              "s = Simulation(c, SolverOptions(rtol=1e-8, atol=1e-10), t0=0.0).solver\n"
              "print(hashlib.sha256(s.y.tobytes() + s.yp.tobytes()).hexdigest())\n")
    root = Path(__file__).resolve().parents[1]
    digests = []
    for threads in ("1", "2"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads, PYTHONPATH=str(root))
        proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        digests.append(proc.stdout.split()[-1])
    assert digests[0] == digests[1]


# ---------------------------------------------------------------- bond-graph forward model
def test_forward_model_tracks_the_references(result):
    # measured 1.9e-8 rad and 6.0e-10 m at rtol 1e-8: open loop, so the error is the
    # integration error and the Pinocchio/bond-graph model difference; 1e-6 rad leaves room
    # for the solver, while a 1 % model error gives 1e-2 rad (test below)
    assert result["err_joint"].max() < 1e-6
    assert result["err_pose"].max() < 1e-6
    assert np.abs(result["phi"] - result["phi_ref"]).max() < 1e-6
    # the motion is not trivial: the wrist joint turned 3.6 rad, the base 0.1 rad
    assert result["r_q7"][-1] == pytest.approx(0.9 * da.T_END**2, abs=1e-6)
    assert result["phi"][-1] == pytest.approx(0.025 * da.T_END**2, abs=1e-6)


@pytest.fixture(scope="module")
def pinocchio_reference(result):
    """Torques and constraint forces of Pinocchio's RNEA (test/oracles) at the output times."""
    pytest.importorskip("pinocchio")
    return pinocchio_torques(result.t)


def test_no_lateral_slip_and_the_constraint_force(result, pinocchio_reference):
    # eq. (1) is a velocity-level Sf(0): it holds to the Newton tolerance (measured 1.4e-12)
    assert np.abs(result["slip"]).max() < 1e-10
    # t = 0 included: consistent() solves the hidden constraints, so the multipliers and
    # forces are right from the first sample (they were the solver's guess before)
    for k in ("lam", "F_l", "F_r"):
        ref = pinocchio_reference[k]
        assert np.abs(result[k] - ref).max() < 1e-5 * np.abs(ref).max(), k


def test_bond_graph_joint_torques_equal_pinocchio(result, pinocchio_reference):
    for j in da.ACTUATED:  # t = 0 included (consistent initial efforts)
        ref = pinocchio_reference[j]
        assert np.abs(result[f"tau_{j}"] - ref).max() < 1e-5 * np.abs(ref).max(), j


def test_wrong_voltage_breaks_the_tracking(compiled):
    """The tracking check can fail: 10 % less voltage on the right shoulder motor."""
    res = da.add_columns(simulate(compiled, t_end=da.T_END, dt_out=0.1, options=SolverOptions(rtol=RTOL, atol=ATOL),
                                  params={"gain_r_q2": 0.9}))
    assert np.abs(res["r_q2"] - res["r_q2_ref"]).max() > 1e-2


def test_csv_feeds_render(result, tmp_path):
    from bondsim_ros.mechanism.render import render

    path = tmp_path / "dualarm.csv"
    result.to_csv(path)
    with open(path) as fh:
        header = next(csv.reader(fh))
    assert {"t", "x", "y", "phi"} <= set(header) and set(da.ACTUATED) <= set(header)
    # one row (the last) to a still image
    k = len(result.t) - 1
    one = tmp_path / "one.csv"
    cols = ["t", "x", "y", "phi", *da.ACTUATED]
    with open(one, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        w.writerow([repr(float(result[c][k])) for c in cols])
    png = tmp_path / "pic.png"
    render(da.PROJECT_XML, png, joints_csv=one, size=(480, 360), quiet=True)
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    assert img.shape[:2] == (360, 480)
    assert np.ptp(img[..., :3]) > 0.3  # something was drawn
    assert math.isfinite(float(result["x"][k]))
