"""Small readers of ROS message fields, duck-typed so they work on rclpy messages and on the
ones ``rosbags`` decodes (no ROS import here)."""
from __future__ import annotations

import math


def stamp_ns(stamp) -> int:
    """builtin_interfaces/Time -> integer nanoseconds (exact: stamps are compared for equality)."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def yaw(q) -> float:
    """Rotation about z of a geometry_msgs/Quaternion [rad]."""
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y ** 2 + q.z ** 2))


__all__ = ["stamp_ns", "yaw"]
