"""The on-disk layout of generated code: where it lives, how an entry is written and locked.

The folder is ``models/`` under the cache root (``$BONDSIM_CACHE_DIR``, else
``$XDG_CACHE_HOME/bondsim_ros``, else ``~/.cache/bondsim_ros``: ``native.cache_root``). Per key
(fingerprint.py): ``m_<key>.c`` (the source), ``m_<key>_<hash>.so`` (the library, named by
``native.build_library`` after the source, the flags and the compiler), ``m_<key>.json`` (names,
sparsity, the library's name; written last, so an entry exists once both it and the source do)
and, while a process builds the key, ``m_<key>.lock``. Files are written whole or not at all
(:func:`atomic_write`). models/buildcache.py keeps its build records in the same folder.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .core import ModelError


def cache_dir() -> Path:
    """The folder of generated code (made if missing)."""
    from bondsim_ros.solver import native

    path = native.cache_root() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def entry_paths(folder: Path, key: str) -> tuple:
    """The source, the metadata and the lock file of ``key``'s generated code in ``folder``."""
    return folder / f"m_{key}.c", folder / f"m_{key}.json", folder / f"m_{key}.lock"


def is_cached(key: str) -> bool:
    """Whether the cache holds ``key``'s generated code (its source and its metadata)."""
    src_path, meta_path, _ = entry_paths(cache_dir(), key)
    return src_path.exists() and meta_path.exists()


def atomic_write(path: Path, text: str) -> None:
    """Write ``path`` through a temporary file renamed into place: readers see the old file or the new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


class KeyLock:
    """An exclusive lock on one key's build (flock: released by the kernel if the process
    dies), so concurrent first runs of a model build it once; the lock file goes with it."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        import fcntl

        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        # unlinked while held: a process waiting on this file finds the built code on waking
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)


# -O1 for the kernels (straight-line arithmetic): gcc 0.29 s instead of 0.41 s on the Robotino's
# 511 lines, 5.0 s instead of 6.3 s on the dual-arm's 4067; the Robotino solve measured the same
KERNEL_CFLAGS = ("-O1",)
# A large model's kernels at -O0: gcc's register allocation over their long straight-line
# functions is most of -O1's time (the dual-arm's 320 kB: 1.5 s of CPU at -O1, 0.4 s at -O0,
# the largest part of its first build after sympy's), while its solve is the sparse LU's, not
# the kernels' (its 20 s run: 0.056 s either way; the Robotino's, all kernels, would be 30 %
# slower). -O0 evaluates each operation as written, with -ffp-contract=off no fused one: the
# dual-arm's outputs are bit for bit those of its -O1 kernels. Only where every integer power
# is of exponent -4..4: gcc -O1 multiplies x**5 and beyond out in another order than libgcc's
# __powidf2, which -O0 calls.
LARGE_KERNEL_CFLAGS = ("-O0",)
LARGE_SOURCE = 100_000  # characters of C (the Robotino's: 18 000)
SAME_POWI = 4


def _powi_exponents(source: str):
    """The exponents of the source's ``__builtin_powi(base, n)`` calls (cprint's integer powers)."""
    start = source.find("__builtin_powi(")
    while start >= 0:
        depth, k = 0, start + len("__builtin_powi")
        while True:  # to the call's closing parenthesis (the base may hold calls and commas)
            c = source[k]
            depth += (c == "(") - (c == ")")
            if depth == 0:
                break
            k += 1
        yield int(source[source.rfind(",", start, k) + 1:k])
        start = source.find("__builtin_powi(", k)


def kernel_flags(source: str) -> tuple:
    """The optimisation of a model's kernels: -O1, or -O0 for a large source whose results are
    the same at both."""
    if len(source) >= LARGE_SOURCE and all(abs(n) <= SAME_POWI for n in _powi_exponents(source)):
        return LARGE_KERNEL_CFLAGS
    return KERNEL_CFLAGS


def compile_library(name: str, src_path: Path, source: str, folder: Path) -> Path:
    """Compile the C ``source`` of model ``name`` into a library in ``folder`` named after
    ``src_path``; a compiler failure is a ModelError naming the model."""
    from bondsim_ros.solver import native

    try:
        return native.build_library(source, src_path.stem, folder, extra_flags=kernel_flags(source),
                                    what=f"model {name!r}")
    except native.NativeBuildError as exc:
        text = str(exc).strip()
        raise ModelError(name, f"the generated code does not compile ({text})") from None


