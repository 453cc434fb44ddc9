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

    def __init__(self, node, wheel_radius, namespace=""):
        self.node, self.r = node, wheel_radius
        self.cmd = (0.0, 0.0, 0.0)
        self.pose = [0.0, 0.0, 0.0]
        self.last = None
        node.create_subscription(Twist, f"{namespace}/cmd_vel", self._on_cmd, 10)
        self.pub_js = node.create_publisher(JointState, f"{namespace}/joint_states", 10)
        self.pub_odom = node.create_publisher(Odometry, f"{namespace}/odom", 10)
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
        odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = (math.sin(self.pose[2] / 2),
                                                                      math.cos(self.pose[2] / 2))
        self.pub_odom.publish(odom)


def _run(wheel_radius, seconds=5.0):
    from bondsim_ros.ros.dynamics_node import DynamicsNode
    from bondsim_ros.ros.twin_bridge import TwinBridge

    bridge_params = load_ros_params(share_file("config", "robotino_bridge.yaml")).node("twin_bridge")
    dyn_params = load_ros_params(share_file("config", "dynamics.yaml")).node("dynamics_node")
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
    assert "robot_cmd_vel" in load_ros_params(bridge).node("twin_bridge")


def _odom(t, x, y, phi):
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), int(round((t - int(t)) * 1e9))
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(phi / 2), math.cos(phi / 2)
    return msg


class BridgeIO:
    """A TwinBridge on topics of its own (``tag``) with a listener beside it: what the bridge
    publishes, received through ROS."""

    def __init__(self, context, tag, **params):
        from rclpy.qos import QoSProfile

        from bondsim_ros.ros.twin_bridge import TwinBridge

        topics = {k: f"/{tag}/{k}" for k in ("robot_cmd_vel", "robot_odom", "robot_joint_states", "robot_bumper",
                                             "twin_cmd_vel", "twin_odom", "twin_joint_states")}
        self.bridge = TwinBridge(name=f"{tag}_bridge", overrides={**topics, **params}, context=context)
        self.node = rclpy.create_node(f"{tag}_listener", context=context)
        self.pose_dev, self.forwarded = [], []
        self.node.create_subscription(Vector3Stamped, f"/{tag}_bridge/pose_deviation", self.pose_dev.append,
                                      QoSProfile(depth=1000))
        self.node.create_subscription(Twist, topics["twin_cmd_vel"], self.forwarded.append, 100)
        self.cmd = self.node.create_publisher(Twist, topics["robot_cmd_vel"], 10)
        from std_msgs.msg import Bool

        self.bumper = self.node.create_publisher(Bool, topics["robot_bumper"], 10)
        self.Bool = Bool
        self.executor = make_executor(context)
        for n in (self.bridge, self.node):
            self.executor.add_node(n)

    def spin_until(self, predicate, timeout=10.0):
        end = time.monotonic() + timeout
        while not predicate() and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)
        return predicate()

    def close(self):
        self.executor.shutdown()
        self.bridge.destroy_node()
        self.node.destroy_node()


@pytest.fixture
def bridge_io(context, request):
    io = BridgeIO(context, request.node.name.split("[")[0].removeprefix("test_")[:30])
    yield io
    io.close()


def test_heading_deviation_across_the_wrap_at_pi(bridge_io):
    """Twin and robot turn alike at 1 rad/s; the twin's heading crosses +pi (wrapped to -pi in its
    odometry) between two of its samples, where robot samples fall: the twin is interpolated
    there on the unwrapped heading, and the deviation stays 0, reported in (-pi, pi]."""
    b, w, k_wrap = bridge_io.bridge, 1.0, None
    b._on_twin_odom(_odom(100.0, 0.0, 0.0, 0.0))
    b._on_robot_odom(_odom(100.0, 0.0, 0.0, 1.0))  # the robot's origin: heading 1 in its odom
    for k in range(1, 130):  # the twin at 30 Hz, the robot half a period later
        t = k / 30
        b._on_twin_odom(_odom(100.0 + t, 0.0, 0.0, w * t))
        b._on_robot_odom(_odom(100.0 + t + 1 / 60, 0.0, 0.0, 1.0 + w * (t + 1 / 60)))
        if k_wrap is None and w * t > math.pi:
            k_wrap = k
    assert bridge_io.spin_until(lambda: len(bridge_io.pose_dev) >= 128)
    dev = {round((m.header.stamp.sec - 100 + 1e-9 * m.header.stamp.nanosec) * 60): m.vector.z
           for m in bridge_io.pose_dev}
    across = 2 * k_wrap - 1  # the robot sample between the twin's last before pi and first after
    assert across in dev and abs(dev[across]) < 1e-6, dev.get(across)
    assert max(abs(v) for v in dev.values()) < 1e-6, max(dev.items(), key=lambda kv: abs(kv[1]))


