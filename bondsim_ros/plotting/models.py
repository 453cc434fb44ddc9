"""Figures of the built-in models for ``bondsim-ros simulate --plot`` (the models themselves do
not plot): ``model_plot(name)`` is the plot of a built-in model, None for the generic one."""
from __future__ import annotations

import math

import numpy as np

from . import figure_path, save_figure


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_robotino(result, out_png) -> list:
    """Fig. 29 (path vs rose), Fig. 34 (tracking errors), wheel speeds and motor currents."""
    plt = _pyplot()

    written = []
    t = result.t
    fig, ax = plt.subplots(figsize=(6, 6))
    if "x_ref" in result:
        ax.plot(result["x_ref"], result["y_ref"], "k--", lw=1, label="rose reference")
    ax.plot(result["x"], result["y"], lw=1.6, label="Robotino centre C")
    ax.set_aspect("equal")
    ax.set_xlabel("X [m]")
    ax.set_ylabel("Y [m]")
    ax.set_title("Path of the Robotino (cf. Damic & Cohodar Husic 2025, Fig. 29)")
    ax.legend(loc="upper right")
    ax.grid(alpha=0.3)
    written.append(save_figure(fig, out_png))
    if "x_ref" in result:
        # as Fig. 34: after the start-up transient (the robot starts at rest, the path at 0.6 m/s)
        late = t >= min(2.0, t[-1] / 2)
        fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
        for a, (k, unit) in zip(axes, (("x", "m"), ("y", "m"), ("phi", "rad"))):
            err = result[k] - result[f"{k}_ref"]
            a.plot(t[late], err[late], lw=1)
            a.set_ylabel(f"{k} - {k}_ref [{unit}]")
            a.grid(alpha=0.3)
            a.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
            a.text(0.99, 0.95, f"start-up peak {np.max(np.abs(err)):.1e} {unit} (not shown)", transform=a.transAxes,
                   ha="right", va="top", fontsize=8, color="0.4")
        axes[-1].set_xlabel("t [s]")
        axes[0].set_title("Tracking errors after the start-up transient (cf. Damic & Cohodar Husic 2025, Fig. 34)")
        written.append(save_figure(fig, figure_path(out_png, "errors")))
    for key, label, unit in (("w", "wheel speed", "rad/s"), ("i", "motor current", "A")):
        fig, ax = plt.subplots(figsize=(8, 3.6))
        for i in (1, 2, 3):
            ax.plot(t, result[f"{key}{i}"], lw=1, label=f"{label} {i}")
            if key == "w":
                ax.plot(t, result[f"w{i}_ref"], "k:", lw=0.8)
        ax.set_xlabel("t [s]")
        ax.set_ylabel(f"{label} [{unit}]")
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
        written.append(save_figure(fig, figure_path(out_png, "wheels" if key == "w" else "currents")))
    return written


def plot_omni5dpo(result, out_png) -> list:
    """Body twist vs. reference, wheel speeds (reference, slew-limited, actual), motor voltages."""
    plt = _pyplot()

    t = result.t
    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    for k, unit in (("vx", "m/s"), ("vy", "m/s"), ("wz", "rad/s")):
        line, = axes[0].plot(t, result[k], lw=1.4, label=f"{k} [{unit}]")
        axes[0].plot(t, result[f"{k}_ref"], ":", color=line.get_color(), lw=1)
    axes[0].set_ylabel("body twist")
    axes[0].legend(fontsize=8, loc="best")
    axes[0].set_title("5DPO robot step response (dotted: reference)")
    for i in (1, 2, 3):
        line, = axes[1].plot(t, result[f"w{i}"], lw=1.3, label=f"wheel {i}")
        axes[1].plot(t, result[f"w_lim{i}"], "--", color=line.get_color(), lw=0.8)
        axes[1].plot(t, result[f"w_ref{i}"], ":", color=line.get_color(), lw=0.8)
        axes[2].plot(t, result[f"u{i}"], lw=1.1, label=f"motor {i}")
    axes[1].set_ylabel("wheel speed [rad/s]")
    axes[1].legend(fontsize=8, loc="best", title="dashed: slew-limited ref.", title_fontsize=7)
    axes[2].set_ylabel("voltage [V]")
    axes[2].set_xlabel("t [s]")
    axes[2].legend(fontsize=8, loc="best")
    for a in axes:
        a.grid(alpha=0.3)
    return [save_figure(fig, out_png)]


