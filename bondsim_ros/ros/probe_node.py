"""probe_node: world coordinates of the mechanism's probe frames, published back to the model.

Replaces the paper's named pipe (Damic & Cohodar Husic, section 3.8): for each probe of the mechanism XML it
publishes geometry_msgs/PointStamped on /probes/NAME, stamped with the time of the joint
state it was computed from, so the receiver can compare at equal stamps (no one-frame lag).

Kinematics: with tf2 (a ROS install, robot_state_publisher running) each probe frame
``probe_NAME`` is looked up in the TF buffer at the joint state's stamp. Without tf2 (it is not
on PyPI) the base pose comes from /tf (odom -> base_footprint) at that stamp and the rest from
/joint_states and the kinematics of bondsim_ros.mechanism: the same chain
robot_state_publisher evaluates from the same XML.
"""
from __future__ import annotations

import collections

import numpy as np
from geometry_msgs.msg import PointStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState

from bondsim_ros.mechanism.probes import ProbeKinematics

from ._env import Param, declare_parameters, overrides_to_parameters, run_node
from .messages import tf_message

# The node's parameters (see dynamics_node.PARAMS): all apply at start.
PARAMS = {
    "mechanism": Param("", "mechanism XML (project or robot root); default: the default robot's"),
    "odom_frame": Param("odom", "frame the probe points are expressed in"),
    "base_frame": Param("base_footprint", "robot base frame (child of odom in /tf)"),
    "frame_prefix": Param("", "prefix of frame ids (several robots); joint names are the URDF's"),
    "use_tf2": Param("auto", "auto | true | false: look probe frames up with tf2 (auto: where tf2_ros is installed)",
                     choices=("auto", "true", "false")),
}
TF2_WAIT = 0.5  # s a joint state waits for its transforms in the tf2 buffer


def _default_mechanism():
    from bondsim_ros.robots import DEFAULT_ROBOT, load_robot

    return load_robot(DEFAULT_ROBOT).mechanism


class ProbeNode(Node):
    def __init__(self, name="probe_node", overrides: dict | None = None, **kwargs):
        super().__init__(name, parameter_overrides=overrides_to_parameters(PARAMS, overrides), **kwargs)
        p = declare_parameters(self, PARAMS)
        self.p = p
        try:
            self.kin = ProbeKinematics.from_file(p["mechanism"] or _default_mechanism())  # joint names: unprefixed
        except ValueError as exc:
            raise ValueError(f"invalid probe_node parameters: mechanism: {exc}") from None
        # a fixed-base mechanism (no planar base): probes in the URDF's root frame, no /tf wait
        self.mobile = bool(self.kin.unit.planar)
        self.odom_frame = p["frame_prefix"] + (p["odom_frame"] if self.mobile else self.kin.root)
        self.base_frame = p["frame_prefix"] + p["base_frame"]
        self.pubs = {name: self.create_publisher(PointStamped, f"probes/{name}", 10) for name in self.kin.probe_names}
        self.base_poses = collections.OrderedDict()  # stamp ns -> (x, y, phi)
        self.pending = collections.OrderedDict()  # joint states waiting for their base pose
        self.tf2 = None
        if p["use_tf2"] != "false":
            try:
                import tf2_ros
            except ImportError:
                if p["use_tf2"] == "true":
                    raise
            else:
                self.tf2 = tf2_ros.Buffer()
                self._tf2_listener = tf2_ros.TransformListener(self.tf2, self)
                self.create_timer(0.005, self._retry_tf2)
        if self.tf2 is None:
            self.create_subscription(tf_message(), "/tf", self._on_tf, 100)
        self.create_subscription(JointState, "joint_states", self._on_joints, 50)
        self.get_logger().info(f"probes: {', '.join(self.kin.probe_names) or 'none'}")

    def _on_tf(self, msg):
        for tf in msg.transforms:
            if tf.header.frame_id == self.odom_frame and tf.child_frame_id == self.base_frame:
                ns = tf.header.stamp.sec * 1_000_000_000 + tf.header.stamp.nanosec
                q = tf.transform.rotation
                phi = float(np.arctan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y ** 2 + q.z ** 2)))
                self.base_poses[ns] = (tf.transform.translation.x, tf.transform.translation.y, phi)
                while len(self.base_poses) > 500:
                    self.base_poses.popitem(last=False)
                js = self.pending.pop(ns, None)
                if js is not None:
                    self._publish(js, ns)

    def _on_joints(self, msg: JointState):
        ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if not self.mobile:
            joints = dict(zip(msg.name, msg.position))
            for name, xyz in self.kin.probe_points((0.0, 0.0, 0.0), joints).items():
                self._emit(name, msg.header.stamp, xyz)
            return
        if self.tf2 is not None:
            self.pending[ns] = msg
            self._retry_tf2()
            return
        if ns in self.base_poses:
            self._publish(msg, ns)
        else:  # TF for this stamp not here yet: wait for it (bounded)
            self.pending[ns] = msg
            while len(self.pending) > 100:
                self.pending.popitem(last=False)

    def _retry_tf2(self):
        """Publish every waiting joint state whose probe frames the tf2 buffer can now give."""
        from rclpy.duration import Duration
        from rclpy.time import Time

        now = self.get_clock().now()
        for ns in list(self.pending):
            js = self.pending[ns]
            stamp = Time.from_msg(js.header.stamp)
            frames = {name: self.p["frame_prefix"] + "probe_" + name for name in self.kin.probe_names}
            if all(self.tf2.can_transform(self.odom_frame, f, stamp) for f in frames.values()):
                for name, frame in frames.items():
                    tr = self.tf2.lookup_transform(self.odom_frame, frame, stamp).transform.translation
                    self._emit(name, js.header.stamp, (tr.x, tr.y, tr.z))
                del self.pending[ns]
            elif now - stamp > Duration(seconds=TF2_WAIT):
                self.get_logger().warning(f"no transform {self.odom_frame} -> probe frames at {ns} ns: dropped",
                                          throttle_duration_sec=2.0)
                del self.pending[ns]

    def _emit(self, name, stamp, xyz):
        out = PointStamped()
        out.header.stamp = stamp
        out.header.frame_id = self.odom_frame
        out.point.x, out.point.y, out.point.z = (float(v) for v in xyz)
        self.pubs[name].publish(out)

    def _publish(self, js: JointState, ns: int):
        joints = dict(zip(js.name, js.position))
        for name, xyz in self.kin.probe_points(self.base_poses[ns], joints).items():
            self._emit(name, js.header.stamp, xyz)


def main(args=None):
    run_node(ProbeNode, args)


if __name__ == "__main__":
    main()
