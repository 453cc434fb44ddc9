"""Running a compiled bond-graph model through the BDF solver and collecting named outputs.

Output columns are ``t``, every state by its model name (``mass.p``, ``spring.q``,
``pid.xi``...) and every recorded signal (Recorder columns), in that order.
"""
from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .codegen import CompiledModel, compile_model
from .core import Model
from bondsim_ros.solver.options import SolverOptions


@dataclass
class SimulationResult:
    names: list  # column names, "t" first
    data: np.ndarray  # (len(t), len(names))
    stats: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    model_name: str = ""

    @property
    def t(self) -> np.ndarray:
        return self.data[:, 0]

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.data[:, self.names.index(name)]
        except ValueError:
            raise KeyError(f"no column {name!r}; columns: {', '.join(self.names)}") from None

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def with_columns(self, names, columns) -> "SimulationResult":
        """A copy with derived columns appended (``columns``: one 1-D array per name)."""
        return SimulationResult(names=list(self.names) + list(names),
                                data=np.column_stack([self.data] + list(columns)),
                                stats=self.stats, timings=self.timings, model_name=self.model_name)

    def to_csv(self, path) -> None:
        # %.17g round-trips every float64 exactly; what np.savetxt(fmt="%.17g", delimiter=",")
        # writes, by _rows_text
        with open(path, "w", newline="") as fh:
            csv.writer(fh).writerow(self.names)
            data = np.asarray(self.data, dtype=float)
            if data.ndim != 2:
                np.savetxt(fh, data, fmt="%.17g", delimiter=",")
                return
            for start in range(0, data.shape[0], _CSV_BLOCK):
                fh.write(_rows_text(data[start:start + _CSV_BLOCK]))


_CSV_BLOCK = 512  # rows formatted by one call


def _rows_text(block: np.ndarray) -> str:
    """The rows of a 2-D float block as CSV text, '%.17g' comma-separated, each line ending in a
    newline: what np.savetxt(fmt="%.17g", delimiter=",") writes. By the solver's C core where this
    process has it loaded (the Robotino's 2501 x 80 table: 9 ms in blocks of 32 rows, in calls
    that let go of the GIL), else by one Python format call for the block (72 ms)."""
    from bondsim_ros.solver import _ccore

    lib = _ccore.loaded()
    if lib is not None:
        return _ccore.rows_text(lib, block)
    line = ",".join(["%.17g"] * block.shape[1]) + "\n"
    return (line * block.shape[0]) % tuple(block.ravel().tolist())


