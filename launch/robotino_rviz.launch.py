"""A twin in RViz: robot_state_publisher, dynamics_node, probe_node, rviz2.

    ros2 launch bondsim_ros robotino_rviz.launch.py [model:=robotino|dualarm|arm3dof|omni5dpo|...|FILE.yaml]
                                                    [reference:=rose|cmd_vel|waypoints|joint_trajectory] [rviz:=true]

model:=robotino (the default) uses the packaged xacro; any other registered robot, or a YAML
model file with a mechanism: section, gets the URDF the mechanism layer makes from its XML.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def _nodes(context):
    share = get_package_share_directory("bondsim_ros")
    params = os.path.join(share, "config", "dynamics.yaml")
    model = LaunchConfiguration("model").perform(context)
    probe = {}
    if model == "robotino":
        description = ParameterValue(Command(["xacro ", os.path.join(share, "urdf", "robotino.urdf.xacro")]),
                                     value_type=str)
    else:
        from bondsim_ros.robots import load_robot
        from bondsim_ros.ros.graph import robot_description_params

        robot = load_robot(model)
        found = robot_description_params(robot)
        if "urdf" in found:
            with open(found["urdf"], encoding="utf-8") as f:
                description = f.read()
        else:
            description = found["robot_description"]
        probe = {"mechanism": str(robot.mechanism)}
    return [
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": description}]),
        Node(package="bondsim_ros", executable="dynamics_node", output="screen",
             parameters=[params, {"model": model, "reference": LaunchConfiguration("reference"),
                                  "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"),
                                                                     value_type=float)}]),
        Node(package="bondsim_ros", executable="probe_node", output="screen", parameters=[params, probe]),
    ]


def generate_launch_description():
    share = get_package_share_directory("bondsim_ros")
    return LaunchDescription([
        DeclareLaunchArgument("model", default_value="robotino",
                              description="registered robot (bondsim_ros.robots) or YAML model file"),
        DeclareLaunchArgument("reference", default_value="rose",
                              description="rose | builtin | cmd_vel | waypoints | joint_trajectory"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0"),
        OpaqueFunction(function=_nodes),
        Node(package="rviz2", executable="rviz2", arguments=["-d", os.path.join(share, "config", "robotino.rviz")],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ])
