"""Any model in RViz: robot_state_publisher, dynamics_node, probe_node, rviz2.

    ros2 launch bondsim_ros rviz.launch.py [model:=robotino|dualarm|arm3dof|omni5dpo|...|FILE.yaml]
        [reference:=builtin|cmd_vel|waypoints|joint_trajectory] [rviz:=true] [real_time_factor:=1.0]
        [rviz_config:=FILE]

model:= is a registered robot (bondsim_ros.robots entry points) or a YAML model file with a
mechanism: section. robot_description is the robot's packaged URDF (the Robotino's xacro) or the
URDF the mechanism layer makes from its XML. The RViz view is made for the model from
config/robot.rviz (fixed frame odom for a mobile base, else the URDF's root link; odometry for
mobile bases; a marker per probe) unless rviz_config:= names one.
"""
import os
import shlex

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def _nodes(context):
    from bondsim_ros.ros.launch_support import model_view, write_rviz_view

    share = get_package_share_directory("bondsim_ros")
    params = os.path.join(share, "config", "dynamics.yaml")
    view = model_view(LaunchConfiguration("model").perform(context), "rviz.launch.py")
    # the path quoted: launch splits the command line as a shell would (a folder with a space)
    xacro = Command(["xacro ", shlex.quote(str(view.xacro))]) if view.xacro else None
    description = (ParameterValue(xacro, value_type=str) if view.xacro
                   else view.description)
    nodes = [
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": description}]),
        Node(package="bondsim_ros", executable="dynamics_node", output="screen",
             parameters=[params, {"model": view.spec, "reference": LaunchConfiguration("reference"),
                                  "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"),
                                                                     value_type=float)}]),
        Node(package="bondsim_ros", executable="probe_node", output="screen",
             parameters=[params, {"mechanism": str(view.mechanism)}]),
    ]
    if IfCondition(LaunchConfiguration("rviz")).evaluate(context):
        config = LaunchConfiguration("rviz_config").perform(context) or str(
            write_rviz_view(view, os.path.join(share, "config", "robot.rviz")))
        nodes.append(Node(package="rviz2", executable="rviz2", arguments=["-d", config]))
    return nodes


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("model", default_value="robotino",
                              description="registered robot (bondsim_ros.robots) or YAML model file"),
        DeclareLaunchArgument("reference", default_value="builtin",
                              description="builtin (the model's own; rose for the Robotino) | cmd_vel | waypoints "
                                          "| joint_trajectory"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2"),
        DeclareLaunchArgument("rviz_config", default_value="",
                              description="RViz config file; empty: a view made for the model"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0",
                              description="simulated seconds per wall-clock second, 0.001..100"),
        OpaqueFunction(function=_nodes),
    ])
