"""bondsim_ros: BondSim-style bond-graph digital twins for ROS 2.

Layers (each importable and testable on its own; only ``bondsim_ros.ros`` imports rclpy; what each
may import is README's table, held by test/test_layers.py):

- ``bondgraph``  elements, components, ports, signals -> semi-explicit DAE (sympy) -> compiled kernels
- ``solver``     variable-step variable-order BDF for F(t, y, y') = 0; knows nothing of bond graphs
- ``mechanism``  mechanism XML -> URDF/xacro, kinematics
- ``models``     concrete systems built from the layers above, and the registry ``simulate`` names them by
- ``twin``       the Twin protocol and the generic ModelTwin
- ``robots``     robots as plug-ins (model + mechanism + twin), found through entry points
- ``ros``        thin rclpy nodes over the Twin protocol
"""

__version__ = "0.1.0"
