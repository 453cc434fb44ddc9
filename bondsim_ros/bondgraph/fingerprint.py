"""The cache key of a model's generated code: a content hash of the equations it could have.

:func:`fingerprint` hashes the model's *structure* -- its component tree, every elementary
component's attributes (laws, initial values), its bonds, signal lines and parameter names --
and :func:`engine_hash`, a hash of this engine's own source (``ENGINE_FILES``), so the key changes
whenever the equations or the code made from them could change, and not with a parameter's
value (a run-time input) or a comment in a model file. models/buildcache.py puts
:func:`engine_hash` into its build records' keys too.
"""
from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path

import numpy as np

from .core import Model

CODEGEN_VERSION = "10"  # 2: pivots kernel; 3: large kernels in chunks; 4: parameter checks; 5: events; 6: C;
# 7: own Add/Mul printers (terms in stored order), CSE at print time;
# 8: sin/cos of a + constant split, calls shared by chunks passed in sh[];
# 9: "autonomous" in the metadata; 10: the natural modes computed in order, each reading those before it
# every module that builds, parses, reduces or prints equations, or lays out the cached code
ENGINE_FILES = ("core.py", "elements.py", "signals.py", "laws.py", "equations.py", "reduce.py", "codegen.py",
                "events.py", "fingerprint.py", "cprint.py", "jacobian.py", "compiled.py", "cache.py", "floatfacts.py")


# not part of the equations: a comment added to a model file must not invalidate its code
_SKIP = {"parent", "children", "ports", "bonds", "connections", "_built", "_count", "description",
         "source_location", "law_locations", "scope_where"}
_engine_hash_cache: list = []


def engine_hash() -> str:
    """SHA-256 (hex) of CODEGEN_VERSION and the source of every module in ENGINE_FILES."""
    if not _engine_hash_cache:
        h = hashlib.sha256(CODEGEN_VERSION.encode())
        here = Path(__file__).parent
        for name in ENGINE_FILES:
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
    return hashlib.sha256((engine_hash() + blob).encode()).hexdigest()[:24]


__all__ = ["CODEGEN_VERSION", "ENGINE_FILES", "engine_hash", "fingerprint"]
