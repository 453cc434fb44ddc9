"""Robotino twin in RViz: robot_state_publisher (xacro), dynamics_node, probe_node, rviz2.

    ros2 launch bondsim_ros robotino_rviz.launch.py [reference:=rose|cmd_vel|waypoints] [rviz:=true]
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def generate_launch_description():
    share = get_package_share_directory("bondsim_ros")
    xacro_file = os.path.join(share, "urdf", "robotino.urdf.xacro")
    params = os.path.join(share, "config", "dynamics.yaml")
    reference = LaunchConfiguration("reference")
    description = ParameterValue(Command(["xacro ", xacro_file]), value_type=str)
    return LaunchDescription([
        DeclareLaunchArgument("reference", default_value="rose", description="rose | cmd_vel | waypoints"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0"),
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": description}]),
        Node(package="bondsim_ros", executable="dynamics_node", output="screen",
             parameters=[params, {"reference": reference,
                                  "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"),
                                                                     value_type=float)}]),
        Node(package="bondsim_ros", executable="probe_node", output="screen", parameters=[params]),
        Node(package="rviz2", executable="rviz2", arguments=["-d", os.path.join(share, "config", "robotino.rviz")],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
