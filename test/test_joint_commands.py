"""sensor_msgs/JointState commands as ros2_control's topic-based hardware interface sends them
(joint_state_topic_hardware_interface / topic_based_ros2_control), against dynamics_node."""
import math
import time

import numpy as np
import pytest


rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import QoSProfile, qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from bondsim_ros.ros.dynamics_node import DynamicsNode  # noqa: E402

THRESHOLD = 1e-5  # the plugin's trigger_joint_command_threshold default


class TopicBasedHardware:
    """Stands in for the plugin in a controller manager at ``rate`` Hz: ``read`` keeps the newest
    /joint_states message (SensorDataQoS subscription), ``write`` publishes every joint of the
    hardware by name with the command interfaces it has (QoS depth 1, reliable), and publishes
    nothing while the position commands are within the threshold of the position states (sum of
    absolute differences over the joints, 0 where a joint has no position interface)."""

    def __init__(self, node, joints, interface, topic="/joint_commands", threshold=THRESHOLD):
        self.joints, self.interface, self.threshold = list(joints), interface, threshold
        self.commands = {j: 0.0 for j in joints}
        self.states = {j: 0.0 for j in joints}
        self.pub = node.create_publisher(JointState, topic, QoSProfile(depth=1))
        node.create_subscription(JointState, "/joint_states", self._read, qos_profile_sensor_data)
        self.node, self.sent = node, 0

    def _read(self, msg):
        for n, q in zip(msg.name, msg.position):
            if n in self.states:
                self.states[n] = q

    def write(self):
        if self.interface == "position":
            diff = sum(abs(self.states[j] - self.commands[j]) for j in self.joints)
        else:
            diff = sum(abs(self.states[j]) for j in self.joints)  # position commands stay 0
        if diff <= self.threshold:
            return
        msg = JointState()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.name = self.joints
        setattr(msg, self.interface, [self.commands[j] for j in self.joints])
        self.pub.publish(msg)
        self.sent += 1


class Twin:
    def __init__(self, **overrides):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = DynamicsNode(overrides={"publish_rate": 33.0, **overrides}, context=self.context)
        self.aux = rclpy.create_node("controller_manager", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.aux)
        self.joints, self.odom, self.diag = [], [], []
        self.aux.create_subscription(JointState, "/joint_states", self.joints.append, qos_profile_sensor_data)
        self.aux.create_subscription(Odometry, "/odom", self.odom.append, 10)
        self.aux.create_subscription(DiagnosticArray, "/diagnostics", self.diag.append, 10)

    def run(self, seconds, hw=None, rate=100.0, update=None):
        """Spin; every 1/rate s the controller manager updates: ``update(t)`` sets the commands,
        then the hardware writes. ``self.settled`` is False from a pause of this process's own
        (a loop turn more than 50 ms after the last: the machine busy with other work) until
        0.2 s after it, while the node it also spins catches up: a sample taken then measures
        that pause, not the twin."""
        start = time.monotonic()
        nxt = last = start
        caught_up = start
        while (now := time.monotonic()) < start + seconds:
            if now - last > 0.05:
                caught_up = now + 0.2
            last = now
            self.settled = now >= caught_up
            if hw is not None and now >= nxt:
                if update:
                    update(now - start)
                hw.write()
                nxt += 1.0 / rate
            self.executor.spin_once(timeout_sec=0.002)

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        self.aux.destroy_node()
        rclpy.try_shutdown(context=self.context)