def test_a_heading_deviation_of_half_a_turn_is_reported_as_plus_pi(bridge_io):
    b = bridge_io.bridge
    b._on_robot_odom(_odom(100.0, 0.0, 0.0, 0.0))
    b._on_twin_odom(_odom(100.0, 0.0, 0.0, 0.0))
    b._on_robot_odom(_odom(100.1, 0.0, 0.0, math.pi))  # the robot turned half a turn, the twin not
    b._on_twin_odom(_odom(100.1, 0.0, 0.0, 0.0))
    assert bridge_io.spin_until(lambda: len(bridge_io.pose_dev) >= 2)
    assert bridge_io.pose_dev[-1].vector.z == math.pi


def test_a_robot_odometry_sample_that_is_not_finite_is_skipped(bridge_io):
    """A NaN in the robot's first odometry would become its origin and every pose deviation NaN."""
    b = bridge_io.bridge
    b._on_robot_odom(_odom(99.9, float("nan"), 0.0, 0.0))
    for k in range(20):
        t = 100.0 + k / 30
        b._on_twin_odom(_odom(t, 0.1 * k, 0.0, 0.0))
        b._on_robot_odom(_odom(t, 2.0 + 0.1 * k, 1.0, 0.0))  # its origin: (2, 1)
    b._on_twin_odom(_odom(101.0, 0.0, float("inf"), 0.0))  # the twin's too: it would stay interpolated
    assert bridge_io.spin_until(lambda: len(bridge_io.pose_dev) >= 20)
    assert all(math.isfinite(v) and abs(v) < 1e-9 for m in bridge_io.pose_dev
               for v in (m.vector.x, m.vector.y, m.vector.z)), bridge_io.pose_dev[-1]
    assert b.skipped == 2


def test_a_robot_sample_stamped_far_ahead_holds_up_nothing(bridge_io):
    """One robot sample stamped 2**31-1 s (a clock never set) stayed at the head of the queue, and
    no later sample was compared until 200 more had pushed it out; a NaN wheel speed went into
    the wheel deviations."""
    b = bridge_io.bridge
    future = _odom(0.0, 0.0, 0.0, 0.0)
    future.header.stamp.sec = 2**31 - 1
    b._on_robot_odom(_odom(99.9, 0.0, 0.0, 0.0))  # the robot's origin
    b._on_robot_odom(future)
    for k in range(10):
        t = 100.0 + k / 30
        b._on_twin_odom(_odom(t, 0.1 * k, 0.0, 0.0))
        b._on_robot_odom(_odom(t, 0.1 * k, 0.0, 0.0))
    assert bridge_io.spin_until(lambda: len(bridge_io.pose_dev) >= 9)
    assert b.skipped == 1
    joints = JointState(name=["wheel0_joint", "wheel1_joint", "wheel2_joint"], velocity=[1.0, float("nan"), 0.0])
    joints.header.stamp.sec = 100
    b._on_robot_joints(joints)
    assert b.skipped == 2 and not b.pending_wheels


def _twist(vx, vy, wz):
    return Twist(linear=Vector3(x=vx, y=vy), angular=Vector3(z=wz))


def _forward(io, *commands):
    """``commands`` sent as the robot's cmd_vel; what the bridge forwarded to the twin meanwhile."""
    io.forwarded.clear()
    for c in commands:
        io.cmd.publish(_twist(*c))
    io.spin_until(lambda: len(io.forwarded) >= len(commands), timeout=5.0)
    io.spin_until(lambda: False, timeout=0.2)  # and nothing more
    return [(m.linear.x, m.linear.y, m.angular.z) for m in io.forwarded]


