"""Event location: discontinuities declared by a model's laws are located by the solver.

A Piecewise force switching on position (closed form), a step reference into a saturating PID at
rtol 1e-12 (it used to stop with "step size underflow at t=0.5"), and the generated events.
The Robotino's rejected-step fraction is checked in test_robotino.py on its 50 s run.
"""
import math
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.bondgraph import compile_model, simulate
from bondsim_ros.bondgraph.yamlmodel import load_model, loads_model

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
        res = simulate(switching_force, t_end=3.0, dt_out=0.01, rtol=rtol, atol=rtol)
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
    dense = simulate(switching_force, t_end=3.0, dt_out=0.01, rtol=1e-9, atol=1e-9, linear_solver="dense")
    sparse = simulate(switching_force, t_end=3.0, dt_out=0.01, rtol=1e-9, atol=1e-9, linear_solver="sparse")
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
        res = simulate(pid_step, t_end=5.0, dt_out=0.01, rtol=rtol, atol=rtol * 1e-2)
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
