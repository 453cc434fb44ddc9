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
