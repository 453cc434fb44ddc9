"""The twin as a drop-in for robocup-logistics/ros2-robotino's driver: `bondsim-ros up --interface
driver --namespace robotinobase1` in its own process, and a stand-in of a team's stack in this
one that uses exactly the driver's names.

Every name below is taken from the driver's sources (commit dc2883a2dbc6231b5364f3ab0800133ab8b762f3),
not from this package: rto_node/src/rto_node.cpp (node robotino_node), OmniDriveROS.cpp
(cmd_vel: geometry_msgs/Twist; services cmd_vel_enable: rto_msgs/srv/SetOmniDriveEnabled,
set_velocity_limits: rto_msgs/srv/SetVelLimits), MotorArrayROS.cpp (joint_states named wheel2_joint,
wheel0_joint, wheel1_joint; motor_readings), OdometryROS.cpp (odom in tf_prefix + "odom" with child
tf_prefix + "base_link", the same transform on /tf; reset_odometry: rto_msgs/srv/ResetOdometry),
launch/robotino_driver.launch.py (namespace robotinobase1 -> tf_prefix robotinobase1/), and
rto_description's robotino_description.urdf (wheel0..2_joint at 60, 180, -60 degrees, axis -1 0 0).
"""
import contextlib
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from procs import interrupt

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
rto_srv = pytest.importorskip("rto_msgs.srv", reason="rto_msgs missing: tools/setup.sh generates it")
from geometry_msgs.msg import Twist  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rto_msgs.msg import MotorReadings  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Bool  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NS = "robotinobase1"
# a domain of its own, away from the test run's (conftest.py; one per pytest -n worker): the
# module's driver process keeps publishing /tf while the other tests here run their own graphs
_RUN_DOMAIN = os.environ.get("ROS_DOMAIN_ID", "").strip()
DOMAIN = 1 + ((int(_RUN_DOMAIN) if _RUN_DOMAIN.isdigit() else os.getpid()) + 50) % 101
WHEEL_RADIUS, WHEEL_DISTANCE = 0.04, 0.125  # the twin's (config/robotino.yaml), for expected wheel speeds
COS30 = math.cos(math.radians(30))

TEAM_PARAMS = f"""\
/{NS}/robotino_node:
  ros__parameters:
    hostname: 172.26.1.1:12080
    bumper_timeout: 2.0
    motor_timeout: 0.0
    tf_prefix: imu_side/
    publish_odom_tf: false
/{NS}/robotino_odometry_node:
  ros__parameters:
    hostname: 172.26.1.1:12080
    tf_prefix: {NS}/
    publish_odom_tf: true
"""


class TeamStack:
    """What a team's nodes do with the driver: relative names in the robot's namespace."""

    def __init__(self, namespace=NS):
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=DOMAIN)
        self.node = rclpy.create_node("team_stack", namespace=namespace, context=self.context)
        self.cmd = self.node.create_publisher(Twist, "cmd_vel", 10)
        self.enable = self.node.create_client(rto_srv.SetOmniDriveEnabled, "cmd_vel_enable")
        self.limits = self.node.create_client(rto_srv.SetVelLimits, "set_velocity_limits")
        self.reset = self.node.create_client(rto_srv.ResetOdometry, "reset_odometry")
        self.bumper = self.node.create_publisher(Bool, "bumper", 10)
        self.odom, self.joints, self.tf, self.motors = [], [], [], []
        self.node.create_subscription(MotorReadings, "motor_readings", self.motors.append, 50)
        self.node.create_subscription(Odometry, "odom", self.odom.append, 50)
        self.node.create_subscription(JointState, "joint_states", self.joints.append, 50)
        self.node.create_subscription(TFMessage, "/tf", self.tf.append, 100)
        from rclpy.executors import SingleThreadedExecutor

        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def spin(self, seconds, command=None):
        """Spin; with ``command`` (vx, vy, wz) publish it at 10 Hz as a teleop or Nav2 does."""
        end, next_cmd = time.monotonic() + seconds, 0.0
        while time.monotonic() < end:
            if command is not None and time.monotonic() >= next_cmd:
                msg = Twist()
                msg.linear.x, msg.linear.y, msg.angular.z = command
                self.cmd.publish(msg)
                next_cmd = time.monotonic() + 0.1
            self.executor.spin_once(timeout_sec=0.01)

    def call(self, client, request, timeout=10.0):
        assert client.wait_for_service(timeout_sec=timeout), f"{client.srv_name} not offered"
        future = client.call_async(request)
        end = time.monotonic() + timeout
        while not future.done() and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)
        assert future.done(), f"{client.srv_name}: no answer"
        return future.result()

    def set_enabled(self, on: bool):
        return self.call(self.enable, rto_srv.SetOmniDriveEnabled.Request(enable=on))

    def set_limits(self, max_lin, min_lin, max_ang, min_ang):
        return self.call(self.limits, rto_srv.SetVelLimits.Request(max_linear_vel=max_lin, min_linear_vel=min_lin,
                                                                   max_angular_vel=max_ang, min_angular_vel=min_ang))

    def parameters(self, *names):
        """robotino_node's parameters, as `ros2 param get` reads them (None: not declared)."""
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python

        client = self.node.create_client(GetParameters, "robotino_node/get_parameters")
        try:
            values = self.call(client, GetParameters.Request(names=list(names))).values
            return [parameter_value_to_python(v) for v in values]
        finally:
            self.node.destroy_client(client)

    def reset_odometry(self, x=0.0, y=0.0, phi=0.0):
        return self.call(self.reset, rto_srv.ResetOdometry.Request(x=x, y=y, phi=phi))

    def at_rest(self):
        """Stop commanding and wait until the base stands (the twin's cmd_vel watchdog)."""
        self.spin(1.5)
        self.odom.clear()
        self.spin(0.3)
        tw = self.odom[-1].twist.twist
        assert abs(tw.linear.x) < 1e-3 and abs(tw.linear.y) < 1e-3 and abs(tw.angular.z) < 1e-3

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


