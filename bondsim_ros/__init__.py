"""bondsim_ros: BondSim-style bond-graph digital twins for ROS 2.

Layers (each importable and testable on its own; only ``bondsim_ros.ros`` imports rclpy):

- ``bondgraph``  elements, components, ports, signals -> semi-explicit DAE (sympy) -> compiled kernels
- ``solver``     variable-step variable-order BDF for F(t, y, y') = 0; knows nothing of bond graphs
- ``mechanism``  mechanism XML -> URDF/xacro, kinematics
- ``models``     concrete systems built from the layers above (Robotino first)
- ``ros``        thin rclpy nodes over the core
"""

__version__ = "0.1.0"
