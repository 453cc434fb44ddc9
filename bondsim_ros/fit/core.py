"""Parameter identification of a bond-graph model from logged inputs and responses (no ROS).

The model is simulated with the logged inputs held between samples (zero-order hold, as a
controller or ``/cmd_vel`` applies them), and ``scipy.optimize.least_squares`` adjusts the
model's run-time parameters (``model.parameter``) so that the simulated output columns match
the logged ones at the logged times. Run-time parameters are not in the compiled-code cache
key, so every evaluation reuses the same numba kernels: one evaluation is one solver run.

Statistics (nonlinear least squares, e.g. Bates & Watts 1988, ch. 2): with the residual
Jacobian J at the optimum, m residuals and n parameters, s^2 = |r|^2 / (m - n) estimates the
noise variance and Cov = s^2 (J^T J)^-1; the 95 % interval is estimate +- t_{0.975, m-n} SE.
They assume independent noise of one variance across all residuals: when outputs of different
units are fitted together, give ``weights`` (1/sigma of each column).
"""
from __future__ import annotations

import csv
import math
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bondsim_ros.cliargs import number
from bondsim_ros.solver.options import SolverOptions

from .options import FIT_OPTIONS

MAX_VALUE = 1e150  # data magnitude whose square still fits a float with room for the sums


class FitError(ValueError):
    """A user-facing problem with the data, the parameter names or the fit itself."""


class FitRunFailed(FitError):
    """A simulation of the fit that the solver could not finish (its start was not refused):
    the fit stops, as ``simulate`` does, with exit status 1 on the command line."""


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------
@dataclass
class LogData:
    names: list
    data: np.ndarray  # (rows, columns)
    source: str = ""
    notes: list = field(default_factory=list)  # what the reader dropped or changed, for the user
    lines: list | None = None  # the file line of each row (read_csv), for the messages naming a row

    def row(self, i: int) -> str:
        """Row ``i`` (from 0) as a message names it: ``line 12`` when read from a file, else
        ``data row 13``."""
        return f"line {self.lines[i]}" if self.lines is not None else f"data row {i + 1}"

    def at(self, i: int) -> str:
        """Where row ``i`` is, at the start of a message: ``log.csv:12`` when read from a file,
        else ``log.csv: data row 13``."""
        src = self.source or "data"
        return f"{src}:{self.lines[i]}" if self.lines is not None else f"{src}: data row {i + 1}"

    def column(self, name: str) -> np.ndarray:
        try:
            return self.data[:, self.names.index(name)]
        except ValueError:
            raise FitError(f"{self.source or 'data'}: no column {name!r} (columns: {', '.join(self.names)})") from None


def read_csv(path) -> LogData:
    """Read a numeric CSV with a header row; every cell must parse as a finite number."""
    path = Path(path)
    if not path.exists():
        raise FitError(f"{path}: no such file")
    rows, lines = [], []  # the rows with a cell, and the file line each starts on
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:  # -sig: a spreadsheet's byte-order mark
            reader = csv.reader(fh)
            line = 1
            for row in reader:
                if row and any(c.strip() for c in row):
                    rows.append(row)
                    lines.append(line)
                line = reader.line_num + 1  # a quoted cell may span lines
    except UnicodeDecodeError as exc:
        raise FitError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except csv.Error as exc:
        raise FitError(f"{path}: not a CSV file ({exc})") from None
    except OSError as exc:
        raise FitError(f"{path}: cannot read ({exc.strerror})") from None
    if len(rows) < 2:
        raise FitError(f"{path}: needs a header row and at least one data row")
    names = [c.strip() for c in rows[0]]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise FitError(f"{path}: duplicate column names {', '.join(dup)}")
    data = np.empty((len(rows) - 1, len(names)))
    for i, (row, line) in enumerate(zip(rows[1:], lines[1:])):
        if len(row) != len(names):
            raise FitError(f"{path}:{line}: {len(row)} cells, the header has {len(names)}")
        for j, cell in enumerate(row):
            try:
                data[i, j] = number(cell.strip())  # (1_0 and non-ASCII digits, which float reads, are not numbers)
            except ValueError:
                raise FitError(f"{path}:{line}: column {names[j]!r}: {cell!r} is not a number") from None
            if abs(data[i, j]) > MAX_VALUE:
                raise FitError(f"{path}:{line}: column {names[j]!r}: {cell!r} is beyond +-{MAX_VALUE:g} (its square "
                               f"would overflow the least-squares sums); rescale the column")
    return LogData(names, data, str(path), lines=lines[1:])


# --------------------------------------------------------------------------------------
# The problem: model + data + which parameters
# --------------------------------------------------------------------------------------
def _pairs(items, what):
    """["a", "b=c"] -> [("a", "a"), ("b", "c")]: model name = data column name unless mapped."""
    out = []
    for item in items:
        left, sep, right = item.partition("=")
        left, right = left.strip(), right.strip()
        if not left or (sep and not right):
            raise FitError(f"{what}: expected NAME or NAME=COLUMN, got {item!r}")
        out.append((left, right if sep else left))
    return out


