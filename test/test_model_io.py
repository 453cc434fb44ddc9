"""A YAML model's commands: (twist, joints, topics) and outputs: through a running dynamics_node
over rclpy: the node is paused, commands are published, and frames are stepped
(simulation_interfaces' StepSimulation), so every command applies at a known simulated instant;
what the node publishes is checked against the same model simulated with the same parameter
steps at the same instants."""
import math
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
pytest.importorskip("simulation_interfaces", reason="simulation_interfaces missing (tools/setup.sh generates it)")
from geometry_msgs.msg import Twist  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from simulation_interfaces import srv  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402

from bondsim_ros.ros.dynamics_node import DynamicsNode  # noqa: E402
from bondsim_ros.solver import SolverOptions  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "live"
RATE = 33.0
TOL = 1e-5  # as the twin-level twist test (test_yaml_commands.py)


def ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


class Stepped:
    """A dynamics node (use_sim_time: stamps are simulated instants) and a client node on one
    executor; ``start`` pauses and resets the twin, ``step`` runs n frames and waits for them."""

    def __init__(self, **overrides):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = DynamicsNode(overrides={"publish_rate": RATE, "use_sim_time": True, **overrides},
                                 context=self.context)
        self.client = rclpy.create_node("io_client", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.client)
        self.joints, self.odom = [], []
        self.client.create_subscription(JointState, "/joint_states", self.joints.append, 1000)
        self.client.create_subscription(Odometry, "/odom", self.odom.append, 1000)
        self.clients = {}

    def listen(self, kind, topic, into: list):
        self.client.create_subscription(kind, topic, into.append, 1000)

    def spin(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.005)

    def spin_until(self, done, timeout=10.0):
        end = time.monotonic() + timeout
        while not done() and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.005)
        return done()

    def call(self, kind, name, **fields):
        if name not in self.clients:
            self.clients[name] = self.client.create_client(kind, name)
            assert self.spin_until(self.clients[name].service_is_ready), f"{name}: not served"
        fut = self.clients[name].call_async(kind.Request(**fields))
        assert self.spin_until(fut.done, 30.0), f"{name}: no answer"
        return fut.result()

    def start(self):
        """Paused at the initial state (t = 0), nothing received yet."""
        assert self.call(SetBool, "/dynamics_node/pause", data=True).success
        assert self.call(Trigger, "/dynamics_node/reset").success
        self.spin(0.3)
        assert self.node.twin.t == 0.0
        self.joints.clear()
        self.odom.clear()

    def step(self, n):
        before = len(self.joints)
        answer = self.call(srv.StepSimulation, "/step_simulation", steps=n).result
        assert answer.result == 1, answer.error_message  # RESULT_OK
        assert self.spin_until(lambda: len(self.joints) >= before + n), "frames missing"

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        self.client.destroy_node()
        rclpy.try_shutdown(context=self.context)


