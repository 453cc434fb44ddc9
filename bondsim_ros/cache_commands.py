"""``bondsim-ros cache``: where the cache lives, how much each of its folders holds, and removing
old entries (bondgraph/cache.py: ``FOLDERS``)."""
from __future__ import annotations

from bondsim_ros.cliargs import number


def register(sub) -> None:
    c = sub.add_parser("cache", help="show the cache (generated code, solver cores, converted URDFs, ...); "
                                     "remove old entries",
                       description="Show the cache ($BONDSIM_CACHE_DIR, else $XDG_CACHE_HOME/bondsim_ros, else "
                                   "~/.cache/bondsim_ros) folder by folder: models (generated code, build records), "
                                   "solver (solver cores, orderings), host (compiler and CPU facts), urdf "
                                   "(mechanisms converted for /robot_description), rviz (the launch files' RViz "
                                   "views), c_ida (benchmarks/c_ida.py's IDA builds), runs (the solver images a "
                                   "`simulate` starts its solve from when run again). Entries are rebuilt on demand, "
                                   "so removing them costs only build time; nothing else in the folder is touched.")
    what = c.add_mutually_exclusive_group()
    what.add_argument("--prune", action="store_true",
                      help="remove entries not used for --older-than days (the newest solver core stays)")
    what.add_argument("--clear", action="store_true", help="remove every entry")
    c.add_argument("--older-than", type=number, default=None, metavar="DAYS", help="age limit of --prune (default 30)")
    c.set_defaults(func=cmd_cache)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def cmd_cache(args) -> int:
    from bondsim_ros.bondgraph import cache
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.solver import native

    if args.older_than is not None:
        if not args.older_than >= 0 or args.older_than == float("inf"):
            raise CLIError(f"--older-than {args.older_than}: expected a finite number of days >= 0")
        if not args.prune:
            raise CLIError("--older-than is the age limit of --prune (--clear removes every entry)")
    older_than = 30.0 if args.older_than is None else args.older_than
    root = native.cache_root()
    core = _core_found()
    if args.prune or args.clear:
        files, size = cache.remove(None if args.clear else older_than * 86400.0, root)
        print(f"removed {files} files ({_mb(size)}) from {root}")
    print(root)
    for folder, (files, size) in sorted(cache.usage(root).items()):
        print(f"  {folder:8s} {files:6d} files {_mb(size):>10s}")
    print(f"solver core: {_core_text(core)}")
    return 0


def _core_found():
    """``_ccore.located()``, or the NativeBuildError that says why no core can be named. Found
    without writing: naming the core asks the compiler and the CPU, whose answers a build keeps
    in host/ (native.read_only); the listing only reads the cache, and makes no folder for it."""
    from bondsim_ros.solver import _ccore, native

    try:
        with native.read_only():
            return _ccore.located()
    except native.NativeBuildError as exc:
        return exc


def _core_text(found) -> str:
    """Which solver core a simulation loads now, and from where: the install's survives
    --clear, one in the cache does not (the next simulation compiles it again)."""
    if isinstance(found, Exception):
        return f"none ({found})"
    if found is None or not found[0].exists():
        return "not compiled for this machine yet; the first simulation compiles it into the cache"
    path, installed, for_this_cpu, klu = found
    where = "installed with the package" if installed else "in the cache"
    build = ("for this CPU (-march=native)" if for_this_cpu else "portable") + \
        (", sparse LU by KLU" if klu else ", sparse LU of its own")
    return f"{where}, {build}: {path}"


__all__ = ["register"]
