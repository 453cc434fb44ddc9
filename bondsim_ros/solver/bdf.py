"""Python face of the BDF core: problem definition, consistent initialisation, resumable runs."""
import contextlib
import io
import math
import os
from dataclasses import dataclass

import numpy as np

from . import _ccore as core
from . import ahead, cachedir
from . import native
from .kernels import c_address
from .options import SolverOptionError, SolverOptions


class SolverError(RuntimeError):
    """Base class of solver failures."""


class StepSizeUnderflow(SolverError):
    pass


class SingularMatrix(SolverError):
    pass


class InconsistentInitialValues(SolverError):
    """No consistent start; ``equation``: the name of the equation it names, where it names one."""

    def __init__(self, message: str = "", equation: str | None = None):
        super().__init__(message)
        self.equation = equation


class _Undetermined(InconsistentInitialValues):
    """Initial values that the equations leave free (init's ``free``): more than one start fits."""


class TooManySteps(SolverError):
    pass


class ModeChatter(SolverError):
    """A mode of the model's switching laws switched back and forth at one place: both sides of
    its switch drive the solution back to it (a sliding motion along the switch)."""


@dataclass
class DAEProblem:
    residual: object
    jacobian: object
    indptr: np.ndarray
    indices: np.ndarray
    differential: np.ndarray
    params: np.ndarray
    var_names: list = None
    eq_names: list = None
    # Discontinuities as events (docs/solver.md, "Events"): residual and jacobian read n_modes
    # modes after the parameters (p[len(params):]); roots(t, y, yp, p, g) gives the n_roots
    # switching functions with the current modes, modes(t, y, yp, p, m) the modes the laws
    # pick at a point. Without them the solver steps across discontinuities under error control.
    roots: object = None
    modes: object = None
    n_roots: int = 0
    n_modes: int = 0
    root_names: list = None
    mode_names: list = None  # per mode: what it switches (named in ModeChatter)
    # No kernel reads t (residual, Jacobian, switching functions, modes): the solver then runs
    # on a time of its own that starts at 0 at init and at every restart (BDFSolver), so that
    # late in a run its step sizes and events are resolved as at its start.
    autonomous: bool = False
    # dF/dt (t, y, yp, p, out), the residual's signature and parameters: the hidden constraints
    # of a consistent start need it; a row it leaves NaN, or every row without it, is a central
    # difference over +-1e-5 s
    time_derivative: object = None
    # the unknowns in the error test where suppress_alg leaves the algebraic ones out (None:
    # the differential ones); an algebraic unknown whose slope is read (a recorded derivative)
    # belongs in it
    tested: np.ndarray = None

    @property
    def n(self):
        return len(self.indptr) - 1


def _hmin(t: float, times: float = 1.0) -> float:
    """``times`` the core's smallest step at ``t`` (bdf_core.c, hmin_at: 10 eps max(|t|, 1))."""
    return 10.0 * times * _EPS * max(abs(t), 1.0)


def _time_step(dt: float, t: float) -> float:
    """``dt`` seconds on from ``t`` as the step a float can take there: at least 64 ulps of
    ``t``, and exactly (t + step) - t. A perturbation in time is a time, not a fraction of the
    clock: scaled by |t|, the modes "just after" a restart of a Robotino twin 35 days into its
    run were picked 3 ms along y' (a PID's y' after a command is 1e5) and the time derivative
    of the equations was a difference over 60 s; the twin then restarted from values its
    equations rejected by 6e4 and underflowed."""
    return (t + max(dt, 64 * _EPS * abs(t))) - t


def _step_from_derivative(y, yp, diff, atol, rtol) -> float:
    """A first step that moves the differential unknowns by about half their tolerance:
    0.5 / RMS(y'/(atol + rtol |y|)); inf when nothing moves. ``diff``: the unknowns in the
    error test, a mask or their indices (None: all of them)."""
    if diff is not None:
        if diff.dtype == bool:
            diff = np.flatnonzero(diff)
        if not diff.size:
            return math.inf
        y, yp, atol = y[diff], yp[diff], atol[diff]
    v = yp / (atol + rtol * np.abs(y))
    ypn = math.sqrt(float(v @ v) / v.size)
    return 0.5 / ypn if ypn > 0 else math.inf


# Matrices from this size on go through numpy's BLAS and LAPACK on one thread (_serial_blas): a
# multi-threaded OpenBLAS splits a large product differently with its thread count, and the
# consistent initial values then differ in their last bits between a program run (one thread,
# cli.py) and a Python session (a thread per core), and with them every step after (the
# dual-arm at rtol 1e-8: 475 steps or 474). Below it OpenBLAS stays on one thread by itself
# (seen up to 160 unknowns here), and the limit's first use (some 4 ms) is not paid.
_SERIAL_BLAS_MIN = 64
_blas = None  # threadpoolctl's view of the loaded BLAS libraries, made on first use


def _serial_blas(size: int):
    """A context in which numpy's BLAS runs on one thread, for a problem of ``size`` unknowns
    at least _SERIAL_BLAS_MIN; a no-op below that, or without threadpoolctl (a ROS install
    where rosdep has no key for it: there large models' results follow the thread count)."""
    global _blas
    if size < _SERIAL_BLAS_MIN:
        return contextlib.nullcontext()
    if _blas is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _blas = False
        else:
            _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas") if _blas else contextlib.nullcontext()


def _left_null_space(M) -> np.ndarray:
    """Columns spanning {w : w^T M = 0}: the unit vectors of M's zero rows, plus (from an SVD of
    the other rows) the combinations of rows that cancel each other. A matrix whose non-zero
    rows are independent, the usual case, costs no more than before."""
    n = M.shape[0]
    zero = ~np.any(M != 0, axis=1)
    W = np.eye(n)[:, zero]
    rows = np.flatnonzero(~zero)
    if rows.size == 0:
        return W
    sub = M[rows]
    if not np.all(np.isfinite(sub)):
        return W
    with _serial_blas(max(sub.shape)):
        U, S, _ = np.linalg.svd(sub, full_matrices=True)
    tol = max(sub.shape) * np.finfo(float).eps * (S[0] if S.size else 0.0)
    rank = int(np.sum(S > tol))
    if rank == rows.size:
        return W
    extra = np.zeros((n, rows.size - rank))
    extra[rows] = U[:, rank:]
    return np.hstack([W, extra])


#: The dense LU factorises each new iteration matrix in the pivot order of the last full
#: factorisation, on its factors' structural non-zeros only, while every pivot stays at least this
#: fraction of the largest magnitude below it (threshold partial pivoting, between KLU's default
#: 0.001 and UMFPACK's 0.1); otherwise, and after Newton fails on a fresh matrix, it pivots
#: afresh. 0: always afresh. On the Robotino at rtol 1e-4, 0.1 pivoted afresh for 12 % of its
#: matrices and 0.01 for 4 %; its runs took 14 % (rtol 1e-4) and 11 % (rtol 1e-6) less time than
#: pivoting afresh every time.
KEEP_PIVOT = 0.01

