"""The node graph over real rclpy topics: probes at equal stamps, state_publisher's TF, the demo's
MCAP bag, and the twin bridge against a stand-in robot."""
import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from geometry_msgs.msg import PointStamped, Twist, Vector3, Vector3Stamped  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from bondsim_ros.paths import share_file  # noqa: E402
from bondsim_ros.ros.graph import make_executor, start_graph  # noqa: E402

PUBLISH_RATE = 33.0


def _collect(node, msg_type, topic, qos=100):
    box = []
    node.create_subscription(msg_type, topic, lambda m: box.append(m), qos)
    return box


def test_probe_points_equal_model_positions_at_equal_stamps(context):
    graph = start_graph({"reference": "rose"}, {}, state_publisher={}, context=context)
    listener = rclpy.create_node("listener", context=context)
    graph.executor.add_node(listener)
    timed = _collect(listener, Float64, "/probe_error/base_center")
    untimed = _collect(listener, Float64, "/probe_error_untimed/base_center")
    points = _collect(listener, PointStamped, "/probes/base_center")
    joints = _collect(listener, JointState, "/joint_states")
    try:
        graph.spin_for(0.5)
        timed.clear(), untimed.clear(), points.clear(), joints.clear()
        graph.spin_for(3.0)
    finally:
        graph.executor.remove_node(listener)
        listener.destroy_node()
        graph.shutdown()

    def stamp(m):
        return m.header.stamp.sec * 10**9 + m.header.stamp.nanosec

    # one point per joint state, at its stamp (a loaded machine may run fewer frames in 3 s of
    # wall time; the frames it ran must each have their point); the last two may still be in flight
    assert len(joints) > 0.5 * 3.0 * PUBLISH_RATE
    point_stamps = {stamp(m) for m in points}
    missing = [stamp(m) for m in joints[:-2] if stamp(m) not in point_stamps]
    assert not missing, f"{len(missing)} of {len(joints)} joint states have no probe point"
    assert points[0].header.frame_id == "odom"
    err = np.array([m.data for m in timed])
    assert len(err) >= len(joints) - 2
    assert err.max() <= 1e-9, f"time-aligned probe error {err.max():.3e} m"
    # the paper's untimed pipe: the model has moved on by a frame (~0.2-0.6 m/s x 30 ms)
    assert np.median([m.data for m in untimed]) > 1e-3


def _compose(tfs, parent, child):
    """parent->child from a {child: (parent, 4x4)} tree."""
    T = np.eye(4)
    frame = child
    while frame != parent:
        up, M = tfs[frame]
        T = M @ T
        frame = up
    return T


def _matrix(tr):
    from transforms3d.quaternions import quat2mat

    M = np.eye(4)
    q = tr.rotation
    M[:3, :3] = quat2mat([q.w, q.x, q.y, q.z])
    M[:3, 3] = [tr.translation.x, tr.translation.y, tr.translation.z]
    return M


def test_state_publisher_tf_tree_reaches_probe_frame(context):
    """odom -> base_footprint (dynamics) + URDF joints (state_publisher) put probe_base_center
    where the mechanism says, and every roller frame moves with its joint."""
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    from bondsim_ros.mechanism.probes import ProbeKinematics

    graph = start_graph({"reference": "rose"}, {}, state_publisher={}, context=context, with_probe=False)
    listener = rclpy.create_node("listener", context=context)
    graph.executor.add_node(listener)
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    static = _collect(listener, TFMessage, "/tf_static", latched)
    description = _collect(listener, String, "/robot_description", latched)
    dynamic = _collect(listener, TFMessage, "/tf")
    joints = _collect(listener, JointState, "/joint_states")
    try:
        graph.spin_for(2.0)
    finally:
        graph.executor.remove_node(listener)
        listener.destroy_node()
        graph.shutdown()
    assert description and "<robot" in description[0].data
    assert static, "no /tf_static"
    js = joints[-5]
    stamp = (js.header.stamp.sec, js.header.stamp.nanosec)
    tree = {t.child_frame_id: (t.header.frame_id, _matrix(t.transform)) for t in static[0].transforms}
    moving = [t for m in dynamic for t in m.transforms if (t.header.stamp.sec, t.header.stamp.nanosec) == stamp]
    tree.update({t.child_frame_id: (t.header.frame_id, _matrix(t.transform)) for t in moving})
    assert {"odom", "base_footprint"} <= {t.header.frame_id for t in moving} | {t.child_frame_id for t in moving}
    kin = ProbeKinematics.from_file(share_file("urdf", "robotino", "Robotino_project.xml"))
    base = tree["base_footprint"][1]
    pose = (base[0, 3], base[1, 3], math.atan2(base[1, 0], base[0, 0]))
    expected = kin.probe_points(pose, dict(zip(js.name, js.position)))["base_center"]
    got = _compose(tree, "odom", "probe_base_center")[:3, 3]
    assert np.allclose(got, expected, atol=1e-9)
    assert len(moving) == 1 + len(js.name), "one transform per moving joint, plus odom -> base_footprint"