@contextlib.contextmanager
def driver_up(tmp, namespace, *args):
    """`bondsim-ros up --interface driver --namespace NAMESPACE ARGS` in its own process and a
    team's stack beside it; yields (team, process, its stderr file) once odom flows."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    err = tmp / "stderr.txt"
    with open(err, "w") as ferr:
        proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "up", "--interface", "driver",
                                 "--namespace", namespace, *args, "--duration", "240"],
                                env=env, stdout=subprocess.DEVNULL, stderr=ferr, cwd=tmp)
    team = TeamStack(namespace)
    try:
        end = time.monotonic() + 60
        while not team.odom and time.monotonic() < end and proc.poll() is None:
            team.spin(0.2)
        assert team.odom, f"no {namespace}/odom from `bondsim-ros up --interface driver`:\n{err.read_text()[-3000:]}"
        yield team, proc, err
    finally:
        team.close()
        interrupt(proc, 15)


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("driver")
    params = tmp / "team_params.yaml"
    params.write_text(TEAM_PARAMS)
    with driver_up(tmp, NS, "--params", str(params)) as running:
        yield running


def _transform(team, parent, child):
    for msg in reversed(team.tf):
        for t in msg.transforms:
            if t.header.frame_id == parent and t.child_frame_id == child:
                return t
    return None


def test_the_driver_s_node_topics_services_and_frames(driver):
    team, proc, err = driver
    team.spin(1.0)
    node = team.node
    assert (("robotino_node", f"/{NS}") in node.get_node_names_and_namespaces()), node.get_node_names_and_namespaces()
    services = dict(node.get_service_names_and_types())
    assert services.get(f"/{NS}/set_velocity_limits") == ["rto_msgs/srv/SetVelLimits"]
    assert services.get(f"/{NS}/cmd_vel_enable") == ["rto_msgs/srv/SetOmniDriveEnabled"]
    assert services.get(f"/{NS}/reset_odometry") == ["rto_msgs/srv/ResetOdometry"]
    subs = [i.topic_type for i in node.get_subscriptions_info_by_topic(f"/{NS}/cmd_vel")]
    assert subs == ["geometry_msgs/msg/Twist"], subs
    topics = dict(node.get_topic_names_and_types())
    assert topics.get(f"/{NS}/motor_readings") == ["rto_msgs/msg/MotorReadings"]

    odom = team.odom[-1]
    assert (odom.header.frame_id, odom.child_frame_id) == (f"{NS}/odom", f"{NS}/base_link")
    assert team.joints[-1].name == ["wheel2_joint", "wheel0_joint", "wheel1_joint"]
    # publish_odom_tf true (the team's file, the odometry node's section: robotino_node's
    # tf_prefix and publish_odom_tf do not touch the odometry, RTOOdometryNode.cpp:20-30)
    tf = _transform(team, f"{NS}/odom", f"{NS}/base_link")
    assert tf is not None, "no robotinobase1/odom -> robotinobase1/base_link on /tf"
    assert "hostname: no effect in the twin" in err.read_text()  # the team's file is taken, not refused
    assert team.parameters("hostname", "motor_timeout") == ["172.26.1.1:12080", 0.0]  # and reported
    # the twin's own frame and topic parameters read what the driver's interface put in force
    assert team.parameters("frame_prefix", "odom_frame", "base_frame", "cmd_vel_topic", "cmd_vel_type") == [
        f"{NS}/", "odom", "base_link", "cmd_vel", "twist"]


def test_up_starts_the_node_with_the_driver_launch_s_defaults(tmp_path):
    """robotino_driver.launch.py passes launch_odom_tf false, bumper_timeout 2.0, motor_timeout 0.0
    and hostname 172.26.1.1:12080 to the driver's nodes; `up --interface driver` (no parameter
    file) starts the twin's node with the same: no odom -> base_link on /tf (an EKF publishes it)."""
    ns = "robotinobase4"
    with driver_up(tmp_path, ns) as (team, _, _):
        team.tf.clear()
        team.odom.clear()
        team.spin(1.5)
        assert len(team.odom) > 20  # odometry flows, its transform does not
        assert _transform(team, f"{ns}/odom", f"{ns}/base_link") is None
        assert team.parameters("publish_odom_tf", "bumper_timeout", "motor_timeout", "hostname") == [
            False, 2.0, 0.0, "172.26.1.1:12080"]


