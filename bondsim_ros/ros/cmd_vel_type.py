"""Which message type to take cmd_vel as, without ROS: geometry_msgs Twist or TwistStamped (Nav2
sends Twist on Jazzy, TwistStamped on Kilted). With ``cmd_vel_type`` auto the node follows the
publishers actually present on the topic: a topic has one type per DDS participant (all nodes of
a process), so guessing would make an in-process publisher of the other type fail.
"""
from __future__ import annotations

TWIST, STAMPED = "twist", "stamped"
TYPE_NAMES = {"geometry_msgs/msg/Twist": TWIST, "geometry_msgs/msg/TwistStamped": STAMPED}


def publisher_kinds(topic_types) -> set:
    """The kinds (TWIST, STAMPED) among the publishers' type names; other types are ignored."""
    return {TYPE_NAMES[t] for t in topic_types if t in TYPE_NAMES}


def next_kind(kinds: set, current: str | None) -> str | None:
    """The kind to subscribe with now, or None to keep the subscription there is: no publisher
    yet, or one of the current kind (publishers of both kinds: only one can be received, and
    the node must not flip between them). A stamped publisher wins over a plain one."""
    if not kinds or current in kinds:
        return None
    return STAMPED if STAMPED in kinds else TWIST


def both_published(kinds: set) -> bool:
    return {TWIST, STAMPED} <= kinds