@dataclass
class FitProblem:
    """Simulate ``compiled`` against ``data``; residuals for the parameters ``params``."""

    compiled: object  # CompiledModel
    data: LogData
    params: list  # names of the fitted run-time parameters
    outputs: list  # "col" or "model_col=data_col"
    inputs: list = field(default_factory=list)  # "param" or "param=data_col": logged inputs, ZOH
    fixed: dict = field(default_factory=dict)  # other run-time parameters set for the fit
    time_col: str = "t"
    t_end: float | None = None
    options: SolverOptions | None = None  # the solver's; None: FIT_OPTIONS
    weights: dict = field(default_factory=dict)  # data column -> weight (1/sigma)
    # the built-in model's name or the model file ``compiled`` came from: how workers load it
    # (a fit with jobs or a scheduler); set from ``compiled`` when that is given as a name/file
    model: str | None = None

    def __post_init__(self):
        if isinstance(self.compiled, (str, Path)):
            from bondsim_ros.sweep.workers import load_model, model_spec

            spec = model_spec(self.compiled)
            self.compiled = load_model(spec)[0]
            self.model = self.model or spec
        elif self.model is not None:
            from bondsim_ros.sweep.workers import model_spec

            self.model = model_spec(self.model)
        if self.options is None:
            self.options = FIT_OPTIONS
        elif not isinstance(self.options, SolverOptions):
            raise FitError(f"options must be a SolverOptions, not {type(self.options).__name__}")
        c = self.compiled
        src = self.data.source or "data"
        known = list(c.param_names)
        for what in ("params", "outputs", "inputs"):
            if isinstance(getattr(self, what), (str, bytes)):  # 'k,c' was read as the names 'k', ',', 'c'
                raise FitError(f"{what}: expected a list of names, got the string {getattr(self, what)!r}")
        if not self.params:
            raise FitError("no parameters to fit: give --params")
        bad = [p for p in self.params if p not in known]
        if bad:
            raise FitError(f"model {c.name!r} has no run-time parameter {', '.join(map(repr, bad))} "
                           f"(has: {', '.join(known) or 'none'})")
        dup = sorted({p for p in self.params if self.params.count(p) > 1})
        if dup:
            raise FitError(f"parameter listed twice: {', '.join(dup)}")
        for name in self.fixed:
            if name not in known:
                raise FitError(f"model {c.name!r} has no run-time parameter {name!r} (has: {', '.join(known)})")
            if name in self.params:  # one value or the other would be dropped without a word
                raise FitError(f"{name!r} is both a fitted parameter and a fixed value (--param)")
        self.input_map = _pairs(self.inputs, "--inputs")
        for pname, col in self.input_map:
            if pname not in known:
                raise FitError(f"input {pname!r} is not a run-time parameter of model {c.name!r} "
                               f"(has: {', '.join(known)})")
            if pname in self.params:
                raise FitError(f"{pname!r} is both a fitted parameter and a logged input")
            if pname in self.fixed:
                raise FitError(f"{pname!r} is both a logged input and a fixed value (--param)")
            self.data.column(col)
        self.output_map = _pairs(self.outputs, "--outputs")
        if not self.output_map:
            raise FitError("no output columns to compare: give --outputs")
        out_names = list(c.output_names)
        for mname, col in self.output_map:
            if mname not in out_names:  # not "t" either: the time is what outputs are compared at
                raise FitError(f"model {c.name!r} has no output column {mname!r} (has: {', '.join(out_names)})")
            if col == self.time_col:
                raise FitError(f"--outputs {mname}={col}: {col!r} is the data's time column")
            self.data.column(col)
        for what, names in (("output", [m for m, _ in self.output_map]),
                            ("data column", [col for _, col in self.output_map])):
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise FitError(f"--outputs: {what} listed twice: {', '.join(dup)}")
        for col in self.weights:
            if col not in [d for _, d in self.output_map]:
                raise FitError(f"weight given for {col!r}, which is not a fitted output column")
            w = self.weights[col]
            if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)) \
                    or not (w > 0 and math.isfinite(w)):
                raise FitError(f"weight of {col!r} must be a positive number, got {w!r}")

        t = self.data.column(self.time_col)
        if self.t_end is not None and not math.isfinite(self.t_end):
            raise FitError(f"t_end (--t-end) must be a finite time, got {self.t_end}")
        keep = np.ones(len(t), dtype=bool) if self.t_end is None else (t <= self.t_end + 1e-12)
        if self.t_end is not None and keep.sum() < 2:
            raise FitError(f"{src}: {int(keep.sum())} data row(s) with {self.time_col} <= {self.t_end:g} "
                           f"(t_end, --t-end): a fit needs at least two")
        cols = [self.time_col] + [col for _, col in self.input_map] + [col for _, col in self.output_map]
        block = np.column_stack([self.data.column(col) for col in cols])[keep]
        bad_rows = ~np.isfinite(block).all(axis=1)
        if bad_rows.any():
            i = int(np.argmax(bad_rows))
            j = int(np.argmax(~np.isfinite(block[i])))
            raise FitError(f"{self.data.at(int(np.flatnonzero(keep)[i]))}: column {cols[j]!r}: {block[i, j]:g} is not "
                           f"a finite number ({self.time_col} = {block[i, 0]:g}); remove or fill such rows")
        self.t = block[:, 0]
        if len(self.t) < 2:
            raise FitError(f"{src}: column {self.time_col!r} must be strictly increasing with at least two rows")
        back = np.flatnonzero(np.diff(self.t) <= 0)
        if back.size:
            rows = np.flatnonzero(keep)
            k = int(back[0])
            raise FitError(f"{self.data.at(int(rows[k + 1]))}: column {self.time_col!r} must be strictly increasing: "
                           f"{self.time_col} = {self.t[k + 1]:g} does not come after {self.time_col} = {self.t[k]:g} "
                           f"on {self.data.row(int(rows[k]))}")
        self.u = block[:, 1:1 + len(self.input_map)]
        self.y = block[:, 1 + len(self.input_map):]
        self.w = np.array([self.weights.get(col, 1.0) for _, col in self.output_map])
        if len(self.t) * len(self.output_map) <= len(self.params):
            raise FitError(f"{len(self.t) * len(self.output_map)} data points cannot determine "
                           f"{len(self.params)} parameters")
        self.out_idx = [out_names.index(m) for m, _ in self.output_map]  # into compiled outputs
        # an input mapped to a column the model also records (``wz_cmd=wz_ref``): the model's own
        # column must then reproduce the log, else something in the model adds to the input
        self.echo = [(j, pname, col, out_names.index(col)) for j, (pname, col) in enumerate(self.input_map)
                     if col in out_names]
        self.n_eval = 0
        self._sim, self._sim_options = None, None  # the Simulation reused by simulate()

    # ---------------------------------------------------------------------------------
    def initial(self) -> np.ndarray:
        base = dict(zip(self.compiled.param_names, self.compiled.params))
        base.update(self.fixed)
        return np.array([float(base[p]) for p in self.params])

    def values(self, theta) -> dict:
        """The run-time parameters a simulation starts with: fixed ones, ``theta`` for the
        fitted ones, the logged inputs' first row."""
        values = dict(self.fixed)
        values.update(zip(self.params, map(float, theta)))
        values.update(zip([p for p, _ in self.input_map], map(float, self.u[0])))
        return values

    def simulate(self, theta, columns=None) -> np.ndarray:
        """Model outputs (rows = data times, columns = fitted outputs, or the compiled model's
        output indices ``columns``) for parameters ``theta``."""
        from bondsim_ros.bondgraph.simulation import Simulation

        out_idx = self.out_idx if columns is None else list(columns)
        names = [p for p, _ in self.input_map]
        # one solver for all the runs of a fit, reset for each (bit for bit a new Simulation's
        # run: Simulation.reset); a new one if the options were changed in between
        options = (self.options, float(self.t[0]))
        sim = self._sim if self._sim is not None and self._sim_options == options else None
        if sim is None:
            self._sim = None
            sim = Simulation(self.compiled, self.options, t0=float(self.t[0]), params=self.values(theta))
            self._sim, self._sim_options = sim, options
        else:
            sim.reset(params=self.values(theta), t0=float(self.t[0]))
        out = np.empty((len(self.t), len(out_idx)))
        out[0] = sim.outputs_at(self.t[0], sim.solver.y, sim.solver.yp)[out_idx]
        # the inputs are held from one sample to the next: integrate in one call between changes
        if self.u.shape[1]:
            change = np.flatnonzero(np.any(self.u[1:] != self.u[:-1], axis=1)) + 1
        else:
            change = np.array([], dtype=int)
        start = 1
        for k in change:  # rows start..k with the old inputs, then switch at t_k
            rows = sim.advance(self.t[start:k + 1])
            out[start:k] = rows[:-1, 1:][:, out_idx]
            sim.set_params(dict(zip(names, map(float, self.u[k]))), restart=True)
            # the row pairs the new inputs with the state they start from: the restart's
            # consistent values (y' and the algebraic unknowns jump with the inputs), not the
            # old y' (an RC loop's voltage read as u - R i gave the jump of u at every change)
            out[k] = sim.outputs_at(self.t[k], sim.solver.y, sim.solver.yp)[out_idx]
            start = k + 1
        if start < len(self.t):
            rows = sim.advance(self.t[start:])
            out[start:] = rows[:, 1:][:, out_idx]
        self.n_eval += 1
        return out

    def input_mismatches(self, theta) -> list:
        """Messages for inputs whose column the model records too and simulates differently from
        the log: the input does not drive the model as the log says (e.g. the model's own step
        excitation adds to it); the fit would then explain another experiment."""
        if not self.echo:
            return []
        sim = self.simulate(theta, [k for *_, k in self.echo])
        self.n_eval -= 1  # a check, not a step of the search
        out = []
        for i, (j, pname, col, _) in enumerate(self.echo):
            logged = self.u[:, j]
            diff = np.abs(sim[:, i] - logged)
            tol = 1e-6 * max(1.0, float(np.max(np.abs(logged))))
            if np.max(diff) > tol:
                k = int(np.argmax(diff > tol))
                out.append(f"input {pname}={col}: the model's own column {col!r}, simulated with the logged "
                           f"inputs, is {sim[k, i]:.6g} at {self.time_col} = {self.t[k]:g} where the log has "
                           f"{logged[k]:.6g}: something in the model adds to {pname!r} (a built-in excitation? "
                           f"set it to 0 with --param), so the fit explains another experiment than the logged one")
        return out

    def residuals(self, theta) -> np.ndarray:
        """Weighted simulated-minus-logged values, column by column (Fortran order)."""
        return ((self.simulate(theta) - self.y) * self.w).ravel(order="F")

    def spec(self) -> "FitSpec":
        """What a worker rebuilds this problem from (picklable): the model by name or file, the
        logged columns the fit uses, the options. FitError when the model has no name/file."""
        if not self.model:
            raise FitError(f"a fit on workers (jobs, scheduler) loads model {self.compiled.name!r} by name: give "
                           f"FitProblem(..., model=NAME or FILE), the built-in model's name or the model file it "
                           f"was compiled from")
        cols = list(dict.fromkeys([self.time_col] + [c for _, c in self.input_map] + [c for _, c in self.output_map]))
        data = LogData(cols, np.column_stack([self.data.column(c) for c in cols]), self.data.source,
                       lines=self.data.lines)
        return FitSpec(self.model, self.compiled.key, tuple(map(float, self.compiled.params)), data,
                       list(self.params), list(self.outputs), list(self.inputs), dict(self.fixed), self.time_col,
                       self.t_end, self.options, dict(self.weights), uuid.uuid4().hex)