def reference(model_file, times, steps: dict, columns):
    """``columns`` of the model simulated to ``times``, the parameters of ``steps`` {instant:
    {parameter: value}} set at those instants with the integration restarted there (what
    `bondsim-ros simulate --param` does from t = 0, and Simulation.set_params(restart=True) later)."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.simulation import Simulation
    from bondsim_ros.bondgraph.yamlmodel import load_model

    sim = Simulation(compile_model(load_model(model_file)), options=SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.02))
    names = list(sim.compiled.output_names)
    pending = sorted(steps.items())
    rows = []
    for t in times:
        while pending and pending[0][0] <= t + 1e-12:
            at, values = pending.pop(0)
            if at > sim.t:
                sim.step_to(at)
            sim.set_params(values, restart=True)
        y, yp = sim.step_to(t)
        out = sim.outputs_at(t, y, yp)
        rows.append([out[names.index(c)] for c in columns])
    return np.array(rows)


def test_a_yaml_mobile_base_driven_by_cmd_vel_follows_simulate():
    tw = Stepped(model=str(DATA / "cart.yaml"), reference="cmd_vel", cmd_vel_type="twist", cmd_vel_timeout=3600.0)
    try:
        pub = tw.client.create_publisher(Twist, "/cmd_vel", 10)
        momentum = []
        tw.listen(Float64, "/cart/momentum", momentum)
        tw.start()
        momentum.clear()
        dt = 1.0 / RATE
        cmds = [(0.3, 0.8), (-0.2, 0.0), (0.5, -1.0)]
        frames = [30, 25, 30]
        steps, t0 = {}, 0.0
        for (vx, wz), n in zip(cmds, frames):
            steps[t0] = {"vx_cmd": vx, "wz_cmd": wz}
            msg = Twist()
            msg.linear.x, msg.angular.z = vx, wz
            pub.publish(msg)
            assert tw.spin_until(lambda: tw.node.command_queue.next_twist is not None), "cmd_vel not received"
            tw.step(n)
            t0 = tw.node.twin.t
        tw.spin(0.2)
        odom = tw.odom[-sum(frames):]
        joints = tw.joints[-sum(frames):]
        times = np.array([ns(m.header.stamp) * 1e-9 for m in odom])
        assert np.allclose(times, dt * np.arange(1, sum(frames) + 1), atol=1e-9)
        assert [ns(m.header.stamp) for m in joints] == [ns(m.header.stamp) for m in odom]
        assert tw.spin_until(lambda: len(momentum) >= sum(frames))
        got = np.array([[m.pose.pose.position.x, m.pose.pose.position.y,
                         2 * math.atan2(m.pose.pose.orientation.z, m.pose.pose.orientation.w),
                         j.position[list(j.name).index("wheel")], p.data]
                        for m, j, p in zip(odom, joints, momentum[-sum(frames):])])
        want = reference(DATA / "cart.yaml", times, steps, ["X", "Y", "phi", "wheel", "mass.p"])
        worst = np.max(np.abs(got - want))
        print(f"{len(times)} frames to t = {times[-1]:.3f} s, pose at the end {np.round(got[-1], 4)}, "
              f"max |published - simulated| = {worst:.2e}")
        assert np.ptp(got[:, 0]) > 0.1 and np.ptp(got[:, 2]) > 0.2  # it did drive and turn
        assert worst <= TOL
    finally:
        tw.close()


def test_odom_and_the_entity_state_carry_the_speed_of_a_base_bound_by_its_pose_only():
    """cart.yaml binds the base's pose, not its velocity: /odom's twist and get_entity_state's are
    the pose's motion over the last frame (cmd_vel vx 0.4: the distance between the last two
    poses over the frame, not 0); a placement or a reset is no motion."""
    from simulation_interfaces.msg import EntityState

    tw = Stepped(model=str(DATA / "cart.yaml"), reference="cmd_vel", cmd_vel_type="twist", cmd_vel_timeout=3600.0)
    try:
        pub = tw.client.create_publisher(Twist, "/cmd_vel", 10)
        tw.start()
        msg = Twist()
        msg.linear.x = 0.4
        pub.publish(msg)
        assert tw.spin_until(lambda: tw.node.command_queue.next_twist is not None), "cmd_vel not received"
        tw.step(100)
        assert tw.spin_until(lambda: len(tw.odom) >= 100), "odometry missing"
        a, b = tw.odom[-2], tw.odom[-1]
        dt = (ns(b.header.stamp) - ns(a.header.stamp)) * 1e-9
        speed = math.hypot(b.pose.pose.position.x - a.pose.pose.position.x,
                           b.pose.pose.position.y - a.pose.pose.position.y) / dt
        assert speed == pytest.approx(0.4, rel=0.01)
        assert b.twist.twist.linear.x == pytest.approx(speed, rel=1e-6)  # the stamps: whole ns
        assert abs(b.twist.twist.linear.y) < 1e-9 and abs(b.twist.twist.angular.z) < 1e-9
        st = tw.call(srv.GetEntityState, "/get_entity_state", entity="cart").state
        assert (st.twist.linear.x, st.twist.linear.y) == pytest.approx((speed, 0.0), abs=1e-6)

        placed = EntityState()
        placed.pose.position.x, placed.pose.position.y = 3.0, -2.0
        placed.pose.orientation.z, placed.pose.orientation.w = math.sin(0.5), math.cos(0.5)
        assert tw.call(srv.SetEntityState, "/set_entity_state", entity="cart", state=placed).result.result == 1
        n = len(tw.odom)
        tw.step(1)  # placed while paused: the placed pose is published at once, then the frame after it
        later = lambda: [m for m in tw.odom[n:] if ns(m.header.stamp) > ns(b.header.stamp)]  # noqa: E731
        assert tw.spin_until(later), "odometry missing"
        assert later()[0].twist.twist.linear.x == pytest.approx(0.4, rel=0.01)
        assert later()[0].pose.pose.position.x == pytest.approx(3.0 + 0.4 * dt * math.cos(1.0), abs=1e-4)
        st = tw.call(srv.GetEntityState, "/get_entity_state", entity="cart").state
        assert (st.twist.linear.x, st.twist.linear.y) == pytest.approx((0.4 * math.cos(1.0), 0.4 * math.sin(1.0)),
                                                                       rel=0.01)
        n = len(tw.odom)
        assert tw.call(Trigger, "/dynamics_node/reset").success  # at rest, no command in force
        pub.publish(msg)
        assert tw.spin_until(lambda: tw.node.command_queue.next_twist is not None), "cmd_vel not received"
        tw.step(1)  # the reset state (t = 0) is published too: the frame after it
        first = lambda: [m for m in tw.odom[n:] if ns(m.header.stamp) > 0]  # noqa: E731
        assert tw.spin_until(first), "odometry missing"
        assert 0.0 < first()[0].twist.twist.linear.x < 0.05  # from rest: one frame of the push
    finally:
        tw.close()


def test_a_yaml_arm_driven_by_joint_commands_follows_simulate():
    tw = Stepped(model=str(DATA / "arm2.yaml"))  # its own reference: joint commands need no other
    try:
        assert tw.node.twin.trajectory_joints == ["shoulder", "elbow"]
        pub = tw.client.create_publisher(JointState, "/joint_commands", 10)
        tw.start()
        # as ros2_control's topic-based hardware writes them: every joint by name; NaN: no command
        commands = [([0.5, -0.3], {"q1_ref": 0.5, "q2_ref": -0.3}), ([math.nan, 0.4], {"q2_ref": 0.4}),
                    ([-0.2, 0.1], {"q1_ref": -0.2, "q2_ref": 0.1})]
        frames = [40, 30, 35]
        steps, t0 = {}, 0.0
        for (position, values), n in zip(commands, frames):
            steps[t0] = values
            accepted = tw.node.joint_commands.accepted
            pub.publish(JointState(name=["shoulder", "elbow"], position=position))
            assert tw.spin_until(lambda: tw.node.joint_commands.accepted > accepted), "command not received"
            tw.step(n)
            t0 = tw.node.twin.t
        tw.spin(0.2)
        joints = tw.joints[-sum(frames):]
        times = np.array([ns(m.header.stamp) * 1e-9 for m in joints])
        assert np.allclose(times, np.arange(1, sum(frames) + 1) / RATE, atol=1e-9)
        assert list(joints[0].name) == ["shoulder", "elbow"]
        got = np.array([m.position for m in joints])
        want = reference(DATA / "arm2.yaml", times, steps, ["q1", "q2"])
        worst = np.max(np.abs(got - want))
        print(f"{len(times)} frames, joints at the end {np.round(got[-1], 4)}, "
              f"max |published - simulated| = {worst:.2e}")
        assert got[39] == pytest.approx([0.5, -0.3], abs=0.05)  # it went to the first set point
        assert worst <= TOL
        assert tw.node.joint_commands.refused == 0
    finally:
        tw.close()


SLIDER = (DATA / "pushed_slider.yaml").read_text() + """commands:
  topics:
    /slider/force: f
    slider/stiffness: k
