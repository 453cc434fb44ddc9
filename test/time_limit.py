"""A wall-clock bound for a block of test code: a hang (a parser loop, an exact evaluation of
10**10**10) fails the test instead of stalling the suite. SIGALRM: main thread, POSIX."""
from __future__ import annotations

import signal
from contextlib import contextmanager


@contextmanager
def time_bound(seconds: int, error: BaseException | None = None):
    """Raise ``error`` (default: TimeoutError naming the bound) if the block runs ``seconds``."""
    def fire(signum, frame):
        raise error if error is not None else TimeoutError(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