def test_position_commands_from_a_joint_trajectory_controller_are_followed():
    """A trajectory as joint_trajectory_controller samples it at 100 Hz (a smooth path from rest
    to the goal in 2 s), sent through the plugin: the arm follows it and reaches the goal."""
    tw = Twin(model="arm3dof", reference="joint_trajectory")
    try:
        names = list(tw.node.twin.joint_names)
        hw = TopicBasedHardware(tw.aux, names, "position")
        tw.run(0.5)
        q0 = dict(zip(tw.joints[-1].name, tw.joints[-1].position))
        goal = {"q1": q0["q1"] + 0.5, "q2": q0["q2"] - 0.4, "q3": q0["q3"] + 0.3}
        path = lambda t: {j: q0[j] + (goal[j] - q0[j]) * (1 - math.cos(math.pi * min(t, 2.0) / 2)) / 2  # noqa: E731
                          for j in names}
        errors = []

        def update(t):
            hw.commands.update(path(t))
            if 0.5 < t < 2.0 and tw.settled:  # tracking along the way, as the plugin reads the state
                errors.append(max(abs(hw.states[j] - path(t)[j]) for j in names))

        tw.run(4.0, hw, update=update)
        assert len(errors) > 75, f"only {len(errors)} of some 150 tracking samples: the machine kept pausing the test"
        final = dict(zip(tw.joints[-1].name, tw.joints[-1].position))
        err = max(abs(final[j] - goal[j]) for j in names)
        print(f"{hw.sent} commands; tracking error along the path ({len(errors)} samples) up to {max(errors):.4f} rad, "
              f"at the goal {err:.5f} rad")
        assert err < 0.01
        assert max(errors) < 0.1
        assert tw.node.joint_commands.accepted > 100 and tw.node.joint_commands.refused == 0
    finally:
        tw.close()


def test_refused_commands_are_reported_and_nan_means_no_command():
    tw = Twin(model="arm3dof", reference="joint_trajectory")
    try:
        pub = tw.aux.create_publisher(JointState, "/joint_commands", QoSProfile(depth=1))
        tw.run(0.5)
        q0 = dict(zip(tw.joints[-1].name, tw.joints[-1].position))
        for bad in (dict(name=["q1", "gripper"], position=[0.1, 0.0]),
                    dict(name=["q1", "q2", "q3"], velocity=[0.1, 0.0, 0.0]),
                    dict(name=["q1", "q2", "q3"], position=[0.1, 0.2])):
            pub.publish(JointState(**bad))
            tw.run(0.3)
        assert tw.node.joint_commands.refused == 3
        tw.run(1.2)  # a /diagnostics round
        status = [s for d in tw.diag for s in d.status if s.name.endswith("/joint_commands")]
        assert status and status[-1].level == DiagnosticStatus.WARN
        assert "entries for 3 names" in status[-1].message
        values = dict((kv.key, kv.value) for kv in status[-1].values)
        assert values["refused"] == "3" and values["accepted"] == "0"
        final = dict(zip(tw.joints[-1].name, tw.joints[-1].position))
        assert max(abs(final[j] - q0[j]) for j in q0) < 1e-3, "a refused command moved the arm"

        # NaN: no command for that joint; the others go to their set points
        for _ in range(20):
            pub.publish(JointState(name=["q1", "q2", "q3"], position=[math.nan, q0["q2"] + 0.3, math.nan]))
            tw.run(0.1)
        tw.run(1.5)
        final = dict(zip(tw.joints[-1].name, tw.joints[-1].position))
        assert final["q2"] == pytest.approx(q0["q2"] + 0.3, abs=0.01)
        assert final["q1"] == pytest.approx(q0["q1"], abs=0.01) and final["q3"] == pytest.approx(q0["q3"], abs=0.01)
    finally:
        tw.close()


