"""Mechanism -> URDF (plain or xacro), scene URDF and marker list; written atomically.

Mapping (docs/mechanism.md has the full table): each XML joint's pre-transforms are the URDF joint
origin, its drive the type and axis; post-transforms become a fixed ``NAME_offset`` joint from a
``NAME_frame`` link to the XML link; spherical is three revolute joints through massless links;
probes are fixed frames ``probe_NAME``. A robot whose first three joints form a virtual planar base
(X, Y, yaw) is written without them (REP-105): its root is ``base_footprint``, the pose belongs to
odom -> base_footprint, and the <base> z-lift is the fixed joint base_footprint -> base_link.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from . import frames
from .errors import MechanismError
from .geometry import geometry_key, link_inertial, mesh_stl
from .loader import load_mechanism
from .model import Edge, Link, Mechanism, Unit


@dataclass
class Graph:
    """The links and joints of one URDF, in output order."""

    name: str
    root: str
    links: list
    edges: list
    initial_pose: tuple | None = None  # (x, y, yaw) of base_footprint in the world, planar robots only
    dropped: tuple = ()  # virtual joints left to odom -> base_footprint


@dataclass
class ConversionResult:
    joints: list  # JointInfo of the mechanism, document order (virtual ones included and flagged)
    probes: list  # Probe objects
    files: list  # every written path
    initial_pose: tuple | None  # of the first robot: (x, y, yaw) of base_footprint in the world
    robots: list = field(default_factory=list)  # per robot: dict(name, prefix, urdf, initial_pose, dropped)
    mechanism: Mechanism | None = None
    warnings: list = field(default_factory=list)


def _yaw_only(t: np.ndarray) -> bool:
    return bool(np.allclose(t[2, :3], (0, 0, 1), atol=1e-12) and np.allclose(t[:3, 2], (0, 0, 1), atol=1e-12))


def robot_graph(unit: Unit, *, keep_virtual: bool = False, in_project: bool = False, warnings=None) -> Graph:
    links, edges = list(unit.links.values()), list(unit.edges)
    name = unit.prefix + unit.name
    if unit.planar and not keep_virtual:
        if _yaw_only(unit.base):
            e1, e2, e3 = edges[:3]
            footprint = unit.prefix + "base_footprint"
            if footprint in unit.links:
                link = unit.links[footprint]
                raise MechanismError(f"link name '{footprint}' is reserved for the planar base (the converter's root "
                                     f"link of the URDF)", link.file, link.line, link.element)
            for e in edges:  # the fixed joint below would be written twice
                if e.name == footprint + "_joint":
                    raise MechanismError(f"joint name '{e.name}' is reserved for the planar base (the converter's "
                                         f"fixed joint {footprint} -> {e3.child})", e.file, e.line, e.element)
            drop = {unit.root_link, e1.child, e2.child}
            lift = frames.translation(0.0, 0.0, float(unit.base[2, 3]))
            yaw = math.atan2(unit.base[1, 0], unit.base[0, 0])
            out_links = [Link(footprint)] + [lk for lk in links if lk.name not in drop]
            out_edges = [Edge(footprint + "_joint", "fixed", footprint, e3.child, lift, role="base")] + edges[3:]
            return Graph(name, footprint, out_links, out_edges,
                         (float(unit.base[0, 3]), float(unit.base[1, 3]), yaw), (e1.name, e2.name, e3.name))
        if warnings is not None:
            warnings.append(f"{unit.name}: <base> rotates out of the ground plane; virtual joints kept")
    has_virtual = any(e.virtual for e in edges)
    if in_project or (keep_virtual and has_virtual):
        base = Edge(f"{unit.root_link}_base", "fixed", "world", unit.root_link, unit.base, role="base")
        pose = None
        if unit.planar and _yaw_only(unit.base):
            pose = (float(unit.base[0, 3]), float(unit.base[1, 3]), math.atan2(unit.base[1, 0], unit.base[0, 0]))
        return Graph(name, "world", [Link("world")] + links, [base] + edges, pose)
    return Graph(name, unit.root_link, links, edges)


def scene_graph(mech: Mechanism) -> Graph:
    links, edges = [Link("world")], []
    for unit in mech.objects:
        edges.append(Edge(f"{unit.root_link}_base", "fixed", "world", unit.root_link, unit.base, role="base"))
        links += list(unit.links.values())
        edges += unit.edges
    return Graph(f"{mech.name}_scene", "world", links, edges)


def graph_fk(graph: Graph, joint_values: dict | None = None) -> dict:
    q = joint_values or {}
    out = {graph.root: np.eye(4)}
    for e in graph.edges:
        out[e.child] = out[e.parent] @ e.transform(float(q.get(e.name, 0.0)))
    return out


# -- text output ------------------------------------------------------------------------------
class NotFinite(ValueError):
    """A number to be written is inf or NaN (caught per link/joint and reported with its name)."""


def fmt(v: float, zero: float = 0.0) -> str:
    """``v`` in 10 significant digits, 0 where below ``zero`` in magnitude (the caller's round-off
    scale: a pose's is relative to its own lengths, an inertia's to the link's largest moment).
    The digits are relative, so a 1e-13 m part is written as exactly as a 1 m one; ten, not the 17
    of a round trip, so a length as written survives the unit factor (27.5 mm is 0.0275, not
    0.027500000000000004)."""
    v = float(v)
    if not math.isfinite(v):
        raise NotFinite(v)
    if v == 0.0 or abs(v) < zero:  # also -0.0: written 0, not -0
        return "0"
    return f"{v:.10g}"


def fmts(values, zero: float = 0.0) -> str:
    return " ".join(fmt(v, zero) for v in values)


def file_stem(text: str, limit: int = 120) -> str:
    """A file-name-safe stem from names and ids: other characters become '_', and a long one is
    cut and made unique by a hash (file systems take 255 bytes per name)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", text)
    if len(safe) <= limit:
        return safe
    return safe[: limit - 13] + "_" + hashlib.sha256(text.encode()).hexdigest()[:12]


class MeshStore:
    """Generated and copied meshes, deduplicated by content, named after file and element id."""

    def __init__(self, rel_dir: str):
        self.rel_dir = rel_dir  # relative to the URDF folder, with '/'
        self.files: dict[str, bytes] = {}  # file name -> bytes
        self.by_hash: dict[str, str] = {}
        self.by_geometry: dict[tuple, str] = {}  # geometry_key -> path: instances are not re-read or re-hashed

    def add_shape(self, shape) -> str:
        """The mesh file of a cone, revolution or part shape (generated or copied), once per geometry."""
        key = geometry_key(shape)
        if key not in self.by_geometry:
            data = Path(shape.part_file).read_bytes() if shape.kind == "part" else mesh_stl(key)
            self.by_geometry[key] = self.add(f"{shape.source_stem}_{shape.id}", data)
        return self.by_geometry[key]

    def add(self, stem: str, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if digest in self.by_hash:
            return self.by_hash[digest]
        name = file_stem(stem) + ".stl"
        k = 2
        while name in self.files:
            name = f"{file_stem(stem)}_{k}.stl"
            k += 1
        self.files[name] = data
        self.by_hash[digest] = f"{self.rel_dir}/{name}"
        return self.by_hash[digest]


def xacro_escape(text: str) -> str:
    """``text`` as xacro reads it back literally: xacro expands ``${...}`` and ``$(...)`` in every
    attribute, and reads a run of ``$`` before ``{`` or ``(`` as one ``$`` less (its escape, ``$$``).
    Its lexer has no token for ``$$`` before anything else, so such a run is written as ``${'$'}``s."""
    def one(m):
        run, after = m.group(1), m.group(2)
        if after:
            return "$" + run + after
        return run if len(run) == 1 else "${'$'}" * len(run)

    return re.sub(r"(\$+)([{(]?)", one, text)


def xml_comment(text: str) -> str:
    """``text`` made safe inside an XML comment: no '--', no trailing '-', printable characters only."""
    text = "".join(c if c.isprintable() else "?" for c in text)
    while "--" in text:
        text = text.replace("--", "-_")
    return text + " " if text.endswith("-") else text


MESH_URI_BAD = set(" \t\r\n\"'<>\\$`")


def check_mesh_uri(uri: str) -> None:
    bad = sorted({c for c in uri if c in MESH_URI_BAD or not c.isprintable()})
    if bad:
        raise MechanismError(f"--mesh-uri {uri!r}: characters {''.join(bad)!r} are not allowed in a mesh URI "
                             f"(percent-encode them, e.g. %20 for a space)")


OPEN_LIMIT = 1e6  # m or rad: what a side left open is written as (URDF needs both bounds)


def open_limits(lower: float | None, upper: float | None) -> tuple[float, float]:
    """Both bounds of a revolute or prismatic joint: an open side is -+OPEN_LIMIT, or OPEN_LIMIT
    beyond the given side where that lies outside it (lower 2e6 gives upper 3e6): lower <= upper,
    which render's URDF check requires, and the open side still far from the given one."""
    if lower is None:
        lower = -OPEN_LIMIT if upper is None else min(-OPEN_LIMIT, upper - OPEN_LIMIT)
    if upper is None:
        upper = max(OPEN_LIMIT, lower + OPEN_LIMIT)
    return lower, upper


# xacro's own elements (xacro:NAME): a macro of one of these names cannot be defined or called
XACRO_DIRECTIVES = frozenset(("arg", "attribute", "call", "element", "if", "include", "insert_block", "macro",
                              "property", "unless"))


class URDFWriter:
    def __init__(self, meshes: MeshStore, *, xacro: bool = False, mesh_uri: str = "", source: str = ""):
        self.meshes = meshes
        self.xacro = xacro
        self.mesh_uri = mesh_uri
        self.source = source

    def text(self, t: str) -> str:
        """An attribute value from the user's text, quoted (and escaped for xacro)."""
        return quoteattr(xacro_escape(t) if self.xacro else t)

    def name(self, n: str) -> str:
        return quoteattr(("${prefix}" + xacro_escape(n)) if self.xacro else n)

    def mesh_ref(self, rel: str) -> str:
        return quoteattr(("${mesh_uri}" + xacro_escape(rel)) if self.xacro else self.mesh_uri + rel)

    def origin(self, t: np.ndarray, indent: str, scale: float = 0.0) -> str:
        """``scale``: a length the position is computed from (round-off is relative to it)."""
        xyz, rpy = frames.xyz_rpy(t)
        # composed rotations leave round-off of some 1e-16 of the lengths: zeroed relative to them,
        # not below an absolute bound (a 1e-13 m offset is a length); angles' round-off is absolute
        zero = 1e-12 * max(float(np.max(np.abs(xyz))), scale)
        return f'{indent}<origin xyz="{fmts(xyz, zero)}" rpy="{fmts(rpy, 1e-12)}"/>\n'

    def geometry(self, shape, indent: str) -> tuple[str, np.ndarray]:
        """URDF <geometry> of a shape and the origin it needs (cuboid/cylinder/sphere are centred)."""
        origin = shape.origin
        if shape.kind == "cuboid":
            g = f'<box size="{fmts(shape.size)}"/>'
        elif shape.kind == "cylinder":
            g = f'<cylinder radius="{fmt(shape.size[0])}" length="{fmt(shape.size[1])}"/>'
        elif shape.kind == "sphere":
            g = f'<sphere radius="{fmt(shape.size[0])}"/>'
        elif shape.kind == "part":
            rel = self.meshes.add_shape(shape)
            g = f'<mesh filename={self.mesh_ref(rel)} scale="{fmts(shape.scale)}"/>'
        else:  # cone, revolution: generated in SI, no scale
            rel = self.meshes.add_shape(shape)
            g = f"<mesh filename={self.mesh_ref(rel)}/>"
        return f"{indent}<geometry>\n{indent}  {g}\n{indent}</geometry>\n", origin

    def link(self, link: Link) -> str:
        try:
            return self._link(link)
        except NotFinite:
            raise MechanismError(f"link '{link.name}': a mass, inertia or pose is not finite "
                                 f"(numbers too large for floating point)", link.file, link.line) from None

    def _link(self, link: Link) -> str:
        if not link.shapes:
            return f"  <link name={self.name(link.name)}/>\n"
        out = [f"  <link name={self.name(link.name)}>\n"]
        inertial = link_inertial(link)  # its MechanismError names the shape's own file and line
        if inertial:
            mass, com, inertia = inertial
            out.append("    <inertial>\n")
            # the centre of mass of shapes spread about the link origin is their round-off: relative
            # to the radius of gyration, which grows with that spread
            gyration = math.sqrt(float(np.trace(inertia)) / mass) if mass > 0 else 0.0
            out.append(self.origin(frames.translation(*com), "      ", gyration))
            out.append(f'      <mass value="{fmt(mass, 0.0)}"/>\n')
            i = inertia
            # zero: products of inertia that are round-off against the link's largest moment
            z = 1e-12 * float(np.max(np.abs(np.diag(i)), initial=0.0))
            out.append(f'      <inertia ixx="{fmt(i[0, 0], z)}" ixy="{fmt(i[0, 1], z)}" ixz="{fmt(i[0, 2], z)}" '
                       f'iyy="{fmt(i[1, 1], z)}" iyz="{fmt(i[1, 2], z)}" izz="{fmt(i[2, 2], z)}"/>\n')
            out.append("    </inertial>\n")
        for shape in link.shapes:
            if shape.color is None:
                continue
            geom, origin = self.geometry(shape, "      ")
            material = shape.color_name or "rgba_" + "_".join(f"{round(c * 255):d}" for c in shape.color)
            out.append(f"    <visual name={self.text(shape.id)}>\n")
            out.append(self.origin(origin, "      "))
            out.append(geom)
            out.append(f'      <material name={self.text(material)}>\n        <color rgba="{fmts(shape.color)}"/>\n'
                       f"      </material>\n")
            out.append("    </visual>\n")
        for shape in link.shapes:
            geom, origin = self.geometry(shape, "      ")
            out.append(f"    <collision name={self.text(shape.id)}>\n")
            out.append(self.origin(origin, "      "))
            out.append(geom)
            out.append("    </collision>\n")
        out.append("  </link>\n")
        return "".join(out)

    def joint(self, e: Edge) -> str:
        try:
            return self._joint(e)
        except NotFinite:
            raise MechanismError(f"joint '{e.name}': its pose, axis or limits are not finite "
                                 f"(numbers too large for floating point)") from None

    def _joint(self, e: Edge) -> str:
        kind = e.kind
        if kind == "revolute" and e.lower is None and e.upper is None:
            kind = "continuous"
        out = [f"  <joint name={self.name(e.name)} type=\"{kind}\">\n",
               f"    <parent link={self.name(e.parent)}/>\n", f"    <child link={self.name(e.child)}/>\n",
               self.origin(e.origin, "    ")]
        if kind != "fixed":
            out.append(f'    <axis xyz="{fmts(e.axis, 1e-12)}"/>\n')  # a unit vector
        if kind in ("revolute", "prismatic"):
            lower, upper = open_limits(e.lower, e.upper)
            out.append(f'    <limit lower="{fmt(lower)}" upper="{fmt(upper)}" effort="{fmt(e.effort or 0)}" '
                       f'velocity="{fmt(e.velocity or 0)}"/>\n')
        elif kind == "continuous" and (e.velocity is not None or e.effort is not None):
            out.append(f'    <limit effort="{fmt(e.effort or 0)}" velocity="{fmt(e.velocity or 0)}"/>\n')
        out.append("  </joint>\n")
        return "".join(out)

    def document(self, graph: Graph) -> str:
        body = "".join(self.link(lk) for lk in graph.links) + "".join(self.joint(e) for e in graph.edges)
        head = (f'<?xml version="1.0"?>\n<!-- Generated by `bondsim-ros xml2urdf` from {xml_comment(self.source)}; '
                f"do not edit, regenerate. -->\n")
        if not self.xacro:
            return head + f"<robot name={quoteattr(graph.name)}>\n{body}</robot>\n"
        macro = re.sub(r"[^A-Za-z0-9_]", "_", graph.name)
        if not macro[:1].isalpha():  # the macro call is an element name: it must start with a letter
            macro = "m_" + macro
        if macro in XACRO_DIRECTIVES:
            # <xacro:if .../> would be read as xacro's own element: the macro gets a suffix rather
            # than the robot being refused, since its name is fine for URDF and only the call clashes
            macro += "_macro"
        body = "".join("  " + line if line.strip() else line for line in body.splitlines(True))
        return (head + f'<robot name={self.text(graph.name)} xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                '  <!-- prefix: prepended to every link and joint name (several robots in one tree);\n'
                '       mesh_uri: prepended to mesh paths, which are relative to this file\'s folder -->\n'
                '  <xacro:arg name="prefix" default=""/>\n'
                f'  <xacro:arg name="mesh_uri" default={self.text(self.mesh_uri)}/>\n'
                f'  <xacro:macro name="{macro}" params="prefix:=\'\' mesh_uri:={self.mesh_uri or chr(39) * 2}">\n'
                f"{body}  </xacro:macro>\n"
                f'  <xacro:{macro} prefix="$(arg prefix)" mesh_uri="$(arg mesh_uri)"/>\n</robot>\n')


def markers(graph: Graph, meshes: MeshStore, mesh_uri: str) -> list:
    """The scene's rendered shapes as marker descriptions (world frame, joints at zero)."""
    world = graph_fk(graph)
    out = []
    for link in graph.links:
        for shape in link.shapes:
            if shape.color is None:
                continue
            t = world[link.name] @ shape.origin
            pos = t[:3, 3]
            from transforms3d.quaternions import mat2quat

            w, x, y, z = mat2quat(t[:3, :3])
            # significant digits as in the URDF (a 1e-10 m offset is not 0), round-off zeroed
            # relative to the lengths it comes from
            zero = 1e-12 * max(float(np.max(np.abs(pos))), max(shape.size, default=0.0))
            item = {"ns": link.name, "id": len(out), "element": shape.id, "frame_id": "world",
                    "position": [float(fmt(v, zero)) for v in pos],
                    "orientation": [round(float(v), 9) for v in (x, y, z, w)],
                    "color": [round(float(c), 6) for c in shape.color]}
            if shape.kind == "cuboid":
                item.update(type="cube", scale=list(shape.size))
            elif shape.kind == "cylinder":
                item.update(type="cylinder", scale=[2 * shape.size[0], 2 * shape.size[0], shape.size[1]])
            elif shape.kind == "sphere":
                item.update(type="sphere", scale=[2 * shape.size[0]] * 3)
            else:
                rel = meshes.add_shape(shape)
                scale = list(shape.scale) if shape.kind == "part" else [1.0, 1.0, 1.0]
                item.update(type="mesh", scale=scale, mesh=rel, mesh_resource=mesh_uri + rel)
            out.append(item)
    return out


def output_names(out: Path) -> tuple[Path, str]:
    """Folder and stem of an output path: urdf/robotino.urdf.xacro -> (urdf, 'robotino')."""
    return out.parent, out.name.split(".")[0]


def to_urdf(path, out, *, xacro: bool = False, keep_virtual: bool = False, search_path=(),
            mesh_uri: str = "") -> ConversionResult:
    """Convert a project, robot or object file; write the URDF(s), meshes and (projects) the scene.

    Outputs for OUT = DIR/STEM.urdf[.xacro]: robots -> OUT (one robot) or DIR/STEM_PREFIXNAME.urdf[.xacro];
    a project's static objects -> DIR/STEM_scene.urdf and DIR/STEM_scene_markers.json; meshes ->
    DIR/STEM/meshes/*.stl, referenced relative to DIR (or as MESH_URI + 'STEM/meshes/...').
    Nothing is written unless the whole conversion succeeds.
    """
    check_mesh_uri(mesh_uri)
    return _write_urdf(load_mechanism(path, search_path), path, out, xacro=xacro, keep_virtual=keep_virtual,
                       mesh_uri=mesh_uri)


def _write_urdf(mech: Mechanism, path, out, *, xacro: bool, keep_virtual: bool, mesh_uri: str) -> ConversionResult:
    """to_urdf for a loaded mechanism (robot_description keys its cache on what the loading read)."""
    out = Path(out)
    folder, stem = output_names(out)
    suffix = ".urdf.xacro" if xacro else ".urdf"
    meshes = MeshStore(f"{stem}/meshes")
    source = Path(path).name
    documents: dict[Path, str] = {}
    result = ConversionResult(mech.joints, mech.probes, [], None, mechanism=mech)
    in_project = mech.kind == "project"
    units = mech.robots if in_project else mech.units
    # a project's scene files, whose names a robot named 'scene' would take
    scene_files = (folder / f"{stem}_scene.urdf", folder / f"{stem}_scene_markers.json") if in_project else ()
    footprints: dict = {}
    for k, unit in enumerate(units):
        graph = robot_graph(unit, keep_virtual=keep_virtual, in_project=in_project, warnings=result.warnings)
        if graph.dropped:
            _check_footprint(mech, unit, graph.root, footprints)
        target = out if len(units) == 1 else folder / f"{file_stem(f'{stem}_{unit.prefix}{unit.name}')}{suffix}"
        if target in documents or target in scene_files:
            target = folder / f"{file_stem(f'{stem}_{unit.prefix}{unit.name}')}_{k + 1}{suffix}"
        documents[target] = URDFWriter(meshes, xacro=xacro, mesh_uri=mesh_uri, source=source).document(graph)
        result.robots.append(dict(name=unit.name, prefix=unit.prefix, urdf=str(target), root=graph.root,
                                  initial_pose=graph.initial_pose, dropped=graph.dropped))
    if in_project:
        graph = scene_graph(mech)
        documents[scene_files[0]] = URDFWriter(meshes, mesh_uri=mesh_uri, source=source).document(graph)
        doc = {"frame_id": "world", "source": source,
               "note": "visualization_msgs/Marker-like list: type cube|cylinder|sphere|mesh, pose in frame_id, "
                       "scale (cube: size, cylinder/sphere: diameters and height), rgba colour; mesh paths are "
                       "relative to this file's folder, mesh_resource adds the --mesh-uri prefix",
               "markers": markers(graph, meshes, mesh_uri)}
        documents[scene_files[1]] = json.dumps(doc, indent=1) + "\n"
    if result.robots:
        result.initial_pose = result.robots[0]["initial_pose"]
    payload = {p: text.encode() for p, text in documents.items()}
    for name, data in meshes.files.items():
        payload[folder / stem / "meshes" / name] = data
    # never overwrite what the conversion reads (-o FILE.xml, meshes over a part)
    sources = {os.path.realpath(mech.file)} | {os.path.realpath(f) for f in _source_files(mech)}
    for target in payload:
        if os.path.realpath(target) in sources:
            raise MechanismError(f"refusing to write {target}: it is one of the input files")
    result.files = write_atomically(payload)
    return result


def _check_footprint(mech: Mechanism, unit: Unit, footprint: str, seen: dict) -> None:
    """The converter's planar-base link PREFIXbase_footprint and joint PREFIXbase_footprint_joint
    are unique over the mechanism only where each robot with a planar base has its own prefix:
    robots share one tf tree, so two frames of one name would be one frame with two parents."""
    joint = footprint + "_joint"
    fix = "give each <robot> reference a distinct prefix (prefix=\"r1/\")"
    if footprint in seen:
        other = seen[footprint]
        raise MechanismError(f"robots '{other.name}' (line {other.line}) and '{unit.name}' both have a planar base, "
                             f"written as link '{footprint}' and joint '{joint}'; link and joint names must be "
                             f"unique in the tf tree the robots share: {fix}", mech.file, unit.line, unit.kind)
    for other in mech.units:
        if other is not unit and (footprint in other.links or joint in other.edge_names):
            name, kind = (footprint, "link") if footprint in other.links else (joint, "joint")
            raise MechanismError(f"robot '{unit.name}' has a planar base, written as {kind} '{name}', which the "
                                 f"<{other.kind}> '{other.name}' (line {other.line}) also has; link and joint names "
                                 f"must be unique in the tf tree the robots share: {fix}",
                                 mech.file, unit.line, unit.kind)
    seen[footprint] = unit


def _source_files(mech: Mechanism) -> set:
    files = set()
    for unit in mech.units:
        files.add(unit.file)
        for link in unit.links.values():
            if link.file:
                files.add(link.file)
            files.update(s.part_file for s in link.shapes if s.part_file)
    return files


def write_atomically(payload: dict) -> list:
    """Write every file under bondsim_ros.outfiles' rule (a file via a temporary one beside it, a
    link through to its target, a pipe or device in place), putting none in place until all are
    written."""
    from bondsim_ros.outfiles import Output

    if not payload:
        return []
    for path in payload:
        if path.is_dir():
            raise MechanismError(f"cannot write {path}: it is a directory")
        for folder in path.parents:
            if folder.exists() and not folder.is_dir():
                raise MechanismError(f"cannot write {path}: {folder} is not a folder")
    staged = []
    try:
        for path, data in payload.items():
            out = Output(path)
            if out.kind == "file":
                path.parent.mkdir(parents=True, exist_ok=True)
            staged.append(out)
            out.stage().write_bytes(data)
        while staged:
            staged[0].commit()
            staged.pop(0)
    finally:
        for out in staged:
            out.discard()
    return [str(p) for p in payload]


def robot_description(path, cache_dir=None) -> str:
    """URDF text of the (first) robot of a mechanism XML, for /robot_description: converted once
    into a cache folder whose meshes the URDF references by file:// URI, so RViz and Foxglove find
    them. The folder is keyed on everything the conversion reads (the content of every XML and
    part file, the files the reference search found missing, the converter's own code), so an
    edit to any referenced file converts again; an index beside it lists those files, so a cache
    hit reads them and converts nothing."""
    from bondsim_ros.paths import cache_root

    path = Path(path).resolve()
    base = Path(cache_dir or cache_root() / "urdf").resolve()  # absolute: the mesh URIs are made from it
    index = base / f"{path.stem}-{hashlib.sha256(str(path).encode()).hexdigest()[:16]}.inputs.json"
    known = _read_index(index)
    if known is not None and not any(os.path.isfile(f) for f in known["absent"]):
        inputs = _hashes(known["inputs"])
        if inputs is not None:
            target = _description_target(base, path, inputs, known["absent"])
            if target.is_file():
                return target.read_text()
    for _ in range(3):  # again when a file changes while being converted
        mech = load_mechanism(path)
        target = _description_target(base, path, mech.inputs, mech.absent)
        if not target.is_file():
            folder = target.parent
            folder.mkdir(parents=True, exist_ok=True)
            # as_uri percent-encodes what a URI cannot hold (a space in the cache path)
            result = _write_urdf(mech, path, target, xacro=False, keep_virtual=False,
                                 mesh_uri=folder.as_uri() + "/")
            if result.robots and Path(result.robots[0]["urdf"]) != target:
                Path(result.robots[0]["urdf"]).replace(target)
        text = target.read_text()
        if _hashes(mech.inputs) == mech.inputs:  # the writer reads the parts again: still the bytes loaded
            write_atomically({index: json.dumps({"inputs": list(mech.inputs), "absent": mech.absent}).encode()})
            return text
        target.unlink(missing_ok=True)  # made from two versions of a file: never served from the cache
    return text


def _description_target(base: Path, path: Path, inputs: dict, absent: list) -> Path:
    key = json.dumps([_converter_digest(), str(path), sorted(inputs.items()), sorted(absent)])
    return base / f"{path.stem}-{hashlib.sha256(key.encode()).hexdigest()[:16]}" / f"{path.stem}.urdf"


def _hashes(files) -> dict | None:
    """sha256 of each file's content, or None when one cannot be read (gone: convert again)."""
    out = {}
    for f in files:
        digest = hashlib.sha256()
        try:
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        except OSError:
            return None
        out[f] = digest.hexdigest()
    return out


def _read_index(index: Path) -> dict | None:
    """The files of the last conversion, as written by robot_description, or None (none, or unreadable)."""
    try:
        known = json.loads(index.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(known, dict) and all(isinstance(known.get(k), list) and all(isinstance(f, str) for f in known[k])
                                         for k in ("inputs", "absent"))
    return known if ok else None


@functools.lru_cache(maxsize=None)
def _converter_digest() -> str:
    """sha256 of this package's code: an updated converter converts again instead of serving old output."""
    digest = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()
