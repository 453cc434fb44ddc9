"""Digital twin beside a real Robotino (e.g. robocup-logistics ros2-robotino's rto_node).

    ros2 launch bondsim_ros robotino_twin.launch.py [bridge_config:=.../robotino_bridge.yaml]
                                                    [discovery_range:=SUBNET|LOCALHOST]

The twin's dynamics_node runs in cmd_vel mode in namespace /twin; twin_bridge forwards the
real robot's commands to it and publishes twin-vs-robot deviations. The driver usually runs on
the robot's own computer, so these nodes discover over the subnet (ROS's default range)
unless ROS_AUTOMATIC_DISCOVERY_RANGE or discovery_range:= says otherwise; without it the
nodes would keep to this machine (bondsim_ros/ros/_env.py).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, SetEnvironmentVariable
from launch.substitutions import Command, EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def generate_launch_description():
    share = get_package_share_directory("bondsim_ros")
    params = os.path.join(share, "config", "dynamics.yaml")
    xacro_file = os.path.join(share, "urdf", "robotino.urdf.xacro")
    bridge = LaunchConfiguration("bridge_config")
    return LaunchDescription([
        DeclareLaunchArgument("bridge_config", default_value=os.path.join(share, "config", "robotino_bridge.yaml")),
        DeclareLaunchArgument("discovery_range",
                              default_value=EnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", default_value="SUBNET"),
                              description="ROS discovery range of these nodes: SUBNET reaches the robot's computer"),
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", LaunchConfiguration("discovery_range")),
        Node(package="bondsim_ros", executable="dynamics_node", namespace="twin", output="screen",
             parameters=[params, {"reference": "cmd_vel", "cmd_vel_type": "twist", "frame_prefix": "twin/"}]),
        # the twin's links as twin/... frames beside the real robot's, for RViz
        Node(package="robot_state_publisher", executable="robot_state_publisher", namespace="twin",
             parameters=[{"robot_description": ParameterValue(Command(["xacro ", xacro_file]), value_type=str),
                          "frame_prefix": "twin/"}]),
        Node(package="bondsim_ros", executable="twin_bridge", output="screen", parameters=[bridge]),
    ])