class StreamedCsv:
    """A result's CSV text formatted while the solve computes it: ``simulate(..., rows=this)``
    hands over the table's rows as each stretch of them is solved, and a thread of its own
    formats them while the solver core (a ctypes call, which lets go of the GIL) computes the
    next stretch. ``to_csv(result, path)`` then writes the bytes ``result.to_csv(path)`` writes:
    columns a postprocessor appended to the solved ones (``SimulationResult.with_columns``) are
    formatted then and joined to the rows' text; a result whose solved columns differ from the
    rows handed over is written by ``result.to_csv`` itself. ``derive`` (a model's
    ``postprocess_rows``, made for the solved columns): the appended columns of the next rows,
    handed the rows in order; they are then formatted on the thread as well, and written when
    they are, bit for bit, the result's appended columns. ``path`` and ``names`` (the header,
    appended columns included): the thread writes the file as it goes, rewritten by
    ``result.to_csv`` when the result is not what was written."""

    # rows per format call on the thread: a short hold of the GIL (``derive``'s numpy, and the
    # formatting itself where no core is loaded: 512 rows held it ~10 ms), which the solving
    # thread needs back between its stretches
    BLOCK = 32

    def __init__(self, derive=None, path=None, names=None):
        import queue

        self._derive = derive
        self._derived = []  # the derived columns' blocks, to check against the result's
        self._path, self._names = (path, list(names)) if path is not None and names is not None else (None, None)
        self._error = None  # an OSError of the thread's writing, raised by to_csv
        self._todo = queue.SimpleQueue()
        self._lines = []  # without a path: the rows formatted so far, without their line ends
        self._data = None
        self._thread = None

    def rows_ready(self, data: np.ndarray, stop: int) -> None:
        """Rows ``data[:stop]`` hold their final values (``data``: the same array each call)."""
        if self._thread is None:
            import threading

            self._data = data
            self._thread = threading.Thread(target=self._format, daemon=True)
            self._thread.start()
        self._todo.put(stop)

    def _format(self) -> None:
        data, done, fh = self._data, 0, None
        if self._path is not None:
            try:
                fh = open(self._path, "w", newline="")
                csv.writer(fh).writerow(self._names)
            except OSError as exc:
                self._error = exc
        while True:
            stop = self._todo.get()
            if stop is None:
                break
            for start in range(done, stop, self.BLOCK):
                block = data[start:min(stop, start + self.BLOCK)]
                if self._derive is not None:
                    more = np.asarray(self._derive(block), dtype=float)
                    self._derived.append(more)
                    block = np.concatenate([block, more], axis=1)
                text = _rows_text(block)
                if self._path is None:
                    self._lines.extend(text[:-1].split("\n"))
                elif fh is not None:
                    try:
                        fh.write(text)
                    except OSError as exc:
                        self._error, fh = exc, None
            done = max(done, stop)
        if fh is not None:
            try:
                fh.close()
            except OSError as exc:
                self._error = exc

    def close(self) -> None:
        """Stop the thread (once the rows are all in, or the solve failed)."""
        if self._thread is not None:
            self._todo.put(None)
            self._thread.join()
            self._thread = None

    def to_csv(self, result: SimulationResult, path) -> None:
        self.close()
        if self._error is not None:
            raise self._error
        data = self._data
        n = 0 if data is None else data.shape[1]
        solved = result.data[:, :n] if result.data.ndim == 2 else None
        if (data is None or solved is None or solved.shape != data.shape
                or not np.array_equal(solved.view(np.int64), data.view(np.int64))):
            result.to_csv(path)
            return
        extra = np.asarray(result.data[:, n:], dtype=float)
        lines = self._lines
        if self._derive is not None:
            derived = np.concatenate(self._derived) if self._derived else None
            if derived is None or derived.shape != extra.shape or not np.array_equal(
                    derived.view(np.int64), np.ascontiguousarray(extra).view(np.int64)):
                result.to_csv(path)  # the result's own columns, not those the thread made
                return
        elif extra.shape[1]:
            if self._path is not None:  # the thread wrote rows without the appended columns
                result.to_csv(path)
                return
            lines = map(",".join, zip(lines, _rows_text(extra)[:-1].split("\n")))
        if self._path is not None:
            if str(path) != str(self._path) or list(result.names) != self._names:
                result.to_csv(path)
            return  # written by the thread
        text = "\n".join(lines) + "\n"
        with open(path, "w", newline="") as fh:
            csv.writer(fh).writerow(result.names)
            fh.write(text)


def _named_values(values, what: str) -> dict:
    """``values`` (None: none) as the mapping of names to values it must be."""
    if values is None:
        return {}
    if not hasattr(values, "items"):
        raise TypeError(f"{what} must map names to values (a dict), got {type(values).__name__}")
    return values


def _number(value, what: str) -> float:
    """``value`` as a float: a number, or text of one in decimal ASCII digits; not a bool (True
    is no parameter value, though float makes it 1.0, as sweep refuses it) nor '1_0' (10 to
    float)."""
    text = isinstance(value, str)
    try:
        if isinstance(value, bool) or (text and ("_" in value or not value.isascii())):
            raise ValueError
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a number, got {value!r}") from None


def _start_time(t0) -> float:
    t0 = _number(t0, "t0")
    if not math.isfinite(t0):  # (NaN ran into 'more than 500000 steps ... (t=nan)')
        raise ValueError(f"t0: the start time must be finite, got {t0!r}")
    return t0


