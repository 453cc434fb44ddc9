"""Native code for the solver: the C kernel ABI, building C with the system compiler, loading it.

The model kernels and the BDF core meet through plain C function pointers (no sizes: the
caller knows them)::

    void res(double t, const double *y, const double *yp, const double *p, double *out);
    void jac(double t, const double *y, const double *yp, const double *p, double cj, double *vals);

A kernel object carries ``address`` (that pointer, an int) and is callable from Python with
C-contiguous float64 numpy arrays: ``k(t, y, yp, p, out)`` or ``k(t, y, yp, p, cj, vals)``.

C is compiled by the system compiler that tools/setup.sh installs (``$CC``, else gcc, else cc)
into the cache (``cache_root()``), named by a hash of the source, the flags, the compiler's
version and the machine's architecture, written atomically: a second process loads the library
without compiling, and a failed or interrupted build leaves nothing behind.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from . import cachedir

# -O2: -O3 compiled the Robotino kernels 40 % slower for no measurable run-time gain.
# -ffp-contract=off: no fused multiply-adds, so results do not depend on the CPU the cache
# was built on. -fno-math-errno lets sqrt compile to one instruction.
CFLAGS = ("-O2", "-fPIC", "-shared", "-ffp-contract=off", "-fno-math-errno")

# The BDF core (one library per install, or per machine where the install built none) is
# compiled for the CPU it runs on, at -O2 with its hot element-wise loops (the difference array,
# predictor, Newton update, dense LU's column updates) marked `#pragma omp simd` for
# -fopenmp-simd (OpenMP's vectorisation alone, no runtime library): as fast as -O3, which
# vectorised them too (the Robotino about 20 % faster than plain -O2), in 1.2 s of gcc instead of
# 2.1 s. The same results bit for bit: with -ffp-contract=off the compiler may only vectorise
# element-wise loops, whose rounding is the same, and no reduction is marked but an integer one.
# The CPU is part of the library's name (host_id), so a cache shared between machines never runs
# another's code.
CORE_CFLAGS = ("-march=native", "-fopenmp-simd")

RES_ARGS = (ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
JAC_ARGS = (ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_double,
            ctypes.c_void_p)
KINDS = {"res": RES_ARGS, "jac": JAC_ARGS}


class NativeBuildError(RuntimeError):
    """The C compiler is missing or refused generated code."""


def cache_root() -> Path:
    """``$BONDSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/bondsim_ros``, else ``~/.cache/bondsim_ros``."""
    return Path(cachedir.cache_root())


def check_cache_root() -> Path:
    """The cache root, made if missing; NativeBuildError naming it and the variable that chose
    it when it cannot hold files (a regular file, a folder in /proc, no permission)."""
    root = cache_root()
    try:
        if root.exists() and not root.is_dir():
            raise NotADirectoryError(20, "not a folder")
        root.mkdir(parents=True, exist_ok=True)
        if not os.access(root, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        source = ("$BONDSIM_CACHE_DIR" if os.environ.get("BONDSIM_CACHE_DIR")
                  else "$XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "the default")
        raise NativeBuildError(f"cache folder {root} ({source}) cannot hold the compiled models: "
                               f"{exc.strerror or exc}") from None
    return root


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise NativeBuildError("no C compiler found (set CC, or install gcc: apt-get install gcc)")
    return cc


_versions: dict = {}


def _remembered(kind: str, key: list):
    """The text stored in the cache's host/ folder for ``key`` (a JSON list naming what the
    value depends on), or None when none is stored or it was stored for another key."""
    memo = _memo_path(kind, key)
    try:
        with open(memo) as fh:
            known = json.load(fh)
        if isinstance(known, list) and len(known) == 2 and known[0] == key and isinstance(known[1], str):
            return known[1]
    except (OSError, ValueError):
        pass
    return None


_read_only = []  # non-empty inside read_only(): facts found are not stored


@contextlib.contextmanager
def read_only():
    """Within it, nothing is written to the cache (a command that only shows the cache: finding
    the compiler and the CPU stores no facts in host/ and makes no folder)."""
    _read_only.append(True)
    try:
        yield
    finally:
        _read_only.pop()


def _remember(kind: str, key: list, value: str) -> None:
    """Store ``value`` for ``key``, whole or not at all (a read-only cache: asked again next time)."""
    if not _read_only:
        cachedir.write_whole(_memo_path(kind, key), json.dumps([key, value]).encode())


def _memo_path(kind: str, key: list) -> Path:
    return cache_root() / "host" / f"{kind}_{hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]}.json"


def _compiler_id(cc: str) -> str:
    """The first line of ``cc --version``, remembered in the cache for the compiler's binary as
    it is now (path, size, modification time, inode): a warm run then starts no compiler
    process (10 ms) to find the solver core's library."""
    if cc not in _versions:
        binary = shutil.which(cc)
        stamp = None
        if binary:
            try:
                st = os.stat(binary)
                stamp = [os.path.realpath(binary), st.st_size, st.st_mtime_ns, st.st_ino]
            except OSError:
                pass
        known = _remembered("cc", stamp) if stamp is not None else None
        if known is not None:
            _versions[cc] = known
            return known
        import subprocess  # here: a warm run, its libraries built, starts no process (2 ms of import)

        try:
            out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
        except OSError as exc:
            raise NativeBuildError(f"C compiler {cc!r} does not run: {exc}") from None
        _versions[cc] = out.stdout.splitlines()[0] if out.stdout else cc
        if stamp is not None and out.returncode == 0:
            _remember("cc", stamp, _versions[cc])
    return _versions[cc]


