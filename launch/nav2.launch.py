"""Drive a mobile-base twin with Nav2 (by default the Robotino on the paper's walled floor).

    ros2 launch bondsim_ros nav2.launch.py [model:=robotino|omni5dpo|dualarm|FILE.yaml] [rviz:=true]
                                           [map:=MAP.yaml] [params_file:=NAV2_PARAMS.yaml]

The twin runs in cmd_vel mode; Nav2 (nav2_bringup navigation + map server) plans on map:=
(default config/maps/robotino_floor.yaml) with params_file:= (default config/nav2_params.yaml,
whose footprint is the Robotino's: robot_radius 0.19 m; give another base's own). The twin's
odometry is exact, so map -> odom is a static identity transform instead of AMCL (there is no
simulated laser). Nav2 commands /cmd_vel and plans for base_footprint in odom: the model must be
a mobile base that takes /cmd_vel (the launch refuses others before any node starts).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def _nodes(context):
    import launch.logging

    from bondsim_ros.ros.launch_support import ModelLaunchError, model_view, require_cmd_vel

    share = get_package_share_directory("bondsim_ros")
    nav2 = get_package_share_directory("nav2_bringup")
    params = os.path.join(share, "config", "dynamics.yaml")
    view = model_view(LaunchConfiguration("model").perform(context), "nav2.launch.py")
    require_cmd_vel(view, "nav2.launch.py", "Nav2 (it drives the base through /cmd_vel)")
    nav2_params = LaunchConfiguration("params_file").perform(context) or os.path.join(share, "config",
                                                                                       "nav2_params.yaml")
    map_yaml = LaunchConfiguration("map").perform(context) or os.path.join(share, "config", "maps",
                                                                           "robotino_floor.yaml")
    for arg, path in (("params_file", nav2_params), ("map", map_yaml)):
        if not os.path.isfile(path):
            raise ModelLaunchError(f"nav2.launch.py: {arg}:={path}: no such file")
    if view.robot.name != "robotino" and not LaunchConfiguration("params_file").perform(context):
        launch.logging.get_logger("nav2.launch.py").warning(
            f"model:={view.spec} with config/nav2_params.yaml, whose footprint is the Robotino's (robot_radius "
            f"0.19 m): give params_file:= with this base's footprint")
    description = (ParameterValue(Command(["xacro ", str(view.xacro)]), value_type=str) if view.xacro
                   else view.description)
    return [
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": description}]),
        Node(package="bondsim_ros", executable="dynamics_node", output="screen",
             parameters=[params, {"model": view.spec, "reference": "cmd_vel", "cmd_vel_type": "auto"}]),
        Node(package="bondsim_ros", executable="probe_node", parameters=[params, {"mechanism": str(view.mechanism)}]),
        Node(package="tf2_ros", executable="static_transform_publisher",
             arguments=["--frame-id", "map", "--child-frame-id", "odom"]),
        Node(package="nav2_map_server", executable="map_server", name="map_server",
             parameters=[{"yaml_filename": map_yaml}]),
        Node(package="nav2_lifecycle_manager", executable="lifecycle_manager", name="lifecycle_manager_map",
             parameters=[{"autostart": True, "node_names": ["map_server"]}]),
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
        DeclareLaunchArgument("rviz", default_value="true"),
        DeclareLaunchArgument("map", default_value="", description="map YAML; empty: config/maps/robotino_floor.yaml"),
        DeclareLaunchArgument("params_file", default_value="",
                              description="Nav2 parameters; empty: config/nav2_params.yaml (the Robotino's footprint)"),
        OpaqueFunction(function=_nodes),
    ])
