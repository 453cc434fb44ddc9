"""The BDF core in C (``bdf_core.c``): built with the system compiler, bound with ctypes.

The core is compiled when the package is installed (setup.py: pip, ``pip install -e``, colcon)
into ``prebuilt/`` beside this module, and else once per machine into the cache on first use
(``native.build_library``: named by a hash of the source, the flags, the compiler, the
architecture and, for -march=native, the CPU, so an edited core, another compiler or a package
built on another machine builds anew); loaded once per process. A solver hands it one struct of
pointers to its arrays, filled at construction (``Core``), so that an ``advance`` call costs a
few field writes and one ctypes call.

Where SuiteSparse's ``klu.h`` is found (Debian: libsuitesparse-dev) the core is built with KLU
(``-DBONDSIM_KLU``, linked with ``-lklu``; KLU's version is part of the library's name), and
sparse solvers factor with it; with ``BONDSIM_NO_KLU=1`` in the environment, without the header,
or when that build fails (remembered in the cache by a ``.failed`` file), the core is built
without it and sparse solvers use its own sparse LU. ``sparse_lu()`` says which.
"""
from __future__ import annotations

import ast
import ctypes
import os
import re
import threading
import weakref
from pathlib import Path

from . import native

# numpy is imported where arrays are made, not here: the command line imports this module to
# start the core's first build (prebuild) before it imports numpy (0.05-0.1 s)


def source() -> str:
    # beside this module (package data): importlib.resources would cost a warm run 5 ms of imports
    return Path(__file__).with_name("bdf_core.c").read_text()


_NAME = re.compile(r"[A-Z][A-Z0-9_]*$")
_CONSTANT = re.compile(r"#[ \t]*define[ \t]+([A-Z][A-Z0-9_]*)[ \t]+(.+)|enum\s*\{([^}]*)\}")


def _int_expr(text: str, known: dict) -> int:
    """An integer constant expression of the core (``5``, ``(MAX_ORDER + 3)``) from the names
    already read; anything else is refused."""
    tree = ast.parse(text.strip(), mode="eval")

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in known:
            return known[node.id]
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = ev(node.left), ev(node.right)
            return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
        raise ValueError(f"not an integer constant: {text.strip()!r}")

    return ev(tree)


def c_constants(text: str) -> dict:
    """The integer constants of the core's source: every enum member and every #define whose
    value is an integer expression, in the order they appear (enum members count from 0 or
    from their explicit value, as in C)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    out: dict = {}
    # literal starts ("#", "enum"), no anchors: re scans for them instead of trying every
    # position (4.5 -> 1 ms of each run's start)
    for m in _CONSTANT.finditer(text):
        if m.group(3) is not None and m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
            continue  # an identifier ending in "enum"
        if m.group(1):
            try:
                out[m.group(1)] = _int_expr(m.group(2), out)
            except (ValueError, SyntaxError):
                pass  # a floating-point constant: not a slot
            continue
        value = 0
        for item in m.group(3).split(","):
            if not item.strip():
                continue
            name, _, expr = item.partition("=")
            name = name.strip()
            if not _NAME.match(name):
                raise ValueError(f"bdf_core.c: cannot read enum member {item.strip()!r}")
            value = _int_expr(expr, out) if expr.strip() else value
            out[name] = value
            value += 1
    return out


# The core's named slots and codes (S_* of st, I_* of ist, ST_* of stats, status codes OK...,
# failure kinds FAIL_*, MAX_ORDER, NROWS), read from bdf_core.c itself: no copy to keep in step.
CONSTANTS = c_constants(source())
globals().update(CONSTANTS)
STAT_NAMES = [k[3:].lower() for k, v in sorted(((k, v) for k, v in CONSTANTS.items() if k.startswith("ST_")),
                                               key=lambda kv: kv[1])]

_P, _I, _D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double


class Solver(ctypes.Structure):
    """bdf_core.c's solver_t, field for field."""
    _fields_ = [("res", _P), ("jac", _P), ("roots", _P), ("modes", _P),
                ("n", _I), ("nnz", _I), ("n_par", _I), ("n_modes", _I), ("n_roots", _I), ("sparse", _I),
                ("max_steps", _I), ("cap_l", _I), ("cap_u", _I),
                ("indptr", _P), ("indices", _P), ("diff", _P), ("p", _P), ("rtol", _D), ("atol", _P),
                ("hmax", _D), ("keep_pivot", _D), ("D", _P), ("st", _P), ("ist", _P), ("stats", _P), ("G", _P),
                ("piv", _P), ("q", _P), ("Lp", _P), ("Li", _P), ("Lx", _P), ("Up", _P), ("Ui", _P), ("Ux", _P),
                ("prow", _P), ("pinv", _P), ("xw", _P), ("work", _P), ("mask", _P), ("index2", _P), ("klu", _P),
                ("t_out", _P), ("n_out", _I), ("t_stop", _D), ("Yout", _P), ("YPout", _P)]


