"""Exact ray casting on an occupancy grid, all beams at once.

Grid traversal after Amanatides & Woo ("A fast voxel traversal algorithm for ray tracing",
Eurographics 1987): each beam steps from cell to cell through exactly the cells it crosses, so
the range returned is the distance to where the beam enters the first blocking cell -- exact up
to floating point, not a sample along the beam. The loop runs over cells, vectorised over the
beams still travelling; it ends after at most width + height steps.
"""
from __future__ import annotations

import numpy as np

from .occupancy import OccupancyGrid


def cast(grid: OccupancyGrid, blocking: np.ndarray, origins, angles, max_range) -> np.ndarray:
    """Distance [m] from each origin (N, 2 world coordinates) along its angle (N, world yaw)
    to the first cell of ``blocking`` (bool (height, width), e.g. ``grid.blocking()``) it enters,
    or ``inf`` when it meets none within ``max_range`` (scalar or (N,), positive). A beam that starts
    inside a blocking cell returns 0. Outside the grid is free space."""
    origins = np.atleast_2d(np.asarray(origins, dtype=float))
    angles = np.asarray(angles, dtype=float).reshape(-1)
    n = angles.size
    origins = np.broadcast_to(origins, (n, 2))
    limit = np.broadcast_to(np.asarray(max_range, dtype=float), (n,)) / grid.resolution  # in cells
    h, w = blocking.shape
    p = grid.to_grid(origins)  # (N, 2) in cells
    yaw = grid.origin[2]
    d = np.stack([np.cos(angles - yaw), np.sin(angles - yaw)], axis=-1)
    px, py, dx, dy = p[:, 0], p[:, 1], d[:, 0], d[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_x = np.where(dx != 0, 1.0 / dx, np.inf)
        inv_y = np.where(dy != 0, 1.0 / dy, np.inf)
        # slab intersection with the grid's box [0, w] x [0, h]: where each beam is inside it
        tx0, tx1 = (0 - px) * inv_x, (w - px) * inv_x
        ty0, ty1 = (0 - py) * inv_y, (h - py) * inv_y
        # a beam parallel to an axis: inside the slab for all t, or never. On a cell border it
        # runs through the cells above (right of) it, as within the grid: on the grid's top
        # (right) edge, through none
        in_x, in_y = (px >= 0) & (px < w), (py >= 0) & (py < h)
        tx_lo = np.where(dx != 0, np.minimum(tx0, tx1), np.where(in_x, -np.inf, np.inf))
        tx_hi = np.where(dx != 0, np.maximum(tx0, tx1), np.where(in_x, np.inf, -np.inf))
        ty_lo = np.where(dy != 0, np.minimum(ty0, ty1), np.where(in_y, -np.inf, np.inf))
        ty_hi = np.where(dy != 0, np.maximum(ty0, ty1), np.where(in_y, np.inf, -np.inf))
    t_enter = np.maximum(np.maximum(tx_lo, ty_lo), 0.0)
    t_exit = np.minimum(np.minimum(tx_hi, ty_hi), limit)
    result = np.full(n, np.inf)
    # a beam that only touches the box (leaves it where it starts, grazes a corner) enters no
    # cell: a point on a border belongs to the cell the beam moves into
    active = t_enter < t_exit
    # first cell: the one the beam is in just after its entry point (a point on a cell border
    # belongs to the cell the beam moves into); clipped against round-off on the box's edge
    with np.errstate(invalid="ignore"):  # inf * 0, NaN: a beam parallel to an axis that misses the grid (inactive)
        ex, ey = px + t_enter * dx, py + t_enter * dy
        ix = np.clip(np.where(dx < 0, np.ceil(ex) - 1, np.floor(ex)), 0, w - 1).astype(np.int64)
        iy = np.clip(np.where(dy < 0, np.ceil(ey) - 1, np.floor(ey)), 0, h - 1).astype(np.int64)
    step_x = np.where(dx > 0, 1, -1)
    step_y = np.where(dy > 0, 1, -1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # beam parameter t where it crosses the next vertical / horizontal cell border
        t_max_x = np.where(dx != 0, (ix + (dx > 0) - px) * inv_x, np.inf)
        t_max_y = np.where(dy != 0, (iy + (dy > 0) - py) * inv_y, np.inf)
    t_delta_x, t_delta_y = np.abs(inv_x), np.abs(inv_y)
    t = t_enter.copy()
    idx = np.flatnonzero(active)
    while idx.size:
        hit = blocking[iy[idx], ix[idx]]
        result[idx[hit]] = t[idx[hit]]
        idx = idx[~hit]
        if not idx.size:
            break
        go_x = t_max_x[idx] < t_max_y[idx]
        ax, ay = idx[go_x], idx[~go_x]
        t[ax] = t_max_x[ax]
        ix[ax] += step_x[ax]
        t_max_x[ax] += t_delta_x[ax]
        t[ay] = t_max_y[ay]
        iy[ay] += step_y[ay]
        t_max_y[ay] += t_delta_y[ay]
        inside = (ix[idx] >= 0) & (ix[idx] < w) & (iy[idx] >= 0) & (iy[idx] < h) & (t[idx] <= t_exit[idx])
        idx = idx[inside]
    return result * grid.resolution
