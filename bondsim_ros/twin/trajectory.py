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


def _segment_coefficients(times, pos, vel, acc) -> np.ndarray:
    """Power-series coefficients c0..c5 of q(tau), tau in [0, T] of each segment: (segments, 6,
    joints), all segments at once (one at a time, 60,000 points held the frame loop for a second).
    ``pos`` one row per point; ``vel``, ``acc`` one row or None per point."""
    P = np.asarray(pos, dtype=float)
    m, n = P.shape
    T = np.diff(np.asarray(times, dtype=float))[:, None]
    has_v = np.array([v is not None for v in vel])
    has_a = np.array([a is not None for a in acc])
    V = np.array([np.zeros(n) if v is None else v for v in vel], dtype=float).reshape(m, n)
    A = np.array([np.zeros(n) if a is None else a for a in acc], dtype=float).reshape(m, n)
    p0, p1, v0, v1, a0, a1 = P[:-1], P[1:], V[:-1], V[1:], A[:-1], A[1:]
    dp = p1 - p0
    c = np.zeros((m - 1, 6, n))
    c[:, 0] = p0
    linear = ~(has_v[:-1] & has_v[1:])  # either end without velocities
    quintic = ~linear & has_a[:-1] & has_a[1:]  # both ends with accelerations too
    cubic = ~linear & ~quintic  # Hermite: positions and velocities at both ends
    with np.errstate(all="ignore"):  # (each kind's formulas evaluated on every segment, kept where it applies)
        c[linear, 1] = (dp / T)[linear]
        c[cubic, 1] = v0[cubic]
        c[cubic, 2] = ((3 * dp - (2 * v0 + v1) * T) / T**2)[cubic]
        c[cubic, 3] = ((-2 * dp + (v0 + v1) * T) / T**3)[cubic]
        c[quintic, 1], c[quintic, 2] = v0[quintic], (0.5 * a0)[quintic]
        c[quintic, 3] = ((20 * dp - (12 * v0 + 8 * v1) * T - (3 * a0 - a1) * T**2) / (2 * T**3))[quintic]
        c[quintic, 4] = ((-30 * dp + (16 * v0 + 14 * v1) * T + (3 * a0 - 2 * a1) * T**2) / (2 * T**4))[quintic]
        c[quintic, 5] = ((12 * dp - 6 * (v0 + v1) * T - (a0 - a1) * T**2) / (2 * T**5))[quintic]
    return c


class TrajectorySampler:
    """q_ref(t), qd_ref(t) of one accepted trajectory, absolute simulated time: its points at
    ``start`` + their times, applied at ``now`` with the joints at ``q_now`` (and ``qd_now``,
    None where the twin reports no joint velocities: then 0, as the start acceleration always is,
    where the first point gives velocities or accelerations)."""

    def __init__(self, traj: JointTrajectory, start: float, now: float, q_now: dict, qd_now: dict | None = None):
        traj.check()
        self.names = names = list(traj.joint_names)
        times = [float(start) + float(t) for t in traj.times]
        pos = [np.asarray(row, dtype=float) for row in traj.positions]
        vel, acc = traj.rows("velocities"), traj.rows("accelerations")
        if now < times[0]:  # the way to the first point starts from the state at receipt
            times.insert(0, float(now))
            pos.insert(0, np.array([q_now.get(n, 0.0) for n in names]))
            # as joint_trajectory_controller: a start velocity or acceleration not measured is 0 where the
            # first point gives one, so that segment is cubic or quintic like the point's own
            v0 = None if qd_now is None and vel[0] is None else np.array([(qd_now or {}).get(n, 0.0) for n in names])
            vel.insert(0, v0)
            acc.insert(0, None if acc[0] is None else np.zeros(len(names)))
        self.start, self.end = times[0], times[-1]
        self._times = np.array(times)
        self._coef = _segment_coefficients(times, pos, vel, acc)
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
