"""Event location: discontinuities declared by a model's laws are located by the solver.

A Piecewise force switching on position (closed form), a step reference into a saturating PID at
rtol 1e-12 (it used to stop with "step size underflow at t=0.5"), and the generated events.
The Robotino's rejected-step fraction is checked in test_robotino.py on its 50 s run.
"""
import math
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.bondgraph import Simulation, compile_model, simulate
from bondsim_ros.bondgraph.yamlmodel import load_model, loads_model
from bondsim_ros.solver import SolverOptions
from bondsim_ros.twin.protocol import TWIN_OPTIONS

MODELS = Path(__file__).parent / "data" / "models"

# A mass pushed by 3 N until it has travelled 1 m, then braked by 1 N: the force switches on
# the state, at t1 = sqrt(2 m / F1), which the solver has to find.
SWITCHING_FORCE = (MODELS / "switching_force.yaml").read_text()
M, F1, F2 = 2.0, 3.0, -1.0


def switching_force_exact(t):
    """Position and velocity in closed form."""
    a1, a2 = F1 / M, F2 / M
    t1 = math.sqrt(2.0 / a1)
    v1 = a1 * t1
    before = t < t1
    x = np.where(before, 0.5 * a1 * t ** 2, 1.0 + v1 * (t - t1) + 0.5 * a2 * (t - t1) ** 2)
    v = np.where(before, a1 * t, v1 + a2 * (t - t1))
    return x, v


@pytest.fixture(scope="module")
def switching_force():
    return compile_model(loads_model(SWITCHING_FORCE, "switching_force.yaml"))


def test_switching_function_comes_from_the_law(switching_force):
    c = switching_force
    assert c.n_modes == 1 and len(c.root_names) == 1
    assert "pos.x < 1" in c.root_names[0].replace("1.0", "1")
    # the kernels for other callers keep the law as written: the branch follows x
    y, yp, r_lo, r_hi = np.zeros(c.n), np.zeros(c.n), np.zeros(c.n), np.zeros(c.n)
    ix = c.var_names.index("pos.x")
    y[ix] = 0.5
    c.residual(0.0, y, yp, c.params, r_lo)
    y[ix] = 1.5
    c.residual(0.0, y, yp, c.params, r_hi)
    ip = c.eq_names.index(next(n for n in c.eq_names if "mass" in n))
    assert r_hi[ip] - r_lo[ip] == pytest.approx(F1 - F2)


def test_state_event_is_located_to_within_tolerance(switching_force):
    errors = []
    for rtol in (1e-6, 1e-9, 1e-12):
        res = simulate(switching_force, t_end=3.0, dt_out=0.01, options=SolverOptions(rtol=rtol, atol=rtol))
        x, v = switching_force_exact(res.t)
        # after the switch the velocity is v1 + a2 (t - t1) with t1 where the solver put it:
        # an error dt in t1 shows as (a1 - a2) dt in v
        ev = float(np.max(np.abs(res["mass.p"] / M - v)))
        ex_ = float(np.max(np.abs(res["pos.x"] - x)))
        errors.append(max(ev, ex_))
        dt1 = ev / ((F1 - F2) / M)
        assert dt1 < 100 * rtol, (rtol, dt1)
        assert res.stats["events"] == 1 and res.stats["event_restarts"] == 1
        # located, not stepped into: no step is rejected at the switch
        assert res.stats["rejected"] <= 2, res.stats
    print("switching force, max error at rtol 1e-6, 1e-9, 1e-12:", errors)
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 1e-10