def test_the_driver_s_hostname_and_motor_timeout_are_declared_with_its_defaults():
    """RTONode.cpp declares hostname "172.26.1.1" and motor_timeout 10.0: `ros2 param get` reads
    them on the twin's robotino_node too (without effect there), and `ros2 param set` takes them."""
    from rcl_interfaces.srv import GetParameters, SetParameters
    from rclpy.parameter import Parameter, parameter_value_to_python

    from live_graph import live_graph

    dyn = {"interface": "driver", "reference": "cmd_vel"}
    with live_graph(dyn, "team", namespace="robotinobase3", with_probe=False, state_publisher=None,
                    dynamics_name="robotino_node") as (graph, node):
        def call(kind, service, request):
            client = node.create_client(kind, f"/robotinobase3/robotino_node/{service}")
            assert client.wait_for_service(timeout_sec=10.0)
            future = client.call_async(request)
            assert graph.spin_until(future.done, 10.0)
            return future.result()

        got = call(GetParameters, "get_parameters", GetParameters.Request(names=["hostname", "motor_timeout"]))
        assert [parameter_value_to_python(v) for v in got.values] == ["172.26.1.1", 10.0]
        done = call(SetParameters, "set_parameters",
                    SetParameters.Request(parameters=[Parameter("motor_timeout", value=0.0).to_parameter_msg()]))
        assert done.results[0].successful, done.results[0].reason


