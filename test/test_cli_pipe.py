"""`bondsim-ros models | head`: a reader that leaves early is not an error worth a traceback."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_closed_stdout_pipe_gives_no_traceback():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "models"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # as `head` does once it has its lines
    err = proc.stderr.read().decode()
    rc = proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert rc == 141  # a shell's status for "killed by SIGPIPE", as other tools exit
