"""dynamics_node under another program's ROS interface: an interface profile
(bondsim_ros.twin.interface_profile; declared by the robot plug-in, e.g. the Robotino's
``driver``) applied to the node. The node keeps its frame loop and model; this class gives it
the profile's frames, topics, joint names and signs, parameters and services:

* velocity commands (cmd_vel, and wheel speeds on joint_commands: GatedQueue) go through the
  profile's per-component limits, and are ignored while the
  ``enable`` service has disabled them or for ``bumper_timeout`` seconds after a bumper contact
  (which also brings the twin to rest, as the robot's bumper stop does; further contacts count
  again one ``bumper_timeout`` after the hold, twin/interface_profile.BumperHold);
* ``velocity_limits`` sets those limits; ``reset_odometry`` sets the published odometry to the
  pose given and counts on from there, the base staying where it is in the world (the odom frame
  moves; the node's ``~/ground_truth`` keeps the true pose);
* joint states carry the profile's joint names, order and signs; ``motor_readings`` the motor
  speeds [rpm] and encoder ticks those joints imply through the profile's gear and encoder.

Service types come from the profile as "package/srv/Type"; when that package is missing the
node starts without those services and says so.
"""
from __future__ import annotations

import importlib
import math

from bondsim_ros.twin.interface_profile import BumperHold, InterfaceProfile, VelocityLimits, parse_profile
from bondsim_ros.twin.protocol import CommandError

from ._env import Param, declare_parameters


def load_interface(robot, name: str, twin_joints) -> InterfaceProfile:
    """The robot plug-in's profile ``name``, checked; ValueError naming what is available."""
    if name not in robot.interfaces:
        have = ", ".join(sorted(robot.interfaces)) or "none"
        raise ValueError(f"invalid dynamics_node parameters: interface: {robot.name} has no interface profile "
                         f"{name!r} (has: {have})")
    return parse_profile(name, robot.interfaces[name], twin_joints=list(twin_joints))


def interface_type(spec: str):
    """rto_msgs/srv/SetVelLimits -> the class, or ImportError naming the package."""
    package, kind, cls = spec.split("/")
    module = importlib.import_module(f"{package}.{kind}")
    return getattr(module, cls)


def parameter_table(profile: InterfaceProfile) -> dict:
    """The profile's parameters as a node parameter table (Param rows, as PARAMS); live: the
    limits (a velocity_limits service sets them too), the bumper timeout, and those without
    effect (settable, as the program's are)."""
    table = {}
    for p in profile.parameters:
        low = 0.0 if isinstance(p.default, float) else None
        if p.role == "bumper_timeout":
            low = -1e6  # below 0 the stop is off (the Robotino driver warns and runs, OmniDriveROS.cpp:236-239)
        live = p.role in ("max_linear", "min_linear", "max_angular", "min_angular", "bumper_timeout")
        table[p.name] = Param(p.default, p.description, low=low, high=1e6 if low is not None else None, live=live)
    for p in profile.ignored_parameters.values():
        table[p.name] = Param(p.default, p.description, live=True)
    return table


