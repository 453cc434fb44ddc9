"""A signal during a command's start-up (the command line's own steps before the command
runs, the model build, the nodes' construction, up to the spin) ends it as the CLI ends any
command: SIGINT with 130 and "interrupted", SIGTERM with 143 and "terminated", promptly and
without a traceback. The commands run as programs (the console script's way), with a start-up
step made slow or made to run Python's finalizers, so that the signal provably lands in start-up."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from procs import guarded, terminal_sigint

ROOT = Path(__file__).resolve().parents[1]

try:  # the commands of the ROS graph need rclpy; `simulate` does not
    import rclpy  # noqa: F401
    NO_ROS = None
except ImportError as exc:
    NO_ROS = f"rclpy not installed (install the [ros] extra): {exc}"
needs_ros = pytest.mark.skipif(NO_ROS is not None, reason=str(NO_ROS))

# one of the command line's steps before a command runs (TARGET: module:attribute path) made
# slow: the signal comes while it runs
SLOW_CLI_STEP = """
import importlib, sys, time

module, _, path = sys.argv[1].partition(":")
owner = importlib.import_module(module)
*parents, name = path.split(".")
for part in parents:
    owner = getattr(owner, part)
step = getattr(owner, name)


def slow(*args, **kw):
    print("starting", file=sys.stderr, flush=True)
    for _ in range(300):  # slices: a signal handed to another thread is raised between them
        time.sleep(0.1)
    return step(*args, **kw)


setattr(owner, name, slow)
from bondsim_ros.cli import main

sys.argv = ["bondsim-ros", *sys.argv[2:]]
sys.exit(main())
"""

# the model build made slow (a first compile takes as long): the signal comes while it runs
SLOW_BUILD = """
import sys, time
from bondsim_ros.ros import graph

build = graph.start_graph


def slow(*args, **kw):
    print("building", file=sys.stderr, flush=True)
    # slices, as a build running Python notices a signal between bytecodes: the kernel may hand
    # the signal to one of the middleware's threads, and one sleep of the main thread is not cut
    # short then (Python raises it in the main thread once that sleep returns)
    for _ in range(300):
        time.sleep(0.1)
    return build(*args, **kw)


graph.start_graph = slow
from bondsim_ros.cli import main

sys.argv = ["bondsim-ros", *sys.argv[1:]]
sys.exit(main())  # a program run, as the console script's
"""


# the signal comes once the nodes are built, while Python runs a weakref callback: as it does
# while start-up's final garbage collection or an import runs theirs, which drop the exception
# the signal raises in them
SIGNAL_IN_A_CALLBACK = """
import os, signal, sys, time, weakref
from bondsim_ros.ros import graph

build = graph.start_graph
refs = []


class Garbage:
    pass


def build_then_signal(*args, **kw):
    built = build(*args, **kw)
    garbage = Garbage()
    garbage.cycle = garbage  # freed by the next collection, start-up's last
    refs.append(weakref.ref(garbage, lambda ref: (os.kill(os.getpid(), signal.SIG), time.sleep(0.5))))
    del garbage
    print("built", file=sys.stderr, flush=True)
    return built


graph.start_graph = build_then_signal
from bondsim_ros.cli import main

sys.argv = ["bondsim-ros", *sys.argv[1:]]
sys.exit(main())
"""


# the signal comes while a module is being imported during the build (as the URDF's libraries
# are): an exception raised there can abort the process (an extension module's initialisation)
SIGNAL_IN_AN_IMPORT = """
import os, sys
from bondsim_ros.ros import graph

build = graph.start_graph
sys.path.insert(0, os.getcwd())


def build_importing(*args, **kw):
    import slow_import  # noqa: F401

    return build(*args, **kw)


graph.start_graph = build_importing
from bondsim_ros.cli import main

sys.argv = ["bondsim-ros", *sys.argv[1:]]
sys.exit(main())
"""
SLOW_IMPORT = """
import os, signal, sys, time

os.kill(os.getpid(), signal.SIGNAME)
time.sleep(0.5)
print("imported", file=sys.stderr, flush=True)
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
    lines = []
    rc = None
    with guarded(proc, 120.0):
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
    with proc.stderr:
        return rc, took, "".join(lines) + proc.stderr.read()


