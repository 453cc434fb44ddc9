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
        self.dispatcher = dispatcher  # keeps the machine code alive

    def __wrapper_address__(self):
        return self._addr


_wrapped: dict = {}


def first_class(func, sig):
    """``func`` (a kernel compiled with signature ``sig``) as a cheap first-class function
    argument; anything that is not a numba dispatcher is returned unchanged."""
    if not isinstance(func, Dispatcher):
        return func
    key = (id(func), sig)
    k = _wrapped.get(key)
    if k is None or k.dispatcher is not func:
        k = _wrapped[key] = _Kernel(func, sig)
    return k


@njit(RES_SIG, cache=True)
def no_events(t, y, yp, p, out):
    """The root-function and mode kernels of a problem without discontinuities (never called
    with a non-empty ``out``)."""
    for k in range(out.shape[0]):
        out[k] = 0.0
