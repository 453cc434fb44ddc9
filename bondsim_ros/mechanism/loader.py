"""Read mechanism XML (docs/mechanism-xml.md: the format; docs/mechanism.md) into a Mechanism.

Validation is strict: every element and attribute is checked against the tables below, so a typo
is an error with file and line, never a silently ignored setting.
"""
from __future__ import annotations

import hashlib
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bondsim_ros.cliargs import number as number_text  # a decimal number as written (no 1_0, ASCII digits)

from . import frames
from .errors import MechanismError
from .model import Edge, Link, Mechanism, Probe, Shape, Unit
from .xmlreader import Node, parse_xml

LENGTH_UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001}
DRIVES = {
    "prismatic_x": ("prismatic", "x"), "prismatic_y": ("prismatic", "y"), "prismatic_z": ("prismatic", "z"),
    "revolute_x": ("revolute", "x"), "revolute_y": ("revolute", "y"), "revolute_z": ("revolute", "z"),
    "spherical": ("spherical", None), "fixed": ("fixed", None),
}
GEOMETRY = ("cuboid", "cylinder", "sphere", "cone", "revolution", "part")
TRANSFORMS = ("translation", "rotation")
BODY = GEOMETRY + ("assembly", "render", "probe")
ROOTS = ("project", "robot", "object")

# Size limits (docs/mechanism.md, "Limits"): a shared file must not be able to exhaust memory,
# time or the interpreter's stack. Counted while expanding, before anything is allocated.
MAX_FILE_BYTES = 8 << 20  # one mechanism XML file
MAX_PART_BYTES = 64 << 20  # one <part> mesh file
MAX_DEPTH = 100  # joints and attached objects nested in one another
MAX_ASSEMBLY_DEPTH = 100  # assemblies nested through <use>
MAX_LINKS = 5000  # links of the whole mechanism (probe frames and helper links included)
MAX_JOINTS = 5000  # URDF joints of the whole mechanism
MAX_SHAPES = 20000  # placed geometry instances of the whole mechanism (after assembly expansion)
MAX_POINTS = 2000  # <point>s of one body of revolution
MAX_NUMBER = 1e9  # magnitude of any number attribute (lengths, angles, masses, limits)
MAX_NAME = 200  # characters of a name, id, prefix or reference (file names are built from them)

# element -> (required attributes, optional attributes)
ATTRIBUTES = {
    "root": ({"id", "name"}, {"length_unit"}),
    "reference": ({"name"}, {"prefix"}),
    "base": (set(), set()),
    "translation": (set(), {"x", "y", "z"}),
    "rotation": ({"axis", "angle"}, set()),
    "joint": ({"name"}, set()),
    "drive": ({"type"}, {"lower", "upper", "velocity", "effort", "virtual"}),
    "link": ({"id", "name"}, set()),
    "cuboid": ({"id", "lx", "ly", "lz"}, {"mass", "name"}),
    "cylinder": ({"id", "radius", "length"}, {"axis", "mass", "name"}),
    "sphere": ({"id", "radius"}, {"mass", "name"}),
    "cone": ({"id", "radius", "length"}, {"axis", "mass", "name"}),
    "revolution": ({"id"}, {"axis", "mass", "name"}),
    "point": ({"r", "h"}, set()),
    "part": ({"id", "file"}, {"scale", "mass", "name"}),
    "assembly": ({"id"}, {"name"}),
    "use": ({"ref"}, set()),
    "render": ({"ref", "color"}, set()),
    "probe": ({"name"}, set()),
}


def check_attributes(node: Node, kind: str | None = None) -> None:
    required, optional = ATTRIBUTES[kind or node.tag]
    for name in node.attrs:
        if name not in required and name not in optional:
            allowed = ", ".join(sorted(required | optional)) or "none"
            raise node.error(f"unknown attribute '{name}' (allowed: {allowed})")
    for name in sorted(required):
        if name not in node.attrs:
            raise node.error(f"missing required attribute '{name}'")
    if node.text.strip():
        raise node.text_error()


