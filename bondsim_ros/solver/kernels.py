"""The contract between model code and the solver: numba signatures of the model kernels.

    res(t, y, yp, p, out)        out[:] = F(t, y, y'; p)
    jac(t, y, yp, p, cj, vals)   vals[:] = non-zeros of G = dF/dy + cj dF/dy', in the CSC order
                                 of the problem's fixed pattern (indptr, indices)

Kernels compiled with these explicit signatures (``@njit(RES_SIG, cache=True)``) are passed to
the BDF core as first-class functions: the core is compiled once for all models and cached on
disk (passing plain dispatchers would recompile it for every model and every process).

``first_class`` wraps a compiled kernel so that passing it costs little: numba resolves a
plain dispatcher argument to its machine code on every call (65-320 us per kernel measured
on the CI machine, more than a whole small-model run), a wrapper that knows its address once.
"""
import numpy as np
from numba import njit, types
from numba.core.dispatcher import Dispatcher

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


class _Kernel:
    """A compiled kernel as a numba first-class function, its address looked up once.

    numba's wrapper-address protocol (``__wrapper_address__``) with the type given directly as
    ``_numba_type_``: typing a ``WrapperAddressProtocol`` subclass rebuilds its FunctionType
    on every call (30 us measured), this 9 us for a whole call with one kernel argument."""

    def __init__(self, dispatcher, sig):
        cres = dispatcher.get_compile_result(sig)
        self._addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_cfunc_wrapper_name)
        self._numba_type_ = types.FunctionType(sig)
        self.sig = sig
        self.dispatcher = dispatcher  # keeps the machine code alive

    def __wrapper_address__(self):
        return self._addr


_wrapped: dict = {}


def first_class(func, sig):
    """``func`` (a kernel compiled with signature ``sig``) as a cheap first-class function
    argument; anything that is not a numba dispatcher is returned unchanged."""
    if not isinstance(func, Dispatcher):
        return func
    # keyed by the signature object's id: hashing a numba signature walks its types (about
    # 20 us a lookup, a fifth of a small model's solver set-up); the signatures are module constants
    key = (id(func), id(sig))
    k = _wrapped.get(key)
    if k is None or k.dispatcher is not func or k.sig is not sig:
        k = _wrapped[key] = _Kernel(func, sig)
    return k



@njit(cache=True)
def _rows(fn, t_out, Y, YP, p, rows):
    buf = np.empty(rows.shape[1] - 1)
    for k in range(t_out.shape[0]):
        fn(t_out[k], Y[k], YP[k], p, buf)
        rows[k, 0] = t_out[k]
        for j in range(buf.shape[0]):
            rows[k, 1 + j] = buf[j]


def output_rows(outputs, n_out, t_out, Y, YP, p):
    """Rows ``[t, outputs(t, y, y', p)]`` (n_out values) for every output time: one compiled
    loop when ``outputs`` is a kernel compiled with ``RES_SIG`` (called from Python once per row
    it cost about 1.2 ms per 1000 rows, several times a small model's whole solve)."""
    t_out = np.ascontiguousarray(t_out, dtype=np.float64)
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    YP = np.ascontiguousarray(YP, dtype=np.float64)
    p = np.ascontiguousarray(p, dtype=np.float64)
    rows = np.empty((t_out.shape[0], 1 + n_out))
    if isinstance(outputs, Dispatcher):
        _rows(first_class(outputs, RES_SIG), t_out, Y, YP, p, rows)
        return rows
    buf = np.empty(n_out)
    for k in range(t_out.shape[0]):
        outputs(float(t_out[k]), Y[k], YP[k], p, buf)
        rows[k, 0] = t_out[k]
        rows[k, 1:] = buf
    return rows


@njit(RES_SIG, cache=True)
def no_events(t, y, yp, p, out):
    """The root-function and mode kernels of a problem without discontinuities (never called
    with a non-empty ``out``)."""
    for k in range(out.shape[0]):
        out[k] = 0.0
