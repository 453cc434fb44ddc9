"""``bondsim-ros simulate | draw | models``: the engine from the command line.

It lives above the engine, not in ``bondgraph/``: it resolves models by name (bondsim_ros.models),
plots and raises CLIError, none of which the engine may know (README, "What is where")."""
from __future__ import annotations

from bondsim_ros.cliargs import integer, number
from bondsim_ros.plotting import save_figure

import contextlib
import math
import sys
import time
from pathlib import Path


def register(sub) -> None:
    from bondsim_ros.cliargs import add_solver_flags

    p = sub.add_parser("simulate", help="simulate a model and write its outputs to CSV (and plots)",
                       description="Simulate MODEL (a built-in name, a .yaml model file or a .py file with build()).")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--t-end", type=number, default=None,
                   help="end time [s] (default: a built-in model's suggestion; a model file has none)")
    p.add_argument("--dt-out", type=number, default=None,
                   help="output interval [s] (default: a built-in model's suggestion; a model file has none)")
    p.add_argument("--csv", metavar="OUT.csv", help="write t, states and recorded signals")
    p.add_argument("--plot", metavar="OUT.png", help="write plots (some models write several figures)")
    add_solver_flags(p)
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="set a model parameter")
    p.add_argument("--no-cache", action="store_true",
                   help="build the model and regenerate its code even if cached (no build record either)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress or summary output")
    # fast_exit: cli._exit_now (files closed, no threads); solver_core: the C core built from the start
    p.set_defaults(func=cmd_simulate, fast_exit=True, solver_core=True)

    d = sub.add_parser("draw", help="draw a model's bond graph (Graphviz)")
    d.add_argument("model", metavar="MODEL")
    d.add_argument("-o", "--output", required=True, metavar="OUT.png|svg|pdf|dot")
    d.add_argument("--depth", type=integer, default=None, help="open component documents down to this depth")
    d.set_defaults(func=cmd_draw)

    m = sub.add_parser("models", help="list the named models (built-in and installed plug-ins)",
                       description="List the models `bondsim-ros simulate NAME` runs: name, description; the "
                                   "worked examples and the models of the built-in robots and of installed robot "
                                   "plug-ins.")
    m.set_defaults(func=cmd_models)

    r = sub.add_parser("robots", help="list the registered robots (built-in and installed plug-ins)",
                       description="List the robots `bondsim-ros up --model NAME` runs: name, commands it takes "
                                   "besides its built-in reference, description.")
    r.set_defaults(func=cmd_robots)


def _load(spec):
    from bondsim_ros.bondgraph.core import ModelError
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.models import resolve_model
    from bondsim_ros.robots import RobotError

    try:
        return resolve_model(spec)
    except (ModelError, RobotError) as exc:  # RobotError: an installed plug-in that does not load
        raise CLIError(str(exc)) from None


# Largest number of output rows `simulate` writes (t_end / dt_out): a typo such as
# --dt-out 1e-12 would otherwise fill the memory before the first row is written.
MAX_OUTPUT_ROWS = 1_000_000


def _params(items):
    from bondsim_ros.cliargs import CLIError, assignments

    out = assignments(items, "--param", form="NAME=NUMBER")
    for name, value in out.items():
        if not math.isfinite(value):
            raise CLIError(f"--param {name}: the value must be a finite number, got {value!r}")
    return out


def check_output_path(path, option: str, *, stdout_ok: bool = False, inputs=(), built_from=()) -> Path:
    """Refuse an output path that cannot be written, or that is one of the command's
    ``inputs`` or of the files its model was ``built_from``, before any work is done (the
    commands' one check: bondsim_ros.outfiles)."""
    from bondsim_ros.outfiles import check_output

    return check_output(path, option, stdout_ok=stdout_ok, inputs=inputs, built_from=built_from)


def _located(exc, model_arg, given) -> str:
    """The text of ``exc`` (a ModelError), with the file and line of the value it refuses when
    that is a run-time parameter's value written in the model file (not one ``given`` by --param):
    the run holds the compiled model only, so the file is read again for it."""
    from bondsim_ros.bondgraph.compiled import ParameterRefused

    names = [n for n in getattr(exc, "names", []) if n not in given]
    if isinstance(exc, ParameterRefused) and names and not exc.located \
            and str(model_arg).endswith((".yaml", ".yml")) and Path(model_arg).is_file():
        from bondsim_ros.bondgraph.yamlmodel import parameter_locations

        where = parameter_locations(model_arg).get(names[0])
        if where:
            return f"{where}: {exc}"
    return str(exc)


