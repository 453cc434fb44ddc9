"""The Twin protocol: what the ROS layer needs of a live model, and nothing else.

A twin is the paper's IPC block seen from outside (Damic & Cohodar Husic section 3.8): signals out (joint
positions, velocities, efforts, a planar base pose), probe coordinates back (from the mechanism's
kinematics at the same state), commands in. ``bondsim_ros.ros`` imports only this module (and
the mechanism layer), so any object with these members runs in the generic dynamics node.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from bondsim_ros.solver.options import SolverOptions

OK, WARN, ERROR = "OK", "WARN", "ERROR"

# What drives a model: a twin's ``command`` (make_twin's argument, ModelTwin.command) and the
# members of its ``commands`` (the kinds it takes besides its built-in reference).
BUILTIN = "builtin"  # the model's own reference (the Robotino's rose path); no command taken
TWIST = "twist"  # a planar body twist (vx, vy, wz): /cmd_vel, the waypoint follower
TRAJECTORY = "trajectory"  # joint trajectories (and position commands) for the driven joints
COMMANDS = (BUILTIN, TWIST, TRAJECTORY)

# the dynamics node's ``reference`` parameter -> the command it builds the twin for: a reference
# names where the motion comes from, the command what the model takes
COMMAND_OF_REFERENCE = {"rose": BUILTIN, "builtin": BUILTIN, "cmd_vel": TWIST, "waypoints": TWIST,
                        "joint_trajectory": TRAJECTORY}

# A live twin's solver options (make_twin's default): steps of at most 20 ms, so that no step
# jumps over a command that lasts a frame or two (the paper's frames are 30 ms apart)
TWIN_OPTIONS = SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.02)


@dataclass
class Limits:
    max_linear: float = 1.0  # m/s (Robotino: about 10 km/h top speed; conservative default)
    max_angular: float = 3.0  # rad/s
    huge: float = 1e3  # commands above this are refused outright rather than clamped


class CommandError(ValueError):
    """A command that cannot be applied (not finite, absurdly large, a joint the twin lacks...)."""


@dataclass
class Diagnostic:
    name: str
    level: str  # OK | WARN | ERROR
    message: str
    values: dict = field(default_factory=dict)  # key -> value (formatted by the twin)


@dataclass
class TwinState:
    """The state at simulated time ``t`` (s since the last reset)."""

    t: float
    joint_names: list  # URDF joint names, mechanism document order
    position: np.ndarray
    velocity: np.ndarray  # empty where the model gives no joint velocities
    effort: np.ndarray  # empty where the model gives no joint efforts
    pose: tuple | None = None  # planar base (x, y, yaw) of base_footprint in odom; None: fixed base
    twist_body: tuple | None = None  # (vx, vy, wz) of the base in its own frame
    twist_world: tuple | None = None
    reference: tuple | None = None  # built-in reference pose (x, y, yaw), if the model has one
    extra: dict = field(default_factory=dict)

    def joint_map(self) -> dict:
        return dict(zip(self.joint_names, (float(q) for q in self.position)))


# |position| [rad or m], |velocity| [/s], |acceleration| [/s^2] a joint command may ask: far
# beyond any robot's, far below what breaks the solver (about 1e20 for arm3dof's servos)
JOINT_COMMAND_BOUND = 1e6
# points one trajectory may hold: 10 s at a 1 ms controller period, minutes at a planner's 30-100
# ms. Reading a message of them and building the segments holds the frame loop (10,000: 0.1 s on
# receipt and 0.04 s at the frame that applies it; 60,000: 0.56 s and 0.23 s)
MAX_TRAJECTORY_POINTS = 10_000
_SINGULAR = {"positions": "position", "velocities": "velocity", "accelerations": "acceleration"}


def some_names(names: list, most: int = 10) -> str:
    """The first ``most`` of ``names`` and how many more (a message stays a line)."""
    return str(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


@dataclass
class JointTrajectory:
    """trajectory_msgs/JointTrajectory without ROS: ``times`` relative to ``start`` (simulated s;
    None: start when applied), ``positions`` one row per point; ``velocities`` and
    ``accelerations`` None (no point has them) or one row per point, a row None or empty where
    that point has none (as a message's point may)."""

    joint_names: list
    times: np.ndarray
    positions: np.ndarray
    velocities: list | np.ndarray | None = None
    start: float | None = None
    accelerations: list | np.ndarray | None = None

    def rows(self, field_name: str) -> list:
        """One entry per point of ``velocities`` or ``accelerations``: a float array, or None
        where the point has none."""
        values = getattr(self, field_name)
        if values is None:
            return [None] * len(self.times)
        return [None if row is None or len(row) == 0 else np.asarray(row, dtype=float) for row in values]

    def check(self) -> None:
        """CommandError naming the first thing that makes the trajectory unusable, and where (the
        point, the joint): no names or points, a name given twice, a point whose positions,
        velocities or accelerations are not one per joint (velocities and accelerations may be
        left empty; accelerations only with velocities), times negative or not strictly
        increasing, a value not finite or beyond JOINT_COMMAND_BOUND."""
        names = list(self.joint_names)
        n, m = len(names), len(self.times)
        if n == 0 or m == 0:
            raise CommandError("trajectory without joint names or points")
        if m > MAX_TRAJECTORY_POINTS:
            raise CommandError(f"{m} points: at most {MAX_TRAJECTORY_POINTS} in one trajectory (send it in parts)")
        repeated = sorted(j for j, count in Counter(names).items() if count > 1)
        if repeated:
            raise CommandError(f"joint names repeat: {some_names(repeated)} (each joint once)")
        if len(self.positions) != m:
            raise CommandError(f"{m} point times for {len(self.positions)} rows of positions")
        fields = {"positions": [np.asarray(row, dtype=float) for row in self.positions]}
        for key in ("velocities", "accelerations"):
            rows = self.rows(key)
            if len(rows) != m:
                raise CommandError(f"{len(rows)} rows of {key} for {m} points")
            fields[key] = rows
        for i in range(m):
            for key, rows in fields.items():
                if rows[i] is not None and rows[i].shape != (n,):
                    raise CommandError(f"point #{i} has {rows[i].size} {key} for {n} joints {names}: give one "
                                       f"per joint" + ("" if key == "positions" else " or none"))
            if fields["accelerations"][i] is not None and fields["velocities"][i] is None:
                raise CommandError(f"point #{i} has accelerations but no velocities: give both, or velocities alone")
        # whole arrays at once, the first offender named (a long trajectory checked value by value
        # held the frame loop)
        times = np.asarray(self.times, dtype=float)
        bad = np.flatnonzero(~(np.isfinite(times) & (times >= 0)))
        if bad.size:
            i = int(bad[0])
            raise CommandError(f"time_from_start of point #{i} is {times[i]} s: it must be finite and >= 0")
        bad = np.flatnonzero(~(times[1:] > times[:-1]))
        if bad.size:
            i = int(bad[0]) + 1
            raise CommandError(f"time between points #{i - 1} and #{i} is not strictly increasing "
                               f"({times[i - 1]:g} s, then {times[i]:g} s)")
        for key, rows in fields.items():
            given = [i for i, row in enumerate(rows) if row is not None]
            if not given:
                continue
            values = np.vstack([rows[i] for i in given])
            wrong = ~(np.isfinite(values) & (np.abs(values) <= JOINT_COMMAND_BOUND))
            if wrong.any():
                r, j = (int(k) for k in np.argwhere(wrong)[0])
                v = values[r, j]
                what = "not finite" if not math.isfinite(v) else f"beyond +-{JOINT_COMMAND_BOUND:g}"
                raise CommandError(f"point #{given[r]}, joint {names[j]}: {_SINGULAR[key]} {v:g} is {what}")


@runtime_checkable
class Twin(Protocol):
    """Members the dynamics node uses. ``command`` is what the twin was built for (BUILTIN,
    TWIST or TRAJECTORY); ``commands`` holds TWIST and/or TRAJECTORY, the kinds it takes (empty:
    the model follows its built-in reference).

    Optional (the node looks them up, ros/model_io.py): ``columns`` and ``column(name)``, the
    model's output columns at the newest state (for the node's ``outputs`` parameter);
    ``param_topics`` {std_msgs/Float64 topic: parameter} with ``check_params(values)`` (the
    values as floats, or CommandError, nothing set); ``output_topics`` {topic: column};
    ``wheel_joints`` with ``twist_for_wheel_speeds(speeds)``, a base's inverse kinematics (the
    node's wheel-speed commands, ros/joint_commands.py); ``velocity_reference_joints``, the
    trajectory joints that take a velocity reference (the node's joint commands with velocities
    beside positions; none without it); ``unread_commands``, lines naming command bindings whose
    parameter no law reads (the node warns of each at start-up). The node wraps the twin in
    twin/placement.py's PlacedTwin, which adds ``set_pose``."""

    name: str
    joint_names: list
    mechanism: Path  # mechanism XML the joints and probes belong to
    command: str
    commands: frozenset
    t: float
    twist: tuple  # the body twist applied now (twist command)
    unknowns: int  # the model's number of unknowns (the DAE's size), for the node's start-up log
    # the motors ``motor_states`` reports (the node's motor_states topic); empty: none
    motor_names: tuple
    # the joints a joint trajectory (or a position command) drives; empty without "trajectory"
    trajectory_joints: list

    def motor_states(self, state: TwinState) -> tuple:
        """(names, position, velocity, effort) of the motors at ``state``, as motor_states
        publishes them; empty arrays where ``motor_names`` is empty."""

    def state(self) -> TwinState: ...

    def step_to(self, t: float) -> TwinState:
        """Advance to ``t`` (any t >= the last output time; earlier or equal: the last state),
        the solver ending a step at ``t``."""

    def reset(self) -> None:
        """Back to the initial state at t = 0, as built: commanded by twist, at rest (no twist
        in force); no joint trajectory."""

    def recover(self) -> str:
        """After a failed step: restart from the last good state; returns what was done."""

    def limit_twist(self, vx: float, vy: float, wz: float) -> tuple: ...

    def set_twist(self, vx: float, vy: float, wz: float) -> tuple: ...

    def set_joint_trajectory(self, trajectory: JointTrajectory) -> None: ...

    def set_params(self, values: dict) -> None:
        """Set run-time parameters at ``t``, the integration restarting there; CommandError if
        the model cannot take them (not finite, unknown, refused by a law)."""

    def diagnostics(self, state: TwinState) -> list: ...

    def probe_points(self, state: TwinState) -> dict: ...


def body_twist(yaw: float, vx: float, vy: float, wz: float) -> tuple:
    """A planar twist given in the odom (world) frame, in the base frame at heading ``yaw``."""
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * vx + s * vy, -s * vx + c * vy, wz)