EXPECTED = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "terminated")}


@needs_ros
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


@needs_ros
@pytest.mark.parametrize("where", ["callback", "import"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_in_the_start_up_of_up_is_not_lost(tmp_path, sig, where):
    """A signal whose exception Python drops (it came while a weakref callback or finalizer
    ran: "Exception ignored in ...") was lost, and `up` ran on to its --duration with status 0;
    it is remembered and ends start-up before the spin. One during an import is raised once
    the import is done."""
    if where == "callback":
        code, said = SIGNAL_IN_A_CALLBACK.replace("signal.SIG)", f"signal.{sig.name})"), "built"
    else:
        code, said = SIGNAL_IN_AN_IMPORT, "imported"
        (tmp_path / "slow_import.py").write_text(SLOW_IMPORT.replace("SIGNAME", sig.name))
    proc = subprocess.run([sys.executable, "-c", code, "up", "--duration", "5"], env=_env(), cwd=tmp_path,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                          preexec_fn=terminal_sigint)
    err = proc.stderr
    status, word = EXPECTED[sig]
    assert said in err, err[-3000:]
    assert (proc.returncode, err.strip().splitlines()[-1]) == (status, word), (proc.returncode, err[-3000:])
    assert "running" not in err and "Traceback" not in err and "Exception ignored" not in err, err[-3000:]


def _slow_cli(tmp_path, code: str, *args) -> subprocess.Popen:
    """``code`` (SLOW_CLI_STEP or a variant) run with ``args`` in ``tmp_path``, its own cache, stderr piped."""
    env = dict(_env(), BONDSIM_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path, preexec_fn=terminal_sigint)


@pytest.mark.parametrize("step", ["bondsim_ros.cli:_start_ahead", "bondsim_ros.cli:build_parser",
                                  "argparse:ArgumentParser.parse_known_args",
                                  "bondsim_ros.solver.native:check_cache_root",
                                  "bondsim_ros.solver._ccore:prebuild"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_before_the_command_runs_ends_it_with_its_status(tmp_path, step, sig):
    """Ctrl-C in the first tenth of a second of `simulate` (the solve started ahead, the
    parser, the cache check, the solver core's build started) printed a KeyboardInterrupt
    traceback."""
    proc = _slow_cli(tmp_path, SLOW_CLI_STEP, step, "simulate", "dc_motor", "--csv", "x.csv")
    lines = []
    with guarded(proc, 120.0):
        for line in proc.stderr:
            lines.append(line)
            if "starting" in line:
                break
        proc.send_signal(sig)
        rc = proc.wait(timeout=30)
    with proc.stderr:
        err = "".join(lines) + proc.stderr.read()
    status, word = EXPECTED[sig]
    assert (rc, err.strip().splitlines()[-1]) == (status, word), (rc, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_second_signal_while_the_command_exits_changes_nothing(tmp_path, sig):
    """After "interrupted", a second Ctrl-C during the interpreter's exit killed the process by
    SIGINT (status -2) with a traceback of the exit; it ends the exit at once, with the status."""
    after = "rc = main()\nprint('exiting', file=sys.stderr, flush=True)\ntime.sleep(1.0)\nsys.exit(rc)"
    code = SLOW_CLI_STEP.replace("sys.exit(main())", after)
    proc = _slow_cli(tmp_path, code, "bondsim_ros.cli:build_parser", "simulate", "dc_motor")
    lines = []
    with guarded(proc, 120.0):
        for line in proc.stderr:
            lines.append(line)
            if "starting" in line:
                proc.send_signal(sig)
            if "exiting" in line:
                proc.send_signal(sig)
                tic = time.monotonic()
                break
        rc = proc.wait(timeout=30)
        took = time.monotonic() - tic
    with proc.stderr:
        err = "".join(lines) + proc.stderr.read()
    status, word = EXPECTED[sig]
    assert rc == status and "Traceback" not in err and word in err, (rc, err[-3000:])
    assert took < 0.9, took  # not after the exit's second
