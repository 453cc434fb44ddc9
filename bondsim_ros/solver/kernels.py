"""The contract between model code and the solver: numba signatures of the model kernels.

    res(t, y, yp, p, out)        out[:] = F(t, y, y'; p)
    jac(t, y, yp, p, cj, vals)   vals[:] = non-zeros of G = dF/dy + cj dF/dy', in the CSC order
                                 of the problem's fixed pattern (indptr, indices)

Kernels compiled with these explicit signatures (``@njit(RES_SIG, cache=True)``) are passed to
the BDF core as first-class functions: the core is compiled once for all models and cached on
disk (passing plain dispatchers would recompile it for every model and every process).
"""
from numba import njit, types

f8, f8a = types.float64, types.float64[::1]
RES_SIG = types.void(f8, f8a, f8a, f8a, f8a)
JAC_SIG = types.void(f8, f8a, f8a, f8a, f8, f8a)
RES_T, JAC_T = types.FunctionType(RES_SIG), types.FunctionType(JAC_SIG)


def residual_kernel(func):
    """Compile a plain Python residual ``func(t, y, yp, p, out)`` for the solver (tests, examples)."""
    return njit(RES_SIG, cache=False)(func)


def jacobian_kernel(func):
    """Compile a plain Python ``func(t, y, yp, p, cj, vals)`` Jacobian-values kernel."""
    return njit(JAC_SIG, cache=False)(func)
