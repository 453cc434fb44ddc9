"""Joint trajectories in a twin: stepped across a trajectory's end at any instant."""
import numpy as np
import pytest

from bondsim_ros.robots import load_robot
from bondsim_ros.twin.protocol import JointTrajectory


@pytest.fixture(scope="module")
def arm():
    return load_robot("arm3dof").make_twin("trajectory")


def _fresh(twin):
    twin.reset()
    return twin.state().joint_map()


def test_a_trajectory_ending_inside_a_frame_is_stepped_through(arm):
    """Ends at 0.95 s, inside a 33 Hz frame (0.9394..0.9697 s): the frame steps through the end,
    and after it the last point is the reference, held."""
    q = _fresh(arm)
    arm.set_joint_trajectory(JointTrajectory(["q1"], np.array([0.5, 0.95]), q["q1"] + np.array([[0.1], [0.2]])))
    for k in range(1, 41):
        arm.step_to(k / 33)
    assert arm.sim.param("q_ref_q1") == q["q1"] + 0.2 and arm.sim.param("qd_ref_q1") == 0.0
    assert arm.state().joint_map()["q1"] == pytest.approx(q["q1"] + 0.2, abs=0.01)
    # one ending on a frame (to rounding)
    arm.set_joint_trajectory(JointTrajectory(["q2"], np.array([10 / 33]), np.array([[q["q2"] + 0.1]])))
    for k in range(41, 61):
        arm.step_to(k / 33)
    assert arm.sim.param("q_ref_q2") == q["q2"] + 0.1