def test_wheel_speed_commands_drive_the_base_at_the_twist_they_make():
    """Velocity command interfaces on the Robotino's three wheels (as a diff/omni drive's
    hardware has them): the base moves at the body twist whose wheel speeds they are.

    The plugin compares positions only: joints with velocity commands alone, resting at exactly
    0 (a twin just started), would get no command with the default threshold; a negative
    trigger_joint_command_threshold makes it send every update, as docs/ros.md says."""
    from bondsim_ros.robots.robotino.model import load_params
    from bondsim_ros.robots.robotino.twin import wheel_speeds_for_twist

    tw = Twin(reference="cmd_vel", cmd_vel_timeout=0.5)
    try:
        wheels = ["wheel1_axle", "wheel2_axle", "wheel3_axle"]
        hw = TopicBasedHardware(tw.aux, wheels, "velocity", threshold=-1.0)
        speeds = wheel_speeds_for_twist(0.25, -0.1, 0.4, load_params(None))
        hw.commands.update(dict(zip(wheels, speeds)))
        tw.run(0.3)
        tw.run(1.5, hw)
        o = tw.odom[-1].twist.twist
        got = (o.linear.x, o.linear.y, o.angular.z)
        js = tw.joints[-1]
        wheel_now = [js.velocity[list(js.name).index(w)] for w in wheels]
        print(f"wheel speeds {np.round(speeds, 3)} -> body twist {np.round(got, 4)}, "
              f"wheels now {np.round(wheel_now, 3)}")
        assert got == pytest.approx((0.25, -0.1, 0.4), rel=0.03)
        assert wheel_now == pytest.approx(list(speeds), rel=0.03)
        tw.run(1.5)  # the plugin gone silent: the cmd_vel watchdog stops the base
        o = tw.odom[-1].twist.twist
        assert max(abs(o.linear.x), abs(o.linear.y), abs(o.angular.z)) < 1e-3
    finally:
        tw.close()


def test_a_trajectory_naming_a_joint_the_twin_does_not_drive_is_refused_not_a_solver_failure():
    """dualarm's wheels are joints of the twin, but its trajectory interface drives the arms only:
    such a trajectory is a bad command (logged, refused), not a model failure."""
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    tw = Twin(model="dualarm", reference="joint_trajectory")
    try:
        assert "wheel_l" in tw.node.twin.joint_names and "wheel_l" not in tw.node.twin.trajectory_joints
        pub = tw.aux.create_publisher(JointTrajectory, "/joint_trajectory", 10)
        tw.run(0.5)
        msg = JointTrajectory(joint_names=["wheel_l"],
                              points=[JointTrajectoryPoint(positions=[1.0], time_from_start=Duration(sec=1))])
        pub.publish(msg)
        tw.run(1.5)
        assert tw.node.failures.count == 0 and tw.node.failures.last is None
        errors = [s for d in tw.diag for s in d.status if s.level == DiagnosticStatus.ERROR]
        assert not errors, errors[0].message
    finally:
        tw.close()


def test_malformed_and_expired_trajectories_are_refused_on_receipt_not_as_model_failures():
    """A NaN position, velocities of the wrong length at one point, a stamped trajectory that
    ended before it arrived: each refused with a warning naming what is wrong (the point, the
    joint), nothing applied, no model failure counted."""
    from builtin_interfaces.msg import Duration
    from rcl_interfaces.msg import Log
    from rclpy.duration import Duration as RosDuration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    tw = Twin(model="arm3dof", reference="joint_trajectory")
    try:
        logs = []
        tw.aux.create_subscription(Log, "/rosout", logs.append, 100)
        pub = tw.aux.create_publisher(JointTrajectory, "/joint_trajectory", 10)
        tw.run(0.5)
        q0 = dict(zip(tw.joints[-1].name, tw.joints[-1].position))
        past = (tw.aux.get_clock().now() - RosDuration(seconds=5.0)).to_msg()
        bad = [
            ([JointTrajectoryPoint(positions=[math.nan, q0["q2"]], time_from_start=Duration(sec=1))], None),
            ([JointTrajectoryPoint(positions=[q0["q1"], q0["q2"]], velocities=[0.0, 0.0],
                                   time_from_start=Duration(sec=1)),
              JointTrajectoryPoint(positions=[q0["q1"] + 0.3, q0["q2"]], velocities=[0.0],
                                   time_from_start=Duration(sec=2))], None),
            ([JointTrajectoryPoint(positions=[q0["q1"] + 0.3, q0["q2"]], time_from_start=Duration(sec=1))], past),
        ]
        for points, stamp in bad:
            msg = JointTrajectory(joint_names=["q1", "q2"], points=points)
            if stamp is not None:
                msg.header.stamp = stamp
            pub.publish(msg)
            tw.run(1.2)  # the warnings are throttled to one a second
        warnings = [m.msg for m in logs if m.name == "dynamics_node" and "rejected joint trajectory" in m.msg]
        said = " | ".join(warnings)
        assert len(warnings) == 3, said
        assert "point #0, joint q1: position nan is not finite" in warnings[0]
        assert "point #1 has 1 velocities for 2 joints" in warnings[1]
        assert "before now" in warnings[2]
        assert tw.node.failures.count == 0 and tw.node.failures.last is None
        errors = [s for d in tw.diag for s in d.status if s.level == DiagnosticStatus.ERROR]
        assert not errors, errors[0].message
        final = dict(zip(tw.joints[-1].name, tw.joints[-1].position))
        assert max(abs(final[j] - q0[j]) for j in q0) < 1e-3, "a refused trajectory moved the arm"
    finally:
        tw.close()


