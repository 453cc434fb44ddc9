"""The Robotino's range sensors and bumper against an occupancy grid.

Poses are planar (x, y, yaw) in the map frame; a sensor's mounting pose is given in the robot's
base frame (base_link, whose planar pose is base_footprint's: the two differ only in height).

Sources of the numbers:

- Laser scanner, defaults of a SICK TiM571-2050101 (the scanner RoboCup Logistics teams mount
  on their Robotinos): SICK product data sheet TiM571-2050101 -- aperture angle 270 deg, angular
  resolution 0.33 deg, scanning frequency 15 Hz, operating range 0.05 m to 25 m, statistical
  error 20 mm (taken as the 1-sigma of the Gaussian range noise). SICK's Technical Information
  TiM55x/56x/57x (8015883/YZK8, 2016-07-07), "Measured value output", agrees on the scan
  geometry: 15 Hz, three measurements per degree on a TiM57x (16.2 kHz spot frequency = 15 Hz x
  3 x 360), start angle from -45 deg (270 deg of the 360 swept).
  All beams of a scan are cast from the pose at the scan's stamp (no motion within a scan), so
  ``time_increment`` is 0: a consumer that undistorts a moving scanner's scan interpolates the
  pose over it (sensor_msgs/LaserScan) and would bend a scan taken at one instant.
- IR distance sensors, as robocup-logistics/ros2-robotino publishes them
  (rto_node/src/DistanceSensorArrayROS.cpp): nine sensors, sensor i looking radially outwards at
  40 deg * i from the robot's x axis; the driver reports each distance plus the body radius
  (its 0.225 m, the Robotino 3's) as the range from the robot's centre. The sensors are Sharp
  GP2D120 (Festo's Robotino data; rto_description's mesh is the GP2Y0A41SK0F, same range):
  measuring range 4 cm to 30 cm (Sharp GP2D120 data sheet). An analog IR sensor has no "no
  return": nothing within 30 cm reads as 30 cm, and below 4 cm as 4 cm (the output curve's
  ends), so the reading is the distance clipped to [0.04, 0.30] m.
- Bumper: the Robotino's bumper ring runs round the whole base (diameter 370 mm of this twin's
  chassis), so it is in contact when the footprint circle of radius 0.185 m overlaps a blocking
  cell.

Noise: Gaussian, zero mean, standard deviation ``sigma`` [m], added to beams that hit, from a
``numpy.random.Generator`` seeded once (``seed``), so a run is reproducible. A beam that hits
nothing within its maximum range returns that maximum range (or ``inf``, REP 117's "no return",
with ``no_return="inf"``); a noisy reading is clipped to [range_min, range_max], and a wall nearer
than range_min (the scanner inside an obstacle) reads ``-inf``, REP 117's "too close".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bondsim_ros.planar import compose

from .occupancy import OccupancyGrid
from .raycast import cast


@dataclass
class World:
    """An occupancy grid with the rule for which cells are solid (``OccupancyGrid.blocking``)."""

    grid: OccupancyGrid
    threshold: int = 100
    unknown_blocks: bool = False
    blocking: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        self.blocking = self.grid.blocking(self.threshold, self.unknown_blocks)

    def ranges(self, origins, angles, max_range) -> np.ndarray:
        return cast(self.grid, self.blocking, origins, angles, max_range)


def check_pose(pose) -> tuple:
    """``pose`` (x, y, yaw) as floats; ValueError when one is not finite (a diverged twin's
    odometry: a reading from it would be one of free space, or an overflow)."""
    x, y, yaw = (float(v) for v in pose)
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(yaw)):
        raise ValueError(f"sensor pose must be finite, got ({x}, {y}, {yaw})")
    return x, y, yaw


def _noisy(hits: np.ndarray, sigma: float, rng) -> np.ndarray:
    if sigma <= 0:
        return hits
    out = hits + rng.normal(0.0, sigma, hits.shape)
    return np.maximum(out, 0.0)


# beams per scan: a real scanner has a few thousand (Hokuyo UTM-30LX: 1,081); a tiny increment
# otherwise asked for billions, and the first scan's angle array ran out of memory
MAX_BEAMS = 100_000


@dataclass
class LaserScanner:
    """A 2-D laser scanner: the sensor_msgs/LaserScan fields and the mounting pose."""

    angle_min: float = math.radians(-135.0)
    angle_max: float = math.radians(135.0)
    angle_increment: float = math.radians(1.0 / 3.0)
    range_min: float = 0.05
    range_max: float = 25.0
    rate: float = 15.0  # scans per second
    mount: tuple = (0.12, 0.0, 0.0)  # x, y, yaw in base_link
    sigma: float = 0.02
    seed: int = 0
    no_return: str = "range_max"  # or "inf"

    def __post_init__(self):
        for name in ("angle_min", "angle_max", "angle_increment", "range_min", "range_max", "rate", "sigma"):
            setattr(self, name, float(getattr(self, name)))  # (integer limits made integer range arrays)
        for name in ("angle_increment", "range_max", "rate"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"laser scanner: {name} must be positive, got {v}")
        if not (math.isfinite(self.angle_min) and math.isfinite(self.angle_max) and self.angle_max >= self.angle_min):
            raise ValueError(f"laser scanner: angle_max ({self.angle_max}) must be >= angle_min ({self.angle_min})")
        if not (self.angle_max - self.angle_min) / self.angle_increment < MAX_BEAMS:  # (1e-310: inf beams)
            beams = (self.angle_max - self.angle_min) / self.angle_increment + 1
            raise ValueError(f"laser scanner: angle_increment {self.angle_increment:g} makes {beams:.3g} beams from "
                             f"angle_min to angle_max; at most {MAX_BEAMS}")
        if not (0 <= self.range_min < self.range_max):
            raise ValueError(f"laser scanner: need 0 <= range_min < range_max, got {self.range_min}, {self.range_max}")
        if not (math.isfinite(self.sigma) and self.sigma >= 0):
            raise ValueError(f"laser scanner: sigma must be >= 0, got {self.sigma}")
        if self.no_return not in ("range_max", "inf"):
            raise ValueError(f"laser scanner: no_return must be range_max or inf, got {self.no_return!r}")
        self.rng = np.random.default_rng(self.seed)

    @property
    def count(self) -> int:
        """Beams per scan: angle_min + k * angle_increment for k = 0 .. count-1 (as far as angle_max)."""
        return int(math.floor((self.angle_max - self.angle_min) / self.angle_increment + 1e-9)) + 1

    @property
    def angles(self) -> np.ndarray:
        return self.angle_min + self.angle_increment * np.arange(self.count)

    @property
    def scan_time(self) -> float:
        return 1.0 / self.rate

    @property
    def time_increment(self) -> float:
        return 0.0  # the beams are cast at one instant (module docstring)

    def scan(self, world: World, pose) -> np.ndarray:
        """float32 ranges for the robot at ``pose`` (x, y, yaw in the map)."""
        x, y, yaw = compose(check_pose(pose), self.mount)
        hits = world.ranges((x, y), yaw + self.angles, self.range_max)
        found = np.isfinite(hits)
        out = np.full(hits.shape, self.range_max if self.no_return == "range_max" else np.inf)
        # a reading stays a measurement, in [range_min, range_max] (LaserScan: values outside are
        # discarded) whatever the noise; a wall nearer than range_min is REP 117's -inf, "too close"
        out[found] = np.clip(_noisy(hits[found], self.sigma, self.rng), self.range_min, self.range_max)
        out[found & (hits < self.range_min)] = -np.inf
        return out.astype(np.float32)


@dataclass
class IRSensorRing:
    """The nine IR distance sensors round the base."""

    count: int = 9
    spacing: float = math.radians(40.0)
    radius: float = 0.185  # where the sensors sit: the chassis' edge (370 mm diameter)
    min_distance: float = 0.04
    max_distance: float = 0.30
    sigma: float = 0.0
    seed: int = 0

    def __post_init__(self):
        for name in ("spacing", "radius", "min_distance", "max_distance", "sigma"):
            setattr(self, name, float(getattr(self, name)))
        if not (0 <= self.min_distance < self.max_distance):
            raise ValueError(f"IR sensors: need 0 <= min_distance < max_distance, got {self.min_distance}, "
                             f"{self.max_distance}")
        if not (math.isfinite(self.radius) and self.radius >= 0):
            raise ValueError(f"IR sensors: radius must be >= 0, got {self.radius}")
        if not (math.isfinite(self.sigma) and self.sigma >= 0):
            raise ValueError(f"IR sensors: sigma must be >= 0, got {self.sigma}")
        self.rng = np.random.default_rng(self.seed)

    @property
    def headings(self) -> np.ndarray:
        """Each sensor's direction in the base frame (also its position's bearing)."""
        return self.spacing * np.arange(self.count)

    def distances(self, world: World, pose) -> np.ndarray:
        """Each sensor's reading [m], from the sensor's face: clipped to [min, max] distance."""
        x, y, yaw = check_pose(pose)
        a = yaw + self.headings
        origins = np.stack([x + self.radius * np.cos(a), y + self.radius * np.sin(a)], axis=-1)
        hits = world.ranges(origins, a, self.max_distance)
        found = np.isfinite(hits)
        out = np.full(hits.shape, self.max_distance)
        out[found] = _noisy(hits[found], self.sigma, self.rng)
        return np.clip(out, self.min_distance, self.max_distance)


@dataclass
class Bumper:
    """Contact when the footprint circle overlaps a blocking cell."""

    radius: float = 0.185

    def contact(self, world: World, pose) -> bool:
        grid = world.grid
        c = grid.to_grid(np.array(check_pose(pose)[:2]))  # centre in cells (rotation keeps circles)
        r = self.radius / grid.resolution
        h, w = world.blocking.shape
        i0, i1 = max(int(math.floor(c[0] - r)), 0), min(int(math.floor(c[0] + r)), w - 1)
        j0, j1 = max(int(math.floor(c[1] - r)), 0), min(int(math.floor(c[1] + r)), h - 1)
        if i0 > i1 or j0 > j1:
            return False
        jj, ii = np.nonzero(world.blocking[j0:j1 + 1, i0:i1 + 1])
        if not ii.size:
            return False
        ii, jj = ii + i0, jj + j0
        # nearest point of each cell square [i, i+1] x [j, j+1] to the centre
        nx = np.clip(c[0], ii, ii + 1)
        ny = np.clip(c[1], jj, jj + 1)
        return bool(np.any((nx - c[0]) ** 2 + (ny - c[1]) ** 2 < r * r))
