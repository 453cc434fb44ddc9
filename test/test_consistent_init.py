"""Consistent initial values when a constraint contains a derivative of a state (seed
001's waist torque and wheel multipliers at t = 0).

    x' - v = 0,   m v' + lam - F(t) = 0,   x' - g(t) = 0

The third row holds a derivative, so it is no algebraic row; only its combination with the
first, v - g(t) = 0, is free of y'. Its time derivative v' = g'(t) is the hidden constraint that
fixes the multiplier: lam = F - m g'. Before, consistent() only differentiated rows without
any y' and left lam to a minimum-norm least-squares guess.
"""
import math

import numpy as np
import pytest

from bondsim_ros.solver import BDFSolver, DAEProblem, SolverOptions, jacobian_kernel, residual_kernel

M = 2.0


@residual_kernel
def res(t, y, yp, p, out):
    out[0] = yp[0] - y[1]
    out[1] = M * yp[1] + y[2] - (3.0 + t)
    out[2] = yp[0] - math.sin(t)


@jacobian_kernel
def jac(t, y, yp, p, cj, vals):
    # dense, column-major: columns x, v, lam
    vals[0], vals[1], vals[2] = cj, 0.0, cj
    vals[3], vals[4], vals[5] = -1.0, M * cj, 0.0
    vals[6], vals[7], vals[8] = 0.0, 1.0, 0.0


def problem():
    indptr = np.arange(0, 10, 3, dtype=np.int64)
    indices = np.tile(np.arange(3, dtype=np.int64), 3)
    return DAEProblem(res, jac, indptr, indices, np.array([True, True, False]), np.zeros(1),
                      ["x", "v", "lam"], ["x' = v", "momentum", "x' = g(t)"])


@pytest.mark.parametrize("t0", [0.0, 0.7])
def test_multiplier_of_a_constraint_with_a_derivative_is_consistent_at_the_start(t0):
    solver = BDFSolver(problem(), options=SolverOptions(rtol=1e-10, atol=1e-12))
    y, yp = solver.consistent(t0, np.array([0.3, math.sin(t0), 0.0]))
    assert yp[1] == pytest.approx(math.cos(t0), abs=1e-8)  # v' = g'
    assert y[2] == pytest.approx(3.0 + t0 - M * math.cos(t0), abs=1e-8)  # lam = F - m g'
    assert yp[0] == pytest.approx(math.sin(t0), abs=1e-12)


def test_least_squares_is_numpys_bit_for_bit():
    """consistent() solves with the LAPACK call behind np.linalg.lstsq directly: the same bits
    on square, tall, rank-deficient and badly scaled systems."""
    from bondsim_ros.solver.bdf import _lstsq

    rng = np.random.default_rng(7)
    for m, k in [(3, 3), (5, 3), (6, 4), (4, 4), (8, 5)]:
        for scale in (1.0, 1e-9, 1e9):
            A = rng.standard_normal((m, k)) * scale
            if k > 2:
                A[:, -1] = A[:, 0] + A[:, 1]  # rank-deficient
            b = rng.standard_normal((m, 1))
            expected = np.linalg.lstsq(A, b[:, 0], rcond=None)[0]
            assert np.array_equal(_lstsq(A, b), expected)
            Ab = np.hstack([A, b])  # strided views, as consistent() hands them
            assert np.array_equal(_lstsq(Ab[:, :-1], Ab[:, -1:]), expected)


def test_null_space_follows_changing_derivative_coefficients():
    """The left null space of dF/dy' is kept between runs, and taken again when dF/dy' is not
    the one it was taken of: the values are those of a fresh solver either way."""
    from bondsim_ros.solver.bdf import _left_null_space

    s = BDFSolver(problem(), options=SolverOptions())
    y, yp = s.consistent(0.0, np.array([0.3, 0.0, 0.0]))
    W_first = s._W
    assert W_first.shape[1] == 1
    fresh = BDFSolver(problem(), options=SolverOptions())
    assert all(np.array_equal(a, b) for a, b in zip(fresh.consistent(0.0, np.array([0.3, 0.0, 0.0])), (y, yp)))
    s._W = np.zeros((3, 0))  # a stale null space must not be used for another dF/dy'
    s._W_key = b"other"
    y2, yp2 = s.consistent(0.0, np.array([0.3, 0.0, 0.0]))
    assert np.array_equal(y2, y) and np.array_equal(yp2, yp)
    assert np.array_equal(s._W, _left_null_space(np.array([[1.0, 0, 0], [0, M, 0], [1.0, 0, 0]])))


