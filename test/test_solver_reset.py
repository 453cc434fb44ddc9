"""One solver for many runs: ``BDFSolver.reset``, ``Simulation.reset``, ``simulate_many`` and the
fit's runs give bit for bit what a new solver gives for the same parameters."""

from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.bondgraph import compile_model, simulate, simulate_many
from bondsim_ros.bondgraph.simulation import Simulation
from bondsim_ros.bondgraph.yamlmodel import load_model
from bondsim_ros.models import resolve_model
from test_fit import MOTOR_PY
from test_solver import h2_problem, linear_problem

from bondsim_ros.fit import FitProblem, LogData
from bondsim_ros.solver import BDFSolver, DAEProblem, SolverOptions, jacobian_kernel, residual_kernel

MODELS = Path(__file__).parent / "data" / "models"


@residual_kernel
def decay_res(t, y, yp, p, out):
    out[0] = yp[0] + p[0] * y[0] - p[1] * y[1]
    out[1] = y[1] - p[2] * (1.0 + t)  # an algebraic input scaled by a parameter


@jacobian_kernel
def decay_jac(t, y, yp, p, cj, vals):
    vals[0], vals[1], vals[2] = cj + p[0], -p[1], 1.0


def decay_problem(params):
    return DAEProblem(decay_res, decay_jac, np.array([0, 1, 3]), np.array([0, 0, 1]), np.array([True, False]),
                      np.asarray(params, float), ["x", "u"], ["x law", "u law"])


def fresh(problem, y0, t_out, options):
    s = BDFSolver(problem, options)
    s.init(0.0, y0)
    Y, YP = s.advance(t_out)
    return Y, YP, s.stats


@pytest.mark.parametrize("linear_solver", ["dense", "sparse"])
def test_reset_runs_bit_for_bit_as_a_new_solver(linear_solver):
    t_out = np.linspace(0.05, 3.0, 60)
    sets = [[2.0, 1.0, 0.5], [0.3, 4.0, -1.0], [2.0, 1.0, 0.5]]
    options = SolverOptions(rtol=1e-8, atol=1e-10, linear_solver=linear_solver)
    reused = BDFSolver(decay_problem(sets[0]), options)
    for k, params in enumerate(sets):
        if k:
            reused.reset(0.0, [1.0, 0.0], params=params)
        else:
            reused.init(0.0, [1.0, 0.0])
        Y, YP = reused.advance(t_out)
        Yf, YPf, stats = fresh(decay_problem(params), [1.0, 0.0], t_out, options)
        assert np.array_equal(Y, Yf) and np.array_equal(YP, YPf)
        assert reused.stats == stats  # counters start from 0 again
        assert stats["steps"] > 20


def test_reset_after_a_run_resumed_with_other_parameters_and_of_an_index2_dae():
    """Whatever a run left in the solver (set_params restarts, a longer run, the index-2
    unknowns' floor), a reset starts from the state of a new solver."""
    t_out = np.linspace(0.1, 2.0, 20)
    for problem, y0 in ((h2_problem(), [0.2, 0.8, 0.0]), (linear_problem(), [1.0, 0.0, 0.5])):
        options = SolverOptions(rtol=1e-7, atol=1e-9)
        Yf, YPf, stats = fresh(problem, y0, t_out, options)
        s = BDFSolver(problem, options)
        s.init(0.0, y0)
        s.advance(np.linspace(0.1, 5.0, 7))
        s.set_params(s.p, restart=True)
        s.advance([6.0])
        s.reset(0.0, y0)
        Y, YP = s.advance(t_out)
        assert np.array_equal(Y, Yf) and np.array_equal(YP, YPf) and s.stats == stats


def test_reset_refuses_a_wrong_number_of_parameters():
    s = BDFSolver(decay_problem([1.0, 1.0, 1.0]))
    s.init(0.0, [1.0, 0.0])
    with pytest.raises(ValueError, match="2 parameter values given, the problem has 3"):
        s.reset(0.0, [1.0, 0.0], params=[1.0, 2.0])


@pytest.fixture(scope="module")
def motor(tmp_path_factory):
    """The DC motor with run-time Ra, K, bL, V (test_fit's)."""
    path = tmp_path_factory.mktemp("reset") / "motor.py"
    path.write_text(MOTOR_PY)
    return compile_model(resolve_model(str(path))[0])


def _same(a, b):
    assert a.names == b.names
    assert np.array_equal(a.data, b.data), np.max(np.abs(a.data - b.data))
    assert a.stats == b.stats


def test_simulate_many_equals_simulate_per_set(motor):
    sets = [{}, {"Ra": 2.0, "K": 0.02}, {"V": 12.0, "bL": 3e-4}, {}]
    many = simulate_many(motor, sets, t_end=0.3, dt_out=0.001, options=SolverOptions(rtol=1e-7, atol=1e-9))
    assert len(many) == len(sets)
    for params, result in zip(sets, many):
        _same(result, simulate(motor, t_end=0.3, dt_out=0.001,
                               options=SolverOptions(rtol=1e-7, atol=1e-9), params=params))
    # the parameters made a difference: the runs are not all the same
    assert not np.array_equal(many[0].data, many[1].data)


def test_simulate_many_with_events_and_modes():
    """A saturating PID (switching laws: modes picked at the start, events located on the way):
    the modes of the previous run do not carry over."""
    compiled = compile_model(load_model(MODELS / "pid_step_saturation.yaml"))
    sets = [{"umax": 0.5}, {}, {"umax": 0.5, "m": 2.0}]
    many = simulate_many(compiled, sets, t_end=3.0, dt_out=0.01, options=SolverOptions(rtol=1e-8, atol=1e-10))
    for params, result in zip(sets, many):
        _same(result, simulate(compiled, t_end=3.0, dt_out=0.01,
                               options=SolverOptions(rtol=1e-8, atol=1e-10), params=params))
    assert many[0].stats["events"] > 0


