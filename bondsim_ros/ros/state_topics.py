"""The dynamics node's state topics: /joint_states, /clock, /odom and odom -> base on /tf (a
mobile base; under an interface profile also ~/ground_truth), motor_states, reference_pose, the
model's Float64 outputs, ~/frame_cost and /diagnostics; each frame's messages stamped as the
node says.
"""
from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from bondsim_ros.twin.placement import OdometryOrigin

from . import messages

# the topics the node publishes or takes itself, as documented (a model's own topics must differ)
OWN_TOPICS = ("joint_states", "odom", "/tf", "/clock", "/diagnostics", "motor_states", "reference_pose",
              "~/frame_cost", "~/ground_truth")


class StateTopics:
    """The publishers of one DynamicsNode (``node``) for ``twin``: topic names from the interface
    profile in force (``interface``, or None: the node's own), frames ``odom_frame`` and
    ``base_frame`` (prefixed), ``outputs`` the model's output topics."""

    def __init__(self, node, twin, interface, odom_frame: str, base_frame: str, publish_clock: bool, outputs=()):
        self.twin, self.interface = twin, interface
        self.odom_frame, self.base_frame = odom_frame, base_frame
        # odometry counts from here: an interface profile's odometry reset moves the odom frame,
        # not the base
        self.odometry = OdometryOrigin()
        # the frame of the twin's true pose: odom, unless an interface profile may move odom away
        # from it; then the simulation's world, named "" as simulation_interfaces names it
        self.world_frame = odom_frame if interface is None else ""
        # joint names unprefixed: robot_state_publisher matches them against the URDF and
        # applies its own frame_prefix to frame ids only
        self.joint_names = list(twin.joint_names)
        topics = interface.profile.topics if interface is not None else {}
        self.pub_joints = node.create_publisher(JointState, topics.get("joint_states", "joint_states"), 10)
        # odometry only for a mobile base: a fixed one would advertise a topic that never speaks
        planar = twin.state().pose is not None
        self.pub_odom = node.create_publisher(Odometry, topics.get("odom", "odom"), 10) if planar else None
        # the true pose, for simulated sensors: odometry may be reset, the world does not move
        self.pub_truth = (node.create_publisher(Odometry, "~/ground_truth", 10)
                          if planar and interface is not None else None)
        self.TFMessage = messages.tf_message()
        self.pub_tf = node.create_publisher(self.TFMessage, "/tf", 100)
        self.pub_motors = node.create_publisher(JointState, "motor_states", 10) if twin.motor_names else None
        self.pub_clock = node.create_publisher(Clock, "/clock", 10) if publish_clock else None
        self.pub_frame_cost = node.create_publisher(Float64, "~/frame_cost", 10)  # worst frame of the last second [s]
        # the reference pose where the twin follows one (the Robotino's rose), else no topic
        self.pub_reference = (node.create_publisher(PoseStamped, "reference_pose", 10)
                              if planar and twin.state().reference is not None else None)
        self.pub_diag = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.pub_outputs = {topic: node.create_publisher(Float64, topic, 10) for topic in outputs}

    def joints(self, state, ns: int):
        """/clock and /joint_states of ``state`` at stamp ``ns``; returns the stamp message. /clock
        carries the frame's stamp: the simulated time with use_sim_time, else the instant the
        messages name (start + t_sim / real_time_factor), so that a node on simulated time reads a
        clock its messages' stamps agree with."""
        stamp = messages.stamp_msg(ns)
        if self.pub_clock is not None:
            self.pub_clock.publish(Clock(clock=stamp))
        if self.interface is not None:
            names, position, velocity = self.interface.joint_state(state)
            js = messages.joint_state(stamp, names, position, velocity)
        else:
            js = messages.joint_state(stamp, self.joint_names, state.position.tolist(), state.velocity.tolist(),
                                      state.effort.tolist())
        self.pub_joints.publish(js)
        return stamp

    def rest(self, state, stamp, tf_batch: list, outputs) -> None:
        """``outputs`` ((topic, value) pairs), motor states, the interface's motor readings, and
        for a mobile base /odom and the reference at ``stamp``; odom -> base appended to
        ``tf_batch``."""
        for topic, value in outputs:
            self.pub_outputs[topic].publish(Float64(data=value))
        if self.pub_motors is not None:
            names, pos, vel, eff = self.twin.motor_states(state)
            self.pub_motors.publish(messages.joint_state(stamp, names, *(np.asarray(v, float).tolist()
                                                                         for v in (pos, vel, eff))))
        if self.interface is not None:
            self.interface.publish_motor_readings(state, stamp)
        if state.pose is None:  # a fixed base: no odometry
            return
        pose = self.odometry.to_odom(state.pose)
        self.pub_odom.publish(messages.odometry(stamp, self.odom_frame, self.base_frame, pose, state.twist_body))
        if self.pub_truth is not None:
            self.pub_truth.publish(messages.odometry(stamp, self.world_frame, self.base_frame, state.pose,
                                                     state.twist_body))
        if self.interface is None or self.interface.publish_tf:
            tf_batch.append(messages.planar_transform(stamp, self.odom_frame, self.base_frame, pose))
        if state.reference is not None and self.pub_reference is not None:
            self.pub_reference.publish(messages.planar_pose(stamp, self.odom_frame,
                                                            self.odometry.to_odom(state.reference)))

    def tf(self, tf_batch: list) -> None:
        if tf_batch:  # nothing to say (publish_odom_tf false, a fixed base): no message, as the driver
            self.pub_tf.publish(self.TFMessage(transforms=tf_batch))

    def frame_cost(self, seconds: float) -> None:
        self.pub_frame_cost.publish(Float64(data=float(seconds)))

    def diagnostics(self, records, stamp, prefix: str, twin_name: str) -> None:
        self.pub_diag.publish(messages.diagnostic_array(records, stamp, prefix, f"{prefix}{twin_name}_twin"))
