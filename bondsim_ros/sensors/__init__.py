"""Simulated range sensors and bumper of a mobile base against a map (no ROS).

``occupancy``: Nav2 map files (map.yaml + image) read as nav2_map_server reads them;
``raycast``: exact grid traversal for all beams at once; ``models``: the laser scanner, the
Robotino's nine IR distance sensors and its bumper. The ROS node is ``bondsim_ros.ros.sensor_node``.
"""
from bondsim_ros.planar import compose

from .models import Bumper, IRSensorRing, LaserScanner, World
from .occupancy import FREE, OCCUPIED, UNKNOWN, MapError, OccupancyGrid, load_map, occupancy_from_pixels
from .raycast import cast

__all__ = ["Bumper", "IRSensorRing", "LaserScanner", "World", "compose", "FREE", "OCCUPIED", "UNKNOWN", "MapError",
           "OccupancyGrid", "load_map", "occupancy_from_pixels", "cast"]
