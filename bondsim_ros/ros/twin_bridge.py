"""twin_bridge: run the twin beside a real Robotino and publish how far they drift apart.

Listens to the real driver's topics (names in config/robotino_bridge.yaml), forwards every
velocity command to the twin's cmd_vel as the driver applies it (its per-component velocity
limits, nothing in its bumper hold), and compares the robot's odometry and wheel speeds with
the twin's at the same stamps. The defaults follow robocup-logistics/ros2-robotino (read from
its rto_node sources and rto_description URDF): launch argument `namespace` empty by default,
so /cmd_vel (geometry_msgs/Twist), /odom, /joint_states, /bumper; joint_states names wheel2_joint,
wheel0_joint, wheel1_joint with velocity = motor rpm / 16 * 2 pi / 60 [rad/s]; its wheel0..2
sit where the twin's wheel1..3 do (60, 180, -60 degrees) but turn about axis -1 0 0 where the
twin's axles turn about 1 0 0, hence robot_wheel_sign -1.

The stamps come from two computers' clocks (the robot's and this one's): the comparison holds
only as far as the clocks agree (docs/ros.md).

    ~/pose_deviation   geometry_msgs/Vector3Stamped   (dx, dy, dphi) twin - robot, robot's odom frame;
                                                      dphi in (-pi, pi]
    ~/wheel_deviation  sensor_msgs/JointState          velocity = twin - robot wheel speed [rad/s]
"""
from __future__ import annotations

import bisect
import collections
import math

from geometry_msgs.msg import Twist, TwistStamped, Vector3Stamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from bondsim_ros.msgutil import stamp_ns, yaw
from bondsim_ros.planar import wrap_angle
from bondsim_ros.twin.interface_profile import BumperHold, VelocityLimits

from ._env import Param, declare_parameters, overrides_to_parameters, run_node

LIMITS = ("max_linear_vel", "min_linear_vel", "max_angular_vel", "min_angular_vel")
# s a robot sample's stamp may lead this computer's clock: beyond any synchronised pair's offset
# (chrony keeps them within milliseconds), far below a clock that was never set
MAX_LEAD = 2.0


def _driver():
    """The default robot's driver interface (robots/<robot>/driver_profile.py): its wheel joints,
    their signs and its velocity limits are this node's defaults, written once there."""
    from bondsim_ros.robots import DEFAULT_ROBOT, load_robot

    return load_robot(DEFAULT_ROBOT).interfaces["driver"]


_DRIVER = _driver()
# the driver's wheel joints in the order of the twin's wheels, and one sign for all of them
_WHEELS = sorted(_DRIVER["joints"], key=lambda j: j["twin"])
_SIGN = _WHEELS[0]["sign"]
if any(j["sign"] != _SIGN for j in _WHEELS):
    raise RuntimeError("twin_bridge takes one sign for all wheels; the driver profile gives several")
_LIMIT = {k: v["default"] for k, v in _DRIVER["parameters"].items()}

# The node's parameters (see dynamics_node.PARAMS; config/robotino_bridge.yaml lists them all):
# the command shaping's are live (the driver's set_velocity_limits changes its own at run time,
# which the bridge cannot see: `ros2 param set` them alike), the others apply at start.
PARAMS = {
    "robot_cmd_vel": Param("/cmd_vel", "the real driver's velocity command topic (ros2-robotino: <namespace>/cmd_vel)"),
    "robot_cmd_vel_stamped": Param(False, "true if the driver's cmd_vel is TwistStamped"),
    "robot_odom": Param("/odom", "the real driver's odometry"),
    "robot_joint_states": Param("/joint_states", "the real driver's wheel joint states"),
    "robot_wheel_joints": Param([j["name"] for j in _WHEELS],
                                "the driver's wheel joint names, in the order of the twin's wheel1..3"),
    "robot_wheel_sign": Param(_SIGN, "multiply the driver's wheel speeds by this to match the twin's axle convention "
                              "(ros2-robotino's wheels turn about -1 0 0, the twin's about 1 0 0)",
                              low=-1000.0, high=1000.0, nonzero=True),
    "twin_cmd_vel": Param("/twin/cmd_vel", "the twin's velocity command topic (its dynamics_node in cmd_vel mode)"),
    "twin_odom": Param("/twin/odom", "the twin's odometry"),
    "twin_joint_states": Param("/twin/joint_states", "the twin's joint states"),
    "twin_wheel_joints": Param([j["twin"] for j in _WHEELS], "the twin's wheel joint names"),
    # the driver's command shaping (OmniDriveROS::cmdVelCallback), RTONode's defaults: the twin
    # gets each command as the robot's motors do
    "max_linear_vel": Param(_LIMIT["max_linear_vel"],
                            "the driver's max_linear_vel [m/s]: larger |vx|, |vy| clipped to it",
                            low=0.0, high=1e6, live=True),
    "min_linear_vel": Param(_LIMIT["min_linear_vel"],
                            "the driver's min_linear_vel [m/s]: smaller non-zero |vx|, |vy| raised to it (0: none)",
                            low=0.0, high=1e6, live=True),
    "max_angular_vel": Param(_LIMIT["max_angular_vel"],
                             "the driver's max_angular_vel [rad/s]: larger |wz| clipped to it",
                             low=0.0, high=1e6, live=True),
    "min_angular_vel": Param(_LIMIT["min_angular_vel"],
                             "the driver's min_angular_vel [rad/s]: smaller non-zero |wz| raised to it (0: none)",
                             low=0.0, high=1e6, live=True),
    "robot_bumper": Param("/bumper", "the real driver's bumper contact (std_msgs/Bool; ros2-robotino: "
                                     "<namespace>/bumper)"),
    "bumper_timeout": Param(2.0, "the driver's bumper_timeout [s] (its launch's 2.0): after a contact the twin is "
                                 "stopped and commands are not forwarded for this long; 0: no bumper hold",
                            low=0.0, high=3600.0, live=True),
}


