"""Numeric code for the reduced DAE: sympy -> CSE -> numba kernels, cached on disk.

The residual, the sparse Jacobian values and the output columns are printed as straight-line
Python (after common-subexpression elimination) and compiled by numba with the solver's fixed
kernel signatures, so the BDF core calls them through function pointers without Python in the
loop. BondGraphTools lambdifies and loops in Python; BondSim compiles to .NET: this is the
Python-native equivalent.

Generated code is cached under ``$BONDSIM_CACHE_DIR`` (default ``~/.cache/bondsim_ros``),
keyed by a fingerprint of the model *structure* (component tree, parameters, bonds, laws) and
of this package's engine source, so a second run skips sympy entirely and numba loads its
own on-disk cache of the machine code.
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core import Component, Model, ModelError, locate

CODEGEN_VERSION = "5"  # 2: pivots kernel; 3: large kernels in chunks; 4: parameter checks; 5: events
_ENGINE_FILES = ("core.py", "elements.py", "signals.py", "equations.py", "reduce.py", "codegen.py", "events.py")


def cache_dir() -> Path:
    root = os.environ.get("BONDSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bondsim_ros")
    path = Path(root) / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


# --------------------------------------------------------------------------------------
# Fingerprint
# --------------------------------------------------------------------------------------
# not part of the equations: a comment added to a model file must not invalidate its code
_SKIP = {"parent", "children", "ports", "bonds", "connections", "_built", "_count", "description",
         "source_location", "law_locations"}
_engine_hash_cache: list = []


def _engine_hash() -> str:
    if not _engine_hash_cache:
        h = hashlib.sha256(CODEGEN_VERSION.encode())
        here = Path(__file__).parent
        for name in _ENGINE_FILES:
            h.update((here / name).read_bytes())
        _engine_hash_cache.append(h.hexdigest())
    return _engine_hash_cache[0]


def _plain(value):
    import sympy as sp

    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, sp.Basic):
        return "sympy:" + sp.srepr(value)
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (np.floating, np.integer)):
        return repr(value.item())
    return f"{type(value).__qualname__}:{value!r}"


_class_src: dict = {}


def _class_id(cls) -> str:
    if cls not in _class_src:
        ident = f"{cls.__module__}.{cls.__qualname__}"
        if not cls.__module__.startswith("bondsim_ros.bondgraph"):
            try:  # user-defined element laws change the equations: fold their source in
                ident += ":" + hashlib.sha256(inspect.getsource(cls).encode()).hexdigest()[:16]
            except (OSError, TypeError):
                pass
        _class_src[cls] = ident
    return _class_src[cls]


def fingerprint(model: Model) -> str:
    """A key that changes whenever the equations could change (not with parameter values)."""
    desc = []
    for comp in model.walk():
        entry = {
            "path": comp.path,
            "class": _class_id(type(comp)),
            "ports": [(p.name, type(p).__name__, p.direction) for p in comp.ports.values()],
            "bonds": [(b.source.path, b.target.path) for b in comp.bonds],
            "signals": [(c.source.path, c.target.path) for c in comp.connections],
        }
        if comp.elementary:
            entry["attrs"] = {k: _plain(v) for k, v in sorted(vars(comp).items()) if k not in _SKIP}
        desc.append(entry)
    desc.append({"parameters": sorted(model.parameters)})
    blob = json.dumps(desc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256((_engine_hash() + blob).encode()).hexdigest()[:24]


# --------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------
def _printer():
    from sympy.printing.pycode import PythonCodePrinter

    class KernelPrinter(PythonCodePrinter):
        def _print_Symbol(self, expr):  # names were mapped to y[i], yp[i], p[k], t beforehand
            return expr.name

        def _print_Float(self, expr):
            return repr(float(expr))

        def _print_Rational(self, expr):
            return repr(float(expr))

        def _print_clip(self, expr):
            u, lo, hi = (self._print(a) for a in expr.args)
            return f"min(max({u}, {lo}), {hi})"

        def _print_Infinity(self, expr):
            return "math.inf"

        def _print_NegativeInfinity(self, expr):
            return "-math.inf"

        def _print_Heaviside(self, expr):  # derivative of Min/Max: which branch is active
            return f"(1.0 if {self._print(expr.args[0])} > 0 else 0.0)"

    return KernelPrinter({"fully_qualified_modules": True, "standard": "python3"})


# Largest number of expressions printed into one numba function. LLVM's optimiser is
# superlinear in the size of a function: the 18-DOF seed 001 Jacobian (1837 entries, 4200 lines
# in one function) took about 4 min to compile; in chunks of 150 it takes 82 s for the whole
# model, and the solve is as fast (0.068 s against 0.071 s). The price is common
# subexpressions recomputed across chunks. Small models stay in one function.
CHUNK = 150


def _emit_function(name: str, sig: str, args: str, exprs: list, target: str, printer, extra_pre="") -> list:
    import sympy as sp

    head = [f"@njit({sig}, cache=True, error_model='numpy')"]
    if len(exprs) > CHUNK:
        lines, calls = [], []
        for c, start in enumerate(range(0, len(exprs), CHUNK)):
            part = _emit_function(f"_{name}_{c}", sig, args, exprs[start:start + CHUNK], target, printer, extra_pre)
            # chunk c writes target[start + k]: shift its indices
            lines += [ln.replace(f"    {target}[", f"    {target}[{start} + ", 1) if ln.startswith(f"    {target}[")
                      else ln for ln in part] + [""]
            calls.append(f"    _{name}_{c}({args})")
        return lines + head + [f"def {name}({args}):"] + calls
    lines = head + [f"def {name}({args}):"]
    if extra_pre:
        lines.append(extra_pre)
    if not exprs:
        lines.append("    pass")
        return lines
    repl, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("_c"), order="none")
    for sym, val in repl:
        lines.append(f"    {sym} = {printer.doprint(val)}")
    for k, val in enumerate(reduced):
        lines.append(f"    {target}[{k}] = {printer.doprint(val)}")
    return lines


def _moded_jacobian(red, equations):
    """Jacobian entries (same pattern) of the equations with modes: only the rows that changed
    are differentiated again; a mode is a constant for the derivative."""
    from .reduce import _diff

    changed = {i for i, (a, b) in enumerate(zip(red.equations, equations)) if a is not b}
    dsyms = {red.derivative[v]: v for v in red.derivative}
    jac_dy, jac_dyp = list(red.jac_dy), list(red.jac_dyp)
    for k, (i, j) in enumerate(zip(red.jac_rows, red.jac_cols)):
        if i in changed:
            v = red.variables[j]
            jac_dy[k] = _diff(equations[i], v)
            dv = red.derivative.get(v)
            jac_dyp[k] = _diff(equations[i], dv) if dv is not None and dv in dsyms else 0
    return jac_dy, jac_dyp


def generate_source(red, key: str, events=None) -> str:
    """Python source of the kernels for a :class:`reduce.ReducedDAE`: residual, jacobian,
    outputs and pivots; with ``events`` (equations with modes, :class:`events.Events`) also
    modes, roots, residual_modes and jacobian_modes, residual and jacobian then computing
    the modes at their point first (the same values as the laws as written)."""
    import sympy as sp

    from .reduce import T

    mapping = {T: sp.Symbol("t")}
    for i, v in enumerate(red.variables):
        mapping[v] = sp.Symbol(f"y[{i}]")
        if v in red.derivative:
            mapping[red.derivative[v]] = sp.Symbol(f"yp[{i}]")
    for k, s in enumerate(red.param_symbols):
        mapping[s] = sp.Symbol(f"p[{k}]")
    # eliminated derivative-free unknowns can still show up through outputs: map what remains
    printer = _printer()

    def prep(e):
        e = sp.sympify(e).xreplace(mapping)
        stray = [s for s in e.free_symbols if s.name not in ("t",) and "[" not in s.name]
        if stray:
            raise RuntimeError(f"internal: unmapped symbols {stray} in generated expression")
        return e

    cj = sp.Symbol("cj")
    n_par = len(red.param_symbols)
    moded_eqs, ev = events if events else (None, None)
    if ev:
        for k, m in enumerate(ev.modes):
            mapping[m] = sp.Symbol(f"p[{n_par + k}]")
        jac_dy, jac_dyp = _moded_jacobian(red, moded_eqs)
        res = [prep(e) for e in moded_eqs]
    else:
        jac_dy, jac_dyp = red.jac_dy, red.jac_dyp
        res = [prep(e) for e in red.equations]
    jac = [prep(dy) + cj * prep(dyp) if dyp != 0 else prep(dy) for dy, dyp in zip(jac_dy, jac_dyp)]
    outs = [prep(e) for _, e in red.outputs]
    # the pivots kernel: the elimination's parametric pivots, then the parameter checks
    pivots = [prep(e) for e, _ in red.pivots] + [prep(e) for e, _, _ in (red.param_checks or [])]
    lines = [
        f"# Generated by bondsim_ros codegen v{CODEGEN_VERSION} for model {red.name!r}, key {key}. Do not edit.",
        "import math",
        "from numba import njit",
        "from bondsim_ros.solver.kernels import RES_SIG, JAC_SIG",
        "",
    ]
    if ev:
        lines[3:3] = ["import numpy as np"]
        # the natural modes, inner ones first: each a local the later ones read
        local = dict(mapping)
        for k, m in enumerate(ev.modes):
            local[m] = sp.Symbol(f"_m{k}")
        lines += ["@njit(RES_SIG, cache=True, error_model='numpy')", "def modes(t, y, yp, p, out):"]
        for k, nat in enumerate(ev.natural):
            lines.append(f"    _m{k} = float({printer.doprint(sp.sympify(nat).xreplace(local))})")
            lines.append(f"    out[{k}] = _m{k}")
        lines.append("")
        lines += _emit_function("roots", "RES_SIG", "t, y, yp, p, out", [prep(g) for g in ev.roots], "out", printer)
        lines.append("")
        lines += _emit_function("residual_modes", "RES_SIG", "t, y, yp, p, out", res, "out", printer)
        lines.append("")
        lines += _emit_function("jacobian_modes", "JAC_SIG", "t, y, yp, p, cj, vals", jac, "vals", printer)
        lines.append("")
        n_modes = len(ev.modes)
        # compiled on first call only (no signature): the solver never calls them, and compiled
        # eagerly they cost as much again as the kernels they wrap (LLVM inlines those)
        for name, sig, args in (("residual", "RES_SIG", "t, y, yp, p, out"),
                                ("jacobian", "JAC_SIG", "t, y, yp, p, cj, vals")):
            lines += ["@njit(cache=True)", f"def {name}({args}):",
                      f"    pm = np.empty({n_par + n_modes})", f"    pm[:{n_par}] = p[:{n_par}]",
                      f"    m = np.empty({n_modes})", "    modes(t, y, yp, pm, m)", f"    pm[{n_par}:] = m",
                      f"    {name}_modes({args.replace(' p,', ' pm,')})", ""]
    else:
        lines += _emit_function("residual", "RES_SIG", "t, y, yp, p, out", res, "out", printer)
        lines.append("")
        lines += _emit_function("jacobian", "JAC_SIG", "t, y, yp, p, cj, vals", jac, "vals", printer)
        lines.append("")
    lines += _emit_function("outputs", "RES_SIG", "t, y, yp, p, out", outs, "out", printer)
    lines.append("")
    # parametric pivots of the elimination (reduce.py): evaluated before a run, never in the loop
    lines += _emit_function("pivots", "RES_SIG", "t, y, yp, p, out", pivots, "out", printer)
    return "\n".join(lines) + "\n"


def _csc(rows, cols, n):
    indptr = np.zeros(n + 1, dtype=np.int64)
    for c in cols:
        indptr[c + 1] += 1
    np.cumsum(indptr, out=indptr)
    return indptr, np.asarray(rows, dtype=np.int64)


# --------------------------------------------------------------------------------------
# The compiled model
# --------------------------------------------------------------------------------------
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
    roots: object = None
    modes: object = None
    residual_modes: object = None
    jacobian_modes: object = None

    def check_params(self, params) -> None:
        """Refuse parameter values the model cannot run with, naming the parameter and the
        element law it enters: not finite; a sign an element needs (an inertia or capacitance
        must be positive, a resistance non-negative, wherever the value comes from: file,
        --param, set_param, fit); zero where the symbolic elimination divided by it (a pivot)
        or where it is a derivative's only coefficient."""
        from .core import ModelError

        params = np.asarray(params, dtype=float)
        bad_values = [n for n, v in zip(self.param_names, params) if not np.isfinite(v)]
        if bad_values:
            raise ModelError(self.name, "parameter values must be finite: "
                             + ", ".join(f"{n} = {params[self.param_names.index(n)]}" for n in bad_values))
        pivot_names, check_names = self.pivot_names or [], self.check_names or []
        if not (pivot_names or check_names):
            return
        out = np.zeros(len(pivot_names) + len(check_names))
        z = np.zeros(self.n)
        with np.errstate(all="ignore"):
            self.pivots(0.0, z, z, params, out)
        problems = []
        for k, v in enumerate(out):
            if k < len(pivot_names):
                ok, text = np.isfinite(v) and v != 0.0, f"{pivot_names[k]} (pivot = {v + 0.0:g})"
            else:
                kind = self.check_kinds[k - len(pivot_names)]
                ok = np.isfinite(v) and (v > 0 if kind == "positive" else v >= 0 if kind == "nonnegative" else v != 0)
                text = f"{check_names[k - len(pivot_names)]} (it is {v + 0.0:g})"
            if not ok:
                problems.append((k, text))
        if problems:
            named = []
            for k, _ in problems:
                for n in (self.pivot_params[k] if k < len(self.pivot_params or []) else []):
                    if n not in named:
                        named.append(n)
            values = ", ".join(f"{n} = {params[self.param_names.index(n)]:g}" for n in named) or \
                ", ".join(f"{n} = {v:g}" for n, v in zip(self.param_names, params))
            uses = "; ".join(f"{n} enters {', '.join(self.param_uses[n])}" for n in named if self.param_uses.get(n))
            raise ModelError(self.name, f"parameter value(s) {values} refused{f' ({uses})' if uses else ''}: "
                             + "; ".join(t for _, t in problems))

    @property
    def n(self) -> int:
        return len(self.var_names)

    def param_index(self, name: str) -> int:
        try:
            return self.param_names.index(name)
        except ValueError:
            raise KeyError(f"model {self.name!r} has no parameter {name!r} (has: {', '.join(self.param_names) or 'none'})") from None

    def problem(self):
        from bondsim_ros.solver import DAEProblem

        ev = self.n_modes > 0
        return DAEProblem(
            residual=self.residual_modes if ev else self.residual,
            jacobian=self.jacobian_modes if ev else self.jacobian, indptr=self.indptr, indices=self.indices,
            differential=self.differential.copy(), params=self.params.copy(),
            var_names=list(self.var_names), eq_names=list(self.eq_names),
            roots=self.roots if ev else None, modes=self.modes if ev else None,
            n_roots=len(self.root_names or []) if ev else 0, n_modes=self.n_modes, root_names=self.root_names,
        )


