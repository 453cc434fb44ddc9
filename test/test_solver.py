"""The BDF solver on its own: problems with known solutions, resumability, failures."""
import math
import re

import numpy as np
import pytest
import scipy.linalg
from scipy.integrate import solve_ivp

from bondsim_ros.solver import (
    BDFSolver, DAEProblem, InconsistentInitialValues, SingularMatrix, SolverOptions, StepSizeUnderflow,
    jacobian_kernel, residual_kernel,
)


def dense_pattern(n):
    indptr = np.arange(0, n * n + 1, n, dtype=np.int64)
    indices = np.tile(np.arange(n, dtype=np.int64), n)
    return indptr, indices


# ---- a linear ODE system y' = A y ------------------------------------------------------
A = np.array([[-1.0, 2.0, 0.0], [-2.0, -1.0, 0.5], [0.0, -0.5, -0.2]])


@residual_kernel
def lin_res(t, y, yp, p, out):
    out[0] = yp[0] - (-1.0 * y[0] + 2.0 * y[1])
    out[1] = yp[1] - (-2.0 * y[0] - 1.0 * y[1] + 0.5 * y[2])
    out[2] = yp[2] - (-0.5 * y[1] - 0.2 * y[2])


@jacobian_kernel
def lin_jac(t, y, yp, p, cj, vals):
    # column-major dense: G = -A + cj I
    vals[0], vals[1], vals[2] = 1.0 + cj, 2.0, 0.0
    vals[3], vals[4], vals[5] = -2.0, 1.0 + cj, 0.5
    vals[6], vals[7], vals[8] = 0.0, -0.5, 0.2 + cj


def linear_exact(t, y0):
    """y(t) = expm(A t) y0 at each time in ``t``."""
    return np.array([scipy.linalg.expm(A * tk) @ y0 for tk in t])


def linear_problem():
    indptr, indices = dense_pattern(3)
    return DAEProblem(lin_res, lin_jac, indptr, indices, np.ones(3, bool), np.zeros(1), ["a", "b", "c"])


@pytest.mark.parametrize("linear_solver", ["dense", "sparse"])
def test_linear_ode_against_matrix_exponential(linear_solver):
    s = BDFSolver(linear_problem(), options=SolverOptions(rtol=1e-9, atol=1e-12, linear_solver=linear_solver))
    y0 = np.array([1.0, 0.0, 0.5])
    s.init(0.0, y0)
    t = np.linspace(0.05, 6.0, 120)
    Y, YP = s.advance(t)
    exact = linear_exact(t, y0)
    assert np.max(np.abs(Y - exact)) / np.max(np.abs(exact)) < 1e-6
    assert np.max(np.abs(YP - exact @ A.T)) < 1e-5  # dense output of y' too
    assert s.stats["max_order"] >= 4  # a smooth problem climbs to high order


@pytest.mark.parametrize("span", [1e-300, 1e-20, 1e-16, 1e-14, 1e-9])
def test_a_span_shorter_than_the_smallest_step_has_arrived(span):
    """A stop closer than the smallest step at t (10 ulps of max(|t|, 1)) has arrived: its rows
    are the state there (a run 1e-300 s long used to end in "step size underflow at t=0")."""
    s = BDFSolver(linear_problem(), options=SolverOptions(rtol=1e-9, atol=1e-12))
    y0 = np.array([1.0, 0.0, 0.5])
    s.init(0.0, y0)
    Y, _ = s.advance([span / 2, span], tstop=span)
    exact = linear_exact([span], y0)[0]
    assert np.max(np.abs(Y[-1] - exact)) <= 1e-14, (Y[-1], exact)
    Y, _ = s.advance([2 * span + 0.5], tstop=2 * span + 0.5)  # and the run goes on from there
    assert np.max(np.abs(Y[-1] - linear_exact([2 * span + 0.5], y0)[0])) < 1e-6


