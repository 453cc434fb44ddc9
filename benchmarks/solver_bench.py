"""bondsim_ros's BDF against SUNDIALS IDA driven from C, at equal error, in one process.

The reference is IDA 6.x (Debian's ``libsundials-dev``) called from a small C driver on the
model's own generated C (``benchmarks/c_ida.py``): no Python inside its integration, as a C
user of IDA would run it. Both solvers get the same kernels: a model with modes (the Robotino's
roller switches) is integrated by both on the moded residual and its analytic Jacobian, IDA
locating the switches with its rootfinding and restarting there (``IDAReInit``, c_ida.py), ours
with its own events; the same unknowns, consistent initial values (ours), rtol/atol, hmax and
output times, and the algebraic unknowns left out of the error test (``IDASetSuppressAlg``).
Models with more than 20 unknowns also run against IDA with KLU (sparse LU on the same
pattern; ours takes its sparse LU above 60 unknowns, ``linear_solver="auto"``: KLU where the
solver core was built with it, else the core's own, as the run prints and records).

For context only: IDA through scikit-sundae (the same kernels called back from Python) and
SciPy's BDF/Radau where the DAE is an ODE in disguise (dF/dy' invertible).

Each solver runs a work-precision sweep over --rtols (atol = rtol/100). A run's time includes
its set-up (ours: ``BDFSolver`` + ``init``; IDA's: creating and initialising IDA, inside the C
call) and the integration over all output times, not the output columns; each is the median
of --repeat runs after a warm-up, ours and each IDA's alternating (build excluded).

Errors (max over columns of max|x - x_ref| / max|x_ref|) are measured twice: on the state
(the pose x, y, phi for the robots; the closed form where the model has one, else the listed or
differential columns) and on all named outputs; against the closed form, else against C-IDA at
rtol 1e-10. Our run at rtol 1e-10 differs from that reference by some amount: errors below
twice that cannot be told apart and are not counted. Only Pareto points count: a run is
dropped when a cheaper run of the same solver has an equal or lower error. The figure of merit
is our time over IDA's *at equal error*, both times interpolated (log-log) on the two Pareto
fronts at each front point's error inside the errors both reach; the median of those ratios.
Counters (steps, Newton iterations, LU factorisations, rejected steps) do not depend on the
machine's load.

With ``--sundials-prefix PREFIX`` (or ``BONDSIM_SUNDIALS_PREFIX``), a SUNDIALS built from source
(docs/benchmarks.md: -O3 -march=native, static libraries) runs as a further reference, "C-IDA
native" (and "C-IDA native KLU" where it was built with KLU), alternating with the others in the
same process.

    apt-get install libsundials-dev libsuitesparse-dev     # benchmark only
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
from bondsim_ros.solver import SolverOptions  # noqa: E402
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


TIGHT = 1e-10  # rtol of the reference runs (atol = rtol/100)
KLU_FROM = 20  # models with more unknowns also run against IDA with KLU
MAX_STEPS = 10 ** 7  # per run, both solvers (the Robotino takes 660,000 steps at rtol 1e-8)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per point (median)")
    ap.add_argument("--rtols", default="1e-4,1e-5,1e-6,1e-7,1e-8",
                    help="tolerances of the work-precision sweep (atol = rtol/100)")
    ap.add_argument("--no-context", action="store_true", help="skip scikit-sundae and SciPy")
    ap.add_argument("--dualarm", action="store_true", help="include the 18-DOF dual-arm model (slow cold build)")
    ap.add_argument("--only", default="", help="comma-separated substrings of case names to run; with --record, "
                    "their rows replace theirs in the recorded result and the other rows stay")
    ap.add_argument("--sundials-prefix", default=None,
                    help="install prefix of a SUNDIALS built from source: a further C-IDA reference "
                         "(default: $BONDSIM_SUNDIALS_PREFIX)")
    record.add_argument(ap, "solver_bench")
    args = ap.parse_args(argv)
    rtols = [float(v) for v in args.rtols.split(",")]
    from c_ida import CIDA, MissingSundials, check_toolchain, klu_available, native_prefix

    prefix = args.sundials_prefix or native_prefix()
    try:
        check_toolchain()
    except MissingSundials as exc:
        sys.exit(f"solver_bench: {exc}")
    from bondsim_ros.bondgraph import compile_model

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"rtols {args.rtols}, atol = rtol/100; medians of {args.repeat}; load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    if prefix:
        print(f"C-IDA native: SUNDIALS under {prefix}")
    tic_all = time.perf_counter()
    recorded = []  # per model, for --record
    only = [s.strip().lower() for s in args.only.split(",") if s.strip()]
    for name, build, t_end, dt, hmax, ref_fn, context in cases(args.dualarm):
        if only and not any(s in name.lower() for s in only):
            continue
        model = build()
        c = compile_model(model)
        refs = {"C-IDA": CIDA(model, c)}
        if c.n > KLU_FROM and klu_available():
            refs["C-IDA KLU"] = CIDA(model, c, linear_solver="klu")
        if prefix:
            try:
                refs["C-IDA native"] = CIDA(model, c, prefix=prefix)
                if c.n > KLU_FROM and klu_available(prefix):
                    refs["C-IDA native KLU"] = CIDA(model, c, prefix=prefix, linear_solver="klu")
            except MissingSundials as exc:
                sys.exit(f"solver_bench: {exc}")
        recorded.append(run_case(name, model, c, t_end, dt, hmax, ref_fn, context and not args.no_context, refs,
                                 rtols, args.repeat))
    print(f"\nthe whole sweep took {time.perf_counter() - tic_all:.0f} s")
    print("errors: max over the compared columns of max|x - x_ref| / max|x_ref|; ratios at equal error on the "
          "Pareto fronts; C-IDA 'rejected' = error-test + convergence failures")
    if args.record:
        figures = {"rtols": rtols, "repeat": args.repeat, "tight_rtol": TIGHT, "native_reference": bool(prefix),
                   "klu_reference": any("C-IDA KLU" in m["time_s"] for m in recorded), "models": recorded}
        argv = sys.argv[1:] if argv is None else argv
        if only:  # a subset: its rows replace theirs in the recorded run, the other rows stay
            record.merge("solver_bench", argv, figures, "models", "model", same=("rtols", "tight_rtol"),
                         placeholders={"--sundials-prefix": "PREFIX"})
        else:
            record.write("solver_bench", argv, figures, placeholders={"--sundials-prefix": "PREFIX"})


def ours_run(c, t_out, y0, yp0, rtol, atol, hmax, max_steps=MAX_STEPS):
    """One timed run of ours, set-up included: (seconds, (Y, YP), stats)."""
    from bondsim_ros.solver import BDFSolver

    tic = time.perf_counter()
    s = BDFSolver(c.problem(), options=SolverOptions(rtol=rtol, atol=atol, hmax=hmax, max_steps=max_steps))
    s.init(0.0, y0, yp0, consistent=False)
    sol = s.advance(t_out)
    return time.perf_counter() - tic, sol, s.stats


def ida_work(st: dict) -> dict:
    return {"steps": st["steps"], "rejected": st["err_test_fails"] + st["newton_conv_fails"],
            "newton_iters": st["newton_iters"], "lu_factorizations": st["lin_setups"],
            "events": st["mode_switches"], "event_restarts": st["reinits"]}


def ours_work(st: dict) -> dict:
    return {k: int(st[k]) for k in ("steps", "rejected", "newton_iters", "lu_factorizations")} | \
        {"events": int(st.get("events", 0)), "event_restarts": int(st.get("event_restarts", 0))}


def run_case(name, model, c, t_end, dt, hmax, ref_fn, context, refs, rtols, repeat):
    """One model's sweep: prints it and returns its record."""
    from bondsim_ros.solver import BDFSolver

    n = c.n
    t_out = np.arange(1, int(round(t_end / dt)) + 1) * dt
    p = c.params
    s0 = BDFSolver(c.problem(), options=SolverOptions(rtol=1e-6, atol=1e-8, hmax=hmax))
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

    def timed_round(rtol, atol):
        """Our runs and each C-IDA's alternate, so that all see the same load on a shared machine.
        Returns {solver: ([times], (output rows, work))}."""
        times = {key: [] for key in ["ours", *refs]}
        last = {}
        for k in range(repeat + 1):  # first round: warm-up
            el, sol, st = ours_run(c, t_out, y0, yp0, rtol, atol, hmax)
            last["ours"] = (sol, ours_work(st))
            if k:
                times["ours"].append(el)
            for key, ref in refs.items():
                tic = time.perf_counter()
                Y, YP, st = ref.run(t_out, y0, yp0, rtol, atol, hmax, max_steps=MAX_STEPS)
                el = time.perf_counter() - tic
                last[key] = ((Y, YP), ida_work(st))
                if k:
                    times[key].append(el)
        return {key: (times[key], (outputs(*last[key][0]), last[key][1])) for key in times}

    runs = {"ours": {}, **{key: {} for key in refs}}
    if context:
        runs.update(sksundae_runs(c, t_out, y0, yp0, hmax, rtols, outputs))
    for rtol in rtols:
        for key, val in timed_round(rtol, rtol * 1e-2).items():
            runs[key][rtol] = val
    # the references: C-IDA (its fastest linear solver here) and ours, both at rtol TIGHT
    tight_ref = refs.get("C-IDA KLU", refs["C-IDA"])
    Y, YP, _ = tight_ref.run(t_out, y0, yp0, TIGHT, TIGHT * 1e-2, hmax, max_steps=10 ** 8)
    tight = outputs(Y, YP)
    rows = switch_free_rows(c, t_out, Y, YP)
    _, sol, _ = ours_run(c, t_out, y0, yp0, TIGHT, TIGHT * 1e-2, hmax, max_steps=10 ** 8)
    tight_ours = outputs(*sol)
    signals = [k for k in names[1:] if "." not in k]
    pose = [k for k in ("x", "y", "phi") if k in signals]
    if callable(ref_fn):
        state_ref, ref_name = ref_fn(t_out), "closed form"
    else:
        keys = ref_fn or pose or signals or [v for v, d in zip(c.var_names, c.differential) if d]
        state_ref, ref_name = {k: tight[:, names.index(k) - 1] for k in keys}, f"C-IDA at rtol {TIGHT:g}"
    out_ref = {k: tight[:, names.index(k) - 1] for k in (signals or names[1:])}

    def err(out, ref):
        # at an output time that is a switching instant the outputs are a left or a right limit
        # (y' jumps there): those rows are left out, for every solver
        vals = [float(np.max(np.abs(out[rows, names.index(k) - 1] - v[rows])) / np.max(np.abs(v[rows])))
                for k, v in ref.items() if np.max(np.abs(v[rows])) > 1e-9]  # an all-zero column has no scale
        return max(vals) if vals else 0.0

    measures = {"state": state_ref, "outputs": out_ref}
    # how far the two tight runs are apart: the resolution of the errors (against the closed
    # form, how far C-IDA's tight run is from it)
    floor = {m: err(tight_ours, ref) if ref is not state_ref or not callable(ref_fn) else err(tight, ref)
             for m, ref in measures.items()}
    lu = s0.sparse_lu or "dense"  # ours: the LU of linear_solver="auto" (sparse: KLU or the core's own)
    print(f"\n{name}: n = {n}, {len(t_out)} outputs, hmax {hmax:g}, our LU: {lu}, reference: {ref_name}; "
          f"outputs: {len(out_ref)} columns against C-IDA at rtol {TIGHT:g}; "
          f"{int(np.sum(~rows))} output times at a switching instant left out; resolution: "
          + ", ".join(f"{m} {v:.1e}" for m, v in floor.items()))
    cols = [s for s in runs if runs[s]]
    print(f"  {'rtol':>7s}" + "".join(f" {s + ' [s]':>14s} {'err':>8s} {'err out':>8s}" for s in cols))
    for rtol in rtols:
        print(f"  {rtol:7.0e}" + "".join(
            f" {np.median(runs[s][rtol][0]):14.5f} {err(runs[s][rtol][1][0], state_ref):8.1e} "
            f"{err(runs[s][rtol][1][0], out_ref):8.1e}" if rtol in runs[s] else f" {'':14s} {'':8s} {'':8s}"
            for s in cols))
    rec = {"model": name, "n": n, "ours_lu": lu, "rtol": 1e-6 if 1e-6 in rtols else rtols[len(rtols) // 2],
           "reference": ref_name, "rows_at_switches": int(np.sum(~rows)), "resolution": floor,
           "time_s": {}, "time_range_s": {}, "per_step_us": {},
           "equal_error": {}, "points": {}, "pareto": {}, "work": {}}
    mid = rec["rtol"]
    solvers = ["ours", *refs]
    for key in solvers:
        ts = runs[key][mid][0]
        rec["time_s"][key] = float(np.median(ts))
        rec["time_range_s"][key] = [float(min(ts)), float(max(ts))]
        rec["work"][key] = runs[key][mid][1][1]
        rec["per_step_us"][key] = 1e6 * float(np.median(ts)) / max(rec["work"][key]["steps"], 1)
    for m, ref in measures.items():
        pts = {key: [(err(runs[key][r][1][0], ref), float(np.median(runs[key][r][0])), r) for r in rtols]
               for key in solvers}
        fronts = {key: pareto([q for q in pts[key] if q[0] >= 2 * floor[m]]) for key in solvers}
        rec["pareto"][m] = {key: [[e, t, r] for e, t, r in fronts[key]] for key in solvers}
        rec["points"][m], rec["equal_error"][m] = {}, {}
        for key in refs:
            ratios = front_ratios(fronts["ours"], fronts[key])
            rec["points"][m][key] = [[e, r] for e, r in ratios]
            rec["equal_error"][m][key] = float(np.median([r for _, r in ratios])) if ratios else None
            print(f"  {m}: ours / {key} at equal error on the Pareto fronts (ours {len(fronts['ours'])} of "
                  f"{len(rtols)} points, {key} {len(fronts[key])} of {len(rtols)}): "
                  + (", ".join(f"{r:.2f} (err {e:.0e})" for e, r in ratios) if ratios else "no common errors"))
    print("  work per run     steps  rejected  Newton its  LU factorisations  events (restarts)  us/step")
    for rtol in rtols:
        for key in solvers:
            w = runs[key][rtol][1][1]
            print(f"  {rtol:7.0e} {key:12s} {w['steps']:7d} {w['rejected']:9d} {w['newton_iters']:11d} "
                  f"{w['lu_factorizations']:18d} {w['events']:7d} ({w['event_restarts']})"
                  f" {1e6 * np.median(runs[key][rtol][0]) / max(w['steps'], 1):9.2f}")
    return rec


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


def switch_free_rows(c, t_out, Y, YP, dt=1e-7):
    """The output rows that are not at a switching instant of the modes: the modes the laws pick
    at each output point are those they pick dt before it (on a model without modes, all rows)."""
    keep = np.ones(len(t_out), dtype=bool)
    if not c.n_modes:
        return keep
    at, before = np.zeros(c.n_modes), np.zeros(c.n_modes)
    for k, t in enumerate(t_out):
        y, yp = np.ascontiguousarray(Y[k]), np.ascontiguousarray(YP[k])
        c.modes(float(t), y, yp, c.params, at)
        c.modes(float(t) - dt, np.ascontiguousarray(y - dt * yp), yp, c.params, before)
        keep[k] = np.array_equal(at, before)
    return keep


def pareto(points):
    """The Pareto front of (error, time, ...) runs: a run is dropped when a cheaper run (less
    time) has an equal or lower error; of runs with equal time the one with lower error stays.
    Returned by increasing time (so by decreasing error)."""
    front = []
    for q in sorted(points, key=lambda q: (q[1], q[0])):
        if q[0] > 0 and np.isfinite(q[0]) and (not front or q[0] < front[-1][0]):
            front.append(q)
    return front


def _time_at(front, e):
    """Time on a Pareto front at error e, log-log interpolation between its points."""
    le = np.log([q[0] for q in front][::-1])  # increasing error
    lt = np.log([q[1] for q in front][::-1])
    return float(np.exp(np.interp(np.log(e), le, lt)))


def front_ratios(ours, ref):
    """Our time over the reference's at equal error: both Pareto fronts (``pareto``) interpolated
    at the error of each point of either front inside the errors both reach. [(error, ratio)]."""
    if len(ours) < 1 or len(ref) < 1:
        return []
    lo = max(min(q[0] for q in ours), min(q[0] for q in ref))
    hi = min(max(q[0] for q in ours), max(q[0] for q in ref))
    errs = sorted({q[0] for q in ours + ref if lo <= q[0] <= hi})
    return [(e, _time_at(ours, e) / _time_at(ref, e)) for e in errs]


def equal_error_ratios(ours, ref):
    """For (error, time) runs of ours and of a reference: our time over the reference's at equal
    error on the two Pareto fronts (``front_ratios``)."""
    return front_ratios(pareto(list(ours)), pareto(list(ref)))


if __name__ == "__main__":
    main()
