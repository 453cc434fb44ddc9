"""The twin bridge end to end against a stand-in for the real Robotino's driver that follows
robocup-logistics/ros2-robotino's conventions (read from its rto_node sources and
rto_description URDF): default namespace empty, so /cmd_vel (geometry_msgs/Twist), /odom
(child base_link) and /joint_states; joint_states names in the order wheel2_joint,
wheel0_joint, wheel1_joint; velocity = motor rpm / 16 * (2 * 3.142) / 60; wheel0..2 at 60,
180 and -60 degrees, turning about -1 0 0. The bridge runs with the shipped
config/robotino_bridge.yaml; the twin as in robotino_twin.launch.py."""
import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from geometry_msgs.msg import Twist, Vector3, Vector3Stamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from bondsim_ros.paths import share_file  # noqa: E402
from bondsim_ros.ros._env import choose_discovery_range  # noqa: E402
from bondsim_ros.ros.graph import load_ros_params, make_executor  # noqa: E402

GEAR = 16.0
WHEEL_ANGLES = {"wheel0_joint": math.pi / 3, "wheel1_joint": math.pi, "wheel2_joint": -math.pi / 3}
CHASSIS_RADIUS = 0.125  # config/robotino.yaml: radius_to_wheel
WHEEL_RADIUS = 0.04  # config/robotino.yaml: wheel radius
COMMAND = (0.3, 0.1, 0.4)  # vx, vy [m/s], wz [rad/s]


class StandInDriver:
    """An ideal Robotino (commands followed at once) publishing as rto_node does."""

    def __init__(self, node, wheel_radius):
        self.node, self.r = node, wheel_radius
        self.cmd = (0.0, 0.0, 0.0)
        self.pose = [0.0, 0.0, 0.0]
        self.last = None
        node.create_subscription(Twist, "/cmd_vel", self._on_cmd, 10)
        self.pub_js = node.create_publisher(JointState, "/joint_states", 10)
        self.pub_odom = node.create_publisher(Odometry, "/odom", 10)
        node.create_timer(0.02, self._tick)

    def _on_cmd(self, msg):
        self.cmd = (msg.linear.x, msg.linear.y, msg.angular.z)

    def _tick(self):
        now = self.node.get_clock().now()
        if self.last is not None:
            dt = (now - self.last).nanoseconds * 1e-9
            vx, vy, wz = self.cmd
            x, y, phi = self.pose
            self.pose = [x + dt * (math.cos(phi) * vx - math.sin(phi) * vy),
                         y + dt * (math.sin(phi) * vx + math.cos(phi) * vy), phi + dt * wz]
        self.last = now
        vx, vy, wz = self.cmd
        # wheel speed about the driver's axis -1 0 0 (the firmware's inverse kinematics), as motor rpm
        rpm = {n: GEAR * (-math.sin(a) * vx + math.cos(a) * vy + CHASSIS_RADIUS * wz) / self.r * 60 / (2 * math.pi)
               for n, a in WHEEL_ANGLES.items()}
        js = JointState()
        js.header.stamp = now.to_msg()
        js.name = ["wheel2_joint", "wheel0_joint", "wheel1_joint"]
        js.position = [0.0, 0.0, 0.0]
        js.velocity = [rpm[n] / 16 * (2 * 3.142) / 60 for n in js.name]  # rto_node's MotorArrayROS
        self.pub_js.publish(js)
        odom = Odometry()
        odom.header.stamp = js.header.stamp
        odom.header.frame_id, odom.child_frame_id = "odom", "base_link"
        odom.pose.pose.position.x, odom.pose.pose.position.y = self.pose[0], self.pose[1]
        odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = math.sin(self.pose[2] / 2), math.cos(self.pose[2] / 2)
        self.pub_odom.publish(odom)


