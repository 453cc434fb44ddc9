"""Off-screen drawings of a mechanism: matplotlib 3-D with trimesh meshes, PNG or video.

Painter's-algorithm rendering (matplotlib sorts polygons by depth), flat shading from one light.
The static scene (ground, walls) is drawn first and clipped to the view box, the moving robots on
top, which is right for the elevated views used here. The floor is drawn as its top faces only (a
plane) with a grid on it; the `auto`, `robot` and `scene` views zoom and shift the camera so that
the mechanism (over all drawn rows, with its path) fills a fixed share of the frame.
"""
from __future__ import annotations

import csv
import itertools
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from bondsim_ros.cliargs import number

from . import frames
from .geometry import geometry_key, shape_mesh
from .loader import MAX_FILE_BYTES, MAX_PART_BYTES, load_mechanism
from .model import forward_kinematics

LIGHT = np.array([0.35, -0.45, 1.0]) / np.linalg.norm([0.35, -0.45, 1.0])
# Default camera. Elevation 15 deg (was 22): low enough to look under a deck at wheels near the
# floor (the 5DPO robot's), high enough to see the floor and the path on it. (The Robotino's
# wheels sit inside its chassis drum in urdf/robotino, so no camera above the floor shows them.)
ELEV, AZIM = 15.0, -60.0
FILL = 0.7  # share of the frame's width (or height) the mechanism spans in the auto/robot/scene views
FOLLOW_FILL = 1.4  # follow view: the 2 m floor window overfills the width, so the frame's edges cut it
BASE_COLUMNS = {"x": 0, "y": 1, "phi": 2}  # CSV base pose -> the planar virtual joints
DEFAULT_RGBA = (0.7, 0.7, 0.7, 1.0)  # shapes of a mechanism without any <render> element
MAX_SIDE = 8192  # largest image width or height [px]
MAX_TRIANGLES = 1_000_000  # drawn triangles of a mechanism (matplotlib draws each as a polygon)
MAX_FRAMES = 1_000_000  # frames of one video (11 h at 25 fps): more is a t column in other units
SUBDIVIDE_BUDGET = 400_000  # triangles the depth-sort subdivision may add up to; beyond it shapes stay coarse
GIF_TICK_MS = 10  # a GIF stores each frame's delay in hundredths of a second
# browsers and viewers show a GIF frame of under 20 ms for 100 ms: faster GIFs play slower
GIF_MAX_FPS = 50
MIN_DRAWN = 1e-6  # smallest drawn shape [m]: under a pixel in the smallest view, and smaller is numerical noise
SMALL = 0.1  # a mechanism smaller than this [m] gets margins in proportion: fixed ones left it a dot


class RenderError(Exception):
    """Bad render input (CSV, output type)."""


@dataclass
class Item:
    link: str
    vertices: np.ndarray  # (n, 3) in the link frame
    faces: np.ndarray
    color: np.ndarray  # rgba 0..1
    static: bool  # part of the scene (objects) rather than a robot


class Drawing:
    """Meshes per link and a forward-kinematics function over joint values; ``planar_frame``: the
    4x4 world pose of the frame the planar base's x and y move in (a project's ``<base>`` of the
    robot)."""

    def __init__(self, items, fk, planar_joints, root_links, planar_frame=None):
        self.items, self.fk, self.planar_joints, self.root_links = items, fk, planar_joints, root_links
        self.planar_frame = np.eye(4) if planar_frame is None else np.asarray(planar_frame, float)


def _from_xml(path, search_path) -> Drawing:
    import trimesh

    mech = load_mechanism(path, search_path)
    items = []
    # <render> is optional: a mechanism that colours nothing is drawn whole, in grey
    any_color = any(shape.color is not None for link in mech.links().values() for shape in link.shapes)
    total = 0
    meshes = {}  # geometry_key -> mesh: instances of one element share it (read only below)
    for unit in mech.units:
        static = unit.kind == "object" and mech.kind == "project"
        for link in unit.links.values():
            for shape in link.shapes:
                if shape.color is None and any_color:
                    continue
                key = geometry_key(shape)
                if key not in meshes:
                    meshes[key] = shape_mesh(shape, sections=20)
                    extent = float(np.max(meshes[key].extents, initial=0.0)) if len(meshes[key].faces) else 0.0
                    if not extent >= MIN_DRAWN:  # NaN too
                        raise RenderError(f"{shape.file}:{shape.line}: <{shape.kind}> '{shape.id}' is {extent:.3g} m "
                                          f"across, too small to draw (render draws shapes from {MIN_DRAWN:g} m)")
                mesh = meshes[key]
                if not static:  # short edges keep matplotlib's per-triangle depth sort right
                    # 3 cm, or 1/48 of a large shape's longest edge: six halvings (1/64) always
                    # reach it (a 6 m floor drawn alone exceeded subdivide_to_size's max_iter)
                    longest = float(np.max(mesh.edges_unique_length, initial=0.0))
                    edge = max(0.03, longest / 48)
                    rounds = int(np.ceil(np.log2(max(longest / edge, 1.0))))
                    if total + len(mesh.faces) * 4 ** rounds <= SUBDIVIDE_BUDGET:  # each round: 4x
                        v, f = trimesh.remesh.subdivide_to_size(mesh.vertices, mesh.faces, max_edge=edge,
                                                                max_iter=6)
                        mesh = trimesh.Trimesh(v, f, process=False)
                total += len(mesh.faces)
                if total > MAX_TRIANGLES:
                    raise RenderError(f"{path}: more than {MAX_TRIANGLES} triangles to draw (render limit "
                                      f"MAX_TRIANGLES); draw a part of the mechanism")
                v = (shape.origin[:3, :3] @ mesh.vertices.T).T + shape.origin[:3, 3]
                items.append(Item(link.name, v, np.asarray(mesh.faces), np.array(shape.color or DEFAULT_RGBA), static))
    planar = list(mech.robots[0].planar) if mech.robots and mech.robots[0].planar else []
    planar_frame = None
    if planar:  # the x joint's parent frame, its origin included: the project's <base> of the robot
        edge = next(e for e in mech.robots[0].edges if e.name == planar[0])
        planar_frame = forward_kinematics(mech, {})[edge.parent] @ edge.origin
    return Drawing(items, lambda q: forward_kinematics(mech, q), planar, [], planar_frame)


