"""Build every built-in model's raw and reduced DAE with this checkout and with another one, and
compare them expression by expression (``sympy.srepr``), with each side's phase times.

    python benchmarks/reduce_identity.py --against /path/to/other/checkout [--dualarm] [--only a,b]

A change to the symbolic half of a build (bondgraph/equations.py, reduce.py, laws.py) that is
meant to be faster only must leave the equations, unknowns, Jacobian entries, eliminated
expressions, outputs, pivots and parameter checks exactly as they were: sympy's canonical
ordering makes srepr equality a fair test. A model the other checkout refuses must be refused
with the same message. Each side runs in its own process (its checkout first on sys.path);
exit status 1 when anything differs. The dual-arm model is by far the slowest to reduce (and
an older checkout may take minutes for it), so it runs only with --dualarm.
"""
from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _s(x):
    import sympy as sp

    return sp.srepr(x) if isinstance(x, sp.Basic) else repr(x)


def _dump_raw(raw) -> dict:
    return {"equations": [_s(e) for e in raw.equations], "eq_names": list(raw.eq_names),
            "variables": [_s(v) for v in raw.variables], "states": [(_s(k), v) for k, v in raw.states.items()],
            "recorded": [(k, _s(v)) for k, v in raw.recorded.items()],
            "param_checks": [(_s(e), w, k) for e, w, k in raw.param_checks]}


def _dump_red(red) -> dict:
    return {
        "variables": [_s(v) for v in red.variables], "var_names": list(red.var_names),
        "equations": [_s(e) for e in red.equations], "eq_names": list(red.eq_names),
        "differential": red.differential.tolist(),
        "derivative": [(_s(k), _s(v)) for k, v in red.derivative.items()],
        "eliminated": [(_s(k), _s(v)) for k, v in red.eliminated.items()],
        "y0": red.y0.tolist(), "param_names": list(red.param_names),
        "param_symbols": [_s(s) for s in red.param_symbols],
        "outputs": [(n, _s(e)) for n, e in red.outputs],
        "jac_rows": list(red.jac_rows), "jac_cols": list(red.jac_cols),
        "jac_dy": [_s(e) for e in red.jac_dy], "jac_dyp": [_s(e) for e in red.jac_dyp],
        "pivots": [(_s(e), w) for e, w in red.pivots],
        "param_checks": [(_s(e), w, k) for e, w, k in (red.param_checks or [])],
        "param_uses": {k: list(v) for k, v in (red.param_uses or {}).items()},
    }


def child(out: str, only: list[str], dualarm: bool) -> None:
    """Runs in the checkout under test (first on sys.path): dump every model."""
    from bondsim_ros.bondgraph.equations import build_dae
    from bondsim_ros.bondgraph.reduce import reduce_dae
    from bondsim_ros.models import registry

    result = {}
    for name, entry in registry().items():
        if (only and name not in only) or (not only and name == "dualarm" and not dualarm):
            continue
        try:
            model = entry.build()
            c0 = time.process_time()
            raw = build_dae(model)
            c1 = time.process_time()
            red = reduce_dae(raw)
            c2 = time.process_time()
            result[name] = {"raw": _dump_raw(raw), "red": _dump_red(red), "times": (c1 - c0, c2 - c1)}
        except Exception as exc:  # a model refused on load: its message is compared
            result[name] = {"error": f"{type(exc).__name__}: {exc}"}
    with open(out, "wb") as fh:
        pickle.dump(result, fh)


def run_side(root: Path, args, out: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", out, "--only", ",".join(args.only)]
    if args.dualarm:
        cmd.append("--dualarm")
    subprocess.run(cmd, env=env, cwd=root, check=True)
    with open(out, "rb") as fh:
        return pickle.load(fh)


def compare(a: dict, b: dict) -> int:
    bad = 0
    for name in sorted(a.keys() | b.keys()):
        if name not in a or name not in b:
            print(f"{name}: only in {'this checkout' if name in b else 'the other'}")
            bad += 1
            continue
        A, B = a[name], b[name]
        if ("error" in A) != ("error" in B) or A.get("error") != B.get("error"):
            print(f"{name}: outcome differs\n  other: {A.get('error', 'built')}\n  this:  {B.get('error', 'built')}")
            bad += 1
            continue
        if "error" in A:
            print(f"{name}: refused the same way")
            continue
        diffs = [f"{part}.{k}" for part in ("raw", "red") for k in A[part] if A[part][k] != B[part][k]]
        (ta0, ta1), (tb0, tb1) = A["times"], B["times"]
        print(f"{name}: {'SAME' if not diffs else 'DIFFERENT: ' + ', '.join(diffs)}   CPU build_dae "
              f"{ta0:.2f} -> {tb0:.2f} s, reduce_dae {ta1:.2f} -> {tb1:.2f} s")
        bad += bool(diffs)
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", type=Path, help="the other checkout (its root folder)")
    ap.add_argument("--dualarm", action="store_true", help="include the 18-DOF dual-arm model (slow)")
    ap.add_argument("--only", type=lambda s: [x for x in s.split(",") if x], default=[],
                    help="comma-separated model names")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.only, args.dualarm)
        return 0
    if args.against is None or not (args.against / "bondsim_ros").is_dir():
        ap.error("--against must name a checkout folder that contains bondsim_ros/")
    with tempfile.TemporaryDirectory() as tmp:
        other = run_side(args.against.resolve(), args, os.path.join(tmp, "other.pkl"))
        this = run_side(HERE, args, os.path.join(tmp, "this.pkl"))
    bad = compare(other, this)
    print(f"{len(other)} models, {bad} with differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