@dataclass(frozen=True, eq=False)
class FitSpec:
    """A :class:`FitProblem` as a worker rebuilds it: sent with every task, the problem (with
    its reusable solver) kept by the worker per ``token``."""

    model: str  # built-in model name or model file (absolute path)
    key: str  # the generated code's key, and
    defaults: tuple  # the parameter values, that the worker's model must have (the same runs)
    data: LogData  # the logged columns the fit uses
    params: list
    outputs: list
    inputs: list
    fixed: dict
    time_col: str
    t_end: float | None
    options: SolverOptions
    weights: dict
    token: str  # one per fit

    def problem(self) -> FitProblem:
        from bondsim_ros.sweep.workers import worker_model

        compiled, _ = worker_model(self.model)
        if compiled.key != self.key or tuple(map(float, compiled.params)) != self.defaults:
            what = "generated code" if compiled.key != self.key else "parameter values"
            raise FitError(f"model {self.model!r} as a worker loads it differs from the fit's (its {what}): "
                           f"the workers need the same model file and package version")
        return FitProblem(compiled, self.data, self.params, self.outputs, inputs=self.inputs, fixed=self.fixed,
                          time_col=self.time_col, t_end=self.t_end, options=self.options, weights=self.weights,
                          model=self.model)


def _worker_problem(spec: FitSpec) -> FitProblem:
    from bondsim_ros.sweep.workers import worker_state

    return worker_state(("fit", spec.token), spec.problem)


