"""``bondsim-ros sweep``: one simulation per point of a parameter grid, in parallel, to one table."""
from __future__ import annotations

from bondsim_ros.cliargs import integer, number

import math
import sys


def register(sub) -> None:
    from bondsim_ros.cliargs import add_solver_flags

    p = sub.add_parser(
        "sweep", help="simulate a model over a parameter grid in parallel (local cores or a Dask cluster)",
        description="Simulate MODEL once per combination of the --param values (their Cartesian product) and "
                    "write one row per run: the run's index, its parameters, status (ok, failed, cancelled), "
                    "the failure's message, its wall time and the chosen outputs (by default every output "
                    "column's final value). Each run is the same computation as `bondsim-ros simulate MODEL "
                    "--param ...` with the same options. A run that fails is reported in its row and the "
                    "sweep goes on. Exit status 0 when every run succeeded, 1 when some failed (the table is "
                    "written), 2 for bad input, 130 on Ctrl-C and 143 on SIGTERM (the table is written, "
                    "unfinished runs marked cancelled).")
    p.add_argument("model", metavar="MODEL", help="built-in model name, .yaml or .py model file")
    p.add_argument("--param", action="append", default=[], metavar="NAME=SPEC", required=True,
                   help="values of a run-time parameter: START:STOP:COUNT (COUNT values evenly spaced, both ends "
                        "included), V1,V2,... or one VALUE; repeat for a grid over several parameters")
    p.add_argument("-o", "--output", required=True, metavar="OUT.csv|OUT.npz|OUT.parquet",
                   help="results table, its format by the suffix (- : CSV on standard output; .parquet needs "
                        "pyarrow)")
    p.add_argument("--outputs", metavar="col,...", help="output columns to keep (default: all)")
    p.add_argument("--at", metavar="T1,T2,...",
                   help="take the outputs at these output times (columns NAME@T) instead of their final values")
    p.add_argument("--t-end", type=number, default=None,
                   help="end time [s] (default: a built-in model's suggestion; a model file has none)")
    p.add_argument("--dt-out", type=number, default=None, help="output interval [s] (the times --at can name)")
    add_solver_flags(p)
    p.add_argument("--jobs", "-j", type=integer, default=None,
                   help="local worker processes (default and 0: every usable core, as fit's 0; 1: in this process)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786) instead of "
                        "locally (pip install 'bondsim_ros[cluster]')")
    p.add_argument("--chunksize", type=integer, default=None,
                   help="runs sent to a worker at a time (default: automatic)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress or summary output")
    p.set_defaults(func=cmd_sweep)


def _names(text, option):
    from bondsim_ros.cliargs import CLIError

    names = [s.strip() for s in text.split(",")]
    if not all(names):
        raise CLIError(f"{option} expects a comma-separated list, got {text!r}")
    return names


def _times(text):
    from bondsim_ros.cliargs import CLIError

    try:
        return [number(s) for s in text.split(",")]
    except ValueError:
        raise CLIError(f"--at expects comma-separated times, got {text!r}") from None


# Without a terminal (stderr to a file or a pipe) a progress line at every tenth of the runs,
# and at least this often [s], so that a long sweep's log shows how far it got.
PROGRESS_EVERY = 10.0


def _progress(quiet):
    """(rich progress bar or None, progress callback or None): a bar on stderr in a terminal, as
    the other long commands show one; else a line now and then."""
    if quiet:
        return None, None
    if not sys.stderr.isatty():
        return None, _progress_lines()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    bar = Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                   TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    task = bar.add_task("runs", total=None, info="")

    def update(done, total, failed):
        bar.update(task, completed=done, total=total, info=f"{failed} failed" if failed else "")

    return bar, update


def _progress_lines():
    """A progress callback printing a line when the runs done pass the next tenth of the total, or
    :data:`PROGRESS_EVERY` seconds after the last line (not for the last run: the summary says it)."""
    import time

    tic = time.monotonic()
    state = {"tenth": 0, "said": tic}

    def update(done, total, failed):
        now = time.monotonic()
        tenth = done * 10 // total if total else 10
        if done >= total or (tenth <= state["tenth"] and now - state["said"] < PROGRESS_EVERY):
            return
        state["tenth"], state["said"] = max(tenth, state["tenth"]), now
        print(f"[bondsim] sweep: {done} of {total} runs done ({100 * done / total:.0f} %), "
              f"{failed} failed, {now - tic:.0f} s", file=sys.stderr, flush=True)

    return update


def _built_from(model) -> dict:
    """The real paths of the files ``model`` was built from, as its build record lists them (its
    parameter files, the modules a model file imports), which the table may not replace; {} for a
    model not built yet (the sweep's errors say what is wrong with it)."""
    from bondsim_ros.models import buildcache

    from .workers import model_spec

    try:
        return buildcache.resolve(model_spec(model)).files
    except Exception:  # noqa: BLE001 - not this check's to report: the sweep names it
        return {}


