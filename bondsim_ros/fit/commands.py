"""``bondsim-ros fit`` (identify a model's run-time parameters from a logged CSV) and
``bondsim-ros bag2csv`` (a robot's rosbag2 drive log -> that CSV)."""
from __future__ import annotations

from bondsim_ros.cliargs import integer, number
from bondsim_ros.plotting import save_figure

import json
import math
import sys
from pathlib import Path


def register(sub) -> None:
    from bondsim_ros.cliargs import add_solver_flags

    from .options import FIT_OPTIONS

    p = sub.add_parser(
        "fit", help="fit a model's run-time parameters to logged inputs and responses (least squares)",
        description="Simulate MODEL with the logged inputs of DATA.csv and adjust the run-time parameters "
                    "--params so the simulated --outputs match the logged ones at the logged times "
                    "(scipy least_squares, finite-difference Jacobian). Reports estimates, standard "
                    "errors and 95% confidence intervals from s^2 (J^T J)^-1 at the optimum, names the "
                    "parameter combinations the data do not determine (SVD of the Jacobian scaled by the "
                    "parameters' magnitudes) and warns of estimates at a bound or orders of magnitude from "
                    "their start, and of data that start after t = 0 for a model whose laws read t (the "
                    "model's clock is the data's). Exit status 1 when the optimiser did not converge, a "
                    "parameter is not determined, the model does not follow a logged input (--config-out "
                    "is then not written) or a simulation failed; 2 for bad input.")
    p.add_argument("model", metavar="MODEL", help="built-in model name, .yaml or .py model file")
    p.add_argument("data", metavar="DATA.csv", help="CSV with a header row; a time column and the logged columns")
    p.add_argument("--params", required=True, metavar="a,b,...", help="run-time parameters to estimate")
    p.add_argument("--outputs", required=True, metavar="col,...",
                   help="columns to match: NAME (same in model and data) or MODEL_COL=DATA_COL")
    p.add_argument("--inputs", default="", metavar="param,...",
                   help="run-time parameters driven by logged columns (held between samples): NAME or PARAM=DATA_COL")
    p.add_argument("--time-col", default="t", help="time column of DATA.csv (default: t)")
    p.add_argument("--guess", action="append", default=[], metavar="NAME=VALUE",
                   help="initial value of a fitted parameter (default: the model's value)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a run-time parameter that is not fitted")
    p.add_argument("--bounds", action="append", default=[], metavar="NAME=LO:HI",
                   help="bounds of a fitted parameter (default: >= 0 for parameters that start positive)")
    p.add_argument("--weight", action="append", default=[], metavar="COL=W",
                   help="weight (1/noise sigma) of a data column when outputs of different units are fitted")
    p.add_argument("--t-end", type=number, default=None, help="use data rows up to this time only")
    add_solver_flags(p, FIT_OPTIONS)
    p.add_argument("--max-evals", type=integer, default=None, metavar="N",
                   help="stop the search after N evaluations of the residuals (least_squares' max_nfev, >= 1); "
                        "a check of the start, the Jacobian's simulations (one per fitted parameter and "
                        "iteration) and those for the standard errors at the end come on top")
    p.add_argument("--jobs", "-j", default=None, metavar="N",
                   help="local worker processes for the Jacobian's simulations (one per fitted parameter and "
                        "iteration; default 1: all in this process; 0: every usable core); the estimate is the "
                        "same bit for bit")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the Jacobian's simulations on the Dask cluster whose scheduler is at ADDRESS "
                        "(tcp://host:8786) instead (pip install 'bondsim_ros[cluster]')")
    p.add_argument("--json", metavar="OUT.json", help="write the estimates, intervals and covariance")
    p.add_argument("--config-out", metavar="OUT.yaml",
                   help="write the model's parameter file with the estimates in (models built from one, e.g. "
                        "robotino_twist: the twin then runs with it as robot_config)")
    p.add_argument("--csv", metavar="OUT.csv", help="write t, logged and fitted outputs")
    p.add_argument("--plot", metavar="OUT.png", help="plot logged vs. initial and fitted outputs")
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=cmd_fit)

    b = sub.add_parser(
        "bag2csv", help="turn a robot's rosbag2 drive log into the CSV that `fit robotino_twist` reads",
        description="One row per joint-state sample: t, the cmd_vel command held from the last message "
                    "(vx_cmd, vy_cmd, wz_cmd), the wheel speeds w1..w3 in the twin's order and sign, with "
                    "motor readings the currents i1..i3 and, with odometry, x, y, phi relative to the first "
                    "row. Topic names, wheel joints and "
                    "sign default to the robot_* entries of config/robotino_bridge.yaml (the rto_node "
                    "driver's). Reads MCAP and sqlite3 bags without a ROS install.")
    b.add_argument("bag", metavar="BAG", help="rosbag2 folder (or .mcap file)")
    b.add_argument("-o", "--output", required=True, metavar="OUT.csv")
    b.add_argument("--bridge-config", metavar="FILE", help="twin bridge parameter file to take the defaults from")
    b.add_argument("--cmd-vel", metavar="TOPIC")
    b.add_argument("--joint-states", metavar="TOPIC")
    b.add_argument("--wheel-joints", metavar="J1,J2,J3", help="driver joint names of the twin's wheels 1, 2, 3")
    b.add_argument("--wheel-sign", type=number, help="multiply the driver's wheel speeds by this")
    b.add_argument("--odom", metavar="TOPIC", help="odometry topic (default: the bridge config's)")
    b.add_argument("--no-odom", action="store_true", help="leave the odometry columns out")
    b.add_argument("--motor-readings", metavar="TOPIC",
                   help="rto_msgs/MotorReadings topic of the motor currents i1..i3 (default: motor_readings "
                        "beside the joint states, when the bag has it)")
    b.add_argument("--no-currents", action="store_true", help="leave the current columns out")
    b.add_argument("--motor-joints", metavar="J0,J1,J2",
                   help="driver joints that motors 0, 1, 2 turn (default: wheel0_joint,wheel1_joint,wheel2_joint, "
                        "as the driver's MotorArrayROS)")
    b.set_defaults(func=cmd_bag2csv)


