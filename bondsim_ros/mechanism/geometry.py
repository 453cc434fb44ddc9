"""Meshes and mass properties of shapes; a deterministic binary STL writer."""
from __future__ import annotations

import functools
import os
import struct

from typing import TYPE_CHECKING

import numpy as np

from .errors import MechanismError
from .model import Link, Shape

if TYPE_CHECKING:
    import trimesh

SECTIONS = 48  # segments around the axis of generated meshes


def shape_mesh(shape: Shape, sections: int = SECTIONS) -> trimesh.Trimesh:
    """The shape as a triangle mesh in its geometry frame (z = the shape's axis)."""
    mesh, scale = _sized_mesh(shape, sections)
    mesh.apply_scale(scale)
    return mesh


def _sized_mesh(shape: Shape, sections: int = SECTIONS) -> tuple:
    """(mesh, scale): the shape's mesh is ``mesh`` scaled by ``scale`` (three factors).

    trimesh builds and merges vertices to an absolute tolerance (1e-8): a shape a millimetre
    across came out not watertight (and a cone smaller than 0.1 mm without faces). So the mesh is
    made about 1 across and its scale kept apart: mass properties scale exactly, see
    _properties_per_volume."""
    import trimesh  # here, not at module level: 1.5 s that mass properties of primitives never need

    if shape.kind == "part":
        soup = trimesh.load_mesh(shape.part_file, file_type="stl", force="mesh", process=False)
        size = float(np.max(np.abs(soup.vertices), initial=0.0)) or 1.0
        mesh = trimesh.Trimesh(soup.vertices / size, soup.faces)  # vertices merged at this size
        if mesh.is_watertight and mesh.is_winding_consistent and mesh.volume < 0:
            mesh.invert()  # a closed mesh whose faces point inward: the same solid
        return mesh, np.asarray(shape.scale, float) * size
    if shape.kind == "revolution":
        size = float(np.max(np.abs(shape.points)))
        return revolution_mesh(np.asarray(shape.points, float) / size, sections), np.full(3, size)
    size = float(max(shape.size))
    unit = [v / size for v in shape.size]
    if shape.kind == "cuboid":
        mesh = trimesh.creation.box(extents=unit)
    elif shape.kind == "cylinder":
        mesh = trimesh.creation.cylinder(radius=unit[0], height=unit[1], sections=sections)
    elif shape.kind == "sphere":
        mesh = trimesh.creation.icosphere(subdivisions=3 if sections >= 32 else 2, radius=1.0)
    elif shape.kind == "cone":
        mesh = trimesh.creation.cone(radius=unit[0], height=unit[1], sections=sections)
    else:
        raise ValueError(shape.kind)
    return mesh, np.full(3, size)


def revolution_mesh(points: np.ndarray, sections: int = SECTIONS) -> trimesh.Trimesh:
    """Sweep the (r, h) profile 360 degrees about z, closing the ends on the axis so it has a volume."""
    import trimesh

    prof = [tuple(p) for p in np.asarray(points, float)]
    closed = len(prof) > 2 and prof[0] == prof[-1]  # a closed outline (a ring) needs no caps
    if prof[0][0] > 0 and not closed:
        prof.insert(0, (0.0, prof[0][1]))
    if prof[-1][0] > 0 and not closed:
        prof.append((0.0, prof[-1][1]))
    mesh = trimesh.creation.revolve(np.array(prof), sections=sections)
    if mesh.volume < 0:  # profile drawn the other way round: turn the faces outward
        mesh.invert()
    return mesh