def cmd_sweep(args) -> int:
    from bondsim_ros.cliargs import CLIError, solver_options
    from bondsim_ros.outfiles import Output, check_output

    from .core import SweepAborted, SweepError, SweepInterrupted, check_format, parse_param, sweep

    params = {}
    for item in args.param:
        try:
            name, values = parse_param(item)
        except SweepError as exc:
            raise CLIError(f"--param {exc}") from None
        if name in params:
            raise CLIError(f"--param {name}: given twice")
        params[name] = values
    options = solver_options(args)
    outputs = _names(args.outputs, "--outputs") if args.outputs is not None else None
    at = _times(args.at) if args.at is not None else None
    if args.jobs is not None and args.jobs < 0:
        raise CLIError(f"--jobs must be >= 0 (0: every usable core), got {args.jobs}")
    if args.jobs == 0:
        from bondsim_ros.sweep.workers import default_jobs

        args.jobs = default_jobs()
    if args.chunksize is not None and args.chunksize < 1:
        raise CLIError(f"--chunksize must be at least 1, got {args.chunksize}")
    if args.jobs is not None and args.scheduler is not None:
        raise CLIError("give --jobs or --scheduler, not both (a cluster's workers are its own)")
    try:
        check_format(args.output)
    except SweepError as exc:
        raise CLIError(f"--output {exc}") from None
    check_output(args.output, "--output", stdout_ok=True, built_from=_built_from(args.model))

    bar, update = _progress(args.quiet)

    def log(message):  # a note while the runs wait (a cluster without workers), above the bar
        if bar is not None:
            bar.console.print(f"[bondsim] {message}", highlight=False, markup=False)
        else:
            print(f"[bondsim] {message}", file=sys.stderr, flush=True)

    interrupted = None  # the SweepInterrupted that ended the runs early
    aborted = None  # the SweepAborted (a worker died) that did
    try:
        if bar is not None:
            bar.start()
        result = sweep(args.model, params, t_end=args.t_end, dt_out=args.dt_out,
                       options=options, outputs=outputs, at=at, jobs=args.jobs, scheduler=args.scheduler,
                       chunksize=args.chunksize, progress=update, log=log)
    except SweepInterrupted as exc:
        result, interrupted = exc.result, exc
    except SweepAborted as exc:
        result, aborted = exc.result, exc
    except SweepError as exc:
        raise CLIError(_option_named(exc)) from None
    finally:
        if bar is not None:
            bar.stop()

    # (again: a model built by this sweep has its files listed only now)
    check_output(args.output, "--output", stdout_ok=True, built_from=_built_from(args.model))
    staged = Output(args.output, "--output", stdout_ok=True)
    try:
        result.write(staged.stage())
    except OSError as exc:
        staged.discard()
        raise CLIError(f"--output {args.output}: cannot write: {exc.strerror or exc}") from None
    except BaseException:  # Ctrl-C or SIGTERM while the table is written: nothing half-written beside it
        staged.discard()
        raise
    staged.commit()

    for warning in result.warnings:
        print(f"[bondsim] warning: {warning}", file=sys.stderr)
    status = result.status
    failed = status.count("failed")
    # the runs a dead worker left: failed rows, not runs that ran
    unfinished = sum(r["message"].startswith("not finished:") for r in result.rows) if aborted is not None else 0
    if not args.quiet:
        done = len(status) - status.count("cancelled") - unfinished
        rate = done / result.seconds if result.seconds > 0 else math.inf
        print(f"[bondsim] sweep {result.model}: {done} of {len(status)} runs, {failed - unfinished} failed, "
              f"{result.seconds:.2f} s ({rate:.3g} runs/s, {result.workers})", file=sys.stderr)
        for i, row in enumerate(result.rows):
            if row["status"] == "failed" and (aborted is None or not row["message"].startswith("not finished:")):
                print(f"[bondsim] run {i} ({', '.join(f'{k}={v:g}' for k, v in result.runs[i].items())}) failed: "
                      f"{row['message']}", file=sys.stderr)
        if args.output != "-":
            print(f"[bondsim] wrote {args.output}", file=sys.stderr)
    if interrupted is not None:
        from bondsim_ros.cliargs import Terminated

        # SIGTERM (`kill`) as every command reports it: 143, "terminated"; Ctrl-C 130
        how, code = ("terminated", 143) if isinstance(interrupted.cause, Terminated) else ("interrupted", 130)
        print(f"{how}: {status.count('cancelled')} runs not run (marked cancelled in {args.output})", file=sys.stderr)
        return code
    if aborted is not None:
        print(f"bondsim-ros sweep: error: {aborted}: {unfinished} runs not finished (marked failed in "
              f"{args.output})", file=sys.stderr)
    return 1 if failed else 0


# sweep()'s argument -> the command line's option
_OPTIONS = {"params": "--param", "t_end": "--t-end", "dt_out": "--dt-out", "outputs": "--outputs", "at": "--at",
            "jobs": "--jobs", "scheduler": "--scheduler"}


def _option_named(exc) -> str:
    if not exc.arg:
        return exc.message
    return f"{', '.join(_OPTIONS.get(a, a) for a in exc.arg.split(', '))}: {exc.message}"
