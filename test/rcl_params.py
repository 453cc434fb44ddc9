"""Parameters as a real ROS node would get them: parsed by rcl itself (rcl_yaml_param_parser,
reached through rclpy's --ros-args handling), not by PyYAML.

rcl's rules differ from PyYAML's where it matters: an empty sequence (``[]``) becomes an
*unset* parameter, and a section applies to a node only if its key matches the node's fully
qualified name (``/ns/name``, ``/**``, ``/**/name``, or the bare ``name`` for the root
namespace).
"""
from __future__ import annotations

import rclpy
from rclpy.parameter import Parameter


def rcl_parameters(params_files, node_name: str, namespace: str = "") -> tuple[dict, set]:
    """({name: value} of the parameters that are set, {names given but unset}) for the node
    ``namespace/node_name`` started with ``--params-file`` for each file."""
    from rclpy.node import Node

    args = ["--ros-args"]
    for f in ([params_files] if isinstance(params_files, (str, bytes)) or hasattr(params_files, "__fspath__")
              else params_files):
        args += ["--params-file", str(f)]
    ctx = rclpy.Context()
    rclpy.init(args=args, context=ctx)
    try:
        node = Node(node_name, namespace=namespace or None, context=ctx, start_parameter_services=False)
        try:
            overrides = dict(node._parameter_overrides)  # rcl's own parse of the files
        finally:
            node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    values = {k: p.value for k, p in overrides.items() if p.type_ != Parameter.Type.NOT_SET}
    unset = {k for k, p in overrides.items() if p.type_ == Parameter.Type.NOT_SET}
    return values, unset
