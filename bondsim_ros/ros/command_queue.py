"""The dynamics node's commands between frames, without ROS: the newest body twist (clamped to
the twin's limits when it arrives, clamped anew when the limits change), the newest joint
trajectory, both applied at the next frame, and the cmd_vel watchdog.

Applied at a frame or on arrival, the model restarts at the same instant (its last output), so
only the newest command of a frame matters: a 1 kHz burst costs one restart per frame, not one
per message.
"""
from __future__ import annotations

import time


class CommandQueue:
    def __init__(self, twin, monotonic=time.monotonic):
        self.twin = twin
        self._monotonic = monotonic
        self.next_twist = None  # the newest accepted twist, applied at the next frame
        self.last_raw = None  # that twist as received, clamped anew when the limits change
        self.last_wall = None  # when it arrived (monotonic s); None: no twist command in force
        self.next_trajectory = None

    def twist(self, vx: float, vy: float, wz: float) -> tuple:
        """Take a twist command; returns it clamped to the twin's limits (CommandError, nothing
        taken, where the twin refuses it)."""
        raw = (vx, vy, wz)
        applied = self.twin.limit_twist(*raw)
        self.next_twist, self.last_raw, self.last_wall = applied, raw, self._monotonic()
        return applied

    def stop(self) -> None:
        """Rest at the next frame and drop the command in force (a bumper stop)."""
        self.next_twist, self.last_raw, self.last_wall = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), None

    def limits_changed(self) -> None:
        """The command in force, clamped to the new limits from the next frame."""
        if self.last_raw is not None and self.last_wall is not None:
            self.next_twist = self.twin.limit_twist(*self.last_raw)

    def trajectory(self, trajectory) -> None:
        self.next_trajectory = trajectory

    def apply(self, watchdog_timeout: float | None) -> bool:
        """Give the twin what arrived since the last frame; with ``watchdog_timeout`` (s), a
        twist command older than that brings the twin to rest. True if the watchdog did."""
        if self.next_twist is not None:
            cmd, self.next_twist = self.next_twist, None
            self.twin.set_twist(*cmd)
        if self.next_trajectory is not None:
            traj, self.next_trajectory = self.next_trajectory, None
            self.twin.set_joint_trajectory(traj)
        if watchdog_timeout is not None and self.last_wall is not None:
            if self._monotonic() - self.last_wall > watchdog_timeout:
                self.last_wall = None
                self.twin.set_twist(0.0, 0.0, 0.0)  # no command: come to rest
                return True
        return False
