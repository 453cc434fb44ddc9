"""dynamics_node: any robot's bond-graph model (a Twin, bondsim_ros.twin.protocol) in (scaled)
real time on ROS 2.

Publishes /joint_states (non-virtual joints in mechanism-XML order, URDF names), /clock, and for
a mobile base /odom with odom -> base_footprint on /tf (REP-105); follows the model's built-in
reference, /cmd_vel (Twist or TwistStamped), a waypoint list or trajectory_msgs/JointTrajectory;
compares probe points returned by the probe node with its own at the same stamp (the paper's
named pipe, without its one-frame lag). Every message is stamped with the simulated instant of
the state it reports. Nothing here knows a robot: names, motors and gears are the twin's.
"""
from __future__ import annotations

import collections
import math
import time
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PointStamped, PoseStamped, TransformStamped, Twist, TwistStamped
from nav_msgs.msg import Odometry
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import SetBool, Trigger

from bondsim_ros.robots import DEFAULT_ROBOT
from bondsim_ros.twin.placement import PlacedTwin

from .command_queue import CommandQueue
from .frame_clock import FrameClock
from .node_diagnostics import joint_command_status, solver_status
from bondsim_ros.twin.waypoints import WaypointFollower
from bondsim_ros.twin.protocol import COMMAND_OF_REFERENCE, TRAJECTORY, CommandError, JointTrajectory, Limits
from bondsim_ros.twin.protocol import TWIN_OPTIONS

from ._env import Param, declare_parameters, run_node


def tf_message():
    """tf2_msgs/TFMessage: from the ROS install, or generated into the venv by tools/setup.sh."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError as exc:
        raise ImportError("tf2_msgs is missing: on a ROS install source it; in the pip environment run "
                          "tools/setup.sh, which generates it") from exc
    return TFMessage


def overrides_to_parameters(defaults: dict, overrides: dict) -> list:
    """rclpy Parameters for programmatic starts (bondsim-ros up, tests); ints given for float
    parameters are converted, since ROS parameters are strictly typed."""
    from rclpy.parameter import Parameter

    out = []
    for key, value in (overrides or {}).items():
        if key == "use_sim_time":  # every node has it (rclpy declares it)
            out.append(Parameter(key, value=bool(value)))
            continue
        if key not in defaults:
            raise ValueError(f"unknown parameter {key!r}")
        default = defaults[key][0]
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(default, list) and default:
            kind = type(default[0])
            # ROS cannot type an empty array: [""] stands for "none" in string lists
            value = [kind(v) for v in value] or [kind()]
        out.append(Parameter(key, value=value))
    return out


def _untyped_parameters(values: dict) -> list:
    """rclpy Parameters for names no table knows yet (an interface profile's, checked when it
    is loaded); ints become floats, as the profiles' numbers are."""
    from rclpy.parameter import Parameter

    return [Parameter(k, value=float(v) if isinstance(v, int) and not isinstance(v, bool) else v)
            for k, v in values.items()]


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
    "publish_clock": Param(True, "publish /clock (rosgraph_msgs/Clock) with the simulated time"),
    "publish_rate": Param(33.0, "joint state / odometry rate [Hz] (the paper sends a frame every 30 ms)",
                          low=0.1, high=1000.0, live=True),
    "real_time_factor": Param(1.0, "simulated seconds per wall-clock second", low=0.001, high=100.0, live=True),
    "cmd_vel_topic": Param("cmd_vel", "velocity command topic"),
    "cmd_vel_type": Param("auto", "auto | twist | stamped (Nav2: Twist on Jazzy, TwistStamped on Kilted)",
                          choices=("auto", "twist", "stamped")),
    "cmd_vel_timeout": Param(0.5, "seconds [s] without a command before the twin is brought to rest",
                             low=0.001, high=3600.0, live=True),
    "max_linear_velocity": Param(1.0, "clamp for |(vx, vy)| [m/s]", low=0.001, high=100.0, live=True),
    "max_angular_velocity": Param(3.0, "clamp for |wz| [rad/s]", low=0.001, high=1000.0, live=True),
    "waypoints": Param([0.0], "flat list x1, y1, phi1, x2, y2, phi2, ... [m, m, rad] for reference=waypoints"),
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


