"""A digital twin beside the real robot it models (e.g. a Robotino running robocup-logistics
ros2-robotino's rto_node).

    ros2 launch bondsim_ros twin.launch.py [model:=robotino|omni5dpo|dualarm|FILE.yaml]
                                           [bridge_config:=FILE] [discovery_range:=SUBNET|LOCALHOST]

The twin's dynamics_node runs in cmd_vel mode in namespace /twin, beside robot_state_publisher
(frames twin/...); twin_bridge forwards the real robot's velocity commands to it, as the driver
applies them, and publishes twin-vs-robot deviations of odometry and wheel speeds (`bondsim-ros up
--bridge` starts the same graph). So the model must be a mobile base that takes /cmd_vel (the
launch refuses others before any node starts). bridge_config: the real
driver's topics and wheel joints (config/robotino_bridge.yaml, the default for model:=robotino,
shows the keys); required for any other model. The driver usually runs on the robot's own
computer, so these nodes discover over the subnet (ROS's default range) unless
ROS_AUTOMATIC_DISCOVERY_RANGE or discovery_range:= says otherwise; without it the nodes would
keep to this machine (bondsim_ros/ros/_env.py).
"""
import os
import shlex

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import Command, EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def _nodes(context):
    from bondsim_ros.ros.launch_support import ModelLaunchError, model_view, require_cmd_vel

    share = get_package_share_directory("bondsim_ros")
    params = os.path.join(share, "config", "dynamics.yaml")
    view = model_view(LaunchConfiguration("model").perform(context), "twin.launch.py")
    require_cmd_vel(view, "twin.launch.py", "the twin bridge (it forwards the robot's /cmd_vel)")
    bridge = LaunchConfiguration("bridge_config").perform(context)
    if not bridge:
        if view.robot.name != "robotino":
            raise ModelLaunchError(f"twin.launch.py: model:={view.spec} needs bridge_config:=FILE, the real robot's "
                                   f"topics and wheel joints for twin_bridge (config/robotino_bridge.yaml shows the "
                                   f"keys)")
        bridge = os.path.join(share, "config", "robotino_bridge.yaml")
    if not os.path.isfile(bridge):
        raise ModelLaunchError(f"twin.launch.py: bridge_config:={bridge}: no such file")
    # the path quoted: launch splits the command line as a shell would (a folder with a space)
    xacro = Command(["xacro ", shlex.quote(str(view.xacro))]) if view.xacro else None
    description = (ParameterValue(xacro, value_type=str) if view.xacro
                   else view.description)
    return [
        Node(package="bondsim_ros", executable="dynamics_node", namespace="twin", output="screen",
             parameters=[params, {"model": view.spec, "reference": "cmd_vel", "cmd_vel_type": "twist",
                                  "frame_prefix": "twin/"}]),
        # the twin's links as twin/... frames beside the real robot's, for RViz
        Node(package="robot_state_publisher", executable="robot_state_publisher", namespace="twin",
             parameters=[{"robot_description": description, "frame_prefix": "twin/"}]),
        Node(package="bondsim_ros", executable="twin_bridge", output="screen", parameters=[bridge]),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("model", default_value="robotino",
                              description="a mobile base that takes /cmd_vel: registered robot or YAML model file"),
        DeclareLaunchArgument("bridge_config", default_value="",
                              description="twin_bridge parameters; empty: config/robotino_bridge.yaml (Robotino only)"),
        DeclareLaunchArgument("discovery_range",
                              default_value=EnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE",
                                                                default_value="SUBNET"),
                              description="ROS discovery range of these nodes: SUBNET reaches the robot's computer"),
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", LaunchConfiguration("discovery_range")),
        OpaqueFunction(function=_nodes),
    ])