def test_demo_bag_holds_every_topic_at_its_rate(tmp_path):
    # the independent reader (the test extra; no rosdep key: `colcon test` on a ROS install skips it)
    make_reader = pytest.importorskip("mcap.reader").make_reader
    DecoderFactory = pytest.importorskip("mcap_ros2.decoder").DecoderFactory

    from bondsim_ros.ros.bag import read_bag
    from bondsim_ros.ros.demo import bag_to_series, record

    duration = 4.0
    stats = record(duration, tmp_path / "bag", rtf=1.0)
    assert stats["overruns"] == 0
    # frames the timer skipped while the process was held up (the node counts them) are not
    # in the bag; every other frame is
    skipped = stats["skipped_frames"]
    msgs = read_bag(tmp_path / "bag")  # rosbags' reader: metadata.yaml + MCAP, CDR decoded without rclpy
    span = duration
    for topic in ("/joint_states", "/odom", "/probes/base_center", "/reference_pose"):
        rate = (len(msgs[topic]) + skipped) / span
        assert abs(rate - PUBLISH_RATE) <= 0.05 * PUBLISH_RATE, f"{topic}: {rate:.1f} Hz, {skipped} frames skipped"
    # /tf: odom -> base_footprint from dynamics_node, the joints from state_publisher
    assert len(msgs["/tf"]) + 2 * skipped >= 2 * 0.95 * PUBLISH_RATE * span
    assert len(msgs["/tf_static"]) == 1 and len(msgs["/robot_description"]) == 1
    assert "<robot" in msgs["/robot_description"][0][1].data
    # message stamps are evenly spaced: every frame is there, but for those the node skipped
    stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in msgs["/joint_states"]])
    grid = stamps[2:]  # the first two frames straddle the restart, which falls between two ticks
    assert round((grid[-1] - grid[0]) * PUBLISH_RATE) - (len(grid) - 1) == skipped
    assert skipped > 0 or np.max(np.diff(stamps)) < 2.5 / PUBLISH_RATE
    # Foxglove's path: the .mcap alone, decoded from its embedded ros2msg schemas
    mcap_files = list((tmp_path / "bag").glob("*.mcap"))
    assert len(mcap_files) == 1
    with open(mcap_files[0], "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        seen = {}
        for _schema, channel, _message, decoded in reader.iter_decoded_messages():
            seen.setdefault(channel.topic, decoded)
    assert list(seen["/joint_states"].name)[:1] == ["wheel1_axle"]
    series = bag_to_series(tmp_path / "bag")
    assert series["x"].shape == series["odom_t"].shape and series["odom_t"][-1] > duration - 0.5


def test_twin_bridge_follows_a_robot_driven_by_the_same_commands(context):
    """A second twin stands in for the real Robotino (its driver topics in /robotinobase1);
    the bridge forwards its commands to the twin and reports their deviation."""
    from bondsim_ros.ros.dynamics_node import DynamicsNode
    from bondsim_ros.ros.twin_bridge import TwinBridge

    common = {"reference": "cmd_vel", "cmd_vel_type": "twist", "cmd_vel_timeout": 1.0, "probes": [""]}
    robot = DynamicsNode(name="robot_driver", overrides=common, namespace="robotinobase1", context=context)
    twin = DynamicsNode(overrides=common, namespace="twin", context=context)
    # the stand-in is a twin in /robotinobase1: its topics, joint names and axle convention
    bridge = TwinBridge(overrides={"robot_cmd_vel": "/robotinobase1/cmd_vel", "robot_odom": "/robotinobase1/odom",
                                   "robot_joint_states": "/robotinobase1/joint_states", "robot_wheel_sign": 1.0,
                                   "robot_wheel_joints": ["wheel1_axle", "wheel2_axle", "wheel3_axle"]},
                        context=context)
    operator = rclpy.create_node("operator", context=context)
    cmd = operator.create_publisher(Twist, "/robotinobase1/cmd_vel", 10)
    pose_dev = _collect(operator, Vector3Stamped, "/twin_bridge/pose_deviation")
    wheel_dev = _collect(operator, JointState, "/twin_bridge/wheel_deviation")
    executor = make_executor(context)
    for n in (robot, twin, bridge, operator):
        executor.add_node(n)
    try:
        end = time.monotonic() + 3.0
        next_cmd = 0.0
        while time.monotonic() < end:
            if time.monotonic() >= next_cmd:
                cmd.publish(Twist(linear=Vector3(x=0.3, y=0.1)))
                next_cmd = time.monotonic() + 0.05
            executor.spin_once(timeout_sec=0.005)
        robot_pose, twin_pose = robot.twin.state().pose, twin.twin.state().pose
    finally:
        executor.shutdown()
        for n in (robot, twin, bridge, operator):
            n.destroy_node()
    assert bridge.forwarded > 40
    assert robot_pose[0] > 0.5 and twin_pose[0] > 0.5, "commands did not reach both"
    assert len(pose_dev) > 30 and len(wheel_dev) > 30
    dev = np.array([[m.vector.x, m.vector.y, m.vector.z] for m in pose_dev[-10:]])
    # the twin receives each command one hop later: a few mm at 0.3 m/s
    assert np.all(np.abs(dev[:, :2]) < 0.02) and np.all(np.abs(dev[:, 2]) < 0.01)
    w = np.array([m.velocity for m in wheel_dev[-10:]])
    assert np.all(np.abs(w) < 0.5)  # rad/s, against wheel speeds of ~7 rad/s


def test_demo_records_the_scan_against_the_floor_walls(tmp_path):
    """The demo's sensor_node scans the walls of the floor the video draws (6.4 m square, 0.1 m
    walls: inner faces at |x| = 3.1 m and |y| = 3.1 m). Every hit rebuilt from the bag alone (the
    scan, the /odom pose of equal stamp, the scanner's mount from /tf_static) lies on a face
    within the range noise (sigma 0.02 m) plus a cell; and /tf_static keeps both publishers'
    frames (the robot's and the sensors')."""
    from bondsim_ros.ros.bag import read_bag
    from bondsim_ros.ros.demo import bag_to_series, demo_world, plot_series, record

    floor = demo_world(None)  # the Robotino's world: the floor its mechanism draws
    assert floor is not None and floor.endswith("robotino_floor.yaml")
    duration = 4.0
    stats = record(duration, tmp_path / "bag", rtf=1.0, sensor_map=floor)
    msgs = read_bag(tmp_path / "bag", ["/scan", "/tf_static", "/bumper", "/odom"])
    children = {tf.child_frame_id for _, m in msgs["/tf_static"] for tf in m.transforms}
    assert {"base_link", "laser_link"} <= children, children
    # a scan at each pose due on the 15 Hz grid of the poses' stamps (sensor_node's rule, replayed
    # on the recorded /odom): frames a loaded machine skipped take their scans with them
    from bondsim_ros.msgutil import stamp_ns
    from bondsim_ros.ros.sensor_node import SensorNode

    due, next_ns = 0, None
    for _, m in msgs["/odom"]:
        now, next_ns = SensorNode._due(stamp_ns(m.header.stamp), next_ns, int(1e9 / 15.0))
        due += now
    assert due >= 0.5 * 15.0 * duration and abs(len(msgs["/scan"]) - due) <= 2, \
        f"{len(msgs['/scan'])} scans for {due} poses due at 15 Hz in {duration} s ({stats['skipped_frames']} skipped)"
    assert not any(m.data for _, m in msgs["/bumper"])  # the rose path stays clear of the walls
    series = bag_to_series(tmp_path / "bag")
    assert len(series["scan_t"]) == len(msgs["/scan"])
    hits = np.concatenate(series["scan_points"])
    assert len(hits) > 0.9 * len(series["scan_t"]) * series["scan_beams"]  # the walls close the room
    off_wall = np.abs(np.max(np.abs(hits), axis=1) - 3.1)
    assert np.max(off_wall) < 0.02 * 5 + 0.05, f"a hit {np.max(off_wall):.3f} m off the walls"
    written = plot_series(series, tmp_path, map_yaml=floor)
    assert tmp_path / "scan.png" in written


def test_demo_frames_run_with_the_start_up_heap_out_of_full_collections(tmp_path, monkeypatch):
    """The first full garbage collection of a run walked every object of the start-up (rclpy,
    the model, the URDF): some 100 ms with the GIL held, a few seconds into every demo, three
    frames skipped. While the frames run, the objects alive at their start are frozen, so a
    full collection walks only what the run made; afterwards the process collects as before."""
    import gc

    from bondsim_ros.ros import _env
    from bondsim_ros.ros.demo import record

    at_run = []
    spin = _env.spin_until_signal  # the demo's frames run in it

    def spin_and_look(*args, **kw):
        at_run.append((gc.get_freeze_count(), len(gc.get_objects())))
        return spin(*args, **kw)

    monkeypatch.setattr(_env, "spin_until_signal", spin_and_look)
    record(1.0, tmp_path / "bag", rtf=1.0)
    frozen, walked = at_run[0]
    assert frozen > 50_000 and walked < 1_000, at_run
    assert gc.get_freeze_count() == 0