def _split(text):
    return [s.strip() for s in text.split(",") if s.strip()]


def _distinct(names, what) -> None:
    """Refuse a joint named twice: its readings would fill two columns and another joint's none."""
    from bondsim_ros.cliargs import CLIError

    seen = set()
    for name in names:
        if name in seen:
            raise CLIError(f"{what}: {name!r} is given twice (each column reads its own joint)")
        seen.add(name)


def _bound(text):
    from bondsim_ros.cliargs import number

    lo, sep, hi = text.partition(":")
    if not sep:
        raise ValueError
    return (number(lo.strip()) if lo.strip() else -math.inf, number(hi.strip()) if hi.strip() else math.inf)


def cmd_fit(args) -> int:
    from bondsim_ros.cliargs import CLIError, solver_options
    from bondsim_ros.outfiles import Output, check_output

    options = solver_options(args)
    if args.max_evals is not None and args.max_evals < 1:
        raise CLIError(f"--max-evals {args.max_evals}: give at least 1 evaluation of the residuals")
    args.jobs = _jobs(args.jobs)
    if args.jobs is not None and args.scheduler is not None:
        raise CLIError("give --jobs or --scheduler, not both (a cluster's workers are its own)")
    outputs = [(opt, getattr(args, attr)) for opt, attr in
               (("--json", "json"), ("--config-out", "config_out"), ("--csv", "csv"), ("--plot", "plot"))]
    given = [(opt, path) for opt, path in outputs if path]
    for opt, path in given:  # before the (slow) work: nothing computed for nothing
        check_output(path, opt, inputs=[args.model, args.data])
    if args.plot:
        from bondsim_ros.plotting import check_figure_format

        check_figure_format(args.plot, "--plot")
    resolved = [(opt, str(Path(path).resolve())) for opt, path in given]  # the inputs: check_output
    for i, (opt, path) in enumerate(resolved):
        for opt2, path2 in resolved[:i]:
            if path == path2:
                raise CLIError(f"{opt} and {opt2} name the same file {path}")
    # every output staged now, before the (slow) fit: a folder that looked writable but takes no
    # file (/proc) fails here; and put in place together at the end, or none of them
    staged = {}
    try:
        for opt, path in given:
            staged[opt] = Output(path, opt)
            staged[opt].stage()
        code = _fit_and_write(args, options, staged)
        written = [out.path for out in staged.values() if out.tmp is not None]  # (not an unusable fit's config)
        for out in staged.values():
            if out.tmp is not None:
                out.commit()
    finally:
        for out in staged.values():
            out.discard()
    if not args.quiet:
        for path in written:
            print(f"[bondsim] wrote {path}", file=sys.stderr)
    return code


