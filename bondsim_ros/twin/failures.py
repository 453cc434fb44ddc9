"""What a twin's host does when the model fails (a solver error, a command the model cannot take
at a frame): restart the integration from the last good state (Twin.recover); a second failure
in a row, or a recovery that fails, resets the twin to its initial state. The host keeps running
and reports ``last`` (on /diagnostics, for the dynamics node). No ROS.
"""
from __future__ import annotations

import math
import time


class SolverFailures:
    def __init__(self, monotonic=time.monotonic):
        self._monotonic = monotonic
        self.count = 0  # failures since start
        self.in_row = 0  # failures since the last good step
        self.last = None  # text of the last failure: what failed, while doing what, what was done
        self.last_wall = -math.inf  # when (monotonic s)

    def succeeded(self) -> None:
        """A step went well: the next failure restarts from the last state again."""
        self.in_row = 0

    def failed(self, twin, exc: BaseException, doing: str) -> bool:
        """``exc`` ended ``doing``: recover ``twin`` (or reset it); True if it was reset (its
        time is 0 again)."""
        self.count += 1
        self.in_row += 1
        reset = True
        try:
            if self.in_row <= 1:
                action = twin.recover()
                reset = False
            else:
                twin.reset()
                action = "reset to the initial state (the restart from the last state failed too)"
        except Exception as exc2:  # noqa: BLE001 - the twin must be left in a state that runs
            twin.reset()
            action = f"reset to the initial state (recovery failed: {type(exc2).__name__}: {exc2})"
        self.last = f"{type(exc).__name__} while {doing}: {exc}; twin {action}"
        self.last_wall = self._monotonic()
        return reset

    def age(self) -> float:
        """Seconds since the last failure (inf: none yet)."""
        return self._monotonic() - self.last_wall
