"""Where the package caches what it generates, as a plain string: read by the command line before
anything else is imported (``ahead`` looks there for the image of a run), and by ``native``."""
import os


def cache_root() -> str:
    """``$BONDSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/bondsim_ros``, else ``~/.cache/bondsim_ros``."""
    return os.environ.get("BONDSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bondsim_ros")
