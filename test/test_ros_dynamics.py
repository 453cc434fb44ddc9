"""dynamics_node over real rclpy topics: joint states, odometry, TF, cmd_vel handling."""
import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from geometry_msgs.msg import Twist, TwistStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from bondsim_ros.ros.dynamics_node import DynamicsNode  # noqa: E402


class Harness:
    def __init__(self, executor=SingleThreadedExecutor, **overrides):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = DynamicsNode(overrides=overrides, context=self.context)
        self.probe = rclpy.create_node("test_listener", context=self.context)
        self.executor = executor(context=self.context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        self.joints, self.odom, self.tf = [], [], []
        self.probe.create_subscription(JointState, "/joint_states",
                                       lambda m: self.joints.append((time.monotonic(), m)), 100)
        self.probe.create_subscription(Odometry, "/odom", lambda m: self.odom.append(m), 100)
        self.probe.create_subscription(TFMessage, "/tf", lambda m: self.tf.append(m), 100)

    def spin(self, seconds):
        """Spin for ``seconds``; ``held_up`` is the longest the loop went without coming back
        (a callback's cost, or the process not scheduled)."""
        end = last = time.monotonic()
        end += seconds
        self.held_up = 0.0
        while last < end:
            self.executor.spin_once(timeout_sec=0.005)
            now = time.monotonic()
            self.held_up, last = max(self.held_up, now - last), now

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        self.probe.destroy_node()
        rclpy.shutdown(context=self.context)


@pytest.fixture
def cmd_twin():
    h = Harness(reference="cmd_vel", cmd_vel_type="stamped", publish_rate=33.0, cmd_vel_timeout=0.5)
    yield h
    h.close()


def test_joint_states_names_order_and_rate():
    h = Harness(reference="rose", publish_rate=33.0)
    try:
        h.spin(0.5)  # let discovery settle
        h.joints.clear()
        skipped0 = h.node.frame_clock.skipped_frames
        h.spin(3.0)
        skipped = h.node.frame_clock.skipped_frames - skipped0
        msgs = [m for _, m in h.joints]
        from bondsim_ros.mechanism import load_mechanism
        from bondsim_ros.paths import share_file

        # the converter's joint list of the packaged Robotino, virtual base joints left to /odom
        xml = share_file("urdf", "robotino", "Robotino_project.xml")
        expected = [j.name for j in load_mechanism(xml).joints if not j.virtual]
        assert len(expected) == 21
        assert msgs and msgs[0].name == expected
        assert len(msgs[0].position) == len(msgs[0].velocity) == len(msgs[0].effort) == 21
        stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in msgs])
        rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
        print(f"joint_states rate {rate:.2f} Hz over 3 s, {h.node.frame_clock.overruns} overruns, "
              f"{skipped} frames skipped, process held up for {h.held_up * 1e3:.0f} ms at most")
        # every frame is published, or was skipped because the process was held up for longer
        # than a period (rcl drops the periods a late timer missed) and the node says so
        assert round((stamps[-1] - stamps[0]) * 33.0) - (len(stamps) - 1) == skipped
        assert skipped == 0 or h.held_up > 1 / 33.0, (skipped, h.held_up)
        assert (len(stamps) - 1 + skipped) / (stamps[-1] - stamps[0]) == pytest.approx(33.0, rel=0.05)
        assert np.median(np.diff(stamps)) == pytest.approx(1 / 33.0, rel=0.02)
        # odom and tf carry the same pose at the same stamps
        tf_by_stamp = {}
        for m in h.tf:
            for t in m.transforms:
                if t.child_frame_id == "base_footprint":
                    tf_by_stamp[(t.header.stamp.sec, t.header.stamp.nanosec)] = t
        matched = 0
        for o in h.odom:
            t = tf_by_stamp.get((o.header.stamp.sec, o.header.stamp.nanosec))
            if t is None:
                continue
            matched += 1
            assert t.header.frame_id == o.header.frame_id == "odom"
            assert t.transform.translation.x == o.pose.pose.position.x
            assert t.transform.translation.y == o.pose.pose.position.y
            assert t.transform.rotation.z == o.pose.pose.orientation.z
        assert matched > 50
        # the robot is moving along the rose: the pose changes
        assert abs(h.odom[-1].pose.pose.position.x - h.odom[0].pose.pose.position.x) > 0.05
    finally:
        h.close()


