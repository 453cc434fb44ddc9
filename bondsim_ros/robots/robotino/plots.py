"""The Robotino's figures for `bondsim-ros simulate --plot` (its model entries' ``plot``)."""
from __future__ import annotations

import numpy as np

from bondsim_ros.plotting import figure_path, pyplot, save_figure


def plot_robotino(result, out_png) -> list:
    """Fig. 29 (path vs rose), Fig. 34 (tracking errors), wheel speeds and motor currents."""
    plt = pyplot()

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
