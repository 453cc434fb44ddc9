"""The worker processes of a command under test (Linux /proc): wait for them to start, and what
is left of them after the command ended, for tests that check no worker outlives a run; the
Ctrl-C a terminal would deliver to that command; and a bound on how long a test waits for it."""
import contextlib
import signal
import subprocess
import threading
import time
from pathlib import Path


def terminal_sigint() -> None:
    """``preexec_fn`` of a command that a test stops as Ctrl-C in a terminal would: SIGINT at its
    default, so Python raises KeyboardInterrupt. A test run started in the background of a
    non-interactive shell (``pytest &`` in a script) has SIGINT ignored, and its children would
    inherit that and never see the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def guarded(proc: subprocess.Popen, limit: float = 180.0):
    """The steps of a test that waits on ``proc`` (reads its output, signals it, waits for its
    exit): ``proc`` is killed after ``limit`` seconds, so a command that hangs fails the test
    instead of the run, and is ended (killed if still running) once the steps are done or failed."""
    guard = threading.Timer(limit, proc.kill)
    guard.start()
    try:
        yield proc
    finally:
        guard.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def interrupt(proc: subprocess.Popen, timeout: float) -> None:
    """Stop ``proc`` as Ctrl-C does, and kill it if it has not ended within ``timeout`` seconds."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def started_workers(pid: int, count: int = 2, timeout: float = 60.0) -> list[int]:
    """The children of ``pid`` once there are ``count`` (asserts they came within ``timeout``)."""
    deadline = time.monotonic() + timeout
    while len(children(pid)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = children(pid)
    assert len(workers) >= count, "the worker processes did not start"
    return workers


def pool_workers(pid: int, count: int = 2, timeout: float = 60.0) -> list[int]:
    """The process pool's workers among the children of ``pid`` (not its resource tracker) once
    there are ``count`` (asserts they came within ``timeout``)."""
    def spawned() -> list[int]:
        found = []
        for child in children(pid):
            try:
                if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(child)
            except OSError:
                pass
        return found

    deadline = time.monotonic() + timeout
    while len(spawned()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = spawned()
    assert len(workers) >= count, "the worker processes did not start"
    return workers


def left_over(workers: list[int], timeout: float = 10.0) -> list[bytes]:
    """The command lines of ``workers`` still running after ``timeout`` (a pool's resource tracker
    ends only once it reads its pipe's end)."""
    deadline = time.monotonic() + timeout
    while [w for w in workers if Path(f"/proc/{w}").exists()] and time.monotonic() < deadline:
        time.sleep(0.05)
    return [Path(f"/proc/{w}/cmdline").read_bytes() for w in workers if Path(f"/proc/{w}").exists()]