def plot_arm3dof(result, out_png):
    """Three figures: joint angles (with reference), torques, gripper path in the plane."""
    plt = _pyplot()

    from bondsim_ros.robots.arm3dof.model import JOINT_NAMES, LENGTHS, POINT_A, POINT_B, add_columns

    if "gripper_x" not in result:
        result = add_columns(result)
    t = result.t
    written = []

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for n in JOINT_NAMES:
        ax.plot(t, result[n], lw=1.4, label=f"{n} (bond graph)")
        ax.plot(t, result[f"{n}_ref"], "k:", lw=1)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("joint angle [rad]")
    ax.set_title("joint angles; dotted: trapezoidal reference")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    written.append(save_figure(fig, figure_path(out_png, "joints")))

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for i in (1, 2, 3):
        ax.plot(t, result[f"T{i}"], lw=1.4, label=f"T{i}")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("joint torque [N m]")
    ax.set_title("inverse-dynamics torques driving the forward model")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
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
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title("gripper path and arm poses")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    written.append(save_figure(fig, figure_path(out_png, "path")))
    return written


def plot_dualarm(result, out_png):
    """Fig. 19 (a)-(h) of the paper as one 4 x 2 figure, and a second figure with the tracking
    errors, the lateral-slip residual and the constraint forces against the inverse dynamics."""
    plt = _pyplot()

    from bondsim_ros.robots.dualarm.model import WHEELS, add_columns

    if "err_joint" not in result:
        result = add_columns(result)
    t = result.t
    written = []
    fig, axes = plt.subplots(4, 2, figsize=(12, 13), sharex=True)
    groups = [("(a) joint angles of waist", ["w_q1", "w_q2"]),
              ("(b) joint angles of right arm", [f"r_q{k}" for k in range(1, 8)]),
              ("(c) joint angles of left arm", [f"l_q{k}" for k in range(1, 8)])]
    for ax, (title, js) in zip([axes[0, 0], axes[0, 1], axes[1, 0]], groups):
        for j in js:
            ax.plot(t, result[j], lw=1.4, label=j)
            ax.plot(t, result[f"{j}_ref"], "k:", lw=0.9)
        ax.set_title(title + " (dotted: reference)", fontsize=10)
        ax.set_ylabel("rad")
        ax.legend(fontsize=7, ncol=2)
    ax = axes[1, 1]
    for k, unit in (("x", "m"), ("y", "m"), ("phi", "rad")):
        ax.plot(t, result[k], lw=1.4, label=f"{k} [{unit}]")
        ax.plot(t, result[f"{k}_ref"], "k:", lw=0.9)
    ax.set_title("(d) posture of mobile platform (dotted: reference)", fontsize=10)
    ax.legend(fontsize=7)
    tgroups = [("(e) joint torques of wheels", list(WHEELS)), ("(f) joint torques of waist", ["w_q1", "w_q2"]),
               ("(g) joint torques of right arm", [f"r_q{k}" for k in range(1, 8)]),
               ("(h) joint torques of left arm", [f"l_q{k}" for k in range(1, 8)])]
    # torques from t > 0: at t = 0 the efforts that depend on y' come from the solver's initial
    # y', which is not consistent for the index-2 unknowns (docs/examples/dualarm.md)
    k = t > 0
    for ax, (title, js) in zip([axes[2, 0], axes[2, 1], axes[3, 0], axes[3, 1]], tgroups):
        for j in js:
            ax.plot(t[k], result[f"tau_{j}"][k], lw=1.4, label=j)
            ax.plot(t, result[f"tau_{j}_ref"], "k:", lw=0.9)
        ax.set_title(title + " (bond graph; dotted: inverse dynamics)", fontsize=10)
        ax.set_ylabel("N m")
        ax.legend(fontsize=7, ncol=2)
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
    for ax in axes[3]:
        ax.set_xlabel("t [s]")
    written.append(save_figure(fig, figure_path(out_png)))

    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    axes[0].semilogy(t[1:], np.maximum(result["err_joint"][1:], 1e-16), label="max over 18 joints |q - q_ref| [rad]")
    axes[0].semilogy(t[1:], np.maximum(result["err_pose"][1:], 1e-16), label="|(x, y) - (x, y)_ref| [m]")
    axes[0].set_title("open-loop tracking error of the bond graph driven by the inverse-dynamics torques", fontsize=10)
    axes[0].legend(fontsize=8)
    axes[1].plot(t, result["slip"], lw=1.2)
    axes[1].set_title("lateral-slip residual y' cos(phi) - x' sin(phi) [m/s] (eq. 1)", fontsize=10)
    axes[2].plot(t[k], result["lam"][k], lw=1.4, label="lambda, bond graph (Sf(0) effort)")
    axes[2].plot(t, result["lam_ref"], "k:", lw=1, label="lambda, inverse dynamics")
    axes[2].plot(t[k], result["F_l"][k], lw=1.2, label="F_l")
    axes[2].plot(t[k], result["F_r"][k], lw=1.2, label="F_r")
    axes[2].plot(t, result["F_l_ref"], "k:", lw=1)
    axes[2].plot(t, result["F_r_ref"], "k:", lw=1)
    axes[2].set_title("constraint forces [N]: lateral lambda, longitudinal wheel contact forces", fontsize=10)
    axes[2].legend(fontsize=8)
    axes[2].set_xlabel("t [s]")
    for ax in axes:
        ax.grid(alpha=0.3)
    written.append(save_figure(fig, figure_path(out_png, "errors")))
    return written