def _confined_mesh_handler(path):
    """yourdfpy's file name resolution, kept to regular files of at most MAX_PART_BYTES inside the
    URDF's folder: a shared URDF must not make render read /dev/zero or a file elsewhere."""
    import os
    from functools import partial

    import yourdfpy

    folder = Path(os.path.realpath(Path(path).parent))
    magic = partial(yourdfpy.filename_handler_magic, dir=str(Path(path).parent))

    def handler(fname):
        found = magic(fname=fname)
        real = Path(os.path.realpath(found))
        if (os.path.isfile(real) and (folder == real or folder in real.parents)
                and real.stat().st_size <= MAX_PART_BYTES):
            return str(real)
        print(f"render: mesh {fname!r} skipped (not a file of at most {MAX_PART_BYTES} bytes inside {folder})",
              file=sys.stderr)
        return str(folder / ".skipped-by-bondsim" / Path(fname).name)  # no such file: yourdfpy skips it

    return handler


def _check_finite(model, path) -> None:
    """RenderError naming the joint or link whose placement or size is nan or inf: the picture's
    bounds would be NaN (matplotlib: "Axis limits cannot be NaN or Inf")."""
    def bad(*values) -> bool:
        return any(v is not None and not np.isfinite(np.asarray(v, dtype=float)).all() for v in values)

    for joint in model.joints:
        if bad(joint.origin):
            raise RenderError(f"{path}: joint {joint.name!r}: its origin is not finite (nan or inf)")
    for link in model.links:
        for shape in list(link.visuals) + list(link.collisions):
            g = shape.geometry
            sizes = [g.box and g.box.size, g.sphere and g.sphere.radius,
                     g.cylinder and (g.cylinder.radius, g.cylinder.length), g.mesh and g.mesh.scale]
            if bad(shape.origin, *sizes):
                raise RenderError(f"{path}: link {link.name!r}: a placement or size that is not finite (nan or inf)")


def _from_urdf(path) -> Drawing:
    import os

    import yourdfpy

    from .urdfcheck import check_urdf_tree
    from .xmlreader import parse_xml

    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise RenderError(f"{path}: cannot read the URDF ({exc.strerror})") from None
    if size > MAX_FILE_BYTES:
        raise RenderError(f"{path}: {size} bytes, above the limit of {MAX_FILE_BYTES} bytes")
    # DTDs, entities, size, then the URDF's structure: refused before lxml and yourdfpy read it
    check_urdf_tree(parse_xml(Path(path).read_bytes(), str(path)))
    try:
        robot = yourdfpy.URDF.load(str(path), filename_handler=_confined_mesh_handler(path))
        scene = robot.scene
    except Exception as exc:  # noqa: BLE001 - lxml, yourdfpy and trimesh raise many types for a bad URDF
        raise RenderError(f"{path}: cannot read the URDF ({type(exc).__name__}: {exc})") from None
    _check_finite(robot.robot, path)
    items = []
    for node in scene.graph.nodes_geometry:
        t, name = scene.graph[node]
        mesh = scene.geometry[name]
        link_t = robot.get_transform(node)
        local = np.linalg.inv(link_t) @ t  # geometry placement in its link frame
        v = (local[:3, :3] @ mesh.vertices.T).T + local[:3, 3]
        rgba = np.asarray(mesh.visual.main_color, float) / 255.0 if hasattr(mesh.visual, "main_color") else \
            np.array([0.7, 0.7, 0.7, 1.0])
        items.append(Item(node, v, np.asarray(mesh.faces), rgba, False))
    names = robot.actuated_joint_names

    def fk(q):
        robot.update_cfg([float(q.get(j, 0.0)) for j in names])
        base = frames.planar(q.get("__x", 0.0), q.get("__y", 0.0), q.get("__phi", 0.0))
        return {it.link: base @ robot.get_transform(it.link) for it in items}

    planar = [j for j in ("base_x", "base_y", "base_phi") if j in names]
    if len(planar) != 3:
        return Drawing(items, fk, [], [robot.base_link])
    x_joint = robot.joint_map[planar[0]]  # (the fixed joints above it: a project's <base> of the robot)
    planar_frame = robot.get_transform(x_joint.parent) @ (np.eye(4) if x_joint.origin is None else x_joint.origin)
    return Drawing(items, fk, planar, [robot.base_link], planar_frame)


def _csv_rows(path, first_only=False) -> list:
    """(line, fields) per CSV record, the line its first one in the file: blank lines are records
    without fields, and a quoted field may span lines. A leading byte order mark (Excel writes one
    to a "CSV UTF-8" file) is no part of the first column's name."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            rows, start = [], 1
            for fields in itertools.islice(reader, 1) if first_only else reader:
                rows.append((start, fields))
                start = reader.line_num + 1
            return rows
    except OSError as exc:
        raise RenderError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise RenderError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except csv.Error as exc:
        raise RenderError(f"{path}: not a CSV file ({exc})") from None


def read_csv_header(path) -> list:
    """The column names of a joint CSV, its rows unread (to check names before a long render)."""
    rows = _csv_rows(path, first_only=True)
    if not rows:
        raise RenderError(f"{path}: needs a header and at least one row")
    return [h.strip() for h in rows[0][1]]


def read_joint_csv(path) -> tuple[list, np.ndarray]:
    """(header, values): the column names and a row of floats per non-blank CSV row."""
    header, data, _ = _read_joint_csv(path)
    return header, data


def _read_joint_csv(path) -> tuple[list, np.ndarray, list]:
    """read_joint_csv's header and values, and the file line of each row of values (for errors)."""
    rows = _csv_rows(path)
    if len(rows) < 2:
        raise RenderError(f"{path}: needs a header and at least one row")
    header = [h.strip() for h in rows[0][1]]
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:  # which of the two would be the joint's values?
        raise RenderError(f"{path}: column {twice[0]!r} appears more than once in the header")
    body = [(i, r) for i, r in rows[1:] if r]
    for i, r in body:
        if len(r) != len(header):
            raise RenderError(f"{path}:{i}: {len(r)} values, the header has {len(header)}")
        for h, v in zip(header, r):
            try:
                x = number(v.strip())  # (1_0 and non-ASCII digits, which float reads, are not numbers)
            except ValueError:
                raise RenderError(f"{path}:{i}: column {h!r}: {v!r} is not a number") from None
            if not np.isfinite(x):
                raise RenderError(f"{path}:{i}: column {h!r}: {v!r} is not a finite number")
    if not body:
        raise RenderError(f"{path}: needs a header and at least one row")
    return header, np.array([[float(v) for v in r] for _, r in body], float), [i for i, _ in body]