def _fit_and_write(args, options, staged) -> int:
    """The fit of cmd_fit, its report, and its outputs written into ``staged`` (option -> its
    staged Output); the exit status."""
    from bondsim_ros.bondgraph.core import ModelError
    from bondsim_ros.cliargs import CLIError, RunFailed, assignments
    from bondsim_ros.model_commands import _load
    from bondsim_ros.models import buildcache
    from bondsim_ros.outfiles import check_not_built_from
    from bondsim_ros.sweep.workers import WorkerDied, WorkersError

    from .core import FitError, FitProblem, FitRunFailed, read_csv

    params = _split(args.params)
    guesses = assignments(args.guess, "--guess")
    fixed = assignments(args.param, "--param")
    bounds = assignments(args.bounds, "--bounds", _bound, form="NAME=LO:HI")
    weights = assignments(args.weight, "--weight")
    log = (lambda msg: None) if args.quiet else (lambda msg: print(f"[bondsim] {msg}", file=sys.stderr))
    try:
        data = read_csv(args.data)  # data errors before the (slow) model build
        # from the build record when the model was built before (no sympy), as `simulate` and
        # the workers of --jobs/--scheduler find it (models/buildcache.py)
        resolved = buildcache.resolve(args.model, load=_load)
        for opt, out in staged.items():  # the files the model is built from are known now; nothing is in place yet
            check_not_built_from(out.path, opt, resolved.files)
        entry = resolved.entry
        if args.config_out and (entry is None or entry.write_config is None):
            raise FitError(f"--config-out: model {args.model!r} is not built from a parameter file")
        compiled = resolved.compile(log=log)
        problem = FitProblem(compiled, data, params, _split(args.outputs), inputs=_split(args.inputs), fixed=fixed,
                             time_col=args.time_col, t_end=args.t_end, options=options, weights=weights,
                             model=args.model)
        for name in guesses:
            if name not in params:
                raise FitError(f"--guess for {name!r}, which is not in --params ({', '.join(params)})")
        x0 = problem.initial()
        for i, name in enumerate(params):
            x0[i] = guesses.get(name, x0[i])
            if name not in bounds and x0[i] > 0:
                bounds[name] = (0.0, math.inf)  # physical constants that start positive stay >= 0
        result = _run(problem, x0, bounds, args)
    except FitRunFailed as exc:
        raise RunFailed(str(exc)) from None
    except (FitError, ModelError) as exc:
        raise CLIError(str(exc)) from None
    except WorkersError as exc:
        raise CLIError(f"--{exc.arg}: {exc.message}") from None
    except WorkerDied as exc:
        raise RunFailed(f"{exc}: the fit stopped") from None
    _report(result, problem, args.quiet)
    if args.json:
        doc = {"model": compiled.name, "data": args.data, **result.as_dict()}
        # NaN/inf (a parameter the data do not determine) as null: the file stays strict JSON
        staged["--json"].write(lambda tmp: tmp.write_text(json.dumps(_json_safe(doc), indent=2) + "\n",
                                                          encoding="utf-8"))
    if args.config_out and not result.usable:
        why = "did not converge" if not result.success else "gave no usable estimate"
        print(f"[bondsim] {args.config_out} not written: the fit {why}", file=sys.stderr)
        staged["--config-out"].discard()
    elif args.config_out:
        notes = {n: f"fitted by bondsim-ros fit to {args.data}: 95% CI [{lo:.6g}, {hi:.6g}]"
                 for n, lo, hi in zip(result.names, result.ci_low, result.ci_high)}
        try:
            staged["--config-out"].write(
                lambda tmp: entry.write_config(dict(zip(result.names, result.estimate)), tmp, notes))
        except ValueError as exc:
            raise CLIError(f"--config-out: {exc}") from None
    if args.csv or args.plot:
        fitted = problem.simulate(result.estimate)
        if args.csv:
            staged["--csv"].write(lambda tmp: _write_csv(tmp, problem, fitted))
        if args.plot:
            initial = problem.simulate(result.initial)
            staged["--plot"].write(lambda tmp: plot_fit(problem, initial, fitted, tmp, result))
    return 0 if result.usable else 1


