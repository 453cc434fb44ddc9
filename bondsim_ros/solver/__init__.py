"""bondsim_ros.solver: variable-step, variable-order BDF (orders 1-5) for F(t, y, y') = 0.

Knows nothing about bond graphs: give it compiled residual and Jacobian kernels (C through
``native``, or numba through ``kernels``), the Jacobian's sparsity pattern, which unknowns are
differential, and initial values::

    problem = DAEProblem(residual, jacobian, indptr, indices, differential, params)
    solver = BDFSolver(problem, SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.02))
    solver.init(0.0, y0)                 # consistent algebraic y and y'
    Y, YP = solver.advance(t_out)        # dense output; call again to continue

Importing it imports nothing: each name is loaded when first asked for (``SolverOptions`` from
``options``, the rest from ``bdf``, which imports numpy, and ``kernels``, which imports numba),
so that the command line can start a solve from an image (``ahead``) before any of them.
"""
_OPTIONS = ("SolverOptions", "SolverOptionError")
_BDF = ("BDFSolver", "DAEProblem", "SolverError", "StepSizeUnderflow", "SingularMatrix", "InconsistentInitialValues",
        "TooManySteps", "ModeChatter")
_KERNELS = ("residual_kernel", "jacobian_kernel", "RES_SIG", "JAC_SIG")

__all__ = ["SolverOptions", "SolverOptionError", *_BDF, *_KERNELS]


def __getattr__(name):
    # kept as a module attribute once loaded: a later ``from bondsim_ros.solver import
    # BDFSolver`` (every Simulation) then finds it without this call
    if name in _OPTIONS:
        from . import options

        value = globals()[name] = getattr(options, name)
        return value
    if name in _BDF:
        from . import bdf

        value = globals()[name] = getattr(bdf, name)
        return value
    if name in _KERNELS:  # numba signatures: numba only when asked for
        from . import kernels

        value = globals()[name] = getattr(kernels, name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
