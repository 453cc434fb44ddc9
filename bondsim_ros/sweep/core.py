"""Parameter sweeps: one simulation per point of a parameter grid, run in parallel.

Every run is :func:`bondsim_ros.bondgraph.simulate` with the same options ``bondsim-ros
simulate`` passes it (and the built-in model's postprocessing), so a sweep's row holds the same
numbers as the last row of ``simulate --param ...``'s CSV. A worker (a process of the local
pool, or a Dask worker) loads the compiled model once, from the generated-code cache the
calling process filled, and keeps it for every run it is given; runs go to the workers in
chunks so that a short run does not cost a round trip each.

A run that raises (a parameter value the model refuses, a solver failure) is a row with status
``failed`` and the error's message; the sweep goes on.
"""
from __future__ import annotations

import itertools
import math
import numbers
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bondsim_ros.solver.options import SolverOptions

# the workers (bondsim_ros.sweep.workers); default_jobs and load_model are also sweep's API
from .workers import (WorkerDied, Workers, WorkersError, check_jobs, default_jobs, load_model,  # noqa: F401
                      model_spec, worker_model)

# A grid larger than this is refused before anything runs (a typo such as k=0:1:1e9).
MAX_RUNS = 1_000_000
# Largest number of output rows a run computes (t_end / dt_out), as ``simulate`` limits it.
MAX_OUTPUT_ROWS = 1_000_000

STATUS_OK, STATUS_FAILED, STATUS_CANCELLED = "ok", "failed", "cancelled"


class SweepError(ValueError):
    """Bad sweep input (a parameter spec, an option, the model): nothing was run. ``arg``: the
    argument of :func:`sweep` concerned (``params``, ``t_end``, ``outputs``, ...), which the
    message starts with; ``message`` without it (the command line names its option instead)."""

    def __init__(self, message: str, arg: str | None = None):
        super().__init__(f"{arg}: {message}" if arg else message)
        self.message, self.arg = message, arg