@pytest.mark.parametrize("executor", ["single", "events"])
def test_a_held_up_process_skips_frames_and_the_node_counts_them(executor):
    """rcl runs a timer that is late by several periods once and drops the periods it missed:
    those frames are never published. The node counts each one (none of them is an overrun),
    and says so on /diagnostics."""
    from diagnostic_msgs.msg import DiagnosticArray

    from bondsim_ros.ros.graph import make_executor

    h = Harness(executor=SingleThreadedExecutor if executor == "single" else make_executor,
                reference="rose", publish_rate=33.0)
    diags = []
    h.probe.create_subscription(DiagnosticArray, "/diagnostics", diags.append, 10)
    try:
        h.spin(0.5)
        assert h.node.frame_clock.skipped_frames == 0
        h.joints.clear()
        tic = time.monotonic()
        time.sleep(0.25)  # the process does nothing else: 8.25 periods
        hold = (time.monotonic() - tic) * 33.0  # periods; longer if the machine stalled too
        h.spin(1.5)
        stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in h.joints])
        missing = round((stamps[-1] - stamps[0]) * 33.0) - (len(stamps) - 1)
        skipped = h.node.frame_clock.skipped_frames
        # a stall of the machine after the hold skips frames too: as many as its periods at most
        stall = math.ceil(h.held_up * 33.0) if h.held_up > 1 / 33.0 else 0
        print(f"{executor}: {skipped} frames skipped, {missing} missing from /joint_states, "
              f"largest stamp gap {np.diff(stamps).max() * 33.0:.2f} periods, held {hold:.2f} periods, "
              f"then up to {h.held_up * 33.0:.2f}")
        assert math.floor(hold) - 1 <= skipped <= math.ceil(hold) + stall
        # the frames missing from /joint_states are exactly those the node counted (the events
        # executor runs one catch-up tick right after the late one, which the node counts too)
        assert missing == skipped and np.diff(stamps).max() * 33.0 > 7.5
        status = [st for d in diags for st in d.status if st.name.endswith("/solver")]
        assert status and f"{skipped} frames skipped" in status[-1].message
        assert dict((kv.key, kv.value) for kv in status[-1].values)["frames skipped"] == str(skipped)
    finally:
        h.close()


def test_a_publish_that_blocks_is_an_overrun():
    """The frame's cost is publishing and stepping: a publish held up for longer than a period
    (DDS blocking a writer) counts as an overrun, not as the process being held up elsewhere."""
    h = Harness(reference="rose", publish_rate=33.0)
    try:
        h.spin(0.3)
        overruns, publish = h.node.frame_clock.overruns, h.node.publish_state

        def slow_publish(state):
            h.node.publish_state = publish
            time.sleep(0.05)
            publish(state)

        h.node.publish_state = slow_publish
        h.spin(0.3)
        assert h.node.publish_state is publish  # it ran
        assert h.node.frame_clock.overruns >= overruns + 1
    finally:
        h.close()


def _body_twist(odom):
    return odom.twist.twist.linear.x, odom.twist.twist.linear.y, odom.twist.twist.angular.z


def test_twist_stamped_drives_the_twin_and_silence_stops_it(cmd_twin):
    h = cmd_twin
    pub = h.probe.create_publisher(TwistStamped, "/cmd_vel", 10)
    h.spin(0.5)
    cmd = TwistStamped()
    cmd.twist.linear.x, cmd.twist.linear.y, cmd.twist.angular.z = 0.3, 0.1, 0.4
    end = time.monotonic() + 1.2
    while time.monotonic() < end:  # Nav2 streams commands at 20 Hz
        cmd.header.stamp = h.probe.get_clock().now().to_msg()
        pub.publish(cmd)
        h.spin(0.05)
    vx, vy, wz = _body_twist(h.odom[-1])
    print(f"after 1 s of (0.3, 0.1, 0.4): body twist ({vx:.4f}, {vy:.4f}, {wz:.4f})")
    assert vx == pytest.approx(0.3, rel=0.02)
    assert vy == pytest.approx(0.1, rel=0.02)
    assert wz == pytest.approx(0.4, rel=0.02)
    h.spin(1.5)  # silence: watchdog (0.5 s) brings it to rest
    vx, vy, wz = _body_twist(h.odom[-1])
    assert abs(vx) < 1e-3 and abs(vy) < 1e-3 and abs(wz) < 1e-3


