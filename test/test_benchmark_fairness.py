"""The solver benchmark's comparison with SUNDIALS IDA is a fair one: IDA integrates the same
moded residual as ours (the switches located by its rootfinding, with the modes the laws pick),
only Pareto points of a work-precision sweep count, ratios are taken at equal error on the two
fronts, and a run's time includes its set-up."""
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from bondsim_ros.solver import SolverOptions

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import solver_bench

    return solver_bench


@pytest.fixture(scope="module")
def robotino_ida():
    sys.path.insert(0, str(BENCH))
    try:
        import c_ida
    finally:
        sys.path.remove(str(BENCH))
    try:
        c_ida.check_toolchain()
    except c_ida.MissingSundials as exc:
        pytest.skip(str(exc))
    from bondsim_ros.bondgraph import compile_model
    from bondsim_ros.robots.robotino.model import robotino

    model = robotino()
    c = compile_model(model)
    return c, c_ida.CIDA(model, c, log=lambda *a: None), c_ida


# -- Pareto front and ratios at equal error (synthetic work-precision data) ----------------------
def test_pareto_drops_a_run_that_a_cheaper_run_matches_or_beats(bench):
    runs = [(1e-4, 1.0, "a"), (1e-5, 2.0, "b"), (1e-5, 3.0, "c"),  # c: same error as b, dearer
            (2e-5, 4.0, "d"),  # d: worse than b and dearer
            (1e-7, 5.0, "e"), (1e-7, 5.0, "f2"),  # equal time and error: one stays
            (3e-8, 5.0, "g")]  # same time as e, lower error: g stays, e goes
    front = bench.pareto(runs)
    assert [q[2] for q in front] == ["a", "b", "g"]
    # the error no longer following the tolerance (a flat tail of dearer runs) is dropped
    flat = [(1e-6, 1.0, 1e-6), (1e-7, 2.0, 1e-7), (1.1e-7, 4.0, 1e-8), (1.0e-7, 8.0, 1e-9)]
    assert [q[2] for q in bench.pareto(flat)] == [1e-6, 1e-7]


def test_ratios_are_taken_on_both_fronts_inside_the_common_errors(bench):
    errs = [1e-3, 1e-4, 1e-5, 1e-6]
    ref = [(e, 10.0 * e ** -0.25, None) for e in errs]
    # ours: a quarter of the reference's time, at other errors, plus a dominated run
    ours = [(e, 2.5 * e ** -0.25, None) for e in (3e-4, 3e-5, 3e-6, 3e-7)] + [(1e-4, 100.0, None)]
    ratios = bench.front_ratios(bench.pareto(ours), bench.pareto(ref))
    # ours reaches 3e-7 ... 3e-4, the reference 1e-6 ... 1e-3: the points of both in 1e-6 ... 3e-4
    assert [e for e, _ in ratios] == [1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4]
    assert np.allclose([r for _, r in ratios], 0.25)
    assert np.allclose(bench.equal_error_ratios([(e, t) for e, t, _ in ours], [(e, t) for e, t, _ in ref]), ratios)


def test_no_common_errors_gives_no_ratio(bench):
    assert bench.front_ratios([(1e-3, 1.0)], [(1e-6, 1.0)]) == []


# -- the same moded residual ----------------------------------------------------------------------
def test_ida_gets_the_moded_residual_of_ours(robotino_ida):
    """The residual the driver hands IDA reads the modes: with the modes the laws pick at a point it
    is the laws' own residual, with other modes it is not (so a harness passing the unmoded one
    would be caught), and it is the residual ours integrates (the moded kernel)."""
    c, ida, _ = robotino_ida
    assert c.n_modes == 3 and ida.moded
    from bondsim_ros.solver import BDFSolver

    s = BDFSolver(c.problem(), options=SolverOptions(rtol=1e-8, atol=1e-10, hmax=0.02))
    s.init(0.0, c.y0)
    s.advance(np.array([0.7]))
    t, y, yp = s.t, s.y.copy(), s.yp.copy()
    nat = np.zeros(c.n_modes)
    c.modes(t, y, yp, c.params, nat)
    laws = np.zeros(c.n)
    c.residual(t, y, yp, c.params, laws)
    ours = np.zeros(c.n)
    c.residual_modes(t, y, yp, np.concatenate([c.params, nat]), ours)
    # the same C, compiled for IDA at -O3 -march=native (contractions into FMA): equal to rounding
    assert np.allclose(ida.residual(t, y, yp, modes=nat), ours, rtol=1e-9, atol=1e-13)
    assert np.allclose(ours, laws, rtol=0, atol=1e-13)
    assert np.allclose(ida.residual(t, y, yp), laws, rtol=1e-9, atol=1e-13)
    other = nat + np.array([1.0, 0.0, 0.0])
    assert not np.allclose(ida.residual(t, y, yp, modes=other), laws, rtol=0, atol=1e-6)