def test_simulate_many_names_a_refused_parameter(motor):
    from bondsim_ros.bondgraph.core import ModelError

    with pytest.raises(ModelError, match="Ra"):
        simulate_many(motor, [{}, {"Ra": -1.0}], t_end=0.1, dt_out=0.01)
    with pytest.raises(KeyError, match="no parameter 'Rb'"):
        simulate_many(motor, [{"Rb": 1.0}], t_end=0.1, dt_out=0.01)


def test_simulation_reset_keeps_its_tolerances_and_start(motor):
    sim = Simulation(motor, options=SolverOptions(rtol=1e-5, atol=1e-7, hmax=0.01), t0=0.1, params={"Ra": 3.0})
    sim.advance(np.linspace(0.11, 0.2, 10))
    sim.reset(params={"K": 0.05}, t0=0.1)
    rows = sim.advance(np.linspace(0.11, 0.2, 10))
    new = Simulation(motor, options=SolverOptions(rtol=1e-5, atol=1e-7, hmax=0.01), t0=0.1, params={"K": 0.05})
    assert np.array_equal(rows, new.advance(np.linspace(0.11, 0.2, 10)))
    assert sim.param("Ra") == 1.2  # the model's value: reset is relative to the model, not the last run


def test_fit_runs_reuse_one_solver_and_equal_fresh_ones(motor):
    """The fit's runs (logged input held between samples: restarts at each change) on one
    reused solver give what a new FitProblem's first run gives."""
    t = np.linspace(0.0, 0.3, 121)
    volts = np.where(t < 0.1, 24.0, np.where(t < 0.2, 6.0, 18.0))
    log = LogData(["t", "V", "current", "omega_load"], np.column_stack([t, volts, 0 * t, 0 * t]))

    def problem():
        return FitProblem(motor, log, ["Ra", "K"], ["current", "omega_load"], inputs=["V"],
                          options=SolverOptions(rtol=1e-8, atol=1e-10))

    reused = problem()
    first = reused.simulate([1.2, 0.03])
    sim = reused._sim
    for theta in ([1.5, 0.028], [1.2 * (1 + 1e-4), 0.03], [1.2, 0.03]):
        out = reused.simulate(theta)
        assert reused._sim is sim  # one solver
        assert np.array_equal(out, problem().simulate(theta))
    assert np.array_equal(out, first)
    reused.options = reused.options.replace(rtol=1e-6)  # other options: another solver
    assert np.array_equal(reused.simulate([1.2, 0.03]), FitProblem(
        motor, log, ["Ra", "K"], ["current", "omega_load"], inputs=["V"],
        options=SolverOptions(rtol=1e-6, atol=1e-10)).simulate([1.2, 0.03]))
    assert reused._sim is not sim


def test_sparse_column_order_comes_from_the_cache_as_scipy_gives_it(tmp_path, monkeypatch):
    """The COLAMD order of the sparse LU is kept in the cache by pattern: a later solver of the
    same pattern takes it from there (no SciPy call), identical, and runs bit for bit the same;
    an unreadable or wrong file is computed again. (The own sparse LU's: KLU orders for itself.)"""
    from bondsim_ros.solver import _ccore, bdf, native

    monkeypatch.setenv("BONDSIM_NO_KLU", "1")
    _ccore.library()  # the core without KLU, from the real cache
    monkeypatch.setattr(native, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(bdf, "_orders", {})
    t_out = np.linspace(0.1, 2.0, 20)
    first = BDFSolver(linear_problem(), options=SolverOptions(rtol=1e-8, atol=1e-10, linear_solver="sparse"))
    assert first.sparse_lu == "own"
    (saved,) = (tmp_path / "solver").glob("colamd_*.npy")
    assert np.array_equal(first.q, bdf._colamd(first.indptr, first.indices, 3))
    first.init(0.0, [1.0, 0.0, 0.5])
    Y1, _ = first.advance(t_out)

    def no_scipy(*args):
        raise AssertionError("the column order was computed again")

    monkeypatch.setattr(bdf, "_orders", {})  # a new process: from the file
    with monkeypatch.context() as m:
        m.setattr(bdf, "_colamd", no_scipy)
        again = BDFSolver(linear_problem(), options=SolverOptions(rtol=1e-8, atol=1e-10, linear_solver="sparse"))
    assert np.array_equal(again.q, first.q)
    again.init(0.0, [1.0, 0.0, 0.5])
    assert np.array_equal(again.advance(t_out)[0], Y1)
    for bad in (b"not an array", np.array([0, 0, 1], dtype=np.int64)):  # garbage, not a permutation
        monkeypatch.setattr(bdf, "_orders", {})
        if isinstance(bad, bytes):
            saved.write_bytes(bad)
        else:
            np.save(saved, bad)
        assert np.array_equal(BDFSolver(linear_problem(), options=SolverOptions(linear_solver="sparse")).q, first.q)


def test_a_start_time_that_is_no_finite_number_and_no_output_times_are_refused(motor):
    """Refused at the call, naming what: a NaN start ran on to 'more than 500000 steps before
    reaching the output time (t=nan)', an empty list of output times raised IndexError."""
    with pytest.raises(ValueError, match="t0: the start time must be finite, got nan"):
        Simulation(motor, t0=float("nan"))
    sim = Simulation(motor)
    with pytest.raises(ValueError, match="t0: the start time must be finite, got inf"):
        sim.reset(t0=float("inf"))
    with pytest.raises(ValueError, match="advance: no output times given"):
        sim.advance([])
    assert sim.advance([0.1]).shape == (1, len(sim.output_names))
