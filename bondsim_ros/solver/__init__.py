"""bondsim_ros.solver"""
