"""The structure of a URDF file read for drawing, checked before yourdfpy loads it.

yourdfpy reports a broken URDF in its own internals' words (``KeyError: 'name'``,
``list.remove(x): x not in list``) or not at all: a joint cycle or two root links are drawn. The
rules here are the ones ROS's own parser (urdfdom, which ``check_urdf`` runs) applies: a
``<robot>`` root with a name, named and unique links and joints, a joint type it knows with the
limits a revolute or prismatic joint needs, parent and child links that exist, one parent joint
per link and one root link. A geometry needs the sizes its shape has, as numbers: urdfdom logs
such a visual as an error and leaves it out; a drawing of the robot without it would mislead, so
here it is refused. Each refusal names the line and element, as the mechanism XML's do. Beyond
urdfdom, which takes them (check_urdf accepts them; it refuses a NaN origin or limit, as this
does): a size that is NaN, infinite or negative, a joint axis of length 0 (no direction to turn
about) and limits lower > upper; a drawing of them would be NaN or nothing.
"""
from __future__ import annotations

import math

from .xmlreader import Node

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
# each shape's attributes and how many numbers each holds (None: text, a file name)
SHAPES = {"box": {"size": 3}, "sphere": {"radius": 1}, "cylinder": {"radius": 1, "length": 1},
          "mesh": {"filename": None}}
OPTIONAL = {"origin": {"xyz": 3, "rpy": 3}, "axis": {"xyz": 3}, "mesh": {"scale": 3}}


def _numbers(node: Node, attr: str, count: int, *, nonnegative: bool = False) -> list:
    text = node.attrs[attr]
    words = text.split()
    expected = f"{attr}={text!r}: expected {count} number{'s' if count > 1 else ''}"
    try:
        values = [float(word) for word in words]
    except ValueError:
        raise node.error(expected) from None
    if len(words) != count:
        raise node.error(f"{expected}, got {len(words)}")
    if not all(math.isfinite(v) and (v >= 0 or not nonnegative) for v in values):
        raise node.error(f"{attr}={text!r}: expected finite numbers{' >= 0' if nonnegative else ''}")
    return values


def _optional(node: Node) -> None:
    for attr, count in OPTIONAL.get(node.tag, {}).items():
        if attr in node.attrs:
            _numbers(node, attr, count)


def _children(node: Node, tag: str) -> list:
    return [c for c in node.children if c.tag == tag]


def _name(node: Node, what: str) -> str:
    name = node.attrs.get("name", "").strip()
    if not name:
        raise node.error(f"a {what} needs a name")
    return name


def _named(root: Node, tag: str) -> dict:
    """The <tag> children of the robot by name, each name given once."""
    out: dict = {}
    for node in _children(root, tag):
        name = _name(node, f"<{tag}>")
        if name in out:
            raise node.error(f"{tag} {name!r} is defined twice (line {out[name].line})")
        out[name] = node
    return out


def _geometry(shape: Node, link: str) -> None:
    """A <visual> or <collision>: its origin, and one geometry of a known shape."""
    for origin in _children(shape, "origin"):
        _optional(origin)
    geometries = _children(shape, "geometry")
    if len(geometries) != 1:
        raise shape.error(f"link {link!r}: a <{shape.tag}> needs one <geometry>, got {len(geometries)}")
    kinds = list(geometries[0].children)
    if len(kinds) != 1 or kinds[0].tag not in SHAPES:
        got = ", ".join(f"<{c.tag}>" for c in kinds) or "nothing"
        raise geometries[0].error(f"link {link!r}: a <geometry> holds one of "
                                  f"{', '.join(f'<{s}>' for s in SHAPES)}; got {got}")
    kind = kinds[0]
    for attr, count in SHAPES[kind.tag].items():
        if attr not in kind.attrs:
            raise kind.error(f"link {link!r}: a <{kind.tag}> needs {attr}=")
        if count is not None:
            _numbers(kind, attr, count, nonnegative=True)
    _optional(kind)


def _colors(node: Node) -> None:
    """Every <color rgba>: four numbers from 0 to 1 (a short one ended in a numpy broadcast error
    naming no element)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.tag == "color" and "rgba" in n.attrs:
            if any(v > 1 for v in _numbers(n, "rgba", 4, nonnegative=True)):
                raise n.error(f"rgba={n.attrs['rgba']!r}: expected numbers from 0 to 1")
        stack.extend(n.children)


def check_urdf_tree(root: Node) -> None:
    """MechanismError at the first element that breaks the rules above."""
    if root.tag != "robot":
        raise root.error("a URDF's top element is <robot>")
    _name(root, "<robot>")
    _colors(root)
    links = _named(root, "link")
    for name, link in links.items():
        for shape in _children(link, "visual") + _children(link, "collision"):
            _geometry(shape, name)
    if not links:
        raise root.error("a <robot> needs at least one <link>")
    joints = _named(root, "joint")
    parent_of: dict = {}
    for name, joint in joints.items():
        kind = joint.attrs.get("type", "")
        if kind not in JOINT_TYPES:
            raise joint.error(f"joint {name!r}: type={kind!r}: expected one of {', '.join(JOINT_TYPES)}")
        if kind in ("revolute", "prismatic") and not _children(joint, "limit"):
            raise joint.error(f"joint {name!r}: a {kind} joint needs <limit>")
        for tag in ("origin", "axis"):
            for node in _children(joint, tag):
                _optional(node)
        for axis in _children(joint, "axis"):
            if "xyz" in axis.attrs and not any(_numbers(axis, "xyz", 3)):
                raise axis.error(f"joint {name!r}: axis xyz={axis.attrs['xyz']!r} has no direction")
        for limit in _children(joint, "limit"):
            bounds = [_numbers(limit, a, 1)[0] if a in limit.attrs else None for a in ("lower", "upper")]
            if None not in bounds and bounds[0] > bounds[1]:
                raise limit.error(f"joint {name!r}: lower={bounds[0]:g} is above upper={bounds[1]:g}")
        ends = {}
        for end in ("parent", "child"):
            nodes = _children(joint, end)
            if len(nodes) != 1 or not nodes[0].attrs.get("link", "").strip():
                raise joint.error(f"joint {name!r}: needs one <{end} link=\"...\"/>")
            ends[end] = nodes[0].attrs["link"].strip()
            if ends[end] not in links:
                raise nodes[0].error(f"joint {name!r}: {end} link {ends[end]!r} is not a <link> of the robot")
        child = ends["child"]
        if child in parent_of:
            raise joint.error(f"joint {name!r}: link {child!r} is already the child of joint {parent_of[child][0]!r}")
        parent_of[child] = (name, ends["parent"])
    roots = [name for name in links if name not in parent_of]
    if len(roots) > 1:
        raise root.error(f"more than one root link (a link no joint has as child): {', '.join(roots[:5])}")
    if not roots:
        raise root.error("no root link: the joints make a closed loop")
    # a loop beside the tree: walking up from every link must reach the root; each walk stops at
    # a link an earlier one reached it from, so a chain of many links is walked once, not n^2 / 2
    rooted = {roots[0]}
    for name in links:
        path, at = set(), name
        while at not in rooted:
            if at in path:
                raise joints[parent_of[at][0]].error(f"joint {parent_of[at][0]!r} closes a loop of links")
            path.add(at)
            at = parent_of[at][1]
        rooted.update(path)