@pytest.mark.parametrize("max_order", [1, 2, 3])
def test_max_order_caps_the_order_and_keeps_the_accuracy(max_order):
    s = BDFSolver(linear_problem(), options=SolverOptions(rtol=1e-7, atol=1e-10, max_order=max_order))
    y0 = np.array([1.0, 0.0, 0.5])
    s.init(0.0, y0)
    t = np.linspace(0.05, 3.0, 60)
    Y, _ = s.advance(t)
    exact = linear_exact(t, y0)
    assert s.stats["max_order"] == max_order
    assert np.max(np.abs(Y - exact)) / np.max(np.abs(exact)) < 1e-4


def test_max_order_out_of_range_is_refused():
    with pytest.raises(ValueError, match="max_order must be an integer from 1 to 5, got 6"):
        BDFSolver(linear_problem(), options=SolverOptions(max_order=6))


def test_iteration_matrix_is_kept_across_small_step_changes():
    """IDA's rule: G is re-factorised only when cj moves out of [0.6, 1.67] of the factorised
    cj or Newton fails with an old G, not at every step-size change."""
    s = BDFSolver(linear_problem(), options=SolverOptions(rtol=1e-9, atol=1e-12))
    s.init(0.0, [1.0, 0.0, 0.5])
    s.advance(np.linspace(0.05, 6.0, 120))
    st = s.stats
    # a linear problem: G depends on cj only (re-factorising at every step change: 76 LUs, 376 steps)
    assert st["lu_factorizations"] < 0.05 * st["steps"]


def test_resuming_equals_one_run():
    one = BDFSolver(linear_problem(), options=SolverOptions(rtol=1e-8, atol=1e-10))
    one.init(0.0, [1.0, 0.0, 0.5])
    Y1, _ = one.advance(np.linspace(0.1, 4.0, 40))
    two = BDFSolver(linear_problem(), options=SolverOptions(rtol=1e-8, atol=1e-10))
    two.init(0.0, [1.0, 0.0, 0.5])
    Ya, _ = two.advance(np.linspace(0.1, 2.0, 20))
    Yb, _ = two.advance(np.linspace(2.1, 4.0, 20))
    # same steps either way: only the interpolation's round-off may differ
    np.testing.assert_allclose(np.vstack([Ya, Yb]), Y1, rtol=1e-13, atol=1e-15)


# ---- index-2 Hessenberg DAE with a closed-form solution ------------------------------------
# y1' = -y1 + z, y2' = -2 y2 + z, 0 = y1 + y2 - cos t  (z: multiplier, index 2)
@residual_kernel
def h2_res(t, y, yp, p, out):
    out[0] = yp[0] + y[0] - y[2]
    out[1] = yp[1] + 2.0 * y[1] - y[2]
    out[2] = y[0] + y[1] - math.cos(t)


@jacobian_kernel
def h2_jac(t, y, yp, p, cj, vals):
    # columns: y1 -> rows 0, 2; y2 -> rows 1, 2; z -> rows 0, 1
    vals[0], vals[1] = cj + 1.0, 1.0
    vals[2], vals[3] = cj + 2.0, 1.0
    vals[4], vals[5] = -1.0, -1.0


def h2_exact(t, y10=0.2):
    a, b = 8 / 13, 1 / 13
    y1 = a * np.cos(t) + b * np.sin(t) + (y10 - a) * np.exp(-1.5 * t)
    y2 = np.cos(t) - y1
    z = (-np.sin(t) + y1 + 2 * y2) / 2
    return y1, y2, z


def h2_problem():
    indptr = np.array([0, 2, 4, 6], dtype=np.int64)
    indices = np.array([0, 2, 1, 2, 0, 1], dtype=np.int64)
    return DAEProblem(h2_res, h2_jac, indptr, indices, np.array([True, True, False]), np.zeros(1),
                      ["y1", "y2", "z"], ["y1 law", "y2 law", "constraint"])


