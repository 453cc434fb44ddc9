"""`bondsim-ros fit` wall time with the Jacobian's simulations in this process, on a 2-process
pool and on a local 2-worker Dask cluster.

    python benchmarks/fit_bench.py                    # the 5DPO identification and a 30 s Robotino log
    python benchmarks/fit_bench.py --robotino 5 --no-dask

Each fit is one ``bondsim_ros.fit.fit()`` call timed whole, as a user waits for it: with
``jobs=2`` that includes starting the two worker processes (spawn) and their loading the model
from the generated-code cache; the Dask cluster (``LocalCluster``, 2 worker processes of one
thread) is started before the timing, as a running cluster would be, but its workers load the
model within it. The generated code is built (warm cache), and a one-step fit run here, before any
timing. Each iteration of
the search runs one simulation at the accepted point here, then one per fitted parameter for the
Jacobian, in parallel: with n parameters and 2 workers the iteration's runs take 1 + ⌈n/2⌉ runs'
time against 1 + n serially, the ceiling of the ratio. The kinds of fit (jobs 1, jobs 2, Dask)
run in turn ``--repeat`` times, and each kind's fastest counts: the one the other jobs of a
shared machine disturbed least. Every case must give the serial fit's
estimate, covariance and number of simulations bit for bit; the script exits 1 otherwise. A control
before and after (sweep_bench's :func:`parallelism`) measures what two processes get of the
machine then.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

# one BLAS thread, as `bondsim-ros fit` runs (bondsim_ros/cli.py): set before numpy loads
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # noqa: E402  (benchmarks/record.py, beside this script)
from sweep_bench import parallelism  # noqa: E402


def load() -> list:
    return [round(v, 2) for v in os.getloadavg()]


def omni5dpo_case(seconds: float):
    """docs/examples/omni5dpo.md, "The paper's second identification": I_zz, kp, ki from yaw-rate
    steps at 50 Hz (8 s there) with the paper's values plus noise, from Table II's I_zz."""
    from bondsim_ros.fit import FitProblem, LogData
    from bondsim_ros.robots.omni5dpo.model import PAPER
    from bondsim_ros.solver import SolverOptions

    t = np.arange(0.0, seconds + 1e-4, 0.02)
    period = seconds / 4
    wz = np.select([t < 0.2, t < 0.2 + period, t < 0.2 + 2 * period, t < 0.2 + 3 * period],
                   [0.0, 3.0, -2.0, 4.0], 1.0)
    cols = ["t", "wz_cmd", "wz", "w1", "w2", "w3"]
    names = ["Izz", "kp", "ki"]
    fixed = {"w_step": 0.0}  # the model's own step off: the logged command drives it
    gen = FitProblem("omni5dpo", LogData(cols, np.column_stack([t, wz] + [0 * t] * 4)), names, cols[2:],
                     inputs=["wz_cmd"], fixed=fixed, options=SolverOptions(rtol=1e-9, atol=1e-11))
    sig = np.array([0.05, 0.2, 0.2, 0.2])
    y = gen.simulate([PAPER[n] for n in names]) + np.random.default_rng(3).normal(0.0, sig, (len(t), 4))

    def problem():
        return FitProblem("omni5dpo", LogData(cols, np.column_stack([t, wz, y])), names, cols[2:],
                          inputs=["wz_cmd"], fixed=fixed, weights=dict(zip(cols[2:], 1.0 / sig)))

    return problem, [PAPER["Izz_start"], 0.05, 0.06], {n: (0.0, math.inf) for n in names}


def robotino_case(seconds: float):
    """The Robotino twin calibrated from a cmd_vel log (test/test_fit.py's, stretched to
    ``seconds``): chassis mass, yaw inertia and motor constant from the wheel speeds and motor
    currents at 100 Hz, of a robot heavier than the packaged configuration, plus noise."""
    from bondsim_ros.fit import FitProblem, LogData
    from bondsim_ros.solver import SolverOptions

    truth = {"chassis_mass": 13.5, "chassis_inertia": 0.26, "motor_K": 0.028}
    t = np.round(np.arange(0.0, seconds + 1e-9, 0.01), 10)
    phase = np.mod(t, 3.0)  # test_fit's 3 s pattern of steps, repeated
    cmd = [np.where((phase >= 0.2) & (phase < 1.6), 0.6, 0.0), np.where((phase >= 1.0) & (phase < 2.2), -0.4, 0.0),
           np.where(phase >= 1.8, 2.0, 0.0)]
    outs = ["w1", "w2", "w3", "i1", "i2", "i3"]
    names = ["t", "vx_cmd", "vy_cmd", "wz_cmd"] + outs
    inputs = ["vx_cmd", "vy_cmd", "wz_cmd"]
    gen = FitProblem("robotino_twist", LogData(names, np.column_stack([t, *cmd] + [0 * t] * 6)), list(truth), outs,
                     inputs=inputs, options=SolverOptions(rtol=1e-9, atol=1e-11))
    sigma = np.array([0.05 if c[0] == "w" else 0.02 for c in outs])
    noisy = gen.simulate(list(truth.values())) + np.random.default_rng(11).normal(0.0, sigma, (len(t), 6))

    def problem():
        return FitProblem("robotino_twist", LogData(names, np.column_stack([t, *cmd, noisy])), list(truth), outs,
                          inputs=inputs, weights=dict(zip(outs, 1.0 / sigma)))

    return problem, None, {n: (0.0, math.inf) for n in truth}


CASES = {"omni5dpo": omni5dpo_case, "robotino": robotino_case}


def same(a, b) -> bool:
    return (np.array_equal(a.estimate, b.estimate) and np.array_equal(a.cov, b.cov, equal_nan=True)
            and a.n_eval == b.n_eval and a.cost == b.cost)


def bench(case: str, seconds: float, client, repeat: int) -> dict:
    from bondsim_ros.fit import fit

    problem, x0, bounds = CASES[case](seconds)  # builds the model's code (warm cache) before any timing
    fit(problem(), x0=x0, bounds=bounds, max_nfev=1)  # and this process's first-call costs (imports)
    modes = [("jobs_1", {"jobs": 1}), ("jobs_2", {"jobs": 2})]
    if client is not None:
        modes.append(("dask_2", {"scheduler": client}))
    out, serial = {}, None
    for _ in range(repeat):  # the modes in turn, so that a change of the machine's load hits each
        for label, kw in modes:
            p = problem()
            before = load()
            tic = time.perf_counter()
            result = fit(p, x0=x0, bounds=bounds, **kw)
            wall = time.perf_counter() - tic
            if serial is None:
                serial = result
            v = out.setdefault(label, {"walls_s": [], "simulations": result.n_eval, "converged": result.success,
                                       "identical_to_jobs_1": True, "load_before": before})
            v["walls_s"].append(wall)
            v["identical_to_jobs_1"] &= same(result, serial)
            v["load_after"] = load()
    for label, _ in modes:
        v = out[label]
        v["wall_s"] = min(v["walls_s"])  # the least disturbed by the other jobs on the machine
        v["speedup"] = out["jobs_1"]["wall_s"] / v["wall_s"]
        print(f"{case:9s} {label:7s} {v['simulations']:4d} simulations in {v['wall_s']:6.2f} s (fastest of "
              f"{', '.join(f'{w:.2f}' for w in v['walls_s'])}), x{v['speedup']:.2f}; same fit as jobs 1: "
              f"{v['identical_to_jobs_1']}; load {v['load_before']} -> {v['load_after']}", flush=True)
    p = problem()
    out.update(model=p.compiled.name, parameters=len(p.params), rows=len(p.t), seconds=float(p.t[-1]),
               residuals=len(p.t) * len(p.output_map), repeat=repeat)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--omni5dpo", type=float, default=8.0, help="length of the 5DPO log [s] (default 8)")
    ap.add_argument("--robotino", type=float, default=30.0, help="length of the Robotino log [s] (default 30)")
    ap.add_argument("--no-dask", action="store_true", help="leave the Dask cluster out")
    ap.add_argument("--repeat", type=int, default=3, help="fits of each kind, in turn; the fastest counts (default 3)")
    record.add_argument(ap, "fit_bench")
    args = ap.parse_args(argv)

    start = load()
    figures = {"control_before": parallelism()}
    if args.no_dask:
        figures["omni5dpo"] = bench("omni5dpo", args.omni5dpo, None, args.repeat)
        figures["robotino"] = bench("robotino", args.robotino, None, args.repeat)
    else:
        from dask.distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            figures["omni5dpo"] = bench("omni5dpo", args.omni5dpo, client, args.repeat)
            figures["robotino"] = bench("robotino", args.robotino, client, args.repeat)
    figures["control_after"] = parallelism()
    bad = [f"{case} {label}" for case in CASES for label, v in figures[case].items()
           if isinstance(v, dict) and not v["identical_to_jobs_1"]]
    if bad:
        print(f"fits differ from the serial one: {', '.join(bad)}", file=sys.stderr)
    if args.record:
        record.write("fit_bench", sys.argv[1:] if argv is None else argv, figures,
                     notes=[f"The machine's 2 cores are shared with other jobs (1-minute load average "
                            f"{start[0]:g} at the start, {load()[0]:g} at the end): absolute times move with "
                            f"them, the ratio to jobs 1 within one run is what counts. The load averages before "
                            f"and after each case are in the table, and the control rows give what two "
                            f"processes got of the machine then (a pure-Python loop, no fit code)."])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