def test_commands_reach_the_twin_as_the_driver_applies_them(bridge_io):
    """OmniDriveROS: per component, above max clipped to it, else a non-zero value below min
    raised to it (RTONode's defaults 3.0, 0.02, 3.0, 0.07): a planner's small yaw rate turns the
    robot at 0.07 rad/s, and so the twin."""
    from rclpy.parameter import Parameter

    io = bridge_io
    assert io.spin_until(lambda: io.node.count_subscribers(io.cmd.topic_name) > 0)
    assert _forward(io, (0.01, -0.005, 0.03), (4.0, 0.0, -5.0), (0.0, 0.5, 0.0)) == [
        (0.02, -0.02, 0.07), (3.0, 0.0, -3.0), (0.0, 0.5, 0.0)]
    # the driver's set_velocity_limits, mirrored on the bridge's parameters; min above max as the
    # driver's else-if has it
    assert all(r.successful for r in io.bridge.set_parameters([Parameter("max_linear_vel", value=0.1),
                                                               Parameter("min_linear_vel", value=0.5)]))
    assert _forward(io, (0.05, 0.2, 0.0)) == [(0.5, 0.1, 0.0)]


def test_the_robot_s_bumper_hold_stops_the_twin_and_holds_its_commands(context):
    io = BridgeIO(context, "bumper_hold", bumper_timeout=0.5)
    try:
        assert io.spin_until(lambda: io.node.count_subscribers(io.cmd.topic_name) > 0
                             and io.node.count_subscribers(io.bumper.topic_name) > 0)
        assert _forward(io, (0.3, 0.0, 0.0)) == [(0.3, 0.0, 0.0)]
        io.forwarded.clear()
        io.bumper.publish(io.Bool(data=True))
        assert io.spin_until(lambda: io.forwarded)
        assert [(m.linear.x, m.angular.z) for m in io.forwarded] == [(0.0, 0.0)]  # stopped at once
        assert _forward(io, (0.3, 0.0, 0.0)) == []  # held
        time.sleep(0.5)
        assert _forward(io, (0.3, 0.0, 0.0)) == [(0.3, 0.0, 0.0)]  # the hold is over
    finally:
        io.close()


def test_the_bridge_s_command_limits_default_to_the_driver_s():
    """The bridge's defaults and config/robotino_bridge.yaml: RTONode's defaults, as the Robotino's
    driver profile records them, and its launch's bumper_timeout."""
    from bondsim_ros.robots import load_robot
    from bondsim_ros.ros.twin_bridge import PARAMS
    from bondsim_ros.twin.interface_profile import parse_profile

    profile = parse_profile("driver", load_robot("robotino").interfaces["driver"])
    driver = {p.name: p.default for p in profile.parameters}
    driver["bumper_timeout"] = profile.launch_defaults()["bumper_timeout"]
    shipped = load_ros_params(share_file("config", "robotino_bridge.yaml")).node("twin_bridge")
    for name in ("max_linear_vel", "min_linear_vel", "max_angular_vel", "min_angular_vel", "bumper_timeout"):
        assert PARAMS[name].default == shipped[name] == driver[name], name


TEAM_BRIDGE = """\
twin_bridge:
  ros__parameters:
    robot_cmd_vel: /robotinobase1/cmd_vel
    robot_odom: /robotinobase1/odom
    robot_joint_states: /robotinobase1/joint_states
    robot_bumper: /robotinobase1/bumper
"""