def _load_problem(spec: FitSpec) -> None:
    """A worker's warm-up: the model and the problem, before the first Jacobian needs them."""
    _worker_problem(spec)


def evaluate(spec: FitSpec, theta) -> tuple:
    """(residuals, None) of ``theta``, or (None, the solver's error) when the run fails: the
    task a worker runs for one point of a fit's finite differences."""
    from bondsim_ros.bondgraph.compiled import ParameterRefused
    from bondsim_ros.solver import SolverError

    problem = _worker_problem(spec)
    try:
        return problem.residuals(theta), None
    except (SolverError, ParameterRefused) as exc:
        return None, exc


# --------------------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------------------
# A direction of the parameters (relative changes) is not determined by the data when the
# scaled Jacobian's singular value along it is below rcond times the largest. A finite-difference
# Jacobian of solver runs is good to about rtol / diff_step (1e-5 at the defaults; a product a*b
# fitted beside a third parameter measured 4e-5), so singular values near that are its noise, not
# information: rcond = max(RCOND, 30 rtol / diff_step). Identifiable fits of the tests: >= 1.6e-2.
RCOND = 1e-3
MOVE_DECADES = 3  # an estimate this many orders of magnitude from its start is reported


@dataclass
class Direction:
    """A combination of relative parameter changes the data do not determine (a right singular
    vector of the Jacobian scaled by the parameters' magnitudes)."""

    components: dict  # parameter -> relative change (the vector has unit length)
    rel_singular_value: float  # its singular value over the largest
    rel_stderr: float  # s / singular value: the standard error of a unit relative move along it

    def parameters(self, threshold=0.1) -> list:
        return [n for n, v in self.components.items() if abs(v) >= threshold]

    def describe(self) -> str:
        """E.g. ``the outputs do not change along +0.707 da/a -0.707 db/b (only a*b is determined,
        not a and b separately)``."""
        names = self.parameters()
        if len(names) == 1:
            return f"changes of {names[0]} by its own size do not show in the outputs"
        terms = " ".join(f"{'-' if self.components[n] < 0 else '+'}{abs(self.components[n]):.3g} d{n}/{n}"
                         for n in names)
        text = f"the outputs do not change along {terms}"
        if len(names) == 2:
            va, vb = (self.components[n] for n in names)
            if abs(abs(va) - abs(vb)) < 0.05 * max(abs(va), abs(vb)):
                # equal relative changes of opposite sign keep the product, of the same sign the ratio
                combo = f"{names[0]}*{names[1]}" if va * vb < 0 else f"{names[0]}/{names[1]}"
                text += f" (only {combo} is determined, not {names[0]} and {names[1]} separately)"
        return text


@dataclass
class FitResult:
    names: list
    initial: np.ndarray
    estimate: np.ndarray
    stderr: np.ndarray  # NaN where the data do not determine the parameter
    ci_low: np.ndarray
    ci_high: np.ndarray
    cov: np.ndarray
    sigma: float  # residual standard deviation (weighted units)
    rms_by_output: dict
    cost: float
    n_data: int
    dof: int
    n_eval: int
    success: bool  # the optimiser met a convergence test (says nothing of identifiability)
    message: str
    seconds: float
    rank_deficient: list = field(default_factory=list)  # parameters the data do not determine
    undetermined: list = field(default_factory=list)  # Direction: the combinations behind them
    singular_values: list = field(default_factory=list)  # of the scaled Jacobian, over the largest
    warnings: list = field(default_factory=list)  # estimates at a bound or far from the start
    input_mismatches: list = field(default_factory=list)  # logged inputs the model does not follow
    workers: str = "1 job (this process)"  # where the Jacobian's runs went

    @property
    def identifiable(self) -> bool:
        return not self.undetermined

    @property
    def usable(self) -> bool:
        """Converged, every parameter determined, and the model driven as the log says."""
        return self.success and self.identifiable and not self.input_mismatches

    def as_dict(self) -> dict:
        return {
            "parameters": {n: {"initial": float(i), "estimate": float(e), "stderr": float(s),
                               "ci95": [float(lo), float(hi)]}
                           for n, i, e, s, lo, hi in zip(self.names, self.initial, self.estimate, self.stderr,
                                                         self.ci_low, self.ci_high)},
            "sigma": self.sigma, "rms_by_output": self.rms_by_output, "cost": self.cost,
            "n_data": self.n_data, "dof": self.dof, "evaluations": self.n_eval, "success": self.success,
            "message": self.message, "seconds": self.seconds, "identifiable": self.identifiable,
            "not_identifiable": self.rank_deficient,
            "undetermined_directions": [{"components": d.components, "rel_singular_value": d.rel_singular_value,
                                         "rel_stderr": d.rel_stderr, "description": d.describe()}
                                        for d in self.undetermined],
            "scaled_singular_values": self.singular_values, "warnings": self.warnings,
            "input_mismatches": self.input_mismatches, "usable": self.usable, "workers": self.workers,
            "covariance": self.cov.tolist(),
        }


