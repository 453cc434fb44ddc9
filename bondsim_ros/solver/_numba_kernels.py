"""numba's side of ``kernels``: imported only for numba-compiled kernels (tests, examples,
numba-generated model code), never on a run with C kernels."""
import numpy as np
from numba import carray, cfunc, njit, types

f8, f8a = types.float64, types.float64[::1]
RES_SIG = types.void(f8, f8a, f8a, f8a, f8a)
JAC_SIG = types.void(f8, f8a, f8a, f8a, f8, f8a)
RES_T, JAC_T = types.FunctionType(RES_SIG), types.FunctionType(JAC_SIG)


class _Kernel:
    """A compiled kernel as a numba first-class function, its address looked up once.

    numba's wrapper-address protocol (``__wrapper_address__``) with the type given directly as
    ``_numba_type_``: typing a ``WrapperAddressProtocol`` subclass rebuilds its FunctionType
    on every call (30 us measured)."""

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
    """``func`` (a kernel compiled with signature ``sig``) as a cheap first-class function argument."""
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


def output_rows(outputs, t_out, Y, YP, p, rows):
    """kernels.output_rows for a numba kernel: one compiled loop, cached on disk."""
    _rows(first_class(outputs, RES_SIG), t_out, Y, YP, p, rows)


def c_adapter(kernel, kind, n, n_p, n_out):
    """A numba cfunc with the C ABI that views the raw pointers as arrays of the problem's sizes
    (compile-time constants of the closure) and calls the kernel; numba inlines the call."""
    ptr = types.CPointer(types.float64)
    if kind == "res":
        @cfunc(types.void(types.float64, ptr, ptr, ptr, ptr), error_model="numpy")
        def adapter(t, y, yp, p, out):
            kernel(t, carray(y, n), carray(yp, n), carray(p, n_p), carray(out, n_out))
    elif kind == "jac":
        @cfunc(types.void(types.float64, ptr, ptr, ptr, types.float64, ptr), error_model="numpy")
        def adapter(t, y, yp, p, cj, vals):
            kernel(t, carray(y, n), carray(yp, n), carray(p, n_p), cj, carray(vals, n_out))
    else:
        raise ValueError(f"kernel kind must be 'res' or 'jac', not {kind!r}")
    return adapter
