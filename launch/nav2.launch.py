"""Drive a mobile-base twin with Nav2, localized by AMCL on the twin's simulated laser scan (by
default the Robotino in the RCLL-style arena).

    ros2 launch bondsim_ros nav2.launch.py [model:=robotino|omni5dpo|dualarm|FILE.yaml] [rviz:=true]
                                           [localization:=amcl|static] [map:=MAP.yaml]
                                           [params_file:=NAV2_PARAMS.yaml]

The twin runs in cmd_vel mode. sensor_node simulates its laser scanner (`scan`), IR sensors and
bumper, placed as the robot declares (its Robot's sensors file; a base without one gets the
Robotino's, with a warning), against map:= (default config/maps/rcll_arena.yaml), the same file
map_server serves;
bumper_stop passes Nav2's /cmd_vel on to the twin's cmd_vel_bumper and holds it at zero for 2 s
after a bumper contact, as the Robotino's driver does. Nav2 (nav2_bringup's navigation_launch.py)
plans on that map with params_file:= (default config/nav2_params.yaml: the Robotino's footprint,
robot_radius 0.19 m, AMCL and the costmaps' obstacle layers on `scan`; give another base's own).

localization:=amcl (default): nav2_amcl localizes on `scan` and publishes map -> odom; it starts
at the twin's start pose (the map's origin: set_initial_pose in params_file), so it is localized
from the first scan. map_server and amcl are lifecycle-managed by lifecycle_manager_localization,
as nav2_bringup's localization_launch.py does. localization:=static: map -> odom is a static
identity transform (the twin's odometry is exact), no AMCL.

The model must be a mobile base that takes /cmd_vel (the launch refuses others before any node
starts).
"""
import os
import shlex

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

LOCALIZATION = ("amcl", "static")


def _nodes(context):
    import launch.logging

    from bondsim_ros.ros.graph import robot_sensor_layout
    from bondsim_ros.ros.launch_support import ModelLaunchError, model_view, require_cmd_vel

    share = get_package_share_directory("bondsim_ros")
    nav2 = get_package_share_directory("nav2_bringup")
    params = os.path.join(share, "config", "dynamics.yaml")
    localization = LaunchConfiguration("localization").perform(context)  # amcl | static: the argument's choices
    view = model_view(LaunchConfiguration("model").perform(context), "nav2.launch.py")
    require_cmd_vel(view, "nav2.launch.py", "Nav2 (it drives the base through /cmd_vel)")
    nav2_params = LaunchConfiguration("params_file").perform(context) or os.path.join(share, "config",
                                                                                      "nav2_params.yaml")
    map_yaml = LaunchConfiguration("map").perform(context) or os.path.join(share, "config", "maps",
                                                                           "rcll_arena.yaml")
    for arg, path in (("params_file", nav2_params), ("map", map_yaml)):
        if not os.path.isfile(path):
            raise ModelLaunchError(f"nav2.launch.py: {arg}:={path}: no such file")
    map_yaml = os.path.abspath(map_yaml)  # one file for map_server and sensor_node, whatever the cwd
    if view.robot.name != "robotino" and not LaunchConfiguration("params_file").perform(context):
        launch.logging.get_logger("nav2.launch.py").warning(
            f"model:={view.spec} with config/nav2_params.yaml, whose footprint is the Robotino's (robot_radius "
            f"0.19 m): give params_file:= with this base's footprint")
    # the robot's own sensor layout (Robot.sensors), as values (as driver.launch.py gives it to its
    # namespaced node); without one sensor_node's defaults, the Robotino's
    layout = robot_sensor_layout(view.spec)
    if layout is None:
        launch.logging.get_logger("nav2.launch.py").warning(
            f"model:={view.spec} declares no sensor layout (Robot.sensors): sensor_node places the Robotino's "
            f"laser, IR sensors and bumper on it")
    # the path quoted: launch splits the command line as a shell would (a folder with a space)
    xacro = Command(["xacro ", shlex.quote(str(view.xacro))]) if view.xacro else None
    description = (ParameterValue(xacro, value_type=str) if view.xacro
                   else view.description)
    managed = ["map_server"]
    nodes = [
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": description}]),
        Node(package="bondsim_ros", executable="dynamics_node", output="screen",
             parameters=[params, {"model": view.spec, "reference": "cmd_vel", "cmd_vel_type": "stamped",
                                  "cmd_vel_topic": "cmd_vel_bumper"}]),
        Node(package="bondsim_ros", executable="probe_node", parameters=[params, {"mechanism": str(view.mechanism)}]),
        # the scan AMCL and the costmaps use, the IR sensors and the bumper, against the map Nav2 plans on;
        # map -> odom is the identity at the start in both modes (the twin starts at the map's origin)
        Node(package="bondsim_ros", executable="sensor_node", output="screen",
             parameters=[{**(layout or {}), "map": map_yaml}]),
        Node(package="bondsim_ros", executable="bumper_stop", output="screen",
             parameters=[{"cmd_vel_in": "cmd_vel", "cmd_vel_out": "cmd_vel_bumper", "cmd_vel_out_type": "stamped"}]),
        Node(package="nav2_map_server", executable="map_server", name="map_server",
             parameters=[nav2_params, {"yaml_filename": map_yaml}]),
    ]
    if localization == "amcl":
        nodes.append(Node(package="nav2_amcl", executable="amcl", name="amcl", output="screen",
                          parameters=[nav2_params]))
        managed.append("amcl")
    else:
        nodes.append(Node(package="tf2_ros", executable="static_transform_publisher",
                          arguments=["--frame-id", "map", "--child-frame-id", "odom"]))
    # the name nav2_bringup's localization_launch.py gives it (RViz's Nav2 panel asks it)
    nodes.append(Node(package="nav2_lifecycle_manager", executable="lifecycle_manager",
                      name="lifecycle_manager_localization", parameters=[{"autostart": True, "node_names": managed}]))
    return nodes + [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(nav2, "launch", "navigation_launch.py")),
            launch_arguments={"params_file": nav2_params, "use_sim_time": "false"}.items()),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(nav2, "launch", "rviz_launch.py")),
            condition=IfCondition(LaunchConfiguration("rviz"))),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("model", default_value="robotino",
                              description="a mobile base that takes /cmd_vel: registered robot or YAML model file"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2 with Nav2's view"),
        DeclareLaunchArgument("localization", default_value="amcl", choices=list(LOCALIZATION),
                              description="amcl: AMCL on the simulated scan publishes map -> odom; static: map -> "
                                          "odom is the identity (exact odometry), no AMCL"),
        DeclareLaunchArgument("map", default_value="",
                              description="map YAML for map_server and sensor_node; empty: "
                                          "config/maps/rcll_arena.yaml"),
        DeclareLaunchArgument("params_file", default_value="",
                              description="Nav2 parameters; empty: config/nav2_params.yaml (the Robotino's footprint)"),
        OpaqueFunction(function=_nodes),
    ])
