"""`bondsim-ros fleet N --processes P`: twins spread over processes meet on DDS as separate
robots, each process reports whether it held real time, and bad input is refused by name."""
import re
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from sensor_msgs.msg import JointState  # noqa: E402

from bondsim_ros.cli import main  # noqa: E402
from bondsim_ros.ros.fleet import held, run_fleet, split  # noqa: E402


def test_split_numbers_robots_across_processes():
    assert split(5, 2) == [(0, 3), (3, 2)]
    assert split(4, 4) == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert split(1, 1) == [(0, 1)]


def test_robots_of_two_processes_publish_under_their_own_namespaces():
    """A listener in this process hears /robot0/joint_states and /robot1/joint_states while the
    two robots run in two other processes; each process reports its frames. On the shared /tf
    each robot's transforms carry its own frame names (once both were odom -> base_footprint,
    one robot to tf2)."""
    from tf2_msgs.msg import TFMessage

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("fleet_listener", context=context)
    heard = {"/robot0/joint_states": [], "/robot1/joint_states": []}
    for topic, got in heard.items():
        node.create_subscription(JointState, topic, lambda m, got=got: got.append(
            (m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, list(m.name))), 100)
    frames = set()
    node.create_subscription(TFMessage, "/tf", lambda m: frames.update(
        (t.header.frame_id, t.child_frame_id) for t in m.transforms), 100)
    result = {}
    runner = threading.Thread(target=lambda: result.update(
        stats=run_fleet(2, 2, {"model": "robotino", "probes": []}, duration=4.0, warmup=1.0)))
    try:
        runner.start()
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        while runner.is_alive():
            executor.spin_once(timeout_sec=0.05)
        runner.join()
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    stats = result["stats"]
    assert [s["process"] for s in stats] == [0, 1] and all(s["error"] is None for s in stats), stats
    assert [(s["first"], s["robots"]) for s in stats] == [(0, 1), (1, 1)]
    # 4 s measured at 33 Hz: about 132 frames each, fewer only by the frames a loaded machine skipped
    for s in stats:
        assert s["ticks"] + s["skipped"] >= 120, s
        assert s["tick_p50_s"] < s["period_s"], s
    # the stream, once this listener has found the publisher: on a loaded machine (the suite's
    # workers on two cores) discovery has taken 2 s and more, and a count of the messages
    # then measured the machine. Over the stamps heard (a second and more of the twin's time, 33
    # frames a second), at least half the frames arrive, with this robot's joints
    for topic, got in heard.items():
        span = got[-1][0] - got[0][0] if got else 0.0
        assert span >= 1.0 and len(got) - 1 >= 0.5 * 33 * span, f"{topic}: {len(got)} messages over {span:.2f} s"
        assert "wheel1_axle" in got[-1][1], got[-1]
    assert frames == {("robot0/odom", "robot0/base_footprint"), ("robot1/odom", "robot1/base_footprint")}, frames


def test_a_process_that_cannot_build_its_twins_ends_the_fleet_with_its_error():
    tic = time.monotonic()
    with pytest.raises(RuntimeError, match=r"process [01]: .*publish_rate"):
        run_fleet(2, 2, {"model": "robotino", "probes": [], "publish_rate": -1.0}, duration=1.0, warmup=0.0)
    assert time.monotonic() - tic < 120  # not the 600 s the others would wait for it


def test_held_needs_every_criterion():
    ok = {"ticks": 100, "skipped": 0, "overruns": 0, "tick_p99_s": 0.01, "period_s": 1 / 33}
    assert held(ok)
    assert not held({**ok, "skipped": 1})
    assert not held({**ok, "overruns": 1})
    assert not held({**ok, "tick_p99_s": 0.031})
    assert not held({**ok, "ticks": 0})


