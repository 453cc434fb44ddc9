"""The paper's Robotino run (50 s, output 0.02 s, hmax 0.02 s, tolerances 1e-6), timed.

Prints, in one process on the same generated equations:
  - build time: cold (sympy, code generation, gcc for the model and the solver core; empty caches) and cached;
  - solve time of bondsim_ros's BDF, median of N after a warm-up, set-up included (the
    Simulation with its solver and consistent initial values);
  - the same DAE through SUNDIALS IDA driven from C (benchmarks/c_ida.py: the model's generated
    C, Debian's libsundials-dev): the same moded residual and analytic Jacobian, the roller
    switches located by IDA's rootfinding and restarted there (IDAReInit), dense LU and KLU
    (and with --sundials-prefix the same from a SUNDIALS built -O3 -march=native);
    same unknowns, consistent initial values, tolerances and hmax, set-up inside its timed C
    call: the reference; and, for context, IDA through scikit-sundae with the kernels called
    back from Python (the laws as written, no modes);
  - ratios, the work counters of both solvers (Newton iterations, Jacobian evaluations/LU
    factorisations, rejected steps), the tracking errors and the pose difference.

The paper's C++ BondSim: 0.51 s on a Ryzen 7 PRO 4750G (Damic & Cohodar Husic, section 4).

    python benchmarks/robotino_bench.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402  (benchmarks/record.py, beside this script)
from bondsim_ros.solver import SolverOptions  # noqa: E402


def cold_build_seconds() -> float:
    """Build the model in a fresh interpreter with empty caches (generated code, solver core, numba)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, BONDSIM_CACHE_DIR=tmp, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"))
        code = ("import time; t=time.perf_counter();"
                "from bondsim_ros.bondgraph import compile_model; "
                "from bondsim_ros.robots.robotino.model import robotino;"
                "from bondsim_ros.solver import BDFSolver;"
                "c=compile_model(robotino()); import numpy as np;"
                "o=np.zeros(c.n); c.residual(0.0, c.y0, c.y0*0, c.params, o);"
                "v=np.zeros(len(c.indices)); c.jacobian(0.0, c.y0, c.y0*0, c.params, 1.0, v);"
                "s=BDFSolver(c.problem()); s.init(0.0, c.y0); s.advance(np.array([1e-3]));"
                "print(time.perf_counter()-t)")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])


