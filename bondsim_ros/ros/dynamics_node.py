"""dynamics_node: any robot's bond-graph model (a Twin, bondsim_ros.twin.protocol) in (scaled)
real time on ROS 2.

Publishes /joint_states (non-virtual joints in mechanism-XML order, URDF names), /clock, and for
a mobile base /odom with odom -> base_footprint on /tf (REP-105); follows the model's built-in
reference, /cmd_vel (Twist or TwistStamped), a waypoint list or trajectory_msgs/JointTrajectory;
compares probe points returned by the probe node with its own at the same stamp (the paper's
named pipe, without its one-frame lag). Every message is stamped with the simulated instant of
the state it reports. Nothing here knows a robot: names, motors and gears are the twin's.

The node wires publishers, subscriptions, timers and services to ROS-free parts tested alone
(frame_clock, command_queue, joint_commands, model_io, node_diagnostics; twin/probe_check,
twin/failures); parameters: dynamics_params, state topics: state_topics, cmd_vel: cmd_vel_subscription.
"""
from __future__ import annotations

import math
import time

import numpy as np
from geometry_msgs.msg import PointStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import SetBool, Trigger

from bondsim_ros.twin.failures import SolverFailures
from bondsim_ros.twin.placement import PlacedTwin
from bondsim_ros.twin.probe_check import ProbeCheck
from bondsim_ros.twin.protocol import BUILTIN, COMMAND_OF_REFERENCE, TRAJECTORY, TWIST, CommandError, Limits
from bondsim_ros.twin.waypoints import WaypointFollower
from bondsim_ros.twin.protocol import TWIN_OPTIONS

from . import messages
from ._env import declare_parameters, run_node
from .command_queue import CommandQueue
from .dynamics_params import PARAMS, live_values, start_parameters, validate
from .frame_clock import FrameClock
from .joint_commands import JointCommandError, JointCommands
from .node_diagnostics import joint_command_status, parameters_status, solver_status
from .state_topics import OWN_TOPICS, StateTopics

__all__ = ["DynamicsNode", "PARAMS", "main"]

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


def ready_message(twin, seconds: float, reference: str, builtin_path: str = "") -> str:
    """The line that says the twin is built: its reference only where it has one. The built-in
    reference ("rose", the default, or "builtin": the model's own) is named as the robot names it
    (``builtin_path``: the Robotino's rose), else "builtin"; a model that runs its own inputs and
    follows no path has none to name."""
    if COMMAND_OF_REFERENCE[reference] == BUILTIN:
        if twin.state().reference is None:
            return f"{twin.name} ready in {seconds:.2f} s ({twin.unknowns} unknowns)"
        reference = builtin_path or "builtin"
    return f"{twin.name} ready in {seconds:.2f} s ({twin.unknowns} unknowns, reference={reference})"


