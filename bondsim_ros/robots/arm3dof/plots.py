"""The 3-DOF arm's figures for `bondsim-ros simulate --plot` (its model entry's ``plot``)."""
from __future__ import annotations

import math

from bondsim_ros.plotting import figure_path, pyplot, save_figure


def _label(ax, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def plot_arm3dof(result, out_png):
    """Three figures: joint angles (with reference), torques, gripper path in the plane."""
    plt = pyplot()

    from .model import JOINT_NAMES, LENGTHS, POINT_A, POINT_B, add_columns

    if "gripper_x" not in result:
        result = add_columns(result)
    t = result.t
    written = []

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for n in JOINT_NAMES:
        ax.plot(t, result[n], lw=1.4, label=f"{n} (bond graph)")
        ax.plot(t, result[f"{n}_ref"], "k:", lw=1)
    _label(ax, "t [s]", "joint angle [rad]", "joint angles; dotted: trapezoidal reference")
    written.append(save_figure(fig, figure_path(out_png, "joints")))

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for i in (1, 2, 3):
        ax.plot(t, result[f"T{i}"], lw=1.4, label=f"T{i}")
    _label(ax, "t [s]", "joint torque [N m]", "inverse-dynamics torques driving the forward model")
    written.append(save_figure(fig, figure_path(out_png, "torques")))

    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    k_every = max(1, len(t) // 10)
    for k in list(range(0, len(t), k_every)) + [len(t) - 1]:
        q = [result[n][k] for n in JOINT_NAMES]
        pts = [(0.0, 0.0)]
        th = 0.0
        for i in range(3):
            th += q[i]
            pts.append((pts[-1][0] + LENGTHS[i] * math.cos(th), pts[-1][1] + LENGTHS[i] * math.sin(th)))
        xs, ys = zip(*pts)
        ax.plot(xs, ys, "-o", color="0.7", lw=1, ms=3)
    ax.plot(result["gripper_x"], result["gripper_y"], lw=1.6, label="gripper")
    ax.plot(*POINT_A, "gs", label="A")
    ax.plot(*POINT_B, "rs", label="B")
    ax.set_aspect("equal")
    _label(ax, "x [m]", "y [m]", "gripper path and arm poses")
    written.append(save_figure(fig, figure_path(out_png, "path")))
    return written