class Unwrap:
    """A continuous angle from wrapped samples, each step taken as the shorter turn: a heading
    crossing +-pi goes on past it instead of jumping by 2 pi."""

    def __init__(self):
        self.last = None

    def __call__(self, a: float) -> float:
        if self.last is not None:
            a = self.last + wrap_angle(a - self.last)
        self.last = a
        return a


class TimedSeries:
    """Samples by stamp with linear interpolation (angles unwrapped by the caller)."""

    def __init__(self, maxlen=2000):
        self.t, self.v, self.maxlen = [], [], maxlen

    def add(self, ns, values):
        if self.t and ns <= self.t[-1]:
            return
        self.t.append(ns)
        self.v.append(values)
        if len(self.t) > self.maxlen:
            del self.t[: len(self.t) - self.maxlen]
            del self.v[: len(self.v) - self.maxlen]

    def at(self, ns):
        if not self.t or ns < self.t[0] or ns > self.t[-1]:
            return None
        k = bisect.bisect_left(self.t, ns)
        if self.t[k] == ns:
            return self.v[k]
        t0, t1 = self.t[k - 1], self.t[k]
        w = (ns - t0) / (t1 - t0)
        return tuple(a + w * (b - a) for a, b in zip(self.v[k - 1], self.v[k]))


