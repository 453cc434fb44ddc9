"""Parameter identification: fit a model's run-time parameters to logged data (no ROS).

``bondsim-ros fit MODEL DATA.csv --params a,b --outputs col`` on the command line
(:mod:`bondsim_ros.fit.commands`); :func:`fit` and :class:`FitProblem` from Python.
"""
from .core import Direction, FitError, FitProblem, FitResult, LogData, covariance, fit, read_csv

__all__ = ["FitError", "FitProblem", "FitResult", "Direction", "LogData", "read_csv", "fit", "covariance"]