def run_ida(compiled, t_out, y0, yp0, rtol, atol, hmax):
    from sksundae.ida import IDA

    p = compiled.params
    res_k, jac_k = compiled.residual, compiled.jacobian
    n = compiled.n
    indptr, indices = compiled.indptr, compiled.indices
    vals = np.zeros(len(indices))
    yb, ypb = np.zeros(n), np.zeros(n)  # IDA hands read-only views; the kernels take writable arrays

    def resfn(t, y, yp, res):
        yb[:] = y
        ypb[:] = yp
        res_k(t, yb, ypb, p, res)

    def jacfn(t, y, yp, res, cj, JJ):
        yb[:] = y
        ypb[:] = yp
        jac_k(t, yb, ypb, p, cj, vals)
        JJ[:, :] = 0.0
        for j in range(n):
            for k in range(indptr[j], indptr[j + 1]):
                JJ[indices[k], j] = vals[k]

    alg = [i for i in range(n) if not compiled.differential[i]]
    solver = IDA(resfn, rtol=rtol, atol=atol, max_step=hmax, algebraic_idx=alg or None, jacfn=jacfn,
                 max_num_steps=100000)
    tic = time.perf_counter()
    sol = solver.solve(t_out, y0, yp0)
    return time.perf_counter() - tic, sol


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-build measurement (slow)")
    ap.add_argument("--no-sksundae", action="store_true", help="skip the scikit-sundae context run")
    ap.add_argument("--sundials-prefix", default=None,
                    help="install prefix of a SUNDIALS built from source: further C-IDA references "
                         "(default: $BONDSIM_SUNDIALS_PREFIX)")
    record.add_argument(ap, "robotino_bench")
    args = ap.parse_args(argv)

    from c_ida import MissingSundials, check_toolchain, klu_available, native_prefix

    prefix = args.sundials_prefix or native_prefix()

    try:
        check_toolchain()
    except MissingSundials as exc:
        sys.exit(f"robotino_bench: {exc}")
    from bondsim_ros.bondgraph import compile_model
    from bondsim_ros.bondgraph.simulation import Simulation
    from bondsim_ros.robots.robotino.model import robotino

    rtol, atol, hmax, t_end, dt = 1e-6, 1e-8, 0.02, 50.0, 0.02
    from solver_bench import cpu_model

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    cold = None if args.no_cold else cold_build_seconds()
    tic = time.perf_counter()
    compiled = compile_model(robotino())
    cached = time.perf_counter() - tic
    t_out = np.arange(1, int(round(t_end / dt)) + 1) * dt

    from c_ida import CIDA

    y0 = Simulation(compiled, options=SolverOptions(rtol=rtol, atol=atol, hmax=hmax)).solver
    yinit, ypinit = y0.y.copy(), y0.yp.copy()
    cida = CIDA(robotino(), compiled)
    # further references alternating with the two: IDA with KLU, and a SUNDIALS built from source
    extra = {"C-IDA KLU": CIDA(robotino(), compiled, linear_solver="klu")} if klu_available() else {}
    if prefix:
        extra["C-IDA native"] = CIDA(robotino(), compiled, prefix=prefix)
        if klu_available(prefix):
            extra["C-IDA native KLU"] = CIDA(robotino(), compiled, prefix=prefix, linear_solver="klu")
    extra_t = {key: [] for key in extra}
    extra_out = {}
    ours_t, ida_t, sk_t = [], [], []
    sim = cida_out = ida_sol = None
    for k in range(args.repeat + 1):  # first round: warm-up (numba dispatch, caches)
        tic = time.perf_counter()
        s = Simulation(compiled, options=SolverOptions(rtol=rtol, atol=atol, hmax=hmax))
        rows = s.advance(t_out)
        el = time.perf_counter() - tic
        tic = time.perf_counter()
        cida_out = cida.run(t_out, yinit, ypinit, rtol, atol, hmax)
        el_c = time.perf_counter() - tic
        for key, ref in extra.items():
            tic = time.perf_counter()
            extra_out[key] = ref.run(t_out, yinit, ypinit, rtol, atol, hmax)
            if k > 0:
                extra_t[key].append(time.perf_counter() - tic)
        if k > 0:
            ours_t.append(el)
            ida_t.append(el_c)
        sim = (s, rows)
    if not args.no_sksundae:
        tspan = np.concatenate([[0.0], t_out])
        for k in range(min(args.repeat, 3) + 1):
            el, ida_sol = run_ida(compiled, tspan, yinit, ypinit, rtol, atol, hmax)
            if k > 0:
                sk_t.append(el)
    med, med_c = float(np.median(ours_t)), float(np.median(ida_t))
    s, rows = sim
    stats = s.solver.stats
    names = s.output_names
    col = {n: i for i, n in enumerate(names)}
    after = rows[:, 0] > 5.0
    errs = {k: float(np.max(np.abs(rows[after, col[k]] - rows[after, col[k + "_ref"]]))) for k in ("x", "y", "phi")}
    Yc, YPc, cst = cida_out
    idx = [col["x"], col["y"], col["phi"]]
    out = np.zeros(len(compiled.output_names))
    ida_rows = []
    for k in range(len(t_out)):
        compiled.outputs(t_out[k], Yc[k], YPc[k], compiled.params, out)
        ida_rows.append(out[[i - 1 for i in idx]].copy())
    diff = float(np.max(np.abs(np.array(ida_rows) - rows[:, idx])))

    print()
    print(f"{'':38s}{'bondsim_ros BDF':>16s}{'IDA from C':>12s}")
    print(f"{'solve time, median of ' + str(args.repeat) + ' [s]':38s}{med:16.4f}{med_c:12.4f}")
    print(f"{'steps':38s}{stats['steps']:16d}{cst['steps']:12d}")
    print(f"{'rejected (error test + convergence)':38s}{stats['rejected']:16d}"
          f"{cst['err_test_fails'] + cst['newton_conv_fails']:12d}")
    print(f"{'Newton iterations':38s}{stats['newton_iters']:16d}{cst['newton_iters']:12d}")
    print(f"{'Jacobian evaluations / LU':38s}{stats['jac_evals']:16d}{cst['lin_setups']:12d}")
    print(f"{'residual evaluations':38s}{stats['res_evals']:16d}{cst['res_evals']:12d}")
    print(f"{'mode switches (restarts)':38s}{stats.get('events', 0):10d} ({stats.get('event_restarts', 0)})"
          f"{cst['mode_switches']:7d} ({cst['reinits']})")
    for key, ts in extra_t.items():
        print(f"{key}: {np.median(ts):.4f} s, ratio bondsim / it {med / np.median(ts):.2f} "
              f"(runs {', '.join(f'{x:.3f}' for x in ts)}; steps {extra_out[key][2]['steps']})")
    print(f"ratio bondsim / C-IDA: {med / med_c:.2f}   (runs: ours {', '.join(f'{x:.3f}' for x in ours_t)}; "
          f"C-IDA {', '.join(f'{x:.3f}' for x in ida_t)})")
    if sk_t:
        print(f"context: IDA through scikit-sundae (Python callbacks) {np.median(sk_t):.3f} s, "
              f"ratio bondsim / it {med / np.median(sk_t):.2f}")
    print(f"paper's BondSim (C++, Ryzen 7 PRO 4750G): 0.51 s -> ratio {med / 0.51:.2f}")
    print(f"build: cold {cold if cold is None else round(cold, 2)} s, cached {cached:.3f} s")
    print(f"tracking errors after 5 s: x {errs['x']:.2e} m, y {errs['y']:.2e} m, phi {errs['phi']:.2e} rad")
    print(f"max |pose(bondsim) - pose(C-IDA)| over the run: {diff:.2e}")
    print(f"solver stats: {stats}")
    print(f"C-IDA counters: {cst}")
    if args.record:
        record.write("robotino_bench", sys.argv[1:] if argv is None else argv, {
            "case": {"t_end": t_end, "dt_out": dt, "hmax": hmax, "rtol": rtol, "atol": atol},
            "repeat": args.repeat,
            "setup_included": True,
            "ida_moded": True,
            "solve_s": {"ours": med, "C-IDA": med_c} | {key: float(np.median(ts)) for key, ts in extra_t.items()},
            "solve_s_range": {"ours": [min(ours_t), max(ours_t)], "C-IDA": [min(ida_t), max(ida_t)]}
            | {key: [min(ts), max(ts)] for key, ts in extra_t.items()},
            "ratio": med / med_c,
            "ratios": {key: med / float(np.median(ts)) for key, ts in extra_t.items()},
            "work": {"ours": {"steps": stats["steps"], "rejected": stats["rejected"],
                              "newton_iters": stats["newton_iters"], "lu_factorizations": stats["lu_factorizations"],
                              "events": stats.get("events"), "event_restarts": stats.get("event_restarts")},
                     "C-IDA": {"steps": cst["steps"], "rejected": cst["err_test_fails"] + cst["newton_conv_fails"],
                               "newton_iters": cst["newton_iters"], "lu_factorizations": cst["lin_setups"],
                               "events": cst["mode_switches"], "event_restarts": cst["reinits"]}},
            "build_s": {"cold": cold, "cached": cached},
            "sksundae_s": float(np.median(sk_t)) if sk_t else None,
            "tracking_error_after_5s": errs,
            "max_pose_difference_to_cida": diff,
        }, placeholders={"--sundials-prefix": "PREFIX"})


if __name__ == "__main__":
    main()