def _plot(result, out_png, cols, title):
    plt = _pyplot()

    fig, axes = plt.subplots(len(cols), 1, figsize=(7, 2.2 * len(cols)), sharex=True)
    for ax, (col, label) in zip(np.atleast_1d(axes), cols):
        ax.plot(result.t, result[col])
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_title(title)
    np.atleast_1d(axes)[-1].set_xlabel("t [s]")
    return [save_figure(fig, out_png)]


def plot_pendulum(result, out_png):
    return _plot(result, out_png, [("theta", "theta [rad]"), ("omega", "omega [rad/s]")], "planar pendulum")


def plot_slider(result, out_png):
    return _plot(result, out_png, [("gamma", "crank angle [rad]"), ("x_piston", "piston x [m]"),
                                   ("v_piston", "piston velocity [m/s]")], "slider crank")


_PENDULUMS = ("pendulum_minimal", "pendulum_zcp", "pendulum_lagrange", "pendulum_lagrange_scalar", "pendulum_parasitic",
              "pendulum_parasitic_scalar")
_SLIDERS = ("slider_crank_minimal", "slider_crank_lagrange", "slider_crank_lagrange_scalar", "slider_crank_parasitic",
            "slider_crank_parasitic_scalar", "slider_crank_hyperstatic_parasitic", "slider_crank_hyperstatic_lagrange",
            "slider_crank_isostatic3d_lagrange")
PLOTS = {"robotino": plot_robotino, "robotino_twist": plot_robotino, "omni5dpo": plot_omni5dpo,
         "arm3dof": plot_arm3dof, "dualarm": plot_dualarm,
         **{n: plot_pendulum for n in _PENDULUMS}, **{n: plot_slider for n in _SLIDERS}}


def model_plot(name: str):
    """plot(result, out_png) -> list of written files, for a built-in model; None: no own plot."""
    return PLOTS.get(name)


__all__ = ["PLOTS", "model_plot", "plot_robotino", "plot_omni5dpo", "plot_arm3dof", "plot_dualarm", "plot_pendulum",
           "plot_slider"]
