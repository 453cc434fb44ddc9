"""bondsim_ros's BDF against SUNDIALS IDA driven from C, at equal error, in one process.

The reference is IDA 6.x (Debian's ``libsundials-dev``) called from a small C driver, with the
model's reduced DAE printed as C by sympy and compiled by gcc (``benchmarks/c_ida.py``): no
Python inside its integration, as a C user of IDA would run it. Both solvers get the same
unknowns, the same consistent initial values (ours), the same rtol/atol, hmax and output
times, and leave the algebraic unknowns out of the error test (``IDASetSuppressAlg``).

For context only: IDA through scikit-sundae (the same numba kernels called back from Python)
and SciPy's BDF/Radau where the DAE is an ODE in disguise (dF/dy' invertible).

Each solver runs a work-precision sweep over --rtols (atol = rtol/100). Times are medians of
--repeat runs after a warm-up, ours and C-IDA's alternating (numba compile, C build excluded); only the integration over all
output times is timed (set-up and output columns are not, for any solver). Errors are against
the closed form where the model has one, else against C-IDA at rtol 1e-11. The figure of merit
is our time over C-IDA's *at equal error*: our time interpolated (log-log) along our own sweep
at each C-IDA point's error; the summary gives the median over those points. Counters
(Newton iterations, Jacobian evaluations/LU factorisations, rejected steps) are deterministic:
they are the evidence that does not depend on the load of the machine.

With ``--sundials-prefix PREFIX`` (or ``BONDSIM_SUNDIALS_PREFIX``), a SUNDIALS built from source
(docs/benchmarks.md: -O3 -march=native, static libraries) runs as a second reference, "C-IDA
native", alternating with the other two in the same process.

    apt-get install libsundials-dev     # benchmark only
    nice -n -5 python benchmarks/solver_bench.py [--repeat 5] [--rtols 1e-4,...,1e-8] [--dualarm]
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402  (benchmarks/record.py, beside this script)
# the closed-form references the tests use (test/oracles)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test"))


def cases(with_dualarm=False):
    from bondsim_ros.models import examples as ex
    from oracles.examples import dc_motor_analytic, mass_spring_damper_analytic, series_rlc_analytic
    from oracles.multibody import pendulum_reference

    from bondsim_ros.robots.multibody import model as mb
    from bondsim_ros.robots.robotino.model import robotino

    def msd_ref(t):
        return {"spring.q": mass_spring_damper_analytic(t)[0]}

    def rlc_ref(t):
        return {"C.q": series_rlc_analytic(t)[0]}

    def motor_ref(t):
        i, w = dc_motor_analytic(t)
        return {"current": i, "omega_motor": w}

    def osc_ref(t):
        return {"spring.q": np.cos(t)}

    def pend_ref(t):
        th, om = pendulum_reference(t)
        return {"theta": th, "omega": om}

    # (name, model builder, t_end, output step, hmax, closed form | columns | None, sksundae context);
    # without a closed form the reference is C-IDA at rtol 1e-11 on the given columns (default:
    # the recorded signals, else the differential unknowns)
    out = [
        ("mass-spring-damper", ex.mass_spring_damper, 10.0, 0.01, math.inf, msd_ref, True),
        ("series RLC", ex.series_rlc, 1.0, 0.001, math.inf, rlc_ref, True),
        ("DC motor, rigid gear (index 2)", ex.dc_motor, 0.5, 0.0005, math.inf, motor_ref, True),
        ("lossless oscillator, 20 periods", ex.lossless_oscillator, 40 * math.pi, 0.05, math.inf, osc_ref, True),
        ("pendulum, length constraint (index 2)", ex.pendulum, 10.0, 0.01, math.inf, None, True),
        ("pendulum benchmark, Lagrange Sf(0)", mb.pendulum_lagrange, 10.0, 0.01, math.inf, pend_ref, True),
        ("Robotino, paper case (50 s)", robotino, 50.0, 0.02, 0.02, None, True),
    ]
    if with_dualarm:
        from bondsim_ros.robots.dualarm.model import dualarm
        # positions only: the no-slip residual ("slip") is zero and the multiplier "lam" is an
        # index-2 unknown outside the error test; neither is a fair accuracy measure
        positions = ["x", "y", "phi", "wheel_l", "wheel_r", "w_q1", "w_q2"] + \
            [f"{arm}_q{k}" for arm in "rl" for k in range(1, 8)]
        out.append(("dual-arm manipulator (2 s)", dualarm, 2.0, 0.01, math.inf, positions, False))
    return out


def cpu_model() -> str:
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per point (median)")
    ap.add_argument("--rtols", default="1e-4,1e-5,1e-6,1e-7,1e-8",
                    help="tolerances of the work-precision sweep (atol = rtol/100)")
    ap.add_argument("--no-context", action="store_true", help="skip scikit-sundae and SciPy")
    ap.add_argument("--dualarm", action="store_true", help="include the 18-DOF dual-arm model (slow cold build)")
    ap.add_argument("--only", default="", help="comma-separated substrings of case names to run")
    ap.add_argument("--sundials-prefix", default=None,
                    help="install prefix of a SUNDIALS built from source: a second C-IDA reference "
                         "(default: $BONDSIM_SUNDIALS_PREFIX)")
    record.add_argument(ap, "solver_bench")
    args = ap.parse_args(argv)
    rtols = [float(v) for v in args.rtols.split(",")]
    from c_ida import CIDA, MissingSundials, check_toolchain, native_prefix

    prefix = args.sundials_prefix or native_prefix()
    try:
        check_toolchain()
    except MissingSundials as exc:
        sys.exit(f"solver_bench: {exc}")
    from bondsim_ros.bondgraph import compile_model
    from bondsim_ros.solver import BDFSolver

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"rtols {args.rtols}, atol = rtol/100; medians of {args.repeat}; load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    if prefix:
        print(f"C-IDA native: SUNDIALS under {prefix}")
    summary = []
    recorded = []  # per model, for --record
    only = [s.strip().lower() for s in args.only.split(",") if s.strip()]
    for name, build, t_end, dt, hmax, ref_fn, context in cases(args.dualarm):
        if only and not any(s in name.lower() for s in only):
            continue
        model = build()
        c = compile_model(model)
        n = c.n
        refs = {"C-IDA": CIDA(model, c)}
        if prefix:
            try:
                refs["C-IDA native"] = CIDA(model, c, prefix=prefix)
            except MissingSundials as exc:
                sys.exit(f"solver_bench: {exc}")
        cida = refs["C-IDA"]
        t_out = np.arange(1, int(round(t_end / dt)) + 1) * dt
        p = c.params
        s0 = BDFSolver(c.problem(), rtol=1e-6, atol=1e-8, hmax=hmax)
        y0, yp0 = s0.init(0.0, c.y0)
        y0, yp0 = y0.copy(), yp0.copy()
        names = ["t"] + c.output_names
        out_buf = np.zeros(len(c.output_names))

        def outputs(Y, YP):
            rows = np.zeros((len(t_out), len(c.output_names)))
            for k in range(len(t_out)):
                c.outputs(float(t_out[k]), np.ascontiguousarray(Y[k]), np.ascontiguousarray(YP[k]), p, out_buf)
                rows[k] = out_buf
            return rows

        def ours(rtol, atol):
            s = BDFSolver(c.problem(), rtol=rtol, atol=atol, hmax=hmax)
            s.init(0.0, y0, yp0, consistent=False)

            def go():
                return s.advance(t_out)

            return s, go

        def cida_run(rtol, atol, ref=cida):
            return ref.run(t_out, y0, yp0, rtol, atol, hmax)

        def timed_round(rtol, atol):
            """Our runs and each C-IDA's alternate, so that all see the same load on a shared machine.
            Returns {solver: (median time, (output rows, counters))}."""
            times = {key: [] for key in ["ours", *refs]}
            last = {}
            for k in range(args.repeat + 1):  # first round: warm-up
                s, go = ours(rtol, atol)
                tic = time.perf_counter()
                sol = go()
                el = time.perf_counter() - tic
                last["ours"] = (sol, s.stats)
                if k:
                    times["ours"].append(el)
                for key, ref in refs.items():
                    tic = time.perf_counter()
                    csol = cida_run(rtol, atol, ref)
                    el = time.perf_counter() - tic
                    last[key] = ((csol[0], csol[1]), csol[2])
                    if k:
                        times[key].append(el)
            return {key: (float(np.median(times[key])), (outputs(*last[key][0]), last[key][1])) for key in times}

        runs = {"ours": {}, **{key: {} for key in refs}}
        if context and not args.no_context:
            runs.update(sksundae_runs(c, t_out, y0, yp0, hmax, rtols, outputs))
        for rtol in rtols:
            atol = rtol * 1e-2
            for key, val in timed_round(rtol, atol).items():
                runs[key][rtol] = val
        if callable(ref_fn):
            ref, ref_name = ref_fn(t_out), "closed form"
        else:
            Y, YP, _ = cida_run(1e-11, 1e-13)
            tight, ref_name = outputs(Y, YP), "C-IDA at rtol 1e-11"
            keys = ref_fn or [k for k in names[1:] if "." not in k] or \
                [v for v, d in zip(c.var_names, c.differential) if d]
            ref = {k: tight[:, names.index(k) - 1] for k in keys}

        def err(rows):
            return max(float(np.max(np.abs(rows[:, names.index(k) - 1] - v)) / max(np.max(np.abs(v)), 1e-12))
                       for k, v in ref.items())

        print(f"\n{name}: n = {n}, {len(t_out)} outputs, hmax {hmax:g}, reference: {ref_name}")
        cols = [s for s in runs if runs[s]]
        print(f"  {'rtol':>7s}" + "".join(f" {s + ' [s]':>14s} {'err':>8s}" for s in cols))
        for rtol in rtols:
            print(f"  {rtol:7.0e}" + "".join(f" {runs[s][rtol][0]:14.5f} {err(runs[s][rtol][1][0]):8.1e}"
                                             if rtol in runs[s] else f" {'':14s} {'':8s}" for s in cols))
        points = {s: [(err(r[1][0]), r[0]) for r in runs[s].values()] for s in runs}
        mid = 1e-6 if 1e-6 in rtols else rtols[len(rtols) // 2]
        for key in refs:
            ratios = equal_error_ratios(points["ours"], points[key])
            print(f"  ours / {key} time at equal error: "
                  + (", ".join(f"{r:.2f} (err {e:.0e})" for e, r in ratios) if ratios else "no overlapping errors"))
            summary.append((name, key, n, ratios, runs["ours"][mid][0] / runs[key][mid][0],
                            runs["ours"][mid][0], runs[key][mid][0], mid))
        recorded.append({
            "model": name, "n": n, "rtol": mid,
            "time_s": {key: runs[key][mid][0] for key in ["ours", *refs]},
            "equal_error": {key: (float(np.median([r for _, r in ratios])) if ratios else None)
                            for key in refs for ratios in [equal_error_ratios(points["ours"], points[key])]},
            "points": {key: [[e, r] for e, r in equal_error_ratios(points["ours"], points[key])] for key in refs},
            "work": {"ours": {k: int(runs["ours"][mid][1][1][k])
                              for k in ("steps", "rejected", "newton_iters", "lu_factorizations")},
                     "C-IDA": {"steps": int(runs["C-IDA"][mid][1][1]["steps"]),
                               "rejected": int(runs["C-IDA"][mid][1][1]["err_test_fails"]
                                               + runs["C-IDA"][mid][1][1]["newton_conv_fails"]),
                               "newton_iters": int(runs["C-IDA"][mid][1][1]["newton_iters"]),
                               "lu_factorizations": int(runs["C-IDA"][mid][1][1]["lin_setups"])}},
        })
        print("  work per run     steps  rejected  Newton its  Jac evals  LU factorisations")
        for rtol in rtols:
            o = runs["ours"][rtol][1][1]
            i = runs["C-IDA"][rtol][1][1]
            print(f"  {rtol:7.0e} ours  {o['steps']:7d} {o['rejected']:9d} {o['newton_iters']:11d} "
                  f"{o['jac_evals']:10d} {o['lu_factorizations']:18d}")
            print(f"  {'':7s} C-IDA {i['steps']:7d} {i['err_test_fails'] + i['newton_conv_fails']:9d} "
                  f"{i['newton_iters']:11d} {i['jac_evals']:10d} {i['lin_setups']:18d}"
                  f"   (error-test fails {i['err_test_fails']}, convergence fails {i['newton_conv_fails']})")
    print("\nsummary: ours / C-IDA wall time (median over C-IDA's tolerances where ours reaches that error; "
          "and at equal rtol)")
    for name, key, n, ratios, same_tol, t_o, t_i, mid in summary:
        med = f"{np.median([r for _, r in ratios]):.2f}" if ratios else "n/a"
        print(f"  {name:40s} {key:12s} n={n:3d}  equal error {med:>5s}   rtol {mid:.0e}: {same_tol:.2f} "
              f"({t_o * 1e3:.3f} ms / {t_i * 1e3:.3f} ms)")
    print("errors: max over the compared columns of max|x - x_ref| / max|x_ref|; "
          "C-IDA 'rejected' = error-test + convergence failures")
    if args.record:
        record.write("solver_bench", sys.argv[1:] if argv is None else argv,
                     {"rtols": rtols, "repeat": args.repeat, "native_reference": bool(prefix), "models": recorded},
                     placeholders={"--sundials-prefix": "PREFIX"})


def sksundae_runs(c, t_out, y0, yp0, hmax, rtols, outputs):
    """Context rows: IDA through scikit-sundae (numba kernels called back from Python) and SciPy."""
    from scipy.integrate import solve_ivp
    from sksundae.ida import IDA

    n, p = c.n, c.params
    yb, ypb = np.zeros(n), np.zeros(n)
    vals = np.zeros(len(c.indices))

    def resfn(t, y, yp, res):
        yb[:] = y
        ypb[:] = yp
        c.residual(t, yb, ypb, p, res)

    def jacfn(t, y, yp, res, cj, JJ):
        yb[:] = y
        ypb[:] = yp
        c.jacobian(t, yb, ypb, p, cj, vals)
        JJ[:, :] = 0.0
        for j in range(n):
            JJ[c.indices[c.indptr[j]:c.indptr[j + 1]], j] += vals[c.indptr[j]:c.indptr[j + 1]]

    alg = [i for i in range(n) if not c.differential[i]] or None

    def ida(rtol, atol):
        # scikit-sundae does not expose IDASetSuppressAlg: a huge atol on the algebraic unknowns
        # takes them out of the error test the same way
        atol_vec = np.where(np.asarray(c.differential, dtype=bool), atol, 1e30)
        solver = IDA(resfn, rtol=rtol, atol=atol_vec, max_step=0.0 if math.isinf(hmax) else hmax,
                     algebraic_idx=alg, jacfn=jacfn, max_num_steps=500000)
        tic = time.perf_counter()
        sol = solver.solve(np.concatenate([[0.0], t_out]), y0, yp0)
        el = time.perf_counter() - tic
        if not sol.success or np.asarray(sol.y).shape[0] != len(t_out) + 1:
            raise RuntimeError(f"IDA failed: {sol.message}")
        return el, np.asarray(sol.y)[1:], np.asarray(sol.yp)[1:]

    def mats(t, y):
        G0, G1 = np.zeros((n, n)), np.zeros((n, n))
        yb[:] = y
        ypb[:] = 0.0
        for G, cj in ((G0, 0.0), (G1, 1.0)):
            c.jacobian(t, yb, ypb, p, cj, vals)
            for j in range(n):
                G[c.indices[c.indptr[j]:c.indptr[j + 1]], j] += vals[c.indptr[j]:c.indptr[j + 1]]
        return G0, G1

    G0, G1 = mats(0.0, y0)
    ode = np.linalg.matrix_rank(G1 - G0) == n

    def rhs(t, y):  # y' = M^-1 (-F(t, y, 0)), M = dF/dy'
        r0 = np.zeros(n)
        yb[:] = y
        ypb[:] = 0.0
        c.residual(t, yb, ypb, p, r0)
        G0, G1 = mats(t, y)
        return np.linalg.solve(G1 - G0, -r0)

    def scipy_run(method, rtol, atol):
        tic = time.perf_counter()
        sol = solve_ivp(rhs, (0.0, t_out[-1]), y0, method=method, t_eval=t_out, rtol=rtol, atol=atol,
                        max_step=hmax)
        el = time.perf_counter() - tic
        Y = sol.y.T
        return el, Y, np.array([rhs(tk, yk) for tk, yk in zip(t_out, Y)])

    def med3(fn):
        fn()
        r = [fn() for _ in range(3)]
        return float(np.median([x[0] for x in r])), (outputs(r[-1][1], r[-1][2]), {})

    runs = {"IDA via sksundae": {}}
    if ode:
        runs["SciPy BDF"], runs["SciPy Radau"] = {}, {}
    for rtol in rtols:
        atol = rtol * 1e-2
        runs["IDA via sksundae"][rtol] = med3(lambda: ida(rtol, atol))
        if ode:
            runs["SciPy BDF"][rtol] = med3(lambda: scipy_run("BDF", rtol, atol))
            runs["SciPy Radau"][rtol] = med3(lambda: scipy_run("Radau", rtol, atol))
    return runs


def equal_error_ratios(ours, ref):
    """For each reference point (error, time), our time at the same error by log-log interpolation
    along our own work-precision line; points outside our error range are skipped."""
    pts = sorted((e, t) for e, t in ours if e > 0)
    if len(pts) < 2:
        return []
    le = np.log([e for e, _ in pts])
    lt = np.log([t for _, t in pts])
    out = []
    for e, t in sorted(ref):
        if e <= 0 or not (le[0] <= np.log(e) <= le[-1]):
            continue
        out.append((e, float(np.exp(np.interp(np.log(e), le, lt))) / t))
    return out


if __name__ == "__main__":
    main()