# where klu.h is looked for: Debian's and Fedora's SuiteSparse, then a plain or local install
KLU_INCLUDE_DIRS = ("/usr/include/suitesparse", "/usr/local/include/suitesparse", "/usr/include",
                    "/usr/local/include")


def klu_wanted() -> bool:
    """KLU unless ``BONDSIM_NO_KLU`` is set to anything but "" or "0"."""
    return os.environ.get("BONDSIM_NO_KLU", "") in ("", "0")


_klu_flags: list = []


def klu_flags() -> tuple:
    """The compiler flags of a build with KLU: () when no klu.h is found. Its version (read from
    the header) is one of them, so that a new SuiteSparse builds its own library."""
    if not _klu_flags:
        flags = ()
        for folder in KLU_INCLUDE_DIRS:
            header = Path(folder, "klu.h")
            try:
                text = header.read_text(errors="replace")
            except OSError:
                continue
            version = ".".join(m.group(1) for m in re.finditer(
                r"#define\s+KLU_(?:MAIN|SUB|SUBSUB)_VERSION\s+(\d+)", text)) or "unknown"
            flags = ("-DBONDSIM_KLU", f"-DBONDSIM_KLU_VERSION=\"{version}\"", f"-I{folder}")
            break
        _klu_flags.append(flags)
    return _klu_flags[0]


def _configs() -> list:
    """The builds to try, best first: (extra flags, libraries), for this CPU (-march=native),
    then portable (a compiler that does not know -march=native), each with KLU first where it
    is wanted and found."""
    klu = klu_flags() if klu_wanted() else ()
    out = []
    for arch in (native.CORE_CFLAGS, ("-fopenmp-simd",)):
        if klu:
            out.append((arch + klu, ("-lklu",)))
        out.append((arch, ()))
    return out


_libs: dict = {}  # KLU wanted (klu_wanted()) -> the core loaded for it ({}: as in a fresh process)
_pending = None  # (thread, {"path": ...} or {"error": ...}, KLU wanted) of a build started by prebuild()


def _failed_mark(folder: Path, flags, libs) -> Path:
    return native.library_path(source(), "bdf_core", folder, flags, libs).with_suffix(".failed")


# where setup.py puts the core it compiles at install time (install_build): a library there is
# used only when its name (source, flags, compiler, architecture, CPU) is the one this process
# would build
PREBUILT = Path(__file__).with_name("prebuilt")


def _folders() -> list:
    return [PREBUILT, native.cache_root() / "solver"]


def _find():
    """The library of the first of ``_configs()`` built in the install's folder or the cache,
    None when that configuration is not built yet (configurations whose build failed, a
    ``.failed`` mark beside where the library would be, are passed over)."""
    found = located()
    return None if found is None else found[0]


def located():
    """What ``library()`` would load, found without compiling anything: (path, installed,
    for_this_cpu, klu); installed when the path is the install's (``PREBUILT``), for_this_cpu
    when it was compiled with -march=native, klu when it factorises with SuiteSparse's KLU.
    None when it is not compiled yet (the first simulation compiles it into the cache).
    Raises NativeBuildError when there is no C compiler to name a build by."""
    for flags, libs in _configs():
        for folder in _folders():
            path = native.library_path(source(), "bdf_core", folder, flags, libs)
            if path.exists():
                return path, folder == PREBUILT, "-march=native" in flags, "-lklu" in libs
        if not any(_failed_mark(f, flags, libs).exists() for f in _folders()):
            return None
    return None


