"""Small readers of ROS message fields, duck-typed so they work on rclpy messages and on the
ones ``rosbags`` decodes (no ROS import here)."""
from __future__ import annotations

import math
import re


def stamp_ns(stamp) -> int:
    """builtin_interfaces/Time -> integer nanoseconds (exact: stamps are compared for equality)."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def yaw(q) -> float:
    """Rotation about z of a geometry_msgs/Quaternion [rad]."""
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y ** 2 + q.z ** 2))


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def topic_name_error(name) -> str | None:
    """Why ``name`` is not a ROS 2 topic name (None if it is one): the rules of rcl's
    rcl_validate_topic_name (design.ros2.org, "Topic and Service name mapping"), without
    ``{}`` substitutions, which only a node can expand. Relative names (``heater/voltage``),
    absolute ones (``/heater/voltage``) and private ones (``~/voltage``) are names."""
    if not isinstance(name, str) or not name:
        return "a topic name must not be empty"
    body = name
    if body.startswith("~"):
        if body != "~" and not body.startswith("~/"):
            return "'~' must be followed by '/'"
        body = body[2:]
        if not body:
            return None
    elif body.startswith("/"):
        body = body[1:]
        if not body:
            return "'/' alone names no topic"
    if body.endswith("/"):
        return "a topic name must not end with '/'"
    for token in body.split("/"):
        if not token:
            return "a topic name must not contain '//'"
        if token[0].isdigit():
            return f"a name token must not start with a digit ({token!r})"
        if not _TOKEN.match(token):
            bad = next(c for c in token if not (c.isascii() and (c.isalnum() or c == "_")))
            return f"character {bad!r} is not allowed (letters, digits, '_' and '/' only)"
    return None


__all__ = ["stamp_ns", "yaw", "topic_name_error"]
