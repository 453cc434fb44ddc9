"""Keep DDS discovery on this machine unless the user decided otherwise.

The pip environment and CI run ROS 2 on machines whose network is not ours to flood with
multicast; a user who sets the variable keeps full control. A twin beside a real robot needs
the robot's computer: ROS's own default range, SUBNET, which the twin launch file
(`discovery_range:=`) and `bondsim-ros up --bridge` (`--discovery`) select (docs/ros.md).
"""
import os

DISCOVERY_RANGES = ("OFF", "LOCALHOST", "SUBNET", "SYSTEM_DEFAULT")  # ROS_AUTOMATIC_DISCOVERY_RANGE, Jazzy+


def ensure_local_discovery() -> None:
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # Jazzy, Kilted


def choose_discovery_range(flag: str | None, bridge: bool, environ=os.environ) -> str:
    """The range a process should use: the explicit flag; else what the environment says; else
    SUBNET (ROS's default) when it talks to a real robot, LOCALHOST otherwise."""
    if flag:
        value = flag.upper()
        if value not in DISCOVERY_RANGES:
            raise ValueError(f"discovery range {flag!r}: one of {', '.join(r.lower() for r in DISCOVERY_RANGES)}")
        return value
    return environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE") or ("SUBNET" if bridge else "LOCALHOST")


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