def _equation_place(exc, model_arg) -> str:
    """"file:line: " of the component whose equation ``exc`` names (``d: x = in``: component d)
    in a model file, else ""."""
    equation = getattr(exc, "equation", None)
    if not equation or not str(model_arg).endswith((".yaml", ".yml")) or not Path(model_arg).is_file():
        return ""
    from bondsim_ros.bondgraph.yamlmodel import component_locations

    where = component_locations(model_arg).get(equation.split(":", 1)[0])
    return f"{where}: " if where else ""


def _check_run_options(t_end, dt_out, args):
    """The solver's options from the flags, once the span is checked (a bad flag: CLIError naming it)."""
    from bondsim_ros.cliargs import CLIError, solver_options

    if not (math.isfinite(t_end) and math.isfinite(dt_out) and t_end > 0 and dt_out > 0):
        raise CLIError(f"--t-end and --dt-out must be positive finite numbers (got {t_end:g}, {dt_out:g})")
    rows = t_end / dt_out
    if rows > MAX_OUTPUT_ROWS:
        raise CLIError(f"--t-end {t_end:g} / --dt-out {dt_out:g} gives {rows:.3g} output rows "
                       f"(limit {MAX_OUTPUT_ROWS}): use a larger --dt-out")
    return solver_options(args)


def _write_csv(result, out, rows=None, staged=None):
    """Stage the CSV (bondsim_ros.outfiles.Output), put in place once the plots are written too:
    a failed write (disk full) or a failed plot leaves neither a partial file nor a replaced one.
    ``rows``: the StreamedCsv of the run, writing ``staged``'s file while it solved."""
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.outfiles import Output

    staged = staged or Output(out, "--csv", stdout_ok=True)
    try:
        if rows is not None:  # formatted while it was solved (bondgraph.simulation.StreamedCsv)
            rows.to_csv(result, staged.stage())
        else:
            result.to_csv(staged.stage())
    except OSError as exc:
        if rows is not None:
            rows.close()  # its thread opens the staged file: joined first, or it may make it again
        staged.discard()
        raise CLIError(f"--csv {out}: cannot write: {exc.strerror or exc}") from None
    return staged


def _warn_not_finite(result) -> None:
    """Name every output column holding NaN or inf (a law that overflowed, a division by zero
    that the solver stepped over): the CSV is written, but the user is told."""
    import numpy as np

    bad = ~np.isfinite(result.data)
    for j in np.nonzero(bad.any(axis=0))[0]:
        first = int(np.argmax(bad[:, j]))
        print(f"[bondsim] warning: column {result.names[j]!r} has {int(bad[:, j].sum())} non-finite value(s), "
              f"the first at t = {result.data[first, 0]:g}", file=sys.stderr)


def _progress_bar(t0, t_end, quiet):
    """A terminal's progress bar of a run (rich) and the callback that moves it; (None, None)
    when quiet or when stdout is no terminal (rich draws there: no bar, nor rich's import)."""
    if quiet or not sys.stdout.isatty():
        return None, None
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("[bold]simulating"), BarColumn(),
                   TextColumn("t = {task.completed:.3g} / {task.total:.3g} s"), TimeElapsedColumn(), transient=True)
    task = bar.add_task("sim", total=t_end - t0)
    return bar, (lambda t: bar.update(task, completed=t - t0))


def _models_own(fn, what: str, model: str, *args):
    """Call a model's own code (its entry's postprocess or figure function: a plug-in's); its
    failure is named, with the function, instead of a traceback; a figure that cannot be written
    (OSError, the output rule's CLIError) is reported as any figure's."""
    from bondsim_ros.cliargs import CLIError, RunFailed

    try:
        return fn(*args)
    except (OSError, CLIError):
        raise
    except Exception as exc:  # noqa: BLE001 - someone else's code: whatever it raises is its failure
        where = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
        raise RunFailed(f"model {model!r}: its {what} ({where}) failed: {type(exc).__name__}: {exc}") from None


