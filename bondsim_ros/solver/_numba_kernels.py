"""numba's side of ``kernels``: imported only for numba-compiled kernels (tests, examples,
kernels a user writes in Python), never on a run with C kernels."""
from numba import carray, cfunc, types

f8, f8a = types.float64, types.float64[::1]
RES_SIG = types.void(f8, f8a, f8a, f8a, f8a)
JAC_SIG = types.void(f8, f8a, f8a, f8a, f8, f8a)


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
