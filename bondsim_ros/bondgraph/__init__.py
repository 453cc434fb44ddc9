"""bondsim_ros.bondgraph"""
