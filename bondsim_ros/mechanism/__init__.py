"""bondsim_ros.mechanism"""