class TwinBridge(Node):
    def __init__(self, name="twin_bridge", overrides: dict | None = None, **kwargs):
        super().__init__(name, parameter_overrides=overrides_to_parameters(PARAMS, overrides), **kwargs)
        p = declare_parameters(self, PARAMS, on_change=self._on_parameters)
        self.p = p
        self.hold = BumperHold()
        self.twin_cmd = self.create_publisher(Twist, p["twin_cmd_vel"], 10)
        if p["robot_cmd_vel_stamped"]:
            self.create_subscription(TwistStamped, p["robot_cmd_vel"], lambda m: self._forward(m.twist), 10)
        else:
            self.create_subscription(Twist, p["robot_cmd_vel"], self._forward, 10)
        self.create_subscription(Odometry, p["robot_odom"], self._on_robot_odom, 50)
        self.create_subscription(Odometry, p["twin_odom"], self._on_twin_odom, 50)
        self.create_subscription(JointState, p["robot_joint_states"], self._on_robot_joints, 50)
        self.create_subscription(JointState, p["twin_joint_states"], self._on_twin_joints, 50)
        self.create_subscription(Bool, p["robot_bumper"], self._on_bumper, 10)
        self.pub_pose = self.create_publisher(Vector3Stamped, "~/pose_deviation", 10)
        self.pub_wheels = self.create_publisher(JointState, "~/wheel_deviation", 10)
        self.twin_pose = TimedSeries()
        self.twin_wheels = TimedSeries()
        self.origin = None  # robot pose when the bridge started: the twin starts at (0, 0, 0)
        self.pending_pose = collections.deque()  # robot samples waiting for twin data at their stamp
        self.pending_wheels = collections.deque()
        # headings unwrapped: the twin's are interpolated between samples
        self.twin_heading, self.robot_heading = Unwrap(), Unwrap()
        self.forwarded = 0
        self.skipped = 0  # robot or twin samples that were not finite or stamped far ahead

    def _on_parameters(self, changes: dict):
        self.p.update(changes)

    def _skip(self, what: str) -> None:
        """A sample left out of the comparison, counted and said (at most every 5 s)."""
        self.skipped += 1
        self.get_logger().warning(f"{what}, skipped ({self.skipped} so far)", throttle_duration_sec=5.0)

    def _forward(self, twist: Twist):
        """The command as the driver applies it: none in its bumper hold, the rest through its
        limits (vx, vy, wz: what it passes on to the motors)."""
        if self.hold.holding():
            self.get_logger().info("velocity command not forwarded: the robot's bumper hold",
                                   throttle_duration_sec=2.0)
            return
        limits = VelocityLimits(*(self.p[k] for k in LIMITS))  # live parameters: as they are now
        out = Twist()
        out.linear.x, out.linear.y, out.angular.z = limits.apply(twist.linear.x, twist.linear.y, twist.angular.z)
        self.twin_cmd.publish(out)
        self.forwarded += 1

    def _on_bumper(self, msg: Bool):
        if msg.data and self.hold.contact(self.p["bumper_timeout"]):
            self.twin_cmd.publish(Twist())  # the robot's bumper stops its motors
            self.get_logger().warning(f"robot's bumper contact: twin stopped, commands not forwarded for "
                                      f"{self.p['bumper_timeout']:g} s")

    def _pose(self, msg: Odometry, side: str):
        """(x, y, yaw) of ``msg``, or None if not finite: one NaN would stay in the robot's
        origin or the unwrapped heading for good."""
        p = msg.pose.pose
        pose = (p.position.x, p.position.y, yaw(p.orientation))
        if all(math.isfinite(v) for v in pose):
            return pose
        self._skip(f"{side} odometry not finite: {pose}")
        return None

    def _on_twin_odom(self, msg: Odometry):
        pose = self._pose(msg, "twin")
        if pose is None:
            return
        self.twin_pose.add(stamp_ns(msg.header.stamp), (pose[0], pose[1], self.twin_heading(pose[2])))
        self._flush()

    def _on_twin_joints(self, msg: JointState):
        idx = {n: k for k, n in enumerate(msg.name)}
        if all(n in idx for n in self.p["twin_wheel_joints"]) and len(msg.velocity) == len(msg.name):
            self.twin_wheels.add(stamp_ns(msg.header.stamp),
                                 tuple(msg.velocity[idx[n]] for n in self.p["twin_wheel_joints"]))
            self._flush()

    def _on_robot_odom(self, msg: Odometry):
        pose = self._pose(msg, "robot")
        if pose is None:
            return
        x, y, phi = pose[0], pose[1], self.robot_heading(pose[2])
        if self.origin is None:
            self.origin = (x, y, phi)
        # robot pose relative to where it was when the twin started
        ox, oy, ophi = self.origin
        c, s = math.cos(ophi), math.sin(ophi)
        rel = (c * (x - ox) + s * (y - oy), -s * (x - ox) + c * (y - oy), phi - ophi)
        self._queue(self.pending_pose, (msg.header, rel))

    def _on_robot_joints(self, msg: JointState):
        idx = {n: k for k, n in enumerate(msg.name)}
        names = self.p["robot_wheel_joints"]
        if not all(n in idx for n in names) or len(msg.velocity) != len(msg.name):
            return
        sign = self.p["robot_wheel_sign"]
        speeds = tuple(sign * msg.velocity[idx[n]] for n in names)
        if not all(math.isfinite(v) for v in speeds):
            self._skip(f"robot wheel speeds not finite: {speeds}")
            return
        self._queue(self.pending_wheels, (msg.header, speeds))

    def _queue(self, queue, item):
        # a sample stamped well ahead of this computer's clock is compared with nothing the twin
        # will have for that long, and it holds up every sample queued after it
        lead = (stamp_ns(item[0].stamp) - self.get_clock().now().nanoseconds) * 1e-9
        if lead > MAX_LEAD:
            self._skip(f"robot sample stamped {lead:.3g} s ahead of this computer's clock (synchronise the two "
                       f"computers' clocks)")
            return
        queue.append(item)
        while len(queue) > 200:  # the twin is not running: do not grow without bound
            queue.popleft()
        self._flush()

    def _flush(self):
        """Compare every robot sample the twin's data now covers (the two publish on their own
        clocks, so a robot sample usually arrives before the twin sample that follows it)."""
        for queue, series, emit in ((self.pending_pose, self.twin_pose, self._emit_pose),
                                    (self.pending_wheels, self.twin_wheels, self._emit_wheels)):
            while queue and series.t and stamp_ns(queue[0][0].stamp) <= series.t[-1]:
                header, robot = queue.popleft()
                twin = series.at(stamp_ns(header.stamp))
                if twin is not None:  # None: robot sample older than the twin's history
                    emit(header, twin, robot)

    def _emit_pose(self, header, twin, robot):
        out = Vector3Stamped()
        out.header = header
        out.vector.x, out.vector.y = twin[0] - robot[0], twin[1] - robot[1]
        out.vector.z = wrap_angle(twin[2] - robot[2])
        self.pub_pose.publish(out)

    def _emit_wheels(self, header, twin, robot):
        out = JointState()
        out.header = header
        out.name = list(self.p["twin_wheel_joints"])
        out.velocity = [tw - rw for tw, rw in zip(twin, robot)]
        self.pub_wheels.publish(out)


def main(args=None):
    run_node(TwinBridge, args)


if __name__ == "__main__":
    main()