def covariance(J: np.ndarray, r: np.ndarray, names: list, scale=None, rcond: float = RCOND):
    """s^2 (J^T J)^-1 and the directions the data do not determine.

    The SVD is of J with column i multiplied by ``scale[i]`` (the parameter's magnitude), so the
    singular vectors are relative changes and parameters of different units compare. A direction
    is undetermined when its singular value is below ``rcond`` times the largest (numerically
    rank-deficient) or when the data leave it uncertain by more than its own size (s / sv > 1:
    one standard error is a 100 % change of the parameters). Parameters with a component of 0.1 or
    more in such a direction get NaN standard errors and covariances.
    Returns (cov, s2, dof, [Direction], relative singular values)."""
    m, n = J.shape
    dof = m - n
    s2 = float(r @ r) / dof
    d = np.ones(n) if scale is None else np.asarray(scale, dtype=float)
    Js = J * d
    _, sv, Vt = np.linalg.svd(Js, full_matrices=False)
    smax = sv[0] if sv.size and sv[0] > 0 else 0.0
    rel = sv / smax if smax > 0 else np.zeros_like(sv)
    s = math.sqrt(s2) if s2 > 0 else 0.0
    with np.errstate(divide="ignore"):
        rel_se = np.where(sv > 0, s / np.where(sv > 0, sv, 1.0), np.inf)
    bad = (rel <= rcond) | (rel_se > 1.0)
    good = ~bad
    # covariance of the scaled parameters on the determined directions, back to the parameters
    inv_s = (Vt[good].T / sv[good] ** 2) @ Vt[good]
    cov = s2 * inv_s * np.outer(d, d)
    directions = []
    for k in np.flatnonzero(bad):
        v = Vt[k] * (np.sign(Vt[k][np.argmax(np.abs(Vt[k]) >= 0.1)]) or 1.0)  # first notable one positive
        directions.append(Direction({nm: float(c) for nm, c in zip(names, v)}, float(rel[k]), float(rel_se[k])))
    for direction in directions:
        for name in direction.parameters():
            i = names.index(name)
            cov[i, :] = cov[:, i] = np.nan
    return cov, s2, dof, directions, [float(x) for x in rel]


def _implied_bounds(problem: FitProblem, names, x0, lo, hi, explicit) -> None:
    """Where the model refuses a parameter at 0 or beyond (an inertia, capacitance or resistance, a
    pivot of the elimination), 0 is a bound on the side of the initial value: least_squares'
    trust-region steps stay strictly inside bounds, so the search never steps onto a value the
    model would refuse (it used to stop there, e.g. Ra = -41.7 from Ra = 30)."""
    from bondsim_ros.bondgraph.core import ModelError

    c = problem.compiled
    p = np.array(c.params, dtype=float)
    for n, v in problem.values(x0).items():
        p[c.param_index(n)] = v
    for i, name in enumerate(names):
        if name in explicit or x0[i] == 0.0:
            continue
        for probe in (0.0, -x0[i]):  # 0 for positive values and pivots, -x0 for non-negative ones
            q = p.copy()
            q[c.param_index(name)] = probe
            try:
                c.check_params(q)
            except ModelError:
                lo[i], hi[i] = (0.0, hi[i]) if x0[i] > 0 else (lo[i], 0.0)
                break


def forward_steps(z, rel_step, lb, ub) -> np.ndarray:
    """The steps of least_squares' forward-difference ('2-point') Jacobian at ``z``
    (scipy.optimize._numdiff: relative ``rel_step``, sqrt(eps) where that does not change z,
    reversed or shortened to stay within the bounds). Its Jacobian's column i is
    (f(z + h_i e_i) - f(z)) / ((z_i + h_i) - z_i)."""
    sign = (z >= 0).astype(float) * 2 - 1
    h = rel_step * sign * np.abs(z)
    dx = (z + h) - z
    h = np.where(dx == 0, np.finfo(np.float64).eps ** 0.5 * sign * np.maximum(1.0, np.abs(z)), h)
    if np.all((lb == -np.inf) & (ub == np.inf)):
        return h
    adjusted = h.copy()
    lower, upper = z - lb, ub - z
    x = z + h
    violated = (x < lb) | (x > ub)
    fitting = np.abs(h) <= np.maximum(lower, upper)
    adjusted[violated & fitting] *= -1
    forward = (upper >= lower) & ~fitting
    adjusted[forward] = upper[forward]
    backward = (upper < lower) & ~fitting
    adjusted[backward] = -lower[backward]
    return adjusted


def _fit_workers(problem: FitProblem, jobs, scheduler, log=None):
    """(Workers, FitSpec) for a fit on workers, (None, None) for this process alone."""
    from bondsim_ros.sweep.workers import Workers, check_jobs

    if scheduler is None:
        jobs = min(check_jobs(jobs), len(problem.params))  # a Jacobian has one point per parameter
        if jobs <= 1:
            return None, None
    spec = problem.spec()
    return Workers(jobs if scheduler is None else 1, scheduler, log=log), spec