def joint_rows(drawing: Drawing, header: list, data: np.ndarray, joint_names, columns=None, base_columns=None,
               csv_name="the CSV") -> list:
    """Per CSV row a dict of joint values: x, y, phi -> the planar base, other columns by joint name;
    or, with ``columns`` ({joint: column}) and ``base_columns`` ((x, y, phi) columns or None),
    those columns only. ``joint_names``: the mechanism's moving joints (document order). Without
    ``columns``, joints the CSV has no column for stay at 0, with a warning on stderr naming them."""
    def base(i):  # a URDF without virtual joints: the pose of its root
        return drawing.planar_joints[i] if drawing.planar_joints else "__" + list(BASE_COLUMNS)[i]

    cols = {}
    if columns is not None:
        for joint, col in columns.items():
            if joint not in joint_names:
                raise RenderError(f"the mechanism has no joint {joint!r} for column {col!r}")
            if col not in header:
                raise RenderError(f"{csv_name}: no column {col!r} (the values of joint {joint!r})")
            cols[joint] = header.index(col)
        for i, col in enumerate(base_columns or ()):
            if col not in header:
                raise RenderError(f"{csv_name}: no column {col!r} (the base's {list(BASE_COLUMNS)[i]})")
            cols[base(i)] = header.index(col)
        return [{name: float(row[k]) for name, k in cols.items()} for row in data]
    for k, h in enumerate(header):
        if h in joint_names:
            cols[h] = k
    for h, i in BASE_COLUMNS.items():
        if h in header:
            cols.setdefault(base(i), header.index(h))
    if not cols:
        raise RenderError(f"{csv_name}: no column is named like a joint of the mechanism "
                          f"({', '.join(sorted(joint_names)) or 'it has none'}) or the base (x, y, phi); "
                          f"its columns: {', '.join(header)}")
    unset = unset_joints(drawing, header, joint_names, cols)
    if unset:
        print(f"render: warning: {csv_name}: {unset}", file=sys.stderr)
    return [{name: float(row[k]) for name, k in cols.items()} for row in data]


def _listing(names, limit=20) -> str:
    names = list(names)
    more = f", and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def unset_joints(drawing: Drawing, header: list, joint_names, cols: dict) -> str:
    """A sentence naming the joints of ``joint_names`` without a column in ``cols`` (drawn at 0
    throughout), the CSV's columns, and a column that looks meant for one of them (another case, a
    typo); empty when each has one. A CSV may drive part of a mechanism on purpose (the wheels of
    a robot without its rollers), so render warns with it rather than refusing the CSV."""
    import difflib

    alias = dict(zip(drawing.planar_joints, BASE_COLUMNS))
    missing = [j for j in dict.fromkeys(joint_names) if j not in cols]
    if not missing:
        return ""
    unused = [h for h in header if h not in joint_names and h not in BASE_COLUMNS and h != "t"]
    hints = []
    for j in missing:
        near = [h for h in unused if h.lower() == j.lower()] or difflib.get_close_matches(j, unused, 1, 0.8)
        if near:
            hints.append(f"column {near[0]!r} is not joint {j!r}: names must match exactly")
    named = [f"{j} (or {alias[j]})" if j in alias else j for j in missing]
    return (f"no column for joint{'s' * (len(missing) > 1)} {_listing(named)}: drawn at 0 in every row; "
            f"its columns: {_listing(header, 40)}" + "".join(f"; {h}" for h in hints[:5]))


def _shade(tris_world, rgba):
    n = np.cross(tris_world[:, 1] - tris_world[:, 0], tris_world[:, 2] - tris_world[:, 0])
    norm = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, norm, out=np.zeros_like(n), where=norm > 0)
    light = 0.45 + 0.55 * np.abs(n @ LIGHT)  # two-sided: clipped faces may face either way
    c = np.repeat(rgba[None, :], len(tris_world), axis=0)
    c[:, :3] = np.clip(c[:, :3] * light[:, None], 0, 1)
    return c


def _clip(tris: np.ndarray, box) -> np.ndarray:
    """Cut the scene's triangles to the view box in x and y (Sutherland-Hodgman, then fans)."""
    (x0, y0, _), (x1, y1, _) = box
    planes = ((0, x0, 1.0), (0, x1, -1.0), (1, y0, 1.0), (1, y1, -1.0))  # keep sign * (p[axis] - value) >= 0
    out = []
    for tri in tris:
        poly = list(tri)
        for axis, value, sign in planes:
            clipped = []
            for k, cur in enumerate(poly):
                prev = poly[k - 1]
                dc, dp = sign * (cur[axis] - value), sign * (prev[axis] - value)
                if dc >= 0:
                    if dp < 0:
                        clipped.append(prev + (cur - prev) * (dp / (dp - dc)))
                    clipped.append(cur)
                elif dp >= 0:
                    clipped.append(prev + (cur - prev) * (dp / (dp - dc)))
            poly = clipped
            if len(poly) < 3:
                break
        for k in range(1, len(poly) - 1):
            out.append((poly[0], poly[k], poly[k + 1]))
    return np.array(out, float).reshape(-1, 3, 3)


