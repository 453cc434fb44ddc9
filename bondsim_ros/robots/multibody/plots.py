"""The multibody benchmarks' figures for `bondsim-ros simulate --plot` (their model entries' ``plot``)."""
from __future__ import annotations

from bondsim_ros.plotting import plot_columns


def plot_pendulum(result, out_png):
    return plot_columns(result, out_png, [("theta", "theta [rad]"), ("omega", "omega [rad/s]")], "planar pendulum")


def plot_slider(result, out_png):
    return plot_columns(result, out_png, [("gamma", "crank angle [rad]"), ("x_piston", "piston x [m]"),
                                          ("v_piston", "piston velocity [m/s]")], "slider crank")
