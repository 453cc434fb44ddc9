"""The Robotino (or, with model:=, any model) in RViz: rviz.launch.py with model:=robotino and the
reference rose path by default, as before the generic launch files.

    ros2 launch bondsim_ros robotino_rviz.launch.py [model:=robotino|...] [reference:=rose|cmd_vel|waypoints]
                                                    [rviz:=true] [real_time_factor:=1.0] [rviz_config:=FILE]
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration

ARGS = (("model", "robotino"), ("reference", "rose"), ("rviz", "true"), ("real_time_factor", "1.0"),
        ("rviz_config", ""))


def generate_launch_description():
    share = get_package_share_directory("bondsim_ros")
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default) for name, default in ARGS]
        + [IncludeLaunchDescription(PythonLaunchDescriptionSource(os.path.join(share, "launch", "rviz.launch.py")),
                                    launch_arguments={name: LaunchConfiguration(name) for name, _ in ARGS}.items())])
