"""Probe kinematics for the ROS layer: world points of the probe frames, fast (no yourdfpy).

The chain from the URDF root (base_footprint for a robot with a virtual planar base) to each
probe frame is compiled once into constant 4x4 blocks and joint motions; evaluating it costs a
few small matrix products per probe.
"""
from __future__ import annotations

import math

import numpy as np

from .loader import load_mechanism
from .model import Mechanism, Unit
from .urdf import robot_graph


def _rot(axis: tuple, q: float) -> np.ndarray:
    c, s = math.cos(q), math.sin(q)
    m = np.eye(4)
    if axis == (1.0, 0.0, 0.0):
        m[1:3, 1:3] = ((c, -s), (s, c))
    elif axis == (0.0, 1.0, 0.0):
        m[0, 0], m[0, 2], m[2, 0], m[2, 2] = c, s, -s, c
    elif axis == (0.0, 0.0, 1.0):
        m[:2, :2] = ((c, -s), (s, c))
    else:
        x, y, z = axis
        k = np.array(((0, -z, y), (z, 0, -x), (-y, x, 0)))
        m[:3, :3] = np.eye(3) + s * k + (1 - c) * (k @ k)
    return m


class ProbeKinematics:
    """World (odom) coordinates of one robot's probes from its base pose and joint positions."""

    def __init__(self, mechanism: Mechanism, unit: Unit | None = None, prefix: str = ""):
        if unit is None:
            robots = mechanism.robots
            unit = robots[0] if robots else mechanism.units[0]
        self.mechanism, self.unit, self.prefix = mechanism, unit, prefix
        graph = robot_graph(unit)
        self.root = graph.root
        self.initial_pose = graph.initial_pose
        parent_edge = {e.child: e for e in graph.edges}
        # names relative to the robot: an attached object's reference prefix stays, the robot's goes
        names = [p.prefix[len(unit.prefix):] + p.name for p in unit.probes]
        self.probe_names = names
        self._chains = {}
        for name, probe in zip(names, unit.probes):
            edges, link = [], probe.frame
            while link != graph.root:
                edge = parent_edge[link]
                edges.append(edge)
                link = edge.parent
            edges.reverse()
            segments, const = [], np.eye(4)  # (constant before the motion, joint key, kind, axis)
            for e in edges:
                const = const @ e.origin
                if e.kind != "fixed":
                    segments.append((const, prefix + e.name, e.kind, tuple(float(a) for a in e.axis)))
                    const = np.eye(4)
            self._chains[name] = (segments, const)

    @classmethod
    def from_file(cls, path, prefix: str = "") -> "ProbeKinematics":
        return cls(load_mechanism(path), prefix=prefix)

    def probe_points(self, base_pose, joints: dict) -> dict:
        """xyz in odom of each probe; base_pose = (x, y, yaw) of the URDF root (base_footprint) in odom;
        joints maps prefixed joint names to positions (missing joints count as 0)."""
        x, y, yaw = base_pose
        c, s = math.cos(yaw), math.sin(yaw)
        base = np.array(((c, -s, 0.0, x), (s, c, 0.0, y), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
        out = {}
        for name, (segments, tail) in self._chains.items():
            m = base
            for const, key, kind, axis in segments:
                q = float(joints.get(key, 0.0))
                if kind == "revolute":
                    motion = _rot(axis, q)
                else:
                    motion = np.eye(4)
                    motion[:3, 3] = np.multiply(axis, q)
                m = m @ const @ motion
            out[name] = (m @ tail)[:3, 3].copy()
        return out

    def base_offsets(self) -> dict:
        """xyz in the base_footprint frame of the probes rigidly attached to it (no moving joint between)."""
        return {name: tail[:3, 3].copy() for name, (segments, tail) in self._chains.items() if not segments}
