"""Joint trajectories in simulated time, interpolated per segment as ros2_control's
joint_trajectory_controller does (its trajectory.cpp): linear when either end of a segment has
positions only, cubic on positions and velocities when both ends carry velocities, quintic when
both carry accelerations too. The points sit at their true times (start + time_from_start);
before the first point the joints go from their state when the trajectory is applied to the
first point; after the last point its positions and velocities (zero where it has none) are
held."""
from __future__ import annotations

import numpy as np

from .protocol import JointTrajectory


def _segment_coefficients(T, p0, v0, a0, p1, v1, a1) -> np.ndarray:
    """Power-series coefficients c0..c5 (rows) of q(tau), tau in [0, T], per joint (columns)."""
    c = np.zeros((6, len(p0)))
    dp = p1 - p0
    c[0] = p0
    if v0 is None or v1 is None:  # linear
        c[1] = dp / T
    elif a0 is None or a1 is None:  # cubic Hermite: positions and velocities at both ends
        c[1] = v0
        c[2] = (3 * dp - (2 * v0 + v1) * T) / T**2
        c[3] = (-2 * dp + (v0 + v1) * T) / T**3
    else:  # quintic: positions, velocities and accelerations at both ends
        c[1], c[2] = v0, 0.5 * a0
        c[3] = (20 * dp - (12 * v0 + 8 * v1) * T - (3 * a0 - a1) * T**2) / (2 * T**3)
        c[4] = (-30 * dp + (16 * v0 + 14 * v1) * T + (3 * a0 - 2 * a1) * T**2) / (2 * T**4)
        c[5] = (12 * dp - 6 * (v0 + v1) * T - (a0 - a1) * T**2) / (2 * T**5)
    return c


class TrajectorySampler:
    """q_ref(t), qd_ref(t) of one accepted trajectory, absolute simulated time: its points at
    ``start`` + their times, applied at ``now`` with the joints at ``q_now`` (and ``qd_now``,
    None where the twin reports no joint velocities: the first segment is then linear)."""

    def __init__(self, traj: JointTrajectory, start: float, now: float, q_now: dict, qd_now: dict | None = None):
        traj.check()
        self.names = names = list(traj.joint_names)
        times = [float(start) + float(t) for t in traj.times]
        pos = [np.asarray(row, dtype=float) for row in traj.positions]
        vel, acc = traj.rows("velocities"), traj.rows("accelerations")
        if now < times[0]:  # the way to the first point starts from the state at receipt
            times.insert(0, float(now))
            pos.insert(0, np.array([q_now.get(n, 0.0) for n in names]))
            vel.insert(0, None if qd_now is None else np.array([qd_now.get(n, 0.0) for n in names]))
            acc.insert(0, None)
        self.start, self.end = times[0], times[-1]
        self._times = np.array(times)
        self._coef = np.array([_segment_coefficients(times[k + 1] - times[k], pos[k], vel[k], acc[k],
                                                     pos[k + 1], vel[k + 1], acc[k + 1])
                               for k in range(len(times) - 1)]).reshape(-1, 6, len(names))
        self._last_q = pos[-1].copy()
        self._last_qd = np.zeros(len(names)) if vel[-1] is None else vel[-1].copy()

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        if t >= self.end or not len(self._coef):
            return self._last_q.copy(), self._last_qd.copy()
        # the segment holding t (the first one for an earlier t, at its start)
        k = max(0, int(np.searchsorted(self._times, t, side="right")) - 1)
        tau = max(0.0, t - self._times[k])
        c = self._coef[k]
        powers = tau ** np.arange(6)
        q = powers @ c
        qd = (np.arange(1, 6) * powers[:5]) @ c[1:]
        return q, qd