# the core's consistent solve up to this many unknowns; above, numpy's LAPACK (blocked, BLAS)
# outruns its unblocked QR, and a run's set-up is small beside its steps
_CORE_CONSISTENT_MAX = 100

_null_spaces: dict = {}  # dF/dy' (its bytes) -> its left null space, for small problems
_NULL_SPACE_KEY_MAX = 8 * 100 * 100  # n <= 100: the key's hash costs nothing beside the SVD
_NULL_SPACES_MAX = 32


def _null_space_of(key: bytes, Fyp) -> np.ndarray:
    """_left_null_space(Fyp), read-only, kept per process for small problems under ``key``
    (Fyp's bytes): a new solver of a model a sweep already ran takes it without an SVD."""
    W = _null_spaces.get(key)
    if W is None:
        W = _left_null_space(Fyp)
        W.flags.writeable = False  # shared between solvers
        if len(key) <= _NULL_SPACE_KEY_MAX:
            if len(_null_spaces) >= _NULL_SPACES_MAX:
                _null_spaces.pop(next(iter(_null_spaces)))
            _null_spaces[key] = W
    return W


def _lstsq_failed(err, flag):
    raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares")


try:  # numpy's own LAPACK gufunc behind np.linalg.lstsq (gelsd), without its wrapper's checks
    from numpy.linalg import _umath_linalg

    _LSTSQ = _umath_linalg.lstsq
except (ImportError, AttributeError):
    _LSTSQ = None


def _lstsq(A, b) -> np.ndarray:
    """``np.linalg.lstsq(A, b[:, 0], rcond=None)[0]`` for a float64 A (m x k) and b (m x 1),
    bit for bit: the same LAPACK call with the same rcond, without the wrapper's ~4 us of
    argument handling (a small model's consistent initialisation solves one per iteration)."""
    if _LSTSQ is None:
        return np.linalg.lstsq(A, b[:, 0], rcond=None)[0]
    rcond = _EPS * max(A.shape)
    with np.errstate(call=_lstsq_failed, invalid="call", over="ignore", divide="ignore", under="ignore"):
        x = _LSTSQ(A, b, rcond, signature="ddd->ddid")[0]
    return x[:, 0]


_EPS = float(np.finfo(float).eps)


def _colamd(indptr, indices, n) -> np.ndarray:
    """SuperLU's COLAMD column order of the pattern (values drawn with a fixed seed)."""
    import scipy.sparse as sps
    from scipy.sparse.linalg import splu

    rng = np.random.default_rng(12345)
    A = sps.csc_matrix((rng.uniform(0.5, 1.5, len(indices)), indices, indptr), shape=(n, n))
    try:
        q = splu(A + sps.eye(n, format="csc") * 1e-3, permc_spec="COLAMD").perm_c
    except RuntimeError:
        q = np.arange(n)
    return np.ascontiguousarray(q, dtype=np.int64)


def _scipy_id() -> bytes:
    """What the column order depends on besides the pattern: SciPy's release (its version.py),
    found without importing SciPy."""
    import importlib.util

    spec = importlib.util.find_spec("scipy")
    origin = getattr(spec, "origin", None) or ""
    try:
        with open(os.path.join(os.path.dirname(origin), "version.py"), "rb") as fh:
            return fh.read()
    except OSError:
        return origin.encode()


_orders: dict = {}


def _column_order(indptr, indices, n) -> np.ndarray:
    """The COLAMD order of a sparse pattern, kept in the cache (``solver/colamd_<hash>.npy``,
    keyed by the pattern and SciPy's release): a model's later runs then import no
    scipy.sparse (0.12 s) and factor nothing to get it; the order, and so every result, is the
    one SciPy gives."""
    import hashlib

    key = hashlib.sha256(b"colamd\0" + _scipy_id() + b"\0" + np.int64(n).tobytes() + indptr.tobytes()
                         + indices.tobytes()).hexdigest()[:24]
    if key in _orders:
        return _orders[key].copy()
    path = native.cache_root() / "solver" / f"colamd_{key}.npy"
    try:
        q = np.load(path, allow_pickle=False)
        if q.dtype == np.int64 and q.shape == (n,) and np.array_equal(np.sort(q), np.arange(n)):
            _orders[key] = q
            return q.copy()
    except (OSError, ValueError):
        pass
    q = _colamd(indptr, indices, n)
    _orders[key] = q
    # written whole or not at all; a read-only cache only costs the next run the SciPy call
    data = io.BytesIO()
    np.save(data, q, allow_pickle=False)
    cachedir.write_whole(path, data.getvalue())
    return q.copy()


_patterns: dict = {}  # a CSC pattern (n, indptr, indices as bytes) -> _Pattern
_PATTERNS_MAX = 16


class _Pattern:
    """What a solver derives from its CSC pattern, kept per process (a sweep's or a fit's new
    solvers of one model take it): ``cols`` (each non-zero's column), ``flat`` (its place in a
    dense row-major n x n matrix) and ``distinct`` (no row twice in a column; by sorting, not
    np.unique, which in numpy 2 imports numpy.ma: 15 ms of a warm run). Read-only: shared by
    the solvers."""

    def __init__(self, indptr, indices):
        n = len(indptr) - 1
        self.cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        self.flat = indices * n + self.cols
        self.cols.flags.writeable = False
        self.flat.flags.writeable = False
        self._distinct = None

    @property
    def distinct(self) -> bool:
        """No row twice in a column (taken when first asked: sparse solvers, index-2 tests)."""
        if self._distinct is None:
            keys = np.sort(self.flat)
            self._distinct = not bool(np.any(keys[1:] == keys[:-1]))
        return self._distinct

    @staticmethod
    def of(indptr, indices) -> "_Pattern":
        key = np.int64(len(indptr)).tobytes() + indptr.tobytes() + indices.tobytes()
        hit = _patterns.get(key)
        if hit is None:
            hit = _Pattern(indptr, indices)
            if len(_patterns) >= _PATTERNS_MAX:
                _patterns.pop(next(iter(_patterns)))
            _patterns[key] = hit
        return hit


def _check_problem(problem, n: int, indptr, indices) -> None:
    """The arrays the C core reads without bounds: wrong lengths or a row index outside the
    matrix would make it read or write past them (a wrong answer, or memory overwritten)."""
    differential = np.asarray(problem.differential)
    if differential.shape != (n,):
        raise ValueError(f"problem.differential has shape {differential.shape}, the problem has {n} unknowns")
    if problem.tested is not None and np.shape(problem.tested) != (n,):
        raise ValueError(f"problem.tested has shape {np.shape(problem.tested)}, the problem has {n} unknowns")
    if indptr.shape != (n + 1,) or indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.size:
        raise ValueError(f"problem.indptr must be {n + 1} non-decreasing column starts from 0 to the "
                         f"{indices.size} entries of problem.indices, got {indptr.tolist()[:12]}")
    if indices.ndim != 1 or (indices.size and (indices.min() < 0 or indices.max() >= n)):
        bad = indices[(indices < 0) | (indices >= n)]
        raise ValueError(f"problem.indices: row index {int(bad[0])} outside the {n} rows of the Jacobian")