def test_cmd_vel_moves_the_twin_with_the_driver_s_wheel_signs(driver):
    team, _, _ = driver
    team.set_enabled(True)
    team.at_rest()
    team.reset_odometry()
    team.motors.clear()
    team.spin(2.0, command=(0.3, 0.0, 0.0))
    accelerating = list(team.motors)
    team.odom.clear()
    team.joints.clear()
    team.spin(1.0, command=(0.3, 0.0, 0.0))
    tw = team.odom[-1].twist.twist
    assert tw.linear.x == pytest.approx(0.3, rel=0.03) and abs(tw.linear.y) < 0.01, tw
    assert team.odom[-1].pose.pose.position.x > 0.5  # 3 s at about 0.3 m/s
    js = team.joints[-1]
    speed = dict(zip(js.name, js.velocity))
    # driving +x: wheel0 (60 deg, axis -1 0 0) turns backwards, wheel2 (-60 deg) forwards, the
    # rear wheel1 (180 deg) rolls sideways on its rollers
    expected = COS30 * 0.3 / WHEEL_RADIUS
    assert speed["wheel0_joint"] == pytest.approx(-expected, rel=0.03), speed
    assert speed["wheel2_joint"] == pytest.approx(expected, rel=0.03), speed
    assert abs(speed["wheel1_joint"]) < 0.03 * expected, speed
    # motor_readings: motors 0, 1, 2 of wheel0..2_joint in rpm, speed = rpm / 16 * 2 pi / 60 (MotorArrayROS)
    rpm = team.motors[-1].velocities
    assert [r / 16 * 2 * math.pi / 60 for r in rpm] == pytest.approx(
        [speed["wheel0_joint"], speed["wheel1_joint"], speed["wheel2_joint"]], rel=0.03, abs=0.05)
    # speeding up, a motor's current drives it: signed as its rpm, whichever way the joint's axis
    # points (the rolling twin has next to no friction, so a steady speed draws next to none)
    pushing = [(m.currents[k], m.velocities[k]) for m in accelerating for k in (0, 2)
               if abs(m.velocities[k]) > 50 and abs(m.currents[k]) > 0.05]
    assert len(pushing) >= 2 and all(i * rpm > 0 for i, rpm in pushing), pushing

    team.spin(2.0, command=(0.0, 0.0, 0.5))
    js = team.joints[-1]
    # turning left (+wz) turns all three forward about their -x axes
    for name, w in zip(js.name, js.velocity):
        assert w == pytest.approx(0.5 * WHEEL_DISTANCE / WHEEL_RADIUS, rel=0.03), (name, w)


def test_joint_commands_in_the_driver_s_joint_names_drive_the_twin(driver):
    """ros2_control's topic-based hardware interface on the driver's URDF (rto_description's
    robotino_ros2control.xacro: wheel0_joint..wheel2_joint, velocity commands) sends commands in
    the names and signs joint_states carries. The wheel speeds read while driving at 0.3 m/s,
    sent back as commands, drive it at 0.3 m/s again (they were refused: unknown joints)."""
    team, _, _ = driver
    team.set_enabled(True)
    team.at_rest()
    team.spin(2.0, command=(0.3, 0.0, 0.2))
    team.joints.clear()
    team.spin(0.5, command=(0.3, 0.0, 0.2))
    js = team.joints[-1]
    names, speeds = list(js.name), list(js.velocity)
    assert set(names) == {"wheel0_joint", "wheel1_joint", "wheel2_joint"}, names
    team.at_rest()
    commands = team.node.create_publisher(JointState, "joint_commands", 10)
    # the speeds read back carry a small vy of the twin's dynamics, which min_linear_vel (0.02)
    # would raise as it raises cmd_vel's: no minima here
    assert team.set_limits(3.0, 0.0, 3.0, 0.0).success
    try:
        end = time.monotonic() + 2.5
        while time.monotonic() < end:  # 10 Hz, as a controller manager's updates (under the cmd_vel watchdog)
            commands.publish(JointState(name=names, velocity=speeds))
            team.spin(0.1)
    finally:
        assert team.set_limits(3.0, 0.02, 3.0, 0.07).success
    tw = team.odom[-1].twist.twist
    assert (tw.linear.x, tw.linear.y, tw.angular.z) == pytest.approx((0.3, 0.0, 0.2), abs=0.01), tw


