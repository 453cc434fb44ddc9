"""Numeric code for a model: sympy -> C kernels, compiled and cached on disk (``compile_model``).

The residual, the sparse Jacobian values and the output columns are printed as straight-line
C (after common-subexpression elimination) with the kernel ABI of solver/native.py, and
compiled by the system C compiler into a shared library, so the BDF core calls them through
plain function pointers without Python in the loop. BondGraphTools lambdifies and loops in
Python; BondSim compiles to .NET: this is the Python-native equivalent.

The pipeline (:func:`compile_model`), and the module doing each step::

    fingerprint.py  Model -> key: a hash of its structure and of the engine's own source
    cache.py        m_<key>.c and m_<key>.json present: straight to compiled.py (no sympy,
                    no compiler); else the model is built under the key's lock (KeyLock):
    equations.py    build_dae: the raw DAE F(t, y, y') = 0
    reduce.py       reduce_dae: elimination, structure checks, the sparse Jacobian
    events.py       extract_events: modes and switching functions of the switching laws
    jacobian.py     moded_jacobian: the Jacobian rows of the equations with modes
    cprint.py       generate_source: the C of every kernel (printer, CSE, chunks)
    cache.py        compile_library (solver/native.py); m_<key>.c, then m_<key>.json
    compiled.py     load_compiled: the library's kernels -> CompiledModel

A second run of a model skips sympy and the compiler and only loads the library. Without the
model at hand, :func:`load_cached` loads a key's code when models/buildcache.py found the key in
a build record.
"""
from __future__ import annotations

import json
import os

import numpy as np

from .cache import KeyLock, atomic_write, cache_dir, compile_library, entry_paths
from .compiled import CompiledModel, load_compiled
from .core import Component, Model, ModelError, locate, what_went_wrong
from .fingerprint import engine_hash, fingerprint


def compile_model(model: Model, use_cache: bool = True, log=None, eliminate: bool = True) -> CompiledModel:
    """Build (or load from the cache) the numeric kernels of ``model``: C compiled by the
    system compiler into a shared library, its kernels as native.CKernel."""
    log = log or (lambda msg: None)
    key = fingerprint(model) + ("" if eliminate else "-full")
    folder = cache_dir()
    src_path, meta_path, lock_path = entry_paths(folder, key)

    def cached():
        return src_path.exists() and meta_path.exists()

    from_cache = use_cache and cached()
    if from_cache:
        meta = json.loads(meta_path.read_text())
    else:
        with KeyLock(lock_path):
            from_cache = use_cache and cached()  # built by another process while this one waited
            if from_cache:
                meta = json.loads(meta_path.read_text())
            else:
                meta = _build(model, key, eliminate, src_path, meta_path, folder, log)
    if from_cache:
        log(f"model {model.name!r}: generated code from cache ({src_path.name})")
    return load_compiled(model.name, model.parameters, key, meta, src_path, meta_path, from_cache)


def load_cached(key: str, name: str, parameters: dict, log=None) -> CompiledModel | None:
    """The compiled model of the cached code ``key`` (a fingerprint that models/buildcache.py
    found in a build record) without the model itself: ``name`` and ``parameters`` (name ->
    value) are the model's. None if the cache does not hold that code (any more)."""
    log = log or (lambda msg: None)
    src_path, meta_path, _ = entry_paths(cache_dir(), key)
    if not (src_path.exists() and meta_path.exists()):
        return None
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:  # removed since the check: the caller builds the model
        return None
    log(f"model {name!r}: generated code from cache ({src_path.name})")
    return load_compiled(name, parameters, key, meta, src_path, meta_path, True)


def _build(model, key, eliminate, src_path, meta_path, folder, log) -> dict:
    """Equations, elimination, C source, library; then the source and the metadata (last: the
    cache entry exists once the metadata does). A compile failure leaves nothing behind."""
    from .floatfacts import shared_float_facts

    from bondsim_ros.solver import _ccore

    _ccore.prebuild()  # the solver core's first build on this machine runs beside this one
    log(f"model {model.name!r}: building equations")
    with shared_float_facts():  # the symbolic work: a quarter faster (floatfacts.py)
        meta, source = _symbolic(model, key, eliminate, log)
    log(f"model {model.name!r}: compiling the kernels (C)")
    meta["library"] = compile_library(model.name, src_path, source, folder).name
    meta["machine"] = os.uname().machine  # the architecture meta["library"] is for (load_compiled)
    atomic_write(src_path, source)
    atomic_write(meta_path, json.dumps(meta))
    return meta


def _symbolic(model, key, eliminate, log):
    """The model's equations, their reduction and the C source: (metadata, source)."""
    from .cprint import generate_source
    from .equations import T, build_dae
    from .events import extract_events
    from .reduce import reduce_dae, require_unknowns

    try:
        raw = build_dae(model)
        try:
            red = reduce_dae(raw, eliminate=eliminate)
        except ModelError:
            raise
        except (TypeError, ValueError, AttributeError, RecursionError) as exc:
            # sympy refusing to combine two of the laws (nested switches it cannot order)
            raise ModelError(model.name, f"its equations cannot be reduced ({what_went_wrong(exc)}); "
                                         f"a law nesting switches in switches (floor(floor(x)/2)) is the usual "
                                         f"cause: write it without the nesting") from None
        require_unknowns(red)
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
        "tested": (red.differential if red.tested is None else red.tested).tolist(),
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
        "fixed_given": [[j, what] for j, what in red.fixed_given or []],
        "free_start": list(red.free_start or []),
    }
    try:
        moded, ev = extract_events(red.equations, red.eq_names)
    except ModelError as exc:
        raise locate(model, exc) from None
    meta["n_modes"] = len(ev.modes)
    meta["root_names"] = ev.root_names
    meta["mode_names"] = ev.mode_names
    # what the solver evaluates does not read t: its time may start at 0 at every restart
    meta["autonomous"] = not any(e.has(T) for e in [*red.equations, *moded, *ev.natural, *ev.roots])
    if ev:
        log(f"model {model.name!r}: {len(ev.roots)} switching functions, {len(ev.modes)} modes (events)")
    try:
        source = generate_source(red, key, (moded, ev) if ev else None)
    except Exception as exc:  # a law with no C translation the checks let through: name it
        raise ModelError(model.name,
                         f"the generated code does not compile ({what_went_wrong(exc, limit=None)})") from None
    return meta, source


def _param_names(expr) -> list:
    return sorted(s.name[len("param:"):] for s in expr.free_symbols if s.name.startswith("param:"))


def _csc(rows, cols, n):
    indptr = np.zeros(n + 1, dtype=np.int64)
    for c in cols:
        indptr[c + 1] += 1
    np.cumsum(indptr, out=indptr)
    return indptr, np.asarray(rows, dtype=np.int64)


def __getattr__(name):
    # the C printer is needed only to build: a model loaded from the cache does without it
    if name == "generate_source":
        from .cprint import generate_source

        return generate_source
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# (generate_source: the module's __getattr__ above, which static checkers do not follow)
__all__ = ["CompiledModel", "compile_model", "load_cached", "fingerprint", "engine_hash",  # noqa: F822
           "generate_source", "cache_dir", "Component"]
