"""The Twin protocol without ROS: both implementations satisfy it, step_to's contract, the
trajectory interpolation (cubic Hermite through the points, last point held), commands refused
by name."""
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.robots import load_robot
from bondsim_ros.twin.protocol import CommandError, JointTrajectory, Twin
from bondsim_ros.twin.trajectory import TrajectorySampler

SLIDER_YAML = Path(__file__).resolve().parent / "data" / "live" / "slider_msd.yaml"


def test_model_twin_and_robotino_twin_are_twins():
    from bondsim_ros.robots.robotino.twin import RobotinoTwin

    tw = load_robot(str(SLIDER_YAML)).make_twin()
    assert isinstance(tw, Twin)
    assert isinstance(RobotinoTwin(reference="twist"), Twin)


def test_step_to_returns_the_last_state_for_earlier_times_and_ends_a_step_at_t():
    tw = load_robot(str(SLIDER_YAML)).make_twin()
    s1 = tw.step_to(0.5)
    assert tw.step_to(0.3).position[0] == s1.position[0] and tw.t == 0.5
    assert 0.0 <= tw.sim.solver.st[0] - 0.5 <= 1e-13  # the solver's last step ends at t
    s2 = tw.step_to(0.5 + 1e-7)
    assert s2.t == pytest.approx(0.5 + 1e-7, abs=0)


def test_hermite_interpolation_and_hold():
    traj = JointTrajectory(["a"], np.array([1.0, 2.0]), np.array([[1.0], [3.0]]), np.array([[0.5], [0.0]]))
    sampler = TrajectorySampler(traj, start=10.0, q_now={"a": 0.0})
    # first segment from (0, 0) at rest to (1, 0.5) over 1 s: cubic Hermite at s = 0.5
    h00, h10, h01, h11 = 0.5, 0.125, 0.5, -0.125
    q, qd = sampler.sample(10.5)
    assert q[0] == pytest.approx(h00 * 0.0 + h10 * 0.0 + h01 * 1.0 + h11 * 0.5)
    assert sampler.sample(11.0)[0][0] == pytest.approx(1.0) and sampler.sample(11.0)[1][0] == pytest.approx(0.5)
    q, qd = sampler.sample(12.5)
    assert q[0] == 3.0 and qd[0] == 0.0
    assert sampler.sample(9.0)[0][0] == 0.0  # before its start: where the joint was


def test_commands_a_twin_does_not_take_are_refused_by_name():
    tw = load_robot(str(SLIDER_YAML)).make_twin()
    with pytest.raises(CommandError, match="no twist command"):
        tw.set_twist(0.1, 0.0, 0.0)
    with pytest.raises(CommandError, match="no joint trajectory"):
        tw.set_joint_trajectory(JointTrajectory(["slide"], np.array([1.0]), np.array([[0.1]])))
    with pytest.raises(CommandError, match="strictly increasing"):
        TrajectorySampler(JointTrajectory(["a"], np.array([1.0, 1.0]), np.array([[0.0], [1.0]])), 0.0, {})
