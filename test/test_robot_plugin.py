"""A new robot as a plug-in, as docs/adding-a-robot.md tells: a two-wheel differential-drive base
from its own small mechanism XML and YAML model, in a temporary folder, registered through a
dist-info's entry_points.txt on sys.path, run live; /cmd_vel and joint_trajectory reach the
models that declare those commands."""
import sys

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from geometry_msgs.msg import Twist  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from bondsim_ros.robots import available, load_robot  # noqa: E402
from live_graph import live_graph  # noqa: E402

DIFFBOT_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<robot id="r-diffbot" name="DiffBot">
  <joint name="base_x">
    <drive type="prismatic_x" virtual="true"/>
    <link id="bx" name="base_x_link"/>
    <joint name="base_y">
      <drive type="prismatic_y" virtual="true"/>
      <link id="by" name="base_y_link"/>
      <joint name="base_phi">
        <drive type="revolute_z" virtual="true"/>
        <link id="chassis" name="base_link"/>
        <cuboid id="body" name="body" lx="0.3" ly="0.25" lz="0.08" mass="2.0"/>
        <assembly id="body_a"><use ref="body"><translation z="0.09"/></use></assembly>
        <render ref="body_a" color="steelblue"/>
        <probe name="nose"><translation x="0.15" z="0.09"/></probe>
        <joint name="wheel_left">
          <translation y="0.15" z="0.05"/>
          <drive type="revolute_y"/>
          <link id="wl" name="wheel_left_link"/>
          <cylinder id="wheel_l" name="left wheel" radius="0.05" length="0.02" axis="y" mass="0.1"/>
          <render ref="wheel_l" color="black"/>
        </joint>
        <joint name="wheel_right">
          <translation y="-0.15" z="0.05"/>
          <drive type="revolute_y"/>
          <link id="wr" name="wheel_right_link"/>
          <cylinder id="wheel_r" name="right wheel" radius="0.05" length="0.02" axis="y" mass="0.1"/>
          <render ref="wheel_r" color="black"/>
        </joint>
      </joint>
    </joint>
  </joint>
</robot>
"""

# wheel speeds -> unicycle kinematics; the twist variant takes (v, w) as run-time parameters
DIFFBOT_YAML = """\
model: diffbot
parameters: {r: 0.05, b: 0.3, v_cmd: 0.0, w_cmd: 0.0}
components:
  wl: {type: Input, value: "WL"}
  wr: {type: Input, value: "WR"}
  th_l: {type: Integrator}
  th_r: {type: Integrator}
  yaw_rate: {type: Function, expr: "r*(u_r - u_l)/b", inputs: [u_l, u_r]}
  phi: {type: Integrator}
  vx: {type: Function, expr: "r*(u_l + u_r)/2*cos(p)", inputs: [u_l, u_r, p]}
  vy: {type: Function, expr: "r*(u_l + u_r)/2*sin(p)", inputs: [u_l, u_r, p]}
  X: {type: Integrator}
  Y: {type: Integrator}
  rec: {type: Recorder, columns: [theta_l, theta_r, x, y, yaw]}
signals:
  - [wl.out, th_l.in_, yaw_rate.u_l, vx.u_l, vy.u_l]
  - [wr.out, th_r.in_, yaw_rate.u_r, vx.u_r, vy.u_r]
  - [yaw_rate.out, phi.in_]
  - [phi.out, vx.p, vy.p, rec.yaw]
  - [vx.out, X.in_]
  - [vy.out, Y.in_]
  - [th_l.out, rec.theta_l]
  - [th_r.out, rec.theta_r]
  - [X.out, rec.x]
  - [Y.out, rec.y]
"""

# a block on a rail whose position follows its reference through a first-order tracking loop
SLIDE_YAML = """\
model: slidebot
parameters: {q_ref: 0.0, qd_ref: 0.0, k: 20.0}
components:
  law: {type: Function, expr: "qd_ref + k*(q_ref - u)", inputs: [u]}
  q: {type: Integrator}
  rec: {type: Recorder, columns: [slide_q]}
