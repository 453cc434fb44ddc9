"""The compiled model: a model's generated code loaded, without sympy.

:class:`CompiledModel` is what the solver and the outputs need: names, the Jacobian's sparsity
pattern, which unknowns are differential, initial and parameter values, and the kernels (the
shared library's functions as native.CKernel); it refuses parameter values the model cannot run
with (:meth:`CompiledModel.check_params`) and makes the solver's DAEProblem.
:func:`load_compiled` makes one from a cache entry (cache.py): its metadata and its library,
compiled again from the cached source if the library alone is gone.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cache import atomic_write, compile_library
from .core import ModelError


class ParameterRefused(ModelError):
    """Run-time parameter values the model cannot run with; ``names``: the parameters refused."""

    def __init__(self, where: str, message: str, names):
        super().__init__(where, message)
        self.names = list(names)

    def __reduce__(self):
        return type(self), (self.where, self.message, self.names)


@dataclass
class CompiledModel:
    """Everything the solver and the outputs need, without sympy."""

    name: str
    key: str
    var_names: list
    eq_names: list
    differential: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    y0: np.ndarray
    param_names: list
    params: np.ndarray
    output_names: list
    residual: object
    jacobian: object
    outputs: object
    source_path: str
    from_cache: bool = False
    pivot_names: list = None
    pivots: object = None  # kernel: the pivots, then the checks
    check_names: list = None
    check_kinds: list = None
    pivot_params: list = None
    param_uses: dict = None
    # events (bondgraph/events.py): kernels with the modes after the parameters in p
    n_modes: int = 0
    root_names: list = None
    mode_names: list = None
    roots: object = None
    modes: object = None
    residual_modes: object = None
    jacobian_modes: object = None
    time_derivative: object = None  # dF/dt of the residual the solver calls (None: a library without it)
    autonomous: bool = False  # no t in the equations, switching functions or modes (DAEProblem)
    # [index of the unknown, "c: q0 = 5"]: initial values given for states the constraints fix
    # (reduce.ReducedDAE.fixed_given); the consistent start must equal them
    fixed_given: list = None
    # indices of the differential states without a given initial value (reduce.ReducedDAE.free_start)
    free_start: list = None
    tested: np.ndarray = None  # the unknowns in the solver's error test (reduce.ReducedDAE.tested)

    def check_params(self, params) -> None:
        """Refuse parameter values the model cannot run with, naming the parameter and the
        element law it enters: not finite; a sign an element needs (an inertia or capacitance
        must be positive, a resistance non-negative, wherever the value comes from: file,
        --param, set_param, fit); zero where the symbolic elimination divided by it (a pivot)
        or where it is a derivative's only coefficient."""
        params = np.asarray(params, dtype=float)
        # plain floats and math: a fit or a sweep checks every run's values (numpy scalars cost
        # a microsecond each)
        bad_values = [n for n, v in zip(self.param_names, params.tolist()) if not math.isfinite(v)]
        if bad_values:
            raise ParameterRefused(self.name, "parameter values must be finite: "
                                   + ", ".join(f"{n} = {params[self.param_names.index(n)]}" for n in bad_values),
                                   bad_values)
        pivot_names, check_names = self.pivot_names or [], self.check_names or []
        if not (pivot_names or check_names):
            return
        out = np.zeros(len(pivot_names) + len(check_names))
        z = np.zeros(self.n)
        from bondsim_ros.solver.native import CKernel

        if isinstance(self.pivots, CKernel):  # C sets no numpy error state
            self.pivots(0.0, z, z, params, out)
        else:
            with np.errstate(all="ignore"):
                self.pivots(0.0, z, z, params, out)
        problems = []
        n_piv = len(pivot_names)
        for k, v in enumerate(out.tolist()):
            if k < n_piv:
                if not (math.isfinite(v) and v != 0.0):
                    problems.append((k, f"{pivot_names[k]} (pivot = {v + 0.0:g})"))
            else:
                kind = self.check_kinds[k - n_piv]
                ok = math.isfinite(v) and (v > 0 if kind == "positive" else v >= 0 if kind == "nonnegative" else v != 0)
                if not ok:  # (inf passes "positive" by sign alone: say what it fails on)
                    why = f"it is {v + 0.0:g}" if math.isfinite(v) else f"it is {v + 0.0:g}, not a finite number"
                    problems.append((k, f"{check_names[k - n_piv]} ({why})"))
        if problems:
            named = []
            for k, _ in problems:
                for n in (self.pivot_params[k] if k < len(self.pivot_params or []) else []):
                    if n not in named:
                        named.append(n)
            values = ", ".join(f"{n} = {params[self.param_names.index(n)]:g}" for n in named) or \
                ", ".join(f"{n} = {v:g}" for n, v in zip(self.param_names, params))
            uses = "; ".join(f"{n} enters {', '.join(self.param_uses[n])}" for n in named if self.param_uses.get(n))
            raise ParameterRefused(self.name, f"parameter value(s) {values} refused{f' ({uses})' if uses else ''}: "
                                   + "; ".join(t for _, t in problems), named or list(self.param_names))

    def read_by_no_law(self, names) -> list:
        """Those of the run-time parameters ``names`` that no law of the model reads: setting
        them changes nothing (a definition's own parameter of that name hides the model's)."""
        uses = self.param_uses or {}
        return [n for n in names if n in self.param_names and not uses.get(n)]

    @property
    def n(self) -> int:
        return len(self.var_names)

    def param_index(self, name: str) -> int:
        try:
            return self.param_names.index(name)
        except ValueError:
            raise KeyError(f"model {self.name!r} has no parameter {name!r} "
                           f"(has: {', '.join(self.param_names) or 'none'})") from None

    def problem(self):
        from bondsim_ros.solver import DAEProblem

        ev = self.n_modes > 0
        return DAEProblem(
            residual=self.residual_modes if ev else self.residual,
            jacobian=self.jacobian_modes if ev else self.jacobian, indptr=self.indptr, indices=self.indices,
            differential=self.differential.copy(), params=self.params.copy(),
            tested=None if self.tested is None else self.tested.copy(),
            var_names=list(self.var_names), eq_names=list(self.eq_names),
            roots=self.roots if ev else None, modes=self.modes if ev else None,
            n_roots=len(self.root_names or []) if ev else 0, n_modes=self.n_modes, root_names=self.root_names,
            mode_names=self.mode_names, autonomous=self.autonomous, time_derivative=self.time_derivative,
        )


