"""The contract between model code and the solver: the model kernels.

    res(t, y, yp, p, out)        out[:] = F(t, y, y'; p)
    jac(t, y, yp, p, cj, vals)   vals[:] = non-zeros of G = dF/dy + cj dF/dy', in the CSC order
                                 of the problem's fixed pattern (indptr, indices)

The BDF core (C, ``bdf_core.c``) calls them through plain C function pointers of the ABI in
``native``. A kernel comes in one of two forms:

* a C kernel (``native.CKernel``, anything with an ``address``): goes straight to the core;
* a numba kernel compiled with ``RES_SIG`` / ``JAC_SIG`` (``residual_kernel``, tests,
  examples, numba-generated model code): wrapped in a numba ``cfunc`` of the C ABI
  (``c_address``), built once per kernel and array sizes, which the C ABI leaves to the caller.

numba is imported only on that second path: a run with C kernels never loads it (its import
and cache load cost about a second per process).
"""
import sys

import numpy as np

_NUMBA_NAMES = ("RES_SIG", "JAC_SIG")


def __getattr__(name):
    # the numba signatures, from numba's side on first use (importing numba costs ~0.5 s)
    if name in _NUMBA_NAMES:
        from . import _numba_kernels

        return getattr(_numba_kernels, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def residual_kernel(func):
    """Compile a plain Python residual ``func(t, y, yp, p, out)`` for the solver (tests, examples)."""
    from numba import njit

    from ._numba_kernels import RES_SIG

    return njit(RES_SIG, cache=False)(func)


def jacobian_kernel(func):
    """Compile a plain Python ``func(t, y, yp, p, cj, vals)`` Jacobian-values kernel."""
    from numba import njit

    from ._numba_kernels import JAC_SIG

    return njit(JAC_SIG, cache=False)(func)


def _is_numba(func) -> bool:
    if "numba" not in sys.modules:  # nothing can be a numba dispatcher before numba is loaded
        return False
    from numba.core.dispatcher import Dispatcher

    return isinstance(func, Dispatcher)


_adapters: dict = {}


def c_address(kernel, kind: str, n: int, n_p: int, n_out: int) -> int:
    """The C function pointer of ``kernel`` (kind "res" or "jac") for a problem with n unknowns,
    n_p parameters (modes included) and n_out values written (n residuals, the Jacobian's
    non-zeros, the roots or the modes)."""
    address = getattr(kernel, "address", None)
    if address is not None:
        return int(address)
    if not _is_numba(kernel):
        raise TypeError(f"a model kernel must be a C kernel (solver.native.CKernel) or compiled with numba "
                        f"(solver.kernels.residual_kernel/jacobian_kernel), not {kernel!r}")
    # keyed by the dispatcher's id, the dispatcher kept in the value so that the id stays its own
    key = (id(kernel), kind, n, n_p, n_out)
    hit = _adapters.get(key)
    if hit is None or hit[0] is not kernel:
        from ._numba_kernels import c_adapter

        hit = _adapters[key] = (kernel, c_adapter(kernel, kind, n, n_p, n_out))
    return hit[1].address


def output_rows(outputs, n_out, t_out, Y, YP, p, out=None):
    """Rows ``[t, outputs(t, y, y', p)]`` (n_out values) for every output time: one loop in
    bdf_core.c for a C kernel or a numba one (through its C adapter); called from Python once
    per row it cost about 1.2 ms per 1000 rows, several times a small model's whole solve.
    ``out``: a C-contiguous float64 array of ``len(t_out)`` rows of 1 + n_out to write them
    into (a result's table after its first row, without a copy); else a new one."""
    t_out = np.ascontiguousarray(t_out, dtype=np.float64)
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    YP = np.ascontiguousarray(YP, dtype=np.float64)
    p = np.ascontiguousarray(p, dtype=np.float64)
    shape = (t_out.shape[0], 1 + n_out)
    if out is None:
        rows = np.empty(shape)
    elif out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"output_rows: out must be a C-contiguous float64 array of shape {shape}")
    else:
        rows = out
    if getattr(outputs, "address", None) is not None or _is_numba(outputs):
        from . import _ccore

        address = c_address(outputs, "res", Y.shape[1], p.shape[0], n_out)
        _ccore.output_rows(address, Y.shape[1], n_out, t_out, Y, YP, p, rows)
        return rows
    buf = np.empty(n_out)
    for k in range(t_out.shape[0]):
        outputs(float(t_out[k]), Y[k], YP[k], p, buf)
        rows[k, 0] = t_out[k]
        rows[k, 1:] = buf
    return rows
