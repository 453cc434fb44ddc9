"""Drive the Robotino twin with Nav2 in the arena: nav2.launch.py with model:=robotino, as before
the generic launch files.

    ros2 launch bondsim_ros robotino_nav2.launch.py [rviz:=true] [localization:=amcl|static] [map:=MAP.yaml]
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration

ARGS = (("rviz", "true", "start rviz2 with Nav2's view"),
        ("localization", "amcl", "amcl: AMCL on the simulated scan | static: map -> odom the identity"),
        ("map", "", "map YAML for map_server and sensor_node; empty: config/maps/rcll_arena.yaml"))


def generate_launch_description():
    share = get_package_share_directory("bondsim_ros")
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text) for name, default, text in ARGS]
        + [IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(share, "launch", "nav2.launch.py")),
            launch_arguments=[("model", "robotino")] + [(name, LaunchConfiguration(name)) for name, *_ in ARGS])])
