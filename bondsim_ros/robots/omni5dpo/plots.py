"""The 5DPO's figure for `bondsim-ros simulate --plot` (its model entry's ``plot``)."""
from __future__ import annotations

from bondsim_ros.plotting import pyplot, save_figure


def plot_omni5dpo(result, out_png) -> list:
    """Body twist vs. reference, wheel speeds (reference, slew-limited, actual), motor voltages."""
    plt = pyplot()

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
