"""sensor_node and bumper_stop on real rclpy: a moving pose source drives towards the packaged
arena's wall (config/maps/rcll_arena.yaml, inner face at x = 3.0 m); the scans, IR sensors and
bumper must say where the wall is at each pose's stamp, and a contact must zero the commands."""
import math
import re
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from geometry_msgs.msg import Twist, TwistStamped, Vector3  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import LaserScan, PointCloud  # noqa: E402
from std_msgs.msg import Bool  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from bondsim_ros.ros.graph import make_executor  # noqa: E402

WALL = 3.0  # inner face of the arena's +x wall
LASER_X = 0.12  # sensor_node's default laser_pose x
R = 0.185


def _spin(executor, seconds, until=None):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until and until()):
        executor.spin_once(timeout_sec=0.01)


def _ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def test_sensor_node_follows_a_moving_pose(context):
    from bondsim_ros.ros.sensor_node import SensorNode

    sensors = SensorNode(overrides={"range_sigma": 0.0, "frame_prefix": "r1/", "map_to_odom": [1.0, 0.0, 0.0]},
                         context=context)
    node = rclpy.create_node("pose_source", context=context)
    pub = node.create_publisher(Odometry, "odom", 10)
    scans, ir_scans, ir_clouds, bumps, statics = [], [], [], [], []
    node.create_subscription(LaserScan, "scan", scans.append, qos_profile_sensor_data)
    node.create_subscription(LaserScan, "irsensor_scan", ir_scans.append, 50)
    node.create_subscription(PointCloud, "irsensor_pcl", ir_clouds.append, 50)
    node.create_subscription(Bool, "bumper", bumps.append, 50)
    node.create_subscription(TFMessage, "/tf_static", statics.append,
                             QoSProfile(depth=5, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    executor = make_executor(context)
    for n in (sensors, node):
        executor.add_node(n)
    # odom x(t) = 0.5 m/s * t from the map's x = 1.0: the footprint meets the wall at odom x = 1.815
    poses = {}
    t0 = 1_000_000_000_000
    try:
        _spin(executor, 1.0, until=lambda: pub.get_subscription_count() > 0 and statics)
        for k in range(140):  # 30 ms frames: 4.2 s of simulated time, sent ten times faster
            stamp_ns = t0 + k * 30_000_000
            msg = Odometry()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
            msg.header.frame_id, msg.child_frame_id = "r1/odom", "r1/base_footprint"
            x = min(0.5 * k * 0.03, 1.9)
            msg.pose.pose.position.x = x
            msg.pose.pose.orientation.w = 1.0
            poses[stamp_ns] = 1.0 + x
            pub.publish(msg)
            _spin(executor, 0.003)
        _spin(executor, 1.0, until=lambda: bumps and bumps[-1].data and len(scans) >= 55)
    finally:
        executor.shutdown()
        for n in (sensors, node):
            n.destroy_node()

    assert len(scans) >= 55, f"{len(scans)} scans for 4.2 s of poses at 15 Hz"
    s = scans[0]
    assert s.header.frame_id == "r1/laser_link"
    assert len(s.ranges) == 811
    assert s.angle_min == pytest.approx(math.radians(-135)) and s.angle_max == pytest.approx(math.radians(135))
    assert s.angle_increment == pytest.approx(math.radians(1 / 3))
    assert (s.range_min, s.range_max) == pytest.approx((0.05, 25.0))
    # every beam is cast from the pose at the stamp: no time between beams for a consumer that
    # undistorts a moving scanner's scan to interpolate over
    assert s.scan_time == pytest.approx(1 / 15) and s.time_increment == 0.0
    stamps = [_ns(m.header.stamp) for m in scans]
    assert all(st in poses for st in stamps), "a scan stamped with no pose's stamp"
    # 15 Hz on the poses' 30 ms frames: each scan takes the first pose at or after its instant
    gaps = [(b - a) / 1e9 for a, b in zip(stamps, stamps[1:])]
    assert set(round(g, 6) for g in gaps) <= {0.06, 0.09}
    assert (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 1e9) == pytest.approx(15.0, rel=0.05)
    for m in scans:  # the forward beam: wall face minus the scanner's position, at that stamp's pose
        # (-inf, REP 117's "too close", nearer than range_min: the pose source drives on into the wall)
        ahead = max(WALL - poses[_ns(m.header.stamp)] - LASER_X, 0.0)
        assert m.ranges[405] == (pytest.approx(ahead, abs=1e-5) if ahead >= s.range_min else -math.inf)
        # the beam at +45 deg: the x = 3.0 wall too (the boxes and the y = 3.0 wall are farther)
        diagonal = ahead * math.sqrt(2)
        assert m.ranges[405 + 135] == (pytest.approx(diagonal, abs=1e-4) if diagonal >= s.range_min else -math.inf)

    # IR sensors as rto_node publishes them: range from the centre = radius + reading
    assert ir_scans and ir_scans[0].header.frame_id == "r1/irscan_link" and len(ir_scans[0].ranges) == 9
    assert ir_scans[0].angle_increment == pytest.approx(math.radians(40))
    assert (ir_scans[0].range_min, ir_scans[0].range_max) == pytest.approx((0.05, 0.65))
    for m in ir_scans:
        x = poses[_ns(m.header.stamp)]
        reading = min(max(WALL - x - R, 0.04), 0.30)
        assert m.ranges[0] == pytest.approx(R + reading, abs=1e-6)
    assert any(m.ranges[0] < R + 0.30 - 1e-3 for m in ir_scans), "the wall never came within 30 cm"
    c = ir_clouds[-1]
    assert c.header.frame_id == "r1/irpcl_link" and len(c.points) == 9
    assert c.points[2].x == pytest.approx((R + 0.30) * math.cos(math.radians(80)), abs=1e-6)
    assert c.points[2].z == pytest.approx(0.05)

    # the bumper: false until the footprint reaches the wall, then true
    assert bumps[0].data is False and bumps[-1].data is True
    first_true = next(i for i, b in enumerate(bumps) if b.data)
    assert all(not b.data for b in bumps[:first_true])

    frames = {(t.header.frame_id, t.child_frame_id): t for m in statics for t in m.transforms}
    laser = frames[("r1/base_link", "r1/laser_link")].transform.translation
    assert (laser.x, laser.z) == pytest.approx((0.12, 0.25))
    # the IR frames where the driver's robotino_tfbroadcaster.launch.py puts them: 0.05 m up
    for child in ("r1/irscan_link", "r1/irpcl_link"):
        t = frames[("r1/base_link", child)].transform
        assert (t.translation.x, t.translation.y, t.translation.z, t.rotation.w) == pytest.approx((0, 0, 0.05, 1))


def test_bumper_stop_zeroes_commands_for_the_timeout(context):
    from bondsim_ros.ros.bumper_stop import BumperStop

    gate = BumperStop(overrides={"bumper_timeout": 0.6}, context=context)
    node = rclpy.create_node("commander", context=context)
    cmd = node.create_publisher(Twist, "cmd_vel", 10)
    bumper = node.create_publisher(Bool, "bumper", 10)
    out = []
    node.create_subscription(TwistStamped, "cmd_vel_bumper",  # cmd_vel_out_type's default
                             lambda m: out.append((time.monotonic(), m.twist.linear.x)), 50)
    executor = make_executor(context)
    for n in (gate, node):
        executor.add_node(n)

    def drive(seconds, contact=None):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if contact is not None:
                bumper.publish(Bool(data=contact))
            cmd.publish(Twist(linear=Vector3(x=0.3)))
            _spin(executor, 0.02)

    try:
        _spin(executor, 2.0, until=lambda: gate.cmd_vel.kind is not None and gate.pub.get_subscription_count() > 0)
        assert gate.cmd_vel.kind == "twist"  # auto: the publisher's type
        drive(0.5, contact=False)
        assert out and all(v == 0.3 for _, v in out)
        n_before = len(out)
        t_hit = time.monotonic()
        drive(1.6, contact=True)  # contact held: not a new stop every message, but again after two timeouts
        during = [(t - t_hit, v) for t, v in out[n_before:]]
    finally:
        executor.shutdown()
        for n in (gate, node):
            n.destroy_node()
    zeros = [t for t, v in during if v == 0.0]
    assert zeros and zeros[0] < 0.1, "no zero command right after the contact"
    assert all(v == 0.0 for t, v in during if 0.05 < t < 0.55), "a command passed while holding"
    # the driver's timing (OmniDriveROS): free to back away for one more timeout, then a contact
    # message stops it again (the bumper still pressed: it once waited for a release)
    assert all(v == 0.3 for t, v in during if 0.7 < t < 1.15), "commands still held after the timeout"
    assert any(v == 0.0 for t, v in during if 1.2 < t < 1.45), "the contact still held did not stop it again"
    assert gate.stops == 2


def test_a_bumper_contact_stops_the_twin():
    """The wiring the launch files use: Nav2 (here a commander) -> cmd_vel -> bumper_stop ->
    cmd_vel_bumper -> dynamics_node (cmd_vel_topic), sensor_node on the twin's odom. Driven at
    0.3 m/s towards the wall, the Robotino twin comes to rest after its bumper touches."""
    from live_graph import live_graph

    from bondsim_ros.ros.bumper_stop import BumperStop
    from bondsim_ros.ros.sensor_node import SensorNode

    start = 2.3  # map x of odom's origin: the footprint touches the wall at odom x = 3.0 - 0.185 - 2.3
    touch = WALL - R - start
    dyn = {"reference": "cmd_vel", "cmd_vel_type": "stamped", "cmd_vel_topic": "cmd_vel_bumper"}
    with live_graph(dyn, "commander", with_probe=False) as (graph, node):
        ctx = graph.context
        extra = [SensorNode(overrides={"map_to_odom": [start, 0.0, 0.0]}, context=ctx),
                 BumperStop(overrides={"bumper_timeout": 30.0, "cmd_vel_type": "twist"}, context=ctx)]
        for n in extra:
            graph.executor.add_node(n)
            graph.nodes[n.get_name()] = n
        cmd = node.create_publisher(Twist, "cmd_vel", 10)
        odom, bumps = [], []
        node.create_subscription(Odometry, "odom", odom.append, 100)
        node.create_subscription(Bool, "bumper", bumps.append, 50)
        end = time.monotonic() + 12.0
        while time.monotonic() < end and not (bumps and bumps[-1].data):
            cmd.publish(Twist(linear=Vector3(x=0.3)))
            graph.spin_for(0.05)
        assert bumps and bumps[-1].data, f"no contact; odom x reached {odom[-1].pose.pose.position.x if odom else None}"
        n_contact = len(odom)
        for _ in range(30):  # 1.5 s more of commands, now held at zero by bumper_stop
            cmd.publish(Twist(linear=Vector3(x=0.3)))
            graph.spin_for(0.05)
    x_contact = odom[n_contact - 1].pose.pose.position.x
    assert x_contact == pytest.approx(touch, abs=0.02)  # the contact came where the map says
    last = odom[-1]
    assert abs(last.twist.twist.linear.x) < 0.01, "still moving 1.5 s after the contact"
    assert last.pose.pose.position.x - x_contact < 0.1  # stopped within a few centimetres


def test_pose_from_tf_and_bad_parameters(context, tmp_path):
    """pose_source tf: odom -> base_footprint on /tf, as probe_node reads it; a bad parameter or map
    stops the node with a message naming it."""
    from geometry_msgs.msg import TransformStamped

    from bondsim_ros.ros.sensor_node import SensorNode
    from bondsim_ros.sensors import MapError

    sensors = SensorNode(overrides={"range_sigma": 0.0, "pose_source": "tf"}, context=context)
    node = rclpy.create_node("tf_source", context=context)
    pub = node.create_publisher(TFMessage, "/tf", 10)
    scans = []
    node.create_subscription(LaserScan, "scan", scans.append, qos_profile_sensor_data)
    executor = make_executor(context)
    for n in (sensors, node):
        executor.add_node(n)
    try:
        _spin(executor, 1.0, until=lambda: pub.get_subscription_count() > 0)
        tf = TransformStamped()
        tf.header.frame_id, tf.child_frame_id = "odom", "base_footprint"
        tf.header.stamp.sec = 5
        tf.transform.translation.y = 0.4
        tf.transform.rotation.z, tf.transform.rotation.w = math.sin(math.pi / 4), math.cos(math.pi / 4)  # +90 deg
        other = TransformStamped()  # another robot's transform: ignored
        other.header.frame_id, other.child_frame_id = "odom", "r2/base_footprint"
        other.transform.rotation.w = 1.0
        pub.publish(TFMessage(transforms=[other, tf]))
        _spin(executor, 2.0, until=lambda: scans)
    finally:
        executor.shutdown()
        for n in (sensors, node):
            n.destroy_node()
    assert len(scans) == 1 and scans[0].header.stamp.sec == 5
    # facing +y from y = 0.4 with the scanner 0.12 m ahead: the y = 3.0 wall at 3.0 - 0.52
    assert scans[0].ranges[405] == pytest.approx(3.0 - 0.52, abs=1e-5)

    with pytest.raises(ValueError, match=re.escape("pose_source: odom | tf, got 'gps'")):
        SensorNode(overrides={"pose_source": "gps"}, context=context)
    with pytest.raises(ValueError, match="range_min < range_max"):
        SensorNode(overrides={"range_min": 30.0}, context=context)
    bad = tmp_path / "bad.yaml"
    bad.write_text("image: x.pgm\nresolution: 0.05\norigin: [0, 0]\nnegate: 0\n"
                   "occupied_thresh: 0.65\nfree_thresh: 0.2\n")
    with pytest.raises(MapError, match=r"invalid sensor_node parameters: map: .*bad\.yaml:3: origin: "
                                       r"must be \[x, y, yaw\] with 3 elements, not 2"):
        SensorNode(overrides={"map": str(bad)}, context=context)


def test_a_non_finite_pose_gives_no_reading_and_the_node_goes_on(context, tmp_path):
    """A diverged twin's NaN odometry: the callback raised (the node died) and the laser read free
    space. A map file that is no UTF-8 text is named, as any bad map."""
    from builtin_interfaces.msg import Time

    from bondsim_ros.ros.sensor_node import SensorNode
    from bondsim_ros.sensors import MapError

    sensors = SensorNode(overrides={"range_sigma": 0.0}, context=context)
    try:
        sensors.sense(Time(sec=1), (math.nan, 0.0, 0.0))
        sensors.sense(Time(sec=2), (0.0, math.inf, 0.0))
        assert sensors.scans == 0 and sensors.contact is None
        sensors.sense(Time(sec=3), (0.0, 0.0, 0.0))
        assert sensors.scans == 1 and sensors.contact is False
    finally:
        sensors.destroy_node()
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"# caf\xe9\nimage: x.pgm\n")
    with pytest.raises(MapError, match=r"invalid sensor_node parameters: map: .*latin1\.yaml: not a text file"):
        SensorNode(overrides={"map": str(bad)}, context=context)


def test_bumper_stop_output_type_clash_is_named(context):
    """A twin in this process already subscribed to cmd_vel_out as Twist: bumper_stop's TwistStamped
    publisher cannot exist beside it (one type per topic and process); the error names the
    parameter to change instead of rcl's "incompatible type"."""
    from bondsim_ros.ros.bumper_stop import BumperStop

    twin = rclpy.create_node("twin_stand_in", context=context)
    twin.create_subscription(Twist, "cmd_vel_bumper", lambda m: None, 10)
    try:
        with pytest.raises(ValueError, match=r"cmd_vel_out_type: stamped, but this process already has "
                                             r"cmd_vel_bumper as the other type"):
            BumperStop(context=context)
        gate = BumperStop(overrides={"cmd_vel_out_type": "twist"}, context=context)  # the same type: fine
        gate.destroy_node()
    finally:
        twin.destroy_node()


def test_the_docs_list_every_sensor_node_and_bumper_stop_parameter():
    """docs/ros.md's parameter tables of the two nodes name exactly their PARAMS."""
    from bondsim_ros.ros import bumper_stop, sensor_node

    text = (Path(__file__).resolve().parents[1] / "docs" / "ros.md").read_text()
    part = text[text.index("**Parameters** (the `PARAMS` tables of `bondsim_ros/ros/sensor_node.py`"):]
    sensor, bumper = part.split("\nbumper_stop:\n", 1)
    bumper = bumper[:bumper.index("\n\n", bumper.index("|---"))]

    def names(table):
        rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
        return {n.strip().strip("`") for row in rows for n in row.split(",")}

    assert names(sensor) == set(sensor_node.PARAMS)
    assert names(bumper) == set(bumper_stop.PARAMS)
