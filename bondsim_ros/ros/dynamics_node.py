"""dynamics_node: the Robotino bond-graph model in (scaled) real time on ROS 2.

Publishes /joint_states (non-virtual joints in mechanism-XML order), /odom with odom ->
base_footprint on /tf (REP-105), motor currents and voltages; follows the rose path, /cmd_vel
(Twist or TwistStamped) or a waypoint list; compares probe points returned by the probe node
with its own positions at the same stamp (the paper's named pipe, without its one-frame lag).
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
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from std_srvs.srv import SetBool, Trigger

from bondsim_ros.models.twin import CommandError, Limits, RobotinoTwin
from bondsim_ros.models.waypoints import WaypointFollower

from ._env import declare_parameters, run_node


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

PARAMS = {
    # name: (default, description)
    "model": ("robotino", "bond-graph model to run (built-in name)"),
    "reference": ("rose", "reference source: rose | cmd_vel | waypoints"),
    "publish_rate": (33.0, "joint state / odometry rate [Hz] (the paper sends a frame every 30 ms)"),
    "real_time_factor": (1.0, "simulated seconds per wall-clock second"),
    "cmd_vel_topic": ("cmd_vel", "velocity command topic"),
    "cmd_vel_type": ("auto", "auto | twist | stamped (Nav2: Twist on Jazzy, TwistStamped on Kilted)"),
    "cmd_vel_timeout": (0.5, "seconds without a command before the twin is brought to rest"),
    "max_linear_velocity": (1.0, "clamp for |(vx, vy)| [m/s]"),
    "max_angular_velocity": (3.0, "clamp for |wz| [rad/s]"),
    "waypoints": ([0.0], "flat list x1, y1, phi1, x2, y2, phi2, ... for reference=waypoints"),
    "odom_frame": ("odom", "odometry frame id"),
    "base_frame": ("base_footprint", "robot base frame id"),
    "frame_prefix": ("", "prefix for frame ids (several robots); joint names stay the URDF's, as "
                         "robot_state_publisher looks them up"),
    "mechanism": ("", "mechanism XML whose base-fixed probes are compared (empty: the packaged Robotino)"),
    "robot_config": ("", "Robotino parameter YAML, e.g. calibrated by `bondsim-ros fit --config-out` "
                         "(empty: the packaged config/robotino.yaml)"),
    "probes": (["base_center"], "probe names whose /probes/NAME points are compared with the model"),
    "rtol": (1e-6, "solver relative tolerance"),
    "hmax": (0.02, "largest solver step [s]"),
}


class DynamicsNode(Node):
    def __init__(self, name="dynamics_node", overrides: dict | None = None, own_timer: bool = True, **kwargs):
        super().__init__(name, parameter_overrides=overrides_to_parameters(PARAMS, overrides), **kwargs)
        p = declare_parameters(self, PARAMS)
        self._validate(p)
        self.p = p
        mode = {"rose": "rose", "cmd_vel": "twist", "waypoints": "twist"}[p["reference"]]
        limits = Limits(max_linear=p["max_linear_velocity"], max_angular=p["max_angular_velocity"])
        tic = time.perf_counter()
        self.twin = RobotinoTwin(reference=mode, rtol=p["rtol"], hmax=p["hmax"], limits=limits,
                                 config=p["robot_config"] or None, log=lambda m: self.get_logger().info(m))
        self.get_logger().info(f"model ready in {time.perf_counter() - tic:.2f} s "
                               f"({self.twin.compiled.n} unknowns, reference={p['reference']})")
        self.follower = None
        if p["reference"] == "waypoints":
            wp = np.asarray(p["waypoints"], dtype=float).reshape(-1, 3)
            self.follower = WaypointFollower(wp, limits.max_linear, limits.max_angular)
        pre = p["frame_prefix"]
        # joint names unprefixed: robot_state_publisher matches them against the URDF and
        # applies its own frame_prefix to frame ids only
        self.joint_names = list(self.twin.joint_names)
        self.odom_frame, self.base_frame = pre + p["odom_frame"], pre + p["base_frame"]

        self.pub_joints = self.create_publisher(JointState, "joint_states", 10)
        self.pub_odom = self.create_publisher(Odometry, "odom", 10)
        self.TFMessage = tf_message()
        self.pub_tf = self.create_publisher(self.TFMessage, "/tf", 100)
        self.pub_motors = self.create_publisher(JointState, "motor_states", 10)
        self.pub_overrun = self.create_publisher(Float64, "~/frame_cost", 10)  # worst frame of the last second [s]
        self.pub_reference = self.create_publisher(PoseStamped, "reference_pose", 10)  # rose mode only
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.probe_err = {}
        self.probe_err_untimed = {}
        self.probe_offset = self._probe_offsets([n for n in p["probes"] if n])
        for name in self.probe_offset:
            self.create_subscription(PointStamped, f"probes/{name}", lambda m, n=name: self._on_probe(n, m), 50)
            self.probe_err[name] = self.create_publisher(Float64, f"probe_error/{name}", 10)
            self.probe_err_untimed[name] = self.create_publisher(Float64, f"probe_error_untimed/{name}", 10)
        self.history = collections.OrderedDict()  # stamp (ns) -> pose, for time-aligned probe checks

        self._cmd_sub = None
        self._next_cmd = None  # the newest accepted cmd_vel, applied at the next frame
        self._last_cmd_wall = None
        if p["reference"] == "cmd_vel":
            self._setup_cmd_vel()
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(SetBool, "~/pause", self._on_pause)

        self.period = 1.0 / p["publish_rate"]
        self.paused = False
        self.overruns = 0
        self.max_lag = 0.0
        self.frames = 0
        self.solver_failures = 0
        self._failures_in_row = 0
        self.last_failure = None  # text of the last model failure (also on /diagnostics for 5 s)
        self._last_failure_wall = -math.inf
        self._wall_base = time.monotonic()
        self._sim_base = 0.0
        self._pending = None
        self._worst = 0.0
        self.publish_times = collections.deque(maxlen=100000)  # for jitter statistics
        self.timer = self.create_timer(self.period, self._tick) if own_timer else None

    # -- parameters ----------------------------------------------------------------------
    def _validate(self, p):
        errors = []
        if p["model"] != "robotino":
            errors.append(f"model: only 'robotino' is available, got {p['model']!r}")
        if p["reference"] not in ("rose", "cmd_vel", "waypoints"):
            errors.append(f"reference: rose | cmd_vel | waypoints, got {p['reference']!r}")
        for key in ("publish_rate", "real_time_factor", "cmd_vel_timeout", "max_linear_velocity",
                    "max_angular_velocity", "rtol", "hmax"):
            v = p[key]
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                errors.append(f"{key}: must be a positive number, got {v!r}")
        if p["cmd_vel_type"] not in ("auto", "twist", "stamped"):
            errors.append(f"cmd_vel_type: auto | twist | stamped, got {p['cmd_vel_type']!r}")
        try:
            self.resolve_topic_name(p["cmd_vel_topic"])
        except Exception as exc:  # noqa: BLE001 - rclpy's name validation: say which parameter
            errors.append(f"cmd_vel_topic: {p['cmd_vel_topic']!r} is not a valid topic name ({exc})")
        if p["reference"] == "waypoints" and (len(p["waypoints"]) < 3 or len(p["waypoints"]) % 3):
            errors.append("waypoints: give x, y, phi triples")
        if p["robot_config"] and not Path(p["robot_config"]).is_file():
            errors.append(f"robot_config: no such file {p['robot_config']!r}")
        if errors:
            raise ValueError("invalid dynamics_node parameters: " + "; ".join(errors))

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
            self.get_logger().warning(f"cmd_vel: cannot subscribe yet ({exc}); retrying",
                                      throttle_duration_sec=5.0)

    def _subscribe_cmd(self, kind):
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        if kind == "stamped":
            self._cmd_sub = self.create_subscription(TwistStamped, self.p["cmd_vel_topic"],
                                                     lambda m: self._on_cmd(m.twist), qos)
        else:
            self._cmd_sub = self.create_subscription(Twist, self.p["cmd_vel_topic"], self._on_cmd, qos)
        self._cmd_kind = kind

    def _on_cmd(self, twist):
        """Check and clamp the command now; apply it at the next frame. Applied here or there,
        the model restarts at the same instant (its last output), so only the newest command
        of a frame matters: a 1 kHz burst costs one restart per frame, not one per message."""
        vals = (twist.linear.x, twist.linear.y, twist.angular.z)
        try:
            applied = self.twin.limit_command(*vals)
        except CommandError as exc:
            self.get_logger().warning(f"rejected cmd_vel: {exc}", throttle_duration_sec=1.0)
            return
        self._next_cmd = applied
        if any(abs(a - v) > 1e-12 for a, v in zip(applied, vals)):
            self.get_logger().warning(f"cmd_vel {vals} clamped to {applied}", throttle_duration_sec=1.0)
        self._last_cmd_wall = time.monotonic()

    # -- probes ----------------------------------------------------------------------------
    def _probe_offsets(self, names):
        """Each compared probe's position in the base frame, from the same mechanism XML the
        probe node reads (the model's own position of the probe is base pose x offset)."""
        if not names:
            return {}
        from bondsim_ros.mechanism.probes import ProbeKinematics

        offsets = ProbeKinematics.from_file(self.p["mechanism"] or None).base_offsets()
        unknown = [n for n in names if n not in offsets]
        if unknown:
            raise ValueError(f"invalid dynamics_node parameters: probes: {unknown} are not probes fixed to the base "
                             f"of the mechanism (available: {sorted(offsets)})")
        return {n: np.asarray(offsets[n], dtype=float) for n in names}

    def _probe_world(self, name, pose):
        x, y, phi = pose
        o = self.probe_offset[name]
        c, s = math.cos(phi), math.sin(phi)
        return np.array([x + c * o[0] - s * o[1], y + s * o[0] + c * o[1], o[2]])

    def _on_probe(self, name, msg: PointStamped):
        got = np.array([msg.point.x, msg.point.y, msg.point.z])
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        pose = self.history.get(stamp)
        if pose is not None:  # time-aligned: same stamp as the joint state it came from
            self.probe_err[name].publish(Float64(data=float(np.linalg.norm(got - self._probe_world(name, pose)))))
        # untimed, like the paper's pipe: against the newest model state
        latest = self.twin.state().pose
        self.probe_err_untimed[name].publish(Float64(data=float(np.linalg.norm(got - self._probe_world(name, latest)))))

    # -- services --------------------------------------------------------------------------
    def restart(self):
        """Back to the initial state, with simulated time 0 at this wall-clock instant."""
        self.twin.reset()
        self.history.clear()
        self._pending = self.twin.state()  # the next frame shows the reset state: resets never stop /joint_states
        self._wall_base, self._sim_base = time.monotonic(), 0.0

    def _on_reset(self, request, response):
        try:
            self.restart()
            response.success, response.message = True, "twin reset to its initial state"
        except Exception as exc:  # noqa: BLE001 - a service call must never take the node down
            self._solver_failed(exc, "reset")
            response.success, response.message = False, f"reset failed: {type(exc).__name__}: {exc}"
        return response

    def _on_pause(self, request, response):
        if request.data and not self.paused:
            self._sim_base, self.paused = self.twin.t, True
        elif not request.data and self.paused:
            self._wall_base, self.paused = time.monotonic(), False
        response.success, response.message = True, "paused" if self.paused else "running"
        return response

    # -- the frame loop --------------------------------------------------------------------
    def sim_time_now(self) -> float:
        return self._sim_base + (time.monotonic() - self._wall_base) * self.p["real_time_factor"]

    def _tick(self):
        """One frame: publish the state computed one frame ahead, then compute the next one.

        Publishing first keeps the solver's varying cost out of the publication times (low
        jitter); the price is that a new command acts from the next frame (30 ms)."""
        if self.paused or not self.context.ok():  # a tick racing the shutdown publishes nothing
            return
        self.publish_pending()
        self.compute_next()

    def publish_pending(self):
        if self._pending is not None:
            self.publish_state(self._pending)
            self._pending = None

    def publish_pending_joints(self):
        """First half of publish_pending, for a fleet clock: /joint_states only (see FleetClock)."""
        if self._pending is not None:
            self._pending_stamp = self.publish_joints(self._pending)

    def publish_pending_rest(self, tf_batch: list):
        """Second half: odometry and the rest; the odom -> base transform goes into ``tf_batch``."""
        if self._pending is not None:
            self.publish_rest(self._pending, self._pending_stamp, tf_batch)
            self._pending = None

    def compute_next(self):
        if self.paused:
            return
        tic = time.perf_counter()
        target = self.sim_time_now() + self.period * self.p["real_time_factor"]  # the next frame's instant
        try:
            if self._next_cmd is not None:
                cmd, self._next_cmd = self._next_cmd, None
                self.twin.set_command(*cmd)
            if self.p["reference"] == "cmd_vel" and self._last_cmd_wall is not None:
                if time.monotonic() - self._last_cmd_wall > self.p["cmd_vel_timeout"]:
                    self._last_cmd_wall = None
                    self.get_logger().info("cmd_vel timeout: stopping")
                    self.twin.set_command(0.0, 0.0, 0.0)  # watchdog: no command, come to rest
            if self.follower is not None:
                self.twin.set_command(*self.follower.command(self.twin.state().pose))
            self._pending = self.twin.step_to(target)
            self._failures_in_row = 0
        except Exception as exc:  # noqa: BLE001 - a model failure must not end the node (issue 15)
            self._solver_failed(exc, f"stepping to t={target:.3f} s")
            self._pending = self.twin.state()  # hold the last state: /joint_states goes on
        took = time.perf_counter() - tic
        lag = max(0.0, self.sim_time_now() - target) / self.p["real_time_factor"]
        self.max_lag = max(self.max_lag, lag)
        if took > self.period or lag > 0:
            self.overruns += 1
            self.get_logger().warning(
                f"frame took {took * 1e3:.1f} ms (period {self.period * 1e3:.1f} ms), behind by {lag * 1e3:.1f} ms "
                f"({self.overruns} overruns so far)", throttle_duration_sec=2.0)
        self._worst = max(self._worst, took)
        self.frames += 1
        if self.frames % max(1, int(round(self.p["publish_rate"]))) == 0:  # once a second: worst frame cost
            self.pub_overrun.publish(Float64(data=float(self._worst)))
            self.publish_diagnostics(self._pending)
            self._worst = 0.0

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
                self._wall_base, self._sim_base = time.monotonic(), 0.0
                self.history.clear()
                action = "reset to the initial state (the restart from the last state failed too)"
        except Exception as exc2:  # noqa: BLE001
            self.twin.reset()
            self._wall_base, self._sim_base = time.monotonic(), 0.0
            action = f"reset to the initial state (recovery failed: {type(exc2).__name__}: {exc2})"
        self.last_failure = f"{type(exc).__name__} while {doing}: {exc}; twin {action}"
        self._last_failure_wall = time.monotonic()
        self.get_logger().error(self.last_failure, throttle_duration_sec=1.0)
        try:
            self.publish_diagnostics(self.twin.state())
        except Exception:  # noqa: BLE001 - reporting must not fail the recovery
            pass

    def publish_diagnostics(self, state):
        """Motor currents and voltages, and whether the node keeps up, on /diagnostics (1 Hz)."""
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        pre = self.p["frame_prefix"]
        for k in range(3):
            st = DiagnosticStatus(level=DiagnosticStatus.OK, name=f"{pre}robotino/motor{k + 1}",
                                  message="ok", hardware_id=f"{pre}robotino_twin")
            st.values = [KeyValue(key="current [A]", value=f"{state.currents[k]:.4f}"),
                         KeyValue(key="voltage [V]", value=f"{state.voltages[k]:.3f}"),
                         KeyValue(key="wheel speed [rad/s]", value=f"{state.wheel_speeds[k]:.4f}")]
            arr.status.append(st)
        behind = self.overruns > 0
        failed = self.last_failure is not None and time.monotonic() - self._last_failure_wall < 5.0
        level = DiagnosticStatus.ERROR if failed else DiagnosticStatus.WARN if behind else DiagnosticStatus.OK
        message = self.last_failure if failed else f"{self.overruns} overruns" if behind else "keeping up"
        st = DiagnosticStatus(level=level, name=f"{pre}robotino/solver", hardware_id=f"{pre}robotino_twin",
                              message=message)
        st.values = [KeyValue(key="solver failures", value=str(self.solver_failures)),
                     KeyValue(key="worst frame cost [ms]", value=f"{self._worst * 1e3:.3f}"),
                     KeyValue(key="max lag [ms]", value=f"{self.max_lag * 1e3:.3f}"),
                     KeyValue(key="sim time [s]", value=f"{state.t:.3f}")]
        arr.status.append(st)
        self.pub_diag.publish(arr)

    def publish_state(self, state):
        tf_batch = []
        self.publish_rest(state, self.publish_joints(state), tf_batch)
        self.pub_tf.publish(self.TFMessage(transforms=tf_batch))

    def publish_joints(self, state):
        """/joint_states, stamped with the ROS time of publication; returns that stamp. The
        history maps the stamp back to the model state, so returned probe points are compared
        at exactly the same instant."""
        now = self.get_clock().now()
        self.publish_times.append(time.perf_counter())
        stamp = now.to_msg()
        js = JointState()
        js.header.stamp = stamp
        js.name = self.joint_names
        js.position = state.position.tolist()
        js.velocity = state.velocity.tolist()
        js.effort = state.effort.tolist()
        self.pub_joints.publish(js)
        self.history[now.nanoseconds] = state.pose
        while len(self.history) > 600:
            self.history.popitem(last=False)
        return stamp

    def publish_rest(self, state, stamp, tf_batch: list):
        """/odom, motor states and the reference at ``stamp``; odom -> base appended to ``tf_batch``."""
        x, y, phi = state.pose
        qz, qw = math.sin(phi / 2), math.cos(phi / 2)
        odom = Odometry()
        odom.header.stamp = stamp
        odom.header.frame_id = self.odom_frame
        odom.child_frame_id = self.base_frame
        odom.pose.pose.position.x, odom.pose.pose.position.y = x, y
        odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = qz, qw
        bvx, bvy, wz = state.twist_body
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
        tf_batch.append(tf)
        motors = JointState()
        motors.header.stamp = stamp
        motors.name = ["motor1", "motor2", "motor3"]
        motors.position = state.voltages.tolist()  # voltage [V] in position: JointState has three slots
        motors.velocity = (-self.twin.gear * state.wheel_speeds).tolist()
        motors.effort = state.currents.tolist()  # armature current [A]
        self.pub_motors.publish(motors)
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