_host: list = []


def host_id() -> str:
    """The CPU model and its feature flags (what -march=native compiles for)."""
    if not _host:
        keys, found = ("model name", "flags", "Features", "CPU implementer", "CPU part"), {}
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    k = k.strip()
                    if k in keys and k not in found:
                        found[k] = v.strip()
                    if not line.strip() and found:
                        break  # the first processor's block is enough
        except OSError:
            pass
        import platform

        cpu = [found[k] for k in keys if k in found]
        _host.append("|".join([platform.machine(), _processor(platform, cpu)] + cpu))
    return _host[0]


def _processor(platform, cpu: list) -> str:
    """``platform.processor()`` (on Linux a ``uname -p`` process, 2-5 ms), remembered in the
    cache for this CPU and kernel."""
    key = [platform.machine(), platform.release()] + cpu
    value = _remembered("cpu", key)
    if value is None:
        value = platform.processor()
        _remember("cpu", key, value)
    return value


def library_path(source: str, stem: str, folder: Path, extra_flags=(), libs=()) -> Path:
    """Where the library of ``source`` lives (built or not): ``folder/stem_<hash>.so``."""
    cc = compiler()
    flags = CFLAGS + tuple(extra_flags) + tuple(libs)
    # the machine's architecture in every name: `gcc --version` is the same line on x86_64 and
    # aarch64, and a cache shared between them (a home folder on NFS) must not hand one the other's code
    parts = [source, " ".join(flags), _compiler_id(cc), os.uname().machine] + \
        ([host_id()] if "-march=native" in flags else [])
    h = hashlib.sha256("\0".join(parts).encode())
    return folder / f"{stem}_{h.hexdigest()[:20]}.so"


# Where a source may be cut into translation units: everything before the first mark is the
# header each unit repeats (includes, inline helpers, prototypes); each mark opens a function.
UNIT_MARK = "/* unit */"
SPLIT_MIN = 100_000  # characters: below, one gcc process (the Robotino's 0.3 s gains nothing)


