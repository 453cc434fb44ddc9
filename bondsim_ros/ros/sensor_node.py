"""sensor_node: the twin's laser scanner, IR distance sensors and bumper, simulated against a map.

Takes the robot's pose from the twin (nav_msgs/Odometry on ``odom``, or odom -> base_footprint on
/tf; under an interface profile, whose odometry may be reset, the twin's ``~/ground_truth``),
places it in the map (``map_to_odom``: the pose in the map of the frame that pose is given in;
nav2.launch.py publishes map -> odom as the identity) and publishes, stamped with the pose's
stamp:

- ``scan`` (sensor_msgs/LaserScan, frame ``laser_link``), at ``scan_rate`` of simulated time;
- ``irsensor_scan`` (LaserScan, frame ``irscan_link``) and ``irsensor_pcl`` (sensor_msgs/PointCloud,
  frame ``irpcl_link``) as robocup-logistics/ros2-robotino's rto_node publishes its nine IR sensors;
- ``bumper`` (std_msgs/Bool) as rto_node does: on every change, and with the IR sensors;
- the static transforms base_link -> laser_link, irscan_link, irpcl_link on /tf_static (the
  twin's URDF has no sensor frames); the IR frames 0.05 m up, where the driver's
  robotino_tfbroadcaster.launch.py puts them.

The geometry and noise are bondsim_ros.sensors' (ROS-free); this node only moves messages.
"""
from __future__ import annotations

import math

from geometry_msgs.msg import Point32, TransformStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import LaserScan, PointCloud
from std_msgs.msg import Bool

from bondsim_ros.msgutil import stamp_ns, yaw
from bondsim_ros.paths import share_file
from bondsim_ros.sensors import Bumper, IRSensorRing, LaserScanner, MapError, World, compose, load_map

from ._env import Param, declare_parameters, overrides_to_parameters, run_node
from .messages import tf_message

# rto_node's IR LaserScan fields (DistanceSensorArrayROS.cpp), kept as the driver sends them
IR_SCAN_TIME, IR_RANGE_MIN, IR_RANGE_MAX, IR_POINT_Z = 0.1, 0.05, 0.65, 0.05

PARAMS = {
    "map": Param("",
                 "Nav2 map YAML (map.yaml + image) of the world the sensors see; empty: config/maps/rcll_arena.yaml"),
    "map_to_odom": Param([0.0, 0.0, 0.0], "pose in the map of the frame the pose comes in (odom; the twin's world "
                                          "for its ~/ground_truth) (x, y, yaw) [m, rad]"),
    "occupied_threshold": Param(100, "occupancy (0..100) from which a map cell stops beams and the bumper",
                                low=0, high=100),
    "unknown_is_occupied": Param(False, "unknown map cells (-1) stop beams and the bumper"),
    "pose_source": Param("odom", "odom (nav_msgs/Odometry on pose_topic) | tf (odom_frame -> base_frame on /tf)",
                         choices=("odom", "tf")),
    "pose_topic": Param("odom", "the twin's odometry topic (pose_source odom); under an interface profile "
                                "NODE/ground_truth, which an odometry reset does not move"),
    "odom_frame": Param("odom", "odometry frame id (pose_source tf)"),
    "base_frame": Param("base_footprint", "robot base frame id (pose_source tf)"),
    "frame_prefix": Param("", "prefix of every frame id (several robots), as dynamics_node's"),
    "sensor_parent_frame": Param("base_link", "frame the sensor frames hang from (same planar pose as base_footprint)"),
    # laser scanner: SICK TiM571 defaults (bondsim_ros/sensors/models.py cites the data sheet)
    "scan_topic": Param("scan", "LaserScan topic"),
    "laser_frame": Param("laser_link", "LaserScan frame id"),
    "laser_pose": Param([0.12, 0.0, 0.25, 0.0], "scanner pose in sensor_parent_frame: x, y, z, yaw [m, rad]"),
    "angle_min": Param(math.radians(-135.0), "first beam [rad]"),
    "angle_max": Param(math.radians(135.0), "last beam [rad]"),
    "angle_increment": Param(math.radians(1.0 / 3.0), "angle between beams [rad]"),
    "range_min": Param(0.05, "minimum range [m]", low=0.0, high=1000.0),
    "range_max": Param(25.0, "maximum range [m]; a beam that hits nothing within it returns it (or inf)",
                       low=0.0, high=1000.0),
    "scan_rate": Param(15.0, "scans per second of simulated time", low=0.01, high=1000.0),
    "range_sigma": Param(0.02, "standard deviation of the Gaussian range noise [m] (0: exact)", low=0.0, high=10.0),
    "no_return": Param("range_max", "what a beam without a hit returns: range_max | inf (REP 117)",
                       choices=("range_max", "inf")),
    "seed": Param(0, "seed of the noise generator (a run is reproducible)"),
    "scan_qos": Param("sensor_data", "sensor_data (best effort, as Nav2's costmaps subscribe) | reliable (depth 10)",
                      choices=("sensor_data", "reliable")),
    # the IR sensors and bumper, as rto_node publishes them
    "ir_scan_topic": Param("irsensor_scan", "IR sensors as LaserScan (rto_node's topic)"),
    "ir_pcl_topic": Param("irsensor_pcl", "IR sensors as PointCloud (rto_node's topic)"),
    "ir_scan_frame": Param("irscan_link", "frame of the IR LaserScan (rto_node's)"),
    "ir_pcl_frame": Param("irpcl_link", "frame of the IR PointCloud (rto_node's)"),
    "ir_frame_z": Param(0.05, "height of irscan_link and irpcl_link above sensor_parent_frame [m] (the driver's "
                              "robotino_tfbroadcaster.launch.py: 0.05)", low=-10.0, high=10.0),
    "ir_radius": Param(0.185, "radius of the circle the IR sensors sit on [m] (the chassis' edge)",
                       low=0.0, high=100.0),
    "ir_rate": Param(10.0, "IR readings per second of simulated time (rto_node's scan_time 0.1 s)",
                     low=0.01, high=1000.0),
    "ir_sigma": Param(0.0, "standard deviation of the IR distance noise [m]", low=0.0, high=10.0),
    "bumper_topic": Param("bumper", "std_msgs/Bool contact (rto_node's topic)"),
    "footprint_radius": Param(0.185, "radius of the bumper ring [m] (370 mm diameter)", low=0.001, high=100.0),
}