def test_joint_commands_are_held_disabled_and_limited_as_cmd_vel_is(driver):
    """Wheel speeds on joint_commands move the base as cmd_vel does, so the driver's guards on
    motion apply to them too: ignored while cmd_vel_enable has disabled it (OmniDriveROS.cpp:65-68)
    or after a bumper contact (:69), clipped to set_velocity_limits' maxima (:75-118)."""
    team, _, _ = driver
    team.set_enabled(True)
    team.at_rest()
    commands = team.node.create_publisher(JointState, "joint_commands", 10)
    w = COS30 * 0.3 / WHEEL_RADIUS  # the wheel speeds of vx 0.3 in the driver's names and signs

    def drive(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            commands.publish(JointState(name=["wheel0_joint", "wheel1_joint", "wheel2_joint"], velocity=[-w, 0.0, w]))
            team.spin(0.1)
        return team.odom[-1].twist.twist.linear.x

    assert drive(1.5) == pytest.approx(0.3, rel=0.03)  # they drive it
    tw = team.odom[-1].twist.twist  # straight ahead: the zero components are not raised to the minima
    assert abs(tw.linear.y) < 1e-3 and abs(tw.angular.z) < 1e-3, tw
    team.at_rest()
    team.bumper.publish(Bool(data=True))
    team.spin(0.2)
    assert abs(drive(1.2)) < 0.01  # held after the contact (bumper_timeout 2.0)
    team.at_rest()
    assert team.set_enabled(False).success
    try:
        assert abs(drive(1.5)) < 0.01
    finally:
        assert team.set_enabled(True).success
    try:
        assert team.set_limits(0.1, 0.02, 3.0, 0.07).success
        assert drive(2.0) == pytest.approx(0.1, rel=0.03)
    finally:
        assert team.set_limits(3.0, 0.02, 3.0, 0.07).success
    team.at_rest()


def test_a_disabled_cmd_vel_is_ignored(driver):
    team, _, _ = driver
    team.at_rest()
    team.reset_odometry()
    assert team.set_enabled(False).success
    try:
        team.spin(1.5, command=(0.3, 0.0, 0.4))
        odom = team.odom[-1]
        assert abs(odom.twist.twist.linear.x) < 1e-3 and abs(odom.twist.twist.angular.z) < 1e-3
        assert math.hypot(odom.pose.pose.position.x, odom.pose.pose.position.y) < 1e-3
    finally:
        assert team.set_enabled(True).success
    team.spin(2.0, command=(0.3, 0.0, 0.0))
    assert team.odom[-1].twist.twist.linear.x == pytest.approx(0.3, rel=0.03)  # enabled again: it drives


def test_velocity_limits_clip_each_component(driver):
    team, _, _ = driver
    team.at_rest()
    try:
        assert team.set_limits(0.1, 0.05, 0.5, 0.07).success
        assert team.parameters("max_linear_vel", "min_linear_vel") == pytest.approx([0.1, 0.05])  # ros2 param get
        assert not team.set_limits(-1.0, 0.05, math.nan, 0.07).success  # refused whole
        # vx above the maximum: clipped; vy below the minimum: raised to it; wz clipped
        team.spin(2.5, command=(0.4, 0.01, 2.0))
        tw = team.odom[-1].twist.twist
        assert tw.linear.x == pytest.approx(0.1, rel=0.03), tw
        assert tw.linear.y == pytest.approx(0.05, rel=0.05), tw
        assert tw.angular.z == pytest.approx(0.5, rel=0.03), tw
        # +-inf is above every maximum: clipped to it (OmniDriveROS.cpp:75-80), not refused
        team.spin(2.5, command=(math.inf, 0.0, -math.inf))
        tw = team.odom[-1].twist.twist
        assert (tw.linear.x, tw.angular.z) == pytest.approx((0.1, -0.5), rel=0.03), tw
    finally:
        assert team.set_limits(3.0, 0.02, 3.0, 0.07).success  # the driver's defaults


def test_reset_odometry_sets_odom(driver):
    team, _, _ = driver
    team.spin(2.0, command=(0.2, 0.1, 0.3))
    team.at_rest()
    pose = team.odom[-1].pose.pose
    assert math.hypot(pose.position.x, pose.position.y) > 0.1  # it went somewhere
    team.reset_odometry()
    team.odom.clear()
    team.tf.clear()
    team.spin(0.5)
    pose = team.odom[-1].pose.pose
    assert abs(pose.position.x) < 1e-6 and abs(pose.position.y) < 1e-6 and abs(pose.orientation.z) < 1e-6
    tf = _transform(team, f"{NS}/odom", f"{NS}/base_link")
    assert abs(tf.transform.translation.x) < 1e-6 and abs(tf.transform.translation.y) < 1e-6
    team.reset_odometry(1.0, -2.0, 0.5)
    team.odom.clear()
    team.spin(0.5)
    pose = team.odom[-1].pose.pose
    assert (pose.position.x, pose.position.y) == pytest.approx((1.0, -2.0), abs=1e-6)
    assert 2 * math.atan2(pose.orientation.z, pose.orientation.w) == pytest.approx(0.5, abs=1e-6)
    # driving on from there: along its new heading in odom
    team.spin(2.0, command=(0.3, 0.0, 0.0))
    pose = team.odom[-1].pose.pose
    assert math.atan2(pose.position.y + 2.0, pose.position.x - 1.0) == pytest.approx(0.5, abs=0.02)
    # beyond the world's bounds (|x|, |y| <= 1e6 m) a reset is refused: odometry counts on
    team.at_rest()
    before = team.odom[-1].pose.pose.position
    team.reset_odometry(3e38, 0.0, 0.0)
    team.odom.clear()
    team.spin(0.5)
    after = team.odom[-1].pose.pose.position
    assert (after.x, after.y) == pytest.approx((before.x, before.y), abs=1e-3)


def _yaw(q):
    return 2 * math.atan2(q.z, q.w)


def test_reset_odometry_sets_odometry_and_leaves_the_robot_where_it_is(tmp_path):
    """As OdometryROS::resetOdometryCallback: the odometry reads the pose given and counts on from
    there, while the robot stays put: its laser scan (sensor_node, --sensors) and its entity
    state (simulation_interfaces) are of where it really is, before and after the reset."""
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import LaserScan

    si = pytest.importorskip("simulation_interfaces.srv", reason="simulation_interfaces missing: tools/setup.sh")
    ns = "robotinobase2"  # beside the module's twin in robotinobase1
    with driver_up(tmp_path, ns, "--sensors") as (team, _, err):
        scans = []
        team.node.create_subscription(LaserScan, "scan", scans.append, qos_profile_sensor_data)
        entity = team.node.create_client(si.GetEntityState, "get_entity_state")

        def true_pose():
            st = team.call(entity, si.GetEntityState.Request(entity=f"{ns}/robotino")).state
            return st.pose.position.x, st.pose.position.y, _yaw(st.pose.orientation)

        def fresh_scan():
            scans.clear()
            team.spin(0.5)
            assert scans, f"no {ns}/scan:\n{err.read_text()[-3000:]}"
            return scans[-1]

        team.at_rest()
        before, scan_before = true_pose(), fresh_scan()
        # the arena's +x wall's inner face is at x = 3.0, the scanner 0.12 m ahead of the centre
        assert scan_before.ranges[405] == pytest.approx(3.0 - 0.12 - before[0], abs=0.1)
        team.reset_odometry(1.0, -0.5, 0.5)
        team.odom.clear()
        team.spin(0.5)
        pose = team.odom[-1].pose.pose
        assert (pose.position.x, pose.position.y, _yaw(pose.orientation)) == pytest.approx((1.0, -0.5, 0.5), abs=1e-6)
        assert true_pose() == pytest.approx(before, abs=1e-6)  # the robot did not move
        scan_after = fresh_scan()
        # the same walls at the same ranges, but for the range noise (sigma 0.02 m)
        diff = sorted(abs(a - b) for a, b in zip(scan_after.ranges, scan_before.ranges))
        assert diff[len(diff) // 2] < 0.05, f"median range change {diff[len(diff) // 2]:.3f} m"

        # driving 0.3 m/s ahead: odometry along its reset heading, the robot along its true one
        team.spin(2.0, command=(0.3, 0.0, 0.0))
        team.at_rest()
        pose = team.odom[-1].pose.pose
        moved = math.hypot(pose.position.x - 1.0, pose.position.y + 0.5)
        assert moved > 0.4
        assert math.atan2(pose.position.y + 0.5, pose.position.x - 1.0) == pytest.approx(0.5, abs=0.02)
        x, y, yaw = true_pose()
        assert (x - before[0], y - before[1], yaw - before[2]) == pytest.approx((moved, 0.0, 0.0), abs=0.02)
        assert fresh_scan().ranges[405] == pytest.approx(3.0 - 0.12 - x, abs=0.1)  # the wall seen nearer


def test_a_bumper_contact_stops_it_and_holds_cmd_vel_for_bumper_timeout(driver):
    """OmniDriveROS: a contact stops cmd_vel for bumper_timeout (2.0 s, the team's file); contacts
    in that time and one timeout after it are ignored, so the robot backs away; then one counts."""
    team, _, _ = driver
    team.set_enabled(True)
    team.spin(1.5, command=(0.3, 0.0, 0.0))
    contact = time.monotonic()
    team.bumper.publish(Bool(data=True))
    team.spin(0.2, command=(0.3, 0.0, 0.0))
    team.bumper.publish(Bool(data=False))
    team.spin(1.0, command=(0.3, 0.0, 0.0))  # still held
    assert abs(team.odom[-1].twist.twist.linear.x) < 0.01
    team.spin(1.5, command=(0.3, 0.0, 0.0))  # then commands pass again
    assert team.odom[-1].twist.twist.linear.x == pytest.approx(0.3, rel=0.03)
    assert time.monotonic() - contact < 3.5  # in the second timeout: a contact is ignored
    team.bumper.publish(Bool(data=True))
    team.spin(0.4, command=(0.3, 0.0, 0.0))
    assert team.odom[-1].twist.twist.linear.x == pytest.approx(0.3, rel=0.03)
    team.spin(4.3 - (time.monotonic() - contact), command=(0.3, 0.0, 0.0))
    team.bumper.publish(Bool(data=True))  # still pressed, re-armed: stops it again
    team.spin(0.5, command=(0.3, 0.0, 0.0))
    assert abs(team.odom[-1].twist.twist.linear.x) < 0.01


def test_a_negative_bumper_timeout_turns_the_bumper_stop_off_with_a_warning(tmp_path):
    """OmniDriveROS::setBumperTime: a timeout below 0 disables the stop and warns "Invalid input,
    Bumper stop disabled." (OmniDriveROS.cpp:236-239); the driver runs. So does the twin, and a
    bumper contact does not stop it. motor_timeout below 0 is taken too (:245-247)."""
    ns = "robotinobase8"
    params = tmp_path / "team_params.yaml"
    params.write_text(f"/{ns}/robotino_node:\n  ros__parameters:\n    bumper_timeout: -1.0\n"
                      f"    motor_timeout: -1.0\n")
    with driver_up(tmp_path, ns, "--params", str(params)) as (team, _, err):
        assert "bumper_timeout -1: invalid input, bumper stop disabled" in err.read_text()
        assert team.parameters("bumper_timeout", "motor_timeout") == [-1.0, -1.0]
        team.spin(1.5, command=(0.3, 0.0, 0.0))
        team.bumper.publish(Bool(data=True))
        team.spin(1.0, command=(0.3, 0.0, 0.0))
        assert team.odom[-1].twist.twist.linear.x == pytest.approx(0.3, rel=0.03)


@pytest.mark.parametrize("args, expected", [
    (["--interface", "nosuch"], "--interface nosuch: robotino has no such interface profile (has: driver)"),
    (["--interface", "driver", "--model", "arm3dof"], "--interface driver: arm3dof has no such interface profile"),
    (["--interface", "driver", "--reference", "rose"], "--reference must be cmd_vel, not rose"),
])
def test_up_refuses_an_interface_that_does_not_fit(tmp_path, args, expected):
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    r = subprocess.run([sys.executable, "-m", "bondsim_ros.cli", "up", *args, "--duration", "1"], env=env,
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and expected in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_profile_that_does_not_fit_the_twin_is_refused_naming_the_key():
    from bondsim_ros.robots import load_robot
    from bondsim_ros.twin.interface_profile import ProfileError, parse_profile

    robot = load_robot("robotino")
    good = robot.interfaces["driver"]
    twin_joints = [f"wheel{i}_axle" for i in (1, 2, 3)]
    assert [j.name for j in parse_profile("driver", good, twin_joints).joints] == [
        "wheel2_joint", "wheel0_joint", "wheel1_joint"]
    bad = dict(good, joints=[dict(good["joints"][0], twin="wheel9_axle")])
    with pytest.raises(ProfileError,
                       match=r"interface profile 'driver': joints\[0\]\.twin: 'wheel9_axle' is not a joint"):
        parse_profile("driver", bad, twin_joints)
    bad = dict(good, services={"x": dict(good["services"]["cmd_vel_enable"], type="rto_msgs/SetOmniDriveEnabled")})
    with pytest.raises(ProfileError, match=r"services\.x\.type: expected package/srv/Type"):
        parse_profile("driver", bad)
    bad = dict(good, launch_arguments={"launch_odom_tf": dict(good["launch_arguments"]["launch_odom_tf"],
                                                              default="false")})
    with pytest.raises(ProfileError, match=r"launch_arguments\.launch_odom_tf\.default: expected bool"):
        parse_profile("driver", bad)


def test_up_takes_the_parameter_file_sections_of_both_driver_nodes(tmp_path):
    """A team's file keys publish_odom_tf by robotino_odometry_node (RTOOdometryNode.cpp) and the
    rest by robotino_node (RTONode.cpp); the twin's one node takes both."""
    import argparse

    from bondsim_ros.ros.commands import _node_params

    f = tmp_path / "team.yaml"
    f.write_text(f"/{NS}/robotino_node:\n  ros__parameters:\n    bumper_timeout: 1.5\n"
                 f"/{NS}/robotino_odometry_node:\n  ros__parameters:\n    publish_odom_tf: true\n")
    args = argparse.Namespace(params=str(f), model=None, reference=None, rate=None, rtf=None, interface="driver",
                              namespace=NS)
    dyn, _, _ = _node_params(args)
    # the file's values win over the driver launch's defaults (false, 2.0); the others keep them
    assert (dyn["publish_odom_tf"], dyn["bumper_timeout"], dyn["tf_prefix"]) == (True, 1.5, f"{NS}/")
    assert (dyn["motor_timeout"], dyn["hostname"]) == (0.0, "172.26.1.1:12080")
    assert (dyn["node_name"], dyn["interface"], dyn["reference"]) == ("robotino_node", "driver", "cmd_vel")
    # robotino_node's tf_prefix names its imu and IR frames (RTONode.cpp:56,69) and it has no
    # publish_odom_tf: the odometry's come from the odometry node's section, or the launch's
    f.write_text(f"/{NS}/robotino_node:\n  ros__parameters:\n    tf_prefix: rn/\n    publish_odom_tf: true\n"
                 f"    hostname: 10.0.0.1\n"
                 f"/{NS}/robotino_odometry_node:\n  ros__parameters:\n    hostname: 10.0.0.2\n")
    dyn, _, _ = _node_params(args)
    assert (dyn["tf_prefix"], dyn["publish_odom_tf"], dyn["hostname"]) == (f"{NS}/", False, "10.0.0.1")
    f.write_text(f"/{NS}/robotino_node:\n  ros__parameters:\n    tf_prefix: rn/\n    publish_odom_tf: false\n"
                 f"/{NS}/robotino_odometry_node:\n  ros__parameters:\n    tf_prefix: odo/\n"
                 f"    publish_odom_tf: true\n")
    dyn, _, _ = _node_params(args)
    assert (dyn["tf_prefix"], dyn["publish_odom_tf"]) == ("odo/", True)


def _driver_graph_params(namespace, sensors=None):
    """What `up --interface driver --namespace NAMESPACE [--sensors]` starts its nodes with."""
    import argparse

    from bondsim_ros.ros.commands import _node_params, _sensor_params

    args = argparse.Namespace(params=None, model=None, reference=None, rate=None, rtf=None, interface="driver",
                              namespace=namespace)
    dyn, _, _ = _node_params(args)
    sensor_params = _sensor_params(sensors, dyn, interface=True)
    return dyn, dyn.pop("node_name"), sensor_params


def test_up_driver_sensors_scan_reaches_a_reliable_subscriber():
    """The driver's laser node publishes scan reliable, depth 10 (LaserRangeFinderROS.cpp): a team's
    node may subscribe reliable, which a best-effort publisher never serves."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import LaserScan

    from live_graph import live_graph

    ns = "robotinobase6"
    dyn, name, sensors = _driver_graph_params(ns, sensors="")
    with live_graph(dyn, "team", namespace=ns, with_probe=False, state_publisher=None, dynamics_name=name,
                    sensors=sensors) as (graph, node):
        scans = []
        node.create_subscription(LaserScan, f"/{ns}/scan", scans.append,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        assert graph.spin_until(lambda: len(scans) >= 3, 30.0), "no scan reached a reliable subscriber"
        assert scans[-1].header.frame_id == f"{ns}/laser_link"


def test_without_publish_odom_tf_nothing_is_published_on_tf():
    """publish_odom_tf false (the driver launch's default): the driver's odometry node publishes
    nothing on /tf, and neither does the twin (no empty TFMessage every frame)."""
    from live_graph import live_graph

    ns = "robotinobase7"
    dyn, name, _ = _driver_graph_params(ns)
    assert dyn["publish_odom_tf"] is False
    with live_graph(dyn, "team", namespace=ns, with_probe=False, state_publisher=None,
                    dynamics_name=name) as (graph, node):
        tf, joints = [], []
        node.create_subscription(TFMessage, "/tf", tf.append, 100)
        node.create_subscription(JointState, f"/{ns}/joint_states", joints.append, 100)
        assert graph.spin_until(lambda: len(joints) >= 30, 30.0)
        assert tf == [], f"{len(tf)} messages on /tf, the first {tf[0]}"