def _jobs() -> int:
    """Compiler processes for one library: one per usable core, at most 8 (beyond, the units
    get small and each repeats the header)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _units(source: str, jobs: int) -> list:
    """``source`` as up to ``jobs`` translation units of about equal size (gcc's time goes with
    it), or [source] when it is small or has no marks."""
    if jobs < 2 or len(source) < SPLIT_MIN or UNIT_MARK not in source:
        return [source]
    header, *bodies = source.split(UNIT_MARK)
    target = sum(map(len, bodies)) / jobs
    units, current, size = [], [], 0
    for body in bodies:
        current.append(body)
        size += len(body)
        if size >= target and len(units) < jobs - 1:
            units.append(current)
            current, size = [], 0
    if current:
        units.append(current)
    return [header + "".join(u) for u in units]


def _run_all(cmds: list, cc: str, what: str) -> None:
    """Run the compiler commands at once (one per core); the first failure is the error."""
    import subprocess

    try:
        procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in cmds]
    except OSError as exc:
        raise NativeBuildError(f"C compiler {cc!r} does not run: {exc}") from None
    outs = [(p.communicate()[1], p.returncode) for p in procs]
    for err, code in outs:
        if code != 0:
            tail = "\n".join(err.strip().splitlines()[-12:])
            raise NativeBuildError(f"{cc} could not compile {what} (exit {code}):\n{tail}")


def build_library(source: str, stem: str, folder: Path, extra_flags=(), what: str | None = None,
                  libs=()) -> Path:
    """Compile C ``source`` into a shared library in ``folder`` (once: cached by content) and
    return its path. ``libs``: libraries to link (``-lklu``), after the sources as the linker
    wants them. ``what`` names the source in errors (e.g. the model). A large source with
    UNIT_MARKs is compiled as several translation units by parallel compiler processes, one per
    core, then linked (the 18-DOF dual-arm's kernels: 4.5 s in one process)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = library_path(source, stem, folder, extra_flags, libs)
    if path.exists():
        return path
    cc = compiler()
    units = _units(source, _jobs())
    with tempfile.TemporaryDirectory(dir=folder, prefix=f".{stem}-") as tmp:
        so_tmp = Path(tmp, f"{stem}.so")
        if len(units) == 1:
            c_file = Path(tmp, f"{stem}.c")
            c_file.write_text(source)
            _run_all([[cc, *CFLAGS, *extra_flags, "-o", str(so_tmp), str(c_file), *libs, "-lm"]], cc, what or stem)
        else:
            compile_flags = [f for f in CFLAGS + tuple(extra_flags) if f != "-shared"]
            cmds, objs = [], []
            for k, text in enumerate(units):
                c_file, o_file = Path(tmp, f"{stem}_{k}.c"), Path(tmp, f"{stem}_{k}.o")
                c_file.write_text(text)
                cmds.append([cc, *compile_flags, "-c", "-o", str(o_file), str(c_file)])
                objs.append(str(o_file))
            _run_all(cmds, cc, what or stem)
            _run_all([[cc, "-shared", "-o", str(so_tmp), *objs, *libs, "-lm"]], cc, what or stem)
        os.replace(so_tmp, path)  # atomic: another process sees the whole library or none
    return path


_libraries: dict = {}


def load_library(path: Path) -> ctypes.CDLL:
    """The library at ``path``, loaded once per process (it stays loaded: kernels point into it)."""
    key = str(path)
    lib = _libraries.get(key)
    if lib is None:
        lib = _libraries[key] = ctypes.CDLL(key)
    return lib


# numpy's float64 and a one-element array, made by the first _ptr call: this module imports no
# numpy, so that the command line can start the solver core's first build before importing it
_F64 = _EMPTY = _EMPTY_ADDRESS = None


def _numpy_constants() -> None:
    global _F64, _EMPTY, _EMPTY_ADDRESS
    import numpy as np

    _EMPTY = np.zeros(1)
    _EMPTY_ADDRESS = _EMPTY.ctypes.data
    _F64 = np.dtype(np.float64)


def _ptr(a) -> int:
    if _F64 is None:  # the first call (and ``dtype != None`` would compare with float64)
        _numpy_constants()
    if a.dtype != _F64 or not a.flags.c_contiguous:
        raise TypeError("kernel arguments must be C-contiguous float64 arrays")
    # ctypes' from_buffer takes 0.4 us where ``a.ctypes.data`` takes 1.4: a consistent
    # initialisation calls the kernels some ten times with four arrays each
    if a.flags.writeable and a.size:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    if not a.size:  # a model without parameters: a valid address the kernel never reads
        return _EMPTY_ADDRESS
    return a.ctypes.data  # read-only


class CKernel:
    """A C kernel of the ABI above from a loaded library: ``address`` for the BDF core, and
    callable from Python (one ctypes call, a few microseconds)."""

    def __init__(self, lib: ctypes.CDLL, symbol: str, kind: str):
        if kind not in KINDS:
            raise ValueError(f"kernel kind must be one of {sorted(KINDS)}, not {kind!r}")
        fn = getattr(lib, symbol)
        fn.argtypes, fn.restype = KINDS[kind], None
        self._fn, self.kind, self.symbol, self.lib = fn, kind, symbol, lib
        self.address = ctypes.cast(fn, ctypes.c_void_p).value

    def __call__(self, t, y, yp, p, *rest):
        if self.kind == "res":
            (out,) = rest
            self._fn(float(t), _ptr(y), _ptr(yp), _ptr(p), _ptr(out))
        else:
            cj, vals = rest
            self._fn(float(t), _ptr(y), _ptr(yp), _ptr(p), float(cj), _ptr(vals))

    def __repr__(self):
        return f"CKernel({self.symbol!r}, {self.kind})"