def _build(folder: Path | None = None):
    """The core's library: the one installed or cached, else compiled into ``folder`` (the
    cache's by default), the first of ``_configs()`` that builds. A build that fails where a
    later one succeeds (a compiler that refuses -march=native, a KLU header without its
    library) leaves ``<library>.failed`` with the compiler's message, so that later processes
    skip it instead of running the compiler again."""
    found = _find() if folder is None else None
    if found is not None:
        return found
    folder = native.cache_root() / "solver" if folder is None else folder
    configs = _configs()
    failed = []  # (flags, libs, error) of the configurations that did not build
    for k, (flags, libs) in enumerate(configs):
        if _failed_mark(folder, flags, libs).exists():
            continue
        try:
            path = native.build_library(source(), "bdf_core", folder, extra_flags=flags, libs=libs,
                                        what="the BDF core")
        except native.NativeBuildError as exc:
            if k == len(configs) - 1:
                raise
            failed.append((flags, libs, exc))
            continue
        for f_flags, f_libs, exc in failed:
            try:
                _failed_mark(folder, f_flags, f_libs).write_text(f"{exc}\n")
            except OSError:
                pass
        return path
    raise AssertionError("unreachable: the last configuration raises")


def install_build(folder: Path) -> Path:
    """Compile the core into ``folder`` as an install does (setup.py), whatever the cache
    holds: a user's first run then compiles only its model. What an earlier install left there
    is removed first: other builds (an edited core, another compiler) and the marks of failed
    ones (a KLU library installed since is tried again). Raises NativeBuildError."""
    folder = Path(folder)
    if folder.is_dir():
        for old in folder.glob("bdf_core_*"):
            old.unlink()
    return _build(folder)


def _built() -> bool:
    """Is the core this process would load already installed or in the cache?"""
    return _find() is not None


def prebuild() -> None:
    """Start compiling the core in a background thread when this machine's cache has none yet,
    so that gcc's second or so runs while the model is built (sympy) instead of after it;
    ``library()`` waits for it. Nothing happens when the core is built or loaded already."""
    global _pending
    if klu_wanted() in _libs or _pending is not None:
        return
    try:
        if _built():
            return
    except native.NativeBuildError:
        return  # no compiler: library() says so when the core is needed
    result: dict = {}

    def work():
        try:
            result["path"] = _build()
        except Exception as exc:  # noqa: BLE001 - raised again where the core is needed
            result["error"] = exc

    thread = threading.Thread(target=work, name="bondsim-core-build")
    thread.start()
    _pending = (thread, result, klu_wanted())


def wait_prebuild() -> None:
    """Wait for a background build of the core (before a process ends without its teardown: a
    build cut short would leave its temporary folder in the cache)."""
    if _pending is not None:
        _pending[0].join()


def library() -> ctypes.CDLL:
    """The compiled core: the one the install compiled, else built into the cache the first time
    on this machine; with KLU or not as the environment says now (``BONDSIM_NO_KLU``)."""
    global _pending
    want = klu_wanted()
    lib = _libs.get(want)
    if lib is not None:
        return lib
    path = None
    if _pending is not None and _pending[2] == want:
        thread, result, _ = _pending
        thread.join()
        _pending = None
        if "error" in result:
            raise result["error"]
        path = result["path"]
    if path is None:
        path = _build()
    try:
        lib = native.load_library(path)
    except OSError:
        if path.parent != PREBUILT:
            raise
        # an installed library that does not load (damaged, or for another system's libc):
        # this machine's own, compiled into the cache
        path = _build(native.cache_root() / "solver")
        lib = native.load_library(path)
    lib.bdf_advance.argtypes, lib.bdf_advance.restype = [_P], _I
    lib.bdf_work_size.argtypes, lib.bdf_work_size.restype = [_I, _I, _I, _I], _I
    lib.bdf_struct_size.argtypes, lib.bdf_struct_size.restype = [], _I
    lib.bdf_output_rows.argtypes = [_P, _I, _I, _I, _P, _P, _P, _P, _P, _P]
    lib.bdf_output_rows.restype = None
    lib.bdf_rows_text.argtypes, lib.bdf_rows_text.restype = [_I, _I, _P, _P], _I
    lib.bdf_has_klu.argtypes, lib.bdf_has_klu.restype = [], _I
    lib.bdf_release.argtypes, lib.bdf_release.restype = [_P, _I], None
    lib.bdf_consistent_work_size.argtypes, lib.bdf_consistent_work_size.restype = [_I, _I, _I, _I], _I
    lib.bdf_consistent.argtypes = [_P, _D, _P, _P, _P, _I, _P, _I, _P, _D, _I, _P, _P, _P]
    lib.bdf_consistent.restype = _I
    lib.bdf_start.argtypes, lib.bdf_start.restype = [_P, _D, _P, _P, _D, _I, _I], _D
    if lib.bdf_struct_size() != ctypes.sizeof(Solver):
        raise native.NativeBuildError("bdf_core.c's solver_t and _ccore.Solver disagree")
    _libs[want] = lib
    return lib


