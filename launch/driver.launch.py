"""The twin in place of a real Robotino and its driver, robocup-logistics/ros2-robotino's
robotino_driver.launch.py: the same launch arguments, node name, namespace, topics, services,
parameters and frames, so a team's launch files, Nav2 parameters and nodes run unchanged.

    ros2 launch bondsim_ros driver.launch.py namespace:=robotinobase1 [launch_odom_tf:=false]
        [bumper_timeout:=2.0] [motor_timeout:=0.0] [hostname:=...] [use_sim_time:=false]
        [robot_description:=URDF|XACRO] [rsp_freq:=20.0] [model:=robotino] [sensors:=true] [map:=MAP.yaml]

dynamics_node runs as NAMESPACE/robotino_node with the robot's `driver` interface profile
(tf_prefix NAMESPACE/, as the driver's launch sets it). robot_state_publisher gets
robot_description:= with frame_prefix NAMESPACE/; the driver's launch defaults it to
rto_description's urdf/robots/robotino_description.urdf, a package of the driver's repository
that no ROS distribution releases (package.xml cannot depend on it), so give that path
(robot_description:=$(ros2 pkg prefix rto_description)/share/rto_description/urdf/robots/robotino_description.urdf)
or another URDF/xacro; empty: no robot_state_publisher. launch_odom_tf:=, bumper_timeout:=,
motor_timeout:= and hostname:= set the node's parameters, their defaults the driver launch's as the
interface profile records them (`bondsim-ros up --interface driver` applies the same);
hostname:= and motor_timeout:= have no effect on the twin (docs/ros.md). With sensors:=true (the
default) sensor_node runs beside it in the namespace and publishes what rto_node publishes of the
robot's sensors, `bumper`, `irsensor_scan` and `irsensor_pcl`, and a laser `scan` (reliable, depth
10, as the driver's laser node publishes it), against map:= (a Nav2 map; default sensor_node's
arena), from where the robot really is (the node's ~/ground_truth: reset_odometry moves the
odometry, not the robot). The driver's joy and teleop nodes are not started.
"""
import os
import shlex

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import Command, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

INTERFACE = "driver"
DEFAULT_MODEL = "robotino"


def _nodes(context):
    from bondsim_ros.robots import load_robot
    from bondsim_ros.ros.graph import robot_sensor_layout
    from bondsim_ros.ros.launch_support import ModelLaunchError, model_view, require_cmd_vel
    from bondsim_ros.twin.interface_profile import ProfileError, parse_profile

    arg = lambda name: LaunchConfiguration(name).perform(context)  # noqa: E731
    view = model_view(arg("model"), "driver.launch.py")
    require_cmd_vel(view, "driver.launch.py", "the driver's interface (it takes cmd_vel)")
    robot = load_robot(view.spec)
    if INTERFACE not in robot.interfaces:
        raise ModelLaunchError(f"driver.launch.py: model:={view.spec} has no {INTERFACE} interface profile (has: "
                               f"{', '.join(sorted(robot.interfaces)) or 'none'})")
    try:
        profile = parse_profile(INTERFACE, robot.interfaces[INTERFACE])
    except ProfileError as exc:
        raise ModelLaunchError(f"driver.launch.py: {exc}") from None
    namespace = arg("namespace")
    prefix = profile.frame_prefix_for(namespace)
    # typed: rcl refuses an integer (use_sim_time:=1, rsp_freq:=20) for a bool or double parameter
    sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    params = {"model": view.spec, "reference": "cmd_vel", "interface": INTERFACE, "use_sim_time": sim_time}
    p = profile.parameter("frame_prefix")
    if p is not None:
        params[p.name] = prefix
    for a in profile.launch_arguments:  # the driver's launch passes them to its node
        if a.name in context.launch_configurations:
            params[a.parameter] = ParameterValue(LaunchConfiguration(a.name), value_type=type(a.default))
        else:  # a model whose profile's launch has an argument the default model's has not
            params[a.parameter] = a.default
    nodes = [Node(package="bondsim_ros", executable="dynamics_node", name=profile.node_name, namespace=namespace,
                  output="screen", parameters=[params])]
    if arg("sensors").lower() in ("true", "1", "yes", "on"):  # rto_node's bumper and IR sensors
        map_yaml = arg("map")
        if map_yaml and not os.path.isfile(map_yaml):
            raise ModelLaunchError(f"driver.launch.py: map:={map_yaml}: no such file")
        # the robot's sensor layout (Robot.sensors) as values: a parameter file's node name would not
        # match the namespaced node
        layout = robot_sensor_layout(view.spec) or {}
        nodes.append(Node(package="bondsim_ros", executable="sensor_node", namespace=namespace, output="screen",
                          parameters=[{**layout, "map": os.path.abspath(map_yaml) if map_yaml else "",
                                       "pose_topic": f"{profile.node_name}/ground_truth", "frame_prefix": prefix,
                                       # reliable, depth 10, as the driver's laser node publishes scan
                                       "scan_qos": "reliable",
                                       "use_sim_time": sim_time}]))
    description = arg("robot_description")
    if description:
        if not os.path.isfile(description):
            raise ModelLaunchError(f"driver.launch.py: robot_description:={description}: no such file")
        # the path quoted: launch splits the command line as a shell would (a folder with a space)
        xacro = Command(["xacro ", shlex.quote(description)])
        nodes.append(Node(package="robot_state_publisher", executable="robot_state_publisher", namespace=namespace,
                          parameters=[{"robot_description": ParameterValue(xacro, value_type=str),
                                       "use_sim_time": sim_time,
                                       "publish_frequency": ParameterValue(LaunchConfiguration("rsp_freq"),
                                                                           value_type=float),
                                       "frame_prefix": prefix}]))
    return nodes


def _launch_text(value) -> str:
    """A default as a launch argument's text (launch parses it as YAML)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _driver_arguments():
    """The driver launch's arguments that set its node's parameters, with their defaults: those
    of the default model's interface profile (the one source `bondsim-ros up --interface` reads)."""
    from bondsim_ros.robots import load_robot
    from bondsim_ros.twin.interface_profile import parse_profile

    profile = parse_profile(INTERFACE, load_robot(DEFAULT_MODEL).interfaces[INTERFACE])
    return [DeclareLaunchArgument(a.name, default_value=_launch_text(a.default), description=a.description)
            for a in profile.launch_arguments]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="", description="Top-level namespace (the driver's)"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="Use simulation clock if true"),
        *_driver_arguments(),
        DeclareLaunchArgument("robot_description", default_value="",
                              description="URDF or xacro for robot_state_publisher, e.g. rto_description's "
                                          "urdf/robots/robotino_description.urdf (empty: none started)"),
        DeclareLaunchArgument("rsp_freq", default_value="20.0",
                              description="publish frequency for robot state publisher node"),
        DeclareLaunchArgument("model", default_value=DEFAULT_MODEL,
                              description="the twin: a robot with a driver interface profile"),
        DeclareLaunchArgument("sensors", default_value="true",
                              description="start sensor_node: the bumper and IR sensors rto_node publishes, and a "
                                          "laser scan"),
        DeclareLaunchArgument("map", default_value="",
                              description="Nav2 map (map.yaml) the sensors see (empty: sensor_node's arena)"),
        OpaqueFunction(function=_nodes),
    ])