def apply_profile(node, p: dict, extra: dict) -> ProfileInterface:
    """Stand ``node`` (a DynamicsNode) in for another program's ROS interface (the robot's
    profile ``p["interface"]``): its topics, frames and frame prefix replace the node's own
    parameters in ``p`` (which then says what is in force); its parameters (``extra``: those
    given that the node's table does not know), services, joint names and limits come with it.
    ValueError naming what does not fit."""
    from bondsim_ros.twin.interface_profile import ProfileError

    if p["reference"] != "cmd_vel":
        raise ValueError(f"invalid dynamics_node parameters: interface: {p['interface']} takes velocity "
                         f"commands; it needs reference cmd_vel, not {p['reference']}")
    if node.twin.state().pose is None:
        raise ValueError(f"invalid dynamics_node parameters: interface: {p['model']} has no planar base")
    try:
        profile = load_interface(node.robot, p["interface"], node.twin.joint_names)
    except ProfileError as exc:
        raise ValueError(f"invalid dynamics_node parameters: interface: {exc}") from None
    log = node.get_logger()
    given = set(extra) | set(node._parameter_overrides)  # programmatic, or from the command line / a file
    for name in sorted(given & set(profile.ignored_parameters)):
        log.info(f"{name}: {profile.ignored_parameters[name].description}")
    unknown = sorted(set(extra) - {q.name for q in profile.parameters} - set(profile.ignored_parameters))
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r} (interface {profile.name} declares "
                         f"{', '.join(q.name for q in profile.parameters)})")
    interface = ProfileInterface(node, profile)
    p["cmd_vel_topic"], p["cmd_vel_type"] = profile.topics["cmd_vel"], profile.cmd_vel_type
    p["odom_frame"], p["base_frame"] = profile.odom_frame, profile.base_frame
    if interface.frame_prefix is not None:
        p["frame_prefix"] = interface.frame_prefix
    _report_in_force(node, p, ("cmd_vel_topic", "cmd_vel_type", "odom_frame", "base_frame", "frame_prefix"))
    log.info(f"interface {profile.name} ({profile.source}): cmd_vel on {p['cmd_vel_topic']}, "
             f"frames {p['frame_prefix']}{p['odom_frame']} -> {p['frame_prefix']}{p['base_frame']}, "
             f"services {', '.join(interface.services) or 'none'}")
    return interface


def _report_in_force(node, p: dict, names):
    """Make the node's parameters ``names`` read what the profile put in force (``p``), so that
    `ros2 param get` tells the truth. They are read-only, which rclpy's set_parameters refuses
    even at start; its store (Node._parameters, what get_parameters serves) is written instead."""
    from rclpy.parameter import Parameter

    for name in names:
        if node.has_parameter(name) and node.get_parameter(name).value != p[name]:
            node._parameters[name] = Parameter(name, value=p[name])


