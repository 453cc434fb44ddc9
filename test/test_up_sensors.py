"""`bondsim-ros up --sensors [MAP.yaml]`: the twin's laser scan, IR sensors and bumper in the
one-process graph, and velocity commands through bumper_stop, as a user runs it."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from geometry_msgs.msg import Twist, TwistStamped, Vector3  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import LaserScan  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from bondsim_ros.cli import main  # noqa: E402
from bondsim_ros.ros.graph import ParamFile  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_up_sensors_publishes_the_scan_and_passes_commands_on(context, tmp_path):
    """The --params file's sensor_node section applies (a scan without noise); the first command
    after the start moves the twin (it is not lost while types are discovered); a TwistStamped
    publisher after a Twist one drives it on (bumper_stop follows the type)."""
    params = tmp_path / "params.yaml"
    params.write_text("/**/sensor_node:\n  ros__parameters:\n    range_sigma: 0.0\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "up", "--reference", "cmd_vel", "--sensors",
                             "--params", str(params), "--duration", "60"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    node = rclpy.create_node("up_sensors_listener", context=context)
    scans, statics, odoms = [], [], []
    node.create_subscription(LaserScan, "/scan", lambda m: scans.append((time.monotonic(), m)), qos_profile_sensor_data)
    node.create_subscription(TFMessage, "/tf_static", statics.append,
                             QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    node.create_subscription(Odometry, "/odom", odoms.append, 10)
    cmd = node.create_publisher(Twist, "/cmd_vel", 10)
    # TwistStamped on the same topic from another participant (one type per topic and process)
    other = rclpy.Context()
    rclpy.init(context=other)
    stamped_node = rclpy.create_node("up_sensors_stamped", context=other)
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)

    def spin(seconds, until):
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until() and proc.poll() is None:
            executor.spin_once(timeout_sec=0.05)

    def x():
        return odoms[-1].pose.pose.position.x if odoms else None

    try:
        spin(60, lambda: len(scans) >= 45 and cmd.get_subscription_count() > 0)  # imports, build: seconds
        assert len(scans) >= 45, f"{len(scans)} scans"
        first = scans[0][1]
        # one command, as `ros2 topic pub --once` sends it: it holds for cmd_vel_timeout (0.5 s)
        cmd.publish(Twist(linear=Vector3(x=0.4)))
        spin(1.5, lambda: False)
        x_once = x()
        node.destroy_publisher(cmd)
        stamped = stamped_node.create_publisher(TwistStamped, "/cmd_vel", 10)
        end = time.monotonic() + 2.5
        while time.monotonic() < end:
            stamped.publish(TwistStamped(twist=Twist(linear=Vector3(x=0.4))))
            spin(0.05, lambda: False)
        spin(1.0, lambda: False)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
        executor.shutdown()
        node.destroy_node()
        stamped_node.destroy_node()
        rclpy.try_shutdown(context=other)
    assert "sensor_node, bumper_stop running" in out and "Traceback" not in out, out[-3000:]
    assert first.header.frame_id == "laser_link" and len(first.ranges) == 811
    # the arena's +x wall's inner face is at x = 3.0, the scanner 0.12 m ahead of the centre;
    # range_sigma 0 from the file: exact to the ray cast's rounding
    assert first.ranges[405] == pytest.approx(3.0 - 0.12, abs=1e-4)
    times = [t for t, _ in scans[:45]]
    rate = 44 / (times[-1] - times[0])
    assert 7.0 <= rate <= 25.0, f"{rate:.1f} Hz, sensor_node's 15 Hz (bounds for a loaded machine)"
    static = {(t.header.frame_id, t.child_frame_id) for m in statics for t in m.transforms}
    assert ("base_link", "laser_link") in static and ("base_footprint", "base_link") in static
    # 0.4 m/s for 0.5 s, less the wheels' spin-up
    assert x_once is not None and 0.1 < x_once < 0.25, f"the one command moved the twin to x = {x_once}"
    assert x() > x_once + 0.3, f"the TwistStamped commands did not reach the twin: x {x_once} -> {x()}"
    assert scans[-1][1].ranges[405] < first.ranges[405] - 0.4  # the wall seen nearer


@pytest.mark.parametrize("argv,message", [
    (["--sensors", "no_such_map.yaml"], "--sensors no_such_map.yaml: no such map file"),
    (["--model", "arm3dof", "--sensors"], "--sensors: model 'arm3dof' has no planar base"),
])
def test_up_sensors_bad_input_is_named(capfd, argv, message):
    rc = main(["up", *argv, "--duration", "0.5"])
    _, err = capfd.readouterr()
    assert rc == 2 and message in err and "Traceback" not in err, err


def test_the_robotinos_declared_layout_is_the_one_sensor_nodes_defaults_place():
    """`up --sensors`, the demo and the launch files give sensor_node the Robotino's declared
    layout; sensor_node run on its own (`ros2 run`) places its defaults: both must place the same
    sensors."""
    from bondsim_ros.ros.graph import SENSOR_LAYOUT, robot_sensor_layout
    from bondsim_ros.ros.sensor_node import PARAMS

    layout = robot_sensor_layout("robotino")
    assert sorted(layout) == sorted(SENSOR_LAYOUT)
    assert {k: layout[k] for k in SENSOR_LAYOUT} == {k: PARAMS[k][0] for k in SENSOR_LAYOUT}
    assert robot_sensor_layout("omni5dpo") is None  # declares none
    assert robot_sensor_layout(str(ROOT / "test" / "data" / "live" / "cart.yaml")) is None  # a YAML model


def test_up_sensors_places_the_robots_layout_under_the_users_section(capsys):
    from bondsim_ros.ros.commands import _sensor_params

    out = _sensor_params("", {"model": "robotino"}, given=ParamFile([(["sensor_node"], {"footprint_radius": 0.2})]))
    assert out["sensor_node"]["footprint_radius"] == 0.2  # the user's section wins
    assert out["sensor_node"]["ir_radius"] == 0.185 and out["sensor_node"]["laser_pose"] == [0.12, 0.0, 0.25, 0.0]
    assert "warning" not in capsys.readouterr().err


def test_up_sensors_on_a_base_without_a_layout_says_whose_it_places(capsys):
    """A base that declares no layout got the Robotino's laser, IR ring and bumper radius
    without a word."""
    from bondsim_ros.ros.commands import _sensor_params

    out = _sensor_params("", {"model": "omni5dpo"})
    err = capsys.readouterr().err
    assert "warning: --sensors: robot 'omni5dpo' declares no sensor layout" in err, err
    assert "places the Robotino's" in err and "sensor_node section of --params" in err, err
    assert not any(k in out["sensor_node"] for k in ("laser_pose", "ir_radius", "footprint_radius"))
    # the user's own layout for it: no warning
    _sensor_params("", {"model": "omni5dpo"}, given=ParamFile([(["sensor_node"], {"footprint_radius": 0.26})]))
    assert "warning" not in capsys.readouterr().err
