"""bondsim_ros.solver: variable-step, variable-order BDF (orders 1-5) for F(t, y, y') = 0.

Knows nothing about bond graphs: give it compiled residual and Jacobian kernels (see
``kernels``), the Jacobian's sparsity pattern, which unknowns are differential, and initial
values::

    problem = DAEProblem(residual, jacobian, indptr, indices, differential, params)
    solver = BDFSolver(problem, rtol=1e-6, atol=1e-8, hmax=0.02)
    solver.init(0.0, y0)                 # consistent algebraic y and y'
    Y, YP = solver.advance(t_out)        # dense output; call again to continue
"""
from .bdf import (
    BDFSolver, DAEProblem, InconsistentInitialValues, SingularMatrix, SolverError, StepSizeUnderflow, TooManySteps,
)
from .kernels import JAC_SIG, RES_SIG, jacobian_kernel, residual_kernel

__all__ = ["BDFSolver", "DAEProblem", "SolverError", "StepSizeUnderflow", "SingularMatrix",
           "InconsistentInitialValues", "TooManySteps", "RES_SIG", "JAC_SIG", "residual_kernel", "jacobian_kernel"]
