"""Joint trajectories as joint_trajectory_controller reads them: per-segment interpolation (linear
on positions alone, cubic with velocities, quintic with accelerations) against its closed forms,
points at their true times relative to the stamp, malformed trajectories refused on receipt
naming the point and joint, and a twin stepped across a trajectory's end at any instant."""
import math

import numpy as np
import pytest
from scipy.interpolate import BPoly, CubicHermiteSpline

from bondsim_ros.robots import load_robot
from bondsim_ros.twin.protocol import CommandError, JointTrajectory
from bondsim_ros.twin.trajectory import TrajectorySampler


@pytest.fixture(scope="module")
def arm():
    return load_robot("arm3dof").make_twin("trajectory")


def _fresh(twin):
    twin.reset()
    return twin.state().joint_map()


def test_positions_alone_are_interpolated_linearly_through_the_points():
    """Waypoints 0.5, 1.0, 1.5 at 1, 2, 3 s from 0 now: a constant 0.5/s, not a stop at each point."""
    traj = JointTrajectory(["a"], np.array([1.0, 2.0, 3.0]), np.array([[0.5], [1.0], [1.5]]))
    sampler = TrajectorySampler(traj, start=0.0, now=0.0, q_now={"a": 0.0})
    for t in (0.25, 1.0, 1.5, 2.0, 2.75):
        q, qd = sampler.sample(t)
        assert q[0] == pytest.approx(0.5 * t, abs=1e-15) and qd[0] == pytest.approx(0.5, abs=1e-15), t
    assert [float(v[0]) for v in sampler.sample(3.0)] == [1.5, 0.0]  # the last point, held


def test_the_arm_follows_positions_alone_without_stopping_at_the_points(arm):
    """arm3dof's q1 sent through q0 + 0.5, 1.0, 1.5 at 1, 2, 3 s: the reference set at each 10 ms
    frame is the straight line at the frame's midpoint, and the joint passes the middle point
    at 0.5 rad/s."""
    q0 = _fresh(arm)["q1"]
    arm.set_joint_trajectory(JointTrajectory(["q1"], np.array([1.0, 2.0, 3.0]), q0 + np.array([[0.5], [1.0], [1.5]])))
    q = {}
    for k in range(1, 301):
        q[k] = arm.step_to(k / 100).joint_map()["q1"]
        mid = (k - 0.5) / 100
        assert arm.sim.param("q_ref_q1") == pytest.approx(q0 + 0.5 * mid, abs=1e-12), k
        assert arm.sim.param("qd_ref_q1") == pytest.approx(0.5, abs=1e-12), k
    assert (q[205] - q[195]) / 0.1 == pytest.approx(0.5, rel=0.01)


def test_velocities_make_a_segment_cubic_and_accelerations_quintic():
    names = ["a", "b"]
    pos = np.array([[0.2, 1.0], [1.0, -1.0], [0.4, 0.0]])
    vel = [[0.3, 0.0], [-0.5, 1.0], []]  # the last point without: its segment is linear
    acc = np.array([[1.0, 2.0], [-2.0, 0.5], [0.0, 0.0]])
    traj = JointTrajectory(names, np.array([0.0, 1.5, 2.5]), pos, vel, None, [acc[0], acc[1], []])
    sampler = TrajectorySampler(traj, start=2.0, now=2.0, q_now={})
    quintic = BPoly.from_derivatives([2.0, 3.5], [[pos[0], vel[0], acc[0]], [pos[1], vel[1], acc[1]]])
    for t in (2.0, 2.3, 3.1, 3.49):
        q, qd = sampler.sample(t)
        np.testing.assert_allclose(q, quintic(t), atol=1e-12)
        np.testing.assert_allclose(qd, quintic.derivative()(t), atol=1e-12)
    q, qd = sampler.sample(3.9)  # positions alone at the far end
    np.testing.assert_allclose(q, pos[1] + (pos[2] - pos[1]) * 0.4, atol=1e-12)
    np.testing.assert_allclose(qd, pos[2] - pos[1], atol=1e-12)

    cubic_traj = JointTrajectory(names, np.array([0.0, 1.5]), pos[:2], np.array(vel[:2]), None, [acc[0], []])
    cubic = CubicHermiteSpline([0.0, 1.5], pos[:2], np.array(vel[:2]), axis=0)
    sampler = TrajectorySampler(cubic_traj, start=0.0, now=0.0, q_now={})
    for t in (0.4, 1.2):
        np.testing.assert_allclose(sampler.sample(t)[0], cubic(t), atol=1e-12)
        np.testing.assert_allclose(sampler.sample(t)[1], cubic(t, 1), atol=1e-12)
    # after the last point: its positions and velocities, as the controller's sample gives them
    np.testing.assert_allclose(np.concatenate(sampler.sample(9.0)), [1.0, -1.0, -0.5, 1.0])


