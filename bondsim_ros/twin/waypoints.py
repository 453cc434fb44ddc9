"""A waypoint follower for the omnidirectional base: pose in, body twist out (ROS-free).

Holonomic, so position and heading are controlled independently: a proportional law toward
the current waypoint, saturated to the speed limits and slowed near the goal; the next
waypoint is taken once within ``tolerance`` of position and ``heading_tolerance`` of heading.
"""
from __future__ import annotations

import math

import numpy as np

from .protocol import body_twist


class WaypointFollower:
    def __init__(self, waypoints, max_linear=0.5, max_angular=1.5, gain=1.5, heading_gain=2.0,
                 tolerance=0.02, heading_tolerance=0.02):
        wp = np.asarray(waypoints, dtype=float)
        if wp.ndim != 2 or wp.shape[1] != 3 or len(wp) == 0:
            raise ValueError("waypoints must be rows of (x, y, phi)")
        if not np.all(np.isfinite(wp)):
            raise ValueError("waypoints must be finite")
        self.waypoints = wp
        self.index = 0
        self.max_linear, self.max_angular = max_linear, max_angular
        self.gain, self.heading_gain = gain, heading_gain
        self.tolerance, self.heading_tolerance = tolerance, heading_tolerance

    @property
    def done(self) -> bool:
        return self.index >= len(self.waypoints)

    def command(self, pose) -> tuple:
        """Body-frame (vx, vy, wz) for the current pose (x, y, phi)."""
        x, y, phi = pose
        while not self.done:
            gx, gy, gphi = self.waypoints[self.index]
            dx, dy = gx - x, gy - y
            dphi = math.atan2(math.sin(gphi - phi), math.cos(gphi - phi))
            last = self.index == len(self.waypoints) - 1
            if math.hypot(dx, dy) < self.tolerance and (abs(dphi) < self.heading_tolerance or not last):
                self.index += 1
                continue
            vx_w, vy_w = self.gain * dx, self.gain * dy
            speed = math.hypot(vx_w, vy_w)
            if speed > self.max_linear:
                vx_w, vy_w = vx_w * self.max_linear / speed, vy_w * self.max_linear / speed
            wz = max(-self.max_angular, min(self.max_angular, self.heading_gain * dphi))
            return body_twist(phi, vx_w, vy_w, wz)
        return (0.0, 0.0, 0.0)