def test_event_with_the_sparse_lu(switching_force):
    """Landing, relabel check and probe go through the sparse LU too (large models use it)."""
    dense = simulate(switching_force, t_end=3.0, dt_out=0.01,
                     options=SolverOptions(rtol=1e-9, atol=1e-9, linear_solver="dense"))
    sparse = simulate(switching_force, t_end=3.0, dt_out=0.01,
                      options=SolverOptions(rtol=1e-9, atol=1e-9, linear_solver="sparse"))
    assert sparse.stats["event_restarts"] == 1
    np.testing.assert_allclose(sparse.data, dense.data, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def pid_step():
    return compile_model(load_model(MODELS / "pid_step_saturation.yaml"))


def test_step_reference_into_saturating_pid_at_rtol_1e_12(pid_step):
    """The step at t = 0.5 and the PID's limits are events: at rtol 1e-12 (atol 1e-14) the run
    used to stop with 'step size underflow at t=0.5: h=1.14e-15 (last error-test failure on
    pid.xi)'."""
    runs = {}
    for rtol in (1e-9, 1e-12):
        res = simulate(pid_step, t_end=5.0, dt_out=0.01, options=SolverOptions(rtol=rtol, atol=rtol * 1e-2))
        runs[rtol] = res
        st = res.stats
        # the step (switching the PID into saturation at once) and the way out of saturation
        assert st["events"] >= 2 and st["event_restarts"] >= 2, st
        assert st["rejected"] < 0.05 * st["steps"], st
    res = runs[1e-12]
    force, t = res["force"], res.t
    assert np.all(force[t < 0.5] == 0.0)  # at rest before the step
    assert np.all(np.abs(force) <= 2.0 + 1e-12)  # the limit holds at every output
    # saturated right after the step, for a while (the mass needs time to get going); at t = 0.5
    # itself the force (computed from y') is its value from the left, 0
    assert np.all(force[(t > 0.5) & (t <= 0.8)] == pytest.approx(2.0, abs=1e-12))
    # it leaves saturation and settles towards the set point
    assert np.max(np.abs(force[t > 2.5])) < 2.0
    assert res["pos"][-1] == pytest.approx(runs[1e-9]["pos"][-1], abs=1e-7)
    assert abs(res["pos"][-1] - 1.0) < 0.3


def test_events_leave_a_model_without_discontinuities_alone():
    from bondsim_ros.models import examples as ex

    c = compile_model(ex.mass_spring_damper())
    assert c.n_modes == 0 and c.roots is None
    res = simulate(c, t_end=1.0, dt_out=0.1)
    assert res.stats["events"] == 0


# Laws defined only up to their switch: past it the branch of the old mode is NaN, so a step
# that crosses the switch fails whatever its size. Both used to stop with a step-size underflow
# (acos, at t = 2) or a singular iteration matrix (sqrt, its derivative NaN past x = 1).
ACOS_M = 2.0


def acos_clip_exact(t):
    """Velocity and position of the mass pushed by acos(clip(t - 1, -1, 1)) from rest."""
    u = np.clip(t - 1.0, -1.0, 1.0)
    v = (u * np.arccos(u) - np.sqrt(1.0 - u ** 2) + math.pi) / ACOS_M

    def X(u):  # an antiderivative of m v in u = t - 1
        return 0.5 * u ** 2 * np.arccos(u) - 0.25 * np.arcsin(u) - 0.75 * u * np.sqrt(1.0 - u ** 2) + math.pi * u

    x = (X(u) - X(-1.0)) / ACOS_M + np.where(t > 2.0, math.pi / ACOS_M * (t - 2.0), 0.0)
    return x, v


def test_law_that_is_nan_past_its_switch_in_time():
    c = compile_model(load_model(MODELS / "acos_clip_force.yaml"))
    errors = []
    for rtol in (1e-6, 1e-9):
        res = simulate(c, t_end=3.0, dt_out=0.01, options=SolverOptions(rtol=rtol, atol=rtol))
        assert res.t[-1] == pytest.approx(3.0)
        assert np.all(np.isfinite(res.data))
        x, v = acos_clip_exact(res.t)
        errors.append(max(np.max(np.abs(res["mass.p"] / ACOS_M - v)), np.max(np.abs(res["pos.x"] - x))))
        st = res.stats
        assert st["events"] == 1 and st["event_restarts"] == 1, st
        # the failing step is cut at the switch, not shrunk by quarters until h underflows
        assert st["newton_failures"] <= 10, st
        # a step landing within the events' resolution before the switch is accepted, not
        # rejected for the modes just past it and its successors shrunk by quarters, each
        # fourth landing there again (12 to 16 such rejections, twice the LUs)
        assert st["rejected"] - st["error_test_failures"] <= 5, st
        # past the switch the force is 0: the velocity holds at pi / m
        assert np.ptp(res["mass.p"][res.t > 2.0]) < 10 * rtol
    print("acos(clip(t - 1)) force, max error at rtol 1e-6, 1e-9:", errors)
    assert errors[0] < 2e-4 and errors[1] < 1e-6


def test_law_that_is_nan_past_its_switch_in_the_state():
    from scipy.integrate import quad

    c = compile_model(load_model(MODELS / "sqrt_clip_force.yaml"))
    m = 2.0
    v_sq = lambda x: 4.0 / (3.0 * m) * (1.0 - (1.0 - x) ** 1.5)  # noqa: E731
    t1 = quad(lambda x: 1.0 / math.sqrt(v_sq(x)), 0.0, 1.0, limit=200)[0]  # time to reach x = 1
    v1 = math.sqrt(v_sq(1.0))
    for rtol, tol in ((1e-6, 2e-4), (1e-9, 1e-6)):
        res = simulate(c, t_end=5.0, dt_out=0.01, options=SolverOptions(rtol=rtol, atol=rtol))
        assert res.t[-1] == pytest.approx(5.0)
        assert np.all(np.isfinite(res.data))
        assert res.stats["events"] == 1 and res.stats["event_restarts"] == 1, res.stats
        after = res.t > t1 + 0.01
        assert np.max(np.abs(res["mass.p"][after] / m - v1)) < tol
        assert np.max(np.abs(res["pos.x"][after] - (1.0 + v1 * (res.t[after] - t1)))) < tol
        assert np.all(res["pos.x"][res.t < t1 - 0.01] < 1.0)


def test_dualarm_runs_past_its_acos_clip_switch():
    """The dual-arm's acos(clip(t - 1, -1, 1)) (robots/dualarm/model.py) past t = 2: `simulate
    dualarm --t-end 2.5` stopped with 'step size underflow at t=2: h=1.8e-15'."""
    from bondsim_ros.robots.dualarm.model import dualarm
    from bondsim_ros.solver import BDFSolver

    c = compile_model(dualarm())
    s = BDFSolver(c.problem(), options=SolverOptions(rtol=1e-6, atol=1e-8))
    s.init(0.0, c.y0)
    s.advance(np.array([1.99]))
    Y, _ = s.advance(np.array([2.0 - 1e-9, 2.0, 2.0 + 1e-9, 2.05, 2.5]))
    assert np.all(np.isfinite(Y))
    assert s.stats["events"] == 1 and s.stats["event_restarts"] == 1, s.stats
    # continuous across the switch: 2 ns apart the state moves by less than its tolerance
    scale = 1e-8 + 1e-6 * np.abs(Y[1])
    assert np.max(np.abs(Y[2] - Y[0]) / scale) < 1.0
    res = simulate(c, t_end=2.5, dt_out=0.01)
    assert res.t[-1] == pytest.approx(2.5) and np.all(np.isfinite(res.data))


def test_a_clip_starting_on_its_limit_at_rest_is_released():
    """sqrt(clip(1 - x, 0, 1)) from x0 = 0 at rest: 1 - x starts exactly on the upper limit and
    y' does not move it, so the side is judged by the second derivative (BDFSolver.init). The
    clipped side kept the force at 1 N for ever: v = 1.000 instead of sqrt(4 / (3 m)) = 0.816."""
    from scipy.integrate import quad

    text = (MODELS / "sqrt_clip_force.yaml").read_text().replace("clip(1 - x, 0, 2)", "clip(1 - x, 0, 1)")
    assert "clip(1 - x, 0, 1)" in text
    c = compile_model(loads_model(text, "sqrt_clip_on_limit.yaml"))
    m = 2.0
    v_sq = lambda x: 4.0 / (3.0 * m) * (1.0 - (1.0 - x) ** 1.5)  # noqa: E731
    t1 = quad(lambda x: 1.0 / math.sqrt(v_sq(x)), 0.0, 1.0, limit=200)[0]
    res = simulate(c, t_end=5.0, dt_out=0.01, options=SolverOptions(rtol=1e-9, atol=1e-9))
    early = (res.t > 0.05) & (res.t < t1 - 0.05)  # v^2 = (4 / 3m)(1 - (1 - x)^1.5) before the switch
    v, x = res["mass.p"][early] / m, res["pos.x"][early]
    assert np.max(np.abs(v ** 2 - v_sq(x))) < 1e-6
    assert abs(res["mass.p"][-1] / m - math.sqrt(v_sq(1.0))) < 1e-6


def test_identical_clips_switching_together_all_switch():
    """The omni5dpo (robots/omni5dpo) turning on the spot: its three drives are identical, so their
    PID voltage clips switch at one instant. Only the one located first switched: at the state
    the solver restarted from, the other two switching functions were already past zero (-4e-10
    and -1e-8), the sign they kept, so no crossing was ever seen; those drives stayed on the
    wrong side of their limit and the wheel speeds came 1.1 rad/s apart. Parameters within 20 %
    of those `test_fit.py` identifies, at its rtol 1e-7: 8 of 60 random such points split the
    wheels before."""
    from bondsim_ros.bondgraph.simulation import Simulation
    from bondsim_ros.robots.omni5dpo.model import omni5dpo

    c = compile_model(omni5dpo(w_step=0.0))
    sim = Simulation(c, options=SolverOptions(rtol=1e-7, atol=1e-9),
                     params={"Izz": 1.0565800181198182, "kp": 0.06337911225507134, "ki": 0.04274133300369713})
    rows = []
    for t0, t1, wz in ((0.0, 0.2, 0.0), (0.2, 2.2, 3.0), (2.2, 2.6, -2.0)):  # yaw-rate steps
        if t0 > 0:
            sim.set_params({"wz_cmd": wz}, restart=True)
        rows.append(sim.advance(np.arange(t0 + 0.02, t1 + 1e-9, 0.02)))
    rows, names = np.vstack(rows), sim.output_names
    w = rows[:, [names.index(k) for k in ("w1", "w2", "w3")]]
    assert np.ptp(w[:, 0]) > 3.0  # the drives did swing through the steps (and their clips)
    # equal to the solver's tolerance (3e-7 rad/s measured)
    assert np.max(np.abs(w - w[:, :1])) < 1e-5


# x'' = t - EPS_DIP from rest at x = 0 (x = t^3/6 - EPS_DIP t^2/2: below 0 until 3 EPS_DIP, then
# above) and z' = floor(x) + 1, the floor a mode in p[0]: z' = 0 during the dip, 1 after it.
# floor(x) switches at x - K = 0 and x - K - 1 = 0. Unknowns x, v, z; CSC columns x (rows 0),
# v (rows 0, 1), z (row 2).
DIP_C = """
#include <math.h>
void res(double t, const double *y, const double *yp, const double *p, double *out) {
    out[0] = yp[0] - y[1];
    out[1] = yp[1] - (t - 1e-6);
    out[2] = yp[2] - (p[0] + 1.0);
}
void jac(double t, const double *y, const double *yp, const double *p, double cj, double *vals) {
    vals[0] = cj;
    vals[1] = -1.0;
    vals[2] = cj;
    vals[3] = cj;
}
void roots(double t, const double *y, const double *yp, const double *p, double *g) {
    g[0] = y[0] - p[0];
    g[1] = y[0] - p[0] - 1.0;
}
void modes(double t, const double *y, const double *yp, const double *p, double *m) { m[0] = floor(y[0]); }
"""
EPS_DIP = 1e-6


def test_a_switching_function_starting_on_zero_that_the_step_carries_across_is_switched(tmp_path):
    """x starts on floor(x)'s switch, at rest: its second derivative picks the side below (K = -1,
    right for t < 3e-6), but the first step (8.7e-5 s from y') ends above it with x - K - 1 gone
    from exactly 0 to positive, which is no sign change: the step was accepted with K = -1 and
    z' = 0 for ever (z(1.5) = 0 instead of 1.5). A step that ends with modes its switching
    functions exclude is not accepted."""
    from bondsim_ros.solver import BDFSolver, DAEProblem, native

    lib = native.load_library(native.build_library(DIP_C, "test_dip", tmp_path))
    k = {name: native.CKernel(lib, name, "jac" if name == "jac" else "res")
         for name in ("res", "jac", "roots", "modes")}
    prob = DAEProblem(k["res"], k["jac"], indptr=np.array([0, 1, 3, 4]), indices=np.array([0, 0, 1, 2]),
                      differential=np.array([True, True, True]), params=np.zeros(0), roots=k["roots"],
                      modes=k["modes"], n_roots=2, n_modes=1)
    s = BDFSolver(prob, options=SolverOptions(rtol=1e-8, atol=1e-10))
    s.init(0.0, [0.0, 0.0, 0.0])
    assert s.pm[0] == -1.0  # the side x goes to first
    t = np.linspace(0.1, 1.5, 15)
    Y, _ = s.advance(t)
    assert s.pm[0] == 0.0
    x = t ** 3 / 6 - EPS_DIP * t ** 2 / 2
    assert np.max(np.abs(Y[:, 0] - x)) < 1e-8
    # z = t - 3e-6 (with K = -1 kept: z = 0). The dip is 7e-19 deep, far below atol, so where x
    # crosses zero again is known only as well as the tolerance allows: found at 9e-6
    assert np.max(np.abs(Y[:, 2] - (t - 3 * EPS_DIP))) < 30 * EPS_DIP


# A relay whose switching function reads the rate it sets: x' = 2 - t while g = x + x'/10 is
# negative, x' = -1 while it is positive, z' = the mode (1 while positive). From x = -1, g reaches
# 0 at t1 = 1.9 - sqrt(2.01) (x = -(2 - t1)/10); there g jumps with the mode: to x - 0.1 < 0 with
# the positive side's x' = -1, to x + (2 - t1)/10 > 0 with the negative side's. No mode is
# consistent with its own switching function past t1 (the relay would have to slide along
# g = 0). Unknowns x, z; CSC columns x (row 0), z (row 1).
RELAY_C = """
void res(double t, const double *y, const double *yp, const double *p, double *out) {
    out[0] = yp[0] - (p[0] > 0.5 ? -1.0 : 2.0 - t);
    out[1] = yp[1] - p[0];
}
void jac(double t, const double *y, const double *yp, const double *p, double cj, double *vals) {
    vals[0] = cj;
    vals[1] = cj;
}
void roots(double t, const double *y, const double *yp, const double *p, double *g) { g[0] = y[0] + 0.1 * yp[0]; }
void modes(double t, const double *y, const double *yp, const double *p, double *m) {
    m[0] = y[0] + 0.1 * yp[0] > 0.0 ? 1.0 : 0.0;
}
"""


def test_a_mode_its_switching_function_excludes_is_not_carried_on(tmp_path):
    """At t1 the relay switches to its positive side, whose x' = -1 puts g at -0.25 at once; the
    restart keeps the mode (a mode just switched is not switched back) and g only falls from
    there, so no sign change followed: the run went on to t = 1.5 with the mode its switching
    function excludes all the way, x' = -1 and z' = 1, without a word. A mode that the laws
    exclude beyond what the step's accuracy leaves undecided is switched back at the step's
    start; switched back and forth at every step it is refused, naming the mode."""
    from bondsim_ros.solver import BDFSolver, DAEProblem, ModeChatter, SolverError, native

    lib = native.load_library(native.build_library(RELAY_C, "test_relay", tmp_path))
    k = {name: native.CKernel(lib, name, "jac" if name == "jac" else "res")
         for name in ("res", "jac", "roots", "modes")}
    prob = DAEProblem(k["res"], k["jac"], indptr=np.array([0, 1, 2]), indices=np.array([0, 1]),
                      differential=np.array([True, True]), params=np.zeros(0), roots=k["roots"],
                      modes=k["modes"], n_roots=1, n_modes=1)
    s = BDFSolver(prob, options=SolverOptions(rtol=1e-8, atol=1e-10))
    s.init(0.0, [-1.0, 0.0])
    assert s.pm[0] == 0.0
    t1 = 1.9 - math.sqrt(2.01)
    with pytest.raises(ModeChatter, match=r"mode 0 of the model's switching laws chatters at t=0\.48") as e:
        s.advance(np.linspace(0.1, 1.5, 15))
    assert isinstance(e.value, SolverError)
    assert s.failure() == ("modes", 0)
    assert 0 <= s.t_step - t1 < 1e-3


# A mass sliding on dry friction written as a Piecewise law: the friction force is 2 N against
# the velocity, so from p = 1 the mass stops at t = 0.5, where each side's law pushes the speed
# back across zero (the mass sticks: a sliding motion along the switch, in Filippov's sense).
DRY_FRICTION = """
model: dry_friction
components:
  mass: {type: I, inertia: 1.0, p0: 1.0}
  dry: {type: R, effort: "Piecewise((2.0, f > 0), (-2.0, True))"}
  j: {type: FlowJunction}
bonds:
  - [j, mass]
  - [j, dry]
"""


def test_a_sliding_switch_is_refused_naming_its_mode():
    """At t = 0.5 every step crossed the switch back, and the steps shrank until the jump of the
    friction force passed for a relabelling of the same law: 500 000 steps in 0.5 us of model
    time, ending in TooManySteps. It is a ModeChatter naming the switch and what to do, at the
    instant the mass stops, after a few dozen steps."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from time_limit import time_bound

    from bondsim_ros.solver import BDFSolver, ModeChatter

    c = compile_model(loads_model(DRY_FRICTION, "dry_friction.yaml"))
    s = BDFSolver(c.problem(), options=SolverOptions(rtol=1e-6, atol=1e-8))
    s.init(0.0, c.y0)
    with time_bound(20), pytest.raises(ModeChatter) as e:
        s.advance(np.linspace(0.01, 2.0, 200))
    assert s.failure() == ("modes", 0)
    assert abs(s.t_step - 0.5) < 1e-6
    assert s.stats["steps"] < 1000
    msg = str(e.value)
    assert "condition 1.0*mass.p < 0" in msg and msg.startswith("mode 0 of the model's switching laws "
                                                                "chatters at t=0.5")
    assert "Filippov" in msg and "tanh" in msg
    with pytest.raises(ModeChatter, match=r"mode 0 .* \(j: equal efforts: condition"):
        simulate(c, 2.0, 0.01)


def test_a_relay_oscillation_is_not_taken_for_chatter():
    """A spring whose force jumps with the sign of its deflection (0.1 q + sign(q), as a Piecewise)
    and a mass: the switch is crossed twice per period, each side's law carrying the mass on
    through it, 33 times in 20 s. It runs to the end and keeps its energy
    p^2/2 + 0.05 q^2 + |q|."""
    relay = """
model: relay_spring
components:
  mass: {type: I, inertia: 1.0, p0: 0.3}
  spring: {type: C, effort: "0.1*q + Piecewise((1.0, q > 0), (-1.0, True))", q0: 0.0}
  j: {type: FlowJunction}
bonds:
  - [j, mass]
  - [j, spring]
"""
    r = simulate(compile_model(loads_model(relay, "relay_spring.yaml")), 20.0, 0.01,
                 options=SolverOptions(rtol=1e-8, atol=1e-10))
    p, q = r["mass.p"], r["spring.q"]
    energy = p ** 2 / 2 + 0.05 * q ** 2 + np.abs(q)
    assert r.stats["events"] >= 30
    assert np.max(np.abs(energy - 0.045)) < 1e-6


def _twin_replay(seed, t_end, rtol):
    """The Robotino twin driven as benchmarks/twin_stress.py drives it (random twist commands,
    frames of 1 to 606 ms) up to t_end; its unknowns at every frame."""
    from bondsim_ros.robots.robotino.twin import RobotinoTwin

    rng = np.random.default_rng(seed)
    twin = RobotinoTwin("twist", TWIN_OPTIONS.replace(rtol=rtol, atol=rtol * 1e-2))
    t, rows = 0.0, []
    while t < t_end:
        if rng.random() < 0.7:
            wide = rng.random() < 0.33
            twin.set_twist(*(rng.uniform(-1, 1, 3) * ([1.5, 1.5, 6.0] if wide else [0.7, 0.7, 2.5])))
        t += rng.choice([0.0303, 0.606, 0.05, 0.001])
        twin.step_to(t)
        rows.append(twin.sim.solver.y.copy())
    return np.array(rows), twin.compiled.var_names


def test_twin_pid_clip_kept_past_its_limit_is_switched_back():
    """Command stream 10 of the twin stress at 14.18 s: drive 2's voltage clip switches to its
    upper limit, and at the restart point the PID output is already back below it (the wheel
    speed it reads moved with the switch); the restart keeps the clip. Nothing changed sign after
    that, so the drive was held at 24 V while its PID asked for less, down to 14 V: against
    the same commands at rtol 1e-9, the integrator was 30.7 V off and the heading 8.6 mrad. With a
    mode the laws exclude beyond the step's accuracy switched back, the twin's default tolerances
    (rtol 1e-6) follow the tight run to 1.4e-4 in the integrator and 1e-5 in the pose."""
    Y, names = _twin_replay(10, 14.5, 1e-6)
    ref, _ = _twin_replay(10, 14.5, 1e-9)
    col = {k: names.index(k) for k in ("chassis.pos_x.x", "chassis.pos_y.x", "chassis.heading.x",
                                       "chassis.drive2.pid.xi")}
    pose = [col["chassis.pos_x.x"], col["chassis.pos_y.x"], col["chassis.heading.x"]]
    assert np.max(np.abs(Y[:, pose] - ref[:, pose])) < 1e-4
    assert np.max(np.abs(Y[:, col["chassis.drive2.pid.xi"]] - ref[:, col["chassis.drive2.pid.xi"]])) < 1e-2


def test_twin_pid_clip_gliding_on_its_limit_goes_on():
    """Command stream 152 of the twin stress at 583.18 s: drive 1's voltage sits on its lower
    limit, where the loop pushes the PID output below it and the back-calculation pushes it back
    up. The clip is continuous there, but each located crossing restarted the method at the same
    instant, and after 11 of them the run failed with ModeChatter. A crossing of a law switching
    back and forth whose residual does not jump at the step's end is now taken without a restart:
    the run goes on, and follows the same commands at rtol 1e-9 to 1e-4 in the pose and 1e-2 V
    in the integrators, as before the limit."""
    Y, names = _twin_replay(152, 590.0, 1e-6)
    ref, _ = _twin_replay(152, 590.0, 1e-9)
    pose = [names.index(k) for k in ("chassis.pos_x.x", "chassis.pos_y.x", "chassis.heading.x")]
    xi = [names.index(f"chassis.drive{i}.pid.xi") for i in (1, 2, 3)]
    assert np.max(np.abs(Y[:, pose] - ref[:, pose])) < 1e-4
    assert np.max(np.abs(Y[:, xi] - ref[:, xi])) < 1e-2


def test_robotino_wheel_at_rest_with_no_consistent_roller_side_goes_on():
    """A fit of the Robotino's mass, yaw inertia and motor constant tried this point: at the
    first command (t = 0.2 s) a wheel at rest starts exactly on a roller's switch, the first step
    ends on the side its mode excludes, and the modes picked past it are excluded again after
    the restart there (the side comes from round-off, both ways). The step then shrank to a
    StepSizeUnderflow naming the mode, and the fit stopped. The step is now accepted with the
    restart's modes and the next step's end decides: the run agrees with one at rtol 1e-10."""
    from bondsim_ros.fit import FitProblem, LogData
    from bondsim_ros.models import resolve_model

    t = np.round(np.arange(0.0, 3.0 + 1e-9, 0.01), 10)
    cmd = [np.where((t >= 0.2) & (t < 1.6), 0.6, 0.0), np.where((t >= 1.0) & (t < 2.2), -0.4, 0.0),
           np.where(t >= 1.8, 2.0, 0.0)]
    outs = ["w1", "w2", "w3", "i1", "i2", "i3"]
    log = LogData(["t", "vx_cmd", "vy_cmd", "wz_cmd"] + outs, np.column_stack([t, *cmd] + [0 * t] * 6))
    compiled = compile_model(resolve_model("robotino_twist")[0])
    point = [15.696695157183381, 0.2258189467878833, 0.030060892994510542]
    runs = [FitProblem(compiled, log, ["chassis_mass", "chassis_inertia", "motor_K"], outs,
                       inputs=["vx_cmd", "vy_cmd", "wz_cmd"],
                       options=SolverOptions(rtol=rtol, atol=rtol * 1e-2)).simulate(point)
            for rtol in (1e-7, 1e-10)]
    assert np.max(np.abs(runs[1][:, :3])) > 10.0  # the wheels turned (rad/s)
    assert np.max(np.abs(runs[0] - runs[1])) < 1e-4


@pytest.mark.parametrize("rollers", [20_000, 250_000])
@pytest.mark.parametrize("rtol", [1e-6, 1e-9])
def test_robotino_with_wheels_turned_far_switches_its_rollers_as_near_zero(rtol, rollers):
    """Wheel angles 20,000 rollers on (2.1e4 rad: some 35 minutes of driving at 10 rad/s; and
    250,000, 2.6e5 rad, over 7 hours, where an angle's error weight rtol |angle| is 0.26 rad at
    rtol 1e-6), a geometry the same as at the paper's angles. A roller's switching function 3 (theta + pi/6) / pi
    - k is then computed from an angle whose ulp (3.6e-12 rad) the wheel takes longer to turn
    than the events' time resolution near t = 0 (9e-16 s): the located root lies where the
    function is exactly 0 and the law still picks the old roller. The run underflowed at the
    first switch (t = 0.04 s) at every tolerance; it now switches the same rollers and follows
    the run from the paper's angles."""
    from bondsim_ros.robots.robotino.model import robotino

    c = compile_model(robotino())
    wheels = [c.var_names.index(f"wheel{i}.angle.x") for i in (1, 2, 3)]
    turned = rollers * math.pi / 3
    opts = SolverOptions(rtol=rtol, atol=rtol * 1e-2, hmax=0.02)
    t_out = np.linspace(0.02, 3.0, 150)
    near = Simulation(c, options=opts)
    far = Simulation(c, options=opts, y0={c.var_names[i]: c.y0[i] + turned for i in wheels})
    Y_near, Y_far = np.asarray(near.advance(t_out)), np.asarray(far.advance(t_out))
    assert far.solver.stats["events"] == near.solver.stats["events"] > 50
    col = near.output_names.index
    pose = [col(k) for k in ("chassis.pos_x.x", "chassis.pos_y.x", "chassis.heading.x")]
    angles = [col(c.var_names[i]) for i in wheels]
    # the same motion to far below the tolerances (measured at rtol 1e-6: pose 6e-11, angles 2e-9;
    # 250,000 rollers on, pose 3.2e-8 m and angles 4.6e-7 rad, the steps differing with the
    # angle's error weight, against a pose error of about 1e-6 m either run has at that tolerance)
    near_enough = 1.0 if rollers == 20_000 else 20.0
    assert np.max(np.abs(Y_far[:, pose] - Y_near[:, pose])) < 1e-8 * near_enough
    assert np.max(np.abs(Y_far[:, angles] - turned - Y_near[:, angles])) < 1e-7 * near_enough


def test_robotino_late_in_a_run_at_a_tight_tolerance_restarts_on_the_new_rollers_constraints():
    """A roller switch is located to the events' time resolution, 100 ulp of t: 2.2e-9 s at
    t = 1e5 s. The point the old roller reached there misses the new roller's rolling
    constraint by that much, here more than rtol 1e-9 allows, and no first step after the
    restart passed its error test: the twist model, autonomous, underflowed 1.2 s after a
    command given at t = 1e5 s (the paper case at rtol 1e-9 did so at t = 2031 s). The restart
    now moves onto the constraint (the probe's end) and the run follows one started at t = 0."""
    from bondsim_ros.models import resolve_model

    c = compile_model(resolve_model("robotino_twist")[0])
    pose = [c.var_names.index(k) for k in ("chassis.pos_x.x", "chassis.pos_y.x", "chassis.heading.x")]

    def run(t0):
        sim = Simulation(c, options=SolverOptions(rtol=1e-9, atol=1e-11, hmax=0.02), t0=t0)
        sim.set_params({"vx_cmd": 0.5, "vy_cmd": 0.2, "wz_cmd": 1.0}, restart=True)
        rows = []
        for k in range(1, 61):
            sim.step_to(t0 + 0.05 * k)
            rows.append(sim.solver.y[pose].copy())
        return np.array(rows), sim.solver.stats["events"]

    (early, n_early), (late, n_late) = run(0.0), run(1e5)
    assert n_late == n_early > 50
    assert np.max(np.abs(late - early)) < 1e-8


def test_outputs_asked_in_several_calls_are_those_of_one_call():
    """A run answered in chunks (the progress bar of `simulate` in a terminal asks 100 outputs
    at a time) takes the steps of the run answered in one call, bit for bit: the core carries
    its switch-back records and the switching functions' last values from call to call. The
    Robotino's 50 s paper run, 927 roller switches: before, chunks parted from one call at 36 s."""
    from bondsim_ros.models import resolve_model

    model, _ = resolve_model("robotino")
    compiled = compile_model(model)
    t_out = np.arange(1, 2501) * 0.02
    runs = []
    for chunk in (None, 100, 7):
        sim = Simulation(compiled, options=SolverOptions(hmax=0.02))
        if chunk is None:
            Y, _ = sim.solver.advance(t_out)
        else:
            Y, _ = sim.solver.advance(t_out, progress=lambda t: None, chunk=chunk)
        runs.append((Y, dict(sim.solver.stats)))
    for Y, stats in runs[1:]:
        assert stats == runs[0][1]
        assert np.array_equal(Y, runs[0][0])


def test_a_row_on_a_switch_in_time_holds_the_state_its_laws_read_there():
    """An output row at the very instant of a step in time holds the state of the law the row's
    own laws read at that instant. The Step reads `after` at t = t0 (t < t0 is false): the row
    at t0 is then the state just after the step, the capacitor still uncharged (uc = 0, q = 0)
    and the whole step across R (i = V0 / R), y' there being the restart's estimate (within
    2 %). A law switching after t0 (t <= t0) gives the state just before it: nothing flows.
    The row used to pair the state before the step (i = 0) with the source after it (uc = V0)."""
    text = (MODELS / "rc_step.yaml").read_text()
    R, V0 = 1.0, 10.0
    after = simulate(compile_model(loads_model(text, "rc_step.yaml")), t_end=0.3, dt_out=0.1, params={"R": R})
    row = dict(zip(after.names, after.data[1]))
    assert row["t"] == 0.1 and row["cap.q"] == 0.0, row
    assert abs(row["i"] - V0 / R) < 0.02 * V0 / R and abs(row["uc"]) < 0.02 * V0, row
    left = (text.replace("  step: {type: Step, t0: 0.1, before: 0.0, after: V0}\n", "")
            .replace("  - [step.out, V.u]\n", "")
            .replace("V: {type: Se, effort: u, inputs: [u]}",
                     "V: {type: Se, effort: 'Piecewise((0, t <= 0.1), (V0, True))'}"))
    before = simulate(compile_model(loads_model(left, "rc_left.yaml")), t_end=0.3, dt_out=0.1, params={"R": R})
    row = dict(zip(before.names, before.data[1]))
    assert row["t"] == 0.1 and row["cap.q"] == 0.0 and row["i"] == 0.0 and row["uc"] == 0.0, row
    # a run that ends on the step ends with the state its interval reaches, before the step, and
    # its laws read there: the source still off (the row used to say uc = V0 with i = 0)
    last = simulate(compile_model(loads_model(text, "rc_step.yaml")), t_end=0.1, dt_out=0.05, params={"R": R})
    row = dict(zip(last.names, last.data[-1]))
    assert row["t"] == 0.1 and row["cap.q"] == 0.0 and row["i"] == 0.0 and row["uc"] == 0.0, row
    # ... also where t_end is a multiple of dt_out that rounds past it (3 * 0.1 is
    # 0.30000000000000004): the last row is at t_end itself, read from the left
    late = text.replace("t0: 0.1,", "t0: 0.3,")
    last = simulate(compile_model(loads_model(late, "rc_late.yaml")), t_end=0.3, dt_out=0.1, params={"R": R})
    row = dict(zip(last.names, last.data[-1]))
    assert row["t"] == 0.3 and row["cap.q"] == 0.0 and row["i"] == 0.0 and row["uc"] == 0.0, row
    # past the step both runs follow uc = V0 (1 - exp(-(t - t0) / RC)) alike
    for result in (after, before):
        uc = dict(zip(result.names, result.data[2]))["uc"]
        assert abs(uc - V0 * (1.0 - math.exp(-0.1 / (R * 0.5)))) < 1e-4, uc


def _integral_of_max_of_sines(n, t_end):
    """The closed form of the integral of max_i sin(i s), i = 1..n, over [0, t_end]: the
    argument that is largest on each stretch between two crossings (found on a fine grid, then
    by brentq), integrated exactly there, (cos(i a) - cos(i b)) / i."""
    from scipy.optimize import brentq

    grid = np.linspace(0.0, t_end, 20001)[1:]
    top = np.argmax(np.sin(np.outer(grid, np.arange(1, n + 1))), axis=1) + 1
    total, a = 0.0, 0.0
    for k in range(1, grid.size):
        if top[k] != top[k - 1]:
            i, j = top[k - 1], top[k]
            b = brentq(lambda s: math.sin(i * s) - math.sin(j * s), grid[k - 1], grid[k], xtol=1e-15)
            total += (math.cos(i * a) - math.cos(i * b)) / i
            a = b
    i = top[-1]
    return total + (math.cos(i * a) - math.cos(i * t_end)) / i


def test_a_max_of_many_laws_builds_quickly_and_integrates_to_its_integral():
    """A Max of n arguments has n - 1 modes, each picking between its argument and the Max of
    those after it. Writing the inner modes' laws into the outer ones made sympy fold every
    condition into normal form: a Max of six sines did not finish generating its code in 5
    minutes. Here sixteen; p(t) = integral of max_i sin(i t) in closed form."""
    from time_limit import time_bound

    n = 16
    law = "Max(" + ", ".join(f"sin({i}*t)" for i in range(1, n + 1)) + ")"
    text = (f"model: maxn\ncomponents:\n  F: {{type: Se, effort: '{law}'}}\n  mass: {{type: I, inertia: 1.0}}\n"
            "bonds: [[F, mass]]\n")
    with time_bound(60):
        compiled = compile_model(loads_model(text, "maxn.yaml"), use_cache=False)
    result = simulate(compiled, t_end=1.0, dt_out=0.25, options=SolverOptions(rtol=1e-9, atol=1e-12))
    for t, p in zip(result.data[1:, 0], result.data[1:, 1]):
        exact = _integral_of_max_of_sines(n, t)
        assert abs(p - exact) < 1e-7, (t, p, exact)


def _pushed_by(effort: str, params: str = "") -> str:
    """A mass pushed by a law of its own position x (an Integrator of its speed)."""
    return (f"model: m\n{params}components:\n  F: {{type: Se, effort: \"{effort}\", inputs: [x]}}\n"
            f"  v: {{type: EffortJunction, output: true}}\n  m: {{type: I, inertia: 1}}\n  pos: {{type: Integrator}}\n"
            f"bonds: [[F, v], [v, m]]\nsignals: [[v.out, pos.in_], [pos.out, F.x]]\n")


def test_mod_by_a_run_time_parameter_runs_as_its_definition():
    """Mod(x + 1, k) with k a parameter was refused ('cannot differentiate ... for the
    Jacobian', at line 1 of a component called derivative): it runs, bit for bit as
    x + 1 - k floor((x + 1)/k), switching where the floor does."""
    params = "parameters: {k: 2.0}\n"
    runs = [simulate(compile_model(loads_model(_pushed_by(law, params), "m.yaml"), use_cache=False),
                     t_end=3.0, dt_out=0.5) for law in ("Mod(x + 1, k)", "(x + 1) - k*floor((x + 1)/k)")]
    np.testing.assert_array_equal(runs[0].data, runs[1].data)
    assert runs[0].stats["events"] == 2


@pytest.mark.parametrize("law, says", [
    ("floor(floor(x/1.5)/1.5)", "its equations cannot be reduced"),
    ("Piecewise((1, Min(t % Piecewise((x, x < 1), (2, True)), 1) < cos(x + 1) + x), (x, True))",
     "its switching laws cannot be turned into events"),
])
def test_switches_sympy_cannot_order_are_refused_naming_the_model_not_a_traceback(law, says):
    from bondsim_ros.bondgraph.core import ModelError

    with pytest.raises(ModelError, match=says):
        compile_model(loads_model(_pushed_by(law), "m.yaml"), use_cache=False)


def test_a_branch_that_is_not_real_compiles_and_fails_where_it_is_reached():
    """sqrt(clip(x - 0.2, -1, 1)): where the clip holds -1 sympy makes the branch I, which the C
    printer wrote as an undeclared identifier (gcc's error, no component named). It is NaN, as
    the law's double arithmetic gives there: the model compiles, and a start at x = 0 (the
    square root of -0.2) is refused naming the equation."""
    from bondsim_ros.solver import InconsistentInitialValues

    compiled = compile_model(loads_model(_pushed_by("1 + sqrt(clip(x - 0.2, -1, 1))"), "m.yaml"), use_cache=False)
    with pytest.raises(InconsistentInitialValues, match="not finite at t=0"):
        simulate(compiled, t_end=1.0, dt_out=0.5)


PULSE = """
model: pulse
parameters: {t1: 0.7, t2: 0.8}
components:
  src: {type: Input, value: "Piecewise((10, (t > t1) & (t < t2)), (0, True))"}
  z: {type: Integrator}
  s1: {type: Step, t0: t1, after: 10}
  s2: {type: Step, t0: t2, after: 10}
  d: {type: Sum, signs: "+-"}
  z2: {type: Integrator}
  rec: {type: Recorder, columns: [z, z2]}
signals: [[src.out, z.in_], [s1.out, d.in1], [s2.out, d.in2], [d.out, z2.in_], [z.out, rec.z], [z2.out, rec.z2]]
"""


@pytest.mark.parametrize("hmax", [math.inf, 0.2, 0.09])
def test_a_pulse_a_single_step_passes_over_is_integrated(hmax):
    """A pulse of 10 for 0.1 s integrates to 1, whether written as one law (t > t1 and t < t2)
    or as a Step minus a Step. Its two switches flip inside one step, so the modes at the step's
    ends are alike (off, off), and so is the residual there: the step used to be kept, the pulse
    never applied (0 in every row, exit status 0). Two functions crossing in one step now go
    to the earliest root."""
    result = simulate(compile_model(loads_model(PULSE, "pulse.yaml")), t_end=2.0, dt_out=0.1,
                      options=SolverOptions(hmax=hmax))
    last = dict(zip(result.names, result.data[-1]))
    assert abs(last["z"] - 1.0) < 1e-9 and abs(last["z2"] - 1.0) < 1e-9, last


BALL = """
model: ball
parameters: {m: 1.0, g: 9.81, k: 1.0e4}
components:
  v: {type: EffortJunction, output: true}
  W: {type: Se, effort: "m*g"}
  mass: {type: I, inertia: m}
  ground: {type: C, effort: "Piecewise((k*q, q > 0), (0, True))", q0: -1.0}
bonds: [[W, v], [v, mass], [v, ground]]
"""


def ball_exact(t, m=1.0, g=9.81, k=1.0e4):
    """A mass falling from q = -1 onto a spring ground at q = 0 (stiffness k, acting for q > 0),
    bouncing without loss: free fall, half a harmonic oscillation about m g / k, free flight
    back up and down, again. Returns (p, q)."""
    w = math.sqrt(k / m)
    t1 = math.sqrt(2.0 / g)
    v1 = g * t1
    # in contact q = (m g / k)(1 - cos ws) + (v1 / w) sin ws, zero again where
    # tan(ws / 2) = -(v1 / w) / (m g / k)
    contact = 2.0 / w * (math.pi - math.atan(v1 * k / (w * m * g)))
    flight = 2.0 * v1 / g
    if t < t1:
        return m * g * t, -1.0 + 0.5 * g * t * t
    s = (t - t1) % (contact + flight)
    if s < contact:
        return m * (m * g / k * w * math.sin(w * s) + v1 * math.cos(w * s)), \
            m * g / k * (1.0 - math.cos(w * s)) + v1 / w * math.sin(w * s)
    s -= contact
    return m * (-v1 + g * s), -v1 * s + 0.5 * g * s * s


def test_rows_inside_a_step_that_ends_at_an_event_follow_the_solution():
    """The free flight is a parabola, which the method steps over in large steps: the step that
    reaches the ground is cut at the contact, and the rows inside it come from the cut step's
    polynomial, in one call or in many. Asked in chunks (the progress bar's 100 rows, a fit's
    slices, a row a call), the rows the last call could not answer before the contact used to be
    extrapolated backwards from the restart at the contact: q fell while p > 0, 5e-2 off at
    t = 1.29, and a row's value depended on the length of the run."""
    compiled = compile_model(loads_model(BALL, "ball.yaml"))
    t_out = np.round(np.arange(1, 301) * 0.005, 12)
    runs = []
    for chunk in (None, 100, 7, 1):
        sim = Simulation(compiled)
        if chunk is None:
            Y, _ = sim.solver.advance(t_out)
        elif chunk == 1:
            Y = np.vstack([sim.solver.advance([t])[0] for t in t_out])
        else:
            Y, _ = sim.solver.advance(t_out, progress=lambda t: None, chunk=chunk)
        runs.append(Y)
    ip, iq = compiled.var_names.index("mass.p"), compiled.var_names.index("ground.q")
    exact = np.array([ball_exact(t) for t in t_out])
    worst = np.abs(runs[0][:, [ip, iq]] - exact).max(axis=0)
    assert worst[0] < 2e-3 and worst[1] < 2e-4, worst
    for Y in runs[1:]:
        assert np.array_equal(Y, runs[0])


EV_WINDOW = """
model: window
parameters: {w: 1.0e-6}
components:
  one: {type: Constant, value: 1}
  x: {type: Integrator}
  f: {type: Function, expr: "Piecewise((1, u < 0.5), (3, True))", inputs: [u]}
  y: {type: Integrator}
  pulse: {type: Function, expr: "Piecewise((1/w, (u > 0.7) & (u < 0.7 + w)), (0, True))", inputs: [u]}
  z: {type: Integrator}
  bump: {type: Function, expr: "Piecewise((1/(2*w), (u - 1.3)^2 < w^2), (0, True))", inputs: [u]}
  b: {type: Integrator}
  rec: {type: Recorder, columns: [x, y, z, b]}
signals: [[one.out, x.in_], [x.out, f.u], [f.out, y.in_], [x.out, pulse.u], [pulse.out, z.in_], [x.out, bump.u],
          [bump.out, b.in_], [x.out, rec.x], [y.out, rec.y], [z.out, rec.z], [b.out, rec.b]]
"""


def test_a_root_a_hair_past_a_restart_is_located_where_it_is():
    """Windows 1 us and 2 us wide integrate to 1. After the first (restarted at its end, 0.700001),
    steps of 1 ms end 3e-12 s inside the second: the root
    finder then starts from a bracket end whose value is round-off against the other's, and the
    secant lands within round-off of it. Moved by ttol/2 a pass, it used to run out of passes
    and return the step's far end: the entry was put 2 us late and the exit 1 ms late, the
    integral 500 instead of 1. As IDA's root finder does, a trial point that near an end now
    moves a tenth of the bracket inwards, and a kept end's weight compounds."""
    result = simulate(compile_model(loads_model(EV_WINDOW, "window.yaml")), t_end=2.0, dt_out=0.5,
                      options=SolverOptions(hmax=1e-3))
    last = dict(zip(result.names, result.data[-1]))
    assert abs(last["z"] - 1.0) < 1e-5 and abs(last["b"] - 1.0) < 1e-5, last
    assert abs(last["y"] - 5.0) < 1e-9, last  # x' = 1 until x = 0.5, 3 after


def test_two_relabels_in_one_step_are_taken_where_they_are():
    """Two wheels' Mod passing a multiple 1e-9 s apart inside one step only relabel their laws:
    they are taken on the accepted step, no step shortened to land on either, no restart, the
    run's work that of the two passing together."""
    text = """
model: mods
parameters: {a: 0.0}
components:
  one: {type: Constant, value: 1}
  x: {type: Integrator}
  f1: {type: Function, expr: "sin(2*pi*Mod(u, 0.1)/0.1)", inputs: [u]}
  y: {type: Integrator}
  f2: {type: Function, expr: "sin(2*pi*Mod(u + a, 0.1)/0.1)", inputs: [u]}
  z: {type: Integrator}
  rec: {type: Recorder, columns: [x, y, z]}
signals: [[one.out, x.in_], [x.out, f1.u], [f1.out, y.in_], [x.out, f2.u], [f2.out, z.in_], [x.out, rec.x],
          [y.out, rec.y], [z.out, rec.z]]
"""
    compiled = compile_model(loads_model(text, "mods.yaml"))
    work = {}
    for a in (0.0, 1e-9):
        sim = Simulation(compiled, options=SolverOptions(rtol=1e-6), params={"a": a})
        Y, _ = sim.solver.advance(np.arange(1, 21) * 0.1)
        stats = sim.solver.stats
        assert stats["event_restarts"] == 0, stats
        assert abs(Y[-1][1]) < 1e-5 and abs(Y[-1][2]) < 1e-5, Y[-1]  # whole periods of a sine: 0
        work[a] = (stats["steps"], stats["lu_factorizations"])
    assert work[1e-9] == work[0.0], work