def test_before_the_first_point_the_joints_go_there_from_their_state_when_applied():
    """Applied at 10 s, first point at 12 s, from where the joint is: linear when the point has
    positions alone; cubic when it carries velocities, from the joint's velocity where the twin
    reports it, else from rest; quintic from rest (acceleration 0) when it carries accelerations,
    as joint_trajectory_controller fills the start state it does not measure."""
    positions = JointTrajectory(["a"], np.array([1.0]), np.array([[2.0]]))
    linear = TrajectorySampler(positions, start=11.0, now=10.0, q_now={"a": 1.0}, qd_now={"a": 0.2})
    assert [float(v[0]) for v in linear.sample(11.0)] == [1.5, 0.5]
    traj = JointTrajectory(["a"], np.array([1.0]), np.array([[2.0]]), np.array([[0.0]]))
    cubic = TrajectorySampler(traj, start=11.0, now=10.0, q_now={"a": 1.0}, qd_now={"a": 0.2})
    want = CubicHermiteSpline([10.0, 12.0], [1.0, 2.0], [0.2, 0.0])
    assert cubic.sample(11.0)[0][0] == pytest.approx(float(want(11.0)), abs=1e-14)
    from_rest = TrajectorySampler(traj, start=11.0, now=10.0, q_now={"a": 1.0})
    want = CubicHermiteSpline([10.0, 12.0], [1.0, 2.0], [0.0, 0.0])
    for t in (10.5, 11.0, 11.5):
        q, qd = from_rest.sample(t)
        assert (q[0], qd[0]) == pytest.approx((float(want(t)), float(want(t, 1))), abs=1e-14), t
    accel = JointTrajectory(["a"], np.array([1.0]), np.array([[2.0]]), np.array([[0.3]]),
                            accelerations=np.array([[-0.4]]))
    quintic = TrajectorySampler(accel, start=11.0, now=10.0, q_now={"a": 1.0})
    want = BPoly.from_derivatives([10.0, 12.0], [[1.0, 0.0, 0.0], [2.0, 0.3, -0.4]])
    for t in (10.5, 11.0, 11.5):
        q, qd = quintic.sample(t)
        assert (q[0], qd[0]) == pytest.approx((float(want(t)), float(want(t, 1))), abs=1e-13), t


def test_a_trajectory_stamped_in_the_past_is_joined_at_its_true_times(arm):
    """Stamped at 0 s (points at 0.5 s and 2 s), applied at 1 s: the reference is where the
    trajectory is at 1 s, not its first point restarted from there."""
    q0 = _fresh(arm)["q1"]
    arm.step_to(1.0)
    arm.set_joint_trajectory(JointTrajectory(["q1"], np.array([0.5, 2.0]), q0 + np.array([[0.1], [0.4]]), start=0.0))
    arm.step_to(1.01)
    assert arm.sim.param("q_ref_q1") == pytest.approx(q0 + 0.1 + 0.3 * (1.005 - 0.5) / 1.5, abs=1e-12)
    assert arm.sim.param("qd_ref_q1") == pytest.approx(0.2, abs=1e-12)
    # stamped ahead: from the joint now (1.01 s) to the first point at 2.51 s
    q_now = arm.state().joint_map()["q1"]
    arm.set_joint_trajectory(JointTrajectory(["q1"], np.array([0.5]), np.array([[q0 + 0.5]]), start=2.01))
    arm.step_to(1.02)
    assert arm.sim.param("q_ref_q1") == pytest.approx(q_now + (q0 + 0.5 - q_now) * 0.005 / 1.5, abs=1e-12)