class SensorNode(Node):
    def __init__(self, name="sensor_node", overrides: dict | None = None, **kwargs):
        super().__init__(name, parameter_overrides=overrides_to_parameters(PARAMS, overrides), **kwargs)
        p = declare_parameters(self, PARAMS)
        self.p = p
        bad = []
        if p["pose_source"] not in ("odom", "tf"):
            bad.append(f"pose_source: odom | tf, got {p['pose_source']!r}")
        if p["scan_qos"] not in ("sensor_data", "reliable"):
            bad.append(f"scan_qos: sensor_data | reliable, got {p['scan_qos']!r}")
        if len(p["map_to_odom"]) != 3:
            bad.append(f"map_to_odom: x, y, yaw, got {list(p['map_to_odom'])}")
        if len(p["laser_pose"]) != 4:
            bad.append(f"laser_pose: x, y, z, yaw, got {list(p['laser_pose'])}")
        if p["seed"] < 0:  # numpy's generators take none
            bad.append(f"seed: must be >= 0, got {p['seed']}")
        for key in ("ir_rate", "footprint_radius"):
            if not (math.isfinite(p[key]) and p[key] > 0):
                bad.append(f"{key}: must be positive, got {p[key]}")
        try:
            lx, ly, _, lyaw = (list(p["laser_pose"]) + [0.0] * 4)[:4]
            self.laser = LaserScanner(angle_min=p["angle_min"], angle_max=p["angle_max"],
                                      angle_increment=p["angle_increment"], range_min=p["range_min"],
                                      range_max=p["range_max"], rate=p["scan_rate"], mount=(lx, ly, lyaw),
                                      sigma=p["range_sigma"], seed=p["seed"], no_return=p["no_return"])
            self.ir = IRSensorRing(radius=p["ir_radius"], sigma=p["ir_sigma"], seed=max(p["seed"], 0) + 1)
        except ValueError as exc:
            bad.append(str(exc))
        if bad:
            raise ValueError("invalid sensor_node parameters: " + "; ".join(bad))
        map_path = p["map"] or str(share_file("config", "maps", "rcll_arena.yaml"))
        try:
            grid = load_map(map_path)
        except ValueError as exc:  # MapError: file, line and key
            raise MapError(f"invalid sensor_node parameters: map: {exc}") from None
        self.world = World(grid, threshold=p["occupied_threshold"], unknown_blocks=p["unknown_is_occupied"])
        self.bumper = Bumper(radius=p["footprint_radius"])
        pre = p["frame_prefix"]
        self.frames = {k: pre + p[k] for k in ("laser_frame", "ir_scan_frame", "ir_pcl_frame", "sensor_parent_frame",
                                               "odom_frame", "base_frame")}
        scan_qos = qos_profile_sensor_data if p["scan_qos"] == "sensor_data" else 10
        self.pub_scan = self.create_publisher(LaserScan, p["scan_topic"], scan_qos)
        self.pub_ir_scan = self.create_publisher(LaserScan, p["ir_scan_topic"], 10)
        self.pub_ir_pcl = self.create_publisher(PointCloud, p["ir_pcl_topic"], 10)
        self.pub_bumper = self.create_publisher(Bool, p["bumper_topic"], 10)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
        self.pub_static = self.create_publisher(tf_message(), "/tf_static", latched)
        self._publish_static()
        self.next_scan_ns = None
        self.next_ir_ns = None
        self.contact = None
        self.scans = 0
        if p["pose_source"] == "odom":
            self.create_subscription(Odometry, p["pose_topic"], self._on_odom, 50)
        else:
            self.create_subscription(tf_message(), "/tf", self._on_tf, 100)
        self.get_logger().info(f"sensors on {map_path}: {self.world.grid.width} x {self.world.grid.height} cells of "
                               f"{self.world.grid.resolution} m; scan {self.laser.count} beams at "
                               f"{self.laser.rate} Hz, pose from {p['pose_source']}")

    def _publish_static(self):
        msg = tf_message()()
        x, y, z, yaw = self.p["laser_pose"]
        for child, (tx, ty, tz, tyaw) in ((self.frames["laser_frame"], (x, y, z, yaw)),
                                          (self.frames["ir_scan_frame"], (0.0, 0.0, self.p["ir_frame_z"], 0.0)),
                                          (self.frames["ir_pcl_frame"], (0.0, 0.0, self.p["ir_frame_z"], 0.0))):
            tf = TransformStamped()
            tf.header.stamp = self.get_clock().now().to_msg()
            tf.header.frame_id = self.frames["sensor_parent_frame"]
            tf.child_frame_id = child
            tf.transform.translation.x, tf.transform.translation.y, tf.transform.translation.z = tx, ty, tz
            tf.transform.rotation.z, tf.transform.rotation.w = math.sin(tyaw / 2), math.cos(tyaw / 2)
            msg.transforms.append(tf)
        self.pub_static.publish(msg)

    def _on_odom(self, msg: Odometry):
        pose = msg.pose.pose
        self.sense(msg.header.stamp, (pose.position.x, pose.position.y, yaw(pose.orientation)))

    def _on_tf(self, msg):
        for tf in msg.transforms:
            if tf.header.frame_id == self.frames["odom_frame"] and tf.child_frame_id == self.frames["base_frame"]:
                t = tf.transform
                self.sense(tf.header.stamp, (t.translation.x, t.translation.y, yaw(t.rotation)))

    @staticmethod
    def _due(ns: int, next_ns: int | None, period: int) -> tuple[bool, int | None]:
        """(due now, next due instant): on a fixed grid of ``period`` so that the mean rate is
        the set one whatever the pose rate (each reading takes the first pose at or after its
        instant); a pose more than a period late or a stamp that goes back (a reset) restarts
        the grid at this pose."""
        if next_ns is None or ns >= next_ns + period or ns < next_ns - 2 * period:
            return True, ns + period
        if ns >= next_ns:
            return True, next_ns + period
        return False, next_ns

    def sense(self, stamp, odom_pose):
        """Everything due at this pose: the bumper always, a scan and the IR sensors at their
        rates of the stamps' (simulated) time."""
        ns = stamp_ns(stamp)
        pose = compose(tuple(self.p["map_to_odom"]), odom_pose)
        if not all(math.isfinite(v) for v in pose):  # a diverged twin: no reading rather than free space
            self.get_logger().warning(f"pose ({odom_pose[0]}, {odom_pose[1]}, {odom_pose[2]}) is not finite: "
                                      f"no sensor reading", throttle_duration_sec=5.0)
            return
        contact = self.bumper.contact(self.world, pose)
        ir_due, self.next_ir_ns = self._due(ns, self.next_ir_ns, int(1e9 / self.p["ir_rate"]))
        if contact != self.contact or ir_due:
            self.pub_bumper.publish(Bool(data=contact))
            self.contact = contact
        if ir_due:
            self._publish_ir(stamp, pose)
        scan_due, self.next_scan_ns = self._due(ns, self.next_scan_ns, int(1e9 / self.laser.rate))
        if scan_due:
            self._publish_scan(stamp, pose)

    def _publish_scan(self, stamp, pose):
        scan = LaserScan()
        scan.header.stamp = stamp
        scan.header.frame_id = self.frames["laser_frame"]
        laser = self.laser
        scan.angle_min, scan.angle_max = laser.angle_min, float(laser.angles[-1])
        scan.angle_increment = laser.angle_increment
        scan.time_increment, scan.scan_time = laser.time_increment, laser.scan_time
        scan.range_min, scan.range_max = laser.range_min, laser.range_max
        scan.ranges = laser.scan(self.world, pose).tolist()
        self.pub_scan.publish(scan)
        self.scans += 1

    def _publish_ir(self, stamp, pose):
        r = self.ir.distances(self.world, pose) + self.ir.radius  # from the robot's centre, as rto_node
        scan = LaserScan()
        scan.header.stamp = stamp
        scan.header.frame_id = self.frames["ir_scan_frame"]
        scan.angle_min, scan.angle_max, scan.angle_increment = 0.0, 2 * math.pi, self.ir.spacing
        scan.scan_time, scan.range_min, scan.range_max = IR_SCAN_TIME, IR_RANGE_MIN, IR_RANGE_MAX
        scan.ranges = [float(v) for v in r]
        self.pub_ir_scan.publish(scan)
        cloud = PointCloud()
        cloud.header.stamp = stamp
        cloud.header.frame_id = self.frames["ir_pcl_frame"]
        cloud.points = [Point32(x=float(d * math.cos(a)), y=float(d * math.sin(a)), z=IR_POINT_Z)
                        for d, a in zip(r, self.ir.headings)]
        self.pub_ir_pcl.publish(cloud)


def main(args=None):
    run_node(SensorNode, args)


if __name__ == "__main__":
    main()
