"""Stress: the Robotino twin driven by random twist commands, counting solver failures.

A new random command in 70 % of the frames (a third of them beyond the limits, which the twin
clamps), frames of 1 ms, 30.3 ms, 50 ms or 606 ms (one ``step_to`` each, so a 606 ms frame is
one long advance, as at RTF 20). A failure is reported with its time and message and the twin
recovers from its last state, as the dynamics node does; the script exits 1 if there was any
failure. ``test/test_twin_step_to.py`` replays two streams (seeds 28 and 94) that ended in a
step-size underflow when a Newton solve on a stale iteration matrix could accept an
unconverged point (docs/solver.md, the Newton-rate rules).

    python benchmarks/twin_stress.py --seeds 4-200 --frames 4000
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402  (benchmarks/record.py, beside this script)


def _seeds(text):
    lo, _, hi = text.partition("-")
    try:
        return range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a seed or a range like 4-200, got {text!r}") from None


def run_seed(seed, frames):
    """Failures [(t, message)] of one random command stream, and its wall time."""
    from bondsim_ros.robots.robotino.twin import RobotinoTwin

    rng = np.random.default_rng(seed)
    twin = RobotinoTwin("twist")
    failures, t, tic = [], 0.0, time.perf_counter()
    for _ in range(frames):
        if rng.random() < 0.7:
            wide = rng.random() < 0.33
            twin.set_twist(*(rng.uniform(-1, 1, 3) * ([1.5, 1.5, 6.0] if wide else [0.7, 0.7, 2.5])))
        t += rng.choice([0.0303, 0.606, 0.05, 0.001])
        try:
            twin.step_to(t)
        except Exception as exc:  # a solver failure: what the node would report, then recover
            failures.append((t, str(exc).splitlines()[0]))
            twin.recover()
    return failures, time.perf_counter() - tic


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=_seeds, default=_seeds("4-60"), help="a seed or a range (default 4-60)")
    ap.add_argument("--frames", type=int, default=4000,
                    help="frames per seed (default 4000, about 10 simulated minutes)")
    record.add_argument(ap, "twin_stress")
    args = ap.parse_args(argv)
    failed_seeds, total, walls, failed = 0, 0, [], []
    for seed in args.seeds:
        failures, wall = run_seed(seed, args.frames)
        walls.append(wall)
        if failures:
            failed.append({"seed": seed, "failures": len(failures), "first_t": failures[0][0],
                           "first_message": failures[0][1]})
        total += len(failures)
        failed_seeds += bool(failures)
        first = f"  first at t={failures[0][0]:.4f}: {failures[0][1]}" if failures else ""
        print(f"seed {seed:4d}: {len(failures)} failures, {wall:.1f} s{first}", flush=True)
    print(f"{failed_seeds} of {len(args.seeds)} seeds failed, {total} failures in all")
    if args.record:
        record.write("twin_stress", sys.argv[1:] if argv is None else argv, {
            "seeds": f"{args.seeds.start}-{args.seeds.stop - 1}", "frames": args.frames,
            "seeds_run": len(args.seeds), "failed_seeds": failed_seeds, "failures": total,
            "wall_s_per_seed": {"median": statistics.median(walls), "min": min(walls), "max": max(walls)},
            "failed": failed})
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