def _load_module(path: Path, key: str):
    modname = f"bondsim_generated_{key}"
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    return module


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def compile_model(model: Model, use_cache: bool = True, log=None, eliminate: bool = True,
                  key: str | None = None) -> CompiledModel:
    """Build (or load from the cache) the numeric kernels of ``model``. ``key``: the model's
    fingerprint when already known (models.buildcache: then ``model`` needs only ``name`` and
    ``parameters``, and the cached code must exist)."""
    log = log or (lambda msg: None)
    key_given = key is not None
    key = key or fingerprint(model) + ("" if eliminate else "-full")
    folder = cache_dir()
    src_path, meta_path = folder / f"m_{key}.py", folder / f"m_{key}.json"
    from_cache = use_cache and src_path.exists() and meta_path.exists()
    if key_given and not from_cache:  # removed since the build record was read
        raise ModelError(model.name, f"generated code {src_path.name} left the cache while loading: run again")
    if from_cache:
        meta = json.loads(meta_path.read_text())
        log(f"model {model.name!r}: generated code from cache ({src_path.name})")
    else:
        from .equations import build_dae
        from .reduce import reduce_dae

        log(f"model {model.name!r}: building equations")
        try:
            raw = build_dae(model)
            red = reduce_dae(raw, eliminate=eliminate)
        except ModelError as exc:  # add the model-file line of the component it names
            raise locate(model, exc) from None
        log(f"model {model.name!r}: {len(raw.equations)} equations -> {len(red.equations)} after elimination; "
            f"{len(red.jac_rows)} Jacobian non-zeros; generating code")
        indptr, indices = _csc(red.jac_rows, red.jac_cols, len(red.variables))
        meta = {
            "name": red.name,
            "var_names": red.var_names,
            "eq_names": red.eq_names,
            "differential": red.differential.tolist(),
            "indptr": indptr.tolist(),
            "indices": indices.tolist(),
            "y0": red.y0.tolist(),
            "param_names": red.param_names,
            "output_names": [n for n, _ in red.outputs],
            "pivot_names": [f"{d}: coefficient {e}".replace("param:", "") for e, d in red.pivots],
            "check_names": [d for _, d, _ in red.param_checks or []],
            "check_kinds": [k for _, _, k in red.param_checks or []],
            # parameters in each pivot, then in each check: named with their values when refused
            "pivot_params": [_param_names(e) for e, _ in red.pivots] + [_param_names(e) for e, _, _ in
                                                                           red.param_checks or []],
            "param_uses": red.param_uses or {},
        }
        from .events import extract_events

        moded, ev = extract_events(red.equations, red.eq_names)
        meta["n_modes"] = len(ev.modes)
        meta["root_names"] = ev.root_names
        if ev:
            log(f"model {model.name!r}: {len(ev.roots)} switching functions, {len(ev.modes)} modes (events)")
        _atomic_write(src_path, generate_source(red, key, (moded, ev) if ev else None))
        _atomic_write(meta_path, json.dumps(meta))
    log(f"model {model.name!r}: loading kernels (numba compiles them on first use; cached after that)")
    try:
        module = _load_module(src_path, key)
    except Exception as exc:  # numba refusing a law the checks let through: name it, keep no broken cache
        sys.modules.pop(f"bondsim_generated_{key}", None)
        for stale in (src_path, meta_path):
            stale.unlink(missing_ok=True)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(model.name, f"the generated code does not compile ({type(exc).__name__}: {first})") from None
    params = np.array([model.parameters[n] for n in meta["param_names"]], dtype=float)
    return CompiledModel(
        name=meta["name"], key=key, var_names=meta["var_names"], eq_names=meta["eq_names"],
        differential=np.array(meta["differential"], dtype=bool),
        indptr=np.array(meta["indptr"], dtype=np.int64), indices=np.array(meta["indices"], dtype=np.int64),
        y0=np.array(meta["y0"], dtype=float), param_names=meta["param_names"], params=params,
        output_names=meta["output_names"], residual=module.residual, jacobian=module.jacobian,
        outputs=module.outputs, source_path=str(src_path), from_cache=from_cache,
        pivot_names=meta.get("pivot_names", []), pivots=getattr(module, "pivots", None),
        check_names=meta.get("check_names", []), check_kinds=meta.get("check_kinds", []),
        pivot_params=meta.get("pivot_params", []), param_uses=meta.get("param_uses", {}),
        n_modes=meta.get("n_modes", 0), root_names=meta.get("root_names", []),
        roots=getattr(module, "roots", None), modes=getattr(module, "modes", None),
        residual_modes=getattr(module, "residual_modes", None), jacobian_modes=getattr(module, "jacobian_modes", None),
    )


def _param_names(expr) -> list:
    return sorted(s.name[len("param:"):] for s in expr.free_symbols if s.name.startswith("param:"))


__all__ = ["CompiledModel", "compile_model", "fingerprint", "generate_source", "cache_dir", "Component"]
