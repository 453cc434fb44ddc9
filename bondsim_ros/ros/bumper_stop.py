"""bumper_stop: the Robotino's bumper stop in front of the twin's velocity input.

On the real robot a bumper contact stops the motors (controld3's emergency bumper, when enabled)
and robocup-logistics/ros2-robotino's rto_node then ignores cmd_vel for ``bumper_timeout`` seconds
(OmniDriveROS::bumperCallback; 2.0 s in its robotino_driver.launch.py). This node does the same
for the twin from outside it: it forwards ``cmd_vel`` (what Nav2 or a teleop publishes, Twist or
TwistStamped) to ``cmd_vel_out`` (dynamics_node's ``cmd_vel_topic``) as one type, and when
``bumper`` turns true it sends a zero command at once and replaces every command of the next
``bumper_timeout`` seconds by a zero one, with the driver's timing (twin.interface_profile.BumperHold):
contacts in the hold and for one more timeout after it are ignored, so the robot can back away; a
contact message after that, the bumper still or again pressed, stops it again.
"""
from __future__ import annotations

from geometry_msgs.msg import Twist, TwistStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from bondsim_ros.twin.interface_profile import BumperHold

from ._env import Param, declare_parameters, overrides_to_parameters, run_node
from .cmd_vel_subscription import TwistSubscription
from .cmd_vel_type import STAMPED, TWIST

PARAMS = {
    "cmd_vel_in": Param("cmd_vel", "velocity commands to pass on (Nav2's, a teleop's)"),
    "cmd_vel_out": Param("cmd_vel_bumper", "where they go: the twin's cmd_vel_topic"),
    "cmd_vel_type": Param("auto", "cmd_vel_in's type: auto (the publishers', followed when it changes; stamped "
                                  "where both are) | twist | stamped", choices=("auto", "twist", "stamped")),
    "cmd_vel_out_type": Param("stamped", "cmd_vel_out's type, whatever comes in: twist | stamped (a Twist "
                                         "stamped on arrival)", choices=("twist", "stamped")),
    "bumper_topic": Param("bumper", "std_msgs/Bool contact (sensor_node's, rto_node's topic)"),
    "bumper_timeout": Param(2.0, "seconds commands are held at zero after a contact (rto_node's bumper_timeout)",
                            low=0.0, high=3600.0),
}


class BumperStop(Node):
    def __init__(self, name="bumper_stop", overrides: dict | None = None, **kwargs):
        super().__init__(name, parameter_overrides=overrides_to_parameters(PARAMS, overrides), **kwargs)
        p = declare_parameters(self, PARAMS)
        self.p = p
        for key, kinds in (("cmd_vel_type", ("auto", TWIST, STAMPED)), ("cmd_vel_out_type", (TWIST, STAMPED))):
            if p[key] not in kinds:
                raise ValueError(f"invalid bumper_stop parameters: {key}: {' | '.join(kinds)}, got {p[key]!r}")
        if not p["bumper_timeout"] >= 0:
            raise ValueError(f"invalid bumper_stop parameters: bumper_timeout: must be >= 0, got {p['bumper_timeout']}")
        self.hold = BumperHold()
        self.stops = 0
        self.create_subscription(Bool, p["bumper_topic"], self._on_bumper, 10)
        # One output type from the start, whatever the input's: the twin listening in this process
        # cannot follow a change of type on its topic (one type per topic and process), and it is
        # subscribed before the first command arrives, so that command is not lost to discovery
        self.kind = p["cmd_vel_out_type"]
        try:
            self.pub = self.create_publisher(TwistStamped if self.kind == STAMPED else Twist, p["cmd_vel_out"],
                                             QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        except RuntimeError:  # RCLError "incompatible type": a node of this process has the topic as the other type
            self.destroy_node()
            raise ValueError(f"invalid bumper_stop parameters: cmd_vel_out_type: {self.kind}, but this process "
                             f"already has {p['cmd_vel_out']} as the other type (one type per topic and process: "
                             f"give the twin's cmd_vel_type the same)") from None
        self.cmd_vel = TwistSubscription(self, p["cmd_vel_in"], p["cmd_vel_type"], self._on_cmd)
        self.get_logger().info(f"{p['cmd_vel_in']} ({p['cmd_vel_type']}) -> {p['cmd_vel_out']} ({self.kind}), held "
                               f"at zero for {p['bumper_timeout']} s after a bumper contact")

    def holding(self) -> bool:
        return self.hold.holding()

    def _out(self, twist: Twist, header=None):
        """``twist`` as cmd_vel_out's type; stamped: ``header``, or now where the input had none."""
        if self.kind != STAMPED:
            return twist
        out = TwistStamped(twist=twist)
        if header is not None:
            out.header = header
        else:
            out.header.stamp = self.get_clock().now().to_msg()
        return out

    def _on_bumper(self, msg: Bool):
        if msg.data and self.hold.contact(self.p["bumper_timeout"]):
            self.stops += 1
            self.pub.publish(self._out(Twist()))
            self.get_logger().warning(
                f"bumper contact: stopped, commands held at zero for {self.p['bumper_timeout']} s")

    def _on_cmd(self, msg, kind: str):
        twist, header = (msg.twist, msg.header) if kind == STAMPED else (msg, None)
        self.pub.publish(self._out(Twist() if self.holding() else twist, header))


def main(args=None):
    run_node(BumperStop, args)


if __name__ == "__main__":
    main()
