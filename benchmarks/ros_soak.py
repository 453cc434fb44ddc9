"""Soak: the ROS graph of `bondsim-ros up` for a long simulated time under a hostile /cmd_vel.

`bondsim-ros up --reference cmd_vel --rtf R` runs as its own process (dynamics_node,
probe_node, state_publisher); this script is the hostile world around it, in a cycle of 20 s
of wall time:

    0-6 s    random commands at 20 Hz, a third of them beyond the limits (clamped)
    6-8 s    NaN, +-inf, +-1e300, 1e30 mixed with valid commands at 50 Hz
    8-9 s    a burst of random valid commands at 1 kHz
    9-13 s   silence (the watchdog stops the robot)
    13 s     ~/reset;  14 s ~/pause true;  15 s ~/pause false
    15-20 s  random valid commands at 33 Hz

and reports: node deaths (the process ended by itself; restarted, goal 0), tracebacks in its
log, resident memory (VmRSS) after warm-up and at the end (goal: flat), the node's overruns
and solver failures (from its exit summary), and the largest gap between two /joint_states
received here. The cmd_vel watchdog counts simulated seconds: at the default RTF 20, commands
at 20 Hz or 33 Hz of wall time are 1 s or 0.6 s of simulated time apart, beyond its 0.5 s, so it
also stops the robot between them, within the frame each command runs out in.

    python benchmarks/ros_soak.py [--sim-seconds 3600] [--rtf 20] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # noqa: E402  (benchmarks/record.py, beside this script)

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", "91")

HOSTILE = [math.nan, math.inf, -math.inf, 1e300, -1e300, 1e30]
SUMMARY = re.compile(r"stopped \((\w+)\): (\d+) frames, (\d+) overruns, max lag ([\d.]+) ms, (\d+) solver failures")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return math.nan


class Graph:
    """The `up` process; restarted if it dies."""

    def __init__(self, rtf: float, log_dir: Path):
        self.rtf, self.log_dir = rtf, log_dir
        self.runs = []
        self.start()

    def start(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        self.log = self.log_dir / f"up_{len(self.runs)}.log"
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "up", "--reference", "cmd_vel",
                                          "--rtf", str(self.rtf)], env=env, stdout=subprocess.DEVNULL, stderr=f)
        self.runs.append(self.log)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sim-seconds", type=float, default=3600.0, help="simulated seconds to run (default: one hour)")
    ap.add_argument("--rtf", type=float, default=20.0, help="real-time factor of the twin (default 20)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the figures to this file")
    record.add_argument(ap, "ros_soak")
    args = ap.parse_args(argv)

    import rclpy
    from geometry_msgs.msg import Twist
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool, Trigger

    from bondsim_ros.ros.graph import make_executor

    rng = np.random.default_rng(args.seed)
    log_dir = Path(tempfile.mkdtemp(prefix="ros_soak_"))
    graph = Graph(args.rtf, log_dir)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("soak_world", context=ctx)
    ex = make_executor(ctx)
    ex.add_node(node)
    pub = node.create_publisher(Twist, "/cmd_vel", 10)
    reset = node.create_client(Trigger, "/dynamics_node/reset")
    pause = node.create_client(SetBool, "/dynamics_node/pause")
    joints = {"n": 0, "last": None, "max_gap": 0.0, "t_sim": 0.0}

    def on_joints(msg):
        now = time.monotonic()
        if joints["last"] is None:
            joints["last"] = now
        paused = pauses and pauses[-1][0] - 0.1 <= joints["last"] <= pauses[-1][1] + 0.5  # the node is silent then
        if measuring and not paused and now - joints["last"] > joints["max_gap"]:
            joints["max_gap"] = now - joints["last"]
            joints["gap_phase"] = (joints["last"] - start) % 20  # where in the 20 s cycle it began
        joints["last"] = now
        joints["n"] += 1

    node.create_subscription(JointState, "/joint_states", on_joints, 100)
    measuring = False
    start = math.nan
    pauses = []  # (wall time of pause true, of pause false)

    def spin(seconds):
        end = time.monotonic() + seconds
        while True:
            ex.spin_once(timeout_sec=max(0.0, min(0.002, end - time.monotonic())))
            if time.monotonic() >= end:
                return

    # warm-up: the graph builds its model, then the first joint states
    tic = time.monotonic()
    while joints["n"] < 30:
        spin(0.05)
        if time.monotonic() - tic > 180:
            raise SystemExit(f"no /joint_states after 180 s; log: {graph.log}")
    rss_start = rss_mb(graph.proc.pid)
    print(f"graph up after {time.monotonic() - tic:.1f} s, RSS {rss_start:.1f} MB; soaking "
          f"{args.sim_seconds:.0f} simulated s at RTF {args.rtf:g} ({args.sim_seconds / args.rtf:.0f} s wall)",
          flush=True)

    def twist(vals):
        m = Twist()
        m.linear.x, m.linear.y, m.angular.z = (float(v) for v in vals)
        return m

    def valid(wide=False):
        return rng.uniform(-1, 1, 3) * ([1.5, 1.5, 6.0] if wide else [0.7, 0.7, 2.5])

    deaths, sent, hostile_sent, services = 0, 0, 0, 0
    rss_samples = [(0.0, rss_start)]
    wall = args.sim_seconds / args.rtf
    start = time.monotonic()
    measuring = True
    done_events = set()
    last_sample = start
    while (now := time.monotonic()) - start < wall:
        el = now - start
        cycle, ph = int(el // 20), el % 20
        if not graph.alive():
            deaths += 1
            print(f"graph died at {el:.0f} s (exit {graph.proc.returncode}); log: {graph.log}", flush=True)
            graph.start()
            while joints["n"] == 0 or time.monotonic() - joints["last"] > 1:
                spin(0.1)
            continue
        if ph < 6:
            pub.publish(twist(valid(wide=rng.random() < 0.33)))
            sent += 1
            spin(0.05)
        elif ph < 8:
            v = valid()
            if rng.random() < 0.5:
                v[rng.integers(3)] = HOSTILE[rng.integers(len(HOSTILE))]
                hostile_sent += 1
            pub.publish(twist(v))
            sent += 1
            spin(0.02)
        elif ph < 9:
            pub.publish(twist(valid()))
            sent += 1
            spin(0.001)
        elif ph < 13:
            spin(0.05)
        elif ph < 15:
            for key, at, call in (("reset", 13.0, lambda: reset.call_async(Trigger.Request())),
                                  ("pause", 14.0, lambda: pause.call_async(SetBool.Request(data=True)))):
                if ph >= at and (cycle, key) not in done_events:
                    done_events.add((cycle, key))
                    if key == "pause":
                        pauses.append([time.monotonic(), math.inf])
                    call()
                    services += 1
            spin(0.05)
        else:
            if (cycle, "resume") not in done_events:
                done_events.add((cycle, "resume"))
                if pauses:
                    pauses[-1][1] = time.monotonic()
                pause.call_async(SetBool.Request(data=False))
                services += 1
            pub.publish(twist(valid()))
            sent += 1
            spin(1 / 33)
        if now - last_sample >= 10.0:
            last_sample = now
            rss_samples.append((now - start, rss_mb(graph.proc.pid)))
    measuring = False
    rss_end = rss_mb(graph.proc.pid)
    rss_samples.append((time.monotonic() - start, rss_end))
    rc = graph.stop()
    ex.shutdown()
    node.destroy_node()
    rclpy.try_shutdown(context=ctx)

    logs = [p.read_text(errors="replace") for p in graph.runs]
    m = SUMMARY.search(logs[-1])
    tracebacks = sum(t.count("Traceback") for t in logs)
    t_rss, v_rss = np.array(rss_samples).T
    half = t_rss >= t_rss[-1] / 2
    # growth over the second half, per simulated hour (the first half includes allocator warm-up)
    slope = float(np.polyfit(t_rss[half], v_rss[half], 1)[0]) * 3600 / args.rtf if half.sum() >= 3 else math.nan
    res = {
        "sim_seconds": args.sim_seconds, "rtf": args.rtf, "wall_s": round(time.monotonic() - start, 1),
        "node_deaths": deaths, "tracebacks": tracebacks, "exit_status_on_sigint": rc,
        "rss_mb_start": round(rss_start, 1), "rss_mb_end": round(rss_end, 1),
        "rss_mb_max": round(float(v_rss.max()), 1), "rss_mb_per_sim_hour_second_half": round(slope, 2),
        "frames": int(m.group(2)) if m else None, "overruns": int(m.group(3)) if m else None,
        "max_lag_ms": float(m.group(4)) if m else None, "solver_failures": int(m.group(5)) if m else None,
        "joint_states_received": joints["n"], "max_joint_state_gap_ms": round(joints["max_gap"] * 1e3, 1),
        "max_gap_began_at_cycle_s": round(joints.get("gap_phase", math.nan), 2),
        "commands_sent": sent, "hostile_commands": hostile_sent, "service_calls": services,
        "machine": f"{record.cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "logs": str(log_dir),
    }
    for k, v in res.items():
        print(f"{k:34s} {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    if args.record:
        figures = {k: v for k, v in res.items() if k not in ("machine", "logs")}
        record.write("ros_soak", sys.argv[1:] if argv is None else argv, figures,
                     placeholders={"--json": "OUT.json"})
    return 0 if deaths == 0 and tracebacks == 0 and rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
