"""The dynamics node's frame clock, without ROS: simulated time against the wall clock, the
stamps that name a state's simulated instant, and the frame accounting (frames, overruns, lag,
timer periods skipped, the worst frame cost).

The node owns one and gives it the ROS time and the timer's next call where it needs them; the
clock takes ``monotonic`` (s) as an argument so that tests drive it with a clock of their own.
"""
from __future__ import annotations

import math
import time


class FrameClock:
    """Simulated time runs at ``real_time_factor`` x the wall clock from an anchor (``sim_base``
    at the wall instant ``wall_base``), held while paused. Stamps: with ``use_sim_time`` the
    simulated time itself (as /clock says), else the ROS time when that instant maps to the wall
    clock, start + t_sim / real_time_factor, fixed at each anchor (start, reset, resume, a new
    factor) and never the time of publication; they keep increasing across resets, pauses and
    changes of the factor. (With ``use_sim_time`` a reset takes them, and /clock, back to 0, as
    Gazebo's reset does.)"""

    def __init__(self, real_time_factor: float, use_sim_time: bool, ros_now_ns: int = 0, monotonic=time.monotonic):
        self.real_time_factor = float(real_time_factor)
        self.use_sim_time = bool(use_sim_time)
        self._monotonic = monotonic
        self.sim_base = 0.0
        self.wall_base = monotonic()
        self.last_stamp_ns = -1  # the newest stamp given out (publish); stamps only increase
        self.stamp_base_ns, self.stamp_sim_base = 0, 0.0
        self.set_stamp_base(ros_now_ns)
        # frame accounting
        self.frames = 0
        self.overruns = 0
        self.max_lag = 0.0  # s of wall time a frame's state was computed after its instant
        self.worst = 0.0  # s: the costliest frame since the last take_worst()
        self.skipped_frames = 0  # timer periods that never ran (count_skipped)
        self._grid0, self._slot = 0, None  # the timer's next call at the first tick [ns]; period index of the last tick

    # -- simulated time --------------------------------------------------------------------
    def sim_time_now(self) -> float:
        return self.sim_base + (self._monotonic() - self.wall_base) * self.real_time_factor

    def anchor(self, sim_t: float, ros_now_ns: int) -> None:
        """Simulated time ``sim_t`` now (start, reset, resume), stamps re-based here."""
        self.sim_base, self.wall_base = float(sim_t), self._monotonic()
        self.set_stamp_base(ros_now_ns)

    def hold(self, sim_t: float) -> None:
        """Paused at ``sim_t``: the next anchor resumes from there."""
        self.sim_base = float(sim_t)

    def set_real_time_factor(self, rtf: float, paused: bool, ros_now_ns: int, t_newest: float = -math.inf) -> None:
        """A new factor from now on. Running, the simulated time goes on from the newest state
        computed, ``t_newest``: the node computes each frame one period ahead, at the old factor,
        and anchored behind it a lower factor had the next frames step to instants the twin had
        passed (its state published again under one stamp). Stamps are re-based here, paused too:
        the old base under the new factor put the next step's stamp seconds back."""
        if not paused:
            self.sim_base, self.wall_base = max(self.sim_time_now(), float(t_newest)), self._monotonic()
        self.real_time_factor = float(rtf)
        self.set_stamp_base(ros_now_ns)

    # -- stamps ----------------------------------------------------------------------------
    def set_stamp_base(self, ros_now_ns: int) -> None:
        now = ros_now_ns if not self.use_sim_time else 0
        self.stamp_base_ns = max(int(now), self.last_stamp_ns + 1)
        self.stamp_sim_base = self.sim_base

    def stamp_ns(self, t: float) -> int:
        if self.use_sim_time:
            return int(round(t * 1e9))
        return self.stamp_base_ns + int(round((t - self.stamp_sim_base) / self.real_time_factor * 1e9))

    def sim_time_of_stamp(self, ns: int) -> float:
        if self.use_sim_time:
            return ns * 1e-9
        return self.stamp_sim_base + (ns - self.stamp_base_ns) * 1e-9 * self.real_time_factor

    # -- frame accounting ------------------------------------------------------------------
    def restart_grid(self) -> None:
        """The timer's period changed (or it paused): skipped periods count on a new grid."""
        self._slot = None

    def count_skipped(self, next_call_ns: int, period_ns: int) -> int:
        """Periods the timer never ran before this tick, ``next_call_ns`` being its next call
        (monotonic ns). When a tick comes more than a period late, rcl runs it once and skips the
        periods it missed: no frame is published for them, and none is an overrun, since the
        frames that do run are on time. Counted on the timer's own grid (its next call time,
        always a whole number of periods from the first), not from gaps between ticks, which
        jitter."""
        if self._slot is None:
            self._grid0, self._slot = next_call_ns, 0
            return 0
        slot = round((next_call_ns - self._grid0) / period_ns)
        missed, self._slot = slot - self._slot - 1, slot
        # -1: a catch-up tick in the period of the one before (rclpy's EventsExecutor runs one
        # right after a late tick), which published one of the missed frames after all
        self.skipped_frames += missed
        return missed

    def frame_done(self, took: float, lag: float, period: float) -> bool:
        """Account one computed frame that cost ``took`` s of wall time and was ``lag`` s late;
        True if it overran (took longer than ``period`` or was late)."""
        self.max_lag = max(self.max_lag, lag)
        overran = took > period or lag > 0
        if overran:
            self.overruns += 1
        self.worst = max(self.worst, took)
        self.frames += 1
        return overran

    def take_worst(self) -> float:
        """The worst frame cost since the last call (s), starting over."""
        worst, self.worst = self.worst, 0.0
        return worst