class Simulation:
    """A model instance stepping in time; resumable (the ROS dynamics node advances it per frame)."""

    def __init__(self, model: Model | CompiledModel, options: SolverOptions | None = None, t0=0.0,
                 params: dict | None = None, y0: dict | None = None, log=None):
        from bondsim_ros.solver import BDFSolver

        t0 = _start_time(t0)
        if not isinstance(model, (Model, CompiledModel)):  # (a name: bondsim_ros.models.build_model makes the Model)
            raise TypeError(f"Simulation needs a Model or a CompiledModel, got {type(model).__name__} {model!r:.80}")
        self.compiled = model if isinstance(model, CompiledModel) else compile_model(model, log=log)
        c = self.compiled
        self.problem = c.problem()
        self.problem.params[:], y_init = self._start_values(params, y0)
        self.solver = BDFSolver(self.problem, options)
        self.solver.init(t0, y_init, free=self._free_start(y0))
        self._check_fixed_given(t0, y_init, y0)
        self.t = t0
        self._out = np.zeros(len(c.output_names))

    def _free_start(self, y0) -> list:
        """The differential states whose initial value neither the model nor ``y0`` gave: the
        consistent start may move them onto the constraints (BDFSolver.init's ``free``)."""
        given = set(_named_values(y0, "y0"))
        names = self.compiled.var_names
        return [j for j in self.compiled.free_start or [] if names[j] not in given]

    def _check_fixed_given(self, t0, y_init, y0) -> None:
        """Refuse a start that had to move an initial value the model (or ``y0``) gave for a
        state its constraints fix (a capacitor across an effort source: q = C e): the
        consistent initialisation starts from the given value and lands on the only one the
        constraints allow, which the run would otherwise take without a word."""
        from bondsim_ros.solver import InconsistentInitialValues

        c, y = self.compiled, self.solver.y
        overridden = set(_named_values(y0, "y0"))
        checked = list(c.fixed_given or [])
        # a y0 for any unknown the start solves for (its derivative in no equation: a state the
        # constraints fix though the model gave it no value, a Derivative's hidden x) was dropped
        seen = {j for j, _ in checked}
        checked += [(j, "") for j, name in enumerate(c.var_names)
                    if name in overridden and not c.differential[j] and j not in seen]
        for j, what in checked:
            given, start = float(y_init[j]), float(y[j])
            # equal within the solver's absolute tolerance and a relative 1e-6: the consistent
            # solve lands on a value given exactly to some 1e-10, one rounded to 6 digits passes
            if abs(start - given) <= 1e-6 * max(abs(given), abs(start)) + float(self.solver.atol[j]):
                continue
            name = c.var_names[j]
            # the model's own value ("m: p0 = 1") names its component, which a command puts the
            # model file's line to; a y0 is the caller's, not the file's
            equation = None if name in overridden else what
            what = f"y0 {name!r} = {given:g}" if name in overridden else what
            raise InconsistentInitialValues(
                f"{what} cannot hold: the constraints of the model fix {name} at {start:.6g} at t={t0:g} (its "
                f"element's effort or flow is set by the elements it is joined to); leave the initial value out "
                f"or give {start:.6g}", equation=equation)

    def _start_values(self, params, y0):
        """(parameters, y0) of a run: the model's values with ``params`` and ``y0`` (name ->
        value) put in; refused parameters raise the model's ModelError, unknown names KeyError."""
        c = self.compiled
        p = np.array(c.params, dtype=float)
        for name, value in _named_values(params, "params").items():
            p[c.param_index(name)] = _number(value, f"parameter {name!r}")
        c.check_params(p)
        y_init = c.y0.copy()
        for name, value in _named_values(y0, "y0").items():
            if name not in c.var_names:
                raise KeyError(f"model {c.name!r} has no unknown {name!r}")
            y_init[c.var_names.index(name)] = _number(value, f"y0 {name!r}")
            if not math.isfinite(y_init[c.var_names.index(name)]):  # (else blamed on the first law that reads it)
                raise ValueError(f"y0 {name!r}: an initial value must be a finite number, got {value!r}")
        return p, y_init

    def reset(self, params: dict | None = None, y0: dict | None = None, t0: float = 0.0) -> None:
        """Start a new run from ``t0``: the results are bit for bit those of a new
        ``Simulation(compiled, options, params=params, y0=y0, t0=t0)`` with this one's options, but
        the solver and its arrays are reused (``BDFSolver.reset``): what a fit or a parameter
        sweep of a small model saves per run. ``params`` and ``y0`` are relative to the model's
        own values, not to the previous run's."""
        t0 = _start_time(t0)
        p, y_init = self._start_values(params, y0)
        self.problem.params[:] = p
        self.solver.reset(t0, y_init, params=p, free=self._free_start(y0))
        self._check_fixed_given(t0, y_init, y0)
        self.t = t0

    @property
    def output_names(self) -> list:
        return ["t"] + list(self.compiled.output_names)

    def set_param(self, name: str, value: float, restart: bool = False) -> None:
        self.set_params({name: value}, restart=restart)

    def set_params(self, values: dict, restart: bool = False) -> None:
        """Change several run-time parameters at once (one solver restart for all of them)."""
        p = self.problem.params.copy()
        for name, value in _named_values(values, "values").items():
            p[self.compiled.param_index(name)] = _number(value, f"parameter {name!r}")
        self.compiled.check_params(p)
        self.solver.set_params(p, restart=restart)
        self.problem.params[:] = p

    def step_to(self, t: float):
        """Advance to ``t`` with the solver ending a step there (a few ulps past it, so never a
        last step below hmin); returns (y, y') at ``t``. A live twin steps frame by frame this
        way: the state is a converged step point, not an interpolation between steps, so a
        command that restarts the integration from it starts on the constraints (an interpolated
        state violates the Robotino's rolling constraints by up to 1e-2, and the restart then
        underflows the step size)."""
        Y, YP = self.solver.step_to(t)
        self.t, self.last_y, self.last_yp = t, Y[0].copy(), YP[0].copy()
        return Y[0], YP[0]

    def restart(self) -> None:
        """Restart the integration from the last output state (after a failed step: the
        failed stretch past it is dropped), parameters unchanged."""
        self.solver.set_params(self.solver.p, restart=True)

    def param(self, name: str) -> float:
        return float(self.problem.params[self.compiled.param_index(name)])

    def outputs_at(self, t: float, y: np.ndarray, yp: np.ndarray) -> np.ndarray:
        n = self.compiled.n
        if len(y) != n or len(yp) != n:  # the kernel reads n of each, whatever it is handed
            raise ValueError(f"outputs_at: y and yp must each hold one value per unknown of the model ({n}), got "
                             f"{len(y)} and {len(yp)}")
        self.compiled.outputs(float(t), y, yp, self.problem.params, self._out)
        return self._out.copy()

    def advance(self, t_out, progress=None, tstop=math.inf, out=None):
        """Integrate to the times ``t_out`` (ascending, > current t); returns rows of outputs.
        ``tstop``: no solver step goes beyond it (the end of the interval a model is defined on).
        ``out``: a C-contiguous float64 array of len(t_out) rows of len(output_names) to fill
        (and return) instead of a new one."""
        t_out = np.atleast_1d(np.asarray(t_out, dtype=float))  # (the solver refuses one that is not 1-D)
        if t_out.size == 0:
            raise ValueError("advance: no output times given")
        from bondsim_ros.solver.kernels import output_rows

        Y, YP = self.solver.advance(t_out, progress=progress, tstop=tstop)
        last = float(t_out[-1])
        t_laws = t_out
        if last == tstop:
            # a row at tstop holds the state the interval reaches and y' from the left; its laws
            # are read from the left too, so that a switch in time at tstop (a Step's t < t0 at
            # t0) does not pair that state with the law after it
            t_laws = t_out.copy()
            t_laws[-1] = math.nextafter(last, -math.inf)
        rows = output_rows(self.compiled.outputs, len(self.compiled.output_names), t_laws, Y, YP, self.problem.params,
                           out=out)
        if t_laws is not t_out:
            rows[-1, 0] = last
        self.t = last
        self.last_y, self.last_yp = Y[-1].copy(), YP[-1].copy()
        return rows


