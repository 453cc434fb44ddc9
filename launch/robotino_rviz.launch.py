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

ARGS = (("model", "robotino", "registered robot (bondsim_ros.robots) or YAML model file"),
        ("reference", "rose", "builtin | rose (the Robotino's builtin) | cmd_vel | waypoints | joint_trajectory"),
        ("rviz", "true", "start rviz2"),
        ("real_time_factor", "1.0", "simulated seconds per wall-clock second, 0.001..100"),
        ("rviz_config", "", "RViz config file; empty: a view made for the model"))


def generate_launch_description():
    share = get_package_share_directory("bondsim_ros")
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text) for name, default, text in ARGS]
        + [IncludeLaunchDescription(PythonLaunchDescriptionSource(os.path.join(share, "launch", "rviz.launch.py")),
                                    launch_arguments={name: LaunchConfiguration(name) for name, *_ in ARGS}.items())])
