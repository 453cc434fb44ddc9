"""dynamics_node's parameters: the table (names, types, defaults, allowed values, descriptions),
the start values given programmatically, and the checks the table cannot state of one value.
"""
from __future__ import annotations

from pathlib import Path

from bondsim_ros.robots import DEFAULT_ROBOT
from bondsim_ros.twin.protocol import COMMAND_OF_REFERENCE

from ._env import Param, overrides_to_parameters

# The node's parameters: names, types (the defaults'), defaults, allowed values, descriptions
# (config/dynamics.yaml lists them all; test_ros_params checks it against this table). Live
# ones change the running node (SetParameters, `ros2 param set`); the rest apply at start.
PARAMS = {
    "model": Param(DEFAULT_ROBOT, "robot to run: a registered robot (bondsim_ros.robots entry point) or a YAML model "
                   "file with a mechanism: section"),
    "reference": Param("rose", "reference source: rose or builtin (the model's own) | cmd_vel | waypoints | "
                               "joint_trajectory", choices=tuple(COMMAND_OF_REFERENCE)),
    "joint_trajectory_topic": Param("joint_trajectory",
                                    "trajectory_msgs/JointTrajectory topic (reference=joint_trajectory)"),
    "joint_commands_topic": Param("joint_commands",
                                  "sensor_msgs/JointState command topic (ros2_control's topic-based hardware "
                                  "interfaces): positions of driven joints, wheel speeds of a mobile base"),
    "outputs": Param([""], "TOPIC=COLUMN entries: model columns published as std_msgs/Float64 every frame, besides "
                           "a YAML model's own outputs: section (empty: none)"),
    "publish_clock": Param(True, "publish /clock (rosgraph_msgs/Clock): the frames' stamps (the simulated time "
                                 "with use_sim_time)"),
    "publish_rate": Param(33.0, "joint state / odometry rate [Hz] (the paper sends a frame every 30 ms)",
                          low=0.1, high=1000.0, live=True),
    "real_time_factor": Param(1.0, "simulated seconds per wall-clock second", low=0.001, high=100.0, live=True),
    "cmd_vel_topic": Param("cmd_vel", "velocity command topic"),
    "cmd_vel_type": Param("auto", "auto | twist | stamped (Nav2: Twist on Jazzy, TwistStamped on Kilted)",
                          choices=("auto", "twist", "stamped")),
    "cmd_vel_timeout": Param(0.5, "simulated seconds [s] a twist command stays in force (from the frame that "
                                  "applies it) before the twin is brought to rest",
                             low=0.001, high=3600.0, live=True),
    "max_linear_velocity": Param(1.0, "clamp for |(vx, vy)| [m/s]", low=0.001, high=100.0, live=True),
    "max_angular_velocity": Param(3.0, "clamp for |wz| [rad/s]", low=0.001, high=1000.0, live=True),
    # a sample square so that reference:=waypoints alone drives something visible
    "waypoints": Param([1.0, 0.0, 0.0, 1.0, 1.0, 1.5708, 0.0, 0.0, 0.0],
                       "flat list x1, y1, phi1, x2, y2, phi2, ... [m, m, rad] for reference=waypoints"),
    "odom_frame": Param("odom", "odometry frame id"),
    "base_frame": Param("base_footprint", "robot base frame id"),
    "frame_prefix": Param("", "prefix for frame ids (several robots); joint names stay the URDF's, as "
                              "robot_state_publisher looks them up"),
    "interface": Param("", "another program's ROS interface the twin stands in for: empty (the node's own) or an "
                           "interface profile of the robot (robotino: driver, robocup-logistics/ros2-robotino's "
                           "rto_node); the profile's topics, frames, joint names, parameters and services then "
                           "replace cmd_vel_topic, cmd_vel_type, odom_frame, base_frame and frame_prefix"),
    "mechanism": Param("", "mechanism XML whose probes are compared (empty: the robot's own)"),
    "robot_config": Param("", "the robot plug-in's parameter YAML (Robotino: e.g. calibrated by `bondsim-ros fit "
                              "--config-out`; empty: its packaged config/robotino.yaml)"),
    "probes": Param([""], "probe names whose /probes/NAME points are compared with the model (empty: all)"),
    "rtol": Param(1e-6, "solver relative tolerance", low=1e-12, high=0.1),
    "hmax": Param(0.02, "largest solver step [s]", low=1e-6, high=10.0),
}


def start_parameters(overrides: dict | None) -> tuple[list, dict]:
    """(rclpy Parameters, the names PARAMS does not know) of a programmatic start. Those others
    are an interface profile's (its own parameters, checked once it is loaded): allowed only
    with ``interface``, passed untyped (ints as floats, as the profiles' numbers are)."""
    from rclpy.parameter import Parameter

    overrides = dict(overrides or {})
    extra = {k: v for k, v in overrides.items() if k not in PARAMS and k != "use_sim_time"}
    if extra and not overrides.get("interface"):
        raise ValueError(f"unknown parameter {next(iter(extra))!r}")
    own = {k: v for k, v in overrides.items() if k not in extra}
    untyped = [Parameter(k, value=float(v) if isinstance(v, int) and not isinstance(v, bool) else v)
               for k, v in extra.items()]
    return overrides_to_parameters(PARAMS, own) + untyped, extra


def validate(p: dict, resolve_topic_name) -> None:
    """What the table cannot say of one value alone (types, ranges and choices are checked by
    declare_parameters); ``resolve_topic_name``: the node's, raising on a bad name. ValueError
    naming every bad parameter."""
    errors = []
    for key in ("cmd_vel_topic", "joint_trajectory_topic", "joint_commands_topic"):
        try:
            resolve_topic_name(p[key])
        except Exception as exc:  # noqa: BLE001 - rclpy's name validation: say which parameter
            errors.append(f"{key}: {p[key]!r} is not a valid topic name ({exc})")
    if p["reference"] == "waypoints" and (len(p["waypoints"]) < 3 or len(p["waypoints"]) % 3):
        errors.append("waypoints: give x, y, phi triples")
    if p["robot_config"] and not Path(p["robot_config"]).is_file():
        errors.append(f"robot_config: no such file {p['robot_config']!r}")
    if errors:
        raise ValueError("invalid dynamics_node parameters: " + "; ".join(errors))


def live_values(p: dict) -> dict:
    """The live parameters' values in ``p`` (what a change reports on /diagnostics)."""
    return {k: p[k] for k, spec in PARAMS.items() if spec.live}
