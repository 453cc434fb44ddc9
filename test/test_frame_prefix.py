"""frame_prefix as robot_state_publisher applies it (ros/robot_state_publisher,
src/robot_state_publisher.cpp: publishTransforms/callbackJointState): in front of the frame ids
of the transforms it publishes, never in front of joint names, which it looks up in the URDF
as they are; names the URDF lacks are ignored; a JointState whose name and position arrays
differ in length is ignored whole. dynamics_node must publish names it can find."""
import time
import xml.etree.ElementTree as ET

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from sensor_msgs.msg import JointState  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from bondsim_ros.paths import share_file  # noqa: E402
from bondsim_ros.ros.graph import make_executor  # noqa: E402

URDF = share_file("urdf", "robotino.urdf")


def _urdf_joints():
    root = ET.parse(URDF).getroot()
    return {j.get("name"): j.get("type") for j in root.iter("joint")}


def _spin(executor, seconds, until=None):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until and until()):
        executor.spin_once(timeout_sec=0.02)


def test_twin_namespace_and_prefix_give_unprefixed_joints_and_prefixed_frames(context):
    """The twin launch's pair: dynamics_node and the state publisher in /twin with frame_prefix twin/."""
    from bondsim_ros.ros.dynamics_node import DynamicsNode
    from bondsim_ros.ros.state_publisher import StatePublisher

    dyn = DynamicsNode(overrides={"reference": "rose", "frame_prefix": "twin/", "probes": [""]},
                       namespace="twin", context=context)
    sp = StatePublisher(overrides={"frame_prefix": "twin/"}, namespace="twin", context=context)
    listener = rclpy.create_node("listener", context=context)
    joints, tfs = [], []
    listener.create_subscription(JointState, "/twin/joint_states", joints.append, 50)
    listener.create_subscription(TFMessage, "/tf", tfs.append, 200)
    executor = make_executor(context)
    for n in (dyn, sp, listener):
        executor.add_node(n)
    try:
        _spin(executor, 5.0, until=lambda: len(joints) >= 20)
    finally:
        executor.shutdown()
        for n in (dyn, sp, listener):
            n.destroy_node()
    urdf = _urdf_joints()
    moving = {n for n, t in urdf.items() if t not in ("fixed",)}
    assert joints, "no /twin/joint_states"
    names = list(joints[-1].name)
    assert set(names) <= set(urdf), f"joint names robot_state_publisher cannot find: {sorted(set(names) - set(urdf))}"
    assert "wheel1_axle" in names
    # the state publisher answered with a transform per moving joint, frame ids prefixed
    stamp = joints[-3].header.stamp
    at_stamp = [t for m in tfs for t in m.transforms if t.header.stamp == stamp]
    joint_tfs = [t for t in at_stamp if t.header.frame_id != "twin/odom"]
    assert len(joint_tfs) == len(set(names) & moving) > 0
    assert all(t.header.frame_id.startswith("twin/") and t.child_frame_id.startswith("twin/") for t in at_stamp)
    odom = [t for t in at_stamp if t.header.frame_id == "twin/odom"]
    assert odom and odom[0].child_frame_id == "twin/base_footprint"


def test_state_publisher_looks_joints_up_by_urdf_name_only(context):
    from bondsim_ros.ros.state_publisher import StatePublisher

    sp = StatePublisher(overrides={"frame_prefix": "r1/"}, context=context)
    node = rclpy.create_node("driver", context=context)
    pub = node.create_publisher(JointState, "/joint_states", 10)
    tfs = []
    node.create_subscription(TFMessage, "/tf", tfs.append, 50)
    executor = make_executor(context)
    for n in (sp, node):
        executor.add_node(n)

    def send(names, positions, sec):
        msg = JointState(name=names, position=positions)
        msg.header.stamp.sec = sec
        pub.publish(msg)
        _spin(executor, 2.0, until=lambda: any(t.header.stamp.sec == sec for m in tfs for t in m.transforms))
        _spin(executor, 0.2)
        return [t for m in tfs for t in m.transforms if t.header.stamp.sec == sec]

    try:
        _spin(executor, 1.0, until=lambda: sp.count_subscribers("/tf") > 0 and pub.get_subscription_count() > 0)
        ok = send(["wheel1_axle", "not_a_joint"], [0.5, 1.0], 11)
        prefixed = send(["r1/wheel1_axle"], [0.5], 12)
        invalid = send(["wheel1_axle", "wheel2_axle"], [0.5], 13)
    finally:
        executor.shutdown()
        for n in (sp, node):
            n.destroy_node()
    assert len(ok) == 1, "one transform: wheel1_axle; the unknown name is ignored"
    assert ok[0].header.frame_id.startswith("r1/") and ok[0].child_frame_id.startswith("r1/")
    assert prefixed == [], "a prefixed joint name is not a URDF joint: robot_state_publisher publishes nothing"
    assert invalid == [], "name/position length mismatch: the message is ignored"


def test_up_with_a_namespace_prefixes_every_frame_it_publishes(tmp_path):
    """`bondsim-ros up --namespace robot1 --sensors`: the twin's odometry, the state publisher's
    links, the probes and the sensors' frames all carry robot1/ on the shared /tf and
    /tf_static, as a fleet's robots do; two namespaced twins published the same unprefixed
    odom -> base_footprint there, one tree to tf2 that flickered between them."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from sensor_msgs.msg import LaserScan

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    context = rclpy.Context()
    rclpy.init(context=context)
    listener = rclpy.create_node("prefix_listener", context=context)
    tfs, scans = [], []
    latched = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
    listener.create_subscription(TFMessage, "/tf", tfs.append, 200)
    listener.create_subscription(TFMessage, "/tf_static", tfs.append, latched)
    listener.create_subscription(LaserScan, "/robot1/scan", scans.append, qos_profile_sensor_data)
    executor = make_executor(context)
    executor.add_node(listener)
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "up", "--namespace", "robot1", "--sensors"],
                            env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        frames = set()

        def seen():
            frames.update(f for m in tfs for t in m.transforms for f in (t.header.frame_id, t.child_frame_id))
            tfs.clear()
            return scans and {"robot1/odom", "robot1/base_footprint", "robot1/laser_link"} <= frames

        _spin(executor, 60.0, until=seen)
    finally:
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=30)[1]
        executor.shutdown()
        listener.destroy_node()
        rclpy.try_shutdown(context=context)
    assert proc.returncode == 0, err[-3000:]
    assert scans and frames, (len(scans), frames, err[-3000:])
    assert {"robot1/odom", "robot1/base_footprint", "robot1/laser_link", "robot1/probe_base_center"} <= frames, frames
    assert all(f.startswith("robot1/") for f in frames), sorted(f for f in frames if not f.startswith("robot1/"))
    assert scans[-1].header.frame_id.startswith("robot1/"), scans[-1].header.frame_id


@pytest.mark.parametrize("flag, namespace, from_params, prefix", [
    (None, "robot1", "", "robot1/"), (None, "/fleet/robot1/", "", "fleet/robot1/"), (None, "", "", ""),
    ("", "robot1", "", ""), ("twin/", "robot1", "", "twin/"), (None, "robot1", "mine/", "mine/")])
def test_ups_frame_prefix_follows_the_namespace_unless_given(flag, namespace, from_params, prefix):
    """--frame-prefix (empty: none) wins, then a non-empty frame_prefix of the user's --params,
    then NAMESPACE/."""
    from bondsim_ros.ros.commands import frame_prefix

    assert frame_prefix(flag, namespace, from_params) == prefix
