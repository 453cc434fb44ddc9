"""Many Robotino twins in one process on one frame clock: the fleet of the ROS graph benchmark
(ros_bench.py). The dynamics node takes part through ``own_timer=False`` and its
``publish_pending_joints`` / ``publish_pending_rest`` / ``compute_next``."""
from __future__ import annotations

from bondsim_ros.ros.graph import Graph, make_executor


class FleetClock:
    """One timer for many twins. Each tick: every robot's /joint_states first, then every
    robot's odometry with all odom -> base transforms in one /tf message, then every robot
    computes its next frame. The joint states so never queue behind other robots' odometry or
    solver work, and /tf costs one publication per frame instead of one per robot."""

    def __init__(self, node, twins, rate):
        from bondsim_ros.ros.dynamics_node import tf_message

        self.twins = twins
        self.TFMessage = tf_message()
        self.pub_tf = node.create_publisher(self.TFMessage, "/tf", 100)
        self.timer = node.create_timer(1.0 / rate, self._tick)

    def _tick(self):
        for t in self.twins:
            t.publish_pending_joints()
        tf_batch = []
        for t in self.twins:
            t.publish_pending_rest(tf_batch)
        if tf_batch:
            self.pub_tf.publish(self.TFMessage(transforms=tf_batch))
        for t in self.twins:
            t.compute_next()


def start_fleet(n: int, dynamics: dict | None = None, context=None) -> Graph:
    """``n`` Robotino twins in namespaces robot0..robot{n-1}, driven by one FleetClock."""
    import rclpy

    from bondsim_ros.ros.dynamics_node import DynamicsNode

    kw = {"context": context} if context is not None else {}
    executor = make_executor(context)
    nodes = {}
    for k in range(n):
        node = DynamicsNode(overrides=dynamics or {}, own_timer=False, namespace=f"robot{k}",
                            **kw)
        nodes[f"robot{k}"] = node
        executor.add_node(node)
    clock_node = rclpy.create_node("fleet_clock", **kw)
    rate = next(iter(nodes.values())).p["publish_rate"] if nodes else 33.0
    clock_node.fleet = FleetClock(clock_node, list(nodes.values()), rate)
    nodes["fleet_clock"] = clock_node
    executor.add_node(clock_node)
    return Graph(executor=executor, nodes=nodes, context=context)
