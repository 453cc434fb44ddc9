"""Output files of the commands: checked before the work, written whole or not at all.

One rule for every file a command writes, whatever writes it (CSV, JSON, YAML, URDF, a
matplotlib figure, a PNG, GIF or MP4, Graphviz's output):

* A regular file, or a path that does not exist yet, is written under a temporary name in its
  own folder and renamed into place once complete, so a failure (full disk, interrupt, a writer
  that raises) never leaves a half-written file under the real name; the temporary file is
  removed. A file that is replaced keeps its permission bits.
* A symbolic link is followed: its target is replaced as above and the link stays a link.
* A character device, FIFO or socket (``/dev/null``, ``/dev/stdout``, a named pipe another
  program reads) is written to, never replaced: the writer works on a temporary file (writers
  that seek, such as MP4 muxers and PDF, need one), whose bytes are then copied into it.
* ``-`` is standard output, for the options that allow it (``stdout_ok``); elsewhere it is
  refused rather than taken as a file named ``-`` (``./-`` names that file).

A command checks every output path it was given before it starts (a missing folder, a folder
given as a file, an unwritable place, one of the command's own input files or a path inside an
input folder are usage errors, exit status 2, and cost no computing time). A write that fails
(``/dev/full``: no space left on device) is an :class:`OutputError` naming the option and the
path, also exit status 2.
"""
from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
import tempfile
from pathlib import Path

from bondsim_ros.cliargs import CLIError

STDOUT = "-"


class OutputError(CLIError):
    """An output path that cannot be written (exit status 2)."""


def _label(path, option: str) -> str:
    return f"{option} {path}" if option else str(path)


def _kind(path) -> str:
    """``"stdout"``, ``"stream"`` (written to in place) or ``"file"`` (replaced atomically; a
    path that does not exist yet, or whose folder does not, is a file)."""
    if str(path) == STDOUT:
        return "stdout"
    try:
        mode = os.stat(path).st_mode  # follows symlinks: a link to /dev/null is a stream
    except (FileNotFoundError, NotADirectoryError):
        return "file"
    return "file" if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "stream"


def is_stream(path) -> bool:
    """``path`` is standard output (``-``), a device, FIFO or socket: written to, never replaced."""
    try:
        return _kind(path) != "file"
    except OSError:
        return False


def real_file(path) -> Path:
    """Where a file written at ``path`` lands: the target of a symbolic link (followed through
    every link in the chain; a dangling link's target is created), else ``path`` itself."""
    path = Path(path)
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def _input_hit(real: Path, inputs) -> str | None:
    """The input of ``inputs`` (files or folders, such as a bag) that a file written at ``real``
    would replace or land in, if any."""
    target = os.path.realpath(real)
    for item in inputs:
        if not item or str(item) == STDOUT:
            continue
        try:
            if os.path.isdir(item):
                folder = os.path.realpath(item)
                if os.path.commonpath([folder, target]) == folder:
                    return str(item)
            elif os.path.exists(real) and os.path.samefile(real, item):
                return str(item)
        except (OSError, ValueError):
            continue
    return None


def check_not_built_from(path, option: str, built_from) -> None:
    """OutputError when a file written at ``path`` would replace one of ``built_from`` (the real
    paths of the files a model was built from: its parameter files, the modules a model file
    imports; models/buildcache.py lists them). One real path and a look-up: the warm path's
    record lists the package's modules too."""
    if not built_from or str(path) == STDOUT:
        return
    target = os.path.realpath(real_file(path))
    if target in built_from:
        shown = target if os.path.islink(path) else path  # a link: the file it would replace
        raise OutputError(f"{_label(path, option)}: refusing to overwrite {shown}, a file the model is built from")


