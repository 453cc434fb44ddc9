"""Parameter identification: fit a model's run-time parameters to logged data (no ROS).

``bondsim-ros fit MODEL DATA.csv --params a,b --outputs col`` on the command line
(:mod:`bondsim_ros.fit.commands`); :func:`fit` and :class:`FitProblem` from Python.

The names below are loaded on first use: the command line imports ``fit.commands`` to list the
sub-command, and every other command (``simulate``) then does without numpy's and the fit's
import here.
"""
from __future__ import annotations

import importlib

__all__ = ["FIT_OPTIONS", "FitError", "FitRunFailed", "FitProblem", "FitResult", "Direction", "LogData",
           "read_csv", "fit", "covariance"]


def __getattr__(name):
    if name in __all__:
        return getattr(importlib.import_module(".core", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