def _default_bridge_config():
    """The default robot's twin_bridge parameter file (its plug-in's ``bridge``)."""
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.robots import DEFAULT_ROBOT, load_robot

    bridge = load_robot(DEFAULT_ROBOT).bridge
    if bridge is None:
        raise CLIError(f"give --bridge-config: the default robot {DEFAULT_ROBOT!r} has no twin_bridge parameter file")
    return bridge


def cmd_bag2csv(args) -> int:
    import yaml

    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.outfiles import check_output
    from .bag import MOTOR_JOINTS, bag_to_log, write_log
    from .core import FitError

    check_output(args.output, "-o", stdout_ok=True, inputs=[args.bag, args.bridge_config])
    # a topic given and its columns left out: which one does the user mean?
    for topic, left_out, options in ((args.odom, args.no_odom, "--odom and --no-odom"),
                                     (args.motor_readings, args.no_currents, "--motor-readings and --no-currents")):
        if topic is not None and left_out:
            raise CLIError(f"{options}: give one of them")
    if args.wheel_sign is not None and not (math.isfinite(args.wheel_sign) and args.wheel_sign != 0):
        raise CLIError(f"--wheel-sign {args.wheel_sign}: give a finite, non-zero factor (usually 1 or -1)")
    cfg_path = args.bridge_config or _default_bridge_config()
    try:
        with open(cfg_path, encoding="utf-8") as fh:
            cfg = yaml.safe_load(fh)["twin_bridge"]["ros__parameters"]
    except yaml.YAMLError as exc:  # one line: where, and what (PyYAML's own text spans several)
        mark = getattr(exc, "problem_mark", None)
        where = f"{cfg_path}:{mark.line + 1}" if mark is not None else str(cfg_path)
        raise CLIError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise CLIError(f"{cfg_path}: not a twin bridge parameter file ({exc})") from None
    if not isinstance(cfg, dict):
        raise CLIError(f"{cfg_path}: not a twin bridge parameter file (twin_bridge.ros__parameters is not a mapping)")

    def setting(value, key, check, want):
        """A command-line value, else the bridge file's ``key``, checked by ``check``."""
        if value is None:
            value = cfg.get(key)
            if not check(value):
                raise CLIError(f"{cfg_path}: {key} is {value!r}, expected {want} (or give it on the command line)")
        return value

    def topic(v):
        return isinstance(v, str) and v.strip() != ""

    def sign(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v != 0

    wheels = setting(_split(args.wheel_joints) if args.wheel_joints else None, "robot_wheel_joints",
                     lambda v: isinstance(v, list) and all(topic(w) for w in v), "a list of joint names")
    _distinct(wheels, "--wheel-joints" if args.wheel_joints else f"{cfg_path}: robot_wheel_joints")
    cmd_vel = setting(args.cmd_vel, "robot_cmd_vel", topic, "a topic name")
    joint_states = setting(args.joint_states, "robot_joint_states", topic, "a topic name")
    odom = None if args.no_odom else (args.odom or cfg.get("robot_odom"))  # none configured: no odometry
    if odom is not None and not topic(odom):
        raise CLIError(f"{cfg_path}: robot_odom is {odom!r}, expected a topic name (or give --odom/--no-odom)")
    wheel_sign = args.wheel_sign if args.wheel_sign is not None else cfg.get("robot_wheel_sign", 1.0)
    if not sign(wheel_sign):  # --wheel-sign was checked above: this is the file's
        raise CLIError(f"{cfg_path}: robot_wheel_sign is {wheel_sign!r}, expected a finite, non-zero number")
    motor_joints = _split(args.motor_joints) if args.motor_joints else list(MOTOR_JOINTS)
    if len(motor_joints) != 3:
        raise CLIError(f"--motor-joints {args.motor_joints}: give the three joints motors 0, 1, 2 turn")
    _distinct(motor_joints, "--motor-joints")
    # the driver publishes motor_readings beside joint_states (MotorArrayROS): read where logged
    readings = None if args.no_currents else args.motor_readings or joint_states.rpartition("/")[0] + "/motor_readings"
    try:
        log = bag_to_log(args.bag, cmd_vel, joint_states, wheels, float(wheel_sign), odom=odom,
                         motor_readings=readings, motor_joints=motor_joints,
                         readings_optional=args.motor_readings is None)
        write_log(log, args.output, "-o")
    except FitError as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot write {args.output}: {exc}") from None
    for note in log.notes:
        print(f"warning: {note}", file=sys.stderr)
    print(f"{args.output}: {len(log.data)} rows over {log.data[-1, 0]:.3g} s, columns {', '.join(log.names)}",
          file=sys.stderr)
    return 0


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _jobs(text):
    """--jobs: None when not given (1: this process), else a whole number >= 0 (0: every core)."""
    from bondsim_ros.cliargs import CLIError, integer

    if text is None:
        return None
    try:
        jobs = integer(text)
    except ValueError:
        jobs = -1
    if jobs < 0:
        raise CLIError(f"--jobs expects a whole number of processes >= 0 (0: every usable core), got {text!r}")
    return jobs


def _run(problem, x0, bounds, args):
    from .core import fit

    where = {"jobs": 1 if args.jobs is None else args.jobs, "scheduler": args.scheduler}
    if args.quiet:
        return fit(problem, x0=x0, bounds=bounds, max_nfev=args.max_evals, **where)
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True)
    names = problem.params

    def line(n, cost, theta):
        vals = "  ".join(f"{k}={v:.6g}" for k, v in zip(names, theta))
        return f"[bold]fitting[/bold] run {n}  cost {cost:.6g}  {vals}"

    with Live(line(0, float("nan"), x0), console=console, transient=True, refresh_per_second=8) as live:
        return fit(problem, x0=x0, bounds=bounds, max_nfev=args.max_evals,
                   progress=lambda n, c, th: live.update(line(n, c, th)),
                   log=lambda msg: console.print(f"[bondsim] {msg}", highlight=False, markup=False, soft_wrap=True),
                   **where)


