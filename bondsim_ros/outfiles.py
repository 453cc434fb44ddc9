"""Output files of the commands: checked before the work, written whole or not at all.

A command checks every output path it was given before it starts (a missing folder, a folder
given as a file, an unwritable place are usage errors, exit status 2, and cost no computing
time); then each file is written under a temporary name in its folder and renamed into place,
so a failure (full disk, interrupt) never leaves a half-written file under the real name.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from bondsim_ros.cli import CLIError


class OutputError(CLIError):
    """An output path that cannot be written (exit status 2)."""


def check_output(path, option: str, *, make_folder: bool = False) -> Path:
    """``path`` if a file can be written there; else OutputError naming ``option`` and the reason.
    ``make_folder``: a missing folder will be created by the command (then its nearest existing
    ancestor must be a writable folder)."""
    path = Path(path)
    label = f"{option} {path}" if option else str(path)
    if str(path) in ("", "."):
        raise OutputError(f"{label}: not a file name")
    if path.is_dir():
        raise OutputError(f"{label}: is a directory (give a file name)")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.exists():
        if not make_folder:
            raise OutputError(f"{label}: the folder {folder} does not exist")
        probe = folder
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not probe.is_dir():
            raise OutputError(f"{label}: {probe} is not a folder")
        folder = probe
    elif not folder.is_dir():
        raise OutputError(f"{label}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{label}: the folder {folder} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(f"{label}: the file is not writable")
    return path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path`` (same suffix, so writers that look at it still
    work); on success it replaces ``path``, on any error it is removed."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix or ".tmp", dir=path.parent or ".")
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; the result gets the usual mode
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


__all__ = ["OutputError", "check_output", "atomic_path", "write_text_atomic"]
