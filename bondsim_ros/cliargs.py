"""What every sub-command shares with the ``bondsim-ros`` entry point: the user-facing error and
the parsing of repeatable NAME=VALUE options. A bottom-layer module, so that the command modules
beside each layer import it without importing the command line (which loads them)."""
from __future__ import annotations

import gc


class CLIError(Exception):
    """A user-facing error: printed without a traceback, exit status ``status`` (2: the input
    was refused)."""

    status = 2


class RunFailed(CLIError):
    """A run that could not be finished with valid input (the solver gave up): exit status 1,
    as a sweep or a fit with failed runs, so that a script tells it from a refused input."""

    status = 1


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a job scheduler's stop) in a program run: raised where Python runs
    next, so that the command cleans up as for Ctrl-C (no staged output left behind), then
    exits 143 (128 + SIGTERM), as a process ended by the signal."""


class CollectorPause:
    """The cyclic garbage collector off while a program run starts, then on again for the run
    (:meth:`end`) with what the start made frozen (``gc.freeze``: left out of every later pass).
    The imports (numpy's among them) and the model's set-up make tens of thousands of objects
    that live to the end; the collector's passes over them were 47 collections and some 8 ms of
    a warm ``simulate robotino``. Only in a program run: a caller of ``main(argv)`` owns its
    collector."""

    def __init__(self, program_run: bool):
        self.active = bool(program_run) and gc.isenabled()
        if self.active:
            gc.disable()

    def end(self) -> None:
        if self.active:
            self.active = False
            gc.freeze()
            gc.enable()


def number(text: str) -> float:
    """``float(text)`` of a number as written on a command line: ValueError also for digits
    grouped by underscores (``1_0``), Python's literal syntax that ``float`` takes as 10, and
    for digits other than ASCII's (``float`` reads the Arabic-Indic ``١٢`` as 12)."""
    if "_" in text or not text.isascii():
        raise ValueError(f"could not convert string to float: {text!r}")
    return float(text)


def integer(text: str) -> int:
    """``int(text)`` of a whole number as written on a command line, refusing what ``number``
    refuses (``1_0``, which ``int`` takes as 10, and digits other than ASCII's)."""
    if "_" in text or not text.isascii():
        raise ValueError(f"invalid literal for int() with base 10: {text!r}")
    return int(text)


def check_folders(paths, option: str) -> None:
    """Refuse a folder option (--search-path) naming no folder: it would be searched in vain."""
    import os

    for path in paths:
        if not os.path.isdir(path):
            raise CLIError(f"{option} {path}: {'not a folder' if os.path.exists(path) else 'no such folder'}")


def assignments(items, what: str, parse=number, form: str = "NAME=VALUE") -> dict:
    """``["a=1", "b=2"]`` -> ``{"a": parse("1"), ...}`` for the repeatable NAME=VALUE options
    (--param, --guess, --bounds, --weight); a malformed item, or a name given twice (which value
    would the user mean?), is a CLIError naming it."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            parsed = parse(value)
        except ValueError:
            raise CLIError(f"{what} expects {form}, got {item!r}") from None
        if name.strip() in out:
            raise CLIError(f"{what.split()[0]} {name.strip()}: given twice")
        out[name.strip()] = parsed
    return out


# SolverOptions field -> its command-line flag (every command that runs the solver takes them)
SOLVER_FLAGS = {"rtol": "--rtol", "atol": "--atol", "hmax": "--hmax", "max_order": "--max-order"}


def add_solver_flags(parser, defaults=None) -> None:
    """--rtol, --atol, --hmax and --max-order on ``parser``, their defaults ``defaults``' (a
    SolverOptions; None: SolverOptions()); ``solver_options(args)`` makes them one SolverOptions."""
    from bondsim_ros.solver.options import HMAX_MIN, MAX_ORDER, RTOL_MAX, RTOL_MIN, SolverOptions

    d = SolverOptions() if defaults is None else defaults
    parser.add_argument("--rtol", type=number, default=d.rtol,
                        help=f"solver relative tolerance, in [{RTOL_MIN:.3g}, {RTOL_MAX:g}] (default {d.rtol:g})")
    parser.add_argument("--atol", type=number, default=d.atol,
                        help=f"solver absolute tolerance, > 0 (default {d.atol:g})")
    parser.add_argument("--hmax", type=number, default=d.hmax,
                        help=f"largest step [s], >= {HMAX_MIN:.3g}, the solver's smallest (default {d.hmax:g})")
    parser.add_argument("--max-order", type=integer, default=d.max_order,
                        help=f"highest BDF order, 1..{MAX_ORDER} (default {d.max_order})")
    parser.set_defaults(solver_defaults=d)


def solver_options(args):
    """The SolverOptions of the flags ``add_solver_flags`` added; a value out of range is a
    CLIError naming its flag."""
    from bondsim_ros.solver.options import SolverOptionError

    given = {name: getattr(args, name) for name in SOLVER_FLAGS}
    try:
        options = args.solver_defaults.replace(**given)
    except SolverOptionError as exc:
        value = given[exc.field]
        raise CLIError(f"{SOLVER_FLAGS[exc.field]} must be {exc.allowed}, got {value:g}") from None
    return options