signals:
  - [law.out, q.in_]
  - [q.out, law.u, rec.slide_q]
"""

SLIDE_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<robot id="r-slidebot" name="SlideBot">
  <cuboid id="rail" name="rail" lx="1.0" ly="0.04" lz="0.02"/>
  <render ref="rail" color="dimgray"/>
  <joint name="slide">
    <drive type="prismatic_x"/>
    <link id="block_frame" name="block"/>
    <cuboid id="block" name="block" lx="0.1" ly="0.1" lz="0.1" mass="1.0"/>
    <render ref="block" color="steelblue"/>
    <probe name="block_top"><translation z="0.05"/></probe>
  </joint>
</robot>
"""

PLUGIN = '''\
"""diffbot: a third-party robot plug-in for bondsim_ros."""
from pathlib import Path

from bondsim_ros.bondgraph.yamlmodel import loads_model
from bondsim_ros.robots import model_robot

HERE = Path(__file__).parent
TEXT = (HERE / "diffbot.yaml").read_text()


def builtin():  # the built-in reference: 2 and 3 rad/s
    return loads_model(TEXT.replace('"WL"', "2.0").replace('"WR"', "3.0"), "diffbot.yaml")


def twist():  # body twist (v, w) -> wheel speeds
    return loads_model(TEXT.replace('"WL"', '"(v_cmd - w_cmd*b/2)/r"').replace('"WR"', '"(v_cmd + w_cmd*b/2)/r"'),
                       "diffbot.yaml")


def slide():
    return loads_model((HERE / "slidebot.yaml").read_text(), "slidebot.yaml")


def SLIDEBOT():
    return model_robot("slidebot", "a block on a rail", slide, HERE / "slidebot.xml", {"slide": "slide_q"},
                       command_models={"trajectory": (slide, {"slide": ("q_ref", "qd_ref")})})


def ROBOT():
    return model_robot("diffbot", "two-wheel differential drive", builtin, HERE / "diffbot.xml",
                       {"wheel_left": "theta_l", "wheel_right": "theta_r"}, base={"x": "x", "y": "y", "yaw": "yaw"},
                       command_models={"twist": (twist, {"vx": "v_cmd", "vy": None, "wz": "w_cmd"})})
'''


@pytest.fixture
def diffbot_installed(tmp_path, monkeypatch):
    pkg = tmp_path / "diffbot_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(PLUGIN)
    (pkg / "diffbot.xml").write_text(DIFFBOT_XML)
    (pkg / "diffbot.yaml").write_text(DIFFBOT_YAML)
    (pkg / "slidebot.xml").write_text(SLIDE_XML)
    (pkg / "slidebot.yaml").write_text(SLIDE_YAML)
    info = tmp_path / "diffbot_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: diffbot-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[bondsim_ros.robots]\ndiffbot = diffbot_plugin:ROBOT\n"
                                           "slidebot = diffbot_plugin:SLIDEBOT\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("diffbot_plugin", None)


def spin_graph(dyn, seconds, setup=None):
    with live_graph({"publish_rate": 33.0, **dyn}, "plugin_listener", state_publisher={}) as (graph, node):
        joints = []
        node.create_subscription(JointState, "/joint_states", joints.append, 1000)
        assert graph.spin_until(lambda: len(joints) > 3, timeout=30.0), "no joint states"
        out = setup(graph, node, joints) if setup else None
        graph.spin_for(seconds)
        return joints, graph.nodes["dynamics_node"], out


