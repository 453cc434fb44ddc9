"""Stress: the Robotino twin driven by random twist commands, counting solver failures.

A new random command in 70 % of the frames (a third of them beyond the limits, which the twin
clamps), frames of 1 ms, 30.3 ms, 50 ms or 606 ms (one ``step_to`` each, so a 606 ms frame is
one long advance, as at RTF 20). A failure is reported with its time and message and the twin
recovers from its last state, as the dynamics node does. Before the Newton-rate rules of
docs/solver.md, 23 of seeds 4-60 underflowed at least once; ``test/test_twin_step_to.py``
replays two of them.

    python benchmarks/twin_stress.py --seeds 4-200 --frames 4000
"""
import argparse
import sys
import time

import numpy as np


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
    twin = RobotinoTwin(reference="twist")
    failures, t, tic = [], 0.0, time.perf_counter()
    for _ in range(frames):
        if rng.random() < 0.7:
            wide = rng.random() < 0.33
            twin.set_command(*(rng.uniform(-1, 1, 3) * ([1.5, 1.5, 6.0] if wide else [0.7, 0.7, 2.5])))
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
    ap.add_argument("--frames", type=int, default=4000, help="frames per seed (default 4000, about 10 simulated minutes)")
    args = ap.parse_args(argv)
    failed_seeds, total = 0, 0
    for seed in args.seeds:
        failures, wall = run_seed(seed, args.frames)
        total += len(failures)
        failed_seeds += bool(failures)
        first = f"  first at t={failures[0][0]:.4f}: {failures[0][1]}" if failures else ""
        print(f"seed {seed:4d}: {len(failures)} failures, {wall:.1f} s{first}", flush=True)
    print(f"{failed_seeds} of {len(args.seeds)} seeds failed, {total} failures in all")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