class Renderer:
    def __init__(self, drawing: Drawing, size=(1280, 960), view="auto"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.drawing, self.view = drawing, view
        dpi = 100
        self.size = size
        self.fig = Figure(figsize=(size[0] / dpi, size[1] / dpi), dpi=dpi)
        self.canvas = FigureCanvasAgg(self.fig)
        self.ax = self.fig.add_axes((0, 0, 1, 1), projection="3d")
        self.box = None
        self.elev, self.azim = ELEV, AZIM
        self.floor_box = None  # x-y extent of the drawn floor (static scene), None: the view box
        self.inset_ax = None  # 2-D axes of draw()'s inset, made on first use
        # camera framing: zoom of the 3-D box and the axes' shift [px]; matplotlib keeps 3-D axes
        # square, so the square is made larger than the frame (else a 4:3 frame draws into its
        # middle square only and cuts the floor off with vertical edges: the "thick slab" look)
        self.zoom, self.shift = 1.35, np.zeros(2)

    def world_triangles(self, q):
        fk = self.drawing.fk(q)
        static, moving = [], []
        for it in self.drawing.items:
            t = fk[it.link]
            v = (t[:3, :3] @ it.vertices.T).T + t[:3, 3]
            (static if it.static else moving).append((v[it.faces], it.color))
        return static, moving

    def fit(self, rows, trail=None):
        """View box: the robots over all rows (plus a margin), or the whole scene; then the camera
        framing that makes them (and ``trail``, (N, 2) base positions) fill FILL of the frame."""
        pts = []
        for q in rows:
            static, moving = self.world_triangles(q)
            if self.view == "scene" or not moving:
                moving = moving + static
            pts += [tris.reshape(-1, 3) for tris, _ in moving]
        if not pts:  # nothing to draw: frame the origin (an empty picture, not an error)
            pts = [np.array([[-0.5, -0.5, 0.0], [0.5, 0.5, 0.5]])]
        pts = np.concatenate(pts)
        if trail is not None and len(trail):
            pts = np.concatenate([pts, np.column_stack([trail, np.zeros(len(trail))])])
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        # the camera zooms by moving closer: a small mechanism in a box of fixed margins put it
        # inside the box, which then drew nothing
        small = min(1.0, float(np.max(hi - lo)) / SMALL)
        margin = 0.0 if self.view == "scene" else 0.25 * small + 0.1 * float(np.max(hi[:2] - lo[:2]))
        # the floor reaches well past the mechanism so that the frame's edges, not the view box,
        # cut it off
        span = float(np.max(hi[:2] - lo[:2]))
        self.floor_box = (lo[:2] - margin - 1.5 * span, hi[:2] + margin + 1.5 * span)
        lo[:2] -= margin
        hi[:2] += margin
        lo[2] = min(lo[2], -0.03 * small)  # room below the floor
        self.box = (lo, hi)
        if self.view in ("auto", "robot", "scene"):
            focus = pts[:: max(1, len(pts) // 20000)]  # framing needs the extent, not every vertex
            self._frame(focus, FILL)
        else:
            self._frame(self._box_corners(), FOLLOW_FILL)

    def _box_corners(self):
        lo, hi = self.box
        return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])

    def _axes_setup(self):
        ax, (lo, hi) = self.ax, self.box
        w, h = self.size
        side = 2 * max(w, h)  # matplotlib clips to the axes: keep their edges off the frame when shifted
        fw, fh = side / w, side / h
        ax.set_position(((1 - fw) / 2 + self.shift[0] / w, (1 - fh) / 2 + self.shift[1] / h, fw, fh))
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_zlim(lo[2], hi[2])
        ax.set_box_aspect(np.maximum(hi - lo, 1e-6), zoom=self.zoom)
        ax.view_init(elev=self.elev, azim=self.azim)

    def _pixels(self, pts):
        """Pixel coordinates (x right, y up) of world points under the current camera."""
        from mpl_toolkits.mplot3d import proj3d

        self._axes_setup()
        self.ax.apply_aspect()
        x2, y2, _ = proj3d.proj_transform(pts[:, 0], pts[:, 1], pts[:, 2], self.ax.get_proj())
        return self.ax.transData.transform(np.column_stack([x2, y2]))

    def _frame(self, pts, fill):
        """Zoom and shift so that the projected ``pts`` span ``fill`` of the frame, centred.
        Projected size scales with the zoom exactly for an orthographic camera and nearly for
        matplotlib's mild perspective, so three rounds converge."""
        w, h = self.size
        self.zoom, self.shift = 1.0, np.zeros(2)
        for _ in range(3):
            px = self._pixels(pts)
            (x0, y0), (x1, y1) = px.min(axis=0), px.max(axis=0)
            s = fill * min(w / max(x1 - x0, 1e-9), h / max(y1 - y0, 1e-9))
            self.zoom *= s
            # the zoom scales about the axes' centre; then move the axes to centre the points
            axc = np.array([w / 2, h / 2]) + self.shift
            centre = axc + s * (np.array([(x0 + x1) / 2, (y0 + y1) / 2]) - axc)
            self.shift = self.shift + np.array([w / 2, h / 2]) - centre

    def follow(self, q, half_width=1.0):
        """Centre the view box on the robots at q (a chase camera for long paths)."""
        _, moving = self.world_triangles(q)
        lo, hi = self.box
        c = np.concatenate([tris.reshape(-1, 3) for tris, _ in moving]).mean(axis=0) if moving else (lo + hi) / 2
        lo, hi = lo.copy(), hi.copy()
        lo[:2], hi[:2] = c[:2] - half_width, c[:2] + half_width
        self.box = (lo, hi)
        self.floor_box = (lo[:2] - half_width, hi[:2] + half_width)  # floor past the frame's edges
        self._frame(self._box_corners(), FOLLOW_FILL)

    def _grid(self, z, extent):
        """Grid lines on the floor (height z, x-y ``extent``): about eight cells across the view
        box, at a round spacing (1, 2 or 5 times a power of ten)."""
        lo, hi = extent
        vlo, vhi = self.box
        span = float(np.max(vhi[:2] - vlo[:2]))
        raw = span / 8
        mag = 10 ** np.floor(np.log10(raw))
        step = min((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), default=10 * mag)
        segs = []
        for k in np.arange(np.ceil(lo[0] / step), np.floor(hi[0] / step) + 1):
            segs.append([[k * step, lo[1], z], [k * step, hi[1], z]])
        for k in np.arange(np.ceil(lo[1] / step), np.floor(hi[1] / step) + 1):
            segs.append([[lo[0], k * step, z], [hi[0], k * step, z]])
        return segs

    def draw(self, q, title="", trail=None, inset=None):
        """One image at joint values q; ``trail``: (N, 2) base positions drawn on the floor;
        ``inset``: a callable given a 2-D matplotlib axes in the frame's top-right corner to draw
        into (a top-down map, a sensor's view)."""
        from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

        ax = self.ax
        ax.cla()
        ax.computed_zorder = False  # scene first, robots over it
        static, moving = self.world_triangles(q)
        lo, hi = self.box
        el, az = np.radians(self.elev), np.radians(self.azim)
        eye = np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])  # towards the viewer
        floor_z, floor_xy = None, None
        for z, group in ((1, static), (2, moving)):
            polys, colors = [], []
            for tris, rgba in group:
                if z == 1:
                    fb = self.floor_box or (lo[:2], hi[:2])
                    tris = _clip(tris, ((fb[0][0], fb[0][1], 0), (fb[1][0], fb[1][1], 0)))
                    if len(tris):
                        # only upward faces: a floor slab becomes its top plane (its sides, cut
                        # at the view's edge, made it read as a thick block), walls keep the
                        # faces that look up or sideways
                        n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
                        norm = np.linalg.norm(n, axis=1)
                        tris = tris[n[:, 2] > -1e-9 * norm]
                        n, norm = n[n[:, 2] > -1e-9 * norm], norm[n[:, 2] > -1e-9 * norm]
                        flat = n[:, 2] > 0.999 * norm
                        if flat.any():  # the floor: the lowest horizontal top face
                            ft = tris[flat]
                            zf = float(ft[:, :, 2].min())
                            if floor_z is None or zf < floor_z:
                                floor_z = zf
                                floor_xy = (ft[:, :, :2].reshape(-1, 2).min(axis=0),
                                            ft[:, :, :2].reshape(-1, 2).max(axis=0))
                elif len(tris):
                    # back faces of the (closed, outward-wound) robot meshes are hidden by their
                    # front faces anyway; dropping them halves matplotlib's polygon count
                    n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
                    tris = tris[n @ eye > -0.2 * np.linalg.norm(n, axis=1)]
                if len(tris):
                    polys.append(tris)
                    colors.append(_shade(tris, rgba))
            if polys:
                fc = np.concatenate(colors)
                # edges in the face colour close the anti-aliasing seams between triangles
                coll = Poly3DCollection(np.concatenate(polys), facecolors=fc, edgecolors=fc, linewidths=0.3, zorder=z)
                ax.add_collection3d(coll)
            if z == 1 and floor_z is not None:
                grid = Line3DCollection(self._grid(floor_z + 1e-3, floor_xy), colors=[(0.55, 0.55, 0.55, 0.6)],
                                        linewidths=0.6, zorder=1.2)
                ax.add_collection3d(grid)
        if trail is not None and len(trail) > 1:
            inside = np.all((trail >= lo[:2]) & (trail <= hi[:2]), axis=1)
            pts = np.where(inside[:, None], trail, np.nan)  # gaps where the path leaves the view
            z_trail = (floor_z or 0.0) + 2e-3
            ax.plot(pts[:, 0], pts[:, 1], np.full(len(pts), z_trail), color="tab:red", lw=1.5,
                    zorder=1.5)  # over the floor, under the robot
        self._axes_setup()
        ax.set_axis_off()
        if title:
            ax.text2D(0.02, 0.96, title, transform=self.fig.transFigure, fontsize=12)
        if inset is not None:
            if self.inset_ax is None:
                self.inset_ax = self.fig.add_axes((0.70, 0.60, 0.28, 0.35))
            self.inset_ax.cla()
            inset(self.inset_ax)
        self.canvas.draw()
        return np.asarray(self.canvas.buffer_rgba())[:, :, :3].copy()


