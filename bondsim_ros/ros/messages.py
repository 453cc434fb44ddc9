"""The ROS messages of the dynamics node, built from plain values and read into them: stamps,
joint states, odometry and its transform, poses, diagnostics, and joint trajectories received.
"""
from __future__ import annotations

import math

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, TransformStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

from bondsim_ros.msgutil import stamp_ns  # noqa: F401 (messages.stamp_ns: the nodes read stamps here)
from bondsim_ros.twin.protocol import CommandError, JointTrajectory, some_names

LEVELS = {"OK": DiagnosticStatus.OK, "WARN": DiagnosticStatus.WARN, "ERROR": DiagnosticStatus.ERROR}
# planar odometry: z, roll and pitch are unknown
PLANAR_COVARIANCE = np.diag([1e-6, 1e-6, 1e6, 1e6, 1e6, 1e-6]).ravel().tolist()


def tf_message():
    """tf2_msgs/TFMessage: from the ROS install, or generated into the venv by tools/setup.sh."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError as exc:
        raise ImportError("tf2_msgs is missing: on a ROS install source it; in the pip environment run "
                          "tools/setup.sh, which generates it") from exc
    return TFMessage


def stamp_msg(ns: int):
    """builtin_interfaces/Time of ``ns`` nanoseconds."""
    from rclpy.time import Time

    return Time(nanoseconds=ns).to_msg()


def joint_state(stamp, names, position, velocity, effort=()) -> JointState:
    js = JointState()
    js.header.stamp = stamp
    js.name, js.position, js.velocity = list(names), list(position), list(velocity)
    js.effort = list(effort)
    return js


def _yaw(msg_orientation, yaw: float):
    msg_orientation.z, msg_orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)


def odometry(stamp, odom_frame: str, base_frame: str, pose, twist_body) -> Odometry:
    """A planar base's pose (x, y, yaw) in ``odom_frame`` and body twist (vx, vy, wz; None: at rest)."""
    odom = Odometry()
    odom.header.stamp = stamp
    odom.header.frame_id, odom.child_frame_id = odom_frame, base_frame
    odom.pose.pose.position.x, odom.pose.pose.position.y = pose[0], pose[1]
    _yaw(odom.pose.pose.orientation, pose[2])
    bvx, bvy, wz = twist_body or (0.0, 0.0, 0.0)
    odom.twist.twist.linear.x, odom.twist.twist.linear.y, odom.twist.twist.angular.z = bvx, bvy, wz
    odom.pose.covariance = PLANAR_COVARIANCE
    odom.twist.covariance = PLANAR_COVARIANCE
    return odom


def planar_transform(stamp, parent: str, child: str, pose) -> TransformStamped:
    tf = TransformStamped()
    tf.header.stamp = stamp
    tf.header.frame_id, tf.child_frame_id = parent, child
    tf.transform.translation.x, tf.transform.translation.y = pose[0], pose[1]
    _yaw(tf.transform.rotation, pose[2])
    return tf


def planar_pose(stamp, frame: str, pose) -> PoseStamped:
    msg = PoseStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y = float(pose[0]), float(pose[1])
    _yaw(msg.pose.orientation, pose[2])
    return msg


def diagnostic_array(records, stamp, prefix: str, hardware_id: str) -> DiagnosticArray:
    """The Twin protocol's Diagnostic records as one message, names prefixed (several robots)."""
    arr = DiagnosticArray()
    arr.header.stamp = stamp
    for d in records:
        st = DiagnosticStatus(level=LEVELS.get(d.level, DiagnosticStatus.WARN), name=prefix + d.name,
                              message=d.message, hardware_id=hardware_id)
        st.values = [KeyValue(key=str(k), value=str(v)) for k, v in d.values.items()]
        arr.status.append(st)
    return arr


def joint_trajectory(msg, twin, sim_time_of_stamp, now: float) -> JointTrajectory:
    """A trajectory_msgs/JointTrajectory for ``twin``, checked now (refused at the frame, it would
    count as a model failure); CommandError naming what is wrong, and where (the point, the
    joint): JointTrajectory.check's rules, effort fields, a joint the twin lacks or does not
    drive, a stamped trajectory whose last point is before ``now`` (simulated s). Point times are
    relative to the header stamp (a zero stamp: when applied), as joint_trajectory_controller
    reads them, which refuses the same."""
    names = list(msg.joint_names)
    n = len(names)
    if n == 0 or not msg.points:
        raise CommandError("trajectory without joint names or points")
    for i, pt in enumerate(msg.points):
        if len(pt.effort):
            raise CommandError(f"point #{i} has effort values: {twin.name} takes no effort commands")
    times = np.array([pt.time_from_start.sec + pt.time_from_start.nanosec * 1e-9 for pt in msg.points])
    pos = [np.asarray(pt.positions, dtype=float) for pt in msg.points]
    vel = [np.asarray(pt.velocities, dtype=float) for pt in msg.points]
    acc = [np.asarray(pt.accelerations, dtype=float) for pt in msg.points]
    ns = stamp_ns(msg.header.stamp)
    start = None if ns == 0 else sim_time_of_stamp(ns)
    traj = JointTrajectory(names, times, pos, vel, start, acc)
    traj.check()
    unknown = [j for j in names if j not in twin.joint_names]
    if unknown:
        raise CommandError(f"unknown joints {some_names(unknown)}")
    driven = twin.trajectory_joints
    not_driven = [j for j in names if j not in driven]
    if not_driven:
        raise CommandError(f"joints {some_names(not_driven)} are not driven by {twin.name}'s trajectory interface "
                           f"(driven: {driven})")
    if start is not None and start + times[-1] < now:
        raise CommandError(f"stamped {ns * 1e-9:.3f} s (simulated {start:.3f} s), it ends at simulated "
                           f"{start + times[-1]:.3f} s, before now ({now:.3f} s): nothing left to follow")
    return traj
