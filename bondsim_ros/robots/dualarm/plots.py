"""The dual-arm manipulator's figures for `bondsim-ros simulate --plot` (its model entry's ``plot``)."""
from __future__ import annotations

import numpy as np

from bondsim_ros.plotting import figure_path, pyplot, save_figure


def plot_dualarm(result, out_png):
    """Fig. 19 (a)-(h) of the paper as one 4 x 2 figure, and a second figure with the tracking
    errors, the lateral-slip residual and the constraint forces against the inverse dynamics."""
    plt = pyplot()

    from .model import WHEELS, add_columns

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
