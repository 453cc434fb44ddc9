"""How many Robotino twins hold real time, in one process and spread over several.

For each number of processes P, each run searches the largest fleet N that `bondsim-ros fleet N
--processes P` runs at 33 Hz with, over the whole measured run and in every process, no frame
skipped, no overrun and a tick p99 (all of a process's robots: publish, then step) under the
30.3 ms period (bondsim_ros.ros.fleet.held). N doubles from P until a fleet fails, then the
boundary is bisected. Several runs give the median and the spread: a shared machine's noise moves
the boundary, and one run would report that noise.

    python benchmarks/fleet_bench.py [--processes 1 2] [--runs 3] [--seconds 10] [--max-robots 64] [--record]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402  (benchmarks/record.py, beside this script)

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", "78")

DYNAMICS = {"model": "robotino", "reference": "rose", "probes": []}


def trial(n: int, processes: int, seconds: float, warmup: float) -> dict:
    from bondsim_ros.ros.fleet import held, run_fleet

    stats = run_fleet(n, processes, DYNAMICS, duration=seconds, warmup=warmup)
    ok = all(not s.get("error") and held(s) for s in stats)
    worst = max(stats, key=lambda s: s.get("tick_p99_s") or 0.0)
    out = {"robots": n, "ok": ok, "tick_p99_ms": (worst.get("tick_p99_s") or float("nan")) * 1e3,
           "skipped": sum(s.get("skipped", 0) for s in stats), "overruns": sum(s.get("overruns", 0) for s in stats)}
    print(f"  P={processes} N={n:3d}: {'held' if ok else 'NOT held'} (worst tick p99 {out['tick_p99_ms']:.2f} ms, "
          f"{out['skipped']} skipped, {out['overruns']} overruns)", flush=True)
    return out


def largest_held(processes: int, seconds: float, warmup: float, max_robots: int) -> tuple[int, list]:
    """The largest N held (0: not even N = P), and every trial."""
    trials, good, bad = [], 0, None
    n = processes
    while n <= max_robots:
        t = trial(n, processes, seconds, warmup)
        trials.append(t)
        if not t["ok"]:
            bad = n
            break
        good = n
        if n == max_robots:
            break
        n = min(2 * n, max_robots)  # the limit itself is tried, not skipped by a doubling past it
    if bad is None:
        return good, trials  # the search limit held
    while bad - good > 1 and bad > processes:
        mid = (good + bad) // 2
        if mid < processes:
            break
        t = trial(mid, processes, seconds, warmup)
        trials.append(t)
        good, bad = (mid, bad) if t["ok"] else (good, mid)
    return good, trials


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0, help="measured wall seconds per trial")
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--max-robots", type=int, default=64)
    record.add_argument(ap, "fleet_bench")
    args = ap.parse_args(argv)
    figures = {"seconds": args.seconds, "warmup": args.warmup, "max_robots": args.max_robots, "by_processes": []}
    for p in args.processes:
        bests, all_trials = [], []
        for run in range(args.runs):
            print(f"P={p}, run {run + 1}/{args.runs}", flush=True)
            best, trials = largest_held(p, args.seconds, args.warmup, args.max_robots)
            bests.append(best)
            all_trials.append(trials)
        med = statistics.median(bests)
        print(f"P={p}: largest fleet held per run {bests}; median {med:g}, spread {min(bests)}..{max(bests)}",
              flush=True)
        figures["by_processes"].append({"processes": p, "largest_held": bests, "median": med,
                                        "at_search_limit": any(b >= args.max_robots for b in bests),
                                        "trials": all_trials})
    if args.record:
        record.write("fleet_bench", sys.argv[1:] if argv is None else argv, figures)


if __name__ == "__main__":
    main()