def test_index2_dae_with_multiplier():
    s = BDFSolver(h2_problem(), options=SolverOptions(rtol=1e-8, atol=1e-10))
    y, yp = s.init(0.0, [0.2, 0.8, 0.0])  # z(0) is found by the consistent initialisation
    assert y[2] == pytest.approx(h2_exact(0.0)[2], abs=1e-8)
    t = np.linspace(0.1, 10.0, 100)
    Y, _ = s.advance(t)
    y1, y2, z = h2_exact(t)
    assert np.max(np.abs(Y[:, 0] - y1)) < 1e-6
    assert np.max(np.abs(Y[:, 1] - y2)) < 1e-6
    assert np.max(np.abs(Y[:, 0] + Y[:, 1] - np.cos(t))) < 1e-8  # constraint held
    assert np.max(np.abs(Y[:, 2] - z)) < 1e-4  # the multiplier, one order less accurate


# ---- a stiff problem against SciPy's Radau ----------------------------------------------
@residual_kernel
def rob_res(t, y, yp, p, out):
    out[0] = yp[0] + 0.04 * y[0] - 1e4 * y[1] * y[2]
    out[1] = yp[1] - 0.04 * y[0] + 1e4 * y[1] * y[2] + 3e7 * y[1] * y[1]
    out[2] = yp[2] - 3e7 * y[1] * y[1]


@jacobian_kernel
def rob_jac(t, y, yp, p, cj, vals):
    vals[0], vals[1], vals[2] = cj + 0.04, -0.04, 0.0
    vals[3], vals[4], vals[5] = -1e4 * y[2], cj + 1e4 * y[2] + 6e7 * y[1], -6e7 * y[1]
    vals[6], vals[7], vals[8] = -1e4 * y[1], 1e4 * y[1], cj


def test_robertson_stiff_matches_radau():
    indptr, indices = dense_pattern(3)
    s = BDFSolver(DAEProblem(rob_res, rob_jac, indptr, indices, np.ones(3, bool), np.zeros(1)),
                  options=SolverOptions(rtol=1e-8, atol=np.array([1e-12, 1e-16, 1e-12])))
    s.init(0.0, [1.0, 0.0, 0.0])
    t = np.array([1e-3, 0.1, 1.0, 10.0, 100.0, 1000.0])
    Y, _ = s.advance(t)

    def f(t, y):
        return [-0.04 * y[0] + 1e4 * y[1] * y[2], 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2, 3e7 * y[1] ** 2]

    ref = solve_ivp(f, (0, 1000), [1, 0, 0], method="Radau", t_eval=t, rtol=1e-12, atol=[1e-14, 1e-18, 1e-14]).y.T
    np.testing.assert_allclose(Y, ref, rtol=1e-5, atol=1e-12)
    assert s.stats["steps"] < 2000  # stiff: large steps, not explicit-method counts


# ---- inputs changing between advances -----------------------------------------------
@residual_kernel
def decay_res(t, y, yp, p, out):
    out[0] = yp[0] + p[0] * y[0]


@jacobian_kernel
def decay_jac(t, y, yp, p, cj, vals):
    vals[0] = cj + p[0]


def test_set_params_between_advances():
    prob = DAEProblem(decay_res, decay_jac, np.array([0, 1], np.int64), np.array([0], np.int64),
                      np.ones(1, bool), np.array([1.0]))
    s = BDFSolver(prob, options=SolverOptions(rtol=1e-9, atol=1e-12))
    s.init(0.0, [1.0])
    Y1, _ = s.advance([1.0])
    s.set_params([3.0], restart=True)
    Y2, _ = s.advance([2.0])
    assert Y1[0, 0] == pytest.approx(math.exp(-1.0), rel=1e-7)
    assert Y2[0, 0] == pytest.approx(math.exp(-1.0) * math.exp(-3.0), rel=1e-7)


# ---- failures, with names ---------------------------------------------------------------
@pytest.mark.parametrize("linear_solver", ["dense", "sparse"])
def test_singular_iteration_matrix_names_the_unknown(linear_solver):
    @residual_kernel
    def res(t, y, yp, p, out):
        out[0] = yp[0] + y[0]
        out[1] = y[1] * y[1]  # consistent at force = 0, where dF/dforce = 0: no pivot

    @jacobian_kernel
    def jac(t, y, yp, p, cj, vals):
        vals[0], vals[1] = cj + 1.0, 0.0
        vals[2] = 2.0 * y[1]

    prob = DAEProblem(res, jac, np.array([0, 2, 3], np.int64), np.array([0, 1, 1], np.int64),
                      np.array([True, False]), np.zeros(1), ["position", "force"], ["law", "tie"])
    s = BDFSolver(prob, options=SolverOptions(linear_solver=linear_solver))
    s.init(0.0, [1.0, 0.0])
    with pytest.raises(SingularMatrix, match=r"singular iteration matrix at t=0: no pivot for unknown force"):
        s.advance([1.0])
    assert s.failure() == ("pivot", 1)


