"""Record ROS 2 topics to a rosbag2 MCAP bag from inside an rclpy process.

``ros2 bag record -s mcap`` does this on a ROS install; in the pip environment rosbag2 is not
available, so the demo records with this node. Messages arrive serialized (``raw=True``) and
are written unchanged, so the bag holds exactly the CDR bytes that went over the wire. The
rosbag2 layout (``metadata.yaml`` + ``NAME_0.mcap``, ros2msg schemas, offered QoS) comes from
the ``rosbags`` library, and ``ros2 bag info``, ``ros2 bag play`` and Foxglove open the result.
"""
from __future__ import annotations

import fnmatch
import importlib
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy


def message_class(type_name: str):
    """``pkg/msg/Type`` -> the generated Python class."""
    pkg, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


def _rosbags_qos(durability_transient: bool, reliable: bool):
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    zero = QosTime(0, 0)
    return Qos(QosHistory.KEEP_LAST, 1 if durability_transient else 10,
               QosReliability.RELIABLE if reliable else QosReliability.BEST_EFFORT,
               QosDurability.TRANSIENT_LOCAL if durability_transient else QosDurability.VOLATILE,
               zero, zero, QosLiveliness.AUTOMATIC, zero, False)


class BagRecorder(Node):
    """Subscribe to every topic matching ``patterns`` (fnmatch, e.g. ``/probes/*``) as it appears
    and append its messages to a rosbag2 MCAP bag at ``path`` (a folder that must not exist)."""

    def __init__(self, path, patterns, name="bag_recorder", discovery_period=0.25, **kwargs):
        super().__init__(name, **kwargs)
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore

        self.path = Path(path)
        self.patterns = list(patterns)
        self.typestore = get_typestore(Stores.ROS2_KILTED)
        self.writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.connections = {}  # topic -> rosbags connection
        self.counts = {}  # topic -> messages written
        self._subs = []
        self.closed = False
        self._discover()
        self.create_timer(discovery_period, self._discover)

    def _discover(self):
        for topic, types in self.get_topic_names_and_types():
            if topic in self.connections or not any(fnmatch.fnmatch(topic, p) for p in self.patterns):
                continue
            type_name = types[0]
            infos = self.get_publishers_info_by_topic(topic)
            if not infos:
                continue
            # like ros2 bag: latch if the publishers latch, so /tf_static and /robot_description arrive
            transient = all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
            reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
            # depth 100 for latched topics too: a keyless topic is one DDS instance, so a depth-1
            # reader keeps only the last of the latched samples that several publishers (the
            # robot's and the sensors' /tf_static) hand it at once, and the others never reach the bag
            qos = QoSProfile(depth=100,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL if transient else DurabilityPolicy.VOLATILE,
                             reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT)
            self.connections[topic] = self.writer.add_connection(
                topic, type_name, typestore=self.typestore,
                offered_qos_profiles=[_rosbags_qos(transient, reliable)])
            self.counts[topic] = 0
            self._subs.append(self.create_subscription(
                message_class(type_name), topic, lambda data, t=topic: self._on_message(t, data), qos, raw=True))
            self.get_logger().info(f"recording {topic} [{type_name}]")

    def _on_message(self, topic, data: bytes):
        if self.closed:
            return
        self.writer.write(self.connections[topic], self.get_clock().now().nanoseconds, data)
        self.counts[topic] += 1

    def close(self):
        """Finish the bag (writes metadata.yaml); further messages are dropped."""
        if not self.closed:
            self.closed = True
            self.writer.close()


def read_bag(path, topics=None):
    """{topic: [(log_time_ns, message)]} from a rosbag2 bag, decoded with rosbags' own CDR reader
    (independent of rclpy, so a test of the recorder does not trust the recorder's stack)."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    out = {}
    with Reader(Path(path)) as reader:
        conns = [c for c in reader.connections if topics is None or c.topic in topics]
        for conn, stamp, raw in reader.messages(connections=conns):
            out.setdefault(conn.topic, []).append((stamp, store.deserialize_cdr(raw, conn.msgtype)))
    return out


__all__ = ["BagRecorder", "read_bag", "message_class"]
