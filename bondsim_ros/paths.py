"""Where the package's data folders (config/, urdf/, launch/) are, however it was installed, and
where it caches what it generates."""
from __future__ import annotations

import sys
from pathlib import Path


def share_file(*parts: str) -> Path:
    """``config/robotino.yaml`` and the like: from the source tree (editable installs, tests),
    the ROS share folder (colcon), or the pip prefix's share folder (data_files)."""
    source = Path(__file__).resolve().parents[1]
    # installed, that folder is site-packages (dist-packages: Debian's), where a stray config/
    # or urdf/ must not shadow the share folder
    candidates = [] if source.name in ("site-packages", "dist-packages") else [source.joinpath(*parts)]
    try:
        from ament_index_python.packages import get_package_share_directory

        candidates.append(Path(get_package_share_directory("bondsim_ros")).joinpath(*parts))
    except Exception:  # noqa: BLE001 - not a ROS install, or the package is not indexed there
        pass
    candidates.append(Path(sys.prefix, "share", "bondsim_ros").joinpath(*parts))
    for c in candidates:
        if c.exists():
            return c
    raise FileNotFoundError(f"{'/'.join(parts)} not found (looked in: {', '.join(map(str, candidates))})")


def cache_root() -> Path:
    """``$BONDSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/bondsim_ros``, else ``~/.cache/bondsim_ros``,
    for the generated URDFs and RViz views: the rule of the generated code's cache, kept once in
    the bottom layer (solver/native.py; imported here on use, not by every importer of paths)."""
    from bondsim_ros.solver.native import cache_root as root

    return root()