def test_inconsistent_initial_values_name_the_equation():
    @residual_kernel
    def res(t, y, yp, p, out):
        out[0] = yp[0] + y[1]
        out[1] = yp[1] - y[0]
        out[2] = y[0] + y[1] - 1.0 + 0.0 * y[2]

    @jacobian_kernel
    def jac(t, y, yp, p, cj, vals):
        vals[0], vals[1], vals[2] = cj, -1.0, 1.0
        vals[3], vals[4], vals[5] = 1.0, cj, 1.0

    prob = DAEProblem(res, jac, np.array([0, 3, 6, 6], np.int64), np.array([0, 1, 2, 0, 1, 2], np.int64),
                      np.array([True, True, False]), np.zeros(1), ["u", "v", "w"], ["u law", "v law", "sum is one"])
    s = BDFSolver(prob)
    with pytest.raises(InconsistentInitialValues, match="sum is one"):
        s.init(0.0, [0.3, 0.3, 0.0])


def test_step_size_underflow_reports_time():
    @residual_kernel
    def res(t, y, yp, p, out):
        out[0] = yp[0] - y[0] * y[0]  # y = 1/(1 - t): blows up at t = 1

    @jacobian_kernel
    def jac(t, y, yp, p, cj, vals):
        vals[0] = cj - 2.0 * y[0]

    prob = DAEProblem(res, jac, np.array([0, 1], np.int64), np.array([0], np.int64), np.ones(1, bool),
                      np.zeros(1), ["blowup"])
    s = BDFSolver(prob, options=SolverOptions(rtol=1e-6, atol=1e-8))
    s.init(0.0, [1.0])
    with pytest.raises(StepSizeUnderflow, match=r"step size underflow at t=0\.99|step size underflow at t=1\.0"):
        s.advance([2.0])
    assert s.failure() == ("error_test", 0)


def _x_and_z(res, jac, z_law: str) -> BDFSolver:
    """A solver at t = 0, x = 0, z = 1 of x' = z and an algebraic law for z named ``z_law``
    (Jacobian pattern: dF0/dx', dF0/dz, dF1/dz)."""
    prob = DAEProblem(res, jac, np.array([0, 1, 3], np.int64), np.array([0, 0, 1], np.int64),
                      np.array([True, False]), np.zeros(1), ["x", "z"], ["x law", z_law])
    s = BDFSolver(prob, options=SolverOptions(rtol=1e-6, atol=1e-8))
    s.init(0.0, [0.0, 1.0])
    return s


def test_newton_divergence_names_the_equation():
    """The algebraic equation z^2 = 1 - t loses its real solution at t = 1: Newton cannot
    converge however small the step, and the failure names that equation."""
    @residual_kernel
    def res(t, y, yp, p, out):
        out[0] = yp[0] - y[1]
        out[1] = y[1] * y[1] - (1.0 - t)

    @jacobian_kernel
    def jac(t, y, yp, p, cj, vals):
        vals[0] = cj
        vals[1], vals[2] = -1.0, 2.0 * y[1]

    s = _x_and_z(res, jac, "circle")
    with pytest.raises(StepSizeUnderflow,
                       match=r"at t=(0\.9\d*|1(\.0*)?):.*Newton iteration diverged; largest residual in circle"):
        s.advance([2.0])
    assert s.failure() == ("newton", 1)  # (kind, equation)