def simulate(model, t_end: float, dt_out: float, t0: float = 0.0, options: SolverOptions | None = None,
             params=None, y0=None, progress=None, log=None, rows=None, ahead=None) -> SimulationResult:
    """Simulate ``model`` from ``t0`` to ``t_end`` with outputs every ``dt_out``; ``options``:
    the solver's (default ``SolverOptions()``). ``progress``: called with the simulated time as
    the run goes on (the command line draws its progress bar with it). ``rows``: an object whose
    ``rows_ready(data, stop)`` is told each stretch of the result's table as it is solved
    (``StreamedCsv``). ``ahead``: a ``solver.ahead.Ahead`` (the command line's): its run, started
    from an image, is taken when it is this run's solve; else this run's image is written there."""
    compiled, t_build, t_out = _prepare(model, t0, t_end, dt_out, log)
    tic = time.perf_counter()
    sim = Simulation(compiled, options, t0=t0, params=params, y0=y0)
    t_init = time.perf_counter() - tic
    return _run(sim, t_out, progress, t_build, t_init, rows, ahead)


def simulate_many(model, param_sets, t_end: float, dt_out: float, t0: float = 0.0,
                  options: SolverOptions | None = None, y0=None, log=None) -> list:
    """``simulate`` once per parameter set (an iterable of name -> value dicts, each relative to
    the model's own values), on one solver: the model is compiled and the solver set up once,
    then reset for each run (``Simulation.reset``). Each result is bit for bit what ``simulate``
    gives for that set; a small model's run then costs its integration and consistent
    initialisation, not a solver's construction as well. A set the model refuses raises as
    ``simulate`` would, naming the parameter."""
    compiled, t_build, t_out = _prepare(model, t0, t_end, dt_out, log)
    sim, results = None, []
    for params in param_sets:
        tic = time.perf_counter()
        if sim is None:
            sim = Simulation(compiled, options, t0=t0, params=params, y0=y0)
        else:
            sim.reset(params=params, y0=y0, t0=t0)
        results.append(_run(sim, t_out, None, t_build, time.perf_counter() - tic))
        t_build = 0.0  # the build is the first run's
    return results


