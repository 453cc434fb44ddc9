"""Each launch file run for real: launch.LaunchService (the engine of `ros2 launch`), the real
bondsim_ros nodes, and stand-ins for the third-party executables (robot_state_publisher, rviz2,
tf2_ros, the Nav2 servers) under an AMENT_PREFIX_PATH prefix. A stand-in records the arguments
and parameter files it was started with; the test then checks what the real program would
get: a URDF check_urdf accepts, parameters rcl parses as set, joint names it can find.

nav2_bringup's navigation_launch.py (included by robotino_nav2.launch.py) is replaced by a
stand-in that starts what the real one starts (jazzy 1.3.13 / kilted 1.4.2: the ten servers of
its `lifecycle_nodes` with the params_file, and lifecycle_manager_navigation managing them) —
without RewrittenYaml, which with the default empty namespace passes the file through.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
pytest.importorskip("launch_ros",
                    reason="launch/launch_ros wheels not installed (tools/setup.sh with ../shared/wheels)")
from rcl_params import rcl_parameters  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
MAX_SECONDS = 90.0  # the runner stops as soon as the joint states flow

NAV2_SERVERS = [("nav2_controller", "controller_server", "controller_server"),
                ("nav2_smoother", "smoother_server", "smoother_server"),
                ("nav2_planner", "planner_server", "planner_server"),
                ("nav2_route", "route_server", "route_server"),
                ("nav2_behaviors", "behavior_server", "behavior_server"),
                ("nav2_velocity_smoother", "velocity_smoother", "velocity_smoother"),
                ("nav2_collision_monitor", "collision_monitor", "collision_monitor"),
                ("nav2_bt_navigator", "bt_navigator", "bt_navigator"),
                ("nav2_waypoint_follower", "waypoint_follower", "waypoint_follower"),
                ("opennav_docking", "opennav_docking", "docking_server")]
STAND_INS = [("robot_state_publisher", "robot_state_publisher"), ("rviz2", "rviz2"),
             ("tf2_ros", "static_transform_publisher"), ("nav2_map_server", "map_server"),
             ("nav2_lifecycle_manager", "lifecycle_manager"),
             ("nav2_amcl", "amcl")] + [(p, e) for p, e, _ in NAV2_SERVERS]
# stand-ins that behave as their programs where the tests rely on it (test/nav2_stand_ins.py)
BEHAVING = ("robot_state_publisher", "static_transform_publisher", "map_server", "amcl", "lifecycle_manager",
            "controller_server", "planner_server")
# what the stand-ins' real programs publish (robot_state_publisher: robot_description latched, tf, tf_static)
THIRD_PARTY_PUBLISHES = {"robot_state_publisher": ["robot_description", "/tf", "/tf_static"]}

STAND_IN = """#!{python}
import json, os, signal, sys, time
args = sys.argv[1:]
rec = {{"package": {package!r}, "executable": {executable!r}, "argv": args, "params_files": {{}},
       "discovery_range": os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE")}}
for i, a in enumerate(args[:-1]):
    if a == "--params-file":
        with open(args[i + 1]) as f:
            rec["params_files"][args[i + 1]] = f.read()
path = os.path.join(os.environ["STAND_IN_RECORDS"], f"{package}__{executable}__{{os.getpid()}}.json")
with open(path, "w") as f:
    json.dump(rec, f)
if {executable!r} in {behaving!r}:  # behaves as the real program where the tests rely on it
    sys.path.insert(0, {here!r})
    import nav2_stand_ins
    nav2_stand_ins.main(rec, path)
    sys.exit(0)
signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
while True:
    time.sleep(1)
"""

NAVIGATION_LAUNCH = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

SERVERS = {servers!r}


def generate_launch_description():
    params_file = LaunchConfiguration("params_file")
    use_sim_time = LaunchConfiguration("use_sim_time")
    remappings = [("/tf", "tf"), ("/tf_static", "tf_static")]
    cmd_vel_nav = {{"controller_server", "behavior_server", "velocity_smoother"}}
    return LaunchDescription(
        [DeclareLaunchArgument("params_file"), DeclareLaunchArgument("use_sim_time", default_value="false"),
         DeclareLaunchArgument("autostart", default_value="true")]
        + [Node(package=p, executable=e, name=n, parameters=[params_file, {{"use_sim_time": use_sim_time}}],
                remappings=remappings + ([("cmd_vel", "cmd_vel_nav")] if n in cmd_vel_nav else []))
           for p, e, n in SERVERS]
        + [Node(package="nav2_lifecycle_manager", executable="lifecycle_manager", name="lifecycle_manager_navigation",
                parameters=[{{"autostart": True, "node_names": [n for _, _, n in SERVERS]}}])])
'''

RVIZ_LAUNCH = '''
import os
from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    view = os.path.join(get_package_share_directory("nav2_bringup"), "rviz", "nav2_default_view.rviz")
    return LaunchDescription([Node(package="rviz2", executable="rviz2", arguments=["-d", view])])
'''


def _package(prefix: Path, name: str) -> Path:
    (prefix / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True, exist_ok=True)
    (prefix / "share" / "ament_index" / "resource_index" / "packages" / name).write_text("")
    share = prefix / "share" / name
    share.mkdir(parents=True, exist_ok=True)
    if not (share / "package.xml").exists():
        (share / "package.xml").write_text(f'<package format="3"><name>{name}</name><version>0.0.0</version>'
                                           f'<description>stand-in</description><maintainer email="a@b.c">t'
                                           f'</maintainer><license>none</license></package>')
    return share


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """An install prefix: bondsim_ros (this tree's launch/config/urdf, real node executables),
    the stand-ins, and a stand-in nav2_bringup share."""
    pre = tmp_path_factory.mktemp("prefix")
    share = _package(pre, "bondsim_ros")
    for folder in ("launch", "config", "urdf"):
        (share / folder).symlink_to(ROOT / folder)
    (share / "package.xml").unlink()
    (share / "package.xml").symlink_to(ROOT / "package.xml")
    lib = pre / "lib" / "bondsim_ros"
    lib.mkdir(parents=True)
    for exe in ("dynamics_node", "probe_node", "twin_bridge", "state_publisher", "sensor_node", "bumper_stop"):
        (lib / exe).write_text(f"#!{sys.executable}\nfrom bondsim_ros.ros.{exe} import main\nmain()\n")
        (lib / exe).chmod(0o755)
    for package, exe in STAND_INS:
        _package(pre, package)
        (pre / "lib" / package).mkdir(parents=True, exist_ok=True)
        script = pre / "lib" / package / exe
        script.write_text(STAND_IN.format(python=sys.executable, package=package, executable=exe, behaving=BEHAVING,
                                          here=str(HERE)))
        script.chmod(0o755)
    nav2 = _package(pre, "nav2_bringup")
    (nav2 / "launch").mkdir()
    (nav2 / "launch" / "navigation_launch.py").write_text(NAVIGATION_LAUNCH.format(servers=NAV2_SERVERS))
    (nav2 / "launch" / "rviz_launch.py").write_text(RVIZ_LAUNCH)
    (nav2 / "rviz").mkdir()
    (nav2 / "rviz" / "nav2_default_view.rviz").write_text("Panels: []\n")
    return pre


def run_launch(prefix: Path, tmp: Path, launch_file: str, joint_topic: str, *args: str,
               settle: float = 1.0, watch_node: str = "dynamics_node") -> tuple[dict, list]:
    records = tmp / "records"
    records.mkdir()
    env = dict(os.environ)
    env["AMENT_PREFIX_PATH"] = os.pathsep.join([str(prefix)] + [p for p in env.get("AMENT_PREFIX_PATH", "").split(
        os.pathsep) if p])
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # xacro, as on a ROS install
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["STAND_IN_RECORDS"] = str(records)
    env["LAUNCH_WATCH_SETTLE"] = str(settle)
    env["LAUNCH_WATCH_NODE"] = watch_node  # the dynamics_node executable's node name
    # data between processes over UDP on localhost: Fast DDS's shared-memory transport fails to
    # lock its port files on shared machines (open_and_lock_file failed) and then drops samples
    env.setdefault("FASTDDS_BUILTIN_TRANSPORTS", "UDPv4")
    out = tmp / "seen.json"
    proc = subprocess.Popen([sys.executable, str(HERE / "launch_runner.py"),
                             str(prefix / "share" / "bondsim_ros" / "launch" / launch_file), str(out),
                             str(MAX_SECONDS), joint_topic, *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        log, _ = proc.communicate(timeout=MAX_SECONDS + 60)
    except subprocess.TimeoutExpired:
        proc.kill()
        log, _ = proc.communicate()
        pytest.fail(f"{launch_file}: the launch did not shut down:\n{log[-4000:]}")
    assert out.exists(), f"{launch_file}: the launch did not run:\n{log[-4000:]}"
    seen = json.loads(out.read_text())
    assert "watch_error" not in seen, seen["watch_error"]
    seen["log"] = log
    return seen, [json.loads(p.read_text()) for p in sorted(records.glob("*.json"))]


def _assert_no_node_died(seen, launch_file):
    """Checked last, after what the nodes were given: no node of ours died, nothing logged an error."""
    log = seen["log"]
    assert "[ERROR]" not in log and "Traceback" not in log, f"{launch_file}:\n{log[-4000:]}"


def _one(records, package, executable):
    found = [r for r in records if r["package"] == package and r["executable"] == executable]
    assert len(found) == 1, f"{package}/{executable} started {len(found)} times"
    return found[0]


def _params_file(record) -> Path:
    """The stand-in's parameter files, written out again (launch deletes its temporary ones)."""
    assert record["params_files"], f"{record['executable']} got no --params-file"
    return list(record["params_files"].items())


def _rcl(record, tmp, node, namespace=""):
    paths = []
    for k, (_, text) in enumerate(_params_file(record)):
        p = tmp / f"{record['executable']}_{k}.yaml"
        p.write_text(text)
        paths.append(p)
    return rcl_parameters(paths, node, namespace)


def _check_urdf(text: str, tmp: Path) -> set:
    exe = shutil.which("check_urdf")
    if exe is None:
        pytest.skip("check_urdf missing (apt-get install liburdfdom-tools)")
    f = tmp / "robot_description.urdf"
    f.write_text(text)
    r = subprocess.run([exe, str(f)], capture_output=True, text=True)
    assert r.returncode == 0 and "Successfully Parsed" in r.stdout, r.stdout + r.stderr
    return {j.get("name") for j in ET.fromstring(text).iter("joint")}


def _rviz_topics(path: Path) -> list:
    out = []

    def walk(displays):
        for d in displays or []:
            topic = d.get("Topic") or d.get("Description Topic")
            if isinstance(topic, dict) and d.get("Enabled", True):
                out.append(topic["Value"])
            walk(d.get("Displays"))
    walk(yaml.safe_load(path.read_text())["Visualization Manager"]["Displays"])
    return out


def _assert_rviz_topics_published(seen, records, rviz_config):
    published = set(seen["published_topics"])
    for r in records:
        ns = ""
        if "--ros-args" in r["argv"]:
            a = r["argv"]
            ns = next((a[i + 1].split(":=", 1)[1] for i in range(len(a) - 1)
                       if a[i] == "-r" and a[i + 1].startswith("__ns:=")), "")
        for t in THIRD_PARTY_PUBLISHES.get(r["package"], []):
            published.add(t if t.startswith("/") else f"{ns.rstrip('/')}/{t}")
    for topic in _rviz_topics(rviz_config):
        assert topic in published, f"{rviz_config.name} shows {topic}, which no node of the launch publishes"


def _assert_dynamics_params_from_file(seen, fqn, launched=()):
    """``launched``: further keys the launch file sets itself (model:= of a generic launch file)."""
    file_params = yaml.safe_load((ROOT / "config" / "dynamics.yaml").read_text())
    section = next(v["ros__parameters"] for k, v in file_params.items() if k.split("/")[-1] == "dynamics_node")
    assert fqn in seen["parameters"], f"{fqn} not running (nodes: {seen['nodes']}):\n{seen['log'][-3000:]}"
    node = seen["parameters"][fqn]
    overridden = {"reference", "cmd_vel_type", "frame_prefix", "real_time_factor"} | set(launched)  # set by the launch
    for key, value in section.items():
        if key in overridden:
            continue
        got = node[key]
        assert (got == pytest.approx(value) if isinstance(value, (float, list)) else got == value), \
            f"config/dynamics.yaml sets {key}={value!r}, {fqn} has {got!r}"


def test_rviz_launch(prefix, tmp_path):
    seen, records = run_launch(prefix, tmp_path, "robotino_rviz.launch.py", "/joint_states")
    rsp = _one(records, "robot_state_publisher", "robot_state_publisher")
    values, unset = _rcl(rsp, tmp_path, "robot_state_publisher")
    assert not unset
    urdf_joints = _check_urdf(values["robot_description"], tmp_path)
    names = seen["joint_names"].get("/joint_states")
    assert names, f"no /joint_states (topics: {seen['published_topics']})"
    assert set(names) <= urdf_joints, f"joints robot_state_publisher cannot find: {sorted(set(names) - urdf_joints)}"
    rviz = _one(records, "rviz2", "rviz2")
    config = Path(rviz["argv"][rviz["argv"].index("-d") + 1])
    assert config.is_file()
    _assert_rviz_topics_published(seen, records, config)
    _assert_dynamics_params_from_file(seen, "/dynamics_node")
    assert "/probe_node" in seen["nodes"]
    _assert_no_node_died(seen, "robotino_rviz.launch.py")


def test_rviz_launch_with_another_model(prefix, tmp_path):
    """model:=arm3dof: robot_state_publisher gets the URDF made from urdf/arm3dof/Arm3DOF.xml,
    /joint_states carries its joints, probe_node reads the same mechanism."""
    seen, records = run_launch(prefix, tmp_path, "robotino_rviz.launch.py", "/joint_states", "model:=arm3dof",
                               "rviz:=false")
    rsp = _one(records, "robot_state_publisher", "robot_state_publisher")
    values, unset = _rcl(rsp, tmp_path, "robot_state_publisher")
    assert not unset
    urdf_joints = _check_urdf(values["robot_description"], tmp_path)
    assert seen["joint_names"].get("/joint_states") == ["q1", "q2", "q3"]
    assert {"q1", "q2", "q3"} <= urdf_joints
    assert seen["parameters"]["/dynamics_node"]["model"] == "arm3dof"
    _assert_no_node_died(seen, "robotino_rviz.launch.py model:=arm3dof")


def test_rviz_launch_without_rviz(prefix, tmp_path):
    _, records = run_launch(prefix, tmp_path, "robotino_rviz.launch.py", "/joint_states", "rviz:=false")
    assert not [r for r in records if r["package"] == "rviz2"]
    assert _one(records, "robot_state_publisher", "robot_state_publisher")


def test_twin_launch(prefix, tmp_path):
    seen, records = run_launch(prefix, tmp_path, "robotino_twin.launch.py", "/twin/joint_states")
    rsp = _one(records, "robot_state_publisher", "robot_state_publisher")
    assert "__ns:=/twin" in rsp["argv"]
    values, unset = _rcl(rsp, tmp_path, "robot_state_publisher", "/twin")
    assert not unset and values["frame_prefix"] == "twin/"
    urdf_joints = _check_urdf(values["robot_description"], tmp_path)
    names = seen["joint_names"].get("/twin/joint_states")
    assert names, f"no /twin/joint_states (topics: {seen['published_topics']})"
    assert set(names) <= urdf_joints, f"joints robot_state_publisher cannot find: {sorted(set(names) - urdf_joints)}"
    # config/dynamics.yaml reaches the namespaced node (its key must match /twin/dynamics_node)
    _assert_dynamics_params_from_file(seen, "/twin/dynamics_node")
    assert seen["parameters"]["/twin/dynamics_node"]["frame_prefix"] == "twin/"
    assert "/twin_bridge" in seen["nodes"]
    # the test run's explicit LOCALHOST (conftest) wins over the launch file's SUBNET default
    assert rsp["discovery_range"] == os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    _assert_no_node_died(seen, "robotino_twin.launch.py")


def test_driver_launch_stands_in_for_the_robotino_driver(prefix, tmp_path):
    """driver.launch.py started as robocup-logistics/ros2-robotino's robotino_driver.launch.py is
    (namespace:=robotinobase1; its launch_odom_tf, bumper_timeout, motor_timeout and hostname
    defaults): robotinobase1/robotino_node with the driver's joint names and parameters, and
    robot_state_publisher with frame_prefix robotinobase1/ (the driver's tf_prefix)."""
    # in a folder whose name has a space: launch splits the xacro command line as a shell would
    xacro = tmp_path / "team robot" / "robotino.urdf.xacro"
    xacro.parent.mkdir()
    xacro.write_text((ROOT / "urdf" / "robotino.urdf.xacro").read_text())
    seen, records = run_launch(prefix, tmp_path, "driver.launch.py", "/robotinobase1/joint_states",
                               "namespace:=robotinobase1", f"robot_description:={xacro}", "rsp_freq:=20",
                               watch_node="robotino_node")
    assert seen["joint_names"].get("/robotinobase1/joint_states") == ["wheel2_joint", "wheel0_joint", "wheel1_joint"]
    node = seen["parameters"].get("/robotinobase1/robotino_node")
    assert node, f"/robotinobase1/robotino_node not running (nodes: {seen['nodes']}):\n{seen['log'][-3000:]}"
    assert (node["interface"], node["reference"], node["tf_prefix"]) == ("driver", "cmd_vel", "robotinobase1/")
    assert node["publish_odom_tf"] is False and node["bumper_timeout"] == 2.0  # the driver launch's defaults
    assert (node["hostname"], node["motor_timeout"]) == ("172.26.1.1:12080", 0.0)  # declared, as RTONode's
    for topic in ("/robotinobase1/odom", "/robotinobase1/joint_states", "/robotinobase1/motor_readings",
                  # rto_node's sensors (sensor_node beside it, sensors:=true): a team's nodes wait for them
                  "/robotinobase1/bumper", "/robotinobase1/irsensor_scan", "/robotinobase1/irsensor_pcl"):
        assert topic in seen["published_topics"], topic
    sensors = seen["parameters"].get("/robotinobase1/sensor_node")
    assert sensors and sensors["pose_topic"] == "robotino_node/ground_truth" and sensors["frame_prefix"] == \
        "robotinobase1/", sensors
    assert sensors["scan_qos"] == "reliable"  # as the driver's laser node publishes scan
    assert sensors["ir_radius"] == 0.185 and sensors["ir_frame_z"] == 0.05, sensors  # the Robotino's layout
    assert "hostname: no effect in the twin" in seen["log"] and "motor_timeout: no effect" in seen["log"]
    rsp = _one(records, "robot_state_publisher", "robot_state_publisher")
    assert "__ns:=/robotinobase1" in rsp["argv"]
    values, unset = _rcl(rsp, tmp_path, "robot_state_publisher", "/robotinobase1")
    assert not unset and values["frame_prefix"] == "robotinobase1/"
    # rsp_freq:=20 reaches it as a double: robot_state_publisher declares one and rclcpp refuses an integer
    assert values["publish_frequency"] == 20.0 and isinstance(values["publish_frequency"], float)
    _check_urdf(values["robot_description"], tmp_path)
    _assert_no_node_died(seen, "driver.launch.py")


def test_twin_launch_discovers_over_the_subnet_by_default(monkeypatch):
    """A driver on the robot's computer is only visible with ROS's default range, SUBNET: the
    twin launch file selects it unless ROS_AUTOMATIC_DISCOVERY_RANGE is set (not run here:
    the test's nodes stay on this machine)."""
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, SetEnvironmentVariable
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    import ament_index_python.packages as ament

    monkeypatch.setattr(ament, "get_package_share_directory", lambda name: str(ROOT))
    description = PythonLaunchDescriptionSource(
        str(ROOT / "launch" / "robotino_twin.launch.py")).get_launch_description(LaunchContext())
    arg = next(e for e in description.entities if isinstance(e, DeclareLaunchArgument) and e.name == "discovery_range")
    setter = [e for e in description.entities if isinstance(e, SetEnvironmentVariable)]
    assert setter and "".join(s.perform(LaunchContext()) for s in setter[0].name) == "ROS_AUTOMATIC_DISCOVERY_RANGE"
    for env, expected in ((None, "SUBNET"), ("LOCALHOST", "LOCALHOST")):
        if env is None:
            monkeypatch.delenv("ROS_AUTOMATIC_DISCOVERY_RANGE", raising=False)
        else:
            monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", env)
        assert "".join(s.perform(LaunchContext()) for s in arg.default_value) == expected


def _scan_rate(watch) -> float:
    arrivals = watch["arrivals"]
    assert len(arrivals) >= 10, f"{watch['topic']}: {len(arrivals)} scans"
    return (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])


def _assert_scan_received(watch, who, frames):
    """``who`` got scans from sensor_node as the real subscriber would: QoS compatible with the
    publisher, frame laser_link connected to ``frames`` by /tf and /tf_static, ~15 Hz (bounds
    for a loaded 2-core machine)."""
    assert watch["topic"] == "/scan" and watch["reliability"] == "BEST_EFFORT", f"{who}: {watch}"
    assert watch["publishers_compatible"] is True, f"{who}: QoS incompatible with /scan's publisher"
    assert watch["frames"] == ["laser_link"], f"{who}: scan frames {watch['frames']}"
    for frame in frames:
        assert watch["resolvable"].get(f"laser_link->{frame}") is True, \
            f"{who}: laser_link cannot be looked up in {frame} from /tf and /tf_static: {watch['resolvable']}"
    assert 7.0 <= _scan_rate(watch) <= 25.0, f"{who}: scans at {_scan_rate(watch):.1f} Hz, sensor_node's 15 Hz"


def _managers(records, tmp_path):
    managed = {}
    for m in [r for r in records if r["executable"] == "lifecycle_manager"]:
        name = next(a.split(":=", 1)[1] for a in m["argv"] if a.startswith("__node:="))
        vals, _ = _rcl(m, tmp_path, name)
        assert vals["autostart"] is True
        managed[name] = (vals["node_names"], m)
    return managed


def _unsettled(seen, records) -> str:
    """Why a bring-up did not finish: the managers' progress, and the lines of the whole log that
    tell of a process that died or complained (the log's tail is only its shutdown)."""
    managers = [{k: r[k] for k in ("managed", "retried", "failed") if k in r}
                for r in records if r["executable"] == "lifecycle_manager"]
    trouble = [line for line in seen["log"].splitlines()
               if any(w in line for w in ("has died", "[ERROR]", "Traceback", "Error", "[WARN]"))]
    return (f"the bring-up did not finish within {MAX_SECONDS:g} s: lifecycle states {seen['lifecycle_states']}, "
            f"managers {managers}\n" + "\n".join(trouble[-40:]) + "\n" + seen["log"][-1500:])


@pytest.mark.parametrize("localization", ["default", "amcl", "static"])
def test_nav2_launch(prefix, tmp_path, localization):
    """robotino_nav2.launch.py: Nav2's servers, map_server and (localization:=amcl, the default)
    AMCL get what they need, and the scan sensor_node simulates reaches AMCL and both costmaps'
    obstacle layers as the real nodes subscribe to it."""
    args = ("rviz:=false",) + (() if localization == "default" else (f"localization:={localization}",))
    seen, records = run_launch(prefix, tmp_path, "robotino_nav2.launch.py", "/joint_states", *args, settle=5.0)
    assert seen["settled"], _unsettled(seen, records)
    amcl_mode = localization != "static"
    rsp = _one(records, "robot_state_publisher", "robot_state_publisher")
    values, _ = _rcl(rsp, tmp_path, "robot_state_publisher")
    urdf_joints = _check_urdf(values["robot_description"], tmp_path)
    assert set(seen["joint_names"]["/joint_states"]) <= urdf_joints
    statics = [r for r in records if r["executable"] == "static_transform_publisher"]
    if amcl_mode:  # AMCL publishes map -> odom
        assert not statics, [r["argv"] for r in statics]
    else:
        static = _one(records, "tf2_ros", "static_transform_publisher")["argv"]
        assert static[static.index("--frame-id") + 1] == "map" and (
            static[static.index("--child-frame-id") + 1] == "odom")
    # map_server and sensor_node read the same map file
    map_server = _one(records, "nav2_map_server", "map_server")
    values, unset = _rcl(map_server, tmp_path, "map_server")
    map_yaml = Path(values["yaml_filename"])
    assert map_yaml.is_file() and (map_yaml.parent / yaml.safe_load(map_yaml.read_text())["image"]).is_file()
    sensors = seen["parameters"]["/sensor_node"]
    assert Path(sensors["map"]).resolve() == map_yaml.resolve() == (ROOT / "config" / "maps" / "rcll_arena.yaml")
    # the Robotino's declared sensor layout (config/robotino_sensors.yaml) reaches the node through rcl
    assert sensors["footprint_radius"] == 0.185 and list(sensors["laser_pose"]) == [0.12, 0.0, 0.25, 0.0], sensors
    # Nav2's commands reach the twin through bumper_stop
    assert seen["parameters"]["/dynamics_node"]["reference"] == "cmd_vel"
    assert seen["parameters"]["/bumper_stop"]["cmd_vel_in"] == "cmd_vel"
    assert seen["parameters"]["/bumper_stop"]["cmd_vel_out"] == seen["parameters"]["/dynamics_node"][
        "cmd_vel_topic"] == "cmd_vel_bumper"
    managed = _managers(records, tmp_path)
    assert managed["lifecycle_manager_localization"][0] == (["map_server", "amcl"] if amcl_mode else ["map_server"])
    brought_up = managed["lifecycle_manager_localization"][1]
    assert "failed" not in brought_up, brought_up["failed"]
    assert all(states == ["inactive", "active"] for states in brought_up["managed"].values()), brought_up["managed"]
    for package, exe, node in NAV2_SERVERS:
        rec = _one(records, package, exe)
        vals, unset = _rcl(rec, tmp_path, node)
        assert not unset, f"{node}: parameters rcl parses as unset: {sorted(unset)}"
        assert vals, f"{node}: no parameters reach it from nav2_params.yaml"
        assert node in managed["lifecycle_manager_navigation"][0]
    # the costmaps live in the controller and planner servers' processes, from the same file;
    # their obstacle layers get the scan
    for rec, ns in ((_one(records, "nav2_controller", "controller_server"), "/local_costmap"),
                    (_one(records, "nav2_planner", "planner_server"), "/global_costmap")):
        vals, unset = _rcl(rec, tmp_path, ns.strip("/"), ns)
        assert not unset and vals["robot_base_frame"] == "base_footprint"
        source = rec["costmap"]["sources"].get("obstacle_layer.scan")
        assert source and source["data_type"] == "LaserScan", f"{ns}: observation sources {rec['costmap']}"
        assert vals["obstacle_layer.scan.obstacle_max_range"] == sensors["range_max"]
        assert vals["obstacle_layer.scan.max_obstacle_height"] > sensors["laser_pose"][2]  # else every point is dropped
        _assert_scan_received(source["watch"], ns, [vals["robot_base_frame"], vals["global_frame"]])
    amcl = [r for r in records if r["executable"] == "amcl"]
    if not amcl_mode:
        assert not amcl
    else:
        amcl = _one(records, "nav2_amcl", "amcl")
        vals, unset = _rcl(amcl, tmp_path, "amcl")
        assert not unset
        assert {k: vals[k] for k in ("base_frame_id", "odom_frame_id", "global_frame_id", "scan_topic",
                                     "robot_model_type")} == {
            "base_frame_id": "base_footprint", "odom_frame_id": "odom", "global_frame_id": "map", "scan_topic": "scan",
            "robot_model_type": "nav2_amcl::OmniMotionModel"}
        assert vals["laser_max_range"] == sensors["range_max"]
        # AMCL starts where the twin starts: sensor_node's odom origin in the map composed with the first odometry
        assert vals["set_initial_pose"] is True
        mx, my, myaw = sensors["map_to_odom"]
        ox, oy, oyaw = seen["odom_start"]
        start = (mx + math.cos(myaw) * ox - math.sin(myaw) * oy, my + math.sin(myaw) * ox + math.cos(myaw) * oy,
                 myaw + oyaw)
        assert (vals["initial_pose.x"], vals["initial_pose.y"], vals["initial_pose.yaw"]) == pytest.approx(
            start, abs=1e-6)
        assert amcl["states"] == ["inactive", "active"]
        assert amcl["configured_with"] == {"scan_topic": "scan", "base_frame_id": "base_footprint",
                                           "odom_frame_id": "odom"}  # what the node got at runtime, too
        _assert_scan_received(amcl["scan"], "amcl", ["base_footprint", "odom"])
    _assert_no_node_died(seen, f"robotino_nav2.launch.py {' '.join(args)}")


# -- the generic launch files with models other than the Robotino ------------------------------------
def _urdf_joints_and_root(text: str) -> tuple[list, str]:
    """The URDF's moving joints in document order, and its root link (the one no joint has as child)."""
    root = ET.fromstring(text)
    joints = [j.get("name") for j in root.iter("joint") if j.get("type") != "fixed"]
    children = {j.find("child").get("link") for j in root.iter("joint")}
    roots = [lk.get("name") for lk in root.iter("link") if lk.get("name") not in children]
    assert len(roots) == 1, f"URDF roots: {roots}"
    return joints, roots[0]


def _mechanism_of(model: str) -> Path:
    from bondsim_ros.robots import load_robot

    return Path(load_robot(model).mechanism).resolve()


def _probes_of(model: str) -> list:
    from bondsim_ros.mechanism.probes import ProbeKinematics

    return ProbeKinematics.from_file(str(_mechanism_of(model))).probe_names


@pytest.mark.parametrize("model,mobile", [("omni5dpo", True), ("arm3dof", False),
                                          (str(HERE / "data" / "live" / "slider_msd.yaml"), False)],
                         ids=["omni5dpo", "arm3dof", "yaml-model"])
def test_generic_rviz_launch_runs_the_model(prefix, tmp_path, model, mobile):
    """rviz.launch.py model:=NAME: robot_state_publisher gets that model's URDF, /joint_states names
    exactly its moving joints, probe_node reads its mechanism, and RViz is started with a view made
    for it: fixed frame odom for a mobile base (dynamics_node's odom -> base_footprint), else the
    URDF's root link; a display per probe, odometry only where /odom is published."""
    seen, records = run_launch(prefix, tmp_path, "rviz.launch.py", "/joint_states", f"model:={model}")
    rsp = _one(records, "robot_state_publisher", "robot_state_publisher")
    values, unset = _rcl(rsp, tmp_path, "robot_state_publisher")
    assert not unset
    _check_urdf(values["robot_description"], tmp_path)
    joints, root = _urdf_joints_and_root(values["robot_description"])
    assert seen["joint_names"].get("/joint_states") == joints, seen["log"][-3000:]
    _assert_dynamics_params_from_file(seen, "/dynamics_node", launched={"model"})
    assert seen["parameters"]["/dynamics_node"]["model"] == model
    assert Path(seen["parameters"]["/probe_node"]["mechanism"]).resolve() == _mechanism_of(model)
    rviz = _one(records, "rviz2", "rviz2")
    config = Path(rviz["argv"][rviz["argv"].index("-d") + 1])
    view = yaml.safe_load(config.read_text())["Visualization Manager"]
    if mobile:
        assert view["Global Options"]["Fixed Frame"] == seen["parameters"]["/dynamics_node"]["odom_frame"] == "odom"
        assert root == "base_footprint" and "/odom" in seen["published_topics"]
    else:
        assert view["Global Options"]["Fixed Frame"] == root and "/odom" not in seen["published_topics"]
    shown = _rviz_topics(config)
    assert sorted(t for t in shown if t.startswith("/probes/")) == sorted(f"/probes/{n}" for n in _probes_of(model))
    assert ("/odom" in shown) == mobile
    _assert_rviz_topics_published(seen, records, config)
    _assert_no_node_died(seen, f"rviz.launch.py model:={model}")


def test_generic_twin_launch_runs_another_mobile_base(prefix, tmp_path):
    """twin.launch.py model:=omni5dpo with the user's bridge file for their robot's driver."""
    bridge = tmp_path / "omni_bridge.yaml"
    bridge.write_text(yaml.safe_dump({"twin_bridge": {"ros__parameters": {
        "robot_cmd_vel": "/omni/cmd_vel", "robot_odom": "/omni/odom", "robot_joint_states": "/omni/joint_states",
        "robot_wheel_joints": ["m1", "m2", "m3"], "robot_wheel_sign": 1.0,
        "twin_wheel_joints": ["wheel1_axle", "wheel2_axle", "wheel3_axle"]}}}))
    seen, records = run_launch(prefix, tmp_path, "twin.launch.py", "/twin/joint_states", "model:=omni5dpo",
                               f"bridge_config:={bridge}")
    rsp = _one(records, "robot_state_publisher", "robot_state_publisher")
    assert "__ns:=/twin" in rsp["argv"]
    values, unset = _rcl(rsp, tmp_path, "robot_state_publisher", "/twin")
    assert not unset and values["frame_prefix"] == "twin/"
    _check_urdf(values["robot_description"], tmp_path)
    joints, _ = _urdf_joints_and_root(values["robot_description"])
    assert seen["joint_names"].get("/twin/joint_states") == joints == ["wheel1_axle", "wheel2_axle", "wheel3_axle"]
    _assert_dynamics_params_from_file(seen, "/twin/dynamics_node", launched={"model"})
    dyn = seen["parameters"]["/twin/dynamics_node"]
    assert (dyn["model"], dyn["reference"], dyn["frame_prefix"]) == ("omni5dpo", "cmd_vel", "twin/")
    bridge_params = seen["parameters"]["/twin_bridge"]
    assert bridge_params["robot_cmd_vel"] == "/omni/cmd_vel" and list(bridge_params["robot_wheel_joints"]) == [
        "m1", "m2", "m3"]
    assert "/twin/cmd_vel" in seen["published_topics"]  # the bridge forwards to the twin
    _assert_no_node_died(seen, "twin.launch.py model:=omni5dpo")


def test_generic_nav2_launch_runs_another_mobile_base(prefix, tmp_path):
    seen, records = run_launch(prefix, tmp_path, "nav2.launch.py", "/joint_states", "model:=omni5dpo", "rviz:=false")
    rsp = _one(records, "robot_state_publisher", "robot_state_publisher")
    values, _ = _rcl(rsp, tmp_path, "robot_state_publisher")
    _check_urdf(values["robot_description"], tmp_path)
    joints, root = _urdf_joints_and_root(values["robot_description"])
    assert seen["joint_names"]["/joint_states"] == joints and root == "base_footprint"
    dyn = seen["parameters"]["/dynamics_node"]
    assert (dyn["model"], dyn["reference"], dyn["base_frame"]) == ("omni5dpo", "cmd_vel", "base_footprint")
    for package, exe, node in NAV2_SERVERS:
        vals, unset = _rcl(_one(records, package, exe), tmp_path, node)
        assert vals and not unset, node
    # the packaged Nav2 parameters carry the Robotino's footprint: the user is told
    assert "footprint is the Robotino's" in seen["log"] and "params_file:=" in seen["log"]
    _assert_no_node_died(seen, "nav2.launch.py model:=omni5dpo")


@pytest.mark.parametrize("launch_file,args,expected", [
    ("nav2.launch.py", ("model:=arm3dof",), "nav2.launch.py: model:=arm3dof has no planar base"),
    ("nav2.launch.py", ("localization:=gps",), 'Argument "localization" provided value "gps" is not valid'),
    ("twin.launch.py", ("model:=arm3dof",), "twin.launch.py: model:=arm3dof has no planar base"),
    ("twin.launch.py", ("model:=omni5dpo",), "twin.launch.py: model:=omni5dpo needs bridge_config:=FILE"),
    ("rviz.launch.py", ("model:=no_such_robot",),
     "rviz.launch.py: model:=no_such_robot: unknown robot 'no_such_robot': registered are"),
])
def test_generic_launch_refuses_a_model_that_does_not_fit(prefix, tmp_path, launch_file, args, expected):
    """A model the launch file cannot run: one error line naming the file, the model and what fits
    instead, a failing exit status, no traceback, and no node started."""
    seen, records = run_launch(prefix, tmp_path, launch_file, "/joint_states", *args)
    assert seen["return_code"] != 0
    assert expected in seen["log"], seen["log"][-3000:]
    assert "Traceback" not in seen["log"], seen["log"][-3000:]
    assert not records, f"started: {[r['executable'] for r in records]}"
    assert not any(n.endswith(("dynamics_node", "probe_node", "twin_bridge")) for n in seen.get("nodes", []))
    if "planar base" in expected:  # it names the models that fit
        assert "omni5dpo" in seen["log"] and "robotino" in seen["log"]