class ProfileInterface:
    """One profile applied to one DynamicsNode (``node``)."""

    def __init__(self, node, profile: InterfaceProfile):
        from std_msgs.msg import Bool

        self.node, self.profile = node, profile
        self.table = parameter_table(profile)
        self.values = declare_parameters(node, self.table, on_change=self._on_parameters)
        self._role_param = {p.role: p.name for p in profile.parameters}
        v = self.value
        self.limits = (VelocityLimits(v("max_linear"), v("min_linear"), v("max_angular"), v("min_angular"))
                       if "max_linear" in self._role_param else None)
        self.enabled = True
        self.bumper = BumperHold()
        if "bumper_timeout" in self._role_param:
            self._check_bumper_timeout(v("bumper_timeout"))
        self.frame_prefix = v("frame_prefix") if "frame_prefix" in self._role_param else None
        self.publish_tf = v("publish_odom_tf") if "publish_odom_tf" in self._role_param else True
        # joint states: the twin's joints the profile publishes, by index
        names = list(node.twin.joint_names)
        self.joint_index = [(j.name, names.index(j.twin), j.sign) for j in profile.joints]
        self.pub_motors = None
        if "motor_readings" in profile.topics:
            try:
                self.MotorReadings = interface_type(profile.motor_readings_type)
                self.pub_motors = node.create_publisher(self.MotorReadings, profile.topics["motor_readings"], 10)
            except (ImportError, AttributeError) as exc:
                node.get_logger().warning(f"interface {profile.name}: {profile.topics['motor_readings']} not "
                                          f"published ({profile.motor_readings_type}: {exc})")
        if "bumper" in profile.topics and "bumper_timeout" in self._role_param:
            node.create_subscription(Bool, profile.topics["bumper"], self._on_bumper, 10)
        self.services = []
        missing = []
        for s in profile.services:
            try:
                srv = interface_type(s.type)
            except (ImportError, AttributeError) as exc:
                missing.append(f"{s.name} ({s.type}: {exc})")
                continue
            handler = {"velocity_limits": self._on_limits, "enable": self._on_enable,
                       "reset_odometry": self._on_reset_odometry}[s.role]
            node.create_service(srv, s.name, lambda req, resp, s=s, h=handler: h(s, req, resp))
            self.services.append(s.name)
        if missing:
            node.get_logger().warning(f"interface {profile.name}: services not offered, their types are missing: "
                                      f"{'; '.join(missing)} (on a ROS install build the package in your "
                                      f"workspace; in the pip environment tools/setup.sh generates it)")

    def value(self, role: str):
        return self.values[self._role_param[role]]

    # -- velocity commands ---------------------------------------------------------------
    def command(self, vx: float, vy: float, wz: float) -> tuple | None:
        """The command the profile passes on (its limits applied), or None: ignored."""
        if not self.enabled or self.bumper.holding():
            why = "disabled by the enable service" if not self.enabled else "held after a bumper contact"
            self.node.get_logger().info(f"velocity command ignored: {why}", throttle_duration_sec=2.0)
            return None
        if self.limits is None or any(math.isnan(c) for c in (vx, vy, wz)):
            # NaN has no defined meaning for the driver (its comparisons pass it on to the motors):
            # the twin's own check refuses it with the reason
            return (vx, vy, wz)
        return self.limits.apply(vx, vy, wz)  # +-inf is clipped to +-max, as there (OmniDriveROS.cpp:75-80)

    def gated(self, queue) -> "GatedQueue":
        """``queue`` (a CommandQueue) with its twists passed through command(): wheel speeds on
        joint_commands are a velocity command as cmd_vel is, ignored or clipped as it is."""
        return GatedQueue(queue, self)

    def _check_bumper_timeout(self, timeout: float):
        if timeout < 0:
            self.node.get_logger().warning(f"{self._role_param['bumper_timeout']} {timeout:g}: invalid input, "
                                           f"bumper stop disabled")

    def _on_bumper(self, msg):
        timeout = self.value("bumper_timeout")
        if msg.data and self.bumper.contact(timeout):
            self.node.stop_base()  # the robot's bumper stop: motors off, commands ignored
            self.node.get_logger().warning(f"bumper contact: stopped, cmd_vel ignored for {timeout:g} s and "
                                           f"contacts for {2 * timeout:g} s")

    # -- services ------------------------------------------------------------------------
    def _on_limits(self, s, request, response):
        f = s.fields
        values = {role: float(getattr(request, f[role])) for role in ("max_linear", "min_linear", "max_angular",
                                                                      "min_angular")}
        ok, reason = self.limits is not None, "the profile declares no limit parameters"
        if ok:
            from rclpy.parameter import Parameter

            # through the parameters (all or none, checked as `ros2 param set` is): `ros2 param
            # get` then shows the limits in force, and _on_parameters applies them
            result = self.node.set_parameters_atomically(
                [Parameter(self._role_param[r], value=v) for r, v in values.items()])
            ok, reason = result.successful, result.reason
        if ok:
            self.node.get_logger().info(f"{s.name}: " + ", ".join(f"{f[r]} {v:g}" for r, v in values.items()))
        else:
            self.node.get_logger().warning(f"{s.name}: refused ({reason}): "
                                           + ", ".join(f"{f[r]} {v!r}" for r, v in values.items()))
        if "success" in f:
            setattr(response, f["success"], ok)
        return response

    def _on_enable(self, s, request, response):
        self.enabled = bool(getattr(request, s.fields["enable"]))
        self.node.get_logger().info(f"{s.name}: velocity commands {'enabled' if self.enabled else 'disabled'}")
        if "success" in s.fields:
            setattr(response, s.fields["success"], True)
        return response

    def _on_reset_odometry(self, s, request, response):
        f = s.fields
        x, y, yaw = (float(getattr(request, f[k])) for k in ("x", "y", "yaw"))
        try:
            self.node.reset_odometry(x, y, yaw)  # the odom frame moves, the base does not
        except CommandError as exc:  # not finite, or beyond the world's bounds
            self.node.get_logger().warning(f"{s.name}: refused: {exc}")
        else:
            self.node.get_logger().info(f"{s.name}: odometry set to x {x:g}, y {y:g}, yaw {yaw:g}")
        return response

    def _on_parameters(self, changes: dict):
        self.values.update(changes)
        if self._role_param.get("bumper_timeout") in changes:
            self._check_bumper_timeout(changes[self._role_param["bumper_timeout"]])
        if self.limits is not None:
            r = self._role_param
            self.limits = VelocityLimits(self.values[r["max_linear"]], self.values[r["min_linear"]],
                                         self.values[r["max_angular"]], self.values[r["min_angular"]])

    def joint_command(self, names, position, velocity, effort) -> tuple:
        """A joint command in the profile's names and signs (what a ros2_control hardware interface
        built on the driver's URDF sends: wheel0_joint ...) in the twin's: each name the profile
        publishes mapped to its twin joint, each value multiplied by its sign (+-1, its own
        inverse); other names pass as they are (the twin refuses those it lacks, naming them)."""
        twin_names = list(self.node.twin.joint_names)
        by_name = {n: (twin_names[i], sign) for n, i, sign in self.joint_index}
        signs = [by_name.get(n, (n, 1.0))[1] for n in names]

        def flip(values):  # (an array of another length is the twin's to refuse)
            values = list(values)
            return [v * s for v, s in zip(values, signs)] if len(values) == len(signs) else values

        return [by_name.get(n, (n, 1.0))[0] for n in names], flip(position), flip(velocity), flip(effort)

    # -- publishing ----------------------------------------------------------------------
    def joint_state(self, state) -> tuple:
        """(names, positions, velocities) of the profile's joints."""
        pos, vel = state.position, state.velocity
        names = [n for n, _, _ in self.joint_index]
        positions = [float(sign * pos[i]) for _, i, sign in self.joint_index]
        velocities = [float(sign * vel[i]) for _, i, sign in self.joint_index] if len(vel) else []
        return names, positions, velocities

    def publish_motor_readings(self, state, stamp):
        """Motor speed [rpm] and encoder ticks of the profile's motors, from their joints'
        speeds and angles through the gear; currents [A] are the twin's armature currents of
        the wheels those joints report (its ``wheel_joints`` order), where it gives them. The
        twin's currents are signed as its motors turn, against its wheel axles (the Robotino's
        motor speed is -gear x axle speed), as the driver's joints do (sign -1): a current that
        speeds a motor up has the sign of its rpm."""
        if self.pub_motors is None:
            return
        names, pos, vel = self.joint_state(state)
        m = self.profile.motors
        gear, ticks = float(m["gear"]), float(m["ticks_per_motor_turn"])
        idx = [names.index(j) for j in m["joints"]]
        msg = self.MotorReadings()
        msg.header.stamp = stamp
        msg.velocities = [float(vel[i] * gear * 60.0 / (2 * math.pi)) if vel else 0.0 for i in idx]
        # int32 counters wrap around
        msg.positions = [(int(round(pos[i] * gear * ticks / (2 * math.pi))) + 2**31) % 2**32 - 2**31 for i in idx]
        currents = getattr(state, "currents", None)
        wheels = list(getattr(self.node.twin, "wheel_joints", ()) or ())
        if currents is not None and len(currents) == len(wheels):
            twin_of = {j.name: j.twin for j in self.profile.joints}
            if all(twin_of[j] in wheels for j in m["joints"]):
                msg.currents = [float(currents[wheels.index(twin_of[j])]) for j in m["joints"]]
        self.pub_motors.publish(msg)


ROUND_OFF = 1e-9  # [m/s, rad/s]: a twist component from wheel speeds below this is zero


class GatedQueue:
    """A CommandQueue whose twists go through a ProfileInterface first (ignored while disabled
    or held after a bumper contact, else limited); everything else is the queue's."""

    def __init__(self, queue, interface: ProfileInterface):
        self._queue, self._interface = queue, interface

    def twist(self, vx: float, vy: float, wz: float):
        # wheel speeds of a zero component give round-off (1e-16) through the base's inverse
        # kinematics, which the minima would raise to min_linear_vel / min_angular_vel: zero it
        vals = self._interface.command(*(0.0 if abs(v) < ROUND_OFF else v for v in (vx, vy, wz)))
        return None if vals is None else self._queue.twist(*vals)

    def __getattr__(self, name):
        return getattr(self._queue, name)
