"""Keep DDS discovery on this machine unless the user decided otherwise.

The pip environment and CI run ROS 2 on machines whose network is not ours to flood with
multicast; a user who sets the variable (a real robot on the LAN) keeps full control.
"""
import os


def ensure_local_discovery() -> None:
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # Jazzy, Kilted