def fit(problem: FitProblem, x0=None, bounds: dict | None = None, diff_step=None, max_nfev=None,
        progress=None, jobs: int | None = 1, scheduler=None, log=None) -> FitResult:
    """Least-squares estimate of ``problem.params``; ``progress(n_eval, cost, theta)`` after each run.

    ``jobs``: local worker processes for the finite-difference Jacobian's columns (one
    simulation each per iteration), 1 (default) all in this process, 0 or None every usable
    core; ``scheduler``: a Dask scheduler address, Client or cluster to run them on instead.
    The steps, the runs and so the estimate are the same bit for bit; the problem needs its
    model's name or file (``FitProblem(model=...)``) for the workers to load it. ``log(message)``:
    a note while the runs wait (a cluster without workers; default: printed on stderr). Raises
    FitError for bad input, FitRunFailed for a simulation the solver could not finish,
    ``bondsim_ros.sweep.workers.WorkersError`` for bad ``jobs`` or an unreachable scheduler,
    ``bondsim_ros.sweep.workers.WorkerDied`` when a worker dies; on Ctrl-C the workers are
    stopped and KeyboardInterrupt goes on."""
    import contextlib

    names = list(problem.params)
    try:
        x0 = problem.initial() if x0 is None else np.asarray(x0, dtype=float)
    except (TypeError, ValueError):
        raise FitError(f"x0: expected one number per fitted parameter ({', '.join(names)}), got {x0!r}") from None
    if x0.shape != (len(names),):
        raise FitError(f"x0: expected {len(names)} value(s), one per fitted parameter ({', '.join(names)}), "
                       f"got {x0.size}")
    if not np.all(np.isfinite(x0)):
        raise FitError("initial parameter values must be finite")
    if max_nfev is not None and (isinstance(max_nfev, bool) or not isinstance(max_nfev, (int, np.integer))
                                 or max_nfev < 1):
        raise FitError(f"max_nfev: expected a whole number of simulations >= 1 (None: no limit), got {max_nfev!r}")
    if diff_step is not None and (isinstance(diff_step, bool) or not isinstance(diff_step, (int, float))
                                  or not 0 < diff_step < 1):
        raise FitError(f"diff_step: expected a relative step between 0 and 1 (None: from the solver's rtol), "
                       f"got {diff_step!r}")
    lo = np.full(len(names), -np.inf)
    hi = np.full(len(names), np.inf)
    for name, (a, b) in (bounds or {}).items():
        if name not in names:
            raise FitError(f"bounds given for {name!r}, which is not fitted (fitted: {', '.join(names)})")
        i = names.index(name)
        lo[i], hi[i] = a, b
        if not lo[i] < hi[i]:
            raise FitError(f"bounds of {name!r}: lower {a} must be below upper {b}")
        if not lo[i] <= x0[i] <= hi[i]:
            raise FitError(f"initial value {x0[i]:g} of {name!r} is outside its bounds [{a}, {b}]")
    _implied_bounds(problem, names, x0, lo, hi, explicit=set(bounds or {}))
    workers, spec = _fit_workers(problem, jobs, scheduler, log)
    with workers if workers is not None else contextlib.nullcontext():
        if workers is not None:
            spec = workers.share(spec)  # a cluster's workers get the logged data once, not per run
            workers.warm_up(_load_problem, spec)  # the workers load the model while r0 runs here
        result = _search(problem, names, x0, lo, hi, diff_step, max_nfev, progress, workers, spec)
    if workers is not None:
        result.workers = workers.description
    return result


