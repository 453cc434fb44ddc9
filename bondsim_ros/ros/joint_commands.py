"""sensor_msgs/JointState commands, as ros2_control's topic-based hardware interfaces publish them
(ros-controls/topic_based_hardware_interfaces' joint_state_topic_hardware_interface, PickNik's
topic_based_ros2_control): one message per controller-manager update, ``name`` every joint of
the hardware component, and ``position``/``velocity``/``effort`` filled for the joints that have
that command interface.

What the twin makes of them: positions become the set points of its joint-trajectory interface
(held until the next command, as a position command interface is), with the velocities beside
them as the velocity references of joints that take one (command interfaces position and
velocity); wheel speeds of a mobile base become the body twist whose wheel speeds they are (the
base's inverse kinematics); efforts are refused (no model has effort inputs). NaN means "no
command" for that joint. ROS-free: the node passes the message's fields.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from bondsim_ros.twin.protocol import JOINT_COMMAND_BOUND, CommandError, JointTrajectory


class JointCommandError(ValueError):
    """A joint command the twin refuses (the message names what and why)."""


@dataclass
class JointCommand:
    positions: dict | None = None  # joint -> set point [rad or m]
    velocities: dict | None = None  # joint (one of positions') -> velocity reference [rad/s or m/s]
    twist: tuple | None = None  # body twist (vx, vy, wz) from wheel speeds, before the limits


def _lacks_for_wheel_speeds(twin) -> list:
    """What the twin lacks to take wheel speeds as a twist (empty: nothing)."""
    kinematics = bool(getattr(twin, "wheel_joints", None)) and callable(getattr(twin, "twist_for_wheel_speeds", None))
    return [what for what, has in (
        ("a twist command", "twist" in twin.commands),
        ("its base's inverse kinematics (wheel_joints and twist_for_wheel_speeds, a Python robot's; a YAML "
         "model declares none: command its base by cmd_vel)", kinematics),
    ) if not has]


def wheel_kinematics(twin) -> tuple | None:
    """The twin's driven wheel joints, if it exposes its base's inverse kinematics
    (``wheel_joints`` and ``twist_for_wheel_speeds``) and takes a twist command."""
    return None if _lacks_for_wheel_speeds(twin) else tuple(twin.wheel_joints)


def _velocity_references(rates: dict, positions: dict, twin) -> dict:
    """Velocities for driven joints: the velocity references beside their set points, where the
    joint's servo takes one; JointCommandError naming the limitation otherwise."""
    alone = [n for n in rates if n not in positions]
    if alone:
        raise JointCommandError(f"velocity commands for {alone} without positions: {twin.name}'s joint servos "
                                f"follow a position set point, and take a velocity only beside it as its "
                                f"velocity reference (command interfaces position and velocity)")
    takes = list(getattr(twin, "velocity_reference_joints", ()))
    refused = [n for n in rates if n not in takes]
    if refused:
        raise JointCommandError(f"velocity commands for {refused}: {twin.name} binds no velocity reference for "
                                f"them, a position parameter only (as a YAML model's commands: joints: does); "
                                f"joints that take one: {takes}")
    return dict(rates)