def world_twist(yaw: float, vx: float, vy: float, wz: float) -> tuple:
    """A planar twist given in the base frame at heading ``yaw``, in the odom (world) frame."""
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * vx - s * vy, s * vx + c * vy, wz)


def frame_twist(before: tuple, after: tuple, dt: float) -> tuple:
    """The constant body twist (vx, vy, wz) that takes the planar pose ``before`` (x, y, yaw) to
    ``after`` in ``dt`` s (SE(2)'s logarithm: exact for a constant twist, a frame's average
    otherwise); the yaw difference is unwrapped to [-pi, pi]. Zero for ``dt`` <= 0."""
    if not dt > 0:
        return (0.0, 0.0, 0.0)
    th = math.remainder(after[2] - before[2], 2 * math.pi)
    # the displacement in the frame of ``before``
    dx, dy, _ = body_twist(before[2], after[0] - before[0], after[1] - before[1], 0.0)
    if abs(th) < 1e-6:  # series of sin(th)/th and (1 - cos(th))/th
        a, b = 1.0 - th * th / 6.0, 0.5 * th
    else:
        a, b = math.sin(th) / th, (1.0 - math.cos(th)) / th
    # a constant twist moves the base by [[a, -b], [b, a]] (vx, vy) dt: invert that
    n = (a * a + b * b) * dt
    return ((a * dx + b * dy) / n, (a * dy - b * dx) / n, th / dt)


def limit_twist(limits: Limits, vx, vy, wz) -> tuple:
    """A body twist clamped to ``limits`` (|(vx, vy)| scaled, wz clipped); CommandError if it is
    not finite or absurdly large."""
    vals = (float(vx), float(vy), float(wz))
    if not all(math.isfinite(v) for v in vals):
        raise CommandError(f"command not finite: {vals}")
    if any(abs(v) > limits.huge for v in vals):
        raise CommandError(f"command absurdly large (> {limits.huge:g}): {vals}")
    lin = math.hypot(vals[0], vals[1])
    scale = min(1.0, limits.max_linear / lin) if lin > 0 else 1.0
    return (vals[0] * scale, vals[1] * scale, max(-limits.max_angular, min(limits.max_angular, vals[2])))