def _search(problem, names, x0, lo, hi, diff_step, max_nfev, progress, workers, spec) -> FitResult:
    from scipy.optimize import least_squares
    from scipy.stats import t as student_t

    from bondsim_ros.bondgraph.compiled import ParameterRefused
    from bondsim_ros.solver import InconsistentInitialValues, SolverError

    # the optimiser works on z = x / scale (scale = |initial value|): finite-difference steps and
    # trust regions are then relative to each parameter's size, also for one that tends to 0
    scale = np.where(np.abs(x0) > 0, np.abs(x0), 1.0)
    # forward differences on a solver run: a step well above the integration error (rtol)
    diff_step = diff_step or max(1e-6, 30.0 * math.sqrt(problem.options.rtol))
    tic = time.perf_counter()

    def failed(theta, exc):
        # a start the model refuses is refused input, as `simulate` has it; any other failure
        # is a run the solver could not finish
        at = dict(zip(names, map(float, theta)))
        if isinstance(exc, ParameterRefused):  # (bounds the user opened, or a model's own check)
            return FitRunFailed(f"the search stepped to {at}, which the model refuses: {exc}; keep it away with "
                                f"--bounds")
        # values the search stepped to are not the user's input, whatever the solver refused
        kind = FitError if isinstance(exc, InconsistentInitialValues) and not searching else FitRunFailed
        return kind(f"simulation failed at {at}: {exc}; try other initial values or --bounds")

    searching = False  # past the start: a value the model refuses is one the search stepped to

    def fun_x(theta):
        try:
            r = problem.residuals(theta)
        except SolverError as exc:
            raise failed(theta, exc) from None
        except ParameterRefused as exc:
            if not searching:
                raise  # the start's values: refused input, as `simulate` refuses them
            raise failed(theta, exc) from None  # as the workers report it (bounds opened by the user)
        if progress:
            progress(problem.n_eval, 0.5 * float(r @ r), theta)
        return r

    last: dict = {}  # z's bytes -> its residuals: the point least_squares asks the Jacobian at

    def fun(z):
        r = fun_x(z * scale)
        last.clear()
        last[z.tobytes()] = r
        return r

    def fun_many(thetas) -> list:
        """fun_x of each, on the workers (the same runs as here, in any order)."""
        if workers is None:
            return [fun_x(theta) for theta in thetas]

        def done(i, value):
            problem.n_eval += 1  # a run of the fit, wherever it ran
            if progress and value[0] is not None:
                progress(problem.n_eval, 0.5 * float(value[0] @ value[0]), thetas[i])

        out = workers.run(evaluate, [(spec, theta) for theta in thetas], done)
        for theta, (r, exc) in zip(thetas, out):
            if r is None:  # the first failed column, as the serial order meets it
                raise failed(theta, exc)
        return [r for r, _ in out]

    def jac(z):
        # least_squares' own '2-point' Jacobian (forward_steps), its columns' runs on the workers
        f0 = last.get(z.tobytes())
        if f0 is None:
            f0 = fun(z)
        h = forward_steps(z, diff_step, lo / scale, hi / scale)
        points = []
        for i in range(len(z)):
            zi = z.copy()
            zi[i] = z[i] + h[i]
            points.append(zi * scale)
        # filled by rows of the transpose as scipy does: the same memory layout (Fortran order)
        # makes its linear algebra on J round the same way
        Jt = np.empty((len(z), len(f0)))
        for i, fi in enumerate(fun_many(points)):
            Jt[i] = (fi - f0) / ((z[i] + h[i]) - z[i])
        return Jt.T

    r0 = fun(x0 / scale)
    searching = True
    if not np.all(np.isfinite(r0)):
        raise FitError("the model output is not finite at the initial parameters")
    with np.errstate(over="ignore"):  # the overflow is the finding, reported below
        ss0 = float(r0 @ r0)
    if not math.isfinite(ss0):
        raise FitError("the sum of squared residuals overflows at the initial parameters (largest residual "
                       f"{float(np.max(np.abs(r0))):.3g}); rescale the data or give --weight")
    sol = least_squares(fun, x0 / scale, jac="2-point" if workers is None else jac, bounds=(lo / scale, hi / scale),
                        diff_step=diff_step, method="trf", max_nfev=max_nfev, xtol=1e-10, ftol=1e-10, gtol=1e-10)
    x = sol.x * scale
    # Jacobian at the optimum: least_squares returns the last one it evaluated, which can lag the
    # final accepted step; recompute it there so the standard errors belong to the estimate. By
    # central differences where both sides lie inside the bounds: a forward difference's error,
    # h |f"| / 2, is itself a singular value (a spring written kb/ka, fitted for ka and kb, showed
    # 0.018 at the default step and passed for identifiable, its estimates 23 standard errors
    # off); the central one's, h^2 |f"'| / 6, falls below RCOND
    J = np.empty((len(sol.fun), len(names)))
    steps, points, central = [], [], []
    for i in range(len(names)):
        h = diff_step * max(abs(sol.x[i]), 1.0) * scale[i]
        both = x[i] - h >= lo[i] and x[i] + h <= hi[i]
        if not both and x[i] + h > hi[i]:
            h = -h  # one side, inside the bounds
        for side in ((h, -h) if both else (h,)):
            xp = x.copy()
            xp[i] += side
            points.append(xp)
        steps.append(h)
        central.append(both)
    runs = iter(fun_many(points))
    for i, (h, both) in enumerate(zip(steps, central)):
        if both:
            f_plus, f_minus = next(runs), next(runs)
            J[:, i] = (f_plus - f_minus) / (2.0 * h)
        else:
            J[:, i] = (next(runs) - sol.fun) / h
    # columns scaled by the estimate's magnitude (the start's where the estimate is 0): a
    # parameter that collapses towards 0 then shows as undetermined relative to its own size
    mag = np.where(x != 0, np.abs(x), scale)
    cov, s2, dof, directions, rel_sv = covariance(J, sol.fun, names, mag,
                                                  rcond=max(RCOND, 30.0 * problem.options.rtol / diff_step))
    bad = sorted({n for dvec in directions for n in dvec.parameters()}, key=names.index)
    se = np.sqrt(np.diag(cov))
    success, message = bool(sol.success), str(sol.message)
    determined = [i for i, n in enumerate(names) if n not in bad]
    if not (np.all(np.isfinite(sol.fun)) and math.isfinite(s2) and np.all(np.isfinite(J))
            and np.all(np.isfinite(x)) and np.all(np.isfinite(se[determined]))):
        # an optimum whose residuals or covariance are inf/NaN is no estimate
        success = False
        message = ("the residuals, Jacobian or covariance at the end are not finite (overflow); rescale the "
                   "data or give --weight")
    warnings = _warnings(names, x0, x, lo, hi, scale, sol.active_mask, sol.grad)
    if problem.t[0] != 0.0 and not problem.compiled.autonomous:
        warnings.append(f"the data start at {problem.time_col} = {problem.t[0]:g}, and so does the model's clock: "
                        f"its laws that read t (a Step's t0, a Sine's phase) see the data's times, not the time "
                        f"since the data start")
    resid = sol.fun.reshape(len(problem.t), -1, order="F") / problem.w  # simulated - logged, by column
    start = _start_mismatch(problem, resid)
    if start:
        warnings.append(start)
    try:
        mismatches = problem.input_mismatches(x)
    except SolverError as exc:  # the estimate no longer simulates: no estimate
        mismatches, success, message = [], False, f"the model fails to simulate at the estimate ({exc})"
    if all(col in problem.weights for _, col in problem.output_map) and dof > 0 and s2 > 9.0:
        # every output weighted as 1/noise (as the docs ask): residuals some sigma times the noise
        # are a model that does not explain the data here, whatever the optimiser's tests said
        warnings.append(f"the residual sigma is {math.sqrt(s2):.3g} with every output weighted: if the weights are "
                        f"1/noise, the model does not explain the data at this estimate (a local minimum: try "
                        f"another --guess; inputs out of step with the outputs; a start the data do not share)")
    q = float(student_t.ppf(0.975, dof))
    for i, name in enumerate(names):
        if name in bad or not math.isfinite(se[i]) or any(name in w and "bound" in w for w in warnings):
            continue
        for side, bound, end in (("lower", lo[i], x[i] - q * se[i]), ("upper", hi[i], x[i] + q * se[i])):
            if math.isfinite(bound) and (end < bound if side == "lower" else end > bound):
                # the interval is x +- q se of the linearised model: past a bound (a mass below 0)
                # it describes values the parameter cannot take, and the data determine it poorly
                share = f" ({100 * q * se[i] / abs(x[i]):.0f} % of it)" if x[i] else ""
                warnings.append(f"{name}'s 95% interval {x[i] - q * se[i]:.4g} .. {x[i] + q * se[i]:.4g} reaches "
                                f"past its {side} bound {bound:g}: the data determine it to +-{q * se[i]:.2g} "
                                f"only{share}, and the interval means nothing beyond the bound; log an experiment "
                                f"that excites it, or fix it with --param")
    rms = {col: float(np.sqrt(np.mean(resid[:, j] ** 2))) for j, (_, col) in enumerate(problem.output_map)}
    return FitResult(names=names, initial=x0, estimate=x, stderr=se, ci_low=x - q * se,
                     ci_high=x + q * se, cov=cov, sigma=math.sqrt(s2), rms_by_output=rms, cost=float(sol.cost),
                     n_data=len(sol.fun), dof=dof, n_eval=problem.n_eval, success=success,
                     message=message, seconds=time.perf_counter() - tic, rank_deficient=bad,
                     undetermined=directions, singular_values=rel_sv, warnings=warnings,
                     input_mismatches=mismatches)