def number(node: Node, attr: str, default=None, *, positive=False, nonnegative=False) -> float:
    raw = node.attrs.get(attr)
    if raw is None:
        return default
    try:
        value = number_text(raw.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise node.error(f"bad number {raw!r} for attribute '{attr}' (expected a finite decimal number)")
    if abs(value) > MAX_NUMBER:
        raise node.error(f"bad number {raw!r} for attribute '{attr}' "
                         f"(magnitude above the limit {MAX_NUMBER:g}, MAX_NUMBER)")
    if positive and value <= 0:
        raise node.error(f"bad number {raw!r} for attribute '{attr}' (expected a number > 0)")
    if nonnegative and value < 0:
        raise node.error(f"bad number {raw!r} for attribute '{attr}' (expected a number >= 0)")
    return value


def numbers(node: Node, attr: str, counts=(3,)) -> list:
    raw = node.attrs[attr]
    parts = raw.replace(",", " ").split()
    try:
        values = [number_text(p) for p in parts]
    except ValueError:
        values = []
    if len(values) not in counts or not all(math.isfinite(v) for v in values):
        want = " or ".join(str(c) for c in counts)
        raise node.error(f"bad number list {raw!r} for attribute '{attr}' (expected {want} numbers)")
    if any(abs(v) > MAX_NUMBER for v in values):
        raise node.error(f"bad number list {raw!r} for attribute '{attr}' "
                         f"(magnitude above the limit {MAX_NUMBER:g}, MAX_NUMBER)")
    return values


def axis_vector(node: Node, attr: str = "axis", default: str | None = None) -> tuple:
    raw = node.attrs.get(attr, default)
    if raw is None:
        raise node.error(f"missing required attribute '{attr}'")
    if raw.strip() in frames.AXES:
        return frames.AXES[raw.strip()]
    if len(raw.split()) == 1:
        raise node.error(f"bad axis {raw!r} (expected x, y, z or three numbers 'ax ay az')")
    vec = np.array(numbers(node, attr, (3,)))
    big = float(np.max(np.abs(vec)))
    n = float(np.linalg.norm(vec / big)) * big if big > 0 else 0.0  # scaled first: no overflow
    if n < 1e-12:
        raise node.error(f"bad axis {raw!r} (the vector must not be zero)")
    return tuple((vec / big) / (n / big))


def color(node: Node) -> tuple:
    """CSS colour name or 'r g b [a]' in 0..1 -> (rgba, name)."""
    # Pillow's table is the 148 CSS colour names, and Pillow is loaded anyway (sensor maps):
    # matplotlib would cost a warm start ~80 ms for a dictionary
    from PIL import ImageColor

    raw = node.attrs["color"].strip()
    key = raw.lower()
    if key in ImageColor.colormap:
        return tuple(c / 255.0 for c in ImageColor.getrgb(key)[:3]) + (1.0,), key
    parts = raw.replace(",", " ").split()
    try:
        values = [number_text(p) for p in parts]
    except ValueError:
        values = []
    if len(values) not in (3, 4) or not all(0.0 <= v <= 1.0 for v in values):
        raise node.error(f"unknown colour {raw!r} (expected a CSS colour name such as 'silver' or "
                         f"'r g b [a]' with numbers in 0.0-1.0)")
    if len(values) == 3:
        values.append(1.0)
    return tuple(values), None


@dataclass
class FileContext:
    """Per-file state: the unit factor, the id table and the reference prefix."""

    file: str
    unit: float
    prefix: str
    stem: str
    ids: dict = field(default_factory=dict)  # id -> node

    def register(self, node: Node) -> str:
        ident = node.attrs["id"]
        if len(ident) > MAX_NAME:
            raise node.error(f"id of {len(ident)} characters, above the limit of {MAX_NAME} (MAX_NAME)")
        if ident in self.ids:
            first = self.ids[ident]
            raise node.error(f"duplicate id '{ident}' (first used on line {first.line} by <{first.tag}>)")
        self.ids[ident] = node
        return ident


def project_folders(path) -> list:
    """Folders a mechanism may read from, for a FILE given by the user (or a --search-path DIR):
    its folder P (or P's parent when P is a robots/ or objects/ folder: the project lies above),
    and the robots/ and objects/ folders beside P, which the documented search looks in."""
    p = Path(os.path.realpath(path))
    folder = p if p.is_dir() else p.parent
    if folder.name in ("robots", "objects") and folder.parent != folder.parent.parent:  # never the root /
        folder = folder.parent
    return [folder, folder.parent / "robots", folder.parent / "objects"]


def shown_path(path) -> Path:
    """``path`` as messages name it, so that an editor opens it from the current folder:
    relative to that folder when inside it, else absolute."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute)
    return Path(absolute if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel)


def _inside(path: Path, roots: list) -> bool:
    real = Path(os.path.realpath(path))
    return any(real == r or r in real.parents for r in roots)


class Loader:
    def __init__(self, search_path=()):
        self.search_path = [Path(p) for p in search_path]
        self.cache: dict[str, Node] = {}
        self.joint_names: dict[str, Node] = {}  # all joint names of the mechanism, for uniqueness
        self.roots: list[Path] = []  # real paths of the folders references and parts may resolve into
        self.n_links = self.n_edges = self.n_shapes = 0
        self.found: dict[tuple, Path] = {}
        self.realpaths: dict[str, str] = {}
        self.unit_links: dict = {"world": None}  # over the units loaded so far, for _check_unique
        self.unit_joints: dict = {}
        self.inputs: dict[str, str] = {}  # absolute path -> sha256 of the bytes read (XML files, parts)
        self.absent: set[str] = set()  # absolute paths the reference search looked for before a match

    # -- files -------------------------------------------------------------------------
    def real(self, path) -> str:
        """os.path.realpath, remembered: a large mechanism resolves the same few files often."""
        key = str(path)
        if key not in self.realpaths:
            self.realpaths[key] = os.path.realpath(key)
        return self.realpaths[key]

    def read(self, path: Path) -> Node:
        key = self.real(path)
        if key not in self.cache:
            try:
                size = os.stat(path).st_size
                if size > MAX_FILE_BYTES:
                    raise MechanismError(f"file is {size} bytes, above the limit of {MAX_FILE_BYTES} bytes "
                                         f"for a mechanism XML file (MAX_FILE_BYTES)", str(path))
                data = Path(path).read_bytes()
            except OSError as exc:
                raise MechanismError(f"cannot read file: {exc.strerror}", str(path)) from None
            self.inputs[os.path.abspath(path)] = hashlib.sha256(data).hexdigest()
            self.cache[key] = parse_xml(data, str(path))
        return self.cache[key]

    def find(self, ref: Node, chain: list) -> Path:
        prefix = ref.attrs.get("prefix", "")
        if len(prefix) > MAX_NAME or any(c.isspace() for c in prefix):
            raise ref.error(f"bad prefix {prefix[:40]!r} (no white space, at most {MAX_NAME} characters: MAX_NAME)")
        # the same file is referenced many times in a large mechanism: search once per place
        key = (ref.file, ref.attrs["name"], chain[0] if chain else None)
        if key not in self.found:
            self.found[key] = self._find(ref, chain)
        return self.found[key]

    def _find(self, ref: Node, chain: list) -> Path:
        name = ref.attrs["name"]
        if len(name) > MAX_NAME:
            raise ref.error(f"reference name above the limit of {MAX_NAME} characters (MAX_NAME)")
        if (not name.strip() or name in (".", "..") or "/" in name or "\\" in name or "\0" in name
                or os.path.isabs(name)):
            raise ref.error(f"bad reference name {name!r}: a plain file name without folders, '..' or an "
                            f"absolute path (NAME.xml is looked up in the project's folders; add folders "
                            f"with --search-path)")
        here = Path(ref.file).parent
        top = Path(chain[0]).parent if chain else here
        # the folder above, from the absolute path: pathlib's parent of "." or ".." is "." (a file
        # given as R.xml from its robots/ folder did not find ../objects/W.xml)
        up = Path(os.path.abspath(here)).parent
        folders = [here, here / "robots", here / "objects", up / "robots", up / "objects"]
        if top != here:
            folders += [top, top / "robots", top / "objects"]
        for d in self.search_path:
            folders += [d, d / "robots", d / "objects"]
        seen = []
        for folder in folders:
            if folder in seen:
                continue
            seen.append(folder)
            candidate = folder / f"{name}.xml"
            try:
                found = candidate.is_file()
            except OSError:  # e.g. a name the file system cannot hold
                found = False
            if found:
                if not _inside(candidate, self.roots):
                    raise ref.error(f"{candidate} resolves to {os.path.realpath(candidate)}, outside the "
                                    f"project's folders ({', '.join(map(str, self.roots[:1]))} and "
                                    f"--search-path folders)")
                return shown_path(candidate)
            # a file made here later would be found first: what is read depends on its absence
            self.absent.add(os.path.abspath(candidate))
        looked = ", ".join(str(f) for f in seen)
        raise ref.error(f"cannot resolve {ref.tag} '{name}': no file {name}.xml (looked in: {looked}; "
                        f"add folders with --search-path)")

    # -- entry ---------------------------------------------------------------------------
    def load(self, path) -> Mechanism:
        path = Path(path)
        self.roots = []
        for p in [path] + self.search_path:
            self.roots += [Path(os.path.realpath(f)) for f in project_folders(p)]
        root = self.read(path)
        if root.tag not in ROOTS:
            raise root.error(f"unknown root element (expected one of {', '.join(ROOTS)})")
        if root.tag == "robot" and "id" not in root.attrs and any(c.tag == "link" for c in root.children):
            # <robot name=...><link name=...>: the root and first child of a URDF, not mechanism XML
            raise root.error("a URDF, not mechanism XML (its <robot> has <link> children and no id): "
                             "bondsim-ros render takes a URDF as it is")
        check_attributes(root, "root")
        self._unit_factor(root)
        mech = Mechanism(root.tag, _name(root, "name"), root.attrs["id"], str(path))  # a project's names its scene
        chain = [os.path.realpath(path)]
        if root.tag == "project":
            for child in root.children:
                if child.tag not in ("robot", "object"):
                    raise child.error("unknown element in <project> (expected <robot> or <object> references)")
                check_attributes(child, "reference")
                base = self._base(child, self._unit_factor(root))
                target = self.find(child, chain)
                sub = self.read(target)
                if sub.tag != child.tag:
                    raise child.error(f"{target.name} holds a <{sub.tag}> root, not a <{child.tag}>")
                self._check_cycle(child, target, chain)
                unit = self._unit(sub, target, child.attrs.get("prefix", ""), base, chain + [self.real(target)])
                unit.line = child.line
                self._check_unique(unit, child)
                mech.units.append(unit)
        else:
            unit = self._unit(root, path, "", np.eye(4), chain)
            self._check_unique(unit, root)
            mech.units.append(unit)
        mech.inputs, mech.absent = dict(sorted(self.inputs.items())), sorted(self.absent)
        return mech

    def _check_unique(self, unit: Unit, ref: Node) -> None:
        """Link and joint names are unique over the whole mechanism: the scene URDF holds every
        object, and robots share one tf tree. 'world' and ROOT_base are the converter's own."""
        links, joints = self.unit_links, self.unit_joints  # name -> unit (None: the converter's)
        where = lambda other: ("the converter's world frame" if other is None else  # noqa: E731
                               f"also made by the reference on line {other.line}")
        for name in unit.links:
            if name in links:
                raise ref.error(f"duplicate link name '{name}' ({where(links[name])}; give each reference "
                                f"a distinct prefix)")
        for name in list(unit.edge_names) + [f"{unit.root_link}_base"]:
            if name in joints:
                raise ref.error(f"duplicate joint name '{name}' ({where(joints[name])}; give each reference "
                                f"a distinct prefix)")
        links.update(dict.fromkeys(unit.links, unit))
        joints.update(dict.fromkeys(list(unit.edge_names) + [f"{unit.root_link}_base"], unit))

    def _part_file(self, node: Node, ctx: FileContext) -> str:
        """The part's mesh file: relative to the XML file, inside the project's folders, an STL."""
        raw = node.attrs["file"]
        if os.path.isabs(raw) or raw.startswith("~"):
            raise node.error(f"bad part file {raw!r}: give a path relative to the XML file's folder")
        file = Path(ctx.file).parent / raw
        if not file.is_file():
            raise node.error(f"cannot resolve part file '{raw}' (no file {file})")
        if not _inside(file, self.roots):
            raise node.error(f"part file {raw!r} resolves to {os.path.realpath(file)}, outside the project's "
                             f"folders ({', '.join(map(str, self.roots[:1]))} and --search-path folders)")
        if file.suffix.lower() != ".stl":
            raise node.error(f"part file {raw!r} is not an STL mesh (expected a .stl file)")
        size = file.stat().st_size
        if size > MAX_PART_BYTES:
            raise node.error(f"part file {raw!r} is {size} bytes, above the limit of {MAX_PART_BYTES} bytes "
                             f"(MAX_PART_BYTES)")
        import trimesh

        try:
            data = file.read_bytes()  # read once: checked and hashed (Mechanism.inputs) are the same bytes
            mesh = trimesh.load_mesh(io.BytesIO(data), file_type="stl", force="mesh")
            ok = len(mesh.faces) > 0 and bool(np.all(np.isfinite(mesh.vertices)))
        except Exception:  # noqa: BLE001 - trimesh raises many types for a file that is not STL
            ok = False
        if not ok:
            raise node.error(f"part file {raw!r} is not a readable STL mesh with finite vertices")
        self.inputs[os.path.abspath(file)] = hashlib.sha256(data).hexdigest()
        return str(file)

    def _check_cycle(self, ref: Node, target: Path, chain: list) -> None:
        key = self.real(target)
        if key in chain:
            names = " -> ".join(Path(c).name for c in chain[chain.index(key):] + [key])
            raise ref.error(f"reference cycle: {names}")

    @staticmethod
    def _unit_factor(root: Node) -> float:
        raw = root.attrs.get("length_unit", "m")
        if raw not in LENGTH_UNITS:
            raise root.error(f"bad length_unit {raw!r} (expected one of m, cm, mm)")
        return LENGTH_UNITS[raw]

    # -- transforms ----------------------------------------------------------------------
    def _placement(self, node: Node, unit: float) -> np.ndarray:
        """The transform children of <base>, <use> or <probe>, composed in document order;
        any other child is an error naming the element."""
        t = np.eye(4)
        for tr in node.children:
            if tr.tag not in TRANSFORMS:
                raise tr.error(f"unknown element inside <{node.tag}> (expected <translation> or <rotation>)")
            t = t @ self._transform(tr, unit)
        return t

    def _transform(self, node: Node, ctx_unit: float) -> np.ndarray:
        check_attributes(node)
        if node.children:
            raise node.children[0].error(f"unknown element inside <{node.tag}> (it takes no children)")
        if node.tag == "translation":
            return frames.translation(*(number(node, a, 0.0) * ctx_unit for a in "xyz"))
        angle = number(node, "angle")
        return frames.rotation(axis_vector(node), math.radians(angle))

    def _base(self, ref: Node, unit: float) -> np.ndarray:
        t = np.eye(4)
        seen = False
        for child in ref.children:
            if child.tag != "base":
                raise child.error(f"unknown element inside a <{ref.tag}> reference (only <base> is allowed)")
            if seen:
                raise child.error("a reference has at most one <base>")
            seen = True
            check_attributes(child)
            t = t @ self._placement(child, unit)
        return t

    # -- units ---------------------------------------------------------------------------
    def _unit(self, root: Node, path: Path, prefix: str, base: np.ndarray, chain: list) -> Unit:
        check_attributes(root, "root")
        ctx = FileContext(str(path), self._unit_factor(root), prefix, Path(path).stem)
        ctx.register(root)
        unit = Unit(root.tag, _name(root, "name"), prefix, str(path), prefix + root.attrs["name"], base)
        self._add_link(unit, Link(unit.root_link, file=str(path), line=root.line), root)
        self._body(root, root.children, unit.root_link, unit, ctx, chain, at_root=True)
        if root.tag == "robot":
            unit.planar = planar_base(unit)
        return unit

    def _add_link(self, unit: Unit, link: Link, node: Node, made: str = "") -> None:
        """Add a link; ``made``: what a link the converter adds is for (its name is taken like any other)."""
        self.n_links += 1
        if self.n_links > MAX_LINKS:
            raise node.error(f"the mechanism has more than {MAX_LINKS} links (size limit MAX_LINKS)")
        link.element, link.made = node.tag, made
        if link.name == "world":  # in the element's own file and line: no reference is at fault
            raise node.error("link name 'world' is reserved (the converter's world frame)")
        if link.name in unit.links:
            raise _clash("link", link, unit.links[link.name])
        unit.links[link.name] = link

    def _add_edge(self, unit: Unit, edge: Edge, node: Node, made: str = "") -> None:
        self.n_edges += 1
        if self.n_edges > MAX_JOINTS:
            raise node.error(f"the mechanism has more than {MAX_JOINTS} joints (size limit MAX_JOINTS)")
        edge.file, edge.line, edge.element, edge.made = node.file, node.line, node.tag, made
        if edge.name == f"{unit.root_link}_base":
            raise node.error(f"joint name '{edge.name}' is reserved (the converter's fixed joint ROOTLINK_base to the "
                             f"root link '{unit.root_link}')")
        if edge.name in unit.edge_names:
            raise _clash("joint", edge, next(e for e in unit.edges if e.name == edge.name))
        if edge.role == "joint":
            if edge.name in self.joint_names and self.joint_names[edge.name] is not node:
                raise node.error(f"duplicate joint name '{edge.name}' in the mechanism "
                                 f"(give each reference a distinct prefix)")
            self.joint_names[edge.name] = node
        unit.edges.append(edge)
        unit.edge_names.add(edge.name)

    def _body(self, owner: Node, nodes: list, link_name: str, unit: Unit, ctx: FileContext, chain: list,
              at_root: bool = False, depth: int = 0) -> None:
        """Geometry, assemblies, renders, probes, objects and joints belonging to one link."""
        items: dict[str, tuple] = {}  # id -> (node, payload) in document order
        renders = []
        seen_joint = False
        for node in nodes:
            tag = node.tag
            if tag in BODY and at_root and seen_joint:
                raise node.error(f"<{tag}> directly under the root must come before any <joint>")
            if tag in GEOMETRY:
                check_attributes(node)
                ctx.register(node)
                items[node.attrs["id"]] = (node, self._geometry(node, ctx))
            elif tag == "assembly":
                check_attributes(node)
                ctx.register(node)
                uses = []
                for use in node.children:
                    if use.tag != "use":
                        raise use.error("unknown element inside <assembly> (expected <use ref=...>)")
                    check_attributes(use)
                    uses.append((use.attrs["ref"], self._placement(use, ctx.unit), use))
                items[node.attrs["id"]] = (node, uses)
            elif tag == "render":
                check_attributes(node)
                if node.children:
                    raise node.children[0].error("unknown element inside <render> (it takes no children)")
                renders.append(node)
            elif tag == "probe":
                check_attributes(node)
                t = self._placement(node, ctx.unit)
                name = _name(node, "name")
                probe = Probe(name, f"{ctx.prefix}probe_{name}", link_name, t, ctx.prefix)
                if any(p.frame == probe.frame for p in unit.probes):
                    raise node.error(f"duplicate probe name '{name}'")
                self._add_link(unit, Link(probe.frame, file=ctx.file, line=node.line), node,
                               f"the converter's link probe_NAME, the frame of probe '{name}'")
                self._add_edge(unit, Edge(f"{probe.frame}_joint", "fixed", link_name, probe.frame, t, role="probe"),
                               node, f"the converter's joint probe_NAME_joint of probe '{name}'")
                unit.probes.append(probe)
            elif tag == "joint":
                seen_joint = True
                self._joint(node, link_name, unit, ctx, chain, depth + 1)
            elif tag == "object" and not at_root:
                self._attach(node, link_name, unit, ctx, chain, depth + 1)
            elif tag in TRANSFORMS and not at_root:
                raise node.error("transforms must come before the joint's <link>")
            else:
                where = "the root" if at_root else "a joint after its <link>"
                allowed = ", ".join(BODY + ("joint",) + (() if at_root else ("object",)))
                raise node.error(f"unknown element in {where} (expected one of {allowed})")
        unit.links[link_name].shapes.extend(self._place(items, renders, owner))

    def _geometry(self, node: Node, ctx: FileContext) -> Shape:
        u = ctx.unit
        kind = node.tag
        shape = Shape(node.attrs["id"], kind, mass=number(node, "mass", None, positive=True), file=ctx.file,
                      line=node.line, source_stem=ctx.stem)
        axis = (0.0, 0.0, 1.0)
        if kind == "cuboid":
            shape.size = tuple(number(node, a, positive=True) * u for a in ("lx", "ly", "lz"))
        elif kind in ("cylinder", "cone"):
            shape.size = (number(node, "radius", positive=True) * u, number(node, "length", positive=True) * u)
            axis = axis_vector(node, default="z")
        elif kind == "sphere":
            shape.size = (number(node, "radius", positive=True) * u,)
        elif kind == "revolution":
            axis = axis_vector(node, default="z")
            if len(node.children) > MAX_POINTS:
                raise node.error(f"{len(node.children)} <point>s, above the limit of {MAX_POINTS} (MAX_POINTS)")
            pts = []
            for p in node.children:
                if p.tag != "point":
                    raise p.error("unknown element inside <revolution> (expected <point r=... h=...>)")
                check_attributes(p)
                pts.append((number(p, "r", nonnegative=True) * u, number(p, "h") * u))
            if len(pts) < 2:
                raise node.error(f"a body of revolution needs at least 2 <point>s (got {len(pts)})")
            arr = np.array(pts)
            if np.all(arr[:, 0] == 0) or np.ptp(arr[:, 1]) == 0:
                raise node.error("the <point> profile encloses no volume (all r = 0 or all h equal)")
            crossing = outline_crossing(arr)
            if crossing:
                raise node.error(f"the outline crosses itself: {crossing[0]} crosses {crossing[1]} (edges named by "
                                 f"their <point>s, numbered from 1 in document order; the volumes of its loops "
                                 f"would cancel)")
            shape.points = arr
        elif kind == "part":
            shape.part_file = self._part_file(node, ctx)
            scale = numbers(node, "scale", (1, 3)) if "scale" in node.attrs else [1.0]
            if any(s <= 0 for s in scale):
                raise node.error(f"bad number {node.attrs['scale']!r} for attribute 'scale' (expected numbers > 0)")
            shape.scale = tuple(s * u for s in (scale * 3 if len(scale) == 1 else scale))
        if kind != "part" and node.children and kind != "revolution":
            raise node.children[0].error(f"unknown element inside <{kind}> (it takes no children)")
        if kind == "part" and node.children:
            raise node.children[0].error("unknown element inside <part> (it takes no children)")
        shape.origin = frames.z_to(axis)
        return shape

    def _place(self, items: dict, renders: list, owner: Node) -> list:
        """Expand assemblies into placed shape instances and attach render colours."""
        colors = {}
        for r in renders:
            ref = r.attrs["ref"]
            if ref not in items:
                raise r.error(f"unresolved ref '{ref}' (no geometry or assembly with that id in this link)")
            colors[ref] = color(r)
        used = set()
        for ident, (node, payload) in items.items():
            if node.tag == "assembly":
                for ref, _, use in payload:
                    if ref not in items:
                        raise use.error(f"unresolved ref '{ref}' (no geometry or assembly with that id in this link)")
                    used.add(ref)
        count = assembly_counts(items)  # also refuses cycles and too deep nesting
        placed = sum(count[ident] for ident in items if ident not in used)
        self.n_shapes += placed
        if self.n_shapes > MAX_SHAPES:
            raise owner.error(f"the mechanism places more than {MAX_SHAPES} geometry instances (this link "
                              f"alone {placed}; size limit MAX_SHAPES)")
        out = []

        def expand(ident, t, path):
            node, payload = items[ident]
            if node.tag == "assembly":
                for ref, tu, _ in payload:
                    expand(ref, t @ tu, path + [ref])
                return
            shape = Shape(**payload.__dict__)
            shape.origin = t @ payload.origin
            for p in reversed(path):  # the innermost render wins
                if p in colors:
                    shape.color, shape.color_name = colors[p]
                    break
            out.append(shape)

        for ident in items:  # items used by no assembly sit at the link frame
            if ident not in used:
                expand(ident, np.eye(4), [ident])
        return out

    def _joint(self, node: Node, parent: str, unit: Unit, ctx: FileContext, chain: list, depth: int) -> None:
        _check_depth(node, depth)
        check_attributes(node)
        name = ctx.prefix + _name(node, "name")
        pre, post = np.eye(4), np.eye(4)
        drive = link = None
        body_start = len(node.children)
        for k, child in enumerate(node.children):
            if child.tag in TRANSFORMS and link is None:
                t = self._transform(child, ctx.unit)
                if drive is None:
                    pre = pre @ t
                else:
                    post = post @ t
            elif child.tag == "drive":
                if drive is not None:
                    raise child.error("a joint has exactly one <drive>")
                check_attributes(child)
                drive = child
            elif child.tag == "link":
                if drive is None:
                    raise child.error("<link> must follow the joint's <drive>")
                check_attributes(child)
                if child.children:
                    raise child.children[0].error("unknown element inside <link> (it takes no children)")
                link = child
                body_start = k + 1
                break
            elif child.tag in TRANSFORMS:
                raise child.error("transforms must come before the joint's <link>")
            elif child.tag in BODY + ("joint", "object"):
                raise child.error(f"<{child.tag}> must follow the joint's <link>")
            else:
                raise child.error("unknown element in <joint> (expected translation, rotation, drive, link, "
                                  "then geometry, assembly, render, probe, object or joint)")
        if drive is None:
            raise node.error("missing <drive> (every joint needs one)")
        if link is None:
            raise node.error("missing <link id=... name=...> after the <drive>")
        ctx.register(link)
        child_name = ctx.prefix + _name(link, "name")
        self._add_link(unit, Link(child_name, file=ctx.file, line=link.line), link)

        dtype = drive.attrs["type"]
        if dtype not in DRIVES:
            raise drive.error(f"unknown type '{dtype}' (expected one of {', '.join(DRIVES)})")
        kind, axis = DRIVES[dtype]
        virtual_raw = drive.attrs.get("virtual", "false").strip().lower()
        if virtual_raw not in ("true", "false"):
            raise drive.error(f"bad value {drive.attrs['virtual']!r} for attribute 'virtual' (expected true or false)")
        to_si = ctx.unit if kind == "prismatic" else math.radians(1.0)
        if kind == "fixed":
            to_si = 1.0
        lower, upper = number(drive, "lower"), number(drive, "upper")
        if lower is not None and upper is not None and lower > upper:
            raise drive.error(f"lower ({lower}) is greater than upper ({upper})")
        limits = dict(lower=None if lower is None else lower * to_si,
                      upper=None if upper is None else upper * to_si,
                      velocity=(None if "velocity" not in drive.attrs
                                else number(drive, "velocity", nonnegative=True) * to_si),
                      effort=number(drive, "effort", None, nonnegative=True), virtual=virtual_raw == "true",
                      drive=dtype)
        # post-transforms need a link of their own: NAME_frame, even when the XML link has that name
        # (it is then refused as taken, rather than the transforms silently dropped)
        target = child_name if frames.is_identity(post) else f"{name}_frame"
        post_made = f"the converter's link NAME_frame for the post-transforms of joint '{name}'"
        if not frames.is_identity(post):
            self._add_link(unit, Link(target, file=ctx.file, line=drive.line), drive, post_made)
        if kind == "fixed":
            self._add_edge(unit, Edge(name, "fixed", parent, target, pre, role="joint", **limits), node)
        elif kind == "spherical":
            links = [parent, f"{name}_x_link", f"{name}_y_link", target]
            for i, ax in enumerate("xyz"):
                if i < 2:
                    self._add_link(unit, Link(links[i + 1], file=ctx.file, line=drive.line), drive,
                                   f"the converter's link NAME_{ax}_link inside spherical joint '{name}'")
                self._add_edge(unit, Edge(f"{name}_{ax}", "revolute", links[i], links[i + 1],
                                          pre if i == 0 else np.eye(4), frames.AXES[ax], role="joint", **limits), node,
                               f"the converter's joint NAME_{ax}, one of the three of spherical joint '{name}'")
        else:
            self._add_edge(unit, Edge(name, kind, parent, target, pre, frames.AXES[axis], role="joint", **limits), node)
        if not frames.is_identity(post):
            self._add_edge(unit, Edge(f"{name}_offset", "fixed", target, child_name, post, role="offset"), node,
                           f"the converter's joint NAME_offset for the post-transforms of joint '{name}'")
        self._body(node, node.children[body_start:], child_name, unit, ctx, chain, depth=depth)

    def _attach(self, ref: Node, link_name: str, unit: Unit, ctx: FileContext, chain: list, depth: int) -> None:
        _check_depth(ref, depth)
        check_attributes(ref, "reference")
        base = self._base(ref, ctx.unit)
        target = self.find(ref, chain)
        self._check_cycle(ref, target, chain)
        root = self.read(target)
        if root.tag != "object":
            raise ref.error(f"{target.name} holds a <{root.tag}> root; only objects can be attached to a link")
        check_attributes(root, "root")
        sub = FileContext(str(target), self._unit_factor(root), ctx.prefix + ref.attrs.get("prefix", ""), target.stem)
        sub.register(root)
        root_link = sub.prefix + _name(root, "name")
        self._add_link(unit, Link(root_link, file=str(target), line=root.line), ref)
        self._add_edge(unit, Edge(f"{root_link}_base", "fixed", link_name, root_link, base, role="attach"), ref,
                       f"the converter's joint ROOTLINK_base attaching object '{root_link}'")
        self._body(root, root.children, root_link, unit, sub, chain + [self.real(target)], at_root=True,
                   depth=depth)


def _clash(kind: str, new, old) -> MechanismError:
    """Two links (or joints) of one name, ``new`` added after ``old``. The error stands at the
    element the user wrote (the later one if both are), and says what the other one is."""
    if new.made and old.made:
        return MechanismError(f"duplicate {kind} name '{new.name}': {new.made} and {old.made} "
                              f"(rename one of them)", new.file, new.line, new.element)
    here, other = (old, new) if new.made else (new, old)
    if other.made:
        what = f"also {other.made}; the converter's own names are taken too: rename this <{here.element}>"
    else:
        what = (f"also the <{other.element}> on line {other.line}" + ("" if other.file == here.file else
                                                                      f" of {other.file}")
                + "; names must be unique after prefixing")
    return MechanismError(f"duplicate {kind} name '{new.name}' ({what})", here.file, here.line, here.element)


def _name(node: Node, attr: str) -> str:
    """A name that becomes (part of) a URDF link or joint name: not empty, no white space."""
    value = node.attrs[attr]
    if not value or any(c.isspace() for c in value):
        raise node.error(f"bad {attr} {value!r} (a name must be non-empty and contain no white space)")
    if len(value) > MAX_NAME:
        raise node.error(f"{attr} of {len(value)} characters, above the limit of {MAX_NAME} (MAX_NAME)")
    return value


def outline_crossing(points: np.ndarray) -> tuple | None:
    """The first two edges of a <revolution> outline that cross each other, as text, or None.

    The outline is the one swept: the points in order, closed on the axis (a cap from the first
    and last point to the axis) unless the first and last point are the same. Only proper
    crossings count; edges that merely touch, or run along the axis, sweep a volume still.
    """
    pts = [tuple(p) for p in np.asarray(points, float)]
    n = len(pts)
    labels = [f"edge {i + 1}-{i + 2}" for i in range(n - 1)]
    closed = n > 2 and pts[0] == pts[-1]
    if not closed:  # as revolution_mesh closes it; the segment along the axis crosses nothing
        if pts[0][0] > 0:
            pts.insert(0, (0.0, pts[0][1]))
            labels.insert(0, "the cap from point 1 to the axis")
        if pts[-1][0] > 0:
            pts.append((0.0, pts[-1][1]))
            labels.append(f"the cap from point {n} to the axis")
    p = np.array(pts)
    p = p / np.max(np.abs(p))  # the signs below do not depend on the scale; tiny numbers would underflow
    a, b = p[:-1], p[1:]
    m = len(a)
    # orientation of point q to edge e: cross(d_e, q) - cross(d_e, a_e); edges cross when each
    # has the other's ends strictly on opposite sides
    dx, dy = (b - a).T
    k = dx * a[:, 1] - dy * a[:, 0]
    idx = np.arange(m)
    for start in range(0, m, 256):  # blocks of edges against all: n^2 tests without n^2 memory
        i = idx[start:start + 256, None]
        o1 = dx[i] * a[None, :, 1] - dy[i] * a[None, :, 0] - k[i]
        o2 = dx[i] * b[None, :, 1] - dy[i] * b[None, :, 0] - k[i]
        o3 = dx[None, :] * a[i, 1] - dy[None, :] * a[i, 0] - k[None, :]
        o4 = dx[None, :] * b[i, 1] - dy[None, :] * b[i, 0] - k[None, :]
        hit = (o1 * o2 < 0) & (o3 * o4 < 0) & (idx[None, :] > i + 1)  # each pair once, no neighbours
        if closed:  # the last edge ends where the first begins
            hit &= ~((i == 0) & (idx[None, :] == m - 1))
        if hit.any():
            r, j = np.argwhere(hit)[0]
            return labels[start + r], labels[j]
    return None


def _check_depth(node: Node, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise node.error(f"joints and attached objects are nested more than {MAX_DEPTH} deep "
                         f"(size limit MAX_DEPTH)")


def assembly_counts(items: dict) -> dict:
    """Placed shape instances under each item (1 for geometry, the sum over <use>s for an
    assembly), by an iterative depth-first walk: linear in the items and uses however much an
    assembly fans out, no recursion. Refuses a cycle and nesting deeper than MAX_ASSEMBLY_DEPTH."""
    count, depth, state = {}, {}, {}  # state: 1 on the walk's path, 2 done

    def uses(ident):
        node, payload = items[ident]
        return iter(payload if node.tag == "assembly" else ())

    for start in items:
        if start in state:
            continue
        state[start] = 1
        stack, path = [(start, uses(start))], [start]
        while stack:
            ident, it = stack[-1]
            for ref, _, use in it:
                if ref not in items:
                    raise use.error(f"unresolved ref '{ref}' (no geometry or assembly with that id in this link)")
                if state.get(ref) == 1:
                    raise use.error(f"reference cycle: {' -> '.join(path[path.index(ref):] + [ref])}")
                if ref not in state:
                    state[ref] = 1
                    stack.append((ref, uses(ref)))
                    path.append(ref)
                    break
            else:
                stack.pop()
                path.pop()
                state[ident] = 2
                node, payload = items[ident]
                if node.tag == "assembly":
                    count[ident] = sum(count[ref] for ref, _, _ in payload)
                    depth[ident] = 1 + max((depth[ref] for ref, _, _ in payload), default=0)
                    if depth[ident] > MAX_ASSEMBLY_DEPTH:
                        raise node.error(f"assemblies are nested more than {MAX_ASSEMBLY_DEPTH} deep "
                                         f"(size limit MAX_ASSEMBLY_DEPTH)")
                    if count[ident] > MAX_SHAPES:
                        raise node.error(f"assembly '{ident}' places {count[ident]} geometry instances, above the "
                                         f"limit of {MAX_SHAPES} (MAX_SHAPES)")
                else:
                    count[ident], depth[ident] = 1, 0
    return count


def planar_base(unit: Unit) -> tuple | None:
    """Names of the virtual X, Y, yaw joints if the unit starts with a planar base, else None.

    The pattern: root link without shapes, whose only child edge is a virtual prismatic X, then
    virtual prismatic Y, then virtual revolute Z, identity origins, no shapes or other children on
    the two links in between.
    """
    want = [("prismatic", (1.0, 0.0, 0.0)), ("prismatic", (0.0, 1.0, 0.0)), ("revolute", (0.0, 0.0, 1.0))]
    if len(unit.edges) < 3:
        return None
    link = unit.root_link
    names = []
    for edge, (kind, axis) in zip(unit.edges[:3], want):
        children = [e for e in unit.edges if e.parent == link]
        if (edge.parent != link or children != [edge] or unit.links[link].shapes or edge.kind != kind
                or tuple(edge.axis) != axis or not edge.virtual or not frames.is_identity(edge.origin)
                or edge.role != "joint"):
            return None
        names.append(edge.name)
        link = edge.child
    return tuple(names)


def load_mechanism(path, search_path=()) -> Mechanism:
    """Read a project, robot or object file and everything it references."""
    return Loader(search_path).load(path)
