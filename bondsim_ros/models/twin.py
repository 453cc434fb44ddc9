"""Old import path of the Robotino twin: it lives in bondsim_ros.robots.robotino.twin (the
Robotino plug-in); this name is that module itself."""
import sys

from bondsim_ros.robots.robotino import twin as _twin

sys.modules[__name__] = _twin
