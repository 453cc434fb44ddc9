"""state_publisher: robot_state_publisher's job for the pip environment.

On a ROS install the launch files start robot_state_publisher; it is not on PyPI, so
``bondsim-ros up`` and ``bondsim-ros demo`` start this node instead. Same contract (read from
ros/robot_state_publisher's src/robot_state_publisher.cpp, jazzy/rolling): latched
``robot_description`` (std_msgs/String), fixed joints once on latched ``/tf_static``, moving
joints on ``/tf`` for every /joint_states message, stamped with that message's stamp.
``frame_prefix`` goes in front of the frame ids of the published transforms only; joint names
in /joint_states are looked up as the URDF spells them, names the URDF lacks are ignored, and
a message whose name and position arrays differ in length is ignored as a whole. (Unlike
robot_state_publisher this node publishes every joint state: no publish_frequency throttle.)
"""
from __future__ import annotations

from geometry_msgs.msg import TransformStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from bondsim_ros.mechanism.urdf_chain import UrdfChain, translation_quaternion

from ._env import Param, declare_parameters, overrides_to_parameters, run_node
from .messages import tf_message

# The node's parameters (see dynamics_node.PARAMS): all apply at start.
PARAMS = {
    "robot_description": Param("", "URDF text; empty: read the file given by `urdf`"),
    "urdf": Param("", "URDF file; empty: the default robot's (bondsim_ros.robots.DEFAULT_ROBOT)"),
    "frame_prefix": Param("", "prefix of every frame id (several robots), as robot_state_publisher's"),
}

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


def robot_description_params(robot) -> dict:
    """state_publisher parameters for ``robot``: its packaged URDF, else the URDF the mechanism
    layer makes from its mechanism XML."""
    if robot.urdf is not None:
        return {"urdf": str(robot.urdf)}
    from bondsim_ros.mechanism.urdf import robot_description

    return {"robot_description": robot_description(robot.mechanism)}


def default_description() -> str:
    """The URDF text of the registry's default robot: its packaged URDF, else the one made from
    its mechanism XML."""
    from bondsim_ros.robots import DEFAULT_ROBOT, load_robot

    params = robot_description_params(load_robot(DEFAULT_ROBOT))
    if "robot_description" in params:
        return params["robot_description"]
    with open(params["urdf"], encoding="utf-8") as f:
        return f.read()


class StatePublisher(Node):
    def __init__(self, name="state_publisher", overrides: dict | None = None, **kwargs):
        super().__init__(name, parameter_overrides=overrides_to_parameters(PARAMS, overrides), **kwargs)
        p = declare_parameters(self, PARAMS)
        text = p["robot_description"]
        if not text and p["urdf"]:
            try:
                with open(p["urdf"], encoding="utf-8") as f:
                    text = f.read()
            except OSError as exc:  # no such file, a folder, no permission
                raise ValueError(f"urdf: {p['urdf']}: cannot read: {exc.strerror or exc}") from None
            except UnicodeDecodeError:
                raise ValueError(f"urdf: {p['urdf']}: not a text file (UTF-8)") from None
        elif not text:
            text = default_description()
        self.chain = UrdfChain(text, is_text=True)
        self.prefix = p["frame_prefix"]
        self.TFMessage = tf_message()
        self.pub_description = self.create_publisher(String, "robot_description", LATCHED)
        self.pub_description.publish(String(data=text))
        self.pub_static = self.create_publisher(self.TFMessage, "/tf_static", LATCHED)
        now = self.get_clock().now().to_msg()
        self.pub_static.publish(self.TFMessage(transforms=[self._tf(now, *t) for t in self.chain.fixed_transforms()]))
        self.pub_tf = self.create_publisher(self.TFMessage, "/tf", 100)
        self.create_subscription(JointState, "joint_states", self._on_joints, 50)

    def _tf(self, stamp, parent, child, T):
        out = TransformStamped()
        out.header.stamp = stamp
        out.header.frame_id = self.prefix + parent
        out.child_frame_id = self.prefix + child
        (out.transform.translation.x, out.transform.translation.y, out.transform.translation.z), \
            (out.transform.rotation.x, out.transform.rotation.y, out.transform.rotation.z,
             out.transform.rotation.w) = translation_quaternion(T)
        return out

    def _on_joints(self, msg: JointState):
        if len(msg.name) != len(msg.position):
            self.get_logger().error("ignored a JointState message whose name and position arrays differ in length",
                                    throttle_duration_sec=5.0)
            return
        positions = dict(zip(msg.name, msg.position))  # URDF names; unknown ones match no joint
        transforms = [self._tf(msg.header.stamp, *t) for t in self.chain.moving_transforms(positions)]
        if transforms:
            self.pub_tf.publish(self.TFMessage(transforms=transforms))


def main(args=None):
    run_node(StatePublisher, args)


if __name__ == "__main__":
    main()
