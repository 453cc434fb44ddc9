"""Interface profiles: another program's ROS interface (a robot driver's node name, topics,
frames, joint names and signs, parameters, services), declared as data by a robot plug-in
(``Robot.interfaces``), read and checked here without ROS; bondsim_ros.ros.interface_profile
serves it on dynamics_node.

A profile is a mapping (keys below). What the node does with each entry is fixed by its
``role``; names, types, defaults and signs are the profile's, so nothing in ros/ names a robot
or its driver. The velocity limits a profile declares act per component, as a base controller's
do: a component above the maximum is clipped to it, else a non-zero one below the minimum raised
to it (VelocityLimits; twin_bridge shapes the real robot's commands for the twin with it too).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

# what the ROS side knows how to do, by role
PARAMETER_ROLES = {"max_linear": float, "min_linear": float, "max_angular": float, "min_angular": float,
                   "frame_prefix": str, "publish_odom_tf": bool, "bumper_timeout": float}
SERVICE_ROLES = {"velocity_limits": ("max_linear", "min_linear", "max_angular", "min_angular"),
                 "enable": ("enable",), "reset_odometry": ("x", "y", "yaw")}
TOPIC_ROLES = ("cmd_vel", "odom", "joint_states", "motor_readings", "bumper")


class ProfileError(ValueError):
    """A profile that does not fit: the message names the profile and the key."""


@dataclass
class ProfileJoint:
    name: str  # as published
    twin: str  # the twin's joint it reports
    sign: float  # published = sign * twin's


@dataclass
class ProfileParameter:
    name: str
    role: str
    default: object
    description: str


@dataclass
class ProfileService:
    name: str
    role: str
    type: str  # "package/srv/Type"
    fields: dict  # role field -> field name of the request/response


@dataclass
class LaunchArgument:
    """An argument of the program's launch file that sets one of its parameters, and the default
    the launch gives it (what the program runs with when started as its users start it)."""

    name: str
    parameter: str
    default: object
    description: str


@dataclass
class VelocityLimits:
    """Per-component limits of a profile (its parameters' start values, then set_velocity_limits)."""

    max_linear: float
    min_linear: float
    max_angular: float
    min_angular: float

    def apply(self, vx: float, vy: float, wz: float) -> tuple:
        return (_clip(vx, self.min_linear, self.max_linear), _clip(vy, self.min_linear, self.max_linear),
                _clip(wz, self.min_angular, self.max_angular))


class BumperHold:
    """The bumper stop's timing, as the driver's OmniDriveROS has it (bumperCallback and a wall
    timer of period bumper_timeout): a contact message (data true, not only a change to true)
    starts a hold of ``timeout`` seconds in which velocity commands are ignored; contacts in the
    hold and for one more timeout after it are ignored (the timer's second period re-arms it), so
    the robot can back away; a contact after that, the bumper still or again pressed, starts
    another hold. ``clock``: seconds, monotonic (the driver's timer is a wall timer)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.hold_until = -math.inf
        self.armed_at = -math.inf  # contacts count from then on

    def contact(self, timeout: float) -> bool:
        """A contact message: whether it starts a hold (``timeout`` <= 0: the stop is off)."""
        now = self.clock()
        if timeout <= 0 or now < self.armed_at:
            return False
        self.hold_until, self.armed_at = now + timeout, now + 2 * timeout
        return True

    def holding(self) -> bool:
        return self.clock() < self.hold_until


def _clip(v: float, low: float, high: float) -> float:
    """|v| above high clipped to it, else a non-zero |v| below low raised to it; the sign kept. The
    order is the driver's (OmniDriveROS::cmdVelCallback, if ... else if): with low > high a |v| up
    to high is raised to low. A NaN passes, as there (neither comparison holds)."""
    if abs(v) > high:
        return math.copysign(high, v)
    if 0.0 < abs(v) < low:
        return math.copysign(low, v)
    return v


@dataclass
class InterfaceProfile:
    name: str
    source: str
    node_name: str
    odom_frame: str
    base_frame: str
    topics: dict
    cmd_vel_type: str
    joints: list
    parameters: list
    services: list
    motor_readings_type: str = ""
    motors: dict = field(default_factory=dict)
    # name -> ProfileParameter (role ""): the program's parameters the twin declares and reports
    # with their defaults but has nothing to act on
    ignored_parameters: dict = field(default_factory=dict)
    merged_node_names: list = field(default_factory=list)  # the program's other nodes, whose parameters node_name takes
    frame_prefix_of_namespace: str = ""  # e.g. "{namespace}/": the frame prefix a launch gives a namespace
    launch_arguments: list = field(default_factory=list)  # LaunchArgument: the launch's parameter defaults

    def frame_prefix_for(self, namespace: str) -> str:
        """The frame prefix this program's launch gives ``namespace``; an empty namespace: none (the
        Robotino driver's launch writes "/" there, frame ids that tf2 refuses in lookups)."""
        ns = namespace.strip("/")
        return self.frame_prefix_of_namespace.format(namespace=ns) if ns and self.frame_prefix_of_namespace else ""

    def parameter(self, role: str) -> ProfileParameter | None:
        return next((p for p in self.parameters if p.role == role), None)

    def launch_defaults(self) -> dict:
        """{parameter name: the default the program's launch gives it}."""
        return {a.parameter: a.default for a in self.launch_arguments}


def parse_profile(name: str, data: dict, twin_joints=()) -> InterfaceProfile:
    """An InterfaceProfile from a plug-in's mapping, every entry checked (ProfileError naming
    the profile and key); ``twin_joints``: the twin's joint names the profile's joints map."""
    where = f"interface profile {name!r}"

    def need(mapping, key, kind, at=""):
        if not isinstance(mapping, dict) or key not in mapping:
            raise ProfileError(f"{where}: {at}{key}: missing")
        value = mapping[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise ProfileError(f"{where}: {at}{key}: expected {kind.__name__}, got {value!r}")
        return value

    def role_of(spec, at, known):
        role = need(spec, "role", str, at)
        if role not in known:
            raise ProfileError(f"{where}: {at}role: {role!r} unknown (known: {', '.join(known)})")
        return role

    if not isinstance(data, dict):
        raise ProfileError(f"{where}: expected a mapping, got {type(data).__name__}")
    frames = need(data, "frames", dict)
    topics = need(data, "topics", dict)
    for role in topics:
        if role not in TOPIC_ROLES:
            raise ProfileError(f"{where}: topics.{role}: unknown role (known: {', '.join(TOPIC_ROLES)})")
    for role in ("cmd_vel", "odom", "joint_states"):
        need(topics, role, str, "topics.")
    cmd_vel_type = need(data, "cmd_vel_type", str)
    if cmd_vel_type not in ("twist", "stamped"):
        raise ProfileError(f"{where}: cmd_vel_type: twist | stamped, got {cmd_vel_type!r}")
    joints = []
    for k, j in enumerate(need(data, "joints", list)):
        at = f"joints[{k}]."
        joint = ProfileJoint(need(j, "name", str, at), need(j, "twin", str, at), need(j, "sign", float, at))
        if twin_joints and joint.twin not in twin_joints:
            raise ProfileError(f"{where}: {at}twin: {joint.twin!r} is not a joint of the twin "
                               f"({', '.join(twin_joints)})")
        joints.append(joint)
    params = []
    for pname, spec in need(data, "parameters", dict).items():
        at = f"parameters.{pname}."
        role = role_of(spec, at, PARAMETER_ROLES)
        params.append(ProfileParameter(pname, role, need(spec, "default", PARAMETER_ROLES[role], at),
                                       need(spec, "description", str, at)))
    services = []
    for sname, spec in need(data, "services", dict).items():
        at = f"services.{sname}."
        role = role_of(spec, at, SERVICE_ROLES)
        stype = need(spec, "type", str, at)
        if stype.count("/") != 2 or "/srv/" not in stype:
            raise ProfileError(f"{where}: {at}type: expected package/srv/Type, got {stype!r}")
        fields = need(spec, "fields", dict, at)
        for f in SERVICE_ROLES[role]:
            need(fields, f, str, f"{at}fields.")
        services.append(ProfileService(sname, role, stype, dict(fields)))
    ignored = _ignored(where, data.get("ignored_parameters") or {})
    both = sorted(set(ignored) & {q.name for q in params})
    if both:
        raise ProfileError(f"{where}: ignored_parameters.{both[0]}: also in parameters")
    limits = [p.role for p in params if p.role in ("max_linear", "min_linear", "max_angular", "min_angular")]
    if limits and len(set(limits)) != 4:
        raise ProfileError(f"{where}: parameters: velocity limits need all four roles max_linear, min_linear, "
                           f"max_angular, min_angular (has {', '.join(sorted(set(limits)))})")
    motors = dict(data.get("motors") or {})
    if "motor_readings" in topics:
        need(data, "motor_readings_type", str)
        published = {j.name for j in joints}
        for k, jn in enumerate(need(motors, "joints", list, "motors.")):
            if jn not in published:
                raise ProfileError(f"{where}: motors.joints[{k}]: {jn!r} is not one of joints' names")
        need(motors, "gear", float, "motors.")
        need(motors, "ticks_per_motor_turn", float, "motors.")
    return InterfaceProfile(name=name, source=str(data.get("source", "")), node_name=need(data, "node_name", str),
                            odom_frame=need(frames, "odom", str, "frames."),
                            base_frame=need(frames, "base", str, "frames."), topics=dict(topics),
                            cmd_vel_type=cmd_vel_type, joints=joints, parameters=params, services=services,
                            motor_readings_type=str(data.get("motor_readings_type", "")), motors=motors,
                            ignored_parameters=ignored,
                            merged_node_names=_names(where, data.get("merged_node_names") or []),
                            frame_prefix_of_namespace=_template(where, data.get("frame_prefix_of_namespace", "")),
                            launch_arguments=_launch_arguments(where, data.get("launch_arguments") or {},
                                                               {q.name: q for q in [*params, *ignored.values()]}))


def _names(where: str, names) -> list:
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ProfileError(f"{where}: merged_node_names: expected a list of node names, got {names!r}")
    return list(names)


def _ignored(where: str, mapping) -> dict:
    """ignored_parameters: {name: {default: str | float | bool, description: str}}."""
    if not isinstance(mapping, dict):
        raise ProfileError(f"{where}: ignored_parameters: expected a mapping of names to a default and a "
                           f"description, got {mapping!r}")
    out = {}
    for name, spec in mapping.items():
        at = f"{where}: ignored_parameters.{name}"
        if not isinstance(spec, dict) or set(spec) != {"default", "description"}:
            raise ProfileError(f"{at}: expected default and description, got {spec!r}")
        default = spec["default"]
        if isinstance(default, int) and not isinstance(default, bool):
            default = float(default)  # ROS parameters are typed: the profiles' numbers are doubles
        if not isinstance(default, (str, float, bool)):
            raise ProfileError(f"{at}.default: expected str, float or bool, got {default!r}")
        if not isinstance(spec["description"], str):
            raise ProfileError(f"{at}.description: expected str, got {spec['description']!r}")
        out[name] = ProfileParameter(name, "", default, spec["description"])
    return out


def _launch_arguments(where: str, mapping, parameters: dict) -> list:
    """launch_arguments: {argument: {parameter, default, description}}; each sets one of
    ``parameters`` (name -> ProfileParameter), with a default of that parameter's type."""
    if not isinstance(mapping, dict):
        raise ProfileError(f"{where}: launch_arguments: expected a mapping of argument names, got {mapping!r}")
    out = []
    for name, spec in mapping.items():
        at = f"{where}: launch_arguments.{name}"
        if not isinstance(spec, dict) or set(spec) != {"parameter", "default", "description"}:
            raise ProfileError(f"{at}: expected parameter, default and description, got {spec!r}")
        target = parameters.get(spec["parameter"])
        if target is None:
            raise ProfileError(f"{at}.parameter: {spec['parameter']!r} is not one of the profile's parameters "
                               f"({', '.join(parameters)})")
        default = spec["default"]
        if isinstance(target.default, float) and isinstance(default, int) and not isinstance(default, bool):
            default = float(default)
        if type(default) is not type(target.default):
            raise ProfileError(f"{at}.default: expected {type(target.default).__name__} as {target.name}, "
                               f"got {default!r}")
        if not isinstance(spec["description"], str):
            raise ProfileError(f"{at}.description: expected str, got {spec['description']!r}")
        out.append(LaunchArgument(name, target.name, default, spec["description"]))
    return out


def _template(where: str, text) -> str:
    if not isinstance(text, str):
        raise ProfileError(f"{where}: frame_prefix_of_namespace: expected str, got {text!r}")
    try:
        text.format(namespace="ns")
    except (KeyError, IndexError, ValueError) as exc:
        raise ProfileError(f"{where}: frame_prefix_of_namespace: {text!r} may name only "
                           f"{{namespace}} ({exc})") from None
    return text


__all__ = ["BumperHold", "InterfaceProfile", "LaunchArgument", "ProfileError", "ProfileJoint", "ProfileParameter",
           "ProfileService", "VelocityLimits", "parse_profile", "PARAMETER_ROLES", "SERVICE_ROLES", "TOPIC_ROLES"]