@pytest.mark.parametrize("argv, message", [
    (["fleet", "0"], "N: a fleet needs at least one robot, got 0"),
    (["fleet", "2", "--processes", "3"], "--processes must be 1..2 (at least one robot per process), got 3"),
    (["fleet", "2", "--processes", "0"], "--processes must be 1..2 (at least one robot per process), got 0"),
    (["fleet", "2", "--duration", "0"], "--duration must be a positive number of seconds, got 0"),
    (["fleet", "2", "--warmup", "nan"], "--warmup must be a finite number of seconds >= 0, got nan"),
    (["fleet", "2", "--model", "nosuchrobot"], "--model 'nosuchrobot': not a registered robot"),
])
def test_bad_fleet_arguments_are_refused_by_name(capfd, argv, message):
    rc = main(argv)
    out, err = capfd.readouterr()
    assert rc == 2 and "Traceback" not in out + err
    assert f"bondsim-ros fleet: error: {message}" in err


@pytest.mark.parametrize("argv, message", [
    # started ROS and its process, which built twins until killed
    (["fleet", "99999999999999999999999", "--duration", "1"],
     "N: at most 10000 robots, more than one machine runs (a core holds about 34 twins in real time), got "
     "999999... (23 digits)"),
    (["fleet", "10001", "--duration", "1"],
     "N: at most 10000 robots, more than one machine runs (a core holds about 34 twins in real time), got 10001"),
    (["fleet", "1000", "--processes", "121", "--duration", "1"],
     "--processes must be 1..120 (one DDS participant each: at most 120 on one computer), got 121"),
])
def test_a_fleet_beyond_one_machine_is_refused_before_anything_starts(capfd, monkeypatch, argv, message):
    import multiprocessing

    def started(*args, **kwargs):
        raise AssertionError("a fleet process was started")

    monkeypatch.setattr(multiprocessing.get_context("spawn").Process, "start", started)
    rc = main(argv)
    out, err = capfd.readouterr()
    assert rc == 2 and "Traceback" not in out + err, err
    assert err.strip() == f"bondsim-ros fleet: error: {message}", err