class DynamicsNode(Node):
    def __init__(self, name="dynamics_node", overrides: dict | None = None, own_timer: bool = True, **kwargs):
        parameters, extra = start_parameters(overrides)
        super().__init__(name, parameter_overrides=parameters, **kwargs)
        self.p = p = self._read_parameters()
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
        self.get_logger().info(ready_message(self.twin, time.perf_counter() - tic, p["reference"],
                                             self.robot.builtin_path))
        for line in getattr(self.twin, "unread_commands", ()):
            self.get_logger().warning(line)
        self.interface = None  # the interface profile the node stands in with (ros/interface_profile.py)
        if p["interface"]:
            from .interface_profile import apply_profile

            self.interface = apply_profile(self, p, extra)
        self.use_sim_time = bool(self.get_parameter("use_sim_time").value)
        self.follower = None
        if p["reference"] == "waypoints":
            wp = np.asarray(p["waypoints"], dtype=float).reshape(-1, 3)
            self.follower = WaypointFollower(wp, limits.max_linear, limits.max_angular)

        from bondsim_ros.mechanism.probes import ProbeKinematics

        # the compared probes (empty: all of the mechanism's), from the same mechanism XML the
        # probe node reads; the model's own probe position comes from its joints and base pose
        try:
            kinematics = ProbeKinematics.from_file(p["mechanism"] or self.twin.mechanism)
        except ValueError as exc:
            raise ValueError(f"invalid dynamics_node parameters: mechanism: {exc}") from None
        try:
            self.probes = ProbeCheck(kinematics, [n for n in p["probes"] if n])
        except ValueError as exc:
            raise ValueError(f"invalid dynamics_node parameters: probes: {exc}") from None
        self._check_command_topics()
        self.model_io = self._model_io()
        pre = p["frame_prefix"]
        self.topics = StateTopics(self, self.twin, self.interface, pre + p["odom_frame"], pre + p["base_frame"],
                                  p["publish_clock"], self.model_io.outputs)
        self.probe_errors = {}  # name -> (time-aligned, untimed) error publishers
        for name in self.probes.names:
            self.create_subscription(PointStamped, f"probes/{name}", lambda m, n=name: self._on_probe(n, m), 50)
            self.probe_errors[name] = (self.create_publisher(Float64, f"probe_error/{name}", 10),
                                       self.create_publisher(Float64, f"probe_error_untimed/{name}", 10))

        # twists and trajectories received between frames, applied at the next; the watchdog
        self.command_queue = CommandQueue(self.twin)
        self.cmd_vel = None
        if p["reference"] == "cmd_vel":
            from .cmd_vel_subscription import CmdVelSubscription

            self.cmd_vel = CmdVelSubscription(self, p["cmd_vel_topic"], p["cmd_vel_type"], self.command_queue,
                                              self.interface)
        if TRAJECTORY in self.twin.commands:  # also beside cmd_vel where the twin takes both
            from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

            self.create_subscription(JointTrajectoryMsg, p["joint_trajectory_topic"], self._on_trajectory, 10)
        # wheel speeds are a velocity command: under a profile, through its enable, bumper stop and limits
        queue = self.command_queue if self.interface is None else self.interface.gated(self.command_queue)
        self.joint_commands = JointCommands(self.twin, queue, twist_allowed=p["reference"] == "cmd_vel")
        if self.twin.commands:  # ros2_control's topic-based hardware interfaces
            self.create_subscription(JointState, p["joint_commands_topic"], self._on_joint_command, RELIABLE)
        for topic in self.model_io.inputs:
            self.create_subscription(Float64, topic, lambda m, t=topic: self._on_param(t, m), RELIABLE)
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(SetBool, "~/pause", self._on_pause)
        from .sim_interfaces import offer

        self.sim_interfaces = offer(self)  # None where its package is missing

        self.period = 1.0 / p["publish_rate"]
        self.paused = False
        self._paused_diagnostics_at = 0.0  # monotonic time of the last /diagnostics while paused
        self._refusal_logged = {}  # topic -> monotonic time its last refusal was logged
        self.stopped = False  # simulation_interfaces' STATE_STOPPED: paused at the initial state
        self.failures = SolverFailures()
        # simulated time against the wall clock, stamps, and the frame accounting
        self.frame_clock = FrameClock(p["real_time_factor"], self.use_sim_time, self._ros_now_ns())
        # the state computed for the next frame: the first is the start
        self._pending = self.twin.state()
        self._clock_started = False  # start_clock: simulated time runs from the first frame
        self._pending_stamp = None  # its stamp, once a fleet clock published its joints
        self._published = None  # the state of the last frame published (its diagnostics)
        self._clocks_checked_at, self._other_clocks = -math.inf, 0  # warn_other_clocks
        # the frame clock is the wall clock: with use_sim_time the node's ROS clock follows the
        # /clock this very timer publishes
        from rclpy.clock import Clock as RosClock, ClockType

        wall = RosClock(clock_type=ClockType.STEADY_TIME)
        self.timer = self.create_timer(self.period, self._tick, clock=wall) if own_timer else None
        # a robot that could follow cmd_vel but runs another reference does not read it: a teleop
        # or Nav2 publishing there would move nothing without a word; said once. Looked at from
        # the frames, once a second: with a 1 Hz timer of its own beside the frame timer, 2 of 10
        # demo bags lacked a frame the node never counted as skipped (none of 10 this way)
        self._unread_cmd_vel_at = 0.0 if p["reference"] != "cmd_vel" and TWIST in self.robot.commands else None

    def _warn_unread_cmd_vel(self):
        now = time.monotonic()
        if self._unread_cmd_vel_at is None or now < self._unread_cmd_vel_at:
            return
        self._unread_cmd_vel_at = now + 1.0
        topic = self.resolve_topic_name(self.p["cmd_vel_topic"])
        try:
            publishers = self.count_publishers(topic)
        except Exception:  # noqa: BLE001 - a graph query during shutdown: nothing to say
            return
        if publishers:
            self.get_logger().warning(f"{publishers} publisher(s) on {topic}, but the reference is "
                                      f"{self.p['reference']!r}: cmd_vel is not read (start with reference "
                                      f"cmd_vel: `bondsim-ros up --reference cmd_vel`)")
            self._unread_cmd_vel_at = None

    def warn_other_clocks(self):
        """Another /clock publisher beside this twin's (a second twin, a simulator, a bag played
        with --clock): nodes on simulated time take every Clock message as the time, so two
        sources make it jump back and forth. Looked at once a second; said when their number
        changes."""
        now = time.monotonic()
        if self.topics.pub_clock is None or now < self._clocks_checked_at + 1.0:
            return
        self._clocks_checked_at = now
        try:
            others = self.count_publishers("/clock") - 1
        except Exception:  # noqa: BLE001 - a graph query during shutdown: nothing to say
            return
        if others > 0 and others != self._other_clocks:
            self.get_logger().warning(f"{others} other publisher(s) on /clock: a node on simulated time would "
                                      f"see the time jump between them; publish_clock:=false on all but one")
        self._other_clocks = others

    # -- parameters ----------------------------------------------------------------------
    def _read_parameters(self) -> dict:
        p = declare_parameters(self, PARAMS, on_change=self._apply_parameters, start_only=("use_sim_time",))
        validate(p, self.resolve_topic_name)
        return p

    def _apply_parameters(self, changes: dict):
        """Apply accepted changes of the live parameters (values already checked against
        PARAMS) and report them on /diagnostics; a ValueError refuses the whole request."""
        if "publish_rate" in changes and self.timer is None:
            raise ValueError("publish_rate: this twin's frames come from a shared frame clock (a fleet); "
                             "its rate is set at start")
        old = {k: self.p[k] for k in changes}
        self.p.update(changes)
        if "real_time_factor" in changes:
            self.frame_clock.set_real_time_factor(changes["real_time_factor"], self.paused, self._ros_now_ns(),
                                                  self.twin.t)
        if "publish_rate" in changes:
            self.period = 1.0 / changes["publish_rate"]
            self.timer.timer_period_ns = int(round(self.period * 1e9))
            self.timer.reset()  # the new period from now, not after the old one ran out
            self.frame_clock.restart_grid()  # the skipped-frame count restarts on the new grid
        if "max_linear_velocity" in changes or "max_angular_velocity" in changes:
            self.limits.max_linear = self.p["max_linear_velocity"]
            self.limits.max_angular = self.p["max_angular_velocity"]
            if self.follower is not None:
                self.follower.max_linear, self.follower.max_angular = self.limits.max_linear, self.limits.max_angular
            self.command_queue.limits_changed()  # the command in force, clamped anew
        text = ", ".join(f"{k} {old[k]:g} -> {v:g}" for k, v in changes.items())
        self.get_logger().info(f"parameters set: {text}")
        self.topics.diagnostics([parameters_status(self.twin.name, text, live_values(self.p))],
                                self.get_clock().now().to_msg(), self.p["frame_prefix"], self.twin.name)

    def stop_base(self):
        """Bring the base to rest at the next frame and drop the command in force (a bumper stop)."""
        self.command_queue.stop()

    # -- subscriptions: checked now, applied at the next frame -----------------------------
    def _check_command_topics(self):
        """The command topics the node subscribes to must be none of its own and all distinct:
        on another type (cmd_vel on odom) rcl refuses the subscription with a traceback; on the
        same type (joint commands on joint_states) the node took its own states for commands."""
        p, taken = self.p, {}
        if p["reference"] == "cmd_vel":
            taken["cmd_vel_topic"] = p["cmd_vel_topic"]
        if TRAJECTORY in self.twin.commands:
            taken["joint_trajectory_topic"] = p["joint_trajectory_topic"]
        if self.twin.commands:
            taken["joint_commands_topic"] = p["joint_commands_topic"]
        own = {self.resolve_topic_name(t): t for t in OWN_TOPICS}
        seen, bad = {}, []
        for key, topic in taken.items():
            try:
                name = self.resolve_topic_name(topic)
            except Exception as exc:  # noqa: BLE001 - rclpy's name validation: refused with its reason
                bad.append(f"{key}: {topic!r}: {exc}")
                continue
            if name in own:
                bad.append(f"{key}: {topic} is the node's own {own[name]} topic")
            elif name in seen:
                bad.append(f"{key}: {topic} is also its {seen[name]}")
            seen[name] = key
        if bad:
            raise ValueError("invalid dynamics_node parameters: " + "; ".join(bad))

    def _model_io(self):
        """A model's own signals: Float64 topics -> parameters, columns -> Float64 topics (model_io.py)."""
        from .model_io import ModelIO

        p = self.p
        # the node's own topics (label: the name it is documented by)
        own = {t: t for t in OWN_TOPICS}
        own.update({p[k]: k for k in ("cmd_vel_topic", "joint_trajectory_topic", "joint_commands_topic")})
        own.update({f"{kind}/{n}": f"{kind}/NAME" for n in self.probes.names
                    for kind in ("probes", "probe_error", "probe_error_untimed")})
        try:
            model_io = ModelIO(self.twin, [o for o in p["outputs"] if o])
            reserved = {self.resolve_topic_name(t): f"dynamics_node's {what}" for t, what in own.items()}
            model_io.check_resolved(self.resolve_topic_name, reserved)
        except ValueError as exc:
            raise ValueError(f"invalid dynamics_node parameters: model/outputs: {exc}") from None
        return model_io

    def _on_param(self, topic, msg):
        try:
            self.model_io.receive(topic, msg.data)
        except CommandError as exc:
            self._refused(topic, f"rejected {topic}: {exc}")

    def _on_probe(self, name, msg: PointStamped):
        timed, untimed = self.probes.errors(name, (msg.point.x, msg.point.y, msg.point.z),
                                            messages.stamp_ns(msg.header.stamp), self.twin.state())
        pub_timed, pub_untimed = self.probe_errors[name]
        if timed is not None:  # time-aligned: same stamp as the joint state it came from
            pub_timed.publish(Float64(data=timed))
        pub_untimed.publish(Float64(data=untimed))  # like the paper's pipe: against the newest state

    def _on_trajectory(self, msg):
        try:
            # the simulated instant now (the frame clock runs on while paused: the held time then)
            now = self.twin.t if self.paused else self.frame_clock.sim_time_now()
            traj = messages.joint_trajectory(msg, self.twin, self.frame_clock.sim_time_of_stamp, now)
        except (CommandError, ValueError, TypeError) as exc:
            self._refused("joint_trajectory", f"rejected joint trajectory: {exc}")
            return
        self.command_queue.trajectory(traj)

    def _on_joint_command(self, msg):
        fields = (msg.name, msg.position, msg.velocity, msg.effort)
        if self.interface is not None:  # the profile's joint names and signs, as its joint_states has them
            fields = self.interface.joint_command(*fields)
        try:
            self.joint_commands.receive(*fields)
        except (JointCommandError, CommandError) as exc:
            self._refused(self.p["joint_commands_topic"], f"{self.p['joint_commands_topic']}: {exc}")

    # -- services --------------------------------------------------------------------------
    def restart(self):
        """Back to the initial state, with simulated time 0 at this wall-clock instant and
        odometry in the world's frame again; as at start, no command is in force (none received
        before is applied). The reset state is the next frame (paused: published now), so resets
        never stop /joint_states."""
        self.command_queue.clear()
        self.twin.reset()
        self.topics.odometry.clear()
        self.probes.clear()
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
            if not self.context.ok():  # SIGINT or SIGTERM meanwhile: the process is stopping
                break
            self.publish_state(self._advance(t0 + k * dt))  # not a running sum: n frames are exactly n * dt
            self.frame_clock.frames += 1
        self.frame_clock.hold(self.twin.t)

    def place(self, x: float, y: float, yaw: float):
        """Put the base at (x, y, yaw) in the twin's world (simulation_interfaces' SetEntityState):
        shown by the next frame, or now when paused."""
        self._pending = self.twin.set_pose(x, y, yaw)
        if self.paused:
            self.publish_pending()

    def reset_odometry(self, x: float, y: float, yaw: float):
        """Odometry reads (x, y, yaw) from the next frame on (now when paused) and counts on from
        there; the base stays where it is in the world, so its odom frame moves (a driver's
        odometry reset)."""
        self.topics.odometry.reset((x, y, yaw), self.twin.state().pose)
        if self.paused:
            self._pending = self.twin.state()
            self.publish_pending()

    def _on_reset(self, request, response):
        try:
            self.restart()
            response.success, response.message = True, "twin reset to its initial state"
        except Exception as exc:  # noqa: BLE001 - a service call must never take the node down
            self.solver_failed(exc, "reset")
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

    def _tick(self):
        """One frame: publish the state computed one frame ahead, then compute the next one.

        Publishing first keeps the solver's varying cost out of the publication times (low
        jitter); the price is that a new command acts from the next frame (30 ms)."""
        if self.paused or not self.context.ok():  # a tick racing the shutdown publishes nothing
            self.frame_clock.restart_grid()
            if self.paused and self.context.ok():
                self._diagnostics_while_paused()
            return
        self._count_skipped_frames()
        self.start_clock()
        tic = time.perf_counter()
        self.publish_pending()
        self.compute_next(publish_cost=time.perf_counter() - tic)
        self._warn_unread_cmd_vel()
        self.warn_other_clocks()

    def _diagnostics_while_paused(self):
        """/diagnostics once a second of wall time while paused too, as diagnostic_updater keeps
        its rate: someone stepping the twin (StepSimulation) sees refused commands and the
        solver's state between steps (the frames, which carry it otherwise, do not run)."""
        now = time.monotonic()
        if now - self._paused_diagnostics_at >= 1.0:
            self._paused_diagnostics_at = now
            self.publish_diagnostics(self.twin.state())

    def _refused(self, topic: str, text: str):
        """A refused command in the log, at most once a second per topic: one call site's throttle
        (rclpy's) let a refusal on one topic hide another's for a second."""
        now = time.monotonic()
        if now - self._refusal_logged.get(topic, -math.inf) >= 1.0:
            self._refusal_logged[topic] = now
            self.get_logger().warning(text)

    def _count_skipped_frames(self):
        """Count the frames the timer never ran (FrameClock.count_skipped), on the timer's grid."""
        until = self.timer.time_until_next_call()  # ns, on the timer's clock: CLOCK_MONOTONIC
        if until is None:
            return
        missed = self.frame_clock.count_skipped(time.monotonic_ns() + until, self.timer.timer_period_ns)
        if missed > 0:
            self.get_logger().warning(
                f"the frame timer ran {missed * self.period * 1e3:.0f} ms late: {missed} frames not published "
                f"(the process was held up; {self.frame_clock.skipped_frames} so far)", throttle_duration_sec=2.0)

    def start_clock(self):
        """Simulated time runs from the first frame, not from when the node was made: in a graph
        built in one process (`up`, the demo) the rest of it was built meanwhile, and the first
        frame published the state 0.7 s in, the start's motion computed in one step and never
        seen."""
        if not self._clock_started:
            self._clock_started = True
            self.frame_clock.anchor(self.twin.t, self._ros_now_ns())

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
        clock, rtf = self.frame_clock, self.p["real_time_factor"]
        target = clock.sim_time_now() + self.period * rtf  # the next frame's instant
        self._pending = self._advance(target)
        took = time.perf_counter() - tic + publish_cost
        lag = max(0.0, clock.sim_time_now() - target) / rtf
        if clock.frame_done(took, lag, self.period):
            self.get_logger().warning(
                f"frame took {took * 1e3:.1f} ms (period {self.period * 1e3:.1f} ms), behind by {lag * 1e3:.1f} ms "
                f"({clock.overruns} overruns so far)", throttle_duration_sec=2.0)
        if clock.frames % max(1, int(round(self.p["publish_rate"]))) == 0:  # once a second: worst frame cost
            self.topics.frame_cost(clock.worst)
            # the frame published, not the one just computed: its stamp is a frame ahead of /clock
            self.publish_diagnostics(self._published if self._published is not None else self._pending)
            clock.take_worst()

    def _advance(self, target: float):
        """The commands received since the last frame, the watchdog (a twist running out within
        the frame stops the twin at that simulated instant) and the waypoint follower, then the
        twin stepped to ``target``; its state there, or the last one held if the model failed
        (/joint_states goes on)."""
        try:
            self.model_io.apply()
            watchdog = self.p["cmd_vel_timeout"] if self.p["reference"] == "cmd_vel" else None
            if self.command_queue.apply(target, watchdog):
                # at a high real-time factor a wall-rate publisher's every command may run out
                self.get_logger().info(f"cmd_vel timeout: stopping at t={self.twin.t:.3f} s",
                                       throttle_duration_sec=1.0)
            if self.follower is not None:
                self.twin.set_twist(*self.follower.command(self.twin.state().pose))
            state = self.twin.step_to(target)
            self.failures.succeeded()
            return state
        except Exception as exc:  # noqa: BLE001 - a model failure must not end the node
            self.solver_failed(exc, f"stepping to t={target:.3f} s")
            return self.twin.state()

    def solver_failed(self, exc, doing: str):
        """Report a failure of the model on /diagnostics (ERROR) and the log, and recover
        (twin/failures.py: from the last good state; a second failure in a row resets the twin)."""
        if self.failures.failed(self.twin, exc, doing):
            self.frame_clock.anchor(0.0, self._ros_now_ns())
            self.probes.clear()
            self.command_queue.clear()  # the reset twin is at rest; a command's instant would lie ahead of it
        self.get_logger().error(self.failures.last, throttle_duration_sec=1.0)
        try:
            self.publish_diagnostics(self.twin.state())
        except Exception:  # noqa: BLE001 - reporting must not fail the recovery
            pass

    def publish_diagnostics(self, state):
        """The twin's own diagnostics and whether the node keeps up, on /diagnostics (1 Hz)."""
        records = list(self.twin.diagnostics(state))
        records.append(solver_status(self.twin.name, self.frame_clock, self.failures.count, self.failures.last,
                                     self.failures.age(), state.t))
        if self.twin.commands:
            records.append(joint_command_status(self.twin.name, self.joint_commands, time.monotonic()))
        self.topics.diagnostics(records, messages.stamp_msg(self.frame_clock.stamp_ns(state.t)),
                                self.p["frame_prefix"], self.twin.name)

    def publish_state(self, state):
        tf_batch = []
        self.publish_rest(state, self.publish_joints(state), tf_batch)
        self.topics.tf(tf_batch)

    def publish_joints(self, state):
        """/joint_states (and /clock), stamped with the simulated instant of ``state``; returns
        that stamp. The probe check maps the stamp back to the model state, so returned probe
        points are compared at exactly the same instant."""
        ns = self.frame_clock.stamp_ns(state.t)
        self.frame_clock.last_stamp_ns = ns
        self._published = state
        stamp = self.topics.joints(state, ns)
        self.probes.record(ns, state)
        return stamp

    def publish_rest(self, state, stamp, tf_batch: list):
        """/odom, motor states, the model's output topics and the reference at ``stamp``; odom ->
        base appended to ``tf_batch``. ``state`` is always the twin's newest (the frame loop
        publishes a state before stepping on), so the output columns are read from the twin."""
        self.topics.rest(state, stamp, tf_batch, self.model_io.values())


def main(args=None):
    run_node(DynamicsNode, args)


if __name__ == "__main__":
    main()
