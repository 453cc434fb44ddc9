"""Build time of a model against its size: chains of 10 ... 10 000 elements.

    python benchmarks/model_size.py [--sizes 10,100,1000,10000] [--kinds R,IRC] [--codegen]
                                    [--profile N] [--record]

A chain is a ladder of alternating 1- and 0-junctions driven by a voltage source, one element
on each junction: ``R`` is N resistors closed by one inertia (one state, every other unknown
algebraic and eliminated), ``IRC`` cycles I, R, C (a third of the elements are states); ``Rp``, ``IRCp``: the same with
every value the run-time parameter ``k`` (pivots made of parameters). The
model is written as a YAML model file and timed through the phases of a build: reading the
file (``load``), collecting the equations (``dae``), the elimination and the Jacobian
(``reduce``) and, with ``--codegen``, the C source (``source``; compiling it is the C
compiler's time and not measured), the last three as ``compile_model`` runs them (with the
Floats' shared records of facts, bondgraph/floatfacts.py). ``--profile N`` runs the build of
one chain of N elements under cProfile and prints the 25 most expensive functions.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # noqa: E402  (benchmarks/record.py, beside this script)


def chain_yaml(n: int, kinds: str = "R") -> str:
    """A ladder of ``n`` elements (``kinds`` cycled) on alternating 1-/0-junctions, driven by
    ``Se``; an ``R`` chain gets an inertia on its last junction so that it has a state. A
    trailing ``p`` (``Rp``) gives every value as the run-time parameter ``k``."""
    param = kinds.endswith("p")
    kinds = kinds.rstrip("p")
    laws = {"R": "{type: R, resistance: %s}", "I": "{type: I, inertia: %s}", "C": "{type: C, capacitance: %s}"}
    lines = ["model: chain"] + (["parameters: {k: 1.5}"] if param else [])
    lines += ["components:", "  E: {type: Se, effort: \"sin(t)\"}"]
    bonds = ["  - [E, j0]"]
    for k in range(n):
        kind = kinds[k % len(kinds)]
        jtype = "EffortJunction" if k % 2 == 0 else "FlowJunction"
        lines.append(f"  j{k}: {{type: {jtype}}}")
        lines.append(f"  x{k}: " + laws[kind] % ("k" if param else f"{1.0 + (k % 7) / 10:g}"))
        bonds.append(f"  - [j{k}, x{k}]")
        if k + 1 < n:
            bonds.append(f"  - [j{k}, j{k + 1}]")
    if set(kinds) == {"R"}:
        lines.append("  load: {type: I, inertia: 1.0}")
        bonds.append(f"  - [j{n - 1}, load]")
    return "\n".join(lines + ["bonds:"] + bonds) + "\n"


def build(text: str, codegen: bool) -> dict:
    from bondsim_ros.bondgraph.equations import build_dae
    from bondsim_ros.bondgraph.floatfacts import shared_float_facts
    from bondsim_ros.bondgraph.reduce import reduce_dae
    from bondsim_ros.bondgraph.yamlmodel import loads_model

    from bondsim_ros.bondgraph import yamlmodel

    # a chain of 10 000 elements has 20 001 components (junctions too): above a model file's
    # limit (yamlmodel.MAX_COMPONENTS), which guards shared files, not this measurement
    yamlmodel.MAX_COMPONENTS = max(yamlmodel.MAX_COMPONENTS, 3 * text.count("\n"))
    times = {}
    t0 = time.perf_counter()
    model = loads_model(text, "chain.yaml")
    times["load"] = time.perf_counter() - t0
    with shared_float_facts():  # as compile_model builds (bondgraph/floatfacts.py)
        t0 = time.perf_counter()
        raw = build_dae(model)
        times["dae"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        red = reduce_dae(raw)
        times["reduce"] = time.perf_counter() - t0
        if codegen:
            from bondsim_ros.bondgraph.codegen import generate_source
            from bondsim_ros.bondgraph.events import extract_events

            t0 = time.perf_counter()
            moded, ev = extract_events(red.equations, red.eq_names)
            source = generate_source(red, "bench", (moded, ev) if ev else None)
            times["source"] = time.perf_counter() - t0
            times["source_kb"] = len(source) / 1000
    times.update(raw_eqs=len(raw.equations), eqs=len(red.equations), nnz=len(red.jac_rows))
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000,10000")
    ap.add_argument("--kinds", default="R,IRC,Rp,IRCp",
                    help="comma-separated chain kinds (letters of I, R, C; a trailing p: values as a parameter)")
    ap.add_argument("--codegen", action="store_true", help="also generate the C source")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile one build of N elements")
    record.add_argument(ap, "model_size")
    args = ap.parse_args(argv)
    import sympy  # noqa: F401 - imported before timing: its import is not the build's

    from bondsim_ros.bondgraph.core import ModelError

    kinds = args.kinds.split(",")
    if args.profile:
        for kind in kinds:
            text = chain_yaml(args.profile, kind)
            prof = cProfile.Profile()
            prof.enable()
            build(text, args.codegen)
            prof.disable()
            print(f"--- chain {kind} of {args.profile}")
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        return 0
    cols = ["load", "dae", "reduce"] + (["source"] if args.codegen else [])
    print(f"{'chain':>6} {'N':>6} {'raw eqs':>8} {'eqs':>6} {'nnz':>7} " + " ".join(f"{c + ' s':>9}" for c in cols)
          + f" {'total s':>9}")
    rows = []
    for kind in kinds:
        for n in map(int, args.sizes.split(",")):
            t0 = time.perf_counter()
            try:
                r = build(chain_yaml(n, kind), args.codegen)
            except ModelError as exc:  # the engine's refusal is a result too
                el = time.perf_counter() - t0
                print(f"{kind:>6} {n:>6} refused after {el:.1f} s: {exc.message[:90]}", flush=True)
                rows.append({"chain": kind, "n": n, "refused_after_s": el, "refusal": exc.message})
                continue
            total = sum(r[c] for c in cols)
            print(f"{kind:>6} {n:>6} {r['raw_eqs']:>8} {r['eqs']:>6} {r['nnz']:>7} "
                  + " ".join(f"{r[c]:>9.3f}" for c in cols) + f" {total:>9.3f}", flush=True)
            rows.append({"chain": kind, "n": n, **{k: r[k] for k in ("raw_eqs", "eqs", "nnz")},
                         **{f"{c}_s": r[c] for c in cols}, "total_s": total})
    if args.record:
        record.write("model_size", sys.argv[1:] if argv is None else argv, {"codegen": args.codegen, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