class SweepAborted(WorkerDied):
    """A worker died during a sweep (killed, out of memory): the workers are stopped; ``result``
    holds the finished runs, the unfinished ones with status ``failed`` and the reason."""

    def __init__(self, message: str, result: "SweepResult"):
        super().__init__(message)
        self.result = result


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep: the workers are stopped; ``result`` holds the finished runs, the
    others with status ``cancelled``; ``cause``: the interruption caught (a KeyboardInterrupt, or
    a subclass a program raises for SIGTERM)."""

    def __init__(self, result: "SweepResult", cause: BaseException | None = None):
        super().__init__("sweep interrupted")
        self.result, self.cause = result, cause


# -- the grid ---------------------------------------------------------------------------------

def parse_values(text: str) -> list:
    """``"1:10:4"`` -> 4 values evenly spaced from 1 to 10 (both included, numpy.linspace);
    ``"0.1,0.2"`` -> that list; ``"5"`` -> [5.0]. SweepError for anything else."""
    from bondsim_ros.cliargs import number

    form = "START:STOP:COUNT, V1,V2,... or VALUE"
    text = text.strip()
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop = number(parts[0]), number(parts[1])
            for word, value in (("START", start), ("STOP", stop)):  # linspace would say nan
                if not math.isfinite(value):
                    raise SweepError(f"{word} must be a finite number, got {value!r}")
            count = number(parts[2])
            if not (count.is_integer() and count >= 1):
                raise SweepError(f"COUNT must be a whole number >= 1, got {parts[2].strip()!r}")
            if count > MAX_RUNS:
                raise SweepError(f"COUNT {int(count)} is more than {MAX_RUNS} runs")
            if count > 1 and not math.isfinite(stop - start):  # linspace would say nan, with numpy's warnings
                raise SweepError(f"the range {start:g} to {stop:g} is wider than a float holds (STOP - START "
                                 f"overflows): its steps cannot be computed")
            values = np.linspace(start, stop, int(count)).tolist()
        else:
            values = [number(v) for v in text.split(",")]
    except SweepError:
        raise
    except ValueError:
        raise SweepError(f"expects {form}, got {text!r}") from None
    bad = [v for v in values if not math.isfinite(v)]
    if bad:
        raise SweepError(f"values must be finite numbers, got {bad[0]!r}")
    return values


def parse_param(item: str) -> tuple[str, list]:
    """``"k=1:10:4"`` -> ("k", [1.0, 4.0, 7.0, 10.0]) (see :func:`parse_values`)."""
    name, sep, spec = item.partition("=")
    if not sep or not name.strip():
        raise SweepError(f"expects NAME=START:STOP:COUNT, NAME=V1,V2,... or NAME=VALUE, got {item!r}")
    try:
        return name.strip(), parse_values(spec)
    except SweepError as exc:
        raise SweepError(f"{name.strip()}: {exc}") from None


def grid(params: dict) -> list[dict]:
    """The Cartesian product of ``{name: values}``, the last name varying fastest."""
    names = list(params)
    sizes = [len(params[n]) for n in names]
    if any(s == 0 for s in sizes):
        raise SweepError(f"{names[sizes.index(0)]}: no values", "params")
    if math.prod(sizes) > MAX_RUNS:
        raise SweepError(f"{' x '.join(map(str, sizes))} = {math.prod(sizes)} runs: more than {MAX_RUNS}", "params")
    return [dict(zip(names, (float(v) for v in combo))) for combo in itertools.product(*(params[n] for n in names))]


# -- one worker's model and runs ----------------------------------------------------------------

@dataclass(frozen=True)
class RunOptions:
    """What every run of a sweep shares (sent to the workers once per chunk)."""
    t_end: float
    dt_out: float
    options: SolverOptions = SolverOptions()
    outputs: tuple | None = None  # column names; None: every output column
    at: tuple | None = None  # output times to take the columns at; None: the final row


def _select(result, opts: RunOptions) -> dict:
    names = list(opts.outputs) if opts.outputs is not None else [n for n in result.names if n != "t"]
    if opts.at is None:
        return {n: float(result[n][-1]) for n in names}
    out = {}
    t = result.t
    for when in opts.at:
        row = int(np.argmin(np.abs(t - when)))
        for n in names:
            out[f"{n}@{_at_label(when)}"] = float(result[n][row])
    return out


def run_one(compiled, entry, values: dict, opts: RunOptions) -> dict:
    """One run: {"status", "message", "seconds", "outputs"}; an exception becomes a failed row."""
    from bondsim_ros.bondgraph.core import ModelError
    from bondsim_ros.bondgraph.simulation import simulate
    from bondsim_ros.solver import SolverError

    tic = time.perf_counter()
    try:
        result = simulate(compiled, t_end=opts.t_end, dt_out=opts.dt_out, options=opts.options, params=values)
        if entry is not None and entry.postprocess is not None:
            result = entry.postprocess(result)
        outputs = _select(result, opts)
    except ModelError as exc:  # a parameter value the model refuses
        return {"status": STATUS_FAILED, "message": str(exc), "seconds": time.perf_counter() - tic, "outputs": {}}
    except SolverError as exc:
        return {"status": STATUS_FAILED, "message": f"simulation failed: {exc}",
                "seconds": time.perf_counter() - tic, "outputs": {}}
    except Exception as exc:  # noqa: BLE001 - one run's failure is its row's, the sweep goes on
        return {"status": STATUS_FAILED, "message": f"{type(exc).__name__}: {exc}",
                "seconds": time.perf_counter() - tic, "outputs": {}}
    return {"status": STATUS_OK, "message": "", "seconds": time.perf_counter() - tic, "outputs": outputs}


def run_chunk(spec: str, chunk: list, opts: RunOptions) -> list:
    """Run ``chunk`` ([(index, {param: value}), ...]) with the worker's copy of the model;
    returns [(index, row), ...]. The function the pool and Dask workers call."""
    try:
        compiled, entry = worker_model(spec)
    except Exception as exc:  # noqa: BLE001 - e.g. a cluster worker without the model file
        message = f"the worker could not load the model: {type(exc).__name__}: {exc}"
        return [(i, {"status": STATUS_FAILED, "message": message, "seconds": 0.0, "outputs": {}}) for i, _ in chunk]
    return [(i, run_one(compiled, entry, values, opts)) for i, values in chunk]


# -- the result ---------------------------------------------------------------------------------

@dataclass
class SweepResult:
    """One row per run, in grid order: ``run`` (its index), the parameters, ``status`` (ok,
    failed, cancelled), ``message`` (why it failed), ``seconds`` (its wall time in the worker)
    and the selected outputs (NaN when the run did not finish)."""
    model: str
    param_names: list
    output_names: list
    runs: list  # [{param: value}]
    rows: list  # [{"status", "message", "seconds", "outputs"}]
    seconds: float = 0.0  # wall time of the whole sweep
    workers: str = ""
    extra: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)  # swept parameters that no law reads

    @property
    def columns(self) -> list:
        return ["run", *self.param_names, "status", "message", "seconds", *self.output_names]

    @property
    def status(self) -> list:
        return [r["status"] for r in self.rows]

    def column(self, name: str) -> np.ndarray:
        if name == "run":
            return np.arange(len(self.rows))
        if name in self.param_names:
            return np.array([r[name] for r in self.runs], dtype=float)
        if name in ("status", "message"):
            return np.array([r[name] for r in self.rows], dtype=str)
        if name == "seconds":
            return np.array([r["seconds"] for r in self.rows], dtype=float)
        if name in self.output_names:
            return np.array([r["outputs"].get(name, math.nan) for r in self.rows], dtype=float)
        raise KeyError(f"no column {name!r}; columns: {', '.join(self.columns)}")

    def __getitem__(self, name: str) -> np.ndarray:
        return self.column(name)

    def to_csv(self, path) -> None:
        import csv

        with open(path, "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(self.columns)
            for i, (values, row) in enumerate(zip(self.runs, self.rows)):
                # repr: the shortest text that reads back as the same float64
                w.writerow([i, *(repr(values[n]) for n in self.param_names), row["status"], row["message"],
                            f"{row['seconds']:.6f}",
                            *(repr(row["outputs"].get(n, math.nan)) for n in self.output_names)])

    def to_npz(self, path) -> None:
        with open(path, "wb") as fh:  # np.savez given a name would append .npz to it
            np.savez(fh, **{name: self.column(name) for name in self.columns})

    def to_parquet(self, path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({name: self.column(name) for name in self.columns}), str(path))

    def write(self, path) -> None:
        """By the suffix: .csv, .npz or .parquet (pyarrow); SweepError for another suffix, or
        .parquet without pyarrow (:func:`check_format`)."""
        check_format(path)
        suffix = Path(path).suffix.lower()
        {".npz": self.to_npz, ".parquet": self.to_parquet}.get(suffix, self.to_csv)(path)


FORMATS = (".csv", ".npz", ".parquet")


def check_format(path) -> None:
    """SweepError unless ``path``'s suffix is a format :meth:`SweepResult.write` writes (and its
    library is installed), before the sweep runs."""
    suffix = Path(str(path)).suffix.lower()
    if str(path) != "-" and suffix not in FORMATS:
        raise SweepError(f"{path}: unknown format {suffix or '(no suffix)'!r} (give a name ending in "
                         f"{', '.join(FORMATS)}; - for CSV on standard output)")
    if suffix == ".parquet":
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise SweepError(f"{path}: writing Parquet needs pyarrow (pip install pyarrow), "
                             f"or write .csv or .npz") from None


# -- running ------------------------------------------------------------------------------------

def _value(v, name: str) -> float:
    """A parameter value of the grid: a finite number, else SweepError naming the parameter (as
    the command line refuses one). True and False are refused: float() would take them as 1 and
    0, and a flag given where a value belongs is a mistake, not a number."""
    if isinstance(v, (bool, np.bool_)):
        raise SweepError(f"{name}: {bool(v)} is not a number", "params")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise SweepError(f"{name}: {v!r} is not a number", "params") from None
    if not math.isfinite(x):
        raise SweepError(f"{name}: the values must be finite numbers, got {x!r}", "params")
    return x


def _chunks(runs: list, workers: int, chunksize: int | None) -> list:
    if chunksize is None:
        # ~4 chunks per worker: balances uneven run times while a chunk amortises the round trip
        chunksize = max(1, min(64, math.ceil(len(runs) / (4 * workers))))
    indexed = list(enumerate(runs))
    return [indexed[i:i + chunksize] for i in range(0, len(indexed), chunksize)]


def _check_span(t_end, dt_out) -> None:
    if not (math.isfinite(t_end) and math.isfinite(dt_out) and t_end > 0 and dt_out > 0):
        raise SweepError(f"must be positive finite numbers (got {t_end:g}, {dt_out:g})", "t_end, dt_out")
    if t_end / dt_out > MAX_OUTPUT_ROWS:
        raise SweepError(f"{t_end:g} / {dt_out:g} gives {t_end / dt_out:.3g} output rows per run "
                         f"(limit {MAX_OUTPUT_ROWS}): use a larger dt_out", "t_end, dt_out")


def _at_label(when: float) -> str:
    """The time of an ``--at`` column (``x@2.5``): 15 significant digits, so that two output
    times 0.5 s apart near 1e5 s are two columns (6, ``:g``'s, gave one label, holding the
    later time's value)."""
    return f"{when:.15g}"


def _check_at(at, t_end, dt_out) -> tuple:
    from bondsim_ros.bondgraph.simulation import output_times

    times = np.concatenate([[0.0], output_times(0.0, t_end, dt_out)])  # a run's rows: its start, then these
    out = []
    for when in at:
        when = float(when)
        if not (math.isfinite(when) and 0 <= when <= t_end * (1 + 1e-12)):
            # repr where %g would round the time onto the run's end (1.0000000001 shown as 1)
            shown = f"{when:g}" if float(f"{when:g}") != t_end else repr(when)
            raise SweepError(f"time {shown} is outside the run (0..{t_end:g})", "at")
        nearest = times[int(np.argmin(np.abs(times - when)))]
        if abs(nearest - when) > 1e-9 * max(1.0, abs(when)):
            raise SweepError(f"time {when:g} is not an output time (multiples of dt_out {dt_out:g}, and t_end)",
                             "at")
        if any(_at_label(when) == _at_label(other) for other in out):
            raise SweepError(f"time {_at_label(when)} is given twice", "at")
        out.append(when)
    if not out:
        raise SweepError("no times given", "at")
    return tuple(out)


def sweep(model, params, *, t_end: float | None = None, dt_out: float | None = None,
          options: SolverOptions | None = None, outputs=None, at=None, jobs: int | None = None,
          scheduler=None, chunksize: int | None = None, progress=None, use_cache: bool = True,
          log=None) -> SweepResult:
    """Simulate ``model`` once per point of the parameter grid ``params``.

    ``model``: a built-in model's name or a .yaml/.py model file (each worker loads it by that
    name; the generated code is built here first). ``params``: ``{name: values}`` (the
    Cartesian product is run; a string value is parsed as on the command line, ``"1:10:5"`` or
    ``"0.1,0.2"``) or a list of ``{name: value}`` runs. ``t_end``/``dt_out``: as ``simulate``
    (default: the built-in model's suggestion); ``options``: the solver's, every run's (default
    ``SolverOptions()``). ``outputs``: column names to keep (default:
    all); ``at``: output times to take them at, giving columns ``NAME@T`` (default: the final
    values, columns ``NAME``). ``jobs``: local worker processes (default and 0: the usable
    cores; 1 runs in this process); ``scheduler``: a Dask scheduler address
    (``tcp://host:8786``), or a ``dask.distributed`` Client or cluster object, to run on that
    cluster instead (not with ``jobs``: the cluster's workers are its own).
    ``progress(done, total, failed)`` is called as runs finish; ``log(message)`` with a note
    while the runs wait (a cluster without workers; default: printed on stderr).

    Raises SweepError for bad input (before any run), SweepInterrupted on Ctrl-C, SweepAborted
    when a worker dies."""
    from bondsim_ros.bondgraph.core import ModelError
    from bondsim_ros.robots import RobotError

    if isinstance(params, dict):
        parsed = {}
        for name, values in params.items():
            if isinstance(values, str):
                try:
                    values = parse_values(values)
                except SweepError as exc:
                    raise SweepError(f"{name}: {exc}", "params") from None
            elif np.ndim(values) == 0:
                values = [values]
            parsed[name] = [_value(v, name) for v in values]
        if not parsed:  # as the command line requires a --param, and a list of no runs is refused
            raise SweepError("no parameters given", "params")
        runs = grid(parsed)
        param_names = list(parsed)
    else:
        runs = [{k: _value(v, k) for k, v in run.items()} for run in params]
        param_names = list(runs[0]) if runs else []
        for i, run in enumerate(runs):
            if set(run) != set(param_names):
                raise SweepError(f"run {i} sets {sorted(run)}, run 0 {sorted(param_names)}: every run must set the "
                                 f"same parameters", "params")
        if not runs:
            raise SweepError("no runs given", "params")
        if len(runs) > MAX_RUNS:
            raise SweepError(f"{len(runs)} runs: more than {MAX_RUNS}", "params")
    spec = model_spec(model)
    try:
        compiled, entry = load_model(spec, use_cache=use_cache)
    except (ModelError, RobotError) as exc:  # RobotError: an installed plug-in that does not load
        raise SweepError(str(exc)) from None
    unknown = [n for n in param_names if n not in compiled.param_names]
    if unknown:
        raise SweepError(f"model {compiled.name!r} has no parameter {unknown[0]!r} "
                         f"(has: {', '.join(compiled.param_names) or 'none'})", "params")
    unread = [f"parameter {n}: no law of model {compiled.name!r} reads it, so its values change nothing"
              for n in compiled.read_by_no_law(param_names)]
    defaults = entry.defaults if entry is not None else {}
    t_end = t_end if t_end is not None else defaults.get("t_end")
    dt_out = dt_out if dt_out is not None else defaults.get("dt_out")
    if t_end is None or dt_out is None:
        raise SweepError("give both (this model suggests no defaults)", "t_end, dt_out")
    _check_span(t_end, dt_out)
    if options is None:
        options = SolverOptions()
    elif not isinstance(options, SolverOptions):
        raise SweepError(f"must be a SolverOptions, not {type(options).__name__}", "options")
    if chunksize is not None and (isinstance(chunksize, bool) or not isinstance(chunksize, numbers.Integral)
                                  or chunksize < 1):
        raise SweepError(f"must be a whole number of runs, at least 1, got {chunksize!r}", "chunksize")
    known = ["t", *compiled.output_names]
    # a built-in model's postprocessing adds columns: named beforehand where it says which
    # (postprocess_rows), else known only once a run has ended
    derive = entry.postprocess_rows(known) if entry is not None and entry.postprocess_rows else None
    if derive is not None:
        known += list(derive.names)
    if isinstance(outputs, (str, bytes)):  # 'mass.p' was read as the columns 'm', 'a', 's', 's', ...
        raise SweepError(f"expected a list of column names, got the string {outputs!r}", "outputs")
    if at is not None and (isinstance(at, (str, bytes)) or not isinstance(at, Iterable)):
        raise SweepError(f"expected a list of times, got {at!r}", "at")
    if outputs is not None:
        outputs = tuple(outputs)
        if not outputs:
            raise SweepError("no columns given", "outputs")
        twice = [n for i, n in enumerate(outputs) if n in outputs[:i]]
        if twice:  # the table has one column per name, as at has one time per label
            raise SweepError(f"column {twice[0]!r} is given twice", "outputs")
        if "t" in outputs:  # a row holds the values at one time (the end, or each of at), not a time column
            raise SweepError("'t' is the run's time, not an output column", "outputs")
        missing = [n for n in outputs if n not in known]
        if missing and (entry is None or entry.postprocess is None or derive is not None):
            raise SweepError(f"model {compiled.name!r} has no output column {missing[0]!r} "
                             f"(has: {', '.join(known[1:])})", "outputs")
    opts = RunOptions(float(t_end), float(dt_out), options, outputs,
                      None if at is None else _check_at(at, float(t_end), float(dt_out)))

    if scheduler is None:
        try:
            jobs = min(check_jobs(jobs), len(runs))  # (None and 0: every usable core)
        except WorkersError as exc:
            raise SweepError(exc.message, exc.arg) from None
    elif jobs is not None:
        raise SweepError("give jobs or scheduler, not both (a cluster's workers are its own)", "jobs")

    rows: list = [None] * len(runs)
    tic = time.perf_counter()
    died = None  # the WorkerDied that ended the runs early
    if scheduler is None and jobs <= 1:
        workers = "1 job (this process)"
        cause = _run_here(compiled, entry, runs, opts, rows, progress)
    else:
        try:
            pool = Workers(jobs if scheduler is None else 1, scheduler, log=log)
        except WorkersError as exc:
            raise SweepError(exc.message, exc.arg) from None
        cause, died = _run_on(pool, spec, runs, opts, rows, chunksize, progress)
        workers = pool.description  # (a cluster's: the workers it had at the end)
    seconds = time.perf_counter() - tic

    if died is not None:  # the runs it left unfinished: failed, with the reason
        lost = {"status": STATUS_FAILED, "message": f"not finished: {died}", "seconds": math.nan, "outputs": {}}
        rows = [r if r is not None else dict(lost) for r in rows]
    result = _result(compiled.name, param_names, runs, rows, opts, seconds, workers, known[1:])
    result.warnings = unread
    if died is not None:
        raise SweepAborted(str(died), result)
    if any(r["status"] == STATUS_CANCELLED for r in result.rows):
        raise SweepInterrupted(result, cause)
    return result


def _result(name, param_names, runs, rows, opts, seconds, workers, columns) -> SweepResult:
    """``columns``: the model's output columns as known before a run (those a postprocessing
    adds included where it names them), the table's when no run finished to say."""
    cancelled = {"status": STATUS_CANCELLED, "message": "not run (interrupted)", "seconds": math.nan, "outputs": {}}
    rows = [r if r is not None else dict(cancelled) for r in rows]
    output_names: list = []
    for r in rows:  # every finished run of one model has the same columns
        if r["status"] == STATUS_OK:
            output_names = list(r["outputs"])
            break
    else:
        names = list(opts.outputs) if opts.outputs is not None else list(columns)
        output_names = names if opts.at is None else [f"{n}@{_at_label(t)}" for t in opts.at for n in names]
    return SweepResult(name, param_names, output_names, runs, rows, seconds, workers)


class _Tally:
    def __init__(self, total, progress):
        self.total, self.progress, self.done, self.failed = total, progress, 0, 0

    def add(self, rows, pairs):
        for i, row in pairs:
            rows[i] = row
            self.done += 1
            self.failed += row["status"] != STATUS_OK
        if self.progress is not None:
            self.progress(self.done, self.total, self.failed)


def _run_here(compiled, entry, runs, opts, rows, progress):
    """The runs in this process; the interruption that stopped them, if one did."""
    tally = _Tally(len(runs), progress)
    try:
        for i, values in enumerate(runs):
            tally.add(rows, [(i, run_one(compiled, entry, values, opts))])
    except KeyboardInterrupt as exc:
        return exc  # the rows not run are marked cancelled
    return None


def _run_on(pool: Workers, spec, runs, opts, rows, chunksize, progress):
    """The runs on ``pool``; (the interruption that stopped them, the WorkerDied that ended
    them), each None when none did."""
    tally = _Tally(len(runs), progress)
    chunks = _chunks(runs, pool.size, chunksize)
    try:
        with pool:
            pool.run(run_chunk, [(spec, chunk, opts) for chunk in chunks],
                     lambda i, pairs: tally.add(rows, pairs))
    except KeyboardInterrupt as exc:
        return exc, None  # the workers are stopped; the unfinished rows are marked cancelled
    except WorkerDied as exc:
        return None, exc  # the workers are stopped; the finished rows stand
    return None, None
