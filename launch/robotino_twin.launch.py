"""Digital twin beside a real Robotino (e.g. robocup-logistics ros2-robotino's rto_node).

    ros2 launch bondsim_ros robotino_twin.launch.py [bridge_config:=.../robotino_bridge.yaml]

The twin's dynamics_node runs in cmd_vel mode in namespace /twin; twin_bridge forwards the
real robot's commands to it and publishes twin-vs-robot deviations.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import Command, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def generate_launch_description():
    share = get_package_share_directory("bondsim_ros")
    params = os.path.join(share, "config", "dynamics.yaml")
    xacro_file = os.path.join(share, "urdf", "robotino.urdf.xacro")
    bridge = LaunchConfiguration("bridge_config")
    return LaunchDescription([
        DeclareLaunchArgument("bridge_config", default_value=os.path.join(share, "config", "robotino_bridge.yaml")),
        Node(package="bondsim_ros", executable="dynamics_node", namespace="twin", output="screen",
             parameters=[params, {"reference": "cmd_vel", "cmd_vel_type": "twist", "frame_prefix": "twin/"}]),
        # the twin's links as twin/... frames beside the real robot's, for RViz
        Node(package="robot_state_publisher", executable="robot_state_publisher", namespace="twin",
             parameters=[{"robot_description": ParameterValue(Command(["xacro ", xacro_file]), value_type=str),
                          "frame_prefix": "twin/"}]),
        Node(package="bondsim_ros", executable="twin_bridge", output="screen", parameters=[bridge]),
    ])