def render(file, out, *, joints_csv=None, fps=25, every=1, row=0, search_path=(), size=(1280, 960), view="auto",
           progress=True, quiet=None, speed=1.0, inset=None, jobs=1, columns=None, base_columns=None) -> str:
    """Draw FILE (mechanism XML or URDF) to OUT (.png still,
    .mp4 or .gif along the CSV rows). A video plays the CSV's ``t`` column at ``speed`` times real
    time: frame j shows the row nearest to t_0 + j * speed / fps (:func:`frame_rows`), whatever
    the rows' spacing; a CSV without ``t`` gives one frame per row. ``every``: use every K-th row
    only. ``quiet=True`` is the same as ``progress=False``. ``inset``: a callable (axes, t) that
    draws a 2-D view of the instant t (or of the row index without a ``t`` column) into the
    frame's top-right corner, e.g. a laser scan over the map. ``jobs``: processes that draw a
    video's frames (each draws whole frames; this one feeds them to the encoder in order), the
    inset then picklable. ``columns`` ({joint: CSV column}) and ``base_columns`` ((x, y, phi) CSV
    columns): these columns alone drive the joints and the planar base, in place of the columns
    named like the joints and x, y, phi."""
    if quiet is not None:
        progress = not quiet
    file, out = Path(file), Path(out)
    if not (len(size) == 2 and all(isinstance(v, int) and 1 <= v <= MAX_SIDE for v in size)):
        raise RenderError(f"image size {size[0]}x{size[1]}: width and height must be 1..{MAX_SIDE} pixels")
    suffix = out.suffix.lower()
    if suffix not in (".png", ".mp4", ".gif"):
        raise RenderError(f"output must be .png, .mp4 or .gif, got {out.name}")
    if suffix == ".gif" and isinstance(fps, (int, float)) and fps > GIF_MAX_FPS:
        raise RenderError(f"frame rate {fps:g} fps: a GIF plays at most {GIF_MAX_FPS} fps (it stores frame delays "
                          f"in 10 ms steps, and viewers show a frame of under 20 ms for 100 ms); give --fps "
                          f"{GIF_MAX_FPS} or less, or write an MP4")
    if suffix != ".png" and row != 0:
        raise RenderError(f"--row {row}: the row of a still image (.png); a video draws every row")
    if suffix == ".png":
        video_only = [f"{name} {_shown(value)}" for name, value, default in
                      (("--fps", fps, 25), ("--speed", speed, 1.0), ("--every", every, 1), ("--jobs", jobs, 1))
                      if not (_is_number(value) and value == default)]
        if video_only:
            raise RenderError(f"{', '.join(video_only)}: option{'s' if len(video_only) > 1 else ''} of a video "
                              f"(.mp4, .gif); a still image (.png) draws one row (--row)")
    if suffix == ".mp4" and (size[0] % 2 or size[1] % 2):
        # H.264 in 4:2:0 has no odd side: ffmpeg's writer would resize the frames without a word
        raise RenderError(f"image size {size[0]}x{size[1]}: an MP4 needs an even width and height")
    if suffix == ".mp4":
        missing = mp4_unavailable()
        if missing:
            gif = out.with_suffix(".gif")
            raise RenderError(f"{out}: cannot write MP4: {missing}; ask for a GIF instead (-o {gif})")
    if file.name.lower().endswith(".xacro"):  # read as a mechanism XML it failed on a missing id=
        raise RenderError(f"{file}: a xacro file: expand it first (xacro {file.name} > robot.urdf) and render the URDF")
    drawing = _from_urdf(file) if file.suffix.lower() == ".urdf" else _from_xml(file, search_path)
    times = None
    if joints_csv:
        header, data, lines = _read_joint_csv(joints_csv)
        joint_names = _joint_names(drawing, file, search_path)
        rows = joint_rows(drawing, header, data, joint_names, columns, base_columns, str(joints_csv))
        times = data[:, header.index("t")] if "t" in header else np.arange(len(data)) / fps
    else:
        rows = [{}]
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        if not joints_csv and row != 0:
            raise RenderError(f"--row {row}: a row of the --joints CSV, and no --joints was given (zero joint values "
                              f"are drawn without it)")
        if not 0 <= row < len(rows):
            raise RenderError(f"--row {row} is outside the CSV (0..{len(rows) - 1})")
        renderer = Renderer(drawing, size, view)
        renderer.fit([rows[row]])
        at = row if times is None else float(times[row])
        image = renderer.draw(rows[row], "" if times is None else f"t = {times[row]:.2f} s",
                              inset=None if inset is None else (lambda ax: inset(ax, at)))
        _save_png(image, out)
        return str(out)
    if not (isinstance(fps, (int, float)) and fps > 0 and np.isfinite(fps)):
        raise RenderError(f"frame rate {fps!r}: must be a positive number")
    if not (isinstance(speed, (int, float)) and speed > 0 and np.isfinite(speed)):
        raise RenderError(f"speed {speed!r}: must be a positive number")
    if not (isinstance(jobs, int) and jobs >= 1):
        raise RenderError(f"jobs {jobs!r}: must be a whole number of processes, at least 1")
    picked = list(range(0, len(rows), every))
    if times is not None and "t" in header:
        bad = np.flatnonzero(np.diff(times) < 0)
        if bad.size:
            raise RenderError(f"{joints_csv}:{lines[int(bad[0]) + 1]}: column 't' goes back in time "
                              f"({times[bad[0]]:g} -> {times[bad[0] + 1]:g}); a video needs the rows in time order")
        picked = [picked[i] for i in frame_rows(times[picked], fps, speed)]
    trail = trail_points(drawing, rows)
    fit_rows = [rows[k] for k in picked[:: max(1, len(picked) // 50)]] + [rows[picked[-1]]]
    # rows sparser than the frames: a row is drawn once, shown as long as it lasts
    drawn = [k for i, k in enumerate(picked) if i == 0 or k != picked[i - 1]]
    scene = _Scene(file, tuple(search_path), size, view, fit_rows, trail, rows, times, inset)
    if jobs > 1 and len(drawn) >= MIN_FRAMES_PER_JOB * jobs:
        images = _drawn_by_workers(scene, drawn, jobs)
    else:
        renderer = Renderer(drawing, size, view)
        renderer.fit(fit_rows, trail)
        images = (_draw_frame(renderer, scene, k) for k in drawn)

    def frames_seq():
        last_k, last = None, None
        for k in picked:
            if k != last_k:
                last_k, last = k, next(images)
            yield last

    return _write_video(frames_seq(), len(picked), out, fps, progress)


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _shown(value) -> str:
    """A value as a message quotes it: a whole number of many digits in short form."""
    if not _is_number(value):
        return repr(value)
    if isinstance(value, (float, np.floating)):
        return f"{value:g}"
    try:
        text = str(value)
    except ValueError:  # past Python's limit on the digits an int is written with
        return "(a number of thousands of digits)"
    return text if len(text) <= 15 else f"{text[:6]}... ({len(text.lstrip('-'))} digits)"


def mp4_unavailable() -> str | None:
    """Why no MP4 can be written here (imageio-ffmpeg or its ffmpeg missing), or None. Asked
    before a video's frames are drawn: an MP4 that cannot be written is refused then, not
    replaced by a file of another name."""
    import os
    import shutil

    try:
        import imageio_ffmpeg
    except ImportError:
        return "imageio-ffmpeg is not installed (pip install 'bondsim_ros[mechanism]' brings it and its ffmpeg)"
    try:
        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:
        return "ffmpeg is missing (install it, or point IMAGEIO_FFMPEG_EXE at it)"
    if shutil.which(exe) is None:  # (IMAGEIO_FFMPEG_EXE is taken as it is, there or not)
        named = "IMAGEIO_FFMPEG_EXE=" if os.environ.get("IMAGEIO_FFMPEG_EXE") == exe else ""
        return f"ffmpeg is missing ({named}{exe} is no program to run)"
    return None


def trail_points(drawing: Drawing, rows: list) -> np.ndarray | None:
    """(N, 2) floor positions of the planar base over ``rows`` (joint value dicts), the path a
    video draws: the rows' x, y taken into the world through ``drawing.planar_frame``, as the
    robot itself is (a project's <base> may move and turn it); None without a planar base in
    the rows."""
    planar = drawing.planar_joints
    if not (planar and rows and all(j in rows[0] for j in planar[:2])):
        return None
    xy = np.array([[r[planar[0]], r[planar[1]]] for r in rows], float)
    frame = drawing.planar_frame
    # the point (x, y, 0) of that frame: a tilted frame's z column does not enter
    return xy @ frame[:2, :2].T + frame[:2, 3]


# a worker process costs some 2 s to start (matplotlib, trimesh, the mechanism); below this many
# frames each, drawing them here is as quick
MIN_FRAMES_PER_JOB = 20


class _Scene(NamedTuple):
    """What drawing a video's frame needs, picklable for the worker processes."""
    file: Path
    search_path: tuple
    size: tuple
    view: str
    fit_rows: list
    trail: np.ndarray | None
    rows: list
    times: np.ndarray | None
    inset: object


def _draw_frame(renderer: Renderer, scene: _Scene, k: int):
    """The image of row ``k`` (the renderer fitted to ``scene.fit_rows``)."""
    rows, times, trail, inset = scene.rows, scene.times, scene.trail, scene.inset
    if scene.view == "follow":
        renderer.follow(rows[k])
    at = k if times is None else float(times[k])
    return renderer.draw(rows[k], "" if times is None else f"t = {times[k]:.2f} s",
                         None if trail is None else trail[: k + 1],
                         None if inset is None else (lambda ax: inset(ax, at)))


_worker: dict = {}  # in a worker process: its renderer and scene


def _worker_start(scene: _Scene) -> None:
    import signal

    # Ctrl-C reaches the whole process group: the parent alone handles it (ends the workers)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    file = Path(scene.file)
    drawing = _from_urdf(file) if file.suffix.lower() == ".urdf" else _from_xml(file, scene.search_path)
    renderer = Renderer(drawing, scene.size, scene.view)
    renderer.fit(scene.fit_rows, scene.trail)
    _worker.update(renderer=renderer, scene=scene)


def _worker_frame(k: int):
    return _draw_frame(_worker["renderer"], _worker["scene"], k)


def _drawn_by_workers(scene: _Scene, drawn: list, jobs: int):
    """The images of rows ``drawn``, in order, drawn by ``jobs`` spawned processes; a few frames
    ahead at most are in flight (an image is some 2-4 MB)."""
    import concurrent.futures as cf
    import multiprocessing as mp
    from collections import deque

    from concurrent.futures.process import BrokenProcessPool

    pool = cf.ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"), initializer=_worker_start,
                                  initargs=(scene,))
    try:
        todo = iter(drawn)
        ahead = deque(pool.submit(_worker_frame, k) for k in itertools.islice(todo, 3 * jobs))
        while ahead:
            try:
                image = ahead.popleft().result()
            except BrokenProcessPool:
                # most often a script without the __main__ guard: each spawned process runs
                # the script again, reaches render() and is refused a pool of its own
                raise RenderError(
                    f"a process drawing the frames (jobs={jobs}) ended without drawing them: killed, out of memory, "
                    f"or it could not start. Each one imports the calling script again, so a script that calls "
                    f"render with jobs > 1 must do so under `if __name__ == \"__main__\":`; jobs=1 draws the "
                    f"frames in this process") from None
            k = next(todo, None)
            if k is not None:
                ahead.append(pool.submit(_worker_frame, k))
            yield image
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def frame_rows(times, fps, speed=1.0) -> list:
    """Indices of the rows a video at ``fps`` shows to play ``times`` (ascending) at ``speed``
    times real time: frame j is the row nearest to t_0 + j * speed / fps, for the
    floor((t_end - t_0) * fps / speed) + 1 frames that span the run, so the video lasts the run's
    duration / speed to within one frame."""
    times = np.asarray(times, dtype=float)
    span = float(times[-1] - times[0])
    # a float first: a tiny speed makes the count a number of hundreds of digits, or infinite
    with np.errstate(over="ignore"):
        count = np.floor(span * fps / speed * (1 + 1e-12)) + 1
    if not count <= MAX_FRAMES:
        raise RenderError(f"t spans {span:g} s: {count:.3g} frames at {fps:g} fps and speed {speed:g}, above the "
                          f"limit of {MAX_FRAMES}; is t in seconds? (a faster --speed shortens the video)")
    n = int(count)
    if len(times) == 1:
        return [0]
    want = times[0] + np.arange(n) * (speed / fps)
    i = np.clip(np.searchsorted(times, want), 1, len(times) - 1)
    nearer_left = (want - times[i - 1]) <= (times[i] - want)
    return [int(k) for k in np.where(nearer_left, i - 1, i)]


def _joint_names(drawing, file, search_path) -> list:
    """The moving joints of FILE in document order (a fixed drive has no value to draw)."""
    if Path(file).suffix.lower() == ".urdf":
        import yourdfpy

        return list(yourdfpy.URDF.load(str(file), load_meshes=False, build_scene_graph=False).actuated_joint_names)
    return [j.name for j in load_mechanism(file, search_path).joints if j.type != "fixed"]


def _save_png(image, out):
    from PIL import Image

    from bondsim_ros.outfiles import output_path

    with output_path(out) as tmp:
        Image.fromarray(image).save(tmp)


class _LineProgress:
    """Progress for a stderr that is no terminal (a log file, a pipe): a line every 5 % of the
    frames or every 10 s, whichever comes first, and one at the end; rich's bar draws nothing there."""

    def __init__(self, total, stream=None, every_s=10.0):
        import time

        self.total, self.done, self.stream, self.every_s = max(total, 1), 0, stream or sys.stderr, every_s
        self.clock = time.monotonic
        self.t0 = self.last_t = self.clock()
        self.last_pct = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_task(self, *args, **kwargs):
        return 0

    def advance(self, task, n=1):
        self.done += n
        now = self.clock()
        pct = 100 * self.done // self.total
        if self.done >= self.total or pct >= self.last_pct + 5 or now - self.last_t >= self.every_s:
            self.last_pct, self.last_t = pct - pct % 5, now
            elapsed = now - self.t0
            left = elapsed / self.done * (self.total - self.done)
            tail = "" if self.done >= self.total else f", about {_clock(left)} left"
            print(f"render: {self.done}/{self.total} frames ({pct}%), {_clock(elapsed)} elapsed{tail}",
                  file=self.stream, flush=True)


def _clock(seconds) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def _progress(total, enabled):
    """A rich bar on a terminal, progress lines on any other stderr, nothing when disabled."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    if enabled and not sys.stderr.isatty():
        return _LineProgress(total)
    return Progress(TextColumn("rendering"), BarColumn(), TextColumn("{task.completed}/{task.total} frames"),
                    TimeElapsedColumn(), TimeRemainingColumn(), disable=not enabled, transient=True)


class _EncoderFailed(Exception):
    """ffmpeg could not be found, started or written to, or left a file without the frames."""

    def __init__(self, cause):
        super().__init__(str(cause))
        self.cause = cause


def _write_mp4(out: Path, first, frames, fps: int) -> None:
    """Encode ``first`` and then ``frames`` with ffmpeg (imageio-ffmpeg's binary) into ``out``
    under bondsim_ros.outfiles' rule. The encoder's failures raise _EncoderFailed; those of the
    frames' iterator (a drawing that failed) pass through as they are."""
    from bondsim_ros.outfiles import output_path

    try:
        import imageio_ffmpeg
    except ImportError as exc:
        raise _EncoderFailed(exc) from None
    h, w = first.shape[:2]
    taken = 0

    def send(frame):
        nonlocal taken
        try:
            writer.send(frame)
        except (RuntimeError, OSError) as exc:  # no ffmpeg binary; ffmpeg refused or died (its stderr)
            raise _EncoderFailed(exc) from None
        taken += frame is not None

    with output_path(out) as tmp:
        try:  # (a generator: ffmpeg is looked for and started by the first send)
            # ffmpeg's errors reach stderr (its reason, when it fails); its warnings are noise (a short
            # video's "not enough frames to estimate rate"), also under --quiet
            writer = imageio_ffmpeg.write_frames(str(tmp), (w, h), fps=fps, codec="libx264", pix_fmt_out="yuv420p",
                                                 macro_block_size=2, quality=7, ffmpeg_log_level="error")
        except (RuntimeError, OSError) as exc:
            raise _EncoderFailed(exc) from None
        try:
            send(None)  # starts ffmpeg
            send(np.ascontiguousarray(first))
            for f in frames:
                send(np.ascontiguousarray(f))
        finally:  # ffmpeg done with the file before it is renamed or removed
            writer.close()
        # close() waits for ffmpeg but ignores its exit status: an ffmpeg that died or failed while
        # finishing the file (no space for the index, killed) shows only in the file it left
        written = _frames_in(imageio_ffmpeg.get_ffmpeg_exe(), tmp, taken)
        if written != taken:
            raise _EncoderFailed(f"ffmpeg wrote {written} of the {taken} frames")


def _frames_in(exe: str, path: Path, taken: int) -> int:
    """The video frames of the MP4 at ``path``, counted by ffmpeg from the container (a stream
    copy: nothing decoded, unlike imageio_ffmpeg.count_frames_and_secs); _EncoderFailed with
    ffmpeg's reason when it cannot read the file."""
    cmd = [exe, "-nostdin", "-v", "error", "-i", str(path), "-map", "0:v:0", "-c", "copy", "-f", "null",
           "-nostats", "-progress", "pipe:1", "-"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    except OSError as exc:
        raise _EncoderFailed(exc) from None
    counts = re.findall(r"^frame=(\d+)$", proc.stdout, re.MULTILINE)
    if proc.returncode or not counts:
        # ffmpeg's first complaint, without its "[in#0 @ 0x...]" prefix
        lines = [re.sub(r"^\[[^]]*\]\s*", "", line) for line in proc.stderr.splitlines() if line.strip()]
        reason = lines[0] if lines else f"exit status {proc.returncode}"
        raise _EncoderFailed(f"the video ffmpeg wrote cannot be read back: {reason}")
    return int(counts[-1])


def _write_video(frame_iter, total, out: Path, fps: int, progress: bool) -> str:
    """Write the frames to ``out`` (.mp4 or .gif) under bondsim_ros.outfiles' rule: a file under a
    temporary name first, so an interrupted render leaves no partial video; a pipe or device gets
    the finished video copied into it (the MP4 muxer seeks). An MP4 ffmpeg cannot write is an
    error: no file of another name is written in its place."""
    from PIL import Image

    from bondsim_ros.outfiles import output_path

    with _progress(total, progress) as bar:
        task = bar.add_task("frames", total=total)

        def tick(it):
            for f in it:
                yield f
                bar.advance(task)

        frames_seq = tick(frame_iter)
        if out.suffix.lower() == ".mp4":
            first = next(frames_seq)  # a frame's own failure is the render's, raised as it is
            try:
                _write_mp4(out, first, frames_seq, fps)
            except _EncoderFailed as failed:
                raise RenderError(f"{out}: cannot write MP4 ({failed.cause})") from None
            return str(out)
        images = [Image.fromarray(f) for f in frames_seq]
        with output_path(out) as tmp:
            # (Pillow takes milliseconds, writes them cut to 10 ms, and merges repeated frames' delays)
            images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:],
                           duration=gif_delays(len(images), fps), loop=0)
    return str(out)


def gif_delays(n: int, fps) -> list:
    """Delays [ms] of ``n`` GIF frames at ``fps`` (at most GIF_MAX_FPS), each a multiple of the
    GIF's 10 ms tick: frame j ends at (j + 1) / fps rounded to a tick, so the video's clock stays
    within half a tick of the frames' times and it lasts n / fps, as the MP4, to within one tick.
    (One delay for all frames cannot: at 30 fps a 33 ms delay is stored as 30 ms, 10 % fast.)"""
    ticks_per_s = 1000 / GIF_TICK_MS
    ends = np.floor(np.arange(1, n + 1) * ticks_per_s / fps + 0.5).astype(np.int64)
    return [int(d) * GIF_TICK_MS for d in np.diff(ends, prepend=0)]