class DynamicsNode(Node):
    def __init__(self, name="dynamics_node", overrides: dict | None = None, own_timer: bool = True, **kwargs):
        overrides = dict(overrides or {})
        # an interface profile declares parameters of its own, checked once it is loaded
        extra = {k: v for k, v in overrides.items() if k not in PARAMS and k != "use_sim_time"}
        if extra and not overrides.get("interface"):
            raise ValueError(f"unknown parameter {next(iter(extra))!r}")
        own = {k: v for k, v in overrides.items() if k not in extra}
        super().__init__(name, parameter_overrides=overrides_to_parameters(PARAMS, own) + _untyped_parameters(extra),
                         **kwargs)
        p = declare_parameters(self, PARAMS, on_change=self._apply_parameters)
        self._validate(p)
        self.p = p
        command = COMMAND_OF_REFERENCE[p["reference"]]
        # one object shared with the twin: live changes of the limits reach its clamping
        self.limits = limits = Limits(max_linear=p["max_linear_velocity"], max_angular=p["max_angular_velocity"])
        tic = time.perf_counter()
        from bondsim_ros.robots import RobotError, load_robot

        try:
            self.robot = load_robot(p["model"])
            # placeable: simulation_interfaces' SetEntityState puts a planar base elsewhere
            self.twin = PlacedTwin(self.robot.make_twin(command, TWIN_OPTIONS.replace(rtol=p["rtol"], hmax=p["hmax"]),
                                                        limits=limits, config=p["robot_config"] or None,
                                                        log=lambda m: self.get_logger().info(m)))
        except RobotError as exc:
            raise ValueError(f"invalid dynamics_node parameters: model/reference: {exc}") from None
        self.get_logger().info(f"{self.twin.name} ready in {time.perf_counter() - tic:.2f} s "
                               f"({self.twin.unknowns} unknowns, reference={p['reference']})")
        self.interface = None
        if p["interface"]:
            self._setup_interface(p, extra)
        self.use_sim_time = bool(self.get_parameter("use_sim_time").value)
        self.follower = None
        if p["reference"] == "waypoints":
            wp = np.asarray(p["waypoints"], dtype=float).reshape(-1, 3)
            self.follower = WaypointFollower(wp, limits.max_linear, limits.max_angular)
        pre = p["frame_prefix"]
        # joint names unprefixed: robot_state_publisher matches them against the URDF and
        # applies its own frame_prefix to frame ids only
        self.joint_names = list(self.twin.joint_names)
        self.odom_frame, self.base_frame = pre + p["odom_frame"], pre + p["base_frame"]

        topics = self.interface.profile.topics if self.interface is not None else {}
        self.pub_joints = self.create_publisher(JointState, topics.get("joint_states", "joint_states"), 10)
        # odometry only for a mobile base: a fixed one would advertise a topic that never speaks
        self.pub_odom = (self.create_publisher(Odometry, topics.get("odom", "odom"), 10)
                         if self.twin.state().pose is not None else None)
        self.TFMessage = tf_message()
        self.pub_tf = self.create_publisher(self.TFMessage, "/tf", 100)
        self.pub_motors = (self.create_publisher(JointState, "motor_states", 10)
                           if self.twin.motor_names else None)
        self.pub_clock = self.create_publisher(Clock, "/clock", 10) if p["publish_clock"] else None
        self.pub_overrun = self.create_publisher(Float64, "~/frame_cost", 10)  # worst frame of the last second [s]
        self.pub_reference = self.create_publisher(PoseStamped, "reference_pose", 10)  # rose mode only
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.probe_err = {}
        self.probe_err_untimed = {}
        self.probe_kin = None  # the probes' kinematics, where any are compared (_probe_names)
        self.probe_names = self._probe_names([n for n in p["probes"] if n])
        for name in self.probe_names:
            self.create_subscription(PointStamped, f"probes/{name}", lambda m, n=name: self._on_probe(n, m), 50)
            self.probe_err[name] = self.create_publisher(Float64, f"probe_error/{name}", 10)
            self.probe_err_untimed[name] = self.create_publisher(Float64, f"probe_error_untimed/{name}", 10)
        self.history = collections.OrderedDict()  # stamp (ns) -> state, for time-aligned probe checks

        self._cmd_sub = None
        self._cmd_kind = None  # Twist or TwistStamped subscribed (cmd_vel_type auto: as published)
        self._auto_timer = None  # cmd_vel_type auto: looks for publishers until one is found
        # twists and trajectories received between frames, applied at the next; the watchdog
        self.command_queue = CommandQueue(self.twin)
        if p["reference"] == "cmd_vel":
            self._setup_cmd_vel()
        if TRAJECTORY in self.twin.commands:  # also beside cmd_vel where the twin takes both
            from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

            self.create_subscription(JointTrajectoryMsg, p["joint_trajectory_topic"], self._on_trajectory, 10)
        self.joint_commands = {"accepted": 0, "refused": 0, "last_refusal": None, "wall": -math.inf}
        if self.twin.commands:  # ros2_control's topic-based hardware interfaces
            self.create_subscription(JointState, p["joint_commands_topic"], self._on_joint_command,
                                     QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.model_io, self.pub_outputs = None, {}  # set by _setup_model_io
        self._setup_model_io()
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(SetBool, "~/pause", self._on_pause)
        self.sim_interfaces = None
        from . import sim_interfaces

        if sim_interfaces.available():
            self.sim_interfaces = sim_interfaces.SimulationInterfaces(self)
        else:
            self.get_logger().warning("simulation_interfaces is missing: its services are not offered (on a ROS "
                                      "install: apt install ros-$ROS_DISTRO-simulation-interfaces; in the pip "
                                      "environment: tools/setup.sh generates it)")

        self.period = 1.0 / p["publish_rate"]
        self.paused = False
        self.stopped = False  # simulation_interfaces' STATE_STOPPED: paused at the initial state
        self.solver_failures = 0
        self._failures_in_row = 0
        self.last_failure = None  # text of the last model failure (also on /diagnostics for 5 s)
        self._last_failure_wall = -math.inf
        # simulated time against the wall clock, stamps, and the frame accounting
        self.frame_clock = FrameClock(p["real_time_factor"], self.use_sim_time, self._ros_now_ns())
        self._pending = None  # the state computed for the next frame
        self._pending_stamp = None  # its stamp, once a fleet clock published its joints
        self.publish_times = collections.deque(maxlen=100000)  # for jitter statistics
        # the frame clock is the wall clock: with use_sim_time the node's ROS clock follows the
        # /clock this very timer publishes
        from rclpy.clock import Clock as RosClock, ClockType

        wall = RosClock(clock_type=ClockType.STEADY_TIME)
        self.timer = self.create_timer(self.period, self._tick, clock=wall) if own_timer else None

    # -- interface profiles ----------------------------------------------------------------
    def _setup_interface(self, p, extra: dict):
        """Stand in for another program's ROS interface (the robot's profile ``interface``):
        its topics, frames and frame prefix replace the node's own parameters (self.p says
        what is in force); its parameters, services, joint names and limits come with it."""
        from bondsim_ros.twin.interface_profile import ProfileError

        from .interface_profile import ProfileInterface, load_interface

        if p["reference"] != "cmd_vel":
            raise ValueError(f"invalid dynamics_node parameters: interface: {p['interface']} takes velocity "
                             f"commands; it needs reference cmd_vel, not {p['reference']}")
        if self.twin.state().pose is None:
            raise ValueError(f"invalid dynamics_node parameters: interface: {p['model']} has no planar base")
        try:
            profile = load_interface(self.robot, p["interface"], self.twin.joint_names)
        except ProfileError as exc:
            raise ValueError(f"invalid dynamics_node parameters: interface: {exc}") from None
        given = set(extra) | set(self._parameter_overrides)  # programmatic, or from the command line / a file
        for name in sorted(given & set(profile.ignored_parameters)):
            self.get_logger().info(f"{name}: no effect in the twin ({profile.ignored_parameters[name]})")
        unknown = sorted(set(extra) - {q.name for q in profile.parameters} - set(profile.ignored_parameters))
        if unknown:
            raise ValueError(f"unknown parameter {unknown[0]!r} (interface {profile.name} declares "
                             f"{', '.join(q.name for q in profile.parameters)})")
        self.interface = ProfileInterface(self, profile)
        p["cmd_vel_topic"], p["cmd_vel_type"] = profile.topics["cmd_vel"], profile.cmd_vel_type
        p["odom_frame"], p["base_frame"] = profile.odom_frame, profile.base_frame
        if self.interface.frame_prefix is not None:
            p["frame_prefix"] = self.interface.frame_prefix
        self.get_logger().info(f"interface {profile.name} ({profile.source}): cmd_vel on {p['cmd_vel_topic']}, "
                               f"frames {p['frame_prefix']}{p['odom_frame']} -> {p['frame_prefix']}{p['base_frame']}, "
                               f"services {', '.join(self.interface.services) or 'none'}")

    def stop_base(self):
        """Bring the base to rest at the next frame and drop the command in force (a bumper stop)."""
        self.command_queue.stop()

    # -- parameters ----------------------------------------------------------------------
    def _validate(self, p):
        """What the table (PARAMS) cannot say of one value alone; types, ranges and choices are
        checked by declare_parameters."""
        errors = []
        for key in ("cmd_vel_topic", "joint_trajectory_topic", "joint_commands_topic"):
            try:
                self.resolve_topic_name(p[key])
            except Exception as exc:  # noqa: BLE001 - rclpy's name validation: say which parameter
                errors.append(f"{key}: {p[key]!r} is not a valid topic name ({exc})")
        if p["reference"] == "waypoints" and (len(p["waypoints"]) < 3 or len(p["waypoints"]) % 3):
            errors.append("waypoints: give x, y, phi triples")
        if p["robot_config"] and not Path(p["robot_config"]).is_file():
            errors.append(f"robot_config: no such file {p['robot_config']!r}")
        if errors:
            raise ValueError("invalid dynamics_node parameters: " + "; ".join(errors))

    def _apply_parameters(self, changes: dict):
        """Apply accepted changes of the live parameters (values already checked against
        PARAMS) and report them on /diagnostics; a ValueError refuses the whole request."""
        if "publish_rate" in changes and self.timer is None:
            raise ValueError("publish_rate: this twin's frames come from a shared frame clock (a fleet); "
                             "its rate is set at start")
        old = {k: self.p[k] for k in changes}
        if "real_time_factor" in changes:
            self.p["real_time_factor"] = changes["real_time_factor"]
            self.frame_clock.set_real_time_factor(changes["real_time_factor"], self.paused, self._ros_now_ns())
        if "publish_rate" in changes:
            self.p["publish_rate"] = changes["publish_rate"]
            self.period = 1.0 / changes["publish_rate"]
            self.timer.timer_period_ns = int(round(self.period * 1e9))
            self.timer.reset()  # the new period from now, not after the old one ran out
            self.frame_clock.restart_grid()  # the skipped-frame count restarts on the new grid
        if "cmd_vel_timeout" in changes:
            self.p["cmd_vel_timeout"] = changes["cmd_vel_timeout"]
        if "max_linear_velocity" in changes or "max_angular_velocity" in changes:
            self.p.update({k: v for k, v in changes.items() if k.startswith("max_")})
            self.limits.max_linear = self.p["max_linear_velocity"]
            self.limits.max_angular = self.p["max_angular_velocity"]
            if self.follower is not None:
                self.follower.max_linear, self.follower.max_angular = self.limits.max_linear, self.limits.max_angular
            self.command_queue.limits_changed()  # the command in force, clamped anew
        text = ", ".join(f"{k} {old[k]:g} -> {v:g}" for k, v in changes.items())
        self.get_logger().info(f"parameters set: {text}")
        pre = self.p["frame_prefix"]
        st = DiagnosticStatus(level=DiagnosticStatus.OK, name=f"{pre}{self.twin.name}/parameters",
                              hardware_id=f"{pre}{self.twin.name}_twin", message=f"set: {text}")
        st.values = [KeyValue(key=k, value=f"{self.p[k]:g}") for k, spec in PARAMS.items() if spec.live]
        arr = DiagnosticArray(status=[st])
        arr.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(arr)

    # -- cmd_vel ---------------------------------------------------------------------------
    def _setup_cmd_vel(self):
        """``auto``: subscribe with the type of the publishers actually present, and only once
        one is: a topic has one type per DDS participant (all nodes of a process), so a
        subscription of the other type would make an in-process publisher fail (``up
        --bridge``), and switching types while the old subscription is still held by the
        executor raises RCLError "incompatible type"."""
        self._cmd_kind = None
        kind = self.p["cmd_vel_type"]
        if kind == "auto":
            self._auto_timer = self.create_timer(0.2, self._recheck_cmd_type)
            self._recheck_cmd_type()
        else:
            self._subscribe_cmd(kind)

    def _publisher_kinds(self) -> set:
        topic = self.resolve_topic_name(self.p["cmd_vel_topic"])
        kinds = set()
        for info in self.get_publishers_info_by_topic(topic):
            if info.topic_type in ("geometry_msgs/msg/TwistStamped", "geometry_msgs/msg/Twist"):
                kinds.add("stamped" if info.topic_type.endswith("TwistStamped") else "twist")
        return kinds

    def _recheck_cmd_type(self):
        """Follow the publishers' type; with publishers of both types, keep the current one
        (only one can be received) and say so. Never raises: a failed switch is retried."""
        try:
            kinds = self._publisher_kinds()
            if not kinds or self._cmd_kind in kinds:
                if len(kinds) == 2:
                    self.get_logger().warning(
                        f"{self.p['cmd_vel_topic']} has Twist and TwistStamped publishers; only {self._cmd_kind} "
                        f"is received (one type per topic and process)", throttle_duration_sec=10.0)
                return
            kind = "stamped" if "stamped" in kinds else "twist"
            if self._cmd_sub is not None:
                self.get_logger().info(f"cmd_vel publisher uses {kind}: resubscribing")
                self.destroy_subscription(self._cmd_sub)
                self._cmd_sub, self._cmd_kind = None, None
            self._subscribe_cmd(kind)
            self._auto_timer.timer_period_ns = 1_000_000_000  # found: look again once a second
        except Exception as exc:  # noqa: BLE001 - e.g. the old subscription not yet released
            self._auto_timer.timer_period_ns = 200_000_000  # retry soon, not once a second
            self.get_logger().warning(f"cmd_vel: cannot subscribe yet ({exc}); retrying",
                                      throttle_duration_sec=5.0)

    def _subscribe_cmd(self, kind):
        """No QoS-event handlers: each holds the reader alive until the executor lets go of it,
        and a reader still alive keeps the topic's old type (CI once saw a switch refused for
        10 s)."""
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        events = SubscriptionEventCallbacks(use_default_callbacks=False)
        if kind == "stamped":
            self._cmd_sub = self.create_subscription(TwistStamped, self.p["cmd_vel_topic"],
                                                     lambda m: self._on_cmd(m.twist), qos,
                                                     event_callbacks=events)
        else:
            self._cmd_sub = self.create_subscription(Twist, self.p["cmd_vel_topic"], self._on_cmd, qos,
                                                     event_callbacks=events)
        self._cmd_kind = kind

    def _on_cmd(self, twist):
        """Check and clamp the command now; apply it at the next frame (CommandQueue)."""
        vals = (twist.linear.x, twist.linear.y, twist.angular.z)
        if self.interface is not None:  # disabled, held after a bumper contact, or the profile's limits
            vals = self.interface.command(*vals)
            if vals is None:
                return
        try:
            applied = self.command_queue.twist(*vals)
        except CommandError as exc:
            self.get_logger().warning(f"rejected cmd_vel: {exc}", throttle_duration_sec=1.0)
            return
        if any(abs(a - v) > 1e-12 for a, v in zip(applied, vals)):
            self.get_logger().warning(f"cmd_vel {vals} clamped to {applied}", throttle_duration_sec=1.0)

    # -- a model's own signals: Float64 topics -> parameters, columns -> Float64 topics ---------
    def _setup_model_io(self):
        from .model_io import ModelIO

        p = self.p
        # the node's own topics (label: the name it is documented by)
        own = {t: t for t in ("joint_states", "odom", "/tf", "/clock", "/diagnostics", "motor_states",
                              "reference_pose", "~/frame_cost")}
        own.update({p[k]: k for k in ("cmd_vel_topic", "joint_trajectory_topic", "joint_commands_topic")})
        own.update({f"{kind}/{n}": f"{kind}/NAME" for n in self.probe_names
                    for kind in ("probes", "probe_error", "probe_error_untimed")})
        try:
            self.model_io = ModelIO(self.twin, [o for o in p["outputs"] if o])
            reserved = {self.resolve_topic_name(t): f"dynamics_node's {what}" for t, what in own.items()}
            self.model_io.check_resolved(self.resolve_topic_name, reserved)
        except ValueError as exc:
            raise ValueError(f"invalid dynamics_node parameters: model/outputs: {exc}") from None
        for topic in self.model_io.inputs:
            self.create_subscription(Float64, topic, lambda m, t=topic: self._on_param(t, m),
                                     QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.pub_outputs = {topic: self.create_publisher(Float64, topic, 10) for topic in self.model_io.outputs}

    def _on_param(self, topic, msg):
        """Check now, apply at the next frame, as cmd_vel."""
        try:
            self.model_io.receive(topic, msg.data)
        except CommandError as exc:
            self.get_logger().warning(f"rejected {topic}: {exc}", throttle_duration_sec=1.0)

    # -- probes ----------------------------------------------------------------------------
    def _probe_names(self, names):
        """The compared probes (empty: all of the mechanism's), from the same mechanism XML the
        probe node reads; the model's own probe position comes from its joints and base pose."""
        from bondsim_ros.mechanism.probes import ProbeKinematics

        self.probe_kin = ProbeKinematics.from_file(self.p["mechanism"] or self.twin.mechanism)
        available = self.probe_kin.probe_names
        unknown = [n for n in names if n not in available]
        if unknown:
            raise ValueError(f"invalid dynamics_node parameters: probes: {unknown} are not probes of the mechanism "
                             f"(available: {sorted(available)})")
        return names or list(available)

    def _probe_world(self, name, state):
        return self.probe_kin.probe_points(state.pose or (0.0, 0.0, 0.0), state.joint_map())[name]

    def _on_probe(self, name, msg: PointStamped):
        got = np.array([msg.point.x, msg.point.y, msg.point.z])
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        state = self.history.get(stamp)
        if state is not None:  # time-aligned: same stamp as the joint state it came from
            self.probe_err[name].publish(Float64(data=float(np.linalg.norm(got - self._probe_world(name, state)))))
        # untimed, like the paper's pipe: against the newest model state
        latest = self.twin.state()
        self.probe_err_untimed[name].publish(Float64(data=float(np.linalg.norm(got - self._probe_world(name, latest)))))

    # -- joint trajectories ------------------------------------------------------------------
    def _on_trajectory(self, msg):
        """Check now, apply at the next frame (as cmd_vel). Point times are relative to the
        header stamp (a zero stamp: now), as joint_trajectory_controller reads them."""
        try:
            n = len(msg.joint_names)
            if n == 0 or not msg.points:
                raise CommandError("trajectory without joint names or points")
            times = np.array([pt.time_from_start.sec + pt.time_from_start.nanosec * 1e-9 for pt in msg.points])
            pos = np.array([list(pt.positions) for pt in msg.points], dtype=float)
            if pos.shape != (len(msg.points), n):
                raise CommandError(f"every point needs {n} positions")
            vel = None
            if all(len(pt.velocities) == n for pt in msg.points):
                vel = np.array([list(pt.velocities) for pt in msg.points], dtype=float)
            ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            start = None if ns == 0 else self.sim_time_of_stamp(ns)
            traj = JointTrajectory(list(msg.joint_names), times, pos, vel, start)
            unknown = [j for j in traj.joint_names if j not in self.twin.joint_names]
            if unknown:
                raise CommandError(f"unknown joints {unknown}")
            # checked now: refused at the frame, it would count as a model failure
            driven = self.twin.trajectory_joints
            not_driven = [j for j in traj.joint_names if j not in driven]
            if not_driven:
                raise CommandError(f"joints {not_driven} are not driven by {self.twin.name}'s trajectory interface "
                                   f"(driven: {driven})")
        except (CommandError, ValueError, TypeError) as exc:
            self.get_logger().warning(f"rejected joint trajectory: {exc}", throttle_duration_sec=1.0)
            return
        self.command_queue.trajectory(traj)

    # -- joint commands (ros2_control's topic-based hardware interfaces) -------------------------
    def _on_joint_command(self, msg):
        """Check now, apply at the next frame, as cmd_vel and joint_trajectory: positions become
        the trajectory interface's set points, wheel speeds the base's twist."""
        from .joint_commands import JointCommandError, parse

        try:
            cmd = parse(msg.name, msg.position, msg.velocity, msg.effort, self.twin,
                        twist_allowed=self.p["reference"] == "cmd_vel")
            twist = self.twin.limit_twist(*cmd.twist) if cmd.twist is not None else None
        except (JointCommandError, CommandError) as exc:
            jc = self.joint_commands
            jc["refused"] += 1
            jc["last_refusal"], jc["wall"] = f"refused: {exc}", time.monotonic()
            self.get_logger().warning(f"{self.p['joint_commands_topic']}: {exc}", throttle_duration_sec=1.0)
            return
        self.joint_commands["accepted"] += 1
        if cmd.positions:
            names = list(cmd.positions)
            # one point at time 0: the set point from now on, held (a position command interface)
            self.command_queue.trajectory(JointTrajectory(names, np.zeros(1),
                                                          np.array([[cmd.positions[n] for n in names]])))
        if twist is not None:
            self.command_queue.twist(*cmd.twist)  # the cmd_vel watchdog covers wheel speeds too

    # -- services --------------------------------------------------------------------------
    def restart(self):
        """Back to the initial state, with simulated time 0 at this wall-clock instant. The
        reset state is the next frame (paused: published now), so resets never stop
        /joint_states."""
        self.twin.reset()
        self.history.clear()
        self._pending = self.twin.state()
        self.frame_clock.anchor(0.0, self._ros_now_ns())
        if self.paused:
            self.publish_pending()

    def pause(self):
        """Stop the frame loop; the state computed for the next frame is published now, so the
        last state published is the one the simulation holds."""
        if not self.paused:
            self.frame_clock.hold(self.twin.t)
            self.paused = True
            self.publish_pending()

    def resume(self):
        if self.paused:
            self.frame_clock.anchor(self.twin.t, self._ros_now_ns())
            self.paused, self.stopped = False, False

    def stop(self):
        """simulation_interfaces' STATE_STOPPED: paused at the initial state."""
        self.pause()
        self.restart()
        self.stopped = True

    def step_frames(self, n: int):
        """While paused: ``n`` frames, each 1/publish_rate x real_time_factor simulated seconds
        after the one before, each published as the frame loop would (commands received since
        are applied first)."""
        self.stopped = False
        t0, dt = self.twin.t, self.period * self.p["real_time_factor"]
        for k in range(1, n + 1):
            target = t0 + k * dt  # not a running sum: n frames are exactly n * dt
            try:
                self._apply_commands()
                state = self.twin.step_to(target)
                self._failures_in_row = 0
            except Exception as exc:  # noqa: BLE001 - a model failure must not end the node
                self._solver_failed(exc, f"stepping to t={target:.3f} s")
                state = self.twin.state()
            self.publish_state(state)
            self.frame_clock.frames += 1
        self.frame_clock.hold(self.twin.t)

    def place(self, x: float, y: float, yaw: float):
        """Put the base at (x, y, yaw) in odom (simulation_interfaces' SetEntityState): shown by
        the next frame, or now when paused."""
        self._pending = self.twin.set_pose(x, y, yaw)
        if self.paused:
            self.publish_pending()

    def _on_reset(self, request, response):
        try:
            self.restart()
            response.success, response.message = True, "twin reset to its initial state"
        except Exception as exc:  # noqa: BLE001 - a service call must never take the node down
            self._solver_failed(exc, "reset")
            response.success, response.message = False, f"reset failed: {type(exc).__name__}: {exc}"
        return response

    def _on_pause(self, request, response):
        if request.data:
            self.pause()
        else:
            self.resume()
        response.success, response.message = True, "paused" if self.paused else "running"
        return response

    # -- the frame loop --------------------------------------------------------------------
    def _ros_now_ns(self) -> int:
        """The ROS time stamps are based on (not read with use_sim_time: the stamps are then
        the simulated time itself)."""
        return 0 if self.use_sim_time else self.get_clock().now().nanoseconds

    # the frame clock's (frame_clock.py) time mapping and counters, as the node's
    def stamp_ns(self, t: float) -> int:
        return self.frame_clock.stamp_ns(t)

    def sim_time_of_stamp(self, ns: int) -> float:
        return self.frame_clock.sim_time_of_stamp(ns)

    def sim_time_now(self) -> float:
        return self.frame_clock.sim_time_now()

    @property
    def frames(self) -> int:
        return self.frame_clock.frames

    @property
    def skipped_frames(self) -> int:
        return self.frame_clock.skipped_frames

    @property
    def overruns(self) -> int:
        return self.frame_clock.overruns

    @overruns.setter
    def overruns(self, value: int):  # a fleet's warm-up forgets them (graph.FleetClock.reset_stats)
        self.frame_clock.overruns = value

    @property
    def max_lag(self) -> float:
        return self.frame_clock.max_lag

    @max_lag.setter
    def max_lag(self, value: float):
        self.frame_clock.max_lag = value

    def _tick(self):
        """One frame: publish the state computed one frame ahead, then compute the next one.

        Publishing first keeps the solver's varying cost out of the publication times (low
        jitter); the price is that a new command acts from the next frame (30 ms)."""
        if self.paused or not self.context.ok():  # a tick racing the shutdown publishes nothing
            self.frame_clock.restart_grid()
            return
        self._count_skipped_frames()
        tic = time.perf_counter()
        self.publish_pending()
        self.compute_next(publish_cost=time.perf_counter() - tic)

    def _count_skipped_frames(self):
        """Count the frames the timer never ran (FrameClock.count_skipped), on the timer's grid."""
        until = self.timer.time_until_next_call()  # ns, on the timer's clock: CLOCK_MONOTONIC
        if until is None:
            return
        missed = self.frame_clock.count_skipped(time.monotonic_ns() + until, self.timer.timer_period_ns)
        if missed > 0:
            self.get_logger().warning(
                f"the frame timer ran {missed * self.period * 1e3:.0f} ms late: {missed} frames not published "
                f"(the process was held up; {self.skipped_frames} so far)", throttle_duration_sec=2.0)

    def publish_pending(self):
        if self._pending is not None:
            self.publish_state(self._pending)
            self._pending = None

    def publish_pending_joints(self):
        """First half of publish_pending, for a fleet clock: /joint_states only (bondsim_ros.ros.graph.FleetClock)."""
        if self._pending is not None:
            self._pending_stamp = self.publish_joints(self._pending)

    def publish_pending_rest(self, tf_batch: list):
        """Second half: odometry and the rest; the odom -> base transform goes into ``tf_batch``."""
        if self._pending is not None:
            self.publish_rest(self._pending, self._pending_stamp, tf_batch)
            self._pending = None

    def compute_next(self, publish_cost=0.0):
        """Step the twin to the next frame's instant; ``publish_cost`` (s) is what publishing
        this frame took, part of its cost: a publish that blocks is an overrun too."""
        if self.paused:
            return
        tic = time.perf_counter()
        target = self.sim_time_now() + self.period * self.p["real_time_factor"]  # the next frame's instant
        try:
            self._apply_commands()
            self._pending = self.twin.step_to(target)
            self._failures_in_row = 0
        except Exception as exc:  # noqa: BLE001 - a model failure must not end the node
            self._solver_failed(exc, f"stepping to t={target:.3f} s")
            self._pending = self.twin.state()  # hold the last state: /joint_states goes on
        took = time.perf_counter() - tic + publish_cost
        lag = max(0.0, self.sim_time_now() - target) / self.p["real_time_factor"]
        if self.frame_clock.frame_done(took, lag, self.period):
            self.get_logger().warning(
                f"frame took {took * 1e3:.1f} ms (period {self.period * 1e3:.1f} ms), behind by {lag * 1e3:.1f} ms "
                f"({self.overruns} overruns so far)", throttle_duration_sec=2.0)
        if self.frames % max(1, int(round(self.p["publish_rate"]))) == 0:  # once a second: worst frame cost
            self.pub_overrun.publish(Float64(data=float(self.frame_clock.worst)))
            self.publish_diagnostics(self._pending)
            self.frame_clock.take_worst()

    def _apply_commands(self):
        """The commands received since the last frame, the watchdog and the waypoint follower."""
        self.model_io.apply()
        watchdog = self.p["cmd_vel_timeout"] if self.p["reference"] == "cmd_vel" else None
        if self.command_queue.apply(watchdog):
            self.get_logger().info("cmd_vel timeout: stopping")
        if self.follower is not None:
            self.twin.set_twist(*self.follower.command(self.twin.state().pose))

    def _solver_failed(self, exc, doing: str):
        """Report a failure of the model on /diagnostics (ERROR) and the log, then restart the
        integration from the last good state; a second failure in a row resets the twin."""
        self.solver_failures += 1
        self._failures_in_row += 1
        try:
            if self._failures_in_row <= 1:
                action = self.twin.recover()
            else:
                self.twin.reset()
                self.frame_clock.anchor(0.0, self._ros_now_ns())
                self.history.clear()
                action = "reset to the initial state (the restart from the last state failed too)"
        except Exception as exc2:  # noqa: BLE001
            self.twin.reset()
            self.frame_clock.anchor(0.0, self._ros_now_ns())
            action = f"reset to the initial state (recovery failed: {type(exc2).__name__}: {exc2})"
        self.last_failure = f"{type(exc).__name__} while {doing}: {exc}; twin {action}"
        self._last_failure_wall = time.monotonic()
        self.get_logger().error(self.last_failure, throttle_duration_sec=1.0)
        try:
            self.publish_diagnostics(self.twin.state())
        except Exception:  # noqa: BLE001 - reporting must not fail the recovery
            pass

    def publish_diagnostics(self, state):
        """The twin's own diagnostics and whether the node keeps up, on /diagnostics (1 Hz)."""
        arr = DiagnosticArray()
        arr.header.stamp = self._stamp_msg(self.stamp_ns(state.t))
        pre = self.p["frame_prefix"]
        hw = f"{pre}{self.twin.name}_twin"
        levels = {"OK": DiagnosticStatus.OK, "WARN": DiagnosticStatus.WARN, "ERROR": DiagnosticStatus.ERROR}
        now = time.monotonic()
        records = list(self.twin.diagnostics(state))
        records.append(solver_status(self.twin.name, self.frame_clock, self.solver_failures, self.last_failure,
                                     now - self._last_failure_wall, state.t))
        if self.twin.commands:
            records.append(joint_command_status(self.twin.name, self.joint_commands, now))
        for d in records:
            st = DiagnosticStatus(level=levels.get(d.level, DiagnosticStatus.WARN), name=pre + d.name,
                                  message=d.message, hardware_id=hw)
            st.values = [KeyValue(key=str(k), value=str(v)) for k, v in d.values.items()]
            arr.status.append(st)
        self.pub_diag.publish(arr)

    def publish_state(self, state):
        tf_batch = []
        self.publish_rest(state, self.publish_joints(state), tf_batch)
        self.pub_tf.publish(self.TFMessage(transforms=tf_batch))

    def publish_joints(self, state):
        """/joint_states (and /clock), stamped with the simulated instant of ``state``; returns
        that stamp. The history maps the stamp back to the model state, so returned probe
        points are compared at exactly the same instant."""
        ns = self.stamp_ns(state.t)
        self.frame_clock.last_stamp_ns = ns
        self.publish_times.append(time.perf_counter())
        stamp = self._stamp_msg(ns)
        if self.pub_clock is not None:
            self.pub_clock.publish(Clock(clock=self._stamp_msg(int(round(state.t * 1e9)))))
        js = JointState()
        js.header.stamp = stamp
        if self.interface is not None:
            js.name, js.position, js.velocity = self.interface.joint_state(state)
        else:
            js.name = self.joint_names
            js.position = state.position.tolist()
            js.velocity = state.velocity.tolist()
            js.effort = state.effort.tolist()
        self.pub_joints.publish(js)
        self.history[ns] = state
        while len(self.history) > 600:
            self.history.popitem(last=False)
        return stamp

    @staticmethod
    def _stamp_msg(ns: int):
        from rclpy.time import Time

        return Time(nanoseconds=ns).to_msg()

    def publish_rest(self, state, stamp, tf_batch: list):
        """/odom, motor states, the model's output topics and the reference at ``stamp``; odom ->
        base appended to ``tf_batch``. ``state`` is always the twin's newest (the frame loop
        publishes a state before stepping on), so the output columns are read from the twin."""
        for topic, value in self.model_io.values():
            self.pub_outputs[topic].publish(Float64(data=value))
        if self.pub_motors is not None:
            names, pos, vel, eff = self.twin.motor_states(state)
            motors = JointState()
            motors.header.stamp = stamp
            motors.name = list(names)
            motors.position, motors.velocity, motors.effort = (np.asarray(v, float).tolist() for v in (pos, vel, eff))
            self.pub_motors.publish(motors)
        if self.interface is not None:
            self.interface.publish_motor_readings(state, stamp)
        if state.pose is None:  # a fixed base: no odometry
            return
        x, y, phi = state.pose
        qz, qw = math.sin(phi / 2), math.cos(phi / 2)
        odom = Odometry()
        odom.header.stamp = stamp
        odom.header.frame_id = self.odom_frame
        odom.child_frame_id = self.base_frame
        odom.pose.pose.position.x, odom.pose.pose.position.y = x, y
        odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = qz, qw
        bvx, bvy, wz = state.twist_body or (0.0, 0.0, 0.0)
        odom.twist.twist.linear.x, odom.twist.twist.linear.y, odom.twist.twist.angular.z = bvx, bvy, wz
        cov = np.diag([1e-6, 1e-6, 1e6, 1e6, 1e6, 1e-6]).ravel().tolist()  # planar: z, roll, pitch unknown
        odom.pose.covariance = cov
        odom.twist.covariance = cov
        self.pub_odom.publish(odom)
        tf = TransformStamped()
        tf.header.stamp = stamp
        tf.header.frame_id = self.odom_frame
        tf.child_frame_id = self.base_frame
        tf.transform.translation.x, tf.transform.translation.y = x, y
        tf.transform.rotation.z, tf.transform.rotation.w = qz, qw
        if self.interface is None or self.interface.publish_tf:
            tf_batch.append(tf)
        if state.reference is not None:
            ref = PoseStamped()
            ref.header.stamp = stamp
            ref.header.frame_id = self.odom_frame
            ref.pose.position.x, ref.pose.position.y = float(state.reference[0]), float(state.reference[1])
            ref.pose.orientation.z, ref.pose.orientation.w = math.sin(state.reference[2] / 2), math.cos(state.reference[2] / 2)
            self.pub_reference.publish(ref)


def main(args=None):
    run_node(DynamicsNode, args)


if __name__ == "__main__":
    main()
