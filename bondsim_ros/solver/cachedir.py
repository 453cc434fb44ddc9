"""Where the package caches what it generates, as a plain string: read by the command line before
anything else is imported (``ahead`` looks there for the image of a run), and by ``native``; and
how the solver layer writes a file there."""
import os


def cache_root() -> str:
    """``$BONDSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/bondsim_ros``, else ``~/.cache/bondsim_ros``."""
    return os.environ.get("BONDSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bondsim_ros")


def write_whole(path, data: bytes) -> bool:
    """Write ``data`` to ``path`` (its folder made if missing) through a temporary file renamed
    into place, so that a reader sees the old file, the new one or none; False when it could not
    be written (a read-only or full cache: the caller computes it again next time)."""
    path = os.fspath(path)
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