def loaded():
    """The core this process has loaded already (for the environment's KLU choice), else None:
    for work that is worth the core where it is there, not a build where it is not."""
    return _libs.get(klu_wanted())


def sparse_lu() -> str:
    """The sparse LU of the core this process loads now: "klu" (SuiteSparse's KLU) or "own"
    (the core's left-looking LU)."""
    return "klu" if library().bdf_has_klu() else "own"


def no_modes_address() -> int:
    return ctypes.cast(library().bdf_no_modes, ctypes.c_void_p).value


_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof


def _addr(a) -> int:
    """The data pointer of a C-contiguous array. ctypes' from_buffer takes 0.3 us where
    ``a.ctypes.data`` takes 1 (a solver hands the core some thirty arrays): a writable
    C-contiguous array offers its buffer; anything else (read-only, empty, or not
    C-contiguous: refused) takes the checks."""
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError, BufferError):
        pass
    if not a.flags.c_contiguous:
        raise ValueError("the C core needs C-contiguous arrays")
    return a.ctypes.data


def _release(lib, s):
    lib.bdf_release(ctypes.addressof(s), 0)


class Core:
    """One solver's struct for the C core. ``arrays`` (name -> numpy array) are kept referenced
    here so that the pointers in the struct stay valid as long as the struct. KLU's
    factorisations (``sizes["sparse"] == SPARSE_KLU``) are freed with the Core (or by
    ``release()``)."""

    def __init__(self, kernels, sizes, scalars, arrays, lib=None):
        import numpy as np

        lib = lib or library()
        self._lib = lib
        self._arrays = dict(arrays)
        n, nnz, n_roots, n_modes = sizes["n"], sizes["nnz"], sizes["n_roots"], sizes["n_modes"]
        self._arrays["work"] = np.zeros(lib.bdf_work_size(n, nnz, n_roots, n_modes))
        self._arrays["mask"] = np.zeros(n, dtype=np.uint8)
        # the struct's fields in one constructor call (a quarter of the time of a setattr each)
        fields = dict(kernels)
        fields.update({name: int(v) for name, v in sizes.items()})
        fields.update(scalars)
        fields.update({name: _addr(a) for name, a in self._arrays.items()})
        s = self.s = Solver(**fields)
        self._ptr = ctypes.addressof(s)
        self._ist = self._arrays["ist"]
        self._advance = lib.bdf_advance
        self._own = self._pointing = None  # the small-output buffers: made on first use
        self._ci_work = None  # bdf_consistent's work space: made on first use
        self._ci_fixed = None  # its other arrays and their pointers (Core.consistent)
        if s.sparse == CONSTANTS["SPARSE_KLU"]:
            weakref.finalize(self, _release, lib, s)

    def consistent(self, t0, y, yp, alg, W, fyp_key, tol, maxiter, fyp_out, time_derivative=None) -> int:
        """bdf_consistent on y, yp (updated in place): CI_OK, CI_NEED_W (dF/dy' is not
        ``fyp_key``; it is in ``fyp_out``) or CI_FALLBACK. W: dF/dy' = fyp_key's left null
        space (n x m_w, C-contiguous). ``time_derivative``: the address of the model's dF/dt
        kernel (None: a central difference)."""
        # the pointers of the arrays that stay the same from run to run, kept while the same
        # array objects come: a sweep's run calls this once or more, and looking up five pointers
        # and the work size each time took some 6 of a small model's 17 us reset
        fixed = self._ci_fixed
        if fixed is None or not (fixed[0] is alg and fixed[1] is W and fixed[2] is fyp_key and fixed[3] is fyp_out):
            fixed = self._ci_fixed = (alg, W, fyp_key, fyp_out, self._consistent_pointers(alg, W, fyp_key, fyp_out))
        a_alg, n_alg, a_w, m_w, a_key, a_work, a_out = fixed[4]
        return self._lib.bdf_consistent(self._ptr, t0, _addr(y), _addr(yp), a_alg, n_alg, a_w, m_w, a_key, tol,
                                        maxiter, a_work, a_out, time_derivative)

    def _consistent_pointers(self, alg, W, fyp_key, fyp_out):
        import numpy as np

        n, m_w = self.s.n, W.shape[1]
        size = self._lib.bdf_consistent_work_size(n, self.s.nnz, alg.shape[0], m_w)
        work = self._ci_work
        if work is None or work.shape[0] < size:
            work = self._ci_work = np.zeros(size)
        return (_addr(alg) if alg.size else None, alg.shape[0], _addr(W) if W.size else None, m_w, _addr(fyp_key),
                _addr(work), _addr(fyp_out))

    def start(self, t0, y, yp, h0, max_order, clear) -> float:
        """bdf_start: a run from (t0, y, y') at order 1; the first step (h0, or from y' when
        NaN); ``clear`` puts the arrays back to a new solver's state first."""
        return self._lib.bdf_start(self._ptr, t0, _addr(y), _addr(yp), h0, max_order, int(bool(clear)))

    def release(self, keep_symbolic=True):
        """Free KLU's numeric factorisation (and its analysis unless ``keep_symbolic``): the
        next run factors afresh, as a new solver's first run does."""
        self._lib.bdf_release(self._ptr, int(bool(keep_symbolic)))

    SMALL = 64  # up to this many output times per call go through the solver's own buffers

    def _buffers(self):
        """Output buffers for SMALL times, whose pointers stay in the struct: a frame of the
        twin (one output time) then costs no pointer look-up. Made by the first call with so
        few times (a run over many output times never needs them)."""
        import numpy as np

        n = self.s.n
        self._t, self._Y, self._YP = np.zeros(self.SMALL), np.zeros((self.SMALL, n)), np.zeros((self.SMALL, n))
        self._own = (_addr(self._t), _addr(self._Y), _addr(self._YP))
        self._pointing = None

    def advance(self, t_out, t_stop, Y, YP, rtol, hmax, max_steps) -> int:
        """Outputs at t_out into Y, YP (C-contiguous, len(t_out) rows); the status code."""
        m = t_out.shape[0]
        s = self.s
        s.n_out, s.t_stop = m, t_stop
        s.rtol, s.hmax, s.max_steps = rtol, hmax, max_steps  # attributes a caller may have changed
        if m > self.SMALL:  # the core writes into the caller's arrays (no second copy of a long run)
            if not t_out.flags.c_contiguous:
                import numpy as np

                t_out = np.ascontiguousarray(t_out)
            s.t_out, s.Yout, s.YPout = _addr(t_out), _addr(Y), _addr(YP)
            self._pointing = None
            return self._advance(self._ptr)
        if self._own is None:
            self._buffers()
        if self._pointing is not self._own:
            s.t_out, s.Yout, s.YPout = self._own
            self._pointing = self._own
        self._t[:m] = t_out
        status = self._advance(self._ptr)
        k = int(self._ist[CONSTANTS["I_K_OUT"]])  # rows written
        Y[:k] = self._Y[:k]
        YP[:k] = self._YP[:k]
        return status


def output_rows(address, n, n_val, t_out, Y, YP, p, rows):
    """The C loop of kernels.output_rows for a C output kernel at ``address``."""
    import numpy as np

    buf = np.empty(max(n_val, 1))
    library().bdf_output_rows(address, t_out.shape[0], n, n_val, _addr(t_out), _addr(Y), _addr(YP), _addr(p),
                              _addr(rows), _addr(buf))


def rows_text(lib, values) -> str:
    """A 2-D float64 block as CSV lines ('%.17g', comma-separated, each line ending in a newline),
    by ``lib`` (a loaded core: ``loaded()``): the characters Python's '%.17g' % value gives."""
    import numpy as np

    values = np.ascontiguousarray(values, dtype=float)
    rows, cols = values.shape
    out = np.empty(rows * max(cols, 1) * CONSTANTS["TEXT_WIDTH"] + 1, dtype=np.uint8)
    n = lib.bdf_rows_text(rows, cols, _addr(values), _addr(out))
    return out[:n].tobytes().decode("ascii")
