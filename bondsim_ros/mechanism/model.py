"""The resolved mechanism: links with their shapes, joints as URDF-like edges, probes.

A ``Unit`` is one robot or object instance (one reference, one prefix). Its ``edges`` are kept in
document order (depth first, after file references are resolved), which is the joint order the
spec prescribes everywhere; an XML joint may produce several edges (spherical: three revolute
edges; a post-transform: a fixed ``NAME_offset`` edge to the link frame).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import frames


class JointInfo(NamedTuple):
    name: str
    type: str  # revolute | prismatic | fixed
    axis: tuple
    lower: float | None  # SI (m or rad); None: unlimited
    upper: float | None
    velocity: float | None
    effort: float | None
    virtual: bool
    parent: str
    child: str


@dataclass
class Shape:
    """One placed instance of a geometry element in its link frame."""

    id: str
    kind: str  # cuboid | cylinder | sphere | cone | revolution | part
    size: tuple = ()  # cuboid (lx, ly, lz); cylinder/cone (radius, length); sphere (radius,)
    points: np.ndarray | None = None  # revolution profile (r, h), SI
    part_file: str | None = None
    scale: tuple = (1.0, 1.0, 1.0)  # part scale, including the file's length unit
    mass: float | None = None
    origin: np.ndarray = field(default_factory=lambda: np.eye(4))  # geometry frame (its z = the shape axis)
    color: tuple | None = None  # rgba; None: not rendered (collision and inertia only)
    color_name: str | None = None
    file: str = ""
    line: int = 0
    source_stem: str = ""  # stem of the XML file, for mesh file names


@dataclass
class Link:
    name: str
    shapes: list = field(default_factory=list)
    file: str = ""
    line: int = 0
    element: str = ""  # tag of the element that made it
    made: str = ""  # for a link the converter adds: what it is for (error messages)


@dataclass
class Edge:
    """A URDF joint: parent -> child at `origin`, then the motion about/along `axis`."""

    name: str
    kind: str  # fixed | revolute | prismatic
    parent: str
    child: str
    origin: np.ndarray
    axis: tuple = (1.0, 0.0, 0.0)
    role: str = "joint"  # joint (from an XML joint) | offset | attach | probe | base
    lower: float | None = None
    upper: float | None = None
    velocity: float | None = None
    effort: float | None = None
    virtual: bool = False
    drive: str = ""
    file: str = ""  # where the element that made it is written, for error messages
    line: int = 0
    element: str = ""
    made: str = ""  # for a joint the converter adds: what it is for

    def transform(self, q: float = 0.0) -> np.ndarray:
        if self.kind == "fixed":
            return self.origin
        return self.origin @ frames.motion(self.kind, self.axis, q)

    def info(self) -> JointInfo:
        return JointInfo(self.name, self.kind, tuple(self.axis), self.lower, self.upper, self.velocity, self.effort,
                         self.virtual, self.parent, self.child)


@dataclass
class Probe:
    name: str  # as written in the XML (no prefix)
    frame: str  # link name of the probe frame: PREFIXprobe_NAME
    link: str  # link it is attached to
    origin: np.ndarray
    prefix: str = ""


@dataclass
class Unit:
    """One robot or object reference, resolved."""

    kind: str  # robot | object
    name: str  # the root's name attribute
    prefix: str
    file: str
    root_link: str
    base: np.ndarray = field(default_factory=lambda: np.eye(4))
    links: dict = field(default_factory=dict)
    edges: list = field(default_factory=list)
    probes: list = field(default_factory=list)
    planar: tuple | None = None  # names of the X, Y, yaw virtual edges forming a planar base
    edge_names: set = field(default_factory=set)  # of ``edges``, for the uniqueness check
    line: int = 0  # of the reference (project) or the root element that made this unit

    @property
    def joints(self) -> list:
        return [e.info() for e in self.edges if e.role == "joint"]


@dataclass
class Mechanism:
    kind: str  # project | robot | object
    name: str
    id: str
    file: str
    units: list = field(default_factory=list)
    # the files read: absolute path -> sha256 of every XML and part file, and the files the
    # reference search looked for first and did not find (one made later would be read instead)
    inputs: dict = field(default_factory=dict)
    absent: list = field(default_factory=list)

    @property
    def joints(self) -> list:
        """Every joint coordinate in document order (spherical joints give NAME_x, NAME_y, NAME_z)."""
        return [j for u in self.units for j in u.joints]

    @property
    def probes(self) -> list:
        return [p for u in self.units for p in u.probes]

    @property
    def robots(self) -> list:
        return [u for u in self.units if u.kind == "robot"]

    @property
    def objects(self) -> list:
        return [u for u in self.units if u.kind == "object"]

    def links(self) -> dict:
        return {name: link for u in self.units for name, link in u.links.items()}


def forward_kinematics(mechanism: Mechanism, joint_values: dict | None = None) -> dict:
    """World transform of every link (including probe frames) at the given joint values (missing: 0).

    The world is the project frame (or the root frame of a robot/object file); virtual joints are
    ordinary joints here.
    """
    q = joint_values or {}
    out = {}
    for unit in mechanism.units:
        out[unit.root_link] = unit.base.copy()
        for e in unit.edges:
            out[e.child] = out[e.parent] @ e.transform(float(q.get(e.name, 0.0)))
    return out
