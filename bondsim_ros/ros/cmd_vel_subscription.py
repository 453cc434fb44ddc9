"""Velocity command subscriptions, Twist or TwistStamped as ``cmd_vel_type`` says or, auto, as the
publishers present send them (cmd_vel_type.py): the dynamics node's cmd_vel, each command checked
and clamped when it arrives and queued for the next frame (CommandQueue), and bumper_stop's input.
"""
from __future__ import annotations

import math

from geometry_msgs.msg import Twist, TwistStamped
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import QoSProfile, ReliabilityPolicy

from bondsim_ros.twin.protocol import CommandError

from .cmd_vel_type import STAMPED, both_published, next_kind, publisher_kinds

# auto: how often the publishers' type is looked at. Commands of a new type are lost until the
# node has resubscribed, so this bounds that loss (one graph query, ~0.1 ms, per period)
CHECK_PERIOD_NS = 200_000_000


class TwistSubscription:
    """A velocity command subscription on ``topic``, Twist or TwistStamped as ``kind`` says (auto:
    as the publishers present send them, followed when they change); each message goes to
    ``on_message(msg, kind)``."""

    def __init__(self, node, topic: str, kind: str, on_message):
        self.node, self.topic, self.on_message = node, topic, on_message
        self.sub = None
        self.kind = None  # TWIST or STAMPED subscribed (auto: as published)
        self.timer = None  # auto: looks at the publishers' type every CHECK_PERIOD_NS
        self.pending = None  # auto: the type to subscribe at the next check, the old reader let go
        if kind == "auto":
            # on the wall clock: with use_sim_time the node's ROS clock is a /clock that stands
            # still while the twin is paused, and a publisher that appeared then was never
            # subscribed, so StepSimulation stepped without its commands
            from rclpy.clock import Clock, ClockType

            wall = Clock(clock_type=ClockType.STEADY_TIME)
            self.timer = node.create_timer(CHECK_PERIOD_NS * 1e-9, self.recheck, clock=wall)
            self.recheck()
        else:
            self._subscribe(kind)

    def _publisher_kinds(self) -> set:
        topic = self.node.resolve_topic_name(self.topic)
        return publisher_kinds(info.topic_type for info in self.node.get_publishers_info_by_topic(topic))

    def recheck(self):
        """Follow the publishers' type; with publishers of both types, keep the current one and
        say so. A switch takes two checks: the old subscription is destroyed at the first, and the
        new one made at the next, once the executor has let go of the old reader (made at once, it
        failed with RCLError "incompatible type": the old reader still held the topic's type).
        Never raises: a subscription that still cannot be made is retried at the next check."""
        log = self.node.get_logger()
        try:
            if self.pending is not None:
                self._subscribe(self.pending)
                self.pending = None
                return
            kinds = self._publisher_kinds()
            kind = next_kind(kinds, self.kind)
            if kind is None:
                if both_published(kinds):
                    log.warning(f"{self.topic} has Twist and TwistStamped publishers; only {self.kind} is received "
                                f"(one type per topic and process)", throttle_duration_sec=10.0)
                return
            if self.sub is None:
                self._subscribe(kind)
                return
            log.info(f"{self.topic} publisher uses {kind}: resubscribing")
            self.node.destroy_subscription(self.sub)
            self.sub, self.kind, self.pending = None, None, kind
        except Exception as exc:  # noqa: BLE001 - e.g. the old reader not yet released
            log.warning(f"{self.topic}: cannot subscribe yet ({exc}); retrying", throttle_duration_sec=5.0)

    def _subscribe(self, kind: str):
        """No QoS-event handlers: each holds the reader alive until the executor lets go of it,
        and a reader still alive keeps the topic's old type (CI once saw a switch refused for
        10 s)."""
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        events = SubscriptionEventCallbacks(use_default_callbacks=False)
        on_message = self.on_message
        self.sub = self.node.create_subscription(TwistStamped if kind == STAMPED else Twist, self.topic,
                                                 lambda m: on_message(m, kind), qos, event_callbacks=events)
        self.kind = kind


class CmdVelSubscription(TwistSubscription):
    """cmd_vel for one DynamicsNode (``node``) into ``queue``, through the interface profile in
    force (``interface``: disabled, held after a bumper contact, or the profile's limits)."""

    def __init__(self, node, topic: str, kind: str, queue, interface=None):
        self.queue, self.interface = queue, interface
        super().__init__(node, topic, kind, lambda m, k: self.on_twist(m.twist if k == STAMPED else m))

    def on_twist(self, twist):
        """Check and clamp the command now; apply it at the next frame (CommandQueue)."""
        log = self.node.get_logger()
        vals = (twist.linear.x, twist.linear.y, twist.angular.z)
        # the components a planar base does not use are ignored, but a message carrying garbage
        # in them (NaN, angular.x = 2000) is not trusted for the others either
        unused, huge = (twist.linear.z, twist.angular.x, twist.angular.y), self.queue.twin.limits.huge
        if not all(math.isfinite(v) and abs(v) <= huge for v in unused):
            log.warning(f"rejected cmd_vel: linear.z, angular.x, angular.y {unused} not finite or absurdly large "
                        f"(> {huge:g})", throttle_duration_sec=1.0)
            return
        if self.interface is not None:
            vals = self.interface.command(*vals)
            if vals is None:
                return
        try:
            applied = self.queue.twist(*vals)
        except CommandError as exc:
            log.warning(f"rejected cmd_vel: {exc}", throttle_duration_sec=1.0)
            return
        if any(abs(a - v) > 1e-12 for a, v in zip(applied, vals)):
            log.warning(f"cmd_vel {vals} clamped to {applied}", throttle_duration_sec=1.0)
