"""bondsim_ros.solver: variable-step, variable-order BDF (orders 1-5) for F(t, y, y') = 0.

Knows nothing about bond graphs: give it compiled residual and Jacobian kernels (see
``kernels``), the Jacobian's sparsity pattern, which unknowns are differential, and initial
values::

    problem = DAEProblem(residual, jacobian, indptr, indices, differential, params)
    solver = BDFSolver(problem, rtol=1e-6, atol=1e-8, hmax=0.02)
    solver.init(0.0, y0)                 # consistent algebraic y and y'
    Y, YP = solver.advance(t_out)        # dense output; call again to continue
"""
# Loaded on first use (PEP 562): bdf and kernels import numba, which code that only needs
# ``native`` (the generated model kernels' compiler, bondgraph/codegen.py) must not pay for.
_EXPORTS = {
    "BDFSolver": "bdf", "DAEProblem": "bdf", "InconsistentInitialValues": "bdf", "SingularMatrix": "bdf",
    "SolverError": "bdf", "StepSizeUnderflow": "bdf", "TooManySteps": "bdf",
    "JAC_SIG": "kernels", "RES_SIG": "kernels", "jacobian_kernel": "kernels", "residual_kernel": "kernels",
}

__all__ = ["BDFSolver", "DAEProblem", "SolverError", "StepSizeUnderflow", "SingularMatrix",
           "InconsistentInitialValues", "TooManySteps", "RES_SIG", "JAC_SIG", "residual_kernel", "jacobian_kernel"]


def __getattr__(name):
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