def shape_mass_properties(shape: Shape):
    """(mass, centre of mass, inertia about the centre) in the link frame, or None if massless."""
    if not shape.mass:
        return None
    m = shape.mass
    if shape.kind == "cuboid":
        a, b, c = shape.size
        inertia = m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
        com = np.zeros(3)
    elif shape.kind == "cylinder":
        r, h = shape.size
        ixx = m * (3 * r * r + h * h) / 12.0
        inertia = np.diag([ixx, ixx, m * r * r / 2.0])
        com = np.zeros(3)
    elif shape.kind == "sphere":
        inertia = np.eye(3) * (0.4 * m * shape.size[0] ** 2)
        com = np.zeros(3)
    else:
        props = _properties_per_volume(geometry_key(shape))
        if isinstance(props, str):
            raise MechanismError(f"'{shape.id}' has a mass but its mesh encloses no volume ({props})", shape.file,
                                 shape.line, shape.kind)
        _, com, inertia_per_volume = props
        inertia = inertia_per_volume * m  # uniform density: the inertia of a unit mass times m
    rot, pos = shape.origin[:3, :3], shape.origin[:3, 3]
    return m, rot @ com + pos, rot @ inertia @ rot.T


def geometry_key(shape: Shape) -> tuple:
    """What a shape's mesh depends on (not its placement): instances of one element share it."""
    pts = None if shape.points is None else np.asarray(shape.points, float).tobytes()
    stamp = None
    if shape.part_file:  # a part edited between two conversions in one process is read again
        st = os.stat(shape.part_file)
        stamp = (st.st_mtime_ns, st.st_size)
    return (shape.kind, tuple(shape.size), pts, shape.part_file, tuple(shape.scale), stamp)


def _shape_of(key: tuple) -> Shape:
    kind, size, pts, part_file, scale, _ = key
    points = None if pts is None else np.frombuffer(pts, float).reshape(-1, 2)
    return Shape("", kind, size=size, points=points, part_file=part_file, scale=scale)


# An assembly may place one element thousands of times: its mesh and mass properties are
# computed once (they do not depend on where it is placed).
@functools.lru_cache(maxsize=512)
def _properties_per_volume(key: tuple):
    """(volume, centre of mass, inertia per unit volume: of a unit mass) of a mesh shape, or why
    it has no volume. Per unit volume, not at density 1: a tiny shape's density-1 inertia
    (size^5) would underflow to zero where the per-volume one (size^2) does not."""
    mesh, scale = _sized_mesh(_shape_of(key))
    if not mesh.is_watertight:
        return "it is not closed: some edges do not join two faces"
    if not mesh.is_winding_consistent:
        return "its faces are not all wound the same way round"
    if not mesh.is_volume or mesh.volume <= 0:
        return "its faces enclose nothing"
    mesh.density = 1.0
    volume = float(mesh.volume)
    # stretched by S along x, y, z, the second moment per volume C = tr(I)/2 E - I becomes S C S
    s = np.asarray(scale, float)
    inertia = np.asarray(mesh.moment_inertia, float) / volume
    second = np.trace(inertia) / 2.0 * np.eye(3) - inertia
    second = s[:, None] * second * s[None, :]
    return volume * float(np.prod(s)), np.asarray(mesh.center_mass, float) * s, np.trace(second) * np.eye(3) - second


@functools.lru_cache(maxsize=512)
def mesh_stl(key: tuple) -> bytes:
    """Binary STL of a generated (cone, revolution) shape's mesh."""
    return stl_bytes(shape_mesh(_shape_of(key)))


def link_inertial(link: Link):
    """Combined (mass, com, inertia about com) of the link's shapes with a mass, or None."""
    parts = [p for p in (shape_mass_properties(s) for s in link.shapes) if p is not None]
    if not parts:
        return None
    total = sum(m for m, _, _ in parts)
    com = sum(m * c for m, c, _ in parts) / total
    inertia = np.zeros((3, 3))
    for m, c, i in parts:
        d = c - com
        inertia += i + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))  # parallel axes
    return total, com, inertia


def stl_bytes(mesh: trimesh.Trimesh) -> bytes:
    """Binary STL with a fixed header, so regenerated files are identical byte for byte."""
    tris = np.asarray(mesh.triangles, dtype=np.float64)
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    norm = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.divide(normals, norm, out=np.zeros_like(normals), where=norm > 0)
    rec = np.zeros(len(tris), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    rec["n"] = normals
    rec["v"] = tris
    header = b"bondsim_ros mechanism mesh".ljust(80, b" ")
    return header + struct.pack("<I", len(tris)) + rec.tobytes()
