"""Occupancy grids in Nav2's map format (map.yaml + image), read as nav2_map_server reads them.

The rules are those of nav2_map_server's ``map_io.cpp`` (``loadMapYaml``, ``loadMapFromFile``) in
the releases Jazzy and Kilted ship (1.3.8 and later, 1.4.x):

- a map path starting with ``~/`` is in the home folder ($HOME); the keys ``image`` (relative to
  the map file's folder unless it starts with ``/``: an image ``~/m.pgm`` is a folder named ``~``
  there), ``resolution`` [m/cell], ``origin`` [x, y, yaw] (exactly three numbers),
  ``free_thresh``, ``occupied_thresh`` and ``negate`` (an integer, else a boolean) are required;
  each value is read from its text as yaml-cpp reads it, quoted or not: a number as a C++ stream
  reads one (``5e-2``, ``"0"``; not YAML 1.1's ``0x10``, ``1_0`` or ``1:30``), a boolean as
  ``y``/``yes``/``true``/``on`` or ``n``/``no``/``false``/``off`` in lower, upper or title case;
  ``mode`` is optional (``trinary`` when absent; ``trinary``, ``scale`` or ``raw``, any letter case);
- the image is converted to 8-bit grey (colour by luma, as GraphicsMagick's grayscale
  conversion); in trinary and scale modes ``occ = 1 - grey/255`` (``occ = grey/255`` with
  ``negate``), in single precision: ``occ >= occupied_thresh`` is occupied (100), then
  ``occ <= free_thresh`` free (0), else unknown (-1) in trinary mode and, in scale mode,
  ``round((occ - free_thresh) / (occupied_thresh - free_thresh) * 100)``; a pixel whose alpha is
  below 255 is unknown (an alpha channel, or a PNG's transparent colour, tRNS, as GraphicsMagick
  reads it); in raw mode the grey value itself is the occupancy when it is at most
  100, else unknown (negate and alpha do not apply);
- image row 0 is the top of the picture and the largest y: the grid is the image flipped
  vertically, so cell (i, j) -- column i, row j counted from the bottom -- covers
  [i, i+1] x [j, j+1] * resolution in the map's own frame;
- ``origin`` is the pose of the lower-left corner of cell (0, 0) (nav_msgs/MapMetaData):
  map_server writes the yaw into ``info.origin.orientation``. Here the yaw rotates the grid about
  that corner, as the message defines. Nav2's costmap static layer and AMCL use only the
  origin's position and ignore its yaw, so a map with a non-zero yaw is a world Nav2 sees
  unrotated.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

FREE, OCCUPIED, UNKNOWN = 0, 100, -1
MODES = ("trinary", "scale", "raw")


class MapError(ValueError):
    """A map file that cannot be read; the message names the file, and the line where known."""


@dataclass(frozen=True)
class OccupancyGrid:
    """``data[j, i]``: occupancy of column i, row j from the bottom (nav_msgs/OccupancyGrid's
    row-major data reshaped to (height, width)); 0 free, 100 occupied, -1 unknown, scale-mode
    values in between. ``origin``: (x, y, yaw) of the lower-left corner of cell (0, 0)."""

    data: np.ndarray
    resolution: float
    origin: tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        data = np.asarray(self.data)
        if data.ndim != 2 or data.size == 0:
            raise ValueError(f"occupancy grid: data must be a non-empty 2-D array, got shape {data.shape}")
        if not (math.isfinite(self.resolution) and self.resolution > 0):
            raise ValueError(f"occupancy grid: resolution must be a positive number of metres, got {self.resolution}")
        if len(self.origin) != 3 or not all(math.isfinite(v) for v in self.origin):
            raise ValueError(f"occupancy grid: origin must be three finite numbers (x, y, yaw), got {self.origin}")
        object.__setattr__(self, "data", data.astype(np.int8, copy=False))
        object.__setattr__(self, "origin", tuple(float(v) for v in self.origin))

    @property
    def height(self) -> int:
        return self.data.shape[0]

    @property
    def width(self) -> int:
        return self.data.shape[1]

    def blocking(self, threshold: int = OCCUPIED, unknown_blocks: bool = False) -> np.ndarray:
        """Boolean (height, width): cells that stop a beam and touch the robot. ``threshold``
        is the occupancy from which a cell counts (100: Nav2's lethal_cost_threshold default)."""
        out = self.data >= threshold
        if unknown_blocks:
            out |= self.data == UNKNOWN
        return out

    def to_grid(self, xy) -> np.ndarray:
        """World points (..., 2) -> continuous grid coordinates in cells (column, row)."""
        ox, oy, yaw = self.origin
        c, s = math.cos(yaw), math.sin(yaw)
        p = np.asarray(xy, dtype=float) - (ox, oy)
        return np.stack([c * p[..., 0] + s * p[..., 1], -s * p[..., 0] + c * p[..., 1]], axis=-1) / self.resolution

    def cell_center(self, i, j) -> np.ndarray:
        """World position of the centre of cell (column i, row j)."""
        ox, oy, yaw = self.origin
        u, v = (np.asarray(i, float) + 0.5) * self.resolution, (np.asarray(j, float) + 0.5) * self.resolution
        c, s = math.cos(yaw), math.sin(yaw)
        return np.stack([ox + c * u - s * v, oy + s * u + c * v], axis=-1)


# -- the map YAML ----------------------------------------------------------------------------

def _key_lines(text: str) -> dict:
    """key -> 1-based line of its value in the top-level mapping (for error messages)."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v.start_mark.line + 1 for k, v in node.value if isinstance(k, yaml.ScalarNode)}


# yaml-cpp converts a scalar to a number by its text, as a C++ stream reads it (convert<T>:
# ``stream >> value``, then only white space may follow), whether YAML would call it a string or
# not: map_server reads ``resolution: 5e-2`` (a string to PyYAML's YAML 1.1 rules, which want a
# dot) and ``negate: "0"``. The forms a stream takes: a decimal float, and for an integer
# (the stream's base unset) decimal, octal (leading 0) or hex (0x)
_STREAM_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")
_STREAM_INT = re.compile(r"([+-]?)(?:0[xX]([0-9a-fA-F]+)|0([0-7]*)|([1-9]\d*))\s*")


def _number(text) -> float | None:
    """A number as map_server reads one (a float) from a scalar's text, or None."""
    return float(text) if isinstance(text, str) and _STREAM_FLOAT.fullmatch(text) else None


def _integer(text) -> int | None:
    """An integer as map_server reads one from a scalar's text, or None."""
    m = _STREAM_INT.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        return None
    sign, hex_digits, octal, decimal = m.groups()
    v = int(hex_digits, 16) if hex_digits else int(octal, 8) if octal else int(decimal or "0")
    return -v if sign == "-" else v


# yaml-cpp's convert<bool>: these words, all lower case, all upper case or capitalised
_BOOLEANS = {"y": True, "yes": True, "true": True, "on": True, "n": False, "no": False, "false": False, "off": False}


def _boolean(text) -> bool | None:
    if not isinstance(text, str) or text not in (text.lower(), text.upper(), text.capitalize()):
        return None
    return _BOOLEANS.get(text.lower())


def load_map(yaml_path) -> OccupancyGrid:
    """An OccupancyGrid from a Nav2 map YAML file (see the module docstring for the rules)."""
    name = os.fspath(yaml_path)
    home = os.environ.get("HOME", "")
    path = Path(home + name[1:] if name.startswith("~/") and home else name)  # map_server: ~/ alone
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MapError(f"{path}: cannot read the map file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise MapError(f"{path}: not a text file (UTF-8): byte {exc.start}") from None
    try:
        # every scalar as its text (BaseLoader): yaml-cpp converts the text, not YAML 1.1's types
        doc = yaml.load(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise MapError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(doc, dict):
        raise MapError(f"{path}: a map file is a mapping with image, resolution, origin, negate, occupied_thresh, "
                       f"free_thresh (and optionally mode)")
    lines = _key_lines(text)

    def fail(key, what):
        where = f"{path}:{lines[key]}" if key in lines else str(path)
        raise MapError(f"{where}: {key}: {what}")

    for key in ("image", "resolution", "origin", "free_thresh", "occupied_thresh", "negate"):
        if key not in doc:
            raise MapError(f"{path}: missing key {key!r} (nav2_map_server requires it)")
    image = doc["image"]
    if not isinstance(image, str) or not image:
        fail("image", f"must name the image file, got {image!r}")
    resolution = _number(doc["resolution"])
    if resolution is None or not (math.isfinite(resolution) and resolution > 0):
        fail("resolution", f"must be a positive number of metres per cell, got {doc['resolution']!r}")
    origin = doc["origin"]
    if not isinstance(origin, list) or len(origin) != 3:
        fail("origin", f"must be [x, y, yaw] with 3 elements, not {len(origin)}" if isinstance(origin, list)
             else f"must be a list [x, y, yaw], got {origin!r}")
    origin = [_number(v) for v in origin]
    if any(v is None or not math.isfinite(v) for v in origin):
        fail("origin", f"must be three numbers [x, y, yaw], got {doc['origin']!r}")
    thresholds = {}
    for key in ("free_thresh", "occupied_thresh"):
        value = _number(doc[key])
        if value is None or not math.isfinite(value):
            fail(key, f"must be a number, got {doc[key]!r}")
        thresholds[key] = value
    negate = _integer(doc["negate"])
    if negate is None:  # map_server: an integer, else a boolean
        negate = _boolean(doc["negate"])
    if negate is None:
        fail("negate", f"must be an integer or a boolean, got {doc['negate']!r}")
    mode = doc.get("mode", "trinary")
    if not isinstance(mode, str) or mode.lower() not in MODES:
        fail("mode", f"must be one of {', '.join(MODES)}, got {mode!r}")
    image_path = Path(image) if image.startswith("/") else path.parent / image
    try:
        grey, alpha = read_grey(image_path)
    except (OSError, ValueError) as exc:
        fail("image", f"cannot read {image_path}: {exc}")
    data = occupancy_from_pixels(grey, alpha, mode=mode.lower(), negate=bool(negate),
                                 occupied_thresh=thresholds["occupied_thresh"], free_thresh=thresholds["free_thresh"])
    return OccupancyGrid(data, resolution, tuple(float(v) for v in origin))


def read_grey(image_path) -> tuple[np.ndarray, np.ndarray | None]:
    """(grey uint8 (rows, cols), alpha uint8 or None): the picture as map_io sees it."""
    from PIL import Image

    try:
        img = Image.open(image_path)
    except Image.DecompressionBombError:  # (an Exception of its own, no OSError)
        # (Pillow's guard against decompression bombs: twice its MAX_IMAGE_PIXELS)
        raise ValueError(f"more pixels than the {2 * Image.MAX_IMAGE_PIXELS:,} a map image may have") from None
    with img:
        img.load()
        mode = img.mode
        if mode == "P" or (mode in ("L", "RGB") and "transparency" in img.info):
            # a palette, or a PNG's transparent grey level or colour (tRNS): alpha 0 where it is
            img = img.convert("RGBA" if "transparency" in img.info else "RGB")
            mode = img.mode
        if mode in ("I;16", "I;16B", "I;16L", "I"):
            # 16-bit grey (PGM with maxval > 255): to 8 bits as GraphicsMagick scales a quantum
            wide = np.asarray(img, dtype=np.int64)
            return ((wide + 128) // 257).clip(0, 255).astype(np.uint8), None
        has_alpha = "A" in img.getbands()
        alpha = np.asarray(img.getchannel("A"), dtype=np.uint8) if has_alpha else None
        grey = np.asarray(img.convert("L"), dtype=np.uint8)  # luma (ITU-R 601) for colour pictures
    return grey, alpha


def occupancy_from_pixels(grey, alpha=None, *, mode="trinary", negate=False, occupied_thresh=0.65,
                          free_thresh=0.25) -> np.ndarray:
    """int8 (rows from the bottom, cols): map_io's thresholding of an 8-bit grey picture (row 0 at
    the top) followed by its vertical flip."""
    grey = np.asarray(grey, dtype=np.uint8)
    if mode not in MODES:
        raise ValueError(f"map mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "raw":
        result = np.where(grey <= OCCUPIED, grey, UNKNOWN).astype(np.int8)
    else:
        # single precision, thresholds cast to float, as map_io's Eigen float matrices compare them
        occ = grey.astype(np.float32) / np.float32(255.0)
        if not negate:
            occ = np.float32(1.0) - occ
        occ_t, free_t = np.float32(occupied_thresh), np.float32(free_thresh)
        result = np.full(grey.shape, UNKNOWN, dtype=np.int8)
        result[occ >= occ_t] = OCCUPIED
        result[occ <= free_t] = FREE
        if mode == "scale":
            between = (occ > free_t) & (occ < occ_t)
            scaled = (occ - free_t) / (occ_t - free_t) * np.float32(100.0)
            # Eigen's round() is std::round: halves away from zero (numpy's rounds them to even)
            result[between] = np.floor(scaled[between] + np.float32(0.5)).astype(np.int8)
        if alpha is not None:
            result[np.asarray(alpha) < 255] = UNKNOWN
    return result[::-1].copy()
