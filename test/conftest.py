"""Shared test set-up: ROS 2 traffic stays on this machine, in a domain of its own."""
import os
import random

# before any rclpy import: local discovery only, and a domain no other test run shares
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randint(1, 200)))
