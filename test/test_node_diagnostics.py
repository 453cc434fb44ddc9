"""The dynamics node's own /diagnostics content without rclpy: keeping up, behind, a recent model
failure; joint commands accepted and refused; live parameter changes."""
import math
from types import SimpleNamespace

from bondsim_ros.ros.frame_clock import FrameClock
from bondsim_ros.ros.node_diagnostics import joint_command_status, parameters_status, solver_status


def _clock():
    return FrameClock(1.0, use_sim_time=False, monotonic=lambda: 0.0)


def test_solver_status_keeping_up_behind_and_failed():
    clock = _clock()
    d = solver_status("robotino", clock, 0, None, math.inf, 1.25)
    assert (d.name, d.level, d.message) == ("robotino/solver", "OK", "keeping up")
    assert d.values == {"solver failures": "0", "worst frame cost [ms]": "0.000", "max lag [ms]": "0.000",
                        "frames skipped": "0", "sim time [s]": "1.250"}
    clock.frame_done(0.040, 0.003, 0.030)
    d = solver_status("robotino", clock, 0, None, math.inf, 2.0)
    assert d.level == "WARN" and d.message == "1 overruns, 0 frames skipped"
    assert d.values["worst frame cost [ms]"] == "40.000" and d.values["max lag [ms]"] == "3.000"
    failure = "SolverError while stepping to t=2.000 s: step size too small; twin restarted"
    assert solver_status("robotino", clock, 1, failure, 4.9, 2.0).level == "ERROR"
    assert solver_status("robotino", clock, 1, failure, 4.9, 2.0).message == failure
    assert solver_status("robotino", clock, 1, failure, 5.1, 2.0).level == "WARN"  # an old failure: behind only


def test_joint_command_status_warns_for_five_seconds_after_a_refusal():
    counts = SimpleNamespace(accepted=3, refused=0, last_refusal=None, wall=-math.inf)
    d = joint_command_status("arm3dof", counts, 10.0)
    assert (d.name, d.level, d.message, d.values) == ("arm3dof/joint_commands", "OK", "ok",
                                                      {"accepted": "3", "refused": "0"})
    counts.refused, counts.last_refusal, counts.wall = 1, "refused: unknown joints ['x']", 10.0
    assert joint_command_status("arm3dof", counts, 14.0).message == "refused: unknown joints ['x']"
    assert joint_command_status("arm3dof", counts, 14.0).level == "WARN"
    assert joint_command_status("arm3dof", counts, 15.5).level == "OK"


def test_parameters_status_says_what_was_set_and_every_live_value():
    d = parameters_status("robotino", "publish_rate 33 -> 10", {"publish_rate": 10.0, "real_time_factor": 1.0})
    assert (d.name, d.level, d.message) == ("robotino/parameters", "OK", "set: publish_rate 33 -> 10")
    assert d.values == {"publish_rate": "10", "real_time_factor": "1"}
