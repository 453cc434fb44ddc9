"""The dynamics node under load, over real rclpy topics (pip environment or a ROS install).

1. Real-time factor: one Robotino twin (rose path) publishing /joint_states, /odom and /tf at
   33 Hz while its simulated clock runs at --rtf times wall time; reports whether it kept up
   (lag, overruns) and the cost of one frame (solver step + publication), i.e. the largest
   real-time factor the node can sustain at 33 Hz.
2. Jitter: publication period of /joint_states as received by a subscriber in another
   process-local node, p50/p99 deviation from 30.3 ms.
Fleets (many twins, in one process or several): benchmarks/fleet_bench.py.

    python benchmarks/ros_bench.py [--seconds 5] [--rtf 50]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402  (benchmarks/record.py, beside this script)

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", "77")


def make_executor(kind, ctx):
    if kind == "events":
        from rclpy.experimental import EventsExecutor

        return EventsExecutor(context=ctx)
    from rclpy.executors import SingleThreadedExecutor

    return SingleThreadedExecutor(context=ctx)


EXECUTOR = "events"


def _timed(publish, times: list):
    """``publish`` (a node's publish_joints), noting when each call starts."""
    def timed(state):
        times.append(time.perf_counter())
        return publish(state)
    return timed


def run(n_robots: int, rtf: float, seconds: float, reference="rose"):
    import rclpy

    from bondsim_ros.ros._env import start_up_heap_frozen
    from bondsim_ros.ros.dynamics_node import DynamicsNode

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    overrides = {"reference": reference, "real_time_factor": rtf, "probes": []}
    if n_robots > 1:  # a fleet: one clock for all robots (bondsim_ros.ros.graph.start_fleet)
        from bondsim_ros.ros.graph import start_fleet

        graph = start_fleet(n_robots, overrides, context=ctx)
        ex = graph.executor
        nodes = [v for k, v in graph.nodes.items() if k.startswith("robot")]
        extra = [graph.nodes["fleet_clock"]]
    else:
        ex = make_executor(EXECUTOR, ctx)
        nodes = [DynamicsNode(overrides=overrides, context=ctx)]
        ex.add_node(nodes[0])
        extra = []
    # the subscriber lives in another process, as a real consumer (RViz, Nav2) would
    topics = [f"/robot{k}/joint_states" if n_robots > 1 else "/joint_states" for k in range(n_robots)]
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    listener = subprocess.Popen([sys.executable, __file__, "--listen", out, "--seconds", str(seconds + 1.0),
                                 *topics])
    publish_times = {id(node): [] for node in nodes}  # perf_counter() at each /joint_states publish
    frame_times = []
    with start_up_heap_frozen():  # as the programs that spin the node run it (docs/ros.md)
        warm = time.monotonic() + 1.5
        while time.monotonic() < warm:
            ex.spin_once(timeout_sec=0.002)
        for node in nodes:
            node.frame_clock.overruns, node.frame_clock.max_lag = 0, 0.0
            node.publish_joints = _timed(node.publish_joints, publish_times[id(node)])
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.002)
    listener.wait(timeout=30)
    with open(out) as fh:
        arrivals = {k: v for k, v in enumerate(json.load(fh))}
    os.unlink(out)
    sim_t = [n.twin.t for n in nodes]
    result = {
        "overruns": sum(n.frame_clock.overruns for n in nodes),
        "max_lag_ms": max(n.frame_clock.max_lag for n in nodes) * 1e3,
        "sim_time": min(sim_t),
        "periods": [np.array(a) for a in arrivals.values()],
        "pub_periods": [np.diff(np.array(publish_times[id(n)])) for n in nodes],
    }
    for n in nodes + extra:
        ex.remove_node(n)
        n.destroy_node()
    ex.shutdown()
    rclpy.shutdown(context=ctx)
    return result, frame_times