def test_ida_crosses_the_roller_switches_with_the_modes_the_laws_pick(robotino_ida):
    c, ida, _ = robotino_ida
    from bondsim_ros.solver import BDFSolver

    s = BDFSolver(c.problem(), options=SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.02))
    y0, yp0 = s.init(0.0, c.y0)
    t_out = np.arange(1, 51) * 0.02
    Y, YP, st = ida.run(t_out, y0.copy(), yp0.copy(), 1e-8, 1e-10, 0.02)
    assert st["root_returns"] >= 10 and st["mode_switches"] >= 10 and st["reinits"] == st["mode_switches"]
    assert ida.modes.shape == (len(t_out), c.n_modes)
    assert len({tuple(m) for m in ida.modes}) >= 5  # the modes changed along the run
    nat = np.zeros(c.n_modes)
    for k, t in enumerate(t_out):
        c.modes(t, Y[k], YP[k], c.params, nat)
        assert np.array_equal(ida.modes[k], nat), f"t={t}: IDA held modes {ida.modes[k]}, the laws pick {nat}"
    # and it computes the same motion as ours
    ours = BDFSolver(c.problem(), options=SolverOptions(rtol=1e-8, atol=1e-10, hmax=0.02))
    ours.init(0.0, y0, yp0, consistent=False)
    Yo, _ = ours.advance(t_out)
    scale = np.maximum(np.max(np.abs(Yo), axis=0), 1e-3)
    assert np.max(np.abs(Yo - Y) / scale) < 1e-5


def test_ida_takes_the_modes_the_run_goes_to_at_the_start_and_stops_on_a_root_at_an_output(robotino_ida):
    """The dual-arm's drive ramp clip(t - 1, -1, 1) sits on its lower limit exactly at t0 = 0 and
    reaches its upper one exactly at the last output time, t = 2: IDA starts with the modes of
    the side the run goes to (as ours) and returns that output, with KLU as with dense LU."""
    _, _, c_ida = robotino_ida
    from bondsim_ros.bondgraph import compile_model
    from bondsim_ros.robots.dualarm.model import dualarm
    from bondsim_ros.solver import BDFSolver

    model = dualarm()
    c = compile_model(model)
    s = BDFSolver(c.problem(), options=SolverOptions(rtol=1e-7, atol=1e-9))
    y0, yp0 = s.init(0.0, c.y0)
    y0, yp0 = y0.copy(), yp0.copy()
    t_out = np.array([0.5, 1.0, 2.0])
    Yo, _ = s.advance(t_out)
    if not c_ida.klu_available():
        pytest.skip("SUNDIALS's KLU solver or SuiteSparse's klu.h missing")
    for solver in ("klu", "dense"):
        ida = c_ida.CIDA(model, c, log=lambda *a: None, linear_solver=solver)
        Y, _, st = ida.run(t_out, y0, yp0, 1e-7, 1e-9)
        assert st["mode_switches"] == 1 and st["status"] == 0
        assert list(ida.modes[0]) == [0.0, 0.0]  # off the lower limit from the start, as ours
        pos = [c.var_names.index(v) for v in c.var_names if v.endswith(".angle.x")]
        assert np.max(np.abs(Y[:, pos] - Yo[:, pos])) < 1e-5


def test_the_unmoded_run_is_kept_for_comparison(robotino_ida):
    c, _, c_ida = robotino_ida
    from bondsim_ros.robots.robotino.model import robotino

    plain = c_ida.CIDA(robotino(), c, log=lambda *a: None, moded=False)
    assert not plain.moded
    from bondsim_ros.solver import BDFSolver

    y0, yp0 = BDFSolver(c.problem(), options=SolverOptions(hmax=0.02)).init(0.0, c.y0)
    _, _, st = plain.run(np.array([0.02, 0.04]), y0.copy(), yp0.copy(), 1e-6, 1e-8, 0.02)
    assert st["root_returns"] == 0 and st["mode_switches"] == 0
    with pytest.raises(ValueError, match="linear_solver"):
        c_ida.CIDA(robotino(), c, linear_solver="lapack")


# -- set-up timed ---------------------------------------------------------------------------------
def test_our_run_time_includes_the_solver_set_up(bench, monkeypatch):
    """A set-up that takes 50 ms shows in the time of a run of ours."""
    import bondsim_ros.solver as solver
    from bondsim_ros.models import examples as ex
    from bondsim_ros.bondgraph import compile_model

    class SlowInit(solver.BDFSolver):
        def init(self, *args, **kwargs):
            time.sleep(0.05)
            return super().init(*args, **kwargs)

    c = compile_model(ex.series_rlc())
    s = solver.BDFSolver(c.problem())
    y0, yp0 = s.init(0.0, c.y0)
    el_fast, _, _ = bench.ours_run(c, np.array([1e-3]), y0, yp0, 1e-6, 1e-8, np.inf)
    monkeypatch.setattr(solver, "BDFSolver", SlowInit)
    el, (Y, _), _ = bench.ours_run(c, np.array([1e-3]), y0, yp0, 1e-6, 1e-8, np.inf)
    assert el >= 0.05 > el_fast
    assert Y.shape == (1, c.n)