# kernel field of CompiledModel -> its ABI kind (solver/native.py)
_KERNELS = {"residual": "res", "jacobian": "jac", "outputs": "res", "pivots": "res"}
_EVENT_KERNELS = {"roots": "res", "modes": "res", "residual_modes": "res", "jacobian_modes": "jac"}


def load_compiled(name: str, parameters: dict, key: str, meta: dict, src_path: Path, meta_path: Path,
                  from_cache: bool) -> CompiledModel:
    """The CompiledModel of cache entry ``key`` (``meta``: its metadata; ``src_path``,
    ``meta_path``: its files) for model ``name`` with the values ``parameters`` (name -> value,
    every one of ``meta["param_names"]``)."""
    folder = src_path.parent
    lib_path = folder / meta["library"]
    machine = os.uname().machine
    if meta.get("machine") != machine or not lib_path.exists():
        # the library alone was removed, or the entry was written on another architecture (a
        # cache shared between machines) or before entries named theirs: this machine's library
        # from the cached C (no sympy; found, not compiled, when it is there already)
        lib_path = compile_library(name, src_path, src_path.read_text(), folder)
        own = meta.get("machine") in (None, machine)
        if own and (lib_path.name, machine) != (meta["library"], meta.get("machine")):
            # another compiler version since, or an entry without its architecture: it is this
            # machine's from now on (an entry of another architecture stays that machine's)
            meta["library"], meta["machine"] = lib_path.name, machine
            atomic_write(meta_path, json.dumps(meta))
    from bondsim_ros.solver import native

    try:
        lib = native.load_library(lib_path)
        kernels = {f: native.CKernel(lib, f, kind) for f, kind in _KERNELS.items()}
        if meta.get("n_modes", 0):
            kernels.update({f: native.CKernel(lib, f, kind) for f, kind in _EVENT_KERNELS.items()})
        # (optional: a solver without it takes dF/dt as a difference quotient)
        kernels["time_derivative"] = native.CKernel(lib, "time_derivative", "res") \
            if hasattr(lib, "time_derivative") else None
    except (OSError, AttributeError) as exc:  # a damaged library: keep no broken cache
        for stale in (src_path, meta_path, lib_path):
            stale.unlink(missing_ok=True)
        raise ModelError(name, f"the generated library {lib_path.name} does not load ({exc}): run again") from None
    params = np.array([parameters[n] for n in meta["param_names"]], dtype=float)
    return CompiledModel(
        name=meta["name"], key=key, var_names=meta["var_names"], eq_names=meta["eq_names"],
        differential=np.array(meta["differential"], dtype=bool),
        indptr=np.array(meta["indptr"], dtype=np.int64), indices=np.array(meta["indices"], dtype=np.int64),
        y0=np.array(meta["y0"], dtype=float), param_names=meta["param_names"], params=params,
        output_names=meta["output_names"], residual=kernels["residual"], jacobian=kernels["jacobian"],
        outputs=kernels["outputs"], source_path=str(src_path), from_cache=from_cache,
        pivot_names=meta.get("pivot_names", []), pivots=kernels["pivots"],
        check_names=meta.get("check_names", []), check_kinds=meta.get("check_kinds", []),
        pivot_params=meta.get("pivot_params", []), param_uses=meta.get("param_uses", {}),
        n_modes=meta.get("n_modes", 0), root_names=meta.get("root_names", []),
        mode_names=meta.get("mode_names", []), autonomous=bool(meta.get("autonomous", False)),
        fixed_given=meta.get("fixed_given", []), free_start=meta.get("free_start", []),
        tested=np.array(meta["tested"], dtype=bool) if "tested" in meta else None,
        roots=kernels.get("roots"), modes=kernels.get("modes"),
        residual_modes=kernels.get("residual_modes"), jacobian_modes=kernels.get("jacobian_modes"),
        time_derivative=kernels["time_derivative"],
    )


__all__ = ["CompiledModel", "ParameterRefused", "load_compiled"]