def test_up_bridge_runs_the_twin_beside_a_driver_in_its_namespace(tmp_path):
    """`bondsim-ros up --bridge --params team.yaml` beside a driver started with
    namespace:=robotinobase1: the file's twin_bridge section gives the bridge the driver's topics;
    the twin runs as twin.launch.py runs it (/twin/dynamics_node in cmd_vel mode, none of the
    driver's names: no /odom), the bridge in the root namespace forwards to /twin/cmd_vel and
    compares with /twin/odom."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from procs import interrupt
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python

    root = Path(__file__).resolve().parents[1]
    params = tmp_path / "team.yaml"
    params.write_text(TEAM_BRIDGE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root)] + [p for p in os.environ.get(
        "PYTHONPATH", "").split(os.pathsep) if p]))
    err = tmp_path / "stderr.txt"
    with open(err, "w") as ferr:
        proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "up", "--bridge", "--params", str(params),
                                 "--duration", "240"], env=env, stdout=subprocess.DEVNULL, stderr=ferr, cwd=tmp_path)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    robot = rclpy.create_node("rto_node_stand_in", context=ctx)
    driver = StandInDriver(robot, WHEEL_RADIUS, namespace="/robotinobase1")
    operator = rclpy.create_node("operator", context=ctx)
    cmd = operator.create_publisher(Twist, "/robotinobase1/cmd_vel", 10)
    pose_dev, twin_odom = [], []
    operator.create_subscription(Vector3Stamped, "/twin_bridge/pose_deviation", pose_dev.append, 100)
    operator.create_subscription(Odometry, "/twin/odom", twin_odom.append, 100)
    executor = make_executor(ctx)
    for n in (robot, operator):
        executor.add_node(n)

    def spin(seconds, command=None):
        end, next_cmd = time.monotonic() + seconds, 0.0
        while time.monotonic() < end and proc.poll() is None:
            if command is not None and time.monotonic() >= next_cmd:
                cmd.publish(Twist(linear=Vector3(x=command[0], y=command[1]), angular=Vector3(z=command[2])))
                next_cmd = time.monotonic() + 0.05
            executor.spin_once(timeout_sec=0.01)

    try:
        end = time.monotonic() + 90
        while not twin_odom and time.monotonic() < end and proc.poll() is None:
            spin(0.2)
        assert twin_odom, f"no /twin/odom from `bondsim-ros up --bridge`:\n{err.read_text()[-3000:]}"
        spin(3.0, COMMAND)
        nodes = operator.get_node_names_and_namespaces()
        assert ("dynamics_node", "/twin") in nodes and ("twin_bridge", "/") in nodes, nodes
        assert operator.count_publishers("/odom") == 0 and operator.count_publishers("/joint_states") == 0
        assert operator.count_publishers("/twin/cmd_vel") == 1  # the bridge, forwarding
        client = operator.create_client(GetParameters, "/twin_bridge/get_parameters")
        assert client.wait_for_service(timeout_sec=10.0)
        future = client.call_async(GetParameters.Request(names=["robot_cmd_vel", "robot_odom", "twin_odom",
                                                                "min_angular_vel"]))
        end = time.monotonic() + 10
        while not future.done() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.01)
        assert [parameter_value_to_python(v) for v in future.result().values] == [
            "/robotinobase1/cmd_vel", "/robotinobase1/odom", "/twin/odom", 0.07]
        # the twin took the driver's commands: it moved as the robot, and the two were compared
        assert math.hypot(*driver.pose[:2]) > 0.5 and twin_odom[-1].pose.pose.position.x > 0.5
        assert len(pose_dev) > 30, f"{len(pose_dev)} pose deviations:\n{err.read_text()[-3000:]}"
        late = pose_dev[-10:]
        assert all(math.hypot(m.vector.x, m.vector.y) < 0.2 and abs(m.vector.z) < 0.2 for m in late), late[-1]
    finally:
        executor.shutdown()
        for n in (robot, operator):
            n.destroy_node()
        rclpy.try_shutdown(context=ctx)
        interrupt(proc, 20)


@pytest.mark.parametrize("args, expected", [
    (["--interface", "driver"], "--bridge runs the twin beside the real robot's driver, --interface driver in its "
                                "place: not both"),
    (["--reference", "rose"], "--bridge forwards the robot's velocity commands to the twin: --reference must be "
                              "cmd_vel, not rose"),
    (["--namespace", "/"], "--namespace '/' would put it on the driver's own topics"),
    (["--namespace", "robot1", "--params", "{bridge_file}"],
     "twin_bridge twin_cmd_vel /twin/cmd_vel, but the twin `up --bridge` starts (namespace /robot1) serves it on "
     "/robot1/cmd_vel: leave twin_cmd_vel out"),
])
def test_up_bridge_refuses_what_cannot_work(capsys, args, expected):
    """The twin under the driver's interface names its wheels as the driver does, which the
    bridge's twin side does not expect; a twin on a built-in reference ignores the commands the
    bridge forwards; a twin topic of --params that the twin does not serve would leave the
    comparison empty. Each is refused, naming why, before any node starts."""
    from bondsim_ros.cli import main

    bridge_file = str(share_file("config", "robotino_bridge.yaml"))
    assert main(["up", "--bridge", *(a.format(bridge_file=bridge_file) for a in args), "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err
