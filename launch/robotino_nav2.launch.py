"""Drive the Robotino twin with Nav2 on the paper's walled floor.

    ros2 launch bondsim_ros robotino_nav2.launch.py

The twin runs in cmd_vel mode; Nav2 (nav2_bringup navigation + map server) plans on
config/maps/robotino_floor.yaml with config/nav2_params.yaml. The twin's odometry is exact, so
map -> odom is a static identity transform instead of AMCL (there is no simulated laser).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def generate_launch_description():
    share = get_package_share_directory("bondsim_ros")
    nav2 = get_package_share_directory("nav2_bringup")
    params = os.path.join(share, "config", "dynamics.yaml")
    nav2_params = os.path.join(share, "config", "nav2_params.yaml")
    map_yaml = os.path.join(share, "config", "maps", "robotino_floor.yaml")
    description = ParameterValue(Command(["xacro ", os.path.join(share, "urdf", "robotino.urdf.xacro")]), value_type=str)
    return LaunchDescription([
        DeclareLaunchArgument("rviz", default_value="true"),
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": description}]),
        Node(package="bondsim_ros", executable="dynamics_node", output="screen",
             parameters=[params, {"reference": "cmd_vel", "cmd_vel_type": "auto"}]),
        Node(package="bondsim_ros", executable="probe_node", parameters=[params]),
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
    ])
