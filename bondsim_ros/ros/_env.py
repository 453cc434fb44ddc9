"""Keep DDS discovery on this machine unless the user decided otherwise.

The pip environment and CI run ROS 2 on machines whose network is not ours to flood with
multicast; a user who sets the variable (a real robot on the LAN) keeps full control.
"""
import os


def ensure_local_discovery() -> None:
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # Jazzy, Kilted


def run_node(node_class, args=None) -> None:
    """A node executable's whole life: init, spin until Ctrl-C or shutdown, clean up."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    ensure_local_discovery()
    rclpy.init(args=args)
    node = node_class()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def declare_parameters(node, params: dict) -> dict:
    """Declare ``{name: (default, description)}`` on ``node``; returns the values in effect."""
    from rcl_interfaces.msg import ParameterDescriptor

    for key, (default, desc) in params.items():
        node.declare_parameter(key, default, ParameterDescriptor(description=desc))
    return {k: node.get_parameter(k).value for k in params}
