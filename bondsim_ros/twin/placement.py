"""Placing a twin's planar base somewhere else (simulation_interfaces' SetEntityState).

A planar base model has nothing fixed in its world but its own built-in reference: its motion
does not depend on where it stands or which way it faces. Placing the base at (x, y, yaw) is
therefore a rigid planar transform between the model's frame and odom, applied to everything the
twin reports in odom (base pose, world twist, the built-in reference); the model itself, its
joints and its body twist are untouched, so the placement costs no solver restart and cannot
break a constraint. A built-in reference (the Robotino's rose) moves with the base: it is the
model's own. ``reset`` returns to the model's initial state in its own frame (no placement).
"""
from __future__ import annotations

import dataclasses
import math

from bondsim_ros.planar import compose, inverse

from .protocol import CommandError, TwinState

# |x|, |y| [m] of a placed base and of odometry: beyond, a frame's motion is below the position's
# rounding (x = 1e300 took the pose, then a drive at 1 rad moved y alone)
WORLD_BOUND = 1e6


def check_bound(what: str, x: float, y: float) -> None:
    if max(abs(x), abs(y)) > WORLD_BOUND:
        raise CommandError(f"{what}: ({x:g}, {y:g}) is beyond the world's bounds (|x|, |y| <= {WORLD_BOUND:g} m: "
                           f"farther, the motion of a step is lost to rounding)")


class PlacedTwin:
    """A Twin (protocol.py) whose planar base can be placed with ``set_pose``; every other member
    is the wrapped twin's."""

    def __init__(self, twin):
        self.inner = twin
        self.offset = None  # odom <- model frame; None: the model's frame is odom

    def __getattr__(self, name):  # everything not placed is the wrapped twin's
        return getattr(self.inner, name)

    @property
    def placeable(self) -> bool:
        return self.inner.state().pose is not None

    def set_pose(self, x: float, y: float, yaw: float) -> TwinState:
        """Put the base at (x, y, yaw) in odom now, keeping its body twist; returns the state."""
        pose = self.inner.state().pose
        if pose is None:
            raise CommandError(f"{self.inner.name} has a fixed base: it cannot be placed")
        target = (float(x), float(y), float(yaw))
        if not all(math.isfinite(v) for v in target):
            raise CommandError(f"pose not finite: {target}")
        self.offset = compose(target, inverse(tuple(float(v) for v in pose)))
        return self.state()

    def _placed(self, state: TwinState) -> TwinState:
        if self.offset is None or state.pose is None:
            return state
        o = self.offset
        c, s = math.cos(o[2]), math.sin(o[2])
        changes = {"pose": compose(o, state.pose)}
        if state.twist_world is not None:
            vx, vy, wz = state.twist_world
            changes["twist_world"] = (c * vx - s * vy, s * vx + c * vy, wz)
        if state.reference is not None:
            changes["reference"] = compose(o, tuple(float(v) for v in state.reference))
        return dataclasses.replace(state, **changes)

    def state(self) -> TwinState:
        return self._placed(self.inner.state())

    def step_to(self, t: float) -> TwinState:
        return self._placed(self.inner.step_to(t))

    def reset(self) -> None:
        self.inner.reset()
        self.offset = None


class OdometryOrigin:
    """Where published odometry counts from. A robot driver's odometry reset (set odometry to
    x, y, yaw) does not move the robot: it moves the odom frame in the world, and a localizer
    takes the jump up in map -> odom. The twin's pose stays in its world (what its sensors see
    and simulation_interfaces report); odometry is that pose seen from the moved odom frame."""

    def __init__(self):
        self.offset = None  # odom <- the twin's world; None: they coincide

    def reset(self, target: tuple, pose: tuple) -> None:
        """Odometry reads ``target`` (x, y, yaw) where the twin's world pose is ``pose`` now."""
        target = tuple(float(v) for v in target)
        if not all(math.isfinite(v) for v in target):
            raise CommandError(f"odometry not finite: {target}")
        check_bound("odometry", target[0], target[1])
        self.offset = compose(target, inverse(tuple(float(v) for v in pose)))

    def clear(self) -> None:
        self.offset = None

    def to_odom(self, pose):
        """A world pose (x, y, yaw) as odometry reports it; None stays None."""
        if self.offset is None or pose is None:
            return pose
        return compose(self.offset, tuple(float(v) for v in pose))

    def to_world(self, pose: tuple) -> tuple:
        """A pose given in odom, in the twin's world."""
        if self.offset is None:
            return tuple(pose)
        return compose(inverse(self.offset), tuple(float(v) for v in pose))