outputs:
  /slider/position: spring.q
  /slider/momentum: mass.p
"""


def test_float64_topics_set_parameters_and_outputs_are_published(tmp_path):
    shutil.copy(DATA / "slider.xml", tmp_path / "slider.xml")
    path = tmp_path / "slider.yaml"
    path.write_text(SLIDER)
    tw = Stepped(model=str(path))
    try:
        position, velocity = [], []
        tw.listen(Float64, "/slider/position", position)
        tw.listen(Float64, "/slider/momentum", velocity)
        force = tw.client.create_publisher(Float64, "/slider/force", 10)
        stiffness = tw.client.create_publisher(Float64, "/slider/stiffness", 10)
        tw.start()
        position.clear()
        velocity.clear()
        io = tw.node.model_io
        steps = {}
        tw.step(20)  # the model's own parameters first
        steps[tw.node.twin.t] = {"f": 0.3}
        force.publish(Float64(data=0.3))
        assert tw.spin_until(lambda: io.accepted == 1)
        tw.step(25)
        # refused, never applied: not finite, or a value the law refuses (k > 0 in k*q)
        for pub, bad in ((force, math.nan), (force, math.inf), (stiffness, -1.0)):
            pub.publish(Float64(data=bad))
        assert tw.spin_until(lambda: io.refused == 3)
        tw.step(10)
        steps[tw.node.twin.t] = {"f": -0.1, "k": 9.0}
        force.publish(Float64(data=-0.1))
        stiffness.publish(Float64(data=9.0))
        assert tw.spin_until(lambda: io.accepted == 3)
        tw.step(30)
        assert tw.spin_until(lambda: len(position) >= 85 and len(velocity) >= 85)
        joints = tw.joints[-85:]
        times = np.array([ns(m.header.stamp) * 1e-9 for m in joints])
        got = np.column_stack([[m.data for m in position[-85:]], [m.data for m in velocity[-85:]]])
        # one output message per frame, the frame's own state
        np.testing.assert_array_equal(got[:, 0], [m.position[0] for m in joints])
        want = reference(path, times, steps, ["spring.q", "mass.p"])
        worst = np.max(np.abs(got - want))
        print(f"{len(times)} frames, max |published - simulated| = {worst:.2e}")
        assert worst <= TOL
        assert abs(got[44, 0] - got[19, 0]) > 0.01  # the force moved the block
        assert tw.node.twin.sim.param("k") == 9.0 and tw.node.twin.sim.param("f") == -0.1
    finally:
        tw.close()


def test_a_command_topic_no_law_reads_is_named_at_start_up(tmp_path, capfd):
    """A Float64 topic bound to a parameter that no law reads moves nothing: the node says so
    when it starts, as `simulate --param` does, and says nothing of the bindings that act."""
    shutil.copy(DATA / "slider.xml", tmp_path / "slider.xml")
    path = tmp_path / "slider.yaml"
    path.write_text(SLIDER.replace("F: {type: Se, effort: f}", "F: {type: Se, effort: 0.2}"))
    tw = Stepped(model=str(path))
    try:
        err = capfd.readouterr().err
    finally:
        tw.close()
    warned = [line for line in err.splitlines() if "changes nothing" in line]
    assert len(warned) == 1, err
    assert "WARN" in warned[0] and "commands.topics./slider/force" in warned[0] and "'f'" in warned[0], warned


def test_refusals_on_two_command_topics_within_a_second_are_both_logged(tmp_path, capfd):
    """One throttle for every command topic let a refusal on /slider/force hide the one on
    /slider/stiffness that came 0.2 s later: each topic now has its own."""
    shutil.copy(DATA / "slider.xml", tmp_path / "slider.xml")
    path = tmp_path / "slider.yaml"
    path.write_text(SLIDER)
    tw = Stepped(model=str(path))
    try:
        force = tw.client.create_publisher(Float64, "/slider/force", 10)
        stiffness = tw.client.create_publisher(Float64, "/slider/stiffness", 10)
        tw.spin(0.5)
        force.publish(Float64(data=math.nan))
        tw.spin(0.2)
        stiffness.publish(Float64(data=-1.0))
        assert tw.spin_until(lambda: tw.node.model_io.refused == 2)
        err = capfd.readouterr().err
    finally:
        tw.close()
    assert "rejected /slider/force" in err and "rejected slider/stiffness" in err, err
    # the engine's words once: "pushed_slider: parameter value(s) k = -1 refused (k enters ...)"
    assert "rejected slider/stiffness: pushed_slider: parameter value(s) k = -1 refused (k enters" in err, err


def test_the_outputs_parameter_publishes_a_python_robots_columns():
    tw = Stepped(model="arm3dof", outputs=["/arm/q1=q1", "arm/joint1/torque=T1"])
    try:
        q1, current = [], []
        tw.listen(Float64, "/arm/q1", q1)
        tw.listen(Float64, "/arm/joint1/torque", current)
        tw.start()
        q1.clear()
        current.clear()
        tw.step(30)
        assert tw.spin_until(lambda: len(q1) >= 30 and len(current) >= 30)
        joints = tw.joints[-30:]
        assert [m.data for m in q1[-30:]] == [m.position[list(m.name).index("q1")] for m in joints]
        assert all(math.isfinite(m.data) for m in current) and np.ptp([m.data for m in current]) > 0
    finally:
        tw.close()


@pytest.mark.parametrize("overrides, message", [
    ({"outputs": ["/arm/q1=no_such_column"]}, "has no column 'no_such_column'"),
    ({"outputs": ["/arm/q1"]}, "is not TOPIC=COLUMN"),
    ({"outputs": ["/arm/1q=q1"]}, "not a ROS topic name"),
    ({"outputs": ["/arm/q=q1", "/arm/q=q2"]}, "given twice"),
    ({"outputs": ["joint_states=q1"]}, "already dynamics_node's joint_states"),
    ({"outputs": ["probe_error/gripper=q1"]}, "already dynamics_node's probe_error/NAME"),
])
def test_bad_outputs_parameters_are_refused_by_name(overrides, message):
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(ValueError, match="invalid dynamics_node parameters") as err:
            DynamicsNode(overrides={"model": "arm3dof", **overrides}, context=context)
        assert message in str(err.value)
    finally:
        rclpy.try_shutdown(context=context)
