"""The ``bondsim-ros`` command line.

Each sub-command lives next to the layer it drives and registers itself through a
``register(subparsers)`` function; heavy imports happen inside the handlers so that
``bondsim-ros --help`` stays fast.
"""
from __future__ import annotations

import importlib
import os
import re
import sys

from bondsim_ros.cliargs import CLIError, Terminated

# Modules that contribute sub-commands, in the order they appear in --help.
COMMAND_MODULES = [
    "bondsim_ros.model_commands",  # simulate, draw, models
    "bondsim_ros.mechanism.commands",  # xml2urdf
    "bondsim_ros.render_commands",  # render
    "bondsim_ros.ros.commands",  # up, demo, fleet
    "bondsim_ros.fit.commands",  # fit
    "bondsim_ros.sweep.commands",  # sweep
    "bondsim_ros.cache_commands",  # cache
]

# The sub-command -> the module of COMMAND_MODULES that registers it (a test keeps the two in
# step). A run of one command registers that module alone: the others' imports and argparse
# calls cost 15-20 ms, a tenth of a warm `simulate`.
COMMANDS = {
    "simulate": "bondsim_ros.model_commands", "draw": "bondsim_ros.model_commands",
    "models": "bondsim_ros.model_commands", "robots": "bondsim_ros.model_commands",
    "xml2urdf": "bondsim_ros.mechanism.commands", "render": "bondsim_ros.render_commands",
    "up": "bondsim_ros.ros.commands", "demo": "bondsim_ros.ros.commands", "fleet": "bondsim_ros.ros.commands",
    "fit": "bondsim_ros.fit.commands", "bag2csv": "bondsim_ros.fit.commands",
    "sweep": "bondsim_ros.sweep.commands",
    "cache": "bondsim_ros.cache_commands",
}


# The sub-commands that build or load compiled code (the models' kernels, the solver core): a
# cache folder that cannot hold it is refused before they start. The others (cache among them:
# it lists and removes) neither need the folder nor make it.
COMPILED_CODE = {"simulate", "fit", "sweep", "up", "demo", "fleet"}


def _terminate(signum, frame):
    raise Terminated()


