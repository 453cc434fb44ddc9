"""Digital twin beside a real Robotino (e.g. robocup-logistics ros2-robotino's rto_node):
twin.launch.py with model:=robotino and config/robotino_bridge.yaml, as before the generic
launch files.

    ros2 launch bondsim_ros robotino_twin.launch.py [bridge_config:=.../robotino_bridge.yaml]
                                                    [discovery_range:=SUBNET|LOCALHOST]
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, SetEnvironmentVariable
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import EnvironmentVariable, LaunchConfiguration


def generate_launch_description():
    share = get_package_share_directory("bondsim_ros")
    return LaunchDescription([
        DeclareLaunchArgument("bridge_config", default_value=os.path.join(share, "config", "robotino_bridge.yaml"),
                              description="twin_bridge's parameter file: the real robot's topics and the driver's "
                                          "command limits"),
        DeclareLaunchArgument("discovery_range",
                              default_value=EnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE",
                                                                default_value="SUBNET"),
                              description="ROS discovery range of these nodes: SUBNET reaches the robot's computer"),
        # for the whole launch, as twin.launch.py does for its nodes
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", LaunchConfiguration("discovery_range")),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(share, "launch", "twin.launch.py")),
            launch_arguments={"model": "robotino", "bridge_config": LaunchConfiguration("bridge_config"),
                              "discovery_range": LaunchConfiguration("discovery_range")}.items()),
    ])
