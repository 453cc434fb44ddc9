"""Old import path of the Robotino model: the model lives in bondsim_ros.robots.robotino.model
(the Robotino plug-in). This name is that module itself, so ``models.robotino.X`` and private
names keep working for the code that still imports it (omni5dpo, tests, benchmarks)."""
import sys

from bondsim_ros.robots.robotino import model as _model

sys.modules[__name__] = _model