def build_parser(command: str | None = None):
    """The parser of every sub-command, or of ``command``'s module alone (a known command: its
    usage, help and errors are the same either way)."""
    # argparse is imported by _parser_class, not at the top: argparse (with gettext, 2.5 ms)
    # comes after a repeated simulate's solve has started ahead (main)
    parser = _parser_class()(
        prog="bondsim-ros",
        description="Bond-graph digital twins: simulate models, convert mechanisms, run the ROS 2 graph.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    only = COMMANDS.get(command) if command else None
    for name in COMMAND_MODULES:
        if only is not None and name != only:
            continue
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue  # that layer has no commands yet
            raise
        module.register(sub)
    parser.command_parsers = sub.choices  # name -> its parser, for errors in its own words (main)
    for p in [parser, *sub.choices.values()]:
        _negative_numbers_are_values(p)
    return parser


_PARSER = None
_GIVEN = "_bondsim_options_given"  # the namespace's record of the single-valued options stored in it


def _parser_class():
    """argparse.ArgumentParser whose single-valued options (``store``: every option that is no
    flag and not repeatable by ``append``) refuse a second occurrence, however written (``--csv=a``,
    an abbreviation ``--cs``, ``-o`` for ``--output``): argparse would keep the last one silently.
    Sub-command parsers are of the same class (``add_subparsers``' default), so a new option is
    covered without being named here."""
    global _PARSER
    if _PARSER is not None:
        return _PARSER
    import argparse

    class StoreOnce(argparse._StoreAction):
        def __call__(self, parser, namespace, values, option_string=None):
            given = vars(namespace).setdefault(_GIVEN, {})
            if self.dest in given:
                raise argparse.ArgumentError(self, f"given twice ({_shown(given[self.dest])}, then {_shown(values)}): "
                                                   f"give it once")
            given[self.dest] = values
            super().__call__(parser, namespace, values, option_string)

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.register("action", None, StoreOnce)
            self.register("action", "store", StoreOnce)

        def parse_known_args(self, args=None, namespace=None):
            namespace, extra = super().parse_known_args(args, namespace)
            vars(namespace).pop(_GIVEN, None)  # parsing's own record, no option of the command
            return namespace, extra

    _PARSER = Parser
    return Parser


def _shown(value) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


# argparse (before Python 3.14) takes "-5" and "-.5" for values but "-1e-6" for an option ("--rtol
# -1e-6": "expected one argument"); with exponents too, a negative number always reaches the
# option's own range check. Added to argparse's own pattern, which newer versions widen themselves
_NEGATIVE_NUMBER = r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$"


def _negative_numbers_are_values(parser) -> None:
    own = getattr(parser, "_negative_number_matcher", None)  # (argparse's attribute since Python 3.2)
    if own is not None:
        parser._negative_number_matcher = re.compile(f"(?:{own.pattern})|(?:{_NEGATIVE_NUMBER})")


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C or SIGTERM anywhere in the command, its start-up too (the solve started ahead, the
    # parser, the cache check): one word and the shell's status, no traceback
    try:
        return _main(argv)
    except Terminated:
        _ended(argv, 143)
        print("terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        _ended(argv, 130)
        print("interrupted", file=sys.stderr)
        return 130


def _ended(argv, status: int) -> None:
    """A program run ends on a signal: one more Ctrl-C or SIGTERM while the interpreter tears down
    killed it by that signal (status -2, a traceback of the teardown) instead of the status it
    reports. It now ends the exit at once with that status (what a second Ctrl-C asks for)."""
    if argv is None:
        import _signal

        def now(signum, frame):
            os._exit(status)

        _signal.signal(_signal.SIGINT, now)
        _signal.signal(_signal.SIGTERM, now)


def _main(argv: list[str] | None) -> int:
    if argv is None:
        # a program run: SIGTERM raises Terminated from the start (main reports it). Through
        # _signal, which the interpreter has loaded already: signal's import (0.6 ms) would
        # delay the solve started ahead
        import _signal

        _signal.signal(_signal.SIGTERM, _terminate)
    if "numpy" not in sys.modules:
        # a program run: one BLAS thread. The package's matrices are tiny (consistent
        # initialisation, n <= a few hundred); OpenBLAS's extra thread only spins (0.08 s of
        # a 0.75 s warm `simulate robotino`). A user's own setting wins.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    words = sys.argv[1:] if argv is None else argv
    # a command that ran before, unchanged: its solve starts now, from the image that run left,
    # on the second core while numpy and the package are imported (solver/ahead.py)
    ahead = _start_ahead(words) if argv is None else None
    parser = build_parser(words[0] if words else None)
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse names them under the top-level usage; the sub-command's usage is what helps
        where = parser.command_parsers.get(getattr(args, "command", None)) or parser
        where.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    args.program_run = argv is None  # the console script or `python -m`: the process is the command's
    args.ahead = ahead
    if args.command in COMPILED_CODE:
        from bondsim_ros.solver import native

        try:
            native.check_cache_root()
        except native.NativeBuildError as exc:
            print(f"bondsim-ros {args.command}: error: {exc}", file=sys.stderr)
            return 2
    if argv is None and getattr(args, "solver_core", False):
        # a first run where the install compiled no solver core: gcc builds it (about 1 s) from now on, while
        # numpy is imported and the model built, not only once the model is being built. Only
        # in a program run: its exit waits for the build (_exit_now); a caller of main(argv)
        # gets it built where it is needed.
        from bondsim_ros.solver import _ccore

        _ccore.prebuild()
    try:
        code = int(args.func(args) or 0)
    except CLIError as exc:
        print(f"bondsim-ros {args.command}: error: {exc}", file=sys.stderr)
        code = exc.status
    except BrokenPipeError:
        # `bondsim-ros models | head`: the reader left; no traceback, and none again when
        # Python flushes stdout at exit (point it at devnull, as the Python docs advise)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 141
    except ImportError as exc:
        # an optional dependency the command needs is not installed, or cannot load its libraries
        # (rclpy outside a sourced ROS install): which one, and how to get it, without a traceback
        message = missing_dependency(exc)
        if message is None:
            raise  # a module of the package itself, or a dependency every install has: a bug
        print(f"bondsim-ros {args.command}: error: {message}", file=sys.stderr)
        code = 1
    except Exception as exc:
        # no C compiler, or it refused the solver core or a model's kernels: say so without a
        # traceback (native is in sys.modules whenever one of its errors can have been raised;
        # looked up there so that the CLI does not import numpy for every command)
        native = sys.modules.get("bondsim_ros.solver.native")
        if native is None or not isinstance(exc, native.NativeBuildError):
            raise
        print(f"bondsim-ros {args.command}: error: {exc}", file=sys.stderr)
        code = 1
    if argv is None and getattr(args, "fast_exit", False):
        _exit_now(code)
    return code


def _start_ahead(words):
    """The solve of a ``simulate`` command started from its last identical run's image (an
    ``ahead.Ahead``), None for other commands and with --no-cache."""
    if words[:1] != ["simulate"] or "--no-cache" in words:
        return None
    from bondsim_ros.solver import ahead

    return ahead.start(words)


# The optional dependencies (setup.py's extras) by top-level module. The ROS 2 Python packages
# (rclpy, the interface packages) come with a sourced ROS install as well as with the ros extra.
EXTRA_OF_MODULE = {
    "rclpy": "ros", "rpyutils": "ros", "rosbags": "ros", "ament_index_python": "ros", "launch": "ros",
    "launch_ros": "ros",
    "transforms3d": "mechanism", "yourdfpy": "mechanism", "trimesh": "mechanism", "defusedxml": "mechanism",
    "imageio_ffmpeg": "mechanism", "xacro": "mechanism",
    "foxglove": "foxglove", "websockets": "foxglove",
    "dask": "cluster", "distributed": "cluster",
}


def _extra_of(module) -> str | None:
    top = module.partition(".")[0] if isinstance(module, str) else ""
    if top in EXTRA_OF_MODULE:
        return EXTRA_OF_MODULE[top]
    return "ros" if top.endswith(("_msgs", "_srvs", "_interfaces")) else None  # ROS interface packages


def missing_dependency(exc: ImportError) -> str | None:
    """What to tell a user whose command failed on ``exc``: the optional dependency that is
    missing or did not load, and the extra that brings it; None when the import that failed is
    not one of an extra's (the package's own modules: a bug, shown with its traceback). The
    module is the one the error names, else the one whose import raised it: rclpy's C extension
    that cannot find its libraries names only itself (``_rclpy_pybind11``)."""
    extra = None
    cause = exc
    while cause is not None and extra is None:  # the error, then what it was raised from
        extra = _extra_of(getattr(cause, "name", None))
        cause = cause.__cause__ if isinstance(cause.__cause__, ImportError) else None
    tb = exc.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame.f_globals.get("__name__"))
        tb = tb.tb_next
    for name in reversed(frames):  # the innermost frame of an optional dependency's code
        if extra is not None:
            break
        extra = _extra_of(name)
    if extra is None:
        return None
    what = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if extra == "ros":
        return (f"{what}: the ROS 2 Python packages are missing or cannot load their libraries. Run the command "
                f"where a ROS 2 install (Jazzy or Kilted) is sourced, or install the package with its ros extra "
                f"(pip install 'bondsim_ros[ros]'; tools/setup.sh installs every extra)")
    return (f"{what}: this command needs the package's {extra} extra (pip install 'bondsim_ros[{extra}]'; "
            f"tools/setup.sh installs every extra; on a ROS install, rosdep install --from-paths src)")


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown (0.25-0.35 s after a simulation:
    freeing numba's and numpy's objects one by one). Only for a whole program run (``argv``
    None: the console script, ``python -m``) of a command that sets ``fast_exit``: one that
    has closed every file it wrote and leaves no thread or child behind."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken pipe: let the normal exit report it
        return
    core = sys.modules.get("bondsim_ros.solver._ccore")
    if core is not None:  # a first build of the solver core still running (a failed model build)
        core.wait_prebuild()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