# a fast source: g(t) = sin(W t) in the constraint x' = g(t), so that lam = F - m g' = 3 + t - m W cos(W t)
W = 2 * math.pi * 1e4


@residual_kernel
def res_fast(t, y, yp, p, out):
    out[0] = yp[0] - y[1]
    out[1] = M * yp[1] + y[2] - (3.0 + t)
    out[2] = yp[0] - math.sin(W * t)


@residual_kernel
def dfdt_fast(t, y, yp, p, out):
    out[0] = 0.0
    out[1] = -1.0
    out[2] = -W * math.cos(W * t)


@pytest.mark.parametrize("given", [True, False])
def test_the_models_own_time_derivative_makes_the_start_exact(given):
    """The hidden constraint v' = g'(t) needs dF/dt: from the model's own kernel it is exact; a
    central difference over +-1e-5 s is (W 1e-5)^2 / 6 = 6.6 % off at 10 kHz."""
    p = problem()
    p.residual = res_fast
    p.time_derivative = dfdt_fast if given else None
    solver = BDFSolver(p, options=SolverOptions(rtol=1e-10, atol=1e-12))
    y, yp = solver.consistent(0.0, np.array([0.3, 0.0, 0.0]))
    exact = 3.0 - M * W
    if given:
        assert y[2] == pytest.approx(exact, rel=1e-12) and yp[1] == pytest.approx(W, rel=1e-12)
    else:
        assert y[2] == pytest.approx(exact, rel=0.07) and y[2] != pytest.approx(exact, rel=0.05)


def test_a_generated_models_start_has_the_exact_rate_of_a_fast_source(tmp_path, monkeypatch):
    """A capacitor across a 10 kHz effort source: its current at t = 0 is C dE/dt = C E0 w, from
    the generated dF/dt kernel (6.5 % off with the difference quotient); and a flow law defined
    from t = 0 on (sqrt(t + 1e-6)), whose quotient reached below 0, starts and integrates."""
    from bondsim_ros.bondgraph import simulate
    from bondsim_ros.bondgraph.yamlmodel import loads_model

    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path))
    w = 2 * math.pi * 1e4
    cap = loads_model(f"""model: cap
parameters: {{w: {w!r}}}
components:
  E: {{type: Se, effort: "10*sin(w*t)"}}
  j: {{type: EffortJunction, output: true}}
  c: {{type: C, capacitance: 1.0e-6}}
  rec: {{type: Recorder, columns: [i]}}
bonds: [[E, j], [j, c]]
signals: [[j.out, rec.i]]""", "cap.yaml")
    r = simulate(cap, t_end=1e-4, dt_out=2.5e-5, options=SolverOptions(rtol=1e-10, atol=1e-14))
    assert r["i"][0] == pytest.approx(1e-6 * 10 * w, rel=1e-9)
    root = loads_model("""model: root
components:
  F: {type: Sf, flow: "sqrt(t + 1e-6)"}
  j: {type: FlowJunction}
  c: {type: C, capacitance: 2.0}
bonds: [[F, j], [j, c]]""", "root.yaml")
    r = simulate(root, t_end=1.0, dt_out=0.5, options=SolverOptions(rtol=1e-8, atol=1e-10))
    assert r.data[-1, 1] == pytest.approx(2 / 3 * ((1 + 1e-6) ** 1.5 - 1e-9), rel=1e-6)


@residual_kernel
def dfdt_undefined(t, y, yp, p, out):
    out[0] = 0.0
    out[1] = -1.0
    out[2] = math.nan  # as d/dt sqrt(u) is at u = 0 with u' = 0


def test_a_row_the_models_time_derivative_leaves_undefined_takes_the_difference_quotient():
    """The dual-arm's dF/dt holds 0 * inf at rest: such rows fall back to the central difference
    (here the sine's, over +-1e-5 s) instead of failing the start as not finite."""
    p = problem()
    p.time_derivative = dfdt_undefined
    solver = BDFSolver(p, options=SolverOptions(rtol=1e-10, atol=1e-12))
    y, yp = solver.consistent(0.0, np.array([0.3, 0.0, 0.0]))
    assert y[2] == pytest.approx(3.0 - M, rel=1e-9) and yp[1] == pytest.approx(1.0, rel=1e-9)
