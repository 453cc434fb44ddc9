"""numba's side of ``kernels``: imported only for numba-compiled kernels (tests, examples,
numba-generated model code), never on a run with C kernels."""
import numpy as np
from numba import njit, types

from .kernels import RES_SIG


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