def test_fleet_command_writes_its_figures(tmp_path, capfd):
    import json

    out = tmp_path / "fleet.json"
    rc = main(["fleet", "2", "--duration", "2", "--warmup", "0.5", "--json", str(out)])
    _, err = capfd.readouterr()
    stats = json.loads(out.read_text())
    assert len(stats) == 1 and stats[0]["robots"] == 2 and stats[0]["ticks"] > 0
    # the exit status is the verdict the summary prints
    assert rc == (0 if held(stats[0]) else 1)
    assert ("held real time over the whole run" in err) == (rc == 0)


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_to_the_fleets_parent_alone_stops_every_process_and_reports(tmp_path, sig):
    """`kill PID` (or a supervisor's SIGTERM, or SIGINT) to the parent process only: it waited 30 s
    for reports its processes never sent, then 30 s more for each, and said "fleet of 0 robots"
    with status 1. It passes the signal on, reports what each process measured and ends within
    seconds with the CLI's status, 143 "terminated" (130 "interrupted")."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from procs import children, guarded, left_over, terminal_sigint

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "fleet", "2", "--processes", "2",
                             "--reference", "cmd_vel", "--warmup", "0.5"], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=terminal_sigint)
    lines = []
    with guarded(proc), proc.stderr:
        for line in proc.stderr:
            lines.append(line)
            if "warming up" in line:
                break
        time.sleep(1.5)  # the warm-up, then a second measured
        workers = children(proc.pid)
        tic = time.monotonic()
        proc.send_signal(getattr(signal, sig))
        err = "".join(lines) + proc.stderr.read()
        rc = proc.wait(timeout=30)
        took = time.monotonic() - tic
    status, word = (143, "terminated") if sig == "SIGTERM" else (130, "interrupted")
    assert (rc, err.strip().splitlines()[-1]) == (status, word), (rc, err[-3000:])
    assert took < 8.0 and "Traceback" not in err, (took, err[-3000:])
    for k in (0, 1):
        assert f"[fleet] process {k} (stopped by {sig}): robot{k}..robot{k} (1), " in err, err[-3000:]
    assert "[fleet] fleet of 2 robots in 2 process(es)" in err, err[-3000:]
    assert not left_over(workers), "fleet processes outlived the command"


def test_the_command_lines_fleet_prefixes_each_robots_frames(context):
    """`bondsim-ros fleet` reads the packaged dynamics.yaml, whose frame_prefix is empty: that
    empty prefix replaced each robot's robotK/, and every robot published odom -> base_footprint
    on the shared /tf, one robot jumping between poses to tf2."""
    import argparse

    from bondsim_ros.ros.commands import _node_params
    from bondsim_ros.ros.graph import start_fleet

    dyn, _, _ = _node_params(argparse.Namespace(params=None, model="robotino", reference=None, rate=None, rtf=None))
    assert dyn["frame_prefix"] == ""  # the file's: the case that went wrong
    graph = start_fleet(2, {**dyn, "probes": []}, context=context)
    try:
        prefixes = [graph.nodes[f"robot{k}"].p["frame_prefix"] for k in (0, 1)]
        assert prefixes == ["robot0/", "robot1/"]
        # one /clock: every robot's, from clocks started apart, made simulated time jump back and forth
        assert graph.nodes["robot0"].count_publishers("/clock") == 1
        assert [graph.nodes[f"robot{k}"].p["publish_clock"] for k in (0, 1)] == [True, False]
    finally:
        graph.executor.shutdown()
        for node in graph.nodes.values():
            node.destroy_node()


def test_a_fleet_json_that_cannot_be_written_keeps_the_summary(capfd):
    rc = main(["fleet", "1", "--duration", "1", "--warmup", "0", "--json", "/dev/full"])
    _, err = capfd.readouterr()
    assert rc == 2 and "Traceback" not in err, err[-2000:]
    assert "[fleet] fleet of 1 robots" in err and "--json /dev/full: cannot write" in err, err[-2000:]


def _fleet_command(tmp_path, *argv, env_extra=None):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from procs import terminal_sigint

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
               **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "fleet", *argv], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=terminal_sigint)


def test_a_process_that_ends_at_its_start_ends_the_fleet_at_once(tmp_path):
    """rcl ends a process whose RMW implementation it cannot load (exit status 102) before the
    process can report: the parent waited 600 s at its start barrier. It now names the process
    and how it ended within seconds, with the CLI's status for a refused run."""
    proc = _fleet_command(tmp_path, "2", "--processes", "2", "--duration", "5",
                          env_extra={"RMW_IMPLEMENTATION": "rmw_no_such_implementation_cpp"})
    tic = time.monotonic()
    try:
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    took = time.monotonic() - tic
    assert proc.returncode == 2 and "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("bondsim-ros fleet: error: process 0"), err[-3000:]
    assert "before its twins were built" in last or "RCLError" in last or "RMW" in last, last
    assert took < 30.0, took


def test_a_process_killed_during_the_run_ends_the_fleet_at_once(tmp_path):
    """A process killed mid-run (the OOM killer, a crash) sends no report: the parent waited
    for the run's end and 60 s more (with no --duration: for ever). It now names the process
    within seconds and stops the others, which do not outlive the command."""
    import os
    import signal

    from procs import guarded, left_over, pool_workers

    proc = _fleet_command(tmp_path, "2", "--processes", "2", "--duration", "60", "--warmup", "0.5")
    with guarded(proc), proc.stderr:
        for line in proc.stderr:
            if "warming up" in line:
                break
        workers = pool_workers(proc.pid, count=2)
        time.sleep(1.0)
        tic = time.monotonic()
        os.kill(workers[0], signal.SIGKILL)
        err = proc.stderr.read()
        rc = proc.wait(timeout=60)
        took = time.monotonic() - tic
    assert rc == 2 and "Traceback" not in err, (rc, err[-3000:])
    assert re.search(r"bondsim-ros fleet: error: fleet: process [01] ended \(killed by SIGKILL\) during the run",
                     err), err[-3000:]
    assert took < 15.0, took
    assert not left_over(workers), "fleet processes outlived the command"