def test_a_registered_plugin_runs_live(diffbot_installed):
    assert "diffbot" in available()
    robot = load_robot("diffbot")
    assert robot.commands == ("twist",)
    joints, dn, _ = spin_graph({"model": "diffbot"}, 1.0)
    assert list(joints[-1].name) == ["wheel_left", "wheel_right"]
    # the built-in reference: wheel angles 2 t and 3 t at the simulated instant
    t = dn.frame_clock.sim_time_of_stamp(joints[-1].header.stamp.sec * 1_000_000_000 + joints[-1].header.stamp.nanosec)
    assert joints[-1].position[0] == pytest.approx(2.0 * t, abs=1e-6)
    assert joints[-1].position[1] == pytest.approx(3.0 * t, abs=1e-6)


def test_cmd_vel_moves_the_plugin_base(diffbot_installed):
    """/cmd_vel v = 0.3 m/s, w = 0.5 rad/s: after 1 s the body twist is the command (within 2 %)."""
    def setup(graph, node, joints):
        pub = node.create_publisher(Twist, "/cmd_vel", 10)
        msg = Twist()
        msg.linear.x, msg.angular.z = 0.3, 0.5
        timer = node.create_timer(0.05, lambda: pub.publish(msg))
        return timer

    joints, dn, _ = spin_graph({"model": "diffbot", "reference": "cmd_vel"}, 2.0, setup)
    assert dn.twin.twist == pytest.approx((0.3, 0.0, 0.5))
    # wheel speeds from the published angles over the last frames: (v -+ w b/2) / r
    a, b = joints[-10], joints[-1]
    dt = dn.frame_clock.sim_time_of_stamp(b.header.stamp.sec * 10**9 + b.header.stamp.nanosec) - \
        dn.frame_clock.sim_time_of_stamp(a.header.stamp.sec * 10**9 + a.header.stamp.nanosec)
    wl, wr = ((b.position[k] - a.position[k]) / dt for k in (0, 1))
    assert wl == pytest.approx((0.3 - 0.5 * 0.15) / 0.05, rel=0.02)
    assert wr == pytest.approx((0.3 + 0.5 * 0.15) / 0.05, rel=0.02)


def test_joint_trajectory_brings_the_joint_to_its_goal(diffbot_installed):
    """A JointTrajectory on joint_trajectory (0.1 m at 0.5 s, 0.2 m at 1 s): interpolated, tracked,
    the goal held: within 1 mm (the joint is prismatic) 1 s after the trajectory ends, and on
    the way the joint passes the first point."""
    sent = {}

    def setup(graph, node, joints):
        pub = node.create_publisher(JointTrajectory, "/joint_trajectory", 10)
        graph.spin_until(lambda: pub.get_subscription_count() > 0, timeout=5.0)
        msg = JointTrajectory(joint_names=["slide"])
        for t, q in ((0.5, 0.1), (1.0, 0.2)):
            pt = JointTrajectoryPoint(positions=[q], velocities=[0.0])
            pt.time_from_start.sec, pt.time_from_start.nanosec = int(t), int(round((t % 1) * 1e9))
            msg.points.append(pt)
        pub.publish(msg)
        sent["n"] = len(joints)

    joints, dn, _ = spin_graph({"model": "slidebot", "reference": "joint_trajectory"}, 2.6, setup)
    after = joints[sent["n"]:]
    clock = dn.frame_clock
    ts = np.array([clock.sim_time_of_stamp(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec) for m in after])
    q = np.array([m.position[0] for m in after])
    assert q[0] == pytest.approx(0.0, abs=1e-9)  # held where it was until the trajectory came
    moved = ts[q > 1e-6]
    assert len(moved), "the joint never moved"
    start = moved[0] - 0.04  # the trajectory starts at the frame that applied it
    end = start + 1.0
    late = ts >= end + 1.0
    assert late.any(), f"ran only to {ts[-1]:.2f} s (trajectory ends at {end:.2f} s)"
    assert np.max(np.abs(q[late] - 0.2)) <= 1e-3
    assert np.max(q) <= 0.2 + 1e-3  # Hermite with zero end velocity: no overshoot of the goal