def _report(result, problem, quiet):
    """The table on stdout; what makes the estimates untrustworthy on stderr, and "converged" only
    for a fit that converged with every parameter determined and no warning."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    err = Console(stderr=True, soft_wrap=True)  # one line per message, also in a log file
    table = Table(title=f"fit of {problem.compiled.name}: {result.n_data} residuals, {result.dof} dof, "
                        f"{result.n_eval} simulations, {result.seconds:.1f} s"
                        + ("" if result.workers.startswith("1 job") else f" ({result.workers})"))
    for col in ("parameter", "initial", "estimate", "std. error", "95% CI low", "95% CI high", "rel. SE"):
        table.add_column(col, justify="right" if col != "parameter" else "left")
    for n, i, e, s, lo, hi in zip(result.names, result.initial, result.estimate, result.stderr, result.ci_low,
                                  result.ci_high):
        if n in result.rank_deficient:
            table.add_row(n, f"{i:.6g}", f"{e:.6g}", "undetermined", "-", "-", "-")
            continue
        rel = f"{abs(s / e):.2%}" if e != 0 and math.isfinite(s) else "-"
        table.add_row(n, f"{i:.6g}", f"{e:.6g}", f"{s:.3g}", f"{lo:.6g}", f"{hi:.6g}", rel)
    if not console.is_terminal:  # a file or pipe has no width: whole numbers rather than 80 columns of "0.06…"
        wide = console.measure(table, options=console.options.update_width(1000)).maximum
        console.width = max(console.width, wide)
    console.print(table)
    console.print(f"residual sigma {result.sigma:.4g}; RMS by output: "
                  + ", ".join(f"{k} {v:.4g}" for k, v in result.rms_by_output.items()))
    for m in result.input_mismatches:  # the cause of what follows, when there is one
        err.print(f"[bold red]error: {m}[/bold red]", highlight=False)
    for w in result.warnings:
        err.print(f"[yellow]warning: {w}[/yellow]", highlight=False)
    for d in result.undetermined:
        names = d.parameters()
        why = (f"scaled Jacobian: singular value {d.rel_singular_value:.2g} of the largest" if d.rel_stderr <= 1.0
               else f"relative standard error {d.rel_stderr:.3g}")
        advice = ("fix it with --param, or log an experiment that excites it" if len(names) == 1 else
                  "fix all but one of them with --param, or log an experiment that separates them")
        err.print(f"[bold red]not identifiable from these data: {', '.join(names)}[/bold red] — "
                  f"{d.describe()} ({why}); {advice}", highlight=False)
    if not result.success:
        err.print(f"[red]optimiser did not converge: {result.message}[/red]", highlight=False)
    elif not result.usable:
        why = (f"the data do not determine {', '.join(result.rank_deficient)}" if result.rank_deficient
               else "the model does not follow the logged inputs")
        err.print(f"[red]no usable estimate: the optimiser stopped ({result.message}), but {why}[/red]",
                  highlight=False)
    elif result.warnings:
        err.print(f"[yellow]optimiser stopped ({result.message}) with the warnings above: check them before "
                  f"using the estimates[/yellow]", highlight=False)
    elif not quiet:
        console.print(f"converged: {result.message}")


def _write_csv(path, problem, fitted):
    import csv

    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([problem.time_col] + [f"{c}" for _, c in problem.output_map]
                   + [f"{m}_fit" for m, _ in problem.output_map])
        for k in range(len(problem.t)):
            w.writerow([repr(float(x)) for x in [problem.t[k], *problem.y[k], *fitted[k]]])


def plot_fit(problem, initial, fitted, out_png, result=None) -> list:
    """One panel per fitted output: logged data, the model at the initial guess and at the estimate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(problem.output_map)
    fig, axes = plt.subplots(n, 1, figsize=(8, 2.3 * n + 0.8), sharex=True, squeeze=False)
    for j, (ax, (mname, col)) in enumerate(zip(axes[:, 0], problem.output_map)):
        ax.plot(problem.t, problem.y[:, j], ".", ms=2.5, color="0.55", label=f"logged {col}")
        ax.plot(problem.t, initial[:, j], "--", lw=1, color="tab:orange", label="initial guess")
        ax.plot(problem.t, fitted[:, j], lw=1.3, color="tab:blue", label="fitted")
        ax.set_ylabel(mname)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    axes[-1, 0].set_xlabel(f"{problem.time_col} [s]")
    if result is not None:
        est = ", ".join(f"{k} = {v:.4g} ± {hi - v:.2g}"
                        for k, v, hi in zip(result.names, result.estimate, result.ci_high))
        axes[0, 0].set_title(f"{problem.compiled.name}: {est}", fontsize=9)
    return [save_figure(fig, out_png)]


__all__ = ["register", "cmd_fit", "cmd_bag2csv", "plot_fit"]
