"""Multibody benchmark comparison (Boudon et al., Tables 1 and 5, Figs. 21 and 31): every pendulum and
slider-crank variant, its DAE size, solver effort, computing time and error against the
minimal-coordinates model.

    .venv/bin/python benchmarks/multibody_bench.py [--repeat 5] [--rtol 1e-6]

Time = model set-up (consistent initial values) + integration, best of ``--repeat`` runs of the
compiled model; code generation and numba compilation are one-off per model structure and
cached on disk, so they are reported separately ("build", first run in this process, which may
be a cache load). Error: max |omega - omega_minimal| (pendulum, rad/s, the paper's Fig. 21
quantity) and max |v_piston - v_piston_minimal| (slider crank, m/s, Fig. 31), over the whole run.
Paper column: 20-sim computing times of Table 1 (pendulum); Table 5's numbers are not in the
text we have.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np

from bondsim_ros.bondgraph import ModelError, compile_model, simulate
from bondsim_ros.robots.multibody import model as mb
from bondsim_ros.solver import SolverOptions

# (name, builder kwargs, method, bonds, structure, paper 20-sim time [Table 1] or "")
ROWS = [
    ("pendulum_minimal", {}, "minimal coordinates", "scalar", "isostatic", "0.015"),
    ("pendulum_zcp", {}, "ZCP (dependent I)", "scalar", "isostatic", "0.031"),
    ("pendulum_lagrange", {}, "Lagrange (Sf(0))", "vector", "isostatic", "0.050"),
    ("pendulum_lagrange_scalar", {}, "Lagrange (Sf(0))", "scalar", "isostatic", "0.040"),
    ("pendulum_parasitic", {}, "R/C 1e6 N/m", "vector", "isostatic", "0.145"),
    ("pendulum_parasitic_scalar", {}, "R/C 1e6 N/m", "scalar", "isostatic", "0.6"),
    ("slider_crank_minimal", {}, "minimal coordinates", "scalar", "isostatic", ""),
    ("slider_crank_lagrange", {}, "Lagrange (Sf(0))", "vector", "isostatic", ""),
    ("slider_crank_lagrange_scalar", {}, "Lagrange (Sf(0))", "scalar", "isostatic", ""),
    ("slider_crank_isostatic3d_lagrange", {}, "Lagrange (Sf(0)), 3-D joints", "vector", "isostatic", ""),
    ("slider_crank_parasitic", {}, "R/C 1e7 N/m", "vector", "isostatic", ""),
    ("slider_crank_parasitic_scalar", {}, "R/C 1e7 N/m", "scalar", "isostatic", ""),
    ("slider_crank_parasitic", {"k": 1e6}, "R/C 1e6 N/m", "vector", "isostatic", ""),
    ("slider_crank_hyperstatic_parasitic", {}, "R/C 1e7 N/m, 3-D joints", "vector", "hyperstatic", ""),
    ("slider_crank_hyperstatic_lagrange", {}, "Lagrange (Sf(0)), 3-D joints", "vector", "hyperstatic", ""),
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--atol", type=float, default=1e-8)
    args = ap.parse_args(argv)
    tol = SolverOptions(rtol=args.rtol, atol=args.atol)
    print(f"# multibody benchmark (Boudon et al.): {platform.machine()}, {platform.python_version()}, "
          f"rtol={args.rtol:g}, atol={args.atol:g}, best of {args.repeat}")
    print("| model | method | bonds | structure | unknowns | steps | build [s] | time [s] | error vs minimal "
          "| 20-sim [s] |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ref = {}
    for name, kw, method, bonds, structure, paper in ROWS:
        pend = name.startswith("pendulum")
        span = dict(t_end=3.0, dt_out=0.01) if pend else dict(t_end=2.0, dt_out=0.002)
        col = "omega" if pend else "v_piston"
        label = name + "".join(f" ({k}={v:g})" for k, v in kw.items())
        tic = time.perf_counter()
        try:
            compiled = compile_model(getattr(mb, name)(**kw))
        except ModelError as exc:  # the hyperstatic Lagrange model: redundant constraints
            over = str(exc).split("over-constrained): ")[-1]
            print(f"| {label} | {method} | {bonds} | {structure} | – | – | – | – | "
                  f"ModelError, redundant: {over} | {paper} |")
            continue
        build = time.perf_counter() - tic
        best, res = np.inf, None
        for _ in range(args.repeat):
            res = simulate(compiled, **span, options=tol)
            best = min(best, res.timings["init"] + res.timings["solve"])
        if method == "minimal coordinates":
            ref[pend] = res[col]
            err = "reference"
        else:
            err = f"{np.max(np.abs(res[col] - ref[pend])):.2e} {'rad/s' if pend else 'm/s'}"
        print(f"| {label} | {method} | {bonds} | {structure} | {compiled.n} | {res.stats['steps']} | "
              f"{build:.2f} | {best:.4f} | {err} | {paper} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
