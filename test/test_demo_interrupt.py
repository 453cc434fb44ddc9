"""`bondsim-ros demo` stopped while it records (Ctrl-C, SIGTERM) keeps what it recorded: a
closed, readable MCAP bag, said on the console, and the CLI's status for the signal."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from procs import guarded, terminal_sigint  # noqa: E402

from bondsim_ros.ros.bag import read_bag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_demo_stopped_while_recording_keeps_a_readable_bag(tmp_path, sig):
    """It deleted the bag (and wrote nothing) on Ctrl-C."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "demo", "--duration", "30", "--no-video",
                             "--out", "out"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=terminal_sigint)
    lines = []
    with guarded(proc), proc.stderr:
        for line in proc.stderr:
            lines.append(line)
            if "recording /tf_static" in line:  # the recorder has every topic: the run starts
                break
        time.sleep(2.0)
        tic = time.monotonic()
        proc.send_signal(sig)
        err = "".join(lines) + proc.stderr.read()
        rc = proc.wait(timeout=30)
        took = time.monotonic() - tic
    word, status = ("interrupted", 130) if sig == signal.SIGINT else ("terminated", 143)
    last = err.strip().splitlines()
    assert (rc, last[-1]) == (status, word), (rc, err[-3000:])
    assert last[-2].startswith(f"[demo] {word}: the bag holds t = 0..") and "out/bag" in last[-2], err[-3000:]
    until = float(last[-2].split("0..")[1].split(" s")[0])
    assert 0.5 < until < 10.0 and took < 5.0 and "Traceback" not in err, (until, took, err[-3000:])
    msgs = read_bag(tmp_path / "out" / "bag")  # closed: its metadata written, every message readable
    assert len(msgs["/joint_states"]) > 10 and "/tf_static" in msgs, {k: len(v) for k, v in msgs.items()}
    assert not (tmp_path / "out" / "path.png").exists()