def test_position_and_velocity_commands_set_an_arm_servo_reference_and_its_rate():
    """Command interfaces position and velocity for every joint (what the topic-based hardware
    sends for a joint_trajectory_controller commanding both): taken, the velocity as each joint
    servo's velocity reference; velocities alone are refused, saying what the servos follow."""
    tw = Twin(model="arm3dof", reference="joint_trajectory")
    try:
        pub = tw.aux.create_publisher(JointState, "/joint_commands", QoSProfile(depth=1))
        tw.run(0.5)
        q0 = dict(zip(tw.joints[-1].name, tw.joints[-1].position))
        names = ["q1", "q2", "q3"]
        pub.publish(JointState(name=names, position=[q0["q1"] + 0.02, q0["q2"], q0["q3"]], velocity=[0.1, 0.0, 0.0]))
        tw.run(0.5)
        jc = tw.node.joint_commands
        assert (jc.accepted, jc.refused) == (1, 0), jc.last_refusal
        assert tw.node.twin.sim.param("q_ref_q1") == q0["q1"] + 0.02 and tw.node.twin.sim.param("qd_ref_q1") == 0.1
        pub.publish(JointState(name=names, velocity=[0.1, 0.0, 0.0]))
        tw.run(0.3)
        assert jc.refused == 1 and "without positions" in jc.last_refusal and "wheel" not in jc.last_refusal
    finally:
        tw.close()


def test_a_paused_twin_still_reports_on_diagnostics_and_logs_each_topics_refusal(capfd):
    """Paused (someone stepping it with StepSimulation), the node still publishes /diagnostics
    once a second: a refused joint command shows there (it said nothing until the next frames),
    and each refusal is in the log."""
    from std_srvs.srv import SetBool
    from trajectory_msgs.msg import JointTrajectory

    tw = Twin(model="arm3dof", reference="joint_trajectory")
    try:
        tw.run(0.5)
        pause = tw.aux.create_client(SetBool, "/dynamics_node/pause")
        assert pause.wait_for_service(timeout_sec=5.0)
        future = pause.call_async(SetBool.Request(data=True))
        tw.run(0.3)
        assert future.done() and future.result().success
        frames = len(tw.joints)
        tw.diag.clear()
        pub = tw.aux.create_publisher(JointState, "/joint_commands", QoSProfile(depth=1))
        trajectory = tw.aux.create_publisher(JointTrajectory, "/joint_trajectory", 10)
        pub.publish(JointState(name=["q1", "gripper"], position=[0.1, 0.0]))
        trajectory.publish(JointTrajectory(joint_names=["q1", "q1"]))
        tw.run(2.5)
        assert len(tw.joints) == frames, "paused: no frame"
        status = [s for d in tw.diag for s in d.status if s.name.endswith("/joint_commands")]
        assert status and status[-1].level == DiagnosticStatus.WARN, [d.status for d in tw.diag]
        err = capfd.readouterr().err
        assert "joint_commands: unknown joints" in err and "rejected joint trajectory" in err, err
    finally:
        tw.close()