def parse(names, position, velocity, effort, twin, twist_allowed: bool = True) -> JointCommand:
    """The command in one JointState's fields for ``twin``; JointCommandError if it is refused
    (whole: a message is one controller-manager update, applied all or nothing)."""
    names = list(names)
    if not names:
        raise JointCommandError("no joint names")
    if len(set(names)) != len(names):
        raise JointCommandError(f"joint names repeat: {names}")
    fields = {"position": list(position), "velocity": list(velocity), "effort": list(effort)}
    for key, values in fields.items():
        if values and len(values) != len(names):
            raise JointCommandError(
                f"{key} has {len(values)} entries for {len(names)} names: each of position, velocity, effort "
                f"must be empty or give one entry per name (one command interface for all joints of a "
                f"ros2_control hardware component)")
    unknown = [n for n in names if n not in twin.joint_names]
    if unknown:
        raise JointCommandError(f"unknown joints {unknown} ({twin.name}'s joints: {list(twin.joint_names)})")
    given = {}
    for key, values in fields.items():
        for n, v in zip(names, values):
            if math.isnan(v):
                continue  # no command for this joint
            if not math.isfinite(v):
                raise JointCommandError(f"{key} of {n} is {v}")
            if abs(v) > JOINT_COMMAND_BOUND:
                raise JointCommandError(f"{key} of {n} is {v:g}, beyond +-{JOINT_COMMAND_BOUND:g}")
            given.setdefault(key, {})[n] = float(v)
    if "effort" in given:
        raise JointCommandError(f"effort commands ({sorted(given['effort'])}): {twin.name} has no effort inputs")
    cmd = JointCommand()
    driven = list(getattr(twin, "trajectory_joints", ())) if "trajectory" in twin.commands else []
    if "position" in given:
        if not driven:
            raise JointCommandError(f"position commands: {twin.name} drives no joint to a position here "
                                    f"(commands: {', '.join(sorted(twin.commands)) or 'none, built-in reference'})")
        not_driven = [n for n in given["position"] if n not in driven]
        if not_driven:
            raise JointCommandError(f"position commands for {not_driven}, which {twin.name} does not drive "
                                    f"(driven: {driven})")
        cmd.positions = given["position"]
    # velocities of driven joints are velocity references; the others can only be wheel speeds
    rates = {n: v for n, v in given.get("velocity", {}).items() if n in driven}
    if rates:
        cmd.velocities = _velocity_references(rates, cmd.positions or {}, twin)
        given["velocity"] = {n: v for n, v in given["velocity"].items() if n not in rates}
    if given.get("velocity"):
        wheels = wheel_kinematics(twin)
        if wheels is None:
            raise JointCommandError(f"velocity commands ({sorted(given['velocity'])}): {twin.name} takes wheel "
                                    f"speeds as a twist through its base's inverse kinematics, and lacks "
                                    f"{' and '.join(_lacks_for_wheel_speeds(twin))}")
        if not twist_allowed:
            raise JointCommandError("wheel speeds drive the base as cmd_vel does: start the node with "
                                    "reference cmd_vel")
        others = [n for n in given["velocity"] if n not in wheels]
        if others:
            raise JointCommandError(f"velocity commands for {others}: only the wheels {list(wheels)} take speeds")
        missing = [w for w in wheels if w not in given["velocity"]]
        if missing:
            raise JointCommandError(f"wheel speeds for {sorted(given['velocity'])} without {missing}: the base's "
                                    f"twist needs every wheel")
        cmd.twist = tuple(twin.twist_for_wheel_speeds([given["velocity"][w] for w in wheels]))
    return cmd


class JointCommands:
    """Joint commands received by the node, checked now and queued for the next frame in
    ``queue`` (CommandQueue), as cmd_vel and joint trajectories: positions become the
    trajectory interface's set points (velocities beside them its velocity references), wheel
    speeds the base's twist (under the cmd_vel watchdog). Counted for /diagnostics
    (node_diagnostics.joint_command_status)."""

    def __init__(self, twin, queue, twist_allowed: bool, monotonic=time.monotonic):
        self.twin, self.queue, self.twist_allowed = twin, queue, twist_allowed
        self._monotonic = monotonic
        self.accepted = self.refused = 0
        self.last_refusal = None  # "refused: why" of the last refused command
        self.wall = -math.inf  # when it was refused (monotonic s)

    def receive(self, names, position, velocity, effort) -> JointCommand:
        """Take one JointState's fields; JointCommandError or CommandError (counted, nothing
        queued) if the twin refuses them."""
        try:
            cmd = parse(names, position, velocity, effort, self.twin, twist_allowed=self.twist_allowed)
            if cmd.twist is not None:
                self.twin.limit_twist(*cmd.twist)  # refused here, not at the frame
        except (JointCommandError, CommandError) as exc:
            self.refused += 1
            self.last_refusal, self.wall = f"refused: {exc}", self._monotonic()
            raise
        self.accepted += 1
        if cmd.positions:
            joints = list(cmd.positions)
            # one point at time 0: the set point from now on, held (a position command interface),
            # with its velocity reference (0 for a joint given none, as with positions alone)
            velocities = None
            if cmd.velocities:
                velocities = np.array([[cmd.velocities.get(n, 0.0) for n in joints]])
            self.queue.trajectory(JointTrajectory(joints, np.zeros(1), np.array([[cmd.positions[n] for n in joints]]),
                                                  velocities))
        if cmd.twist is not None:
            self.queue.twist(*cmd.twist)
        return cmd