# -- keeping the cache small ---------------------------------------------------------------------
# Every engine or solver-core change makes new keys; the old entries are never read again but stay.
# An entry is a group of files sharing a stem (``m_<key>*`` with its library, ``r_<hash>.json``, a
# solver core ``bdf_core_<hash>.so``, an RViz view) or a subfolder (a converted URDF with its
# meshes, an IDA build); it is old when none of its files was read or written within the age limit
# (atime: Linux's relatime updates it at least once a day on use).

# the folders written under the cache root, each by one part: the generated code and build records
# (this module, models/buildcache.py), the solver cores and COLAMD orderings (solver/_ccore.py,
# solver/bdf.py), the compiler's and CPU's facts (solver/native.py), the URDFs converted for
# /robot_description (mechanism/urdf.py), the launch files' RViz views (ros/launch_support.py),
# the IDA builds of benchmarks/c_ida.py and the images of `simulate` runs (solver/ahead.py).
# Nothing else in the root is touched: it may be a folder the user named with $BONDSIM_CACHE_DIR.
FOLDERS = ("models", "solver", "host", "urdf", "rviz", "c_ida", "runs")


def _groups(root: Path) -> dict:
    """(folder, entry) -> the paths of one entry (files, or one subfolder)."""
    groups: dict = {}
    for folder in FOLDERS:
        base = root / folder
        if not base.is_dir():
            continue
        for path in base.iterdir():
            if path.name.startswith("."):  # a file or build folder being written (native.build_library)
                continue
            if path.is_dir() and not path.is_symlink():
                groups[(folder, path.name + os.sep)] = [path]
                continue
            if not path.is_file():
                continue
            name = path.name
            stem = name[:26] if name.startswith("m_") else name.rsplit(".", 1)[0]  # m_ + 24-digit key
            groups.setdefault((folder, stem), []).append(path)
    return groups


def _files(paths) -> list:
    """(path, os.stat_result) of every file of an entry, those in its subfolder included."""
    found = []
    for p in paths:
        if p.is_dir() and not p.is_symlink():
            found += [Path(folder, n) for folder, _, names in os.walk(p) for n in names]
        else:
            found.append(p)
    out = []
    for f in found:
        try:
            out.append((f, f.lstat()))
        except OSError:
            continue
    return out


def _last_use(paths) -> float:
    return max((max(st.st_atime, st.st_mtime) for _, st in _files(paths)), default=0.0)


def usage(root: Path | None = None) -> dict:
    """``{folder: (files, bytes)}`` of the cache under ``root`` (default: ``native.cache_root()``)."""
    from bondsim_ros.solver import native

    root = Path(root) if root is not None else native.cache_root()
    out: dict = {}
    for (folder, _), paths in _groups(root).items():
        stats = _files(paths)
        files, size = out.get(folder, (0, 0))
        out[folder] = (files + len(stats), size + sum(st.st_size for _, st in stats))
    return out


def remove(older_than: float | None, root: Path | None = None, now: float | None = None) -> tuple:
    """Delete the entries not used for ``older_than`` seconds (all of them when None); the most
    recently used solver core is always kept. Returns (files, bytes) removed. Safe while other
    processes run: a loaded library stays mapped, and an entry removed before a process reads
    it is built again."""
    import shutil
    import time

    from bondsim_ros.solver import native

    root = Path(root) if root is not None else native.cache_root()
    now = time.time() if now is None else now
    groups = _groups(root)
    cores = sorted((g for g in groups if g[0] == "solver" and g[1].startswith("bdf_core")),
                   key=lambda g: _last_use(groups[g]))
    keep = set(cores[-1:]) if older_than is not None else set()
    files = size = 0
    for key, paths in groups.items():
        if key in keep or (older_than is not None and now - _last_use(paths) < older_than):
            continue
        stats = _files(paths)
        for p in paths:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    p.unlink()
        gone = [st for f, st in stats if not os.path.lexists(f)]
        files, size = files + len(gone), size + sum(st.st_size for st in gone)
    return files, size


__all__ = ["cache_dir", "entry_paths", "is_cached", "atomic_write", "KeyLock", "FOLDERS", "KERNEL_CFLAGS",
           "LARGE_KERNEL_CFLAGS", "LARGE_SOURCE", "kernel_flags",
           "compile_library", "usage", "remove"]
