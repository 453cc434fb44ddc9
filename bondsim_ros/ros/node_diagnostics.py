"""What the dynamics node reports about itself on /diagnostics, without ROS: whether it keeps up
(from its FrameClock) and the model's failures, its joint commands, its live parameter changes; as
the Twin protocol's Diagnostic records, which the node turns into diagnostic_msgs like the
twin's own.
"""
from __future__ import annotations

from bondsim_ros.twin.protocol import ERROR, OK, WARN, Diagnostic

RECENT = 5.0  # s a failure or a refusal stays the status's message


def solver_status(twin_name: str, clock, solver_failures: int, last_failure: str | None, failure_age: float,
                  t: float) -> Diagnostic:
    """ERROR for ``RECENT`` s after a model failure (``failure_age`` s ago), WARN once a frame
    overran or a timer period was skipped, else OK."""
    behind = clock.overruns > 0 or clock.skipped_frames > 0
    failed = last_failure is not None and failure_age < RECENT
    level = ERROR if failed else WARN if behind else OK
    message = (last_failure if failed else
               f"{clock.overruns} overruns, {clock.skipped_frames} frames skipped" if behind else "keeping up")
    return Diagnostic(f"{twin_name}/solver", level, message,
                      {"solver failures": str(solver_failures), "worst frame cost [ms]": f"{clock.worst * 1e3:.3f}",
                       "max lag [ms]": f"{clock.max_lag * 1e3:.3f}", "frames skipped": str(clock.skipped_frames),
                       "sim time [s]": f"{t:.3f}"})


def joint_command_status(twin_name: str, counts, now: float) -> Diagnostic:
    """WARN with the last refusal for ``RECENT`` s after it, else OK; ``counts`` as the node keeps
    them (joint_commands.JointCommands): accepted, refused, last_refusal, wall (when it was
    refused)."""
    recent = counts.last_refusal is not None and now - counts.wall < RECENT
    return Diagnostic(f"{twin_name}/joint_commands", WARN if recent else OK, counts.last_refusal if recent else "ok",
                      {"accepted": str(counts.accepted), "refused": str(counts.refused)})


def parameters_status(twin_name: str, text: str, live: dict) -> Diagnostic:
    """OK, ``text`` saying which live parameters were set and how; ``live``: every live
    parameter's value now."""
    return Diagnostic(f"{twin_name}/parameters", OK, f"set: {text}", {k: f"{v:g}" for k, v in live.items()})