# The log's first row is taken to disagree with the model's start when it is off by this many times
# the log's noise and by this share of the column's range (a mismatch that shows on a plot).
START_NOISES = 10.0
START_SHARE = 0.05


def _start_mismatch(problem: FitProblem, resid: np.ndarray) -> str:
    """A warning when the log's first row is far from the model's outputs at its start: a log
    that begins mid-motion while the model starts from its initial state (at rest). The fit then
    bends the parameters to explain the start. That row's residual does not depend on the
    parameters where the initial state does not, and the bent fit spreads the error over every
    row, so the fit's residual scale is no yardstick: the log's own noise is, estimated from its
    second differences (a smooth signal's are small; white noise's have 6 times its variance),
    and the column's range bounds what counts for data with next to no noise."""
    if len(problem.t) < 4:
        return ""
    d2 = np.diff(problem.y, 2, axis=0)
    noise = np.median(np.abs(d2), axis=0) / 0.6745 / math.sqrt(6.0)  # robust: outliers and steps aside
    spread = np.ptp(problem.y, axis=0)
    off = np.abs(resid[0])
    # (and beyond rounding: a constant, noise-free column has neither noise nor range)
    floor = 1e-9 * (1.0 + np.abs(problem.y[0]))
    far = [j for j in range(len(off))
           if off[j] > START_NOISES * noise[j] and off[j] > START_SHARE * spread[j] and off[j] > floor[j]]
    if not far:
        return ""
    cols = ", ".join(f"{problem.output_map[j][1]} = {problem.y[0, j]:.4g} where the model starts at "
                     f"{problem.y[0, j] + resid[0, j]:.4g}"
                     + (f" ({off[j] / noise[j]:.0f} times the log's noise)" if noise[j] > 0 else "")
                     for j in far)
    return (f"the data's first row ({problem.time_col} = {problem.t[0]:g}) is far from the model's start: {cols}. "
            f"The log does not begin in the model's initial state (it begins mid-motion?), and the estimates bend "
            f"to explain the start: start the log where the model's initial state holds (e.g. at rest), or give the "
            f"model the logged state as its initial values")


def _warnings(names, x0, x, lo, hi, scale, active, grad) -> list:
    """Estimates the search pressed onto a bound, or moved by orders of magnitude from the start:
    the interval assumes an interior optimum, and a collapse of a physical constant (an inertia to
    1e-9) usually means the model is not the experiment (an input, a fixed parameter)."""
    out = []
    for i, name in enumerate(names):
        for side, bound, flag in (("lower", lo[i], -1), ("upper", hi[i], 1)):
            if not math.isfinite(bound):
                continue
            gap = abs(x[i] - bound) / scale[i]  # in the optimiser's units (the start's magnitude)
            # trust-region steps stay strictly inside the bounds and its active_mask has a tolerance:
            # "at the bound" is also within 1e-4 of it with the cost still falling towards it
            pressed = flag * grad[i] < 0
            if active[i] == flag or gap <= 1e-9 or (gap <= 1e-4 and pressed):
                out.append(f"{name} = {x[i]:.4g} is at its {side} bound {bound:g} (started at {x0[i]:.4g}): the "
                           f"data push it beyond, so its interval does not hold; check the inputs and the fixed "
                           f"parameters, or widen the bound (--bounds)")
        if x0[i] != 0 and x[i] != 0:
            decades = abs(math.log10(abs(x[i] / x0[i])))
            if decades >= MOVE_DECADES:
                out.append(f"{name} moved from {x0[i]:.4g} to {x[i]:.4g} ({decades:.0f} orders of magnitude)")
        elif x0[i] != 0 and x[i] == 0:
            out.append(f"{name} moved from {x0[i]:.4g} to 0")
    return out


__all__ = ["FitError", "FitRunFailed", "FitProblem", "FitSpec", "FitResult", "Direction", "LogData", "read_csv",
           "fit", "covariance", "forward_steps"]