def listen(out: str, seconds: float, topics: list) -> None:
    """Subscriber process: record arrival times of each topic for ``seconds`` after a warm-up."""
    import rclpy
    from sensor_msgs.msg import JointState

    from bondsim_ros.ros.graph import make_executor

    rclpy.init()
    node = rclpy.create_node("bench_listener")
    arrivals = [[] for _ in topics]
    for k, topic in enumerate(topics):
        node.create_subscription(JointState, topic, lambda m, k=k: arrivals[k].append(time.perf_counter()), 50)
    ex = make_executor()
    ex.add_node(node)
    start = time.monotonic() + 1.0
    while time.monotonic() < start:
        ex.spin_once(timeout_sec=0.01)
    for a in arrivals:
        a.clear()
    end = time.monotonic() + seconds - 1.0
    while time.monotonic() < end:
        ex.spin_once(timeout_sec=0.01)
    with open(out, "w") as fh:
        json.dump([list(np.diff(a)) if len(a) > 1 else [] for a in arrivals], fh)
    rclpy.shutdown()


def frame_cost(reference="rose", frames=600):
    """Wall time of one 30 ms frame: twin step + building the messages (no DDS)."""
    from bondsim_ros.robots.robotino.twin import RobotinoTwin

    twin = RobotinoTwin("builtin" if reference == "rose" else "twist")
    dt = 1 / 33.0
    for k in range(30):
        twin.step_to((k + 1) * dt)
    tic = time.perf_counter()
    for k in range(30, 30 + frames):
        twin.step_to((k + 1) * dt)
    return (time.perf_counter() - tic) / frames


def jitter_stats(periods, nominal):
    dev = np.abs(np.concatenate(periods) - nominal) * 1e3
    rates = [len(p) / max(np.sum(p), 1e-9) for p in periods if len(p)]
    return float(np.percentile(dev, 50)), float(np.percentile(dev, 99)), min(rates) if rates else 0.0


def main(argv=None):
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--listen":
        listen(sys.argv[2], float(sys.argv[4]), sys.argv[5:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rtf", type=float, default=50.0)
    ap.add_argument("--executor", choices=["events", "single"], default="events",
                    help="rclpy EventsExecutor (default) or SingleThreadedExecutor")
    record.add_argument(ap, "ros_bench")
    args = ap.parse_args(argv)
    global EXECUTOR
    EXECUTOR = args.executor
    print(f"executor: {args.executor}")
    nominal = 1 / 33.0
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    cost = frame_cost()
    print(f"one frame (30.3 ms of simulated time: solver + outputs): {cost * 1e3:.3f} ms "
          f"-> the solver alone could run {nominal / cost:.0f}x real time")
    res, _ = run(1, args.rtf, args.seconds)
    p50, p99, rate = jitter_stats(res["pub_periods"], nominal)
    kept = res["sim_time"] >= 0.9 * args.rtf * (args.seconds + 1.0)
    fig = {"executor": args.executor, "seconds": args.seconds, "frame_ms": cost * 1e3,
           "solver_real_time_factor": nominal / cost,
           "rtf_run": {"rtf": args.rtf, "simulated_s": res["sim_time"], "wall_s": args.seconds + 1.0,
                       "overruns": res["overruns"], "max_lag_ms": res["max_lag_ms"], "kept_up": bool(kept),
                       "rate_hz": rate, "jitter_p50_ms": p50, "jitter_p99_ms": p99}}
    print(f"rtf {args.rtf:g}: simulated {res['sim_time']:.1f} s in {args.seconds + 1:.0f} s wall, overruns "
          f"{res['overruns']}, max lag {res['max_lag_ms']:.1f} ms, {'kept up' if kept else 'FELL BEHIND'}; "
          f"publication {rate:.1f} Hz, jitter p50 {p50:.2f} ms, p99 {p99:.2f} ms")
    res, _ = run(1, 1.0, args.seconds)
    p50, p99, rate = jitter_stats(res["pub_periods"], nominal)
    r50, r99, rrate = jitter_stats(res["periods"], nominal)
    fig["real_time"] = {"rate_hz": rate, "jitter_p50_ms": p50, "jitter_p99_ms": p99, "overruns": res["overruns"],
                        "subscriber_p50_ms": r50, "subscriber_p99_ms": r99}
    print(f"rtf 1: publication {rate:.2f} Hz, period jitter p50 {p50:.2f} ms, p99 {p99:.2f} ms, "
          f"overruns {res['overruns']}; at a subscriber in another process: p50 {r50:.2f} ms, p99 {r99:.2f} ms")
    if args.record:
        record.write("ros_bench", sys.argv[1:] if argv is None else argv, {"runs": [fig]})


if __name__ == "__main__":
    main()