def test_joints_a_trajectory_omits_are_held_where_commanded_at_rest(arm):
    """q1 moving, then a trajectory naming q2 only: q1 keeps its position reference
    and its velocity reference drops to 0 (joint_trajectory_controller's fill_partial_goal), so
    it stops where it was commanded instead of driving on."""
    q0 = _fresh(arm)
    arm.set_joint_trajectory(JointTrajectory(["q1", "q2", "q3"], np.array([1.0, 2.0]),
                                             np.array([[q0["q1"] + 0.5, q0["q2"], q0["q3"]],
                                                       [q0["q1"] + 1.0, q0["q2"], q0["q3"]]]),
                                             [np.array([0.8, 0.0, 0.0]), np.zeros(3)]))
    arm.step_to(1.2)
    q_ref = arm.sim.param("q_ref_q1")
    assert arm.sim.param("qd_ref_q1") > 0.3
    arm.set_joint_trajectory(JointTrajectory(["q2"], np.array([0.5]), np.array([[q0["q2"]]])))
    for t in (1.21, 1.5, 3.0, 5.0):
        arm.step_to(t)
        assert arm.sim.param("qd_ref_q1") == 0.0, t
        assert arm.sim.param("q_ref_q1") == q_ref, t
    assert arm.state().joint_map()["q1"] == pytest.approx(q_ref, abs=0.02)


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


@pytest.mark.parametrize("kwargs, says", [
    (dict(positions=[[0.0, math.nan]]), "point #0, joint b: position nan is not finite"),
    (dict(positions=[[0.0, 0.0], [0.0, 1e300]], times=[1.0, 2.0]), "point #1, joint b: position 1e+300 is beyond"),
    (dict(velocities=[[0.0, math.inf]]), "point #0, joint b: velocity inf is not finite"),
    (dict(velocities=[[0.0, 1e300]]), "point #0, joint b: velocity 1e+300 is beyond +-1e+06"),
    (dict(positions=[[0.0, 0.0], [1.0, 1.0]], times=[1.0, 1.0]),
     "time between points #0 and #1 is not strictly increasing (1 s, then 1 s)"),
    (dict(positions=[[0.0, 0.0], [1.0, 1.0]], times=[2.0, 1.0]), "not strictly increasing"),
    (dict(times=[-0.5]), "time_from_start of point #0 is -0.5 s"),
    (dict(names=["a", "a"]), "joint names repeat: ['a']"),
    (dict(positions=[[0.0, 0.0], [1.0, 1.0]], times=[1.0, 2.0], velocities=[[], [0.0]]),
     "point #1 has 1 velocities for 2 joints ['a', 'b']"),
    (dict(positions=[[0.0]]), "point #0 has 1 positions for 2 joints"),
    (dict(accelerations=[[0.0, 0.0]]), "point #0 has accelerations but no velocities"),
    (dict(names=[], positions=[[]]), "without joint names or points"),
])
def test_malformed_trajectories_are_refused_naming_the_point_and_joint(kwargs, says):
    kw = dict(names=["a", "b"], times=[1.0], positions=[[0.0, 0.0]], velocities=None, accelerations=None) | kwargs
    traj = JointTrajectory(kw["names"], np.array(kw["times"]), kw["positions"], kw["velocities"],
                           accelerations=kw["accelerations"])
    with pytest.raises(CommandError) as info:
        traj.check()
    assert says in str(info.value), str(info.value)


class _Arm:
    name = "arm"
    joint_names = ["q1", "q2", "q3"]
    trajectory_joints = ["q1", "q2", "q3"]


def _message(points, names=("q1", "q2"), stamp_s=0.0):
    """trajectory_msgs/JointTrajectory of (time, positions, velocities, extra fields) points."""
    msgs = pytest.importorskip("trajectory_msgs.msg", reason="ROS message packages not installed")
    msg = msgs.JointTrajectory(joint_names=list(names))
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp_s), int(round(stamp_s % 1 * 1e9))
    for t, pos, vel, extra in points:
        pt = msgs.JointTrajectoryPoint(positions=pos, velocities=vel, **extra)
        pt.time_from_start.sec, pt.time_from_start.nanosec = int(t), int(round(t % 1 * 1e9))
        msg.points.append(pt)
    return msg


