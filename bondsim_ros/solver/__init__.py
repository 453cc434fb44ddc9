"""bondsim_ros.solver: variable-step, variable-order BDF (orders 1-5) for F(t, y, y') = 0.

Knows nothing about bond graphs: give it compiled residual and Jacobian kernels (C through
``native``, or numba through ``kernels``), the Jacobian's sparsity pattern, which unknowns are
differential, and initial values::

    problem = DAEProblem(residual, jacobian, indptr, indices, differential, params)
    solver = BDFSolver(problem, rtol=1e-6, atol=1e-8, hmax=0.02)
    solver.init(0.0, y0)                 # consistent algebraic y and y'
    Y, YP = solver.advance(t_out)        # dense output; call again to continue

Importing it does not import numba (``kernels`` does so only for numba-compiled kernels).
"""
from .bdf import (
    BDFSolver, DAEProblem, InconsistentInitialValues, ModeChatter, SingularMatrix, SolverError, StepSizeUnderflow,
    TooManySteps,
)
from .kernels import jacobian_kernel, residual_kernel

__all__ = ["BDFSolver", "DAEProblem", "SolverError", "StepSizeUnderflow", "SingularMatrix",
           "InconsistentInitialValues", "TooManySteps", "ModeChatter", "RES_SIG", "JAC_SIG", "residual_kernel",
           "jacobian_kernel"]


def __getattr__(name):
    if name in ("RES_SIG", "JAC_SIG"):  # numba signatures: numba only when asked for
        from . import kernels

        return getattr(kernels, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