def _prepare(model, t0, t_end, dt_out, log):
    """The checked time span's output instants and the compiled model, with its build time."""
    t0, t_end, dt_out = _number(t0, "t0"), _number(t_end, "t_end"), _number(dt_out, "dt_out")
    if not (t_end > t0 and math.isfinite(t_end) and math.isfinite(t0)):
        raise ValueError(f"t_end ({t_end}) must be a finite time greater than t0 ({t0})")
    if not (dt_out > 0 and math.isfinite(dt_out)):  # (inf gave the end row alone)
        raise ValueError(f"dt_out must be a positive finite time, got {dt_out}")
    tic = time.perf_counter()
    compiled = model if isinstance(model, CompiledModel) else compile_model(model, log=log)
    return compiled, time.perf_counter() - tic, output_times(t0, t_end, dt_out)


MAX_OUTPUT_TIMES = 10**9  # (8 GB a column)


def output_times(t0, t_end, dt_out) -> np.ndarray:
    """The output times of a run from ``t0`` (not included) to ``t_end``: every ``dt_out``, and
    ``t_end`` itself where it is not one of them."""
    rows = math.floor((t_end - t0) / dt_out + 1e-9)
    if rows > MAX_OUTPUT_TIMES:  # numpy's MemoryError would name exbibytes, not the arguments
        raise ValueError(f"(t_end - t0) / dt_out = {rows:.3g} output times (limit {MAX_OUTPUT_TIMES:.0e}): "
                         f"use a larger dt_out")
    n = int(rows)
    t_out = t0 + dt_out * np.arange(1, n + 1)
    if t_out.size and abs(t_out[-1] - t_end) <= 1e-9 * max(1.0, abs(t_end)):
        # t_end itself, not its product's rounding: 3 * 0.1 is 0.30000000000000004, past a
        # Step at 0.3 that the run's last row must read from the left (Simulation.advance)
        t_out[-1] = t_end
    if t_out.size == 0 or t_out[-1] < t_end - 1e-12 * max(1.0, abs(t_end)):
        t_out = np.append(t_out, t_end)
    return t_out


def _stretches(m: int, streamed: bool) -> list:
    """The (start, stop) output rows of each solver call of a run: all in one, or ``_STRETCH``
    at a time when someone takes the rows as they come (the same outputs either way: the core's
    steps do not depend on how the output times are split)."""
    return [(a, min(m, a + _STRETCH)) for a in range(0, m, _STRETCH)] if streamed else [(0, m)]


def _advance(sim, t_out, data, progress, rows, stretches):
    """Solve into ``data[1:]``, a solver call per stretch; with ``rows``, each stretch handed
    over once solved."""
    if rows is not None:
        rows.rows_ready(data, 1)
    tstop = float(t_out[-1])
    for start, stop in stretches:
        sim.advance(t_out[start:stop], progress=progress, tstop=tstop, out=data[1 + start:1 + stop])
        if rows is not None:
            rows.rows_ready(data, 1 + stop)


_STRETCH = 128  # output rows per solver call when someone takes the rows as they come


def _run(sim, t_out, progress, t_build, t_init, rows=None, ahead=None) -> SimulationResult:
    """Integrate a started Simulation over ``t_out`` into a result (first row: the start)."""
    compiled = sim.compiled
    t0 = sim.t
    # the table whole, filled in place: the start's row, then the output rows (a copy of a
    # small model's table cost as much as its output kernel)
    data = np.empty((t_out.shape[0] + 1, 1 + len(compiled.output_names)))
    data[0, 0] = t0
    compiled.outputs(float(t0), sim.solver.y, sim.solver.yp, sim.problem.params, data[0, 1:])
    tic = time.perf_counter()
    # the last step ends at t_end, not beyond: inputs given on [t0, t_end] (the dual-arm manipulator's voltage
    # series) are not evaluated outside it, and the last row is a step point, not interpolated
    stretches = _stretches(t_out.shape[0], rows is not None)
    if ahead is not None:  # (a progress callback splits the calls by time: no image then)
        ahead.use(sim.solver if progress is None else None, t_out, float(t_out[-1]), stretches)
    _advance(sim, t_out, data, progress, rows, stretches)
    if ahead is not None:
        ahead.finish()
    t_solve = time.perf_counter() - tic
    return SimulationResult(names=sim.output_names, data=data, stats=dict(sim.solver.stats),
                            timings={"build": t_build, "init": t_init, "solve": t_solve},
                            model_name=compiled.name)