def cmd_simulate(args) -> int:
    from bondsim_ros.cliargs import CLIError, CollectorPause, RunFailed

    start = CollectorPause(getattr(args, "program_run", False))  # ended where the solve begins
    from bondsim_ros.bondgraph.core import ModelError
    from bondsim_ros.bondgraph.simulation import simulate
    from bondsim_ros.models import buildcache
    from bondsim_ros.solver import InconsistentInitialValues, SolverError

    log = (lambda msg: None) if args.quiet else (lambda msg: print(f"[bondsim] {msg}", file=sys.stderr))
    tic = time.perf_counter()
    # a model simulated before, with its files unchanged, runs from its build record without
    # being built (no sympy): see models/buildcache.py
    resolved = buildcache.resolve(args.model, use_cache=not args.no_cache, load=_load)
    entry = resolved.entry
    t_build = time.perf_counter() - tic
    defaults = entry.defaults if entry else {}
    t_end = args.t_end if args.t_end is not None else defaults.get("t_end")
    dt_out = args.dt_out if args.dt_out is not None else defaults.get("dt_out")
    if t_end is None or dt_out is None:
        raise CLIError("give --t-end and --dt-out (this model suggests no defaults)")
    options = _check_run_options(t_end, dt_out, args)
    for option, name in (("--csv", args.csv), ("--plot", args.plot)):
        if name is not None and not name.strip():
            raise CLIError(f"{option}: an empty file name")
    # nothing is written over a file the model was built from (its parameter file, a module a
    # model file imports): the build record, or the build just made, lists them
    csv_out = check_output_path(args.csv, "--csv", stdout_ok=True, inputs=[args.model],
                                built_from=resolved.files) if args.csv else None
    if args.plot:
        from bondsim_ros.plotting import check_figure_format

        check_output_path(args.plot, "--plot", inputs=[args.model], built_from=resolved.files)
        check_figure_format(args.plot, "--plot")
        if csv_out is not None and _same_file(csv_out, args.plot):
            raise CLIError(f"--csv and --plot name the same file {args.plot}")
    params = _params(args.param)
    rows = result = staged = None
    try:
        tic = time.perf_counter()
        compiled = resolved.compile(log=log)
        t_build += time.perf_counter() - tic  # simulate() gets the compiled model: its own build time is 0
        for name in params:
            if name not in compiled.param_names:
                raise CLIError(f"model {compiled.name!r} has no parameter {name!r} "
                               f"(has: {', '.join(compiled.param_names) or 'none'})")
        for name in compiled.read_by_no_law(params):
            print(f"[bondsim] warning: --param {name}: no law of model {compiled.name!r} reads {name}, so its value "
                  f"changes nothing", file=sys.stderr)
        if csv_out is not None:  # the CSV formatted, and written when it can be, while the solve runs
            from bondsim_ros.bondgraph.simulation import StreamedCsv
            from bondsim_ros.outfiles import Output

            names = ["t"] + list(compiled.output_names)
            make = entry.postprocess_rows if entry is not None else None
            derive = make(names) if make is not None else None
            if derive is not None:
                names += list(derive.names)
            known = derive is not None or entry is None or entry.postprocess is None  # the header
            staged = Output(csv_out, "--csv", stdout_ok=True) if known else None
            try:
                rows = StreamedCsv(derive, path=staged.stage() if known else None, names=names)
            except OSError as exc:
                raise CLIError(f"--csv {csv_out}: cannot write: {exc.strerror or exc}") from None
        bar, progress = _progress_bar(0.0, t_end, args.quiet)
        start.end()
        with bar or contextlib.nullcontext():
            result = simulate(compiled, t_end=t_end, dt_out=dt_out, options=options, params=params, progress=progress,
                              rows=rows, ahead=None if args.no_cache else getattr(args, "ahead", None))
    except ModelError as exc:
        raise CLIError(_located(exc, args.model, params)) from None
    except InconsistentInitialValues as exc:  # the model's start refused before any step: its input
        raise CLIError(f"{_equation_place(exc, args.model)}simulation failed: {exc}") from None
    except SolverError as exc:
        raise RunFailed(f"simulation failed: {exc}") from None
    finally:
        if rows is not None and result is None:
            rows.close()
            if staged is not None:
                staged.discard()
    csv_tmp, written, done = None, [], False
    try:
        if entry is not None and entry.postprocess is not None:
            result = _models_own(entry.postprocess, "postprocess", entry.name, result)
        _warn_not_finite(result)
        csv_tmp = _write_csv(result, csv_out, rows, staged) if csv_out is not None else None
        try:
            if args.plot:
                from bondsim_ros.plotting import figures_together

                own = entry is not None and entry.plot
                # a model's several figures: all of them or none, and none over the CSV
                with figures_together({csv_out: "--csv"} if csv_out is not None else None):
                    written = _models_own(own, "figure function", entry.name, result, args.plot) if own \
                        else plot_result(result, args.plot)
        except RunFailed:
            raise
        except (OSError, ValueError, CLIError) as exc:
            if isinstance(exc, CLIError):  # a figure that could not be put in place (bondsim_ros.outfiles)
                raise CLIError(f"--plot {exc}") from None
            raise CLIError(f"--plot {args.plot}: cannot write: {getattr(exc, 'strerror', None) or exc}") from None
        if csv_tmp is not None:
            csv_tmp.commit()
        done = True
    finally:
        if not done:  # a failed plot, Ctrl-C or SIGTERM after the solve: the staged CSV goes too
            if rows is not None:
                rows.close()  # (its thread writes the staged file: joined before it is removed)
            for tmp in (csv_tmp, staged):
                if tmp is not None:
                    tmp.discard()
    if not args.quiet:
        s = result.stats
        ahead = getattr(args, "ahead", None)
        ahead_note = " (started ahead)" if ahead is not None and ahead.adopted else ""
        print(f"[bondsim] {compiled.name}: t = 0..{t_end:g} s, {len(result.t)} output rows, "
              f"{s.get('steps', '?')} steps ({s.get('rejected', '?')} rejected"
              f"{', %d events' % s['events'] if s.get('events') else ''}), "
              f"solve {result.timings['solve']:.3f} s{ahead_note}, build {t_build:.2f} s"
              f"{' (cached)' if compiled.from_cache else ''}", file=sys.stderr)
        for f in ([args.csv] if args.csv and args.csv != "-" else []) + list(written):
            print(f"[bondsim] wrote {f}", file=sys.stderr)
    return 0