def _vector(values, n: int, what: str) -> np.ndarray:
    """``values`` as n finite-or-not floats, or ValueError naming ``what`` (the core reads n)."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.shape[0] != n:
        raise ValueError(f"{what} must hold one value per unknown ({n}), got shape {v.shape}")
    return v


def _refuse_times(t_out):
    """ValueError naming the first output time that is not finite or comes before the one
    before it."""
    bad = ~np.isfinite(t_out)
    if bad.any():  # (the core would step towards it until h underflows)
        raise ValueError(f"output times must be finite, got {t_out[bad][0]}")
    k = int(np.flatnonzero(t_out[1:] < t_out[:-1])[0])
    raise ValueError(f"output times must be ascending: {t_out[k + 1]} comes after {t_out[k]}")


class BDFSolver:
    """Variable-step, variable-order (1-5) BDF for F(t, y, y') = 0, in the fixed-leading-
    coefficient form of SciPy's ``BDF`` (difference array D, Shampine & Reichelt 1997),
    extended to implicit DAEs as DASSL/IDA do: each step solves F(t, y, cj (y - psi)) = 0 by
    simplified Newton on the iteration matrix dF/dy + cj dF/dy'.

    Parameters
    ----------
    problem : DAEProblem
        residual(t, y, yp, p, out) and jacobian(t, y, yp, p, cj, values) as C kernels
        (``solver.native.CKernel``) or numba-compiled ones (see ``solver.kernels``), the CSC pattern
        of the iteration matrix (``indptr``, ``indices``), which unknowns are differential, parameters, and optional
        names for messages.
    options : SolverOptions, optional
        ``solver.options`` (default ``SolverOptions()``): rtol and atol, the local error
        tolerances (weighted RMS norm, as IDA; atol per unknown must have the problem's length),
        hmax, h0, max_order, suppress_alg (leave the algebraic unknowns out of the error test:
        needed for index-2 unknowns such as the contact forces of velocity constraints, Sf(0)
        joints, whose error estimate does not converge with h; Hairer & Wanner, VII.3),
        linear_solver (dense partial pivoting by columns, as LAPACK, or sparse: SuiteSparse's KLU
        where the core was built with it, else the core's own left-looking LU with COLAMD column
        order; ``sparse_lu`` says which, ``BONDSIM_NO_KLU=1`` picks the own; "auto" takes sparse for n > 60 and
        density < 0.2; the factorisation is reused across steps until Newton converges slowly
        or the step size changes) and max_steps per ``advance`` call.

    Failures raise ``StepSizeUnderflow`` (naming the unknown that failed the error test or
    the equation where Newton diverged), ``SingularMatrix`` (naming the unknown without a
    pivot), ``InconsistentInitialValues`` (naming the equation), ``ModeChatter`` (naming a mode
    switched back and forth) or ``TooManySteps``; ``failure()`` gives what the core reported as (kind, index).
    """

    def __init__(self, problem, options: SolverOptions | None = None):
        options = SolverOptions() if options is None else options
        if not isinstance(options, SolverOptions):
            raise TypeError(f"options must be a SolverOptions, not {type(options).__name__}")
        if options.max_order > core.MAX_ORDER:  # options.MAX_ORDER and the C core's agree (test_solver_options)
            raise SolverOptionError("max_order", f"solver option max_order must be at most {core.MAX_ORDER}")
        self.options = options
        self.max_order = options.max_order
        self.problem = problem
        n = problem.n
        self.n = n
        # the absolute time of the core's t = 0 (DAEProblem.autonomous; else 0: absolute time)
        self._autonomous = bool(getattr(problem, "autonomous", False))
        self._origin = 0.0
        self._failed = None  # the message of the failure the step history ended in (advance refuses to go on)
        self.rtol = options.rtol
        if isinstance(options.atol, tuple):
            if len(options.atol) not in (1, n):
                raise SolverOptionError("atol", f"solver option atol has {len(options.atol)} values, the problem "
                                                f"has {n} unknowns")
            self.atol = np.broadcast_to(np.asarray(options.atol, dtype=float), (n,)).copy()
        else:
            self.atol = np.full(n, options.atol)
        self.hmax = options.hmax
        self.h0 = options.h0
        self.max_steps = options.max_steps
        suppress_alg, linear_solver = options.suppress_alg, options.linear_solver
        tested = problem.differential if problem.tested is None else problem.tested
        self.diff = np.asarray(tested, dtype=bool).copy() if suppress_alg else np.ones(n, bool)
        # the unknowns in the error test as indices, None when all are (the first step's size)
        self._tested = None if self.diff.all() else np.flatnonzero(self.diff)
        # parameters, then the modes of the model's discontinuities: the kernels read both
        n_par = len(problem.params)
        self.n_par = n_par
        self.pm = np.zeros(n_par + int(problem.n_modes))
        self.pm[:n_par] = np.asarray(problem.params, dtype=float)
        self.p = self.pm[:n_par]  # a view: set_params writes the parameters in place
        self.n_roots = int(problem.n_roots) if problem.roots is not None else 0
        n_modes = int(problem.n_modes)
        if self.n_roots and problem.modes is None and n_modes:
            raise ValueError(f"the problem has {n_modes} modes and switching functions but no modes kernel")
        self.indptr = np.asarray(problem.indptr, dtype=np.int64)
        self.indices = np.asarray(problem.indices, dtype=np.int64)
        _check_problem(problem, n, self.indptr, self.indices)
        # the pattern's derived arrays; flat: each non-zero's place in a dense row-major n x n matrix (_kernels_at)
        self._pattern = _Pattern.of(self.indptr, self.indices)
        self._flat = self._pattern.flat
        self._stats = np.zeros(core.N_STATS, dtype=np.int64)
        self.D = np.zeros((core.MAX_ORDER + 3, n))
        self.st = np.zeros(core.N_FLOAT_STATE)
        self.ist = np.zeros(core.N_INT_STATE, dtype=np.int64)
        self.piv = np.zeros(n, dtype=np.int64)
        self.index2 = np.zeros(n, dtype=np.uint8)  # set by init(): _index2
        self._setup_consistent(problem, n)
        nnz = len(self.indices)
        if linear_solver == "auto":
            # dense LU wins on small or dense iteration matrices (no indexing overhead)
            linear_solver = "sparse" if n > 60 and nnz < 0.2 * n * n else "dense"
        self.linear_solver = linear_solver
        self.sparse = linear_solver == "sparse"
        lib = core.library()
        #: the sparse LU in use: "klu", "own", or None (dense). KLU takes a CSC pattern without
        #: a row twice in one column (the own LU sums such entries, as the dense assembly does)
        self.sparse_lu = None if not self.sparse else \
            "klu" if lib.bdf_has_klu() and self._pattern.distinct else "own"
        self.G = np.zeros(1 if self.sparse else n * n)
        self._setup_sparse(n, nnz)
        # the C core, its struct pointing at this solver's arrays (they live as long as it)
        n_p = self.pm.size
        kernels = {"res": c_address(problem.residual, "res", n, n_p, n),
                   "jac": c_address(problem.jacobian, "jac", n, n_p, nnz)}
        if self.n_roots:
            kernels["roots"] = c_address(problem.roots, "res", n, n_p, self.n_roots)
            kernels["modes"] = c_address(problem.modes, "res", n, n_p, n_modes) if n_modes else \
                core.no_modes_address()
        Lp, Li, Lx, Up, Ui, Ux, prow, pinv, xw = self._lu
        self._core = core.Core(
            kernels,
            sizes=dict(n=n, nnz=nnz, n_par=n_par, n_modes=n_modes, n_roots=self.n_roots,
                       sparse={None: core.DENSE_LU, "own": core.SPARSE_OWN, "klu": core.SPARSE_KLU}[self.sparse_lu],
                       max_steps=self.max_steps, cap_l=Li.shape[0], cap_u=Ui.shape[0]),
            scalars=dict(rtol=self.rtol, hmax=self.hmax, keep_pivot=KEEP_PIVOT),
            arrays=dict(indptr=self.indptr, indices=self.indices, diff=self.diff.view(np.uint8), p=self.pm,
                        atol=self.atol, D=self.D, st=self.st, ist=self.ist, stats=self._stats, G=self.G,
                        piv=self.piv, q=self.q, Lp=Lp, Li=Li, Lx=Lx, Up=Up, Ui=Ui, Ux=Ux, prow=prow, pinv=pinv,
                        xw=xw, index2=self.index2),
            lib=lib)

    def _setup_consistent(self, problem, n):
        """What consistent() and _index2() reuse from run to run: the algebraic unknowns, work
        rows for the residuals, the Jacobian's values, and C kernels' ctypes functions (called
        with addresses: about 1 us where a CKernel call converting its arrays takes 3)."""
        differential = np.asarray(problem.differential, dtype=bool)
        self._alg = np.flatnonzero(~differential)
        # index-2 candidates: algebraic and outside the error test (see _index2)
        self._index2_candidates = ~differential & ~self.diff
        self._any_index2_candidate = bool(self._index2_candidates.any())
        self._R = np.zeros((3, n))  # F at the iterate, and at t0 + eps and t0 - eps (or dF/dt)
        self._vals = np.zeros(len(self.indices))
        self._W_key, self._W = None, None  # the last iteration's Fyp and its left null space
        self._W_fyp = self._W_c = None  # the same as C-contiguous arrays, for the core's solve
        self._fyp_out = np.zeros((n, n))  # dF/dy' as the core's solve found it
        self._no_W = np.zeros((n, 0))
        res, jac = problem.residual, problem.jacobian
        if isinstance(res, native.CKernel) and isinstance(jac, native.CKernel) and res.kind == "res" \
                and jac.kind == "jac":
            self._cfns = (res._fn, jac._fn, core._addr(self.pm), core._addr(self._vals),
                          tuple(core._addr(row) for row in self._R))
        else:
            self._cfns = None

    def _kernels_at(self, y, yp):
        """(res(t, k): F(t, y, y') into work row k, G(t, cj): the dense iteration matrix
        dF/dy + cj dF/dy') at the arrays y, y' (updated in place between calls)."""
        R, vals, flat, n = self._R, self._vals, self._flat, self.n
        if self._cfns is not None:  # C kernels called by address: no array conversions per call
            cres, cjac, a_p, a_vals, a_rows = self._cfns
            a_y, a_yp = native._ptr(y), native._ptr(yp)

            def res(t, k):
                cres(t, a_y, a_yp, a_p, a_rows[k])

            def jac(t, cj):
                cjac(t, a_y, a_yp, a_p, cj, a_vals)
        else:
            residual, jacobian, pm = self.problem.residual, self.problem.jacobian, self.pm

            def res(t, k):
                residual(t, y, yp, pm, R[k])

            def jac(t, cj):
                jacobian(t, y, yp, pm, cj, vals)

        def G(t, cj):
            vals[:] = 0.0
            jac(t, cj)
            return np.bincount(flat, weights=vals, minlength=n * n).reshape(n, n)
        return res, G

    def _setup_sparse(self, n, nnz):
        """Column order (COLAMD, from SuperLU on the pattern) and work arrays for the own sparse
        LU (KLU orders and allocates for itself)."""
        if self.sparse_lu != "own":
            self.q = np.arange(n, dtype=np.int64)
            z8, zf = np.zeros(1, dtype=np.int64), np.zeros(1)
            self._lu = (z8, z8, zf, z8, z8, zf, np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n))
            return
        self.q = _column_order(self.indptr, self.indices, n)
        cap = min(n * n, 40 * nnz + 10 * n)
        self._lu = (np.zeros(n + 1, np.int64), np.zeros(cap, np.int64), np.zeros(cap),
                    np.zeros(n + 1, np.int64), np.zeros(cap, np.int64), np.zeros(cap),
                    np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n))

    # names for messages
    def _var(self, i):
        names = self.problem.var_names
        return names[i] if names and 0 <= i < len(names) else f"y[{i}]"

    def _eq(self, i):
        names = self.problem.eq_names
        return names[i] if names and 0 <= i < len(names) else f"equation {i}"

    @property
    def stats(self):
        """The core's counters by name (steps, rejected, newton_iters, jac_evals,
        lu_factorizations, res_evals, newton_failures, max_order, error_test_failures, events,
        event_restarts, reprojections: bdf_core.c's ST_* slots)."""
        return {name: int(v) for name, v in zip(core.STAT_NAMES, self._stats)}

    @property
    def t_step(self) -> float:
        """The time of the integrator's last step point (at or past the last output time)."""
        return float(self.st[core.S_T]) + self._origin

    @property
    def y_step(self) -> np.ndarray:
        """y at the integrator's last step point (a copy)."""
        return self.D[0].copy()

    def consistent(self, t0, y0, yp0=None, tol=1e-10, maxiter=50):
        """Solve F(t0, y, y') = 0 for the algebraic y and all y' (differential y fixed).

        The core's solve (bdf_consistent) first: the same Newton, each iteration's least squares
        by a pivoted QR in place of numpy's SVD, some 20 us less per call on a small model,
        which a fit or sweep pays every run. The systems it leaves to this method are the
        rank-deficient ones (a minimum-norm answer), those whose dF/dy' moves with the iterate,
        and every failure, which this method names."""
        n = self.n
        y = _vector(y0, n, "y0").copy()
        yp = np.zeros(n) if yp0 is None else _vector(yp0, n, "yp0").copy()
        if self._consistent_in_core(float(t0), y, yp, tol, maxiter):
            return y, yp
        with _serial_blas(n):
            return self._consistent_lstsq(t0, y0, yp0, tol, maxiter)

    def _consistent_lstsq(self, t0, y0, yp0, tol, maxiter, free=None):
        """consistent's Newton with numpy's least squares (LAPACK's gelsd). ``free``: differential
        unknowns it may move as well (``init``'s ``free``)."""
        n = self.n
        y = np.array(y0, dtype=float)
        yp = np.zeros(n) if yp0 is None else np.array(yp0, dtype=float)
        alg = self._alg if free is None else np.concatenate([self._alg, free])
        n_alg = alg.size
        R = self._R
        r = R[0]
        res, G = self._kernels_at(y, yp)
        res(t0, 0)  # then F at the values of each iteration's end (the kernels are pure)
        bad = -1  # the largest |F| and |y| of the last iterate
        for _ in range(maxiter):
            if not np.isfinite(r).all():
                # a law that divides by zero or overflows at t0: name the equation, not numpy's SVD
                bad = int(np.argmin(np.isfinite(r)))
                raise InconsistentInitialValues(f"{self._eq(bad)} is not finite at t={t0:g} "
                                                f"(residual {r[bad]}): a law divides by zero or overflows there",
                                                equation=self._eq(bad))
            Fy = G(t0, 0.0)
            Fyp = G(t0, 1.0) - Fy
            # hidden constraints: every combination w of the equations free of y' (w^T Fyp = 0)
            # must also hold to first order, w^T (Fy yp + Ft) = 0. Rows without y' are such
            # combinations, but so is a constraint that contains a derivative of a state
            # together with that state's own equation (the dual-arm manipulator: a velocity constraint on a
            # flow eliminated as q'); without them the multipliers were a minimum-norm guess.
            # dF/dy' seldom changes between iterations and runs (a sweep of a damping): its
            # null space is taken again only for other values
            key = Fyp.tobytes()
            if key != self._W_key:
                self._set_null_space(key, Fyp)
            W = self._W
            Ft = self._time_derivative(t0, y, yp, res)
            # [[Fy_alg, Fyp], [0, W^T Fy]] x = -[r, W^T (Fy y' + Ft)], with the right-hand side
            # as the last column (one finiteness test)
            m = n + W.shape[1]
            Ab = np.empty((m, n_alg + n + 1))
            if n_alg:
                Ab[:n, :n_alg] = Fy[:, alg]
            Ab[:n, n_alg:-1] = Fyp
            np.negative(r, out=Ab[:n, -1])
            if m > n:
                Ab[n:, :n_alg] = 0.0
                Ab[n:, n_alg:-1] = W.T @ Fy
                Ab[n:, -1] = -(W.T @ (Fy @ yp + Ft))
            if not np.isfinite(Ab).all():
                raise InconsistentInitialValues(f"the Jacobian or the time derivative of the equations is not "
                                                f"finite at t={t0:g}: a law divides by zero or overflows there")
            try:
                sol = _lstsq(Ab[:, :-1], Ab[:, -1:])
            except np.linalg.LinAlgError as exc:
                raise InconsistentInitialValues(f"no consistent initial values at t={t0:g}: {exc}") from None
            y[alg] += sol[:n_alg]
            yp += sol[n_alg:]
            res(t0, 0)
            # done when F is tiny or Newton has stalled (hidden-constraint rows that the
            # integrated y satisfies only to the solver's tolerance leave a floor in r);
            # |x| as np.linalg.norm computes it, sqrt(x . x)
            step_floor = 1e-12 * max(1.0, math.sqrt(y @ y), math.sqrt(yp @ yp))
            bad = int(np.abs(r).argmax())
            y_max = float(np.abs(y).max())
            if abs(r[bad]) < tol * max(1.0, y_max) or math.sqrt(sol @ sol) <= step_floor:
                break
        if bad < 0:
            bad, y_max = int(np.abs(r).argmax()), float(np.abs(y).max())
        if abs(r[bad]) > 1e-6 * max(1.0, y_max):
            raise InconsistentInitialValues(
                f"initial values violate {self._eq(bad)}: residual {r[bad]:.3g} cannot be removed by "
                f"adjusting algebraic unknowns (are the given states consistent with the constraints?)",
                equation=self._eq(bad))
        if free is not None:  # (the last iteration's matrix: its rank is the answer's)
            self._free_determined(Ab[:, :-1], free, n_alg)
        return y, yp

    def _time_derivative(self, t0, y, yp, res) -> np.ndarray:
        """dF/dt at (t0, y, y'): the problem's own kernel, and a central difference over 1e-5 s
        (O(eps^2)) for the rows it leaves undefined (d/dt sqrt(u) at u = 0 where u' = 0 too)
        and for a problem without one, as bdf_consistent takes it."""
        R, own, Ft = self._R, self.problem.time_derivative, None
        R[1:] = 0.0
        if own is not None:
            own(t0, y, yp, self.pm, R[1])
            Ft = R[1].copy()
            if np.isfinite(Ft).all():
                return Ft
        eps = _time_step(1e-5, t0)
        res(t0 + eps, 1)
        res(t0 - eps, 2)
        quotient = (R[1] - R[2]) / ((t0 + eps) - (t0 - eps))
        return quotient if Ft is None else np.where(np.isfinite(Ft), Ft, quotient)

    def _free_determined(self, A, free, n_alg) -> None:
        """Refuse a start where the equations leave free unknowns (the columns of ``free``, last of
        the first ``n_alg`` of ``A``) undetermined: a least-squares answer would pick one of many
        starts without a word (a cart-pole whose cart, bob and pendulum momenta are all free)."""
        _, sv, vt = np.linalg.svd(A)
        null = vt[np.sum(sv > _EPS * max(A.shape) * (sv[0] if sv.size else 0.0)):]
        part = null[:, n_alg - free.size:n_alg]
        if not part.size or np.max(np.abs(part)) < 1e-8:
            return
        k = np.linalg.matrix_rank(part, tol=1e-8)
        tied = [self._var(int(free[j])) for j in np.flatnonzero(np.max(np.abs(part), axis=0) >= 1e-8)]
        raise _Undetermined(
            f"the constraints tie {', '.join(tied)} together and no initial value was given to any of them: "
            f"give initial values to {k} of them (the others then start where the constraints put them)")

    def _set_null_space(self, key: bytes, Fyp):
        """dF/dy' (its bytes ``key``) and its left null space, for both solves."""
        self._W_key, self._W = key, _null_space_of(key, Fyp)
        self._W_fyp = np.ascontiguousarray(Fyp, dtype=float)
        self._W_c = np.ascontiguousarray(self._W, dtype=float)

    def _consistent_in_core(self, t0, y, yp, tol, maxiter) -> bool:
        """bdf_consistent on y, yp in place; True when it found the values (else they are
        garbage). A dF/dy' other than the one whose null space is known is handed back at
        once: its null space is taken (or found in the cache) and the solve starts again."""
        if self.n > _CORE_CONSISTENT_MAX:
            return False
        ft = self.problem.time_derivative
        ft_address = getattr(ft, "address", None)
        if ft is not None and not ft_address:  # a Python dF/dt: the solve that can call it
            return False
        for _ in range(2):
            if self._W_fyp is None:  # no null space yet: a key nothing equals (NaN)
                self._fyp_out[:] = np.nan
                code = self._core.consistent(t0, y, yp, self._alg, self._no_W, self._fyp_out, tol, maxiter,
                                             self._fyp_out, ft_address)
            else:
                code = self._core.consistent(t0, y, yp, self._alg, self._W_c, self._W_fyp, tol, maxiter,
                                             self._fyp_out, ft_address)
            if code != core.CI_NEED_W:
                return code == core.CI_OK
            Fyp = self._fyp_out.copy()
            self._set_null_space(Fyp.tobytes(), Fyp)
        return False

    def _set_modes(self, t, y, yp) -> bool:
        """The modes the laws pick at (t, y, y'); True if any changed."""
        if self.pm.size == self.n_par:
            return False
        m = np.zeros(self.pm.size - self.n_par)
        self.problem.modes(t, np.ascontiguousarray(y, float), np.ascontiguousarray(yp, float), self.pm, m)
        changed = bool(np.any(m != self.pm[self.n_par:]))
        self.pm[self.n_par:] = m
        return changed

    def _consistent_with_modes(self, t0, y, yp, consistent=True):
        """Modes and consistent values together: the modes at t0 itself, then those just
        after t0 along y' (a law switching exactly at t0, Step(t0=0), takes its new branch;
        a wheel angle starting at a multiple of pi/3 picks its side by its direction)."""
        self._set_modes(t0, y, yp)
        if consistent:
            y, yp = self.consistent(t0, y, yp)
        for _ in range(3):
            if self.pm.size == self.n_par:
                break
            dt = _time_step(1e-9, t0)
            if not self._set_modes(t0 + dt, y + dt * yp, yp) or not consistent:
                break
            try:
                y, yp = self.consistent(t0, y, yp)
            except InconsistentInitialValues:
                # a law that is singular exactly at t0 on the side the run leaves to (the dual-arm manipulator's
                # acos(clip(2t/T - 1, -1, 1)) at t0 = 0: the derivative of acos at -1): keep the
                # values solved with the modes at t0; the first step evaluates past t0
                break
        if consistent and self._second_order_modes(t0, y, yp):
            try:
                y, yp = self.consistent(t0, y, yp)
            except InconsistentInitialValues:
                pass
        return y, yp

    def _second_order_modes(self, t0, y, yp) -> bool:
        """A switching function exactly on zero at t0 that y' does not move (a mass at rest on
        a clip limit) is judged by the second derivative: the modes at t0 + dt on the parabola
        y + dt y' + dt^2/2 y'', y'' from the consistent y' at t0 + dt. Without it the side
        picked along y' alone kept sqrt(clip(1 - x, 0, 1)) clipped for ever from x0 = 0, a
        result wrong without a warning (v 1.000 instead of 0.816 m/s). True if modes changed."""
        if not self.n_roots:
            return False
        g = np.zeros(self.n_roots)
        self.problem.roots(t0, np.ascontiguousarray(y, float), np.ascontiguousarray(yp, float), self.pm, g)
        if not np.any(g == 0.0):
            return False
        # dt: large enough that dt^2/2 y'' moves a quantity of order one (1e-12), small enough
        # to see nothing but the start
        dt = _time_step(1e-6, t0)
        try:
            _, yp1 = self.consistent(t0 + dt, y + dt * yp, yp)
        except SolverError:
            return False
        ypp = (yp1 - yp) / dt
        if not np.all(np.isfinite(ypp)):
            return False
        return self._set_modes(t0 + dt, y + dt * yp + 0.5 * dt * dt * ypp, yp + dt * ypp)

    def _index2(self, t, y, yp) -> np.ndarray:
        """The index-2 unknowns: algebraic, outside the error test, and in no equation free of
        y' (a multiplier that only the derivative of a constraint determines). The Newton test
        gives them a round-off floor that grows with cj (bdf_core.c, newton_solve)."""
        if not self._any_index2_candidate:  # all differential, or all in the error test
            return self._index2_candidates
        y, yp = np.ascontiguousarray(y, dtype=float), np.ascontiguousarray(yp, dtype=float)
        _, G = self._kernels_at(y, yp)
        if not self._pattern.distinct:  # entries summed into the dense matrices first
            Fy = G(t, 0.0)
            Fyp = G(t, 1.0) - Fy
            free_rows = ~np.any(Fyp != 0.0, axis=1)
            in_free = np.any(Fy[free_rows] != 0.0, axis=0)
            return self._index2_candidates & ~in_free
        # one entry per place: the same tests on the non-zeros (a difference is zero when its
        # operands are equal whatever the signs of zeros, so dense or not gives the same sets)
        v0 = self._jac_values(t, y, yp, 0.0)
        v1 = self._jac_values(t, y, yp, 1.0)
        n, rows, cols = self.n, self.indices, self._pattern.cols
        with_yp = np.zeros(n, dtype=bool)
        with_yp[rows[(v1 - v0) != 0.0]] = True
        in_free = np.zeros(n, dtype=bool)
        in_free[cols[(v0 != 0.0) & ~with_yp[rows]]] = True
        return self._index2_candidates & ~in_free

    def _jac_values(self, t, y, yp, cj) -> np.ndarray:
        """The iteration matrix's non-zeros dF/dy + cj dF/dy' at (t, y, y'), a new array."""
        vals = np.zeros(len(self.indices))
        self.problem.jacobian(t, y, yp, self.pm, cj, vals)
        return vals

    def init(self, t0, y0, yp0=None, consistent=True, free=None):
        """Start at t0 from y0 (yp0: a first guess of y'), made consistent. ``free``: indices of
        differential unknowns whose y0 nobody gave: where the equations cannot hold with the
        differential y0 as given, these move onto them (a pendulum bob's momentum, fixed by the
        hinge's given angular momentum), as long as the equations determine them."""
        return self._start(t0, y0, yp0, consistent, clear=False, free=free)

    def _start(self, t0, y0, yp0, consistent, clear, free=None):
        if not math.isfinite(float(t0)):
            raise ValueError(f"t0 must be a finite time, got {t0}")
        y = _vector(y0, self.n, "y0").copy()
        yp = np.zeros(self.n) if yp0 is None else _vector(yp0, self.n, "yp0").copy()
        self._origin = float(t0) if self._autonomous else 0.0
        t_core = float(t0) - self._origin  # (the kernels of an autonomous problem ignore t)
        try:
            y, yp = self._consistent_with_modes(t_core, y, yp, consistent)
        except InconsistentInitialValues as held:
            free = np.asarray([] if free is None else free, dtype=np.intp)
            if not consistent or not free.size:
                raise
            # the given values alone cannot hold: move the unknowns nobody gave, then go on as
            # usual; where that cannot make the equations hold either, the first refusal stands
            self._set_modes(t_core, y, yp)
            try:
                with _serial_blas(self.n):
                    y, yp = self._consistent_lstsq(t_core, y, yp, 1e-10, 50, free=np.unique(free))
            except _Undetermined:
                raise
            except InconsistentInitialValues:
                raise held from None
            y, yp = self._consistent_with_modes(t_core, y, yp, consistent)
        self._failed = None
        self.index2[:] = self._index2(t_core, y, yp)
        self.y, self.yp = y, yp
        # a first step below the core's smallest underflowed at once, in words that did not name h0
        hmin = _hmin(t_core)
        if self.h0 is not None and self.h0 < hmin:
            raise SolverOptionError("h0", f"solver option h0 = {self.h0:g} is below the smallest step the solver "
                                          f"takes at t={float(t0):g}: {hmin:.3g}")
        # D = [y, h y'], order 1, the first step from y' (bdf_start); clear: a new solver's arrays
        self._core.start(t_core, y, yp, math.nan if self.h0 is None else float(self.h0), self.max_order, clear)
        self.t = float(t0)
        return y, yp

    def reset(self, t0, y0, yp0=None, params=None, consistent=True, free=None):
        """Start a new run on this solver, as a new ``BDFSolver`` of the same problem and options
        followed by ``init(t0, y0, yp0, consistent)`` would, with ``params`` (all the problem's
        parameters, in its order) instead of the current ones; nothing is allocated anew.
        The run is bit for bit the one of a fresh solver: every array the core reads is put
        back to its initial state (counters, modes, step history, iteration matrix and LU)."""
        if params is not None:
            p = np.asarray(params, dtype=float).reshape(-1)
            if p.shape[0] != self.n_par:
                raise ValueError(f"reset: {p.shape[0]} parameter values given, the problem has {self.n_par}")
            self.pm[:self.n_par] = p
        self.pm[self.n_par:] = 0.0  # the modes: picked again by init
        return self._start(t0, y0, yp0, consistent, clear=True, free=free)

    def set_params(self, p, restart=True):
        """New parameter values from the last output time on (the integrator may have stepped
        past it: that stretch is discarded). The run restarts at order 1 there, since the
        inputs just jumped; ``restart=False`` keeps the step size instead of a small one."""
        p = np.asarray(p, dtype=float)
        if p.shape != (self.n_par,):  # (numpy would spread one value over every parameter)
            raise ValueError(f"set_params: {p.size} parameter values given (shape {p.shape}), the problem has "
                             f"{self.n_par}")
        self.p[:] = p
        h = self.st[core.S_H]
        h_new = min(h, 1e-3, self.hmax) if restart else min(h, self.hmax)
        if restart:
            if self._autonomous:
                self._origin = self.t  # the solver's own time starts again at 0
            # y' (and algebraic y) jump with the inputs: predicting from the old y' would make
            # the first error estimate h |dy'|, which at tight tolerances underflows the step
            try:
                self.y, self.yp = self._consistent_with_modes(self.t - self._origin, self.y, self.yp)
            except InconsistentInitialValues:
                pass  # keep the old values: the corrector still converges, only more slowly
            h_est = _step_from_derivative(self.y, self.yp, self._tested, self.atol, self.rtol)
            if math.isfinite(h_est):
                # at least what the core allows a restart at t (bdf_core.c: 100 hmin): a fixed
                # 1e-10 fell below hmin from t = 4.5e4 s on, and a twin 12.5 hours old underflowed
                # at its next command; too long a first step only fails its error test and shrinks
                h_new = max(min(h_new, h_est), 1e-10, _hmin(self.t - self._origin, 100))
        self.D[:] = 0.0
        self.D[0] = self.y
        self.D[1] = self.yp * h_new
        self._failed = None  # a new start from the last output
        self.st[core.S_T] = self.t - self._origin
        self.st[core.S_H] = h_new
        self._restart_order()

    def _restart_order(self):
        """Order 1, no equal steps yet, iteration matrix to be formed."""
        self.ist[:] = 0
        self.ist[core.I_ORDER], self.ist[core.I_MAX_ORDER] = 1, self.max_order
        self.ist[core.I_FAIL_KIND] = core.FAIL_NONE

    def advance(self, t_out, progress=None, tstop=math.inf, chunk=100):
        """Outputs at the ascending times ``t_out``, each ≥ the last output time: the
        integrator may already be past some of them (it stepped beyond the last output), and
        those are answered from the interpolating polynomial of the last step, which spans the
        last output time. ``tstop``: no step goes beyond it."""
        t_out = np.asarray(t_out, dtype=float)
        if t_out.ndim > 1:
            raise ValueError(f"output times must be one time or a 1-D sequence, got shape {t_out.shape}")
        t_out = t_out.reshape(-1)
        if math.isnan(tstop):
            raise ValueError("tstop must be a time or inf, got nan")
        if t_out.size and float(t_out.max()) > tstop:  # (no step goes past tstop: the core underflowed there)
            raise ValueError(f"output time {float(t_out.max())} is past tstop {tstop}")
        return self._advance(t_out, progress, float(tstop) - self._origin, chunk)

    def image(self, t_out, tstop, stretches) -> dict | None:
        """The image of this solver's core before the calls ``advance(t_out[a:b], tstop=tstop)``
        for each (a, b) of ``stretches`` without a progress callback (``ahead``): None when the
        core cannot be rebuilt from bytes (kernels that are no library's symbols, KLU)."""
        t_core = np.ascontiguousarray(np.asarray(t_out, dtype=float) - self._origin)
        return ahead.image(self._core, core.Solver, t_core, float(tstop) - self._origin, self.rtol, self.hmax,
                           self.max_steps, stretches, core.CONSTANTS)

    def kernel_address(self, name: str) -> int:
        """The address of the core's kernel ``name`` (res, jac, roots, modes; 0: none)."""
        return int(getattr(self._core.s, name) or 0)

    def adopt(self, run) -> None:
        """Take the calls of ``run`` (an ``ahead.Run`` of this solver's image, compared by
        ``ahead.Ahead.use``) as this solver's next core calls: each waits for the run's call,
        takes its rows, and after the last (or a failure) this solver's arrays take the run's,
        as if its own core had made the calls."""
        self._core = _Adopted(self, self._core, run)

    def step_to(self, t: float):
        """``advance([t])`` with the last step ending a few ulps past ``t`` (64 eps of the
        solver's own time, so never a last step below hmin) instead of past it by up to a step:
        the state at ``t`` is then a step point, not an interpolation."""
        t_core = float(t) - self._origin
        return self._advance(np.array([float(t)]), None, t_core + 64 * _EPS * max(1.0, abs(t_core)), 100)

    def _advance(self, t_out, progress, tstop, chunk):
        """advance with ``tstop`` in the solver's own time."""
        if self._failed is not None:  # its step history is the failed step's: an answer from it is garbage
            raise SolverError(f"the last advance failed ({self._failed}): restart the integration first "
                              f"(set_params(p, restart=True), or Simulation.restart() from the last output) or "
                              f"start a new run (init, reset)")
        m = t_out.shape[0]
        if m:
            # ascending (NaN compares false) from a finite first to a finite last time: all finite.
            # One comparison of the array: a small model's run is some 100 us
            first, last = float(t_out[0]), float(t_out[-1])
            if not (math.isfinite(first) and math.isfinite(last)) or (m > 1 and not (t_out[1:] >= t_out[:-1]).all()):
                _refuse_times(t_out)
            if first < self.t - 1e-12 * max(1, abs(self.t)):
                raise ValueError(f"output time {first} is before the last output time {self.t}")
        Y = np.empty((m, self.n))
        YP = np.empty((m, self.n))
        t_core = t_out - self._origin if self._origin else t_out
        start = 0
        while start < m:
            stop = min(m, start + chunk) if progress else m
            self.ist[core.I_K_OUT] = 0
            # the core writes into buffers of its own (pointers set once), copied into Y, YP
            status = self._core.advance(t_core[start:stop], tstop, Y[start:stop], YP[start:stop], self.rtol,
                                        self.hmax, self.max_steps)
            if status != core.OK:
                try:
                    self._raise(status)
                except TooManySteps:
                    raise  # (stopped at a step it took: the run may go on with more steps)
                except SolverError as exc:
                    self._failed = str(exc)
                    raise
            start = stop
            if progress:
                progress(float(t_out[stop - 1]))
        if m:  # (no output time: nothing solved, nothing changes)
            self.y, self.yp = Y[-1].copy(), YP[-1].copy()
            self.t = float(t_out[-1])
        return Y, YP

    def failure(self) -> tuple:
        """What the last failure named: (kind, index), kind one of "error_test" (index: the
        unknown with the largest error estimate), "newton" (the equation with the largest
        residual), "not_finite" (an equation whose residual was NaN or inf), "pivot" (the unknown
        without a pivot), "sparse_fill", "modes" (a mode that chattered) or None."""
        kind = int(self.ist[core.I_FAIL_KIND])
        names = {core.FAIL_ERROR_TEST: "error_test", core.FAIL_NEWTON: "newton", core.FAIL_PIVOT: "pivot",
                 core.FAIL_SPARSE_FILL: "sparse_fill", core.FAIL_MODES: "modes", core.FAIL_NOT_FINITE: "not_finite"}
        return names.get(kind), int(self.ist[core.I_FAIL_INDEX])

    def _raise(self, status):
        t, h = self.st[core.S_T] + self._origin, self.st[core.S_H]
        kind, k = self.failure()
        if status == core.UNDERFLOW:
            who = {"error_test": f" (last error-test failure on {self._var(k)})",
                   "newton": f" (Newton iteration diverged; largest residual in {self._eq(k)})",
                   "not_finite": f" (the residual of {self._eq(k)} is not finite, NaN or inf: a law evaluated "
                                 f"outside its domain, e.g. sqrt or log of a negative value, or a division by 0)"
                   }.get(kind, "")
            raise StepSizeUnderflow(f"step size underflow at t={t:.9g}: h={h:.3g}{who}")
        if status == core.SINGULAR and kind == "sparse_fill":
            what = "KLU ran out of memory or refused the pattern" if self.sparse_lu == "klu" else \
                "sparse LU fill exceeded its work space"
            raise SolverError(f"{what}; use SolverOptions(linear_solver='dense')")
        if status == core.SINGULAR:
            raise SingularMatrix(f"singular iteration matrix at t={t:.9g}: no pivot for unknown {self._var(k)}; "
                                 f"check the equations involving it")
        if status == core.CHATTER:
            names = self.problem.mode_names
            what = f" ({names[k]})" if names and 0 <= k < len(names) else ""
            raise ModeChatter(f"mode {k} of the model's switching laws chatters at t={t:.9g}{what}: both sides of "
                              f"its switch drive the solution back to it, a sliding motion along the switch "
                              f"(Filippov), which the solver does not integrate: make the law continuous across "
                              f"the switch (tanh(x/eps) in place of sign(x) or of a Piecewise step, eps small "
                              f"against x's range), or model the sliding phase (stiction) explicitly")
        if status == core.TOO_MANY:
            raise TooManySteps(f"more than {self.max_steps} steps before reaching the output time (t={t:.9g})")
        raise SolverError(f"solver failed with status {status} at t={t}")


class _Adopted:
    """A solver's core while it takes the calls of a run started ahead (BDFSolver.adopt): the
    same ``advance``, answered from the run; anything else is the solver's own core's."""

    def __init__(self, solver, own, run):
        self._solver, self._own, self._run = solver, own, run
        self._calls = run.image["calls"]
        self._k = 0

    def __getattr__(self, name):
        return getattr(self._own, name)

    def advance(self, t_out, t_stop, Y, YP, rtol, hmax, max_steps) -> int:
        calls, k, run = self._calls, self._k, self._run
        a, b = calls["stretches"][k]
        m = t_out.shape[0]
        if (m != b - a or t_stop != calls["tstop"] or rtol != calls["rtol"] or hmax != calls["hmax"]
                or max_steps != calls["max_steps"] or t_out.tobytes() != calls["t_out"][8 * a:8 * b]):
            # Ahead.use compared the whole plan: a call off it is a caller that changed its plan
            raise RuntimeError(f"core call {k} is not the one the adopted run made")
        status, rows = run.wait(k)
        n = self._solver.n
        Y[:rows] = np.frombuffer(run.Y, count=rows * n, offset=8 * a * n).reshape(rows, n)
        YP[:rows] = np.frombuffer(run.YP, count=rows * n, offset=8 * a * n).reshape(rows, n)
        self._k = k + 1
        if status != core.OK or self._k == len(calls["stretches"]):
            self._take_state()
        return status

    def _take_state(self) -> None:
        """The run's arrays into the solver's own (the run has ended: its last call returned)."""
        self._run.join()
        for name, a in self._own._arrays.items():
            if a.size:
                a.reshape(-1).view(np.uint8)[:] = np.frombuffer(self._run.arrays[name], np.uint8, a.nbytes)
        self._solver._core = self._own
