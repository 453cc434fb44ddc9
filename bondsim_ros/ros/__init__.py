"""bondsim_ros.ros"""