def test_bad_commands_are_rejected_or_clamped_never_fatal():
    h = Harness(reference="cmd_vel", cmd_vel_type="twist", max_linear_velocity=0.5, max_angular_velocity=1.0)
    try:
        pub = h.probe.create_publisher(Twist, "/cmd_vel", 10)
        h.spin(0.5)
        for bad in ((math.nan, 0.0, 0.0), (math.inf, 0.0, 0.0), (1e30, 0.0, 0.0)):
            t = Twist()
            t.linear.x, t.linear.y, t.angular.z = bad
            pub.publish(t)
            h.spin(0.2)
            assert h.node.twin.twist == (0.0, 0.0, 0.0)  # refused outright
        for attr, axis in (("angular", "x"), ("angular", "y"), ("linear", "z")):  # ignored by a planar base,
            for value in (2000.0, math.nan):  # but garbage there marks the whole message
                t = Twist()
                t.linear.x = 0.2
                setattr(getattr(t, attr), axis, value)
                pub.publish(t)
                h.spin(0.2)
                assert h.node.twin.twist == (0.0, 0.0, 0.0), (attr, axis, value)
        t = Twist()
        t.linear.x, t.angular.z = 5.0, -9.0  # too fast: clamped to the limits
        for _ in range(20):
            pub.publish(t)
            h.spin(0.05)
        assert h.node.twin.twist == pytest.approx((0.5, 0.0, -1.0))
        n = len(h.joints)
        h.spin(0.3)
        assert len(h.joints) > n  # still publishing
    finally:
        h.close()


def _cart_on_a_path(folder):
    """The live cart with a path of its own: its recorder also records x_ref, y_ref, phi_ref
    (a circle of radius 0.5 m), the columns a twin reads as its reference."""
    from pathlib import Path

    live = Path(__file__).resolve().parent / "data" / "live"
    text = (live / "cart.yaml").read_text()
    text = text.replace("  rec: {type: Recorder, columns: [X, Y, phi, wheel]}\n",
                        "  rec: {type: Recorder, columns: [X, Y, phi, wheel, x_ref, y_ref, phi_ref]}\n"
                        "  path_x: {type: Input, value: \"0.5*cos(t)\"}\n"
                        "  path_y: {type: Input, value: \"0.5*sin(t)\"}\n"
                        "  path_phi: {type: Input, value: \"t\"}\n")
    text = text.replace("  - [wheel.out, rec.wheel]\n", "  - [wheel.out, rec.wheel]\n  - [path_x.out, rec.x_ref]\n"
                        "  - [path_y.out, rec.y_ref]\n  - [path_phi.out, rec.phi_ref]\n")
    assert "x_ref" in text and "path_x.out" in text
    (folder / "cart.xml").write_text((live / "cart.xml").read_text())
    (folder / "cart_path.yaml").write_text(text)
    return str(folder / "cart_path.yaml")


@pytest.mark.parametrize("overrides, says", [
    ({"model": "cart.yaml"}, "cart ready in"),  # a model of its own: no reference (the default is "rose")
    ({"model": "cart.yaml", "reference": "cmd_vel"}, "reference=cmd_vel)"),
    ({"model": "robotino"}, "reference=rose)"),  # the Robotino's built-in path
    ({"model": "robotino", "reference": "builtin"}, "reference=rose)"),
    ({"model": "cart_path.yaml"}, "reference=builtin)"),  # a path of the model's own is not the rose
])
def test_the_ready_line_names_a_reference_only_where_the_model_has_one(overrides, says, capfd, tmp_path):
    from pathlib import Path

    if overrides["model"] == "cart_path.yaml":
        overrides = {**overrides, "model": _cart_on_a_path(tmp_path)}
    elif overrides["model"].endswith(".yaml"):
        overrides = {**overrides, "model": str(Path(__file__).resolve().parent / "data" / "live" / overrides["model"])}
    h = Harness(**overrides)
    if overrides["model"].endswith("cart_path.yaml"):  # the path is the twin's reference
        assert h.node.twin.state().reference == pytest.approx((0.5, 0.0, 0.0))
    h.close()
    ready = [line for line in capfd.readouterr().err.splitlines() if " ready in " in line]
    assert len(ready) == 1 and says in ready[0], ready
    assert ("reference=" in ready[0]) == ("reference" in says), ready[0]


@pytest.mark.parametrize("overrides, advertised", [
    ({"model": "robotino"}, True),  # the rose the base follows
    ({"model": "cart_path.yaml"}, True),  # a path of the model's own
    ({"model": "robotino", "reference": "cmd_vel"}, False),  # commanded: no reference to show
    ({"model": "arm3dof"}, False),  # a fixed base
])
def test_reference_pose_is_advertised_only_where_there_is_a_reference(overrides, advertised, tmp_path):
    """/reference_pose speaks only where the twin follows a reference; elsewhere the topic, once
    advertised by every node, never said anything (ros2 topic echo waited forever)."""
    if overrides["model"] == "cart_path.yaml":
        overrides = {**overrides, "model": _cart_on_a_path(tmp_path)}
    h = Harness(**overrides)
    try:
        publishers = h.node.count_publishers("/reference_pose")
        h.spin(0.3)
        received = []
        if advertised:
            from geometry_msgs.msg import PoseStamped

            h.probe.create_subscription(PoseStamped, "/reference_pose", received.append, 10)
            h.spin(1.0)
    finally:
        h.close()
    assert publishers == (1 if advertised else 0)
    assert bool(received) == advertised
