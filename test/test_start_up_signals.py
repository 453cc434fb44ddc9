"""A signal during a command's start-up (the model build, the nodes' construction, up to the
spin) ends it as the CLI ends any command: SIGINT with 130 and "interrupted", SIGTERM with 143
and "terminated", promptly and without a traceback. The commands run as programs (the
console script's way), with a start-up step made slow or made to run Python's finalizers, so
that the signal provably lands in start-up."""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from procs import terminal_sigint  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# the model build made slow (a first compile takes as long): the signal comes while it runs
SLOW_BUILD = """
import sys, time
from bondsim_ros.ros import graph

build = graph.start_graph


def slow(*args, **kw):
    print("building", file=sys.stderr, flush=True)
    time.sleep(30)
    return build(*args, **kw)


graph.start_graph = slow
from bondsim_ros.cli import main

sys.argv = ["bondsim-ros", *sys.argv[1:]]
sys.exit(main())  # a program run, as the console script's
"""


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _signal_at(code: str, args: list, ready: str, sig, cwd, timeout: float = 30.0) -> tuple:
    """Run ``code`` with ``args``, send ``sig`` once its stderr says ``ready`` (None: at once);
    returns (exit status, seconds from the signal to the exit, stderr). A process that does not
    end within ``timeout`` of the signal is killed (status None)."""
    proc = subprocess.Popen([sys.executable, "-c", code, *args], env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=cwd, preexec_fn=terminal_sigint)
    guard = threading.Timer(120.0, proc.kill)
    guard.start()
    lines = []
    rc = None
    try:
        for line in proc.stderr:
            lines.append(line)
            if ready in line:
                break
        tic = time.monotonic()
        proc.send_signal(sig)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - tic
    finally:
        guard.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return rc, took, "".join(lines) + proc.stderr.read()


EXPECTED = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "terminated")}


@pytest.mark.parametrize("command", [["up", "--duration", "5"],
                                     ["demo", "--duration", "2", "--no-video", "--out", "out"]], ids=["up", "demo"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_model_build_ends_the_command_with_its_status(tmp_path, command, sig):
    """SIGTERM while `up` built its nodes said "interrupted" and exited 130, as Ctrl-C."""
    rc, took, err = _signal_at(SLOW_BUILD, command, "building", sig, tmp_path)
    status, word = EXPECTED[sig]
    assert (rc, err.strip().splitlines()[-1]) == (status, word), (rc, err[-3000:])
    assert took < 5.0 and "Traceback" not in err, (took, err[-3000:])
    assert not (tmp_path / "out" / "bag").exists()
