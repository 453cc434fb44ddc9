"""Joint commands received by the node, without rclpy: accepted ones queued for the next frame
(positions as a held set point with the velocities beside them as its velocity references, wheel
speeds as the base's twist), refused ones counted with the reason, nothing queued."""
import math

import numpy as np
import pytest

from bondsim_ros.ros.joint_commands import JointCommandError, JointCommands, parse
from bondsim_ros.twin.protocol import CommandError


class Twin:
    name = "demo"
    joint_names = ["a", "b", "c", "w1", "w2"]
    commands = frozenset({"trajectory", "twist"})
    trajectory_joints = ["a", "b"]
    velocity_reference_joints = ["a"]  # b's servo has no rate input
    wheel_joints = ("w1", "w2")

    @staticmethod
    def twist_for_wheel_speeds(speeds):
        return (0.5 * (speeds[0] + speeds[1]), 0.0, speeds[1] - speeds[0])

    @staticmethod
    def limit_twist(vx, vy, wz):
        if vx > 10.0:
            raise CommandError(f"vx {vx} beyond what the base can do")
        return vx, vy, wz


class Queue:
    def __init__(self):
        self.twists, self.trajectories = [], []

    def twist(self, *t):
        self.twists.append(t)

    def trajectory(self, traj):
        self.trajectories.append(traj)


def test_positions_become_a_held_set_point_and_wheel_speeds_a_twist():
    q = Queue()
    jc = JointCommands(Twin(), q, twist_allowed=True, monotonic=lambda: 3.0)
    jc.receive(["a", "b"], [0.1, math.nan], [], [])
    (traj,) = q.trajectories
    assert traj.joint_names == ["a"] and traj.times.tolist() == [0.0]
    np.testing.assert_array_equal(traj.positions, [[0.1]])
    jc.receive(["w1", "w2"], [], [1.0, 3.0], [])
    assert q.twists == [(2.0, 0.0, 2.0)]
    assert (jc.accepted, jc.refused, jc.last_refusal) == (2, 0, None)


@pytest.mark.parametrize("fields, error, says", [
    ((["x"], [0.0], [], []), JointCommandError, "unknown joints ['x']"),
    ((["w1", "w2"], [], [30.0, 30.0], []), CommandError, "beyond what the base can do"),
])
def test_a_refused_command_is_counted_with_its_reason_and_queues_nothing(fields, error, says):
    q = Queue()
    jc = JointCommands(Twin(), q, twist_allowed=True, monotonic=lambda: 7.5)
    with pytest.raises(error, match=says.replace("[", r"\[").replace("]", r"\]")):
        jc.receive(*fields)
    assert (jc.accepted, jc.refused, jc.wall) == (0, 1, 7.5)
    assert jc.last_refusal.startswith("refused: ") and says in jc.last_refusal
    assert not q.twists and not q.trajectories


def test_wheel_speeds_need_the_cmd_vel_reference():
    jc = JointCommands(Twin(), Queue(), twist_allowed=False)
    with pytest.raises(JointCommandError, match="reference cmd_vel"):
        jc.receive(["w1", "w2"], [], [1.0, 3.0], [])
    assert jc.refused == 1 and jc.wall > -math.inf


@pytest.mark.parametrize("fields, says", [
    (dict(names=[]), "no joint names"),
    (dict(names=["a", "a"], position=[0.0, 0.0]), "repeat"),
    (dict(names=["a", "x"], position=[0.0, 0.0]), "unknown joints ['x']"),
    (dict(names=["a", "b"], position=[0.0]), "position has 1 entries for 2 names"),
    (dict(names=["a"], position=[math.inf]), "position of a is inf"),
    (dict(names=["a"], effort=[1.0]), "no effort inputs"),
    (dict(names=["w1"], position=[0.0]), "which demo does not drive"),
    (dict(names=["c"], velocity=[1.0]), "only the wheels"),
    (dict(names=["a"], position=[1e300]), "position of a is 1e+300, beyond +-1e+06"),
    (dict(names=["a", "b"], velocity=[1.0, 0.0]), "velocity commands for ['a', 'b'] without positions"),
    (dict(names=["a", "b"], position=[0.1, 0.2], velocity=[1.0, 0.0]),
     "velocity commands for ['b']: demo binds no velocity reference for them"),
    (dict(names=["w1", "w2"], velocity=[1.0, math.nan]), "without ['w2']"),
])
def test_parse_refuses_with_the_reason(fields, says):
    kw = {"position": [], "velocity": [], "effort": [], **{k: v for k, v in fields.items() if k != "names"}}
    with pytest.raises(JointCommandError) as info:
        parse(fields["names"], kw["position"], kw["velocity"], kw["effort"], Twin())
    assert says in str(info.value)


def test_parse_takes_positions_and_wheel_speeds():
    cmd = parse(["a", "b"], [0.1, math.nan], [], [], Twin())
    assert cmd.positions == {"a": 0.1} and cmd.twist is None
    cmd = parse(["w1", "w2"], [], [1.0, 3.0], [], Twin())
    assert cmd.positions is None and cmd.twist == (2.0, 0.0, 2.0)
    with pytest.raises(JointCommandError, match="reference cmd_vel"):
        parse(["w1", "w2"], [], [1.0, 3.0], [], Twin(), twist_allowed=False)


def test_velocities_beside_positions_are_the_velocity_references():
    """Command interfaces position and velocity (a joint_trajectory_controller's samples through
    the topic-based hardware): a set point with its velocity, held; a joint left NaN gets 0."""
    cmd = parse(["a", "b"], [0.1, 0.2], [0.5, math.nan], [], Twin())
    assert cmd.positions == {"a": 0.1, "b": 0.2} and cmd.velocities == {"a": 0.5} and cmd.twist is None
    q = Queue()
    JointCommands(Twin(), q, twist_allowed=False).receive(["a", "b"], [0.1, 0.2], [0.5, math.nan], [])
    (traj,) = q.trajectories
    assert traj.joint_names == ["a", "b"] and traj.times.tolist() == [0.0]
    np.testing.assert_array_equal(traj.velocities, [[0.5, 0.0]])


def test_a_velocity_reference_reaches_the_servo_and_is_held():
    from bondsim_ros.robots import load_robot
    from bondsim_ros.ros.command_queue import CommandQueue

    arm = load_robot("arm3dof").make_twin("trajectory")
    queue = CommandQueue(arm)
    q = arm.state().joint_map()
    JointCommands(arm, queue, twist_allowed=False).receive(["q1", "q2", "q3"], [q["q1"] + 0.01, q["q2"], q["q3"]],
                                                           [0.2, 0.0, 0.0], [])
    queue.apply(arm.t, None)
    for k in range(1, 4):
        arm.step_to(k / 33)
        assert arm.sim.param("q_ref_q1") == q["q1"] + 0.01 and arm.sim.param("qd_ref_q1") == 0.2


def test_wheel_speeds_refused_name_what_the_twin_lacks():
    """A base with a twist command but no inverse kinematics (a YAML model's) was told it lacked
    "both"; the refusal names the one piece missing."""

    class NoKinematics(Twin):
        wheel_joints = ()

    class NoTwist(Twin):
        commands = frozenset({"trajectory"})

    for twin, lacks, not_said in ((NoKinematics(), "lacks its base's inverse kinematics", "a twist command"),
                                  (NoTwist(), "lacks a twist command", "inverse kinematics (")):
        with pytest.raises(JointCommandError) as info:
            parse(["w1", "w2"], [], [1.0, 1.0], [], twin)
        assert lacks in str(info.value) and not_said not in str(info.value), str(info.value)
