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


def compile_library(name: str, src_path: Path, source: str, folder: Path) -> Path:
    """Compile the C ``source`` of model ``name`` into a library in ``folder`` named after
    ``src_path``; a compiler failure is a ModelError naming the model."""
    from bondsim_ros.solver import native

    try:
        return native.build_library(source, src_path.stem, folder, extra_flags=KERNEL_CFLAGS, what=f"model {name!r}")
    except native.NativeBuildError as exc:
        text = str(exc).strip()
        raise ModelError(name, f"the generated code does not compile ({text})") from None


__all__ = ["cache_dir", "entry_paths", "is_cached", "atomic_write", "KeyLock", "KERNEL_CFLAGS",
           "compile_library"]