def check_output(path, option: str, *, stdout_ok: bool = False, inputs=(), built_from=()) -> Path:
    """``path`` if a file can be written there, in a folder that exists; else OutputError naming
    ``option`` and the reason. ``stdout_ok``: ``-`` means standard output. ``inputs``: the files
    and folders the command reads, which no output may replace or land in; ``built_from``: the
    real paths of the files the command's model was built from (a set or dict), which no output
    may replace either."""
    label = _label(path, option)
    if str(path) == STDOUT:
        if stdout_ok:
            return Path(STDOUT)
        raise OutputError(f"{label}: this output cannot go to standard output (give a file name; ./- for a "
                          f"file named -)")
    path = Path(path)
    if str(path) in ("", "."):
        raise OutputError(f"{label}: not a file name")
    try:
        kind = _kind(path)
    except OSError as exc:  # a symlink loop, a path component that cannot be searched
        raise OutputError(f"{label}: {exc.strerror or exc}") from None
    if kind == "stream":
        if not os.access(path, os.W_OK):
            raise OutputError(f"{label}: not writable")
        return path
    if path.is_dir():
        raise OutputError(f"{label}: is a directory (give a file name)")
    real = real_file(path)
    hit = _input_hit(real, inputs)
    if hit is not None:
        what = "write inside" if os.path.isdir(hit) else "overwrite"
        raise OutputError(f"{label}: refusing to {what} {hit}, an input of this command")
    check_not_built_from(path, option, built_from)
    folder = real.parent if str(real.parent) else Path(".")
    if not folder.exists():
        raise OutputError(f"{label}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputError(f"{label}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{label}: the folder {folder} is not writable")
    if real.exists() and not os.access(real, os.W_OK):
        raise OutputError(f"{label}: the file is not writable")
    return path


class Output:
    """One output under the module's rule, in three steps: :meth:`stage` gives the path the
    writer writes to, :meth:`commit` puts it in place (rename, or copy into a stream),
    :meth:`discard` drops it. For commands that write several files and put none in place
    unless all were written (``simulate --csv --plot``, ``xml2urdf``)."""

    def __init__(self, path, option: str = "", *, stdout_ok: bool = False):
        self.path = Path(path)
        self.label = _label(path, option)
        self.kind = _kind(path)
        if self.kind == "stdout" and not stdout_ok:
            raise OutputError(f"{self.label}: this output cannot go to standard output (give a file name)")
        self.tmp: Path | None = None

    def stage(self) -> Path:
        """A new empty temporary file with the output's suffix (writers that choose the format
        by the name see the same one): beside the real file, or in the temporary folder for a
        stream."""
        if self.tmp is not None:
            return self.tmp
        name = self.path.name if self.kind != "stdout" else "stdout"
        # "-" is CSV on standard output for every command that takes it: a writer that picks its
        # format by the name (sweep's table) sees .csv
        suffix = self.path.suffix if self.kind != "stdout" else ".csv"
        if self.kind == "file":
            real = real_file(self.path)
            folder = real.parent if str(real.parent) else Path(".")
            try:  # a folder that takes no new file (/proc) although it looked writable
                fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=suffix, dir=folder)
            except OSError as exc:
                raise OutputError(f"{self.label}: cannot write: {exc.strerror or exc}") from None
            try:
                mode = stat.S_IMODE(os.stat(real).st_mode)  # a replaced file keeps its mode
            except OSError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask  # mkstemp makes it private; a new file gets the usual mode
            os.fchmod(fd, mode)
        else:
            fd, tmp = tempfile.mkstemp(prefix=f"bondsim-{name}.", suffix=suffix)
        os.close(fd)
        self.tmp = Path(tmp)
        return self.tmp

    def write(self, writer) -> None:
        """``writer(path)`` into the staged file (staged now if it was not); a failed write (disk
        full) is OutputError naming the output, as a failed commit is."""
        try:
            writer(self.stage())
        except OSError as exc:
            raise OutputError(f"{self.label}: cannot write: {exc.strerror or exc}") from None

    def commit(self) -> None:
        """Put the staged file in place; OutputError (nothing left behind) if that fails."""
        tmp, self.tmp = self.tmp, None
        if tmp is None:
            raise RuntimeError("Output.commit() without stage()")
        try:
            if self.kind == "file":
                os.replace(tmp, real_file(self.path))
            elif self.kind == "stdout":
                _copy_to_stdout(tmp)
            else:
                _copy_to_stream(tmp, self.path)
        except BrokenPipeError:
            if self.kind == "stdout":
                raise  # the reader left: the CLI's quiet exit (`... --csv - | head`)
            raise OutputError(f"{self.label}: cannot write: the reading end of the pipe was closed") from None
        except OSError as exc:
            raise OutputError(f"{self.label}: cannot write: {exc.strerror or exc}") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # renamed away already, or copied

    def discard(self) -> None:
        tmp, self.tmp = self.tmp, None
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _write_all(fd: int, src: Path) -> None:
    with open(src, "rb") as fh:
        while chunk := fh.read(1 << 16):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]


def _copy_to_stream(src: Path, path: Path) -> None:
    # no O_CREAT: the device or pipe is written, never a file made in its place
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        _write_all(fd, src)
    finally:
        os.close(fd)


def _copy_to_stdout(src: Path) -> None:
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):  # replaced by a text buffer
        sys.stdout.write(Path(src).read_bytes().decode("utf-8", errors="replace"))
        sys.stdout.flush()
        return
    _write_all(fd, src)


@contextlib.contextmanager
def output_path(path, option: str = "", *, stdout_ok: bool = False):
    """Yield the path a writer writes ``path`` through (see the module's rule); put in place when
    the block ends without error, removed when it raises."""
    out = Output(path, option, stdout_ok=stdout_ok)
    tmp = out.stage()
    try:
        yield tmp
    except BaseException:
        out.discard()
        raise
    out.commit()


def write_text_atomic(path, text: str, option: str = "") -> Path:
    with output_path(path, option) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


__all__ = ["OutputError", "Output", "STDOUT", "check_not_built_from", "check_output", "is_stream", "output_path",
           "real_file", "write_text_atomic"]
