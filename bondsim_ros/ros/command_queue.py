"""The dynamics node's commands between frames, without ROS: the newest body twist (clamped to
the twin's limits when it arrives, clamped anew when the limits change), the newest joint
trajectory, both applied at the next frame, and the cmd_vel watchdog.

Applied at a frame or on arrival, the model restarts at the same instant (its last output), so
only the newest command of a frame matters: a 1 kHz burst costs one restart per frame, not one
per message.

The watchdog counts simulated time, as ros2_control's diff_drive_controller compares its update
time (the simulated time under use_sim_time) with its last command's: a twist is in force from
the simulated instant of the frame that applies it, for ``watchdog_timeout`` simulated seconds.
Where that runs out within a frame, the frame is split there, so a twist acts for exactly that
long whatever the frame length, the real-time factor or the wall clock.
"""
from __future__ import annotations

# s: a watchdog stop closer than this to the frame's instant is made there, not by a split (a
# sub-step of a few ulps is below the solver's smallest step, 10 eps |t|)
SPLIT_TOLERANCE = 1e-6


class CommandQueue:
    def __init__(self, twin):
        self.twin = twin
        self.next_twist = None  # the newest accepted twist, applied at the next frame
        self.last_raw = None  # that twist as received, clamped anew when the limits change; None: none in force
        self.since = None  # simulated instant [s] the twist in force was applied at; None: not applied yet
        self.next_trajectory = None

    def twist(self, vx: float, vy: float, wz: float) -> tuple:
        """Take a twist command; returns it clamped to the twin's limits (CommandError, nothing
        taken, where the twin refuses it)."""
        raw = (vx, vy, wz)
        applied = self.twin.limit_twist(*raw)
        self.next_twist, self.last_raw, self.since = applied, raw, None  # its instant: the frame applying it
        return applied

    def stop(self) -> None:
        """Rest at the next frame and drop the command in force (a bumper stop)."""
        self.next_twist, self.last_raw, self.since = (0.0, 0.0, 0.0), None, None

    def clear(self) -> None:
        """Forget every command, applied or not (the twin was reset: at rest, as started)."""
        self.next_twist = self.last_raw = self.since = self.next_trajectory = None

    def limits_changed(self) -> None:
        """The command in force, clamped to the new limits from the next frame."""
        if self.last_raw is not None:
            self.next_twist = self.twin.limit_twist(*self.last_raw)

    def trajectory(self, trajectory) -> None:
        self.next_trajectory = trajectory

    def apply(self, target: float, watchdog_timeout: float | None) -> bool:
        """Give the twin what arrived since the last frame, in force from its present instant;
        with ``watchdog_timeout`` (simulated s), a twist that runs out by ``target`` (the frame's
        instant) brings the twin to rest there: the twin is stepped to that instant. True if
        the watchdog did."""
        if self.next_twist is not None:
            cmd, self.next_twist = self.next_twist, None
            self.twin.set_twist(*cmd)
            if self.last_raw is not None and self.since is None:
                self.since = self.twin.t
        if self.next_trajectory is not None:
            traj, self.next_trajectory = self.next_trajectory, None
            self.twin.set_joint_trajectory(traj)
        if watchdog_timeout is None or self.since is None:
            return False
        until = self.since + watchdog_timeout
        if until - target > SPLIT_TOLERANCE:
            return False
        # an earlier instant (the timeout just lowered) leaves the twin where it is
        self.twin.step_to(until if target - until > SPLIT_TOLERANCE else target)
        self.last_raw = self.since = None
        self.twin.set_twist(0.0, 0.0, 0.0)  # no command: come to rest
        return True