def test_a_residual_that_is_not_finite_is_named_as_such():
    """z = sqrt(1 - t) evaluated past t = 1 is NaN: the failure said "Newton iteration diverged",
    as for an equation without a solution; it names the equation whose residual is not finite."""
    @residual_kernel
    def res(t, y, yp, p, out):
        out[0] = yp[0] - y[1]
        out[1] = y[1] - np.sqrt(1.0 - t)

    @jacobian_kernel
    def jac(t, y, yp, p, cj, vals):
        vals[0] = cj
        vals[1], vals[2] = -1.0, 1.0

    s = _x_and_z(res, jac, "root law")
    with pytest.raises(StepSizeUnderflow, match=r"at t=(0\.9\d*|1(\.0*)?):.*the residual of root law is not finite"):
        s.advance([2.0])
    assert s.failure() == ("not_finite", 1)


# ---- an input that switches exactly at the stop time -------------------------------------
@residual_kernel
def switch_res(t, y, yp, p, out):
    out[0] = yp[0] + y[0] - (1e8 if t >= 1.0 else 0.0)  # a jump no step ending on t = 1 passes


@jacobian_kernel
def switch_jac(t, y, yp, p, cj, vals):
    vals[0] = 1.0 + cj


def test_stop_time_at_a_switch_of_the_input():
    """simulate() stops the last step at t_end; a law that switches exactly there (the 3-DOF arm's
    torque profile ends at t_end) fails every step that ends on t_end, so the solver closes in
    on it from below and must count an ulp short as arrived, not underflow."""
    indptr, indices = dense_pattern(1)
    s = BDFSolver(DAEProblem(switch_res, switch_jac, indptr, indices, np.ones(1, bool), np.zeros(1)),
                  options=SolverOptions(rtol=1e-8, atol=1e-10))
    s.init(0.0, np.array([1.0]))
    Y, _ = s.advance([0.5, 1.0], tstop=1.0)
    assert abs(Y[1, 0] - math.exp(-1.0)) < 1e-7


def _cartpole_reference(t):
    """The same cart-pole as an ODE in (th, v, w) from its Lagrangian, solved tightly by SciPy."""
    M, m, l, J, g = 1.5, 0.8, 0.40625, 0.01815625, 9.81

    def rhs(_, s):
        th, _, w = s
        mass = np.array([[M + m, -m * l * np.cos(th)], [-m * l * np.cos(th), m * l * l + J]])
        force = np.array([-m * l * np.sin(th) * w * w, -m * g * l * np.sin(th)])
        return [w, *np.linalg.solve(mass, force)]

    return solve_ivp(rhs, (0.0, t[-1]), [0.5, 0.0, 0.0], t_eval=t, rtol=1e-12, atol=1e-12, method="DOP853").y


@pytest.mark.parametrize("rtol, atol", [(3e-5, 1e-8), (3e-5, 3e-7), (1e-5, 1e-7), (5e-6, 1e-8), (1e-6, 1e-8)])
def test_a_cart_pole_whose_constraints_read_a_derivative_runs_at_any_tolerance(rtol, atol):
    """The bob's momenta are fixed through th' (m l cos(th) th', m l sin(th) th'): a Newton
    remainder reaches them multiplied by cj, and a step start that missed its constraint by a few
    weights made every shorter step fail the same way until the step underflowed (at the first
    four of these tolerances; 4 of 22 settings from 1e-4 to 1e-8). The solver restarts from a
    point on the equations instead (stats "reprojections"); the run follows the Lagrangian ODE."""
    from pathlib import Path

    from bondsim_ros.bondgraph.simulation import simulate
    from bondsim_ros.bondgraph.yamlmodel import load_model

    model = load_model(Path(__file__).parent / "data" / "models" / "cartpole.yaml")
    res = simulate(model, t_end=10.0, dt_out=0.01, options=SolverOptions(rtol=rtol, atol=atol))
    ref = _cartpole_reference(res.t)
    for i, name in enumerate(("th", "v", "w")):
        rel = np.max(np.abs(res[name] - ref[i])) / np.max(np.abs(ref[i]))
        assert rel < 100 * rtol, (name, rel)
    if rtol > 2e-6:  # (where the old rule underflowed: the restart is what carried the run)
        assert res.stats["reprojections"] >= 1, res.stats