def _run(wheel_radius, seconds=5.0):
    from bondsim_ros.ros.dynamics_node import DynamicsNode
    from bondsim_ros.ros.twin_bridge import TwinBridge

    bridge_params = load_ros_params(share_file("config", "robotino_bridge.yaml"))["twin_bridge"]
    dyn_params = load_ros_params(share_file("config", "dynamics.yaml"))["dynamics_node"]
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    twin = DynamicsNode(overrides={**dyn_params, "reference": "cmd_vel", "cmd_vel_type": "twist",
                                   "frame_prefix": "twin/", "probes": [""]}, namespace="twin", context=ctx)
    bridge = TwinBridge(overrides=bridge_params, context=ctx)
    robot = rclpy.create_node("rto_node_stand_in", context=ctx)
    driver = StandInDriver(robot, wheel_radius)
    operator = rclpy.create_node("operator", context=ctx)
    cmd = operator.create_publisher(Twist, "/cmd_vel", 10)
    wheel_dev, pose_dev = [], []
    operator.create_subscription(JointState, "/twin_bridge/wheel_deviation", wheel_dev.append, 100)
    operator.create_subscription(Vector3Stamped, "/twin_bridge/pose_deviation", pose_dev.append, 100)
    executor = make_executor(ctx)
    nodes = (twin, bridge, robot, operator)
    for n in nodes:
        executor.add_node(n)
    try:
        twin.restart()
        end = time.monotonic() + seconds
        next_cmd = 0.0
        while time.monotonic() < end:
            if time.monotonic() >= next_cmd:
                cmd.publish(Twist(linear=Vector3(x=COMMAND[0], y=COMMAND[1]), angular=Vector3(z=COMMAND[2])))
                next_cmd = time.monotonic() + 0.05
            executor.spin_once(timeout_sec=0.005)
        twin_speeds = {n: v for n, v in zip(twin.twin.joint_names, twin.twin.state().velocity)}
    finally:
        executor.shutdown()
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown(context=ctx)
    assert math.hypot(*driver.pose[:2]) > 0.5, "the stand-in driver never got the operator's commands"
    assert bridge.forwarded > 50
    t = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in wheel_dev])
    late = t >= t[-1] - 1.0  # the last second: transients over (the twin's wheels settle in ~0.3 s)
    return np.array([m.velocity for m in wheel_dev])[late], twin_speeds


def test_bridge_matches_a_robot_following_ros2_robotino_conventions():
    dev, twin_speeds = _run(WHEEL_RADIUS)
    speeds = np.abs([twin_speeds[f"wheel{i}_axle"] for i in (1, 2, 3)])
    assert speeds.min() > 1.0, f"twin wheels barely turn: {speeds}"
    # near zero: the driver's 3.142 for pi (1.3e-4) and the twin's one-hop command delay
    assert np.all(np.abs(dev) < 0.02 * speeds.max()), f"wheel deviation {np.abs(dev).max(axis=0)} rad/s"


def test_bridge_shows_a_robot_whose_wheels_are_10_percent_larger():
    dev, twin_speeds = _run(1.1 * WHEEL_RADIUS)
    speeds = np.array([twin_speeds[f"wheel{i}_axle"] for i in (1, 2, 3)])
    # the larger wheel turns 1/1.1 as fast for the same motion: 9 % of each wheel's speed
    expected = speeds * (1 - 1 / 1.1)
    assert np.allclose(np.median(dev, axis=0), expected, rtol=0.2, atol=0.02), (np.median(dev, axis=0), expected)


@pytest.mark.parametrize("flag,bridge,env,expected", [
    (None, True, {}, "SUBNET"), (None, False, {}, "LOCALHOST"),
    (None, True, {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}, "LOCALHOST"), ("subnet", False, {}, "SUBNET")])
def test_discovery_range_for_up(flag, bridge, env, expected):
    assert choose_discovery_range(flag, bridge, env) == expected


def test_bad_discovery_range_is_a_usage_error():
    with pytest.raises(ValueError, match="discovery range 'lan'"):
        choose_discovery_range("lan", True, {})


def test_up_with_a_bad_discovery_range_exits_2(capsys):
    from bondsim_ros.cli import main

    assert main(["up", "--bridge", "--discovery", "lan", "--duration", "1"]) == 2
    assert "--discovery: discovery range 'lan'" in capsys.readouterr().err


def test_up_bridge_for_a_robot_without_a_driver_bridge_exits_2(capsys):
    """The bridge file is the robot's own (Robot.bridge): a robot with none is refused by name,
    not bridged with another robot's driver topics."""
    from bondsim_ros.cli import main

    assert main(["up", "--model", "arm3dof", "--bridge", "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert "--bridge: arm3dof has no bridge to a real robot's driver" in err and "robotino" in err


def test_robotino_declares_its_driver_bridge():
    from bondsim_ros.robots import load_robot
    from bondsim_ros.ros.graph import load_ros_params

    bridge = load_robot("robotino").bridge
    assert bridge is not None and bridge.name == "robotino_bridge.yaml"
    assert "robot_cmd_vel" in load_ros_params(bridge)["twin_bridge"]
