"""bondsim_ros.models"""
