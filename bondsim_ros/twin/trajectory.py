"""Joint trajectories in simulated time: cubic Hermite on positions and velocities between the
points (the interpolation ros2_control's joint_trajectory_controller uses when points carry
velocities), the last point held afterwards, the current position held before the first."""
from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicHermiteSpline

from .protocol import CommandError, JointTrajectory


class TrajectorySampler:
    """q_ref(t), qd_ref(t) of one accepted trajectory, absolute simulated time."""

    def __init__(self, traj: JointTrajectory, start: float, q_now: dict):
        names = list(traj.joint_names)
        times = np.asarray(traj.times, dtype=float)
        pos = np.asarray(traj.positions, dtype=float).reshape(len(times), len(names))
        vel = (np.zeros_like(pos) if traj.velocities is None
               else np.asarray(traj.velocities, dtype=float).reshape(pos.shape))
        if not np.all(np.isfinite(times)) or not np.all(np.isfinite(pos)) or not np.all(np.isfinite(vel)):
            raise CommandError("trajectory has non-finite times, positions or velocities")
        if np.any(np.diff(times) <= 0) or times[0] < 0:
            raise CommandError("trajectory point times must be >= 0 and strictly increasing")
        # the first segment starts from where the joints are now, at rest (time 0 of the trajectory)
        if times[0] > 0:
            times = np.concatenate([[0.0], times])
            pos = np.vstack([[q_now.get(n, 0.0) for n in names], pos])
            vel = np.vstack([np.zeros(len(names)), vel])
        self.names, self.start, self.end = names, float(start), float(start + times[-1])
        self._last_q, self._last_qd = pos[-1].copy(), np.zeros(len(names))
        self._spline = CubicHermiteSpline(times, pos, vel, axis=0) if len(times) > 1 else None

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        if self._spline is None or t >= self.end:
            return self._last_q.copy(), self._last_qd.copy()
        s = max(0.0, t - self.start)
        return self._spline(s), self._spline(s, 1)