@pytest.mark.parametrize("points, names, stamp_s, says", [
    ([(1.0, [math.nan, 0.0], [], {})], ("q1", "q2"), 0.0, "point #0, joint q1: position nan is not finite"),
    ([(1.0, [0.0, 0.0], [0.0, math.inf], {})], ("q1", "q2"), 0.0, "point #0, joint q2: velocity inf is not finite"),
    ([(1.0, [1e300, 0.0], [], {})], ("q1", "q2"), 0.0, "point #0, joint q1: position 1e+300 is beyond"),
    ([(1.0, [0.0, 0.0], [], {}), (1.0, [0.1, 0.1], [], {})], ("q1", "q2"), 0.0,
     "time between points #0 and #1 is not strictly increasing"),
    ([(1.0, [0.0, 0.0], [0.0, 0.0], {}), (2.0, [0.1, 0.1], [0.0], {})], ("q1", "q2"), 0.0,
     "point #1 has 1 velocities for 2 joints"),
    ([(1.0, [0.0, 0.2], [], {})], ("q1", "q1"), 0.0, "joint names repeat: ['q1']"),
    ([(1.0, [0.0, 0.2], [], {"effort": [1.0, 1.0]})], ("q1", "q2"), 0.0, "point #0 has effort values"),
    ([(0.5, [0.0, 0.2], [], {}), (2.0, [0.1, 0.2], [], {})], ("q1", "q2"), 7.0,
     "it ends at simulated 9.000 s, before now (10.000 s)"),
])
def test_a_trajectory_message_is_refused_on_receipt_naming_what_is_wrong(points, names, stamp_s, says):
    messages = pytest.importorskip("bondsim_ros.ros.messages", reason="rclpy not installed")
    with pytest.raises(CommandError) as info:
        messages.joint_trajectory(_message(points, names, stamp_s), _Arm(), lambda ns: ns * 1e-9, 10.0)
    assert says in str(info.value), str(info.value)


def test_a_trajectory_message_partly_in_the_past_keeps_its_stamp():
    messages = pytest.importorskip("bondsim_ros.ros.messages", reason="rclpy not installed")
    msg = _message([(0.5, [0.0, 0.2], [], {}), (2.0, [0.1, 0.2], [0.0, 0.0], {"accelerations": [0.0, 0.0]})],
                   stamp_s=9.0)
    traj = messages.joint_trajectory(msg, _Arm(), lambda ns: ns * 1e-9, 10.0)
    assert traj.start == pytest.approx(9.0) and traj.times.tolist() == [0.5, 2.0]
    assert traj.rows("velocities")[0] is None and traj.rows("accelerations")[1].tolist() == [0.0, 0.0]
    assert messages.joint_trajectory(_message([(1.0, [0.0, 0.2], [], {})]), _Arm(), None, 10.0).start is None


def test_long_trajectories_are_checked_at_once_or_refused():
    """Checked value by value, 100,000 points held the frame loop for a second and 12,000 joint
    names for as long (names.count per name); the refusal listed every name on one line."""
    import time

    from bondsim_ros.twin.protocol import MAX_TRAJECTORY_POINTS

    m = MAX_TRAJECTORY_POINTS
    ok = JointTrajectory(["q1"], np.arange(1, m + 1) * 1e-3, np.zeros((m, 1)))
    tic = time.perf_counter()
    ok.check()
    assert time.perf_counter() - tic < 0.5
    too_long = JointTrajectory(["q1"], np.arange(1, m + 2) * 1e-3, np.zeros((m + 1, 1)))
    with pytest.raises(CommandError, match=f"{m + 1} points: at most {m} in one trajectory"):
        too_long.check()
    names = [f"j{k}" for k in range(12_000)] + ["j5"]
    many = JointTrajectory(names, [1.0], np.zeros((1, len(names))))
    tic = time.perf_counter()
    with pytest.raises(CommandError) as exc:
        many.check()
    assert time.perf_counter() - tic < 0.5
    assert str(exc.value) == "joint names repeat: ['j5'] (each joint once)"
    bad = JointTrajectory(["a", "b"], [1.0, 2.0, 2.0], np.zeros((3, 2)))
    with pytest.raises(CommandError, match=r"points #1 and #2 is not strictly increasing \(2 s, then 2 s\)"):
        bad.check()
    worse = JointTrajectory(["a", "b"], [1.0, 2.0], [[0.0, 0.0], [0.0, math.nan]])
    with pytest.raises(CommandError, match=r"point #1, joint b: position nan is not finite"):
        worse.check()
