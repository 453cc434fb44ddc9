"""probe_node: world coordinates of the mechanism's probe frames, published back to the model.

Replaces the paper's named pipe (seed 000, section 3.8): for each probe of the mechanism XML it
publishes geometry_msgs/PointStamped on /probes/NAME, stamped with the time of the joint
state it was computed from, so the receiver can compare at equal stamps (no one-frame lag).

Kinematics: the base pose from /tf (odom -> base_footprint) at the joint state's stamp, the
rest from /joint_states and the URDF kinematics of bondsim_ros.mechanism. That works with or
without tf2 (tf2 is not on PyPI); on a ROS install robot_state_publisher computes the same.
"""
from __future__ import annotations

import collections

import numpy as np
import rclpy
from geometry_msgs.msg import PointStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from sensor_msgs.msg import JointState

from bondsim_ros.mechanism.probes import ProbeKinematics

from ._env import ensure_local_discovery
from .dynamics_node import overrides_to_parameters, tf_message

PARAMS = {
    "mechanism": ("", "mechanism XML (project or robot root); default: the packaged Robotino"),
    "odom_frame": ("odom", "frame the probe points are expressed in"),
    "base_frame": ("base_footprint", "robot base frame (child of odom in /tf)"),
    "frame_prefix": ("", "prefix of joint names and frames (several robots)"),
}


class ProbeNode(Node):
    def __init__(self, name="probe_node", overrides: dict | None = None, **kwargs):
        super().__init__(name, parameter_overrides=overrides_to_parameters(PARAMS, overrides), **kwargs)
        for key, (default, desc) in PARAMS.items():
            self.declare_parameter(key, default, ParameterDescriptor(description=desc))
        p = {k: self.get_parameter(k).value for k in PARAMS}
        self.p = p
        self.kin = ProbeKinematics.from_file(p["mechanism"] or None, prefix=p["frame_prefix"])
        self.odom_frame = p["frame_prefix"] + p["odom_frame"]
        self.base_frame = p["frame_prefix"] + p["base_frame"]
        self.pubs = {name: self.create_publisher(PointStamped, f"probes/{name}", 10) for name in self.kin.probe_names}
        self.base_poses = collections.OrderedDict()  # stamp ns -> (x, y, phi)
        self.pending = collections.OrderedDict()  # joint states waiting for their base pose
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
        if ns in self.base_poses:
            self._publish(msg, ns)
        else:  # TF for this stamp not here yet: wait for it (bounded)
            self.pending[ns] = msg
            while len(self.pending) > 100:
                self.pending.popitem(last=False)

    def _publish(self, js: JointState, ns: int):
        joints = dict(zip(js.name, js.position))
        points = self.kin.probe_points(self.base_poses[ns], joints)
        for name, xyz in points.items():
            out = PointStamped()
            out.header.stamp = js.header.stamp
            out.header.frame_id = self.odom_frame
            out.point.x, out.point.y, out.point.z = (float(v) for v in xyz)
            self.pubs[name].publish(out)


def main(args=None):
    ensure_local_discovery()
    rclpy.init(args=args)
    node = ProbeNode()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
