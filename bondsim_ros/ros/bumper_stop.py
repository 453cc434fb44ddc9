"""bumper_stop: the Robotino's bumper stop in front of the twin's velocity input.

On the real robot a bumper contact stops the motors (controld3's emergency bumper, when enabled)
and robocup-logistics/ros2-robotino's rto_node then ignores cmd_vel for ``bumper_timeout`` seconds
(OmniDriveROS::bumperCallback; 2.0 s in its robotino_driver.launch.py). This node does the same
for the twin from outside it: it forwards ``cmd_vel`` (what Nav2 or a teleop publishes) to
``cmd_vel_out`` (dynamics_node's ``cmd_vel_topic``), and when ``bumper`` turns true it sends a zero
command at once and replaces every command of the next ``bumper_timeout`` seconds by a zero one,
with the driver's timing (twin.interface_profile.BumperHold): contacts in the hold and for one
more timeout after it are ignored, so the robot can back away; a contact message after that, the
bumper still or again pressed, stops it again.
"""
from __future__ import annotations

from geometry_msgs.msg import Twist, TwistStamped
from rclpy.node import Node
from std_msgs.msg import Bool

from bondsim_ros.twin.interface_profile import BumperHold

from ._env import Param, declare_parameters, overrides_to_parameters, run_node
from .cmd_vel_type import STAMPED, next_kind, publisher_kinds

PARAMS = {
    "cmd_vel_in": Param("cmd_vel", "velocity commands to pass on (Nav2's, a teleop's)"),
    "cmd_vel_out": Param("cmd_vel_bumper", "where they go: the twin's cmd_vel_topic"),
    "cmd_vel_type": Param("auto", "auto (the publishers' type; stamped where both are) | twist | stamped",
                          choices=("auto", "twist", "stamped")),
    "bumper_topic": Param("bumper", "std_msgs/Bool contact (sensor_node's, rto_node's topic)"),
    "bumper_timeout": Param(2.0, "seconds commands are held at zero after a contact (rto_node's bumper_timeout)",
                            low=0.0, high=3600.0),
}


class BumperStop(Node):
    def __init__(self, name="bumper_stop", overrides: dict | None = None, **kwargs):
        super().__init__(name, parameter_overrides=overrides_to_parameters(PARAMS, overrides), **kwargs)
        p = declare_parameters(self, PARAMS)
        self.p = p
        if p["cmd_vel_type"] not in ("auto", "twist", "stamped"):
            raise ValueError(f"invalid bumper_stop parameters: cmd_vel_type: auto | twist | stamped, "
                             f"got {p['cmd_vel_type']!r}")
        if not p["bumper_timeout"] >= 0:
            raise ValueError(f"invalid bumper_stop parameters: bumper_timeout: must be >= 0, got {p['bumper_timeout']}")
        self.kind = None
        self.pub = None
        self.hold = BumperHold()
        self.stops = 0
        self.create_subscription(Bool, p["bumper_topic"], self._on_bumper, 10)
        if p["cmd_vel_type"] == "auto":
            self._auto_timer = self.create_timer(0.2, self._find_type)
        else:
            self._connect(p["cmd_vel_type"])

    def _find_type(self):
        """Subscribe with the type of the publishers seen on cmd_vel_in (one type per topic and
        process: guessing would break an in-process publisher of the other type), as the
        dynamics node picks it (cmd_vel_type.next_kind)."""
        topic = self.resolve_topic_name(self.p["cmd_vel_in"])
        kind = next_kind(publisher_kinds(info.topic_type for info in self.get_publishers_info_by_topic(topic)), None)
        if kind is not None:
            self._connect(kind)
            self._auto_timer.cancel()

    def _connect(self, kind):
        msg_type = TwistStamped if kind == STAMPED else Twist
        self.pub = self.create_publisher(msg_type, self.p["cmd_vel_out"], 10)
        self.create_subscription(msg_type, self.p["cmd_vel_in"], self._on_cmd, 10)
        self.kind = kind
        self.get_logger().info(f"{self.p['cmd_vel_in']} -> {self.p['cmd_vel_out']} ({kind}), held at zero for "
                               f"{self.p['bumper_timeout']} s after a bumper contact")

    def holding(self) -> bool:
        return self.hold.holding()

    def _zero(self, like=None):
        if self.kind == STAMPED:
            out = TwistStamped()
            if like is not None:
                out.header = like.header
            else:
                out.header.stamp = self.get_clock().now().to_msg()
            return out
        return Twist()

    def _on_bumper(self, msg: Bool):
        if msg.data and self.hold.contact(self.p["bumper_timeout"]):
            self.stops += 1
            if self.pub is not None:
                self.pub.publish(self._zero())
            self.get_logger().warning(f"bumper contact: stopped, commands held at zero for {self.p['bumper_timeout']} s")

    def _on_cmd(self, msg):
        self.pub.publish(self._zero(msg) if self.holding() else msg)


def main(args=None):
    run_node(BumperStop, args)


if __name__ == "__main__":
    main()
