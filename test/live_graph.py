"""The graph of `bondsim-ros up` started in-process with a listener node beside it, for tests."""
import contextlib

import rclpy

from bondsim_ros.ros.graph import start_graph


@contextlib.contextmanager
def live_graph(dyn: dict, listener: str, **graph_kwargs):
    """start_graph(dyn) in an rclpy context of its own, with a node named ``listener`` on the same
    executor (``graph.nodes["listener"]``); yields (graph, listener node); shuts both down after."""
    context = rclpy.Context()
    rclpy.init(context=context)
    graph = start_graph(dyn, {}, context=context, **graph_kwargs)
    try:
        node = rclpy.create_node(listener, context=context)
        graph.executor.add_node(node)
        graph.nodes["listener"] = node
        yield graph, node
    finally:
        graph.shutdown()
        rclpy.try_shutdown(context=context)
