"""`bondsim-ros sweep` throughput: runs per second in this process, on a 2-process pool and on a
local 2-worker Dask cluster.

    python benchmarks/sweep_bench.py                 # pendulum (2000 runs) and robotino_twist (100 runs)
    python benchmarks/sweep_bench.py --small 500 --robotino 40

Each case is one ``bondsim_ros.sweep.sweep()`` call timed whole, as a user waits for it: with
``jobs=2`` that includes starting the two worker processes (spawn) and their loading the model
from the generated-code cache; the Dask cluster (``LocalCluster``, 2 worker processes of one
thread) is started before the timing, as a running cluster would be, but its workers load the
model within it. The generated code is built (warm cache) before any timing. Every case must give
the same table as the serial one, value for value; the script exits 1 otherwise. A control
before and after (:func:`parallelism`) measures what two processes get of the machine then.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # noqa: E402  (benchmarks/record.py, beside this script)

# (label, model, parameter grid, options)
CASES = {
    "small": ("pendulum", lambda n: {"L": f"0.5:2:{n}"}, {}),
    # the Robotino driven by a body twist for 50 s (the paper case's length): 10 x (n / 10) commands
    "robotino": ("robotino_twist", lambda n: {"vx_cmd": "-0.5:0.5:10", "wz_cmd": f"-1:1:{max(1, n // 10)}"},
                 {"t_end": 50.0}),
}


def load() -> list:
    return [round(v, 2) for v in os.getloadavg()]


def same(a, b) -> bool:
    if a.status != b.status or a.output_names != b.output_names:
        return False
    return all(np.array_equal(a[n], b[n], equal_nan=True) for n in a.output_names)


def _spin(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i
    return s


def parallelism(n: int = 3_000_000) -> dict:
    """What two processes can get of this machine now: a pure-Python loop twice in this process,
    then once in each of two (already started) spawned processes. On an idle 2-core machine the
    ratio is about 2; under other jobs' load it is what a 2-worker sweep can hope for at best."""
    import multiprocessing

    tic = time.perf_counter()
    _spin(n), _spin(n)
    serial = time.perf_counter() - tic
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [10, 10])
        tic = time.perf_counter()
        pool.map(_spin, [n, n])
        parallel = time.perf_counter() - tic
    print(f"control: a pure-Python loop twice serially {serial:.2f} s, on 2 processes {parallel:.2f} s: "
          f"x{serial / parallel:.2f}", flush=True)
    return {"serial_s": serial, "two_processes_s": parallel, "speedup": serial / parallel}


def bench(case: str, n: int, client) -> dict:
    from bondsim_ros.sweep import load_model, sweep

    model, grid, opts = CASES[case]
    load_model(model)  # the generated code in the cache, before any timing
    out, serial = {}, None
    for label, kw in (("jobs_1", {"jobs": 1}), ("jobs_2", {"jobs": 2}), ("dask_2", {"scheduler": client})):
        before = load()
        tic = time.perf_counter()
        result = sweep(model, grid(n), **opts, **kw)
        wall = time.perf_counter() - tic
        runs = len(result.rows)
        ok = result.status.count("ok")
        if serial is None:
            serial = result
        identical = same(result, serial)
        out[label] = {"runs": runs, "ok": ok, "wall_s": wall, "runs_per_s": runs / wall,
                      "speedup": out["jobs_1"]["wall_s"] / wall if "jobs_1" in out else 1.0,
                      "identical_to_jobs_1": identical, "load_before": before, "load_after": load()}
        print(f"{model:15s} {label:7s} {runs:5d} runs ({ok} ok) in {wall:6.2f} s: {runs / wall:8.1f} runs/s, "
              f"x{out[label]['speedup']:.2f}; same as jobs 1: {identical}; load {before} -> {load()}", flush=True)
    out["model"] = model
    out["t_end"] = opts.get("t_end")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=2000, help="runs of the pendulum (default 2000)")
    ap.add_argument("--robotino", type=int, default=100, help="runs of robotino_twist (default 100)")
    record.add_argument(ap, "sweep_bench")
    args = ap.parse_args(argv)
    from dask.distributed import Client, LocalCluster

    figures = {"control_before": parallelism()}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        figures["small"] = bench("small", args.small, client)
        figures["robotino"] = bench("robotino", args.robotino, client)
    figures["control_after"] = parallelism()
    bad = [f"{case} {label}" for case in ("small", "robotino") for label, v in figures[case].items()
           if isinstance(v, dict) and not v["identical_to_jobs_1"]]
    if bad:
        print(f"results differ from the serial sweep: {', '.join(bad)}", file=sys.stderr)
    if args.record:
        record.write("sweep_bench", sys.argv[1:] if argv is None else argv, figures,
                     notes=["The machine's 2 cores are shared with other jobs: the load averages before and "
                            "after each case are in the table, and the control row gives what two processes "
                            "got of the machine then (a pure-Python loop, no sweep code): a sweep on 2 "
                            "workers cannot beat it."])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