def _same_file(a, b) -> bool:
    """Whether two output names land on one file (links followed; a device or pipe, such as
    stdout's '-', is no file)."""
    import os

    from bondsim_ros.outfiles import is_stream

    return not is_stream(a) and not is_stream(b) and os.path.realpath(a) == os.path.realpath(b)


def plot_result(result, out_png) -> list:
    """Generic plot: recorded signals (or states when nothing is recorded) against time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in result.names[1:] if "." not in n] or result.names[1:]
    names = names[:12]
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 1.9 * len(names) + 0.6), sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        ax.plot(result.t, result[name], lw=1.2)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("t [s]")
    fig.suptitle(result.model_name)
    return [save_figure(fig, out_png)]


def cmd_draw(args) -> int:
    from bondsim_ros.bondgraph.draw import FORMATS, draw
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.outfiles import output_path

    if args.depth is not None and args.depth < 0:
        raise CLIError(f"--depth {args.depth}: give 0 (the model's own document) or more")
    check_output_path(args.output, "--output", inputs=[args.model])
    if Path(args.output).suffix.lstrip(".").lower() not in FORMATS:
        raise CLIError(f"--output {args.output}: a drawing is written as "
                       f"{', '.join('.' + f for f in FORMATS)} (the name's suffix says which)")
    model, _ = _load(args.model)
    try:
        with output_path(args.output, "--output") as tmp:  # the drawing takes its format from the suffix
            draw(model, tmp, max_depth=args.depth)
    except (ValueError, RuntimeError) as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"--output {args.output}: cannot write: {exc.strerror or exc}") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_models(args) -> int:
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.models import registry
    from bondsim_ros.robots import RobotError

    try:
        entries = registry()
    except RobotError as exc:
        raise CLIError(str(exc)) from None
    for name, entry in sorted(entries.items()):
        print(f"{name:22s} {entry.description}")
    return 0


def cmd_robots(args) -> int:
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.robots import RobotError, available, load_robot, shadowed

    for name, used, hidden in shadowed():  # (a plug-in's robot named like a built-in one: never run)
        print(f"[bondsim] warning: robot plug-in {hidden} gives {name!r} too; {used} gives the one used",
              file=sys.stderr)
    failed = []
    for name in sorted(available()):  # every robot that loads is listed, a plug-in that does not named after
        try:
            robot = load_robot(name)
        except RobotError as exc:
            failed.append(str(exc))
            continue
        print(f"{name:22s} {','.join(robot.commands) or '-':18s} {robot.description}")
    for message in failed:
        print(f"bondsim-ros robots: error: {message}", file=sys.stderr)
    return CLIError.status if failed else 0


__all__ = ["register", "plot_result", "Path"]