@pytest.mark.parametrize("call, says", [
    (lambda s: s.init(0.0, [1.0]), "y0 must hold one value per unknown (3)"),  # read past its end: y0 = [1, ?, ?]
    (lambda s: s.init(0.0, [1.0, 0.0, 0.5, 2.0]), "y0 must hold one value per unknown (3)"),
    (lambda s: s.init(0.0, 1.0), "y0 must hold one value per unknown (3)"),
    (lambda s: s.init(0.0, [1.0, 0.0, 0.5], yp0=[0.0]), "yp0 must hold one value per unknown (3)"),
    (lambda s: s.init(0.0, [1.0, 0.0, 0.5], yp0=[0.0], consistent=False), "yp0 must hold one value per unknown"),
    (lambda s: s.init(math.nan, [1.0, 0.0, 0.5]), "t0 must be a finite time, got nan"),  # ran 500,000 steps
    (lambda s: s.set_params([5.0, 5.0]), "set_params: 2 parameter values given"),
])
def test_vectors_of_the_wrong_length_are_refused_before_the_core_reads_them(call, says):
    """The C core reads n values of y0 and y', and the problem's parameters, wherever they end:
    y0 = [1] for three unknowns ran, reading past it, and answered for another start; a short
    parameter vector was spread over every parameter by numpy. Each is refused, naming it."""
    prob = DAEProblem(lin_res, lin_jac, *dense_pattern(3), np.ones(3, bool), np.zeros(1), ["a", "b", "c"])
    s = BDFSolver(prob, options=SolverOptions(rtol=1e-9, atol=1e-12))
    s.init(0.0, [1.0, 0.0, 0.5])
    with pytest.raises(ValueError, match=re.escape(says)):
        call(s)


def test_a_single_parameter_is_refused_not_spread_over_several():
    """set_params([5]) on a problem of two parameters set both to 5 (numpy's broadcast)."""
    prob = DAEProblem(lin_res, lin_jac, *dense_pattern(3), np.ones(3, bool), np.zeros(2), ["a", "b", "c"])
    s = BDFSolver(prob, options=SolverOptions(rtol=1e-9, atol=1e-12))
    s.init(0.0, [1.0, 0.0, 0.5])
    with pytest.raises(ValueError, match=r"set_params: 1 parameter values given \(shape \(1,\)\), the problem has 2"):
        s.set_params([5.0])
    assert list(s.p) == [0.0, 0.0]


@pytest.mark.parametrize("indptr, indices, differential, says", [
    ([0, 3, 6, 9], [0, 1, 2, 0, 1, 2, 0, 1, 5], np.ones(3, bool), "row index 5 outside the 3 rows"),
    ([0, 3, 6, 8], [0, 1, 2, 0, 1, 2, 0, 1, 2], np.ones(3, bool), "problem.indptr must be 4 non-decreasing"),
    ([0, 3, 6, 9], [0, 1, 2, 0, 1, 2, 0, 1, 2], np.ones(2, bool), "problem.differential has shape (2,)"),
])
def test_a_problem_whose_arrays_do_not_fit_is_refused(indptr, indices, differential, says):
    """A row index outside the matrix made the dense assembly write past G; a short
    differential array was read past its end."""
    prob = DAEProblem(lin_res, lin_jac, np.array(indptr), np.array(indices), differential, np.zeros(1),
                      ["a", "b", "c"])
    with pytest.raises(ValueError, match=re.escape(says)):
        BDFSolver(prob)


def test_no_output_times_is_an_empty_answer():
    """advance([]) raised IndexError; it answers nothing and leaves the run where it was."""
    s = BDFSolver(linear_problem(), options=SolverOptions(rtol=1e-9, atol=1e-12))
    s.init(0.0, [1.0, 0.0, 0.5])
    Y, YP = s.advance([])
    assert Y.shape == YP.shape == (0, 3) and s.t == 0.0
    Y, _ = s.advance([1.0])
    assert np.abs(Y[0] - linear_exact(np.array([1.0]), np.array([1.0, 0.0, 0.5]))[0]).max() < 1e-6
