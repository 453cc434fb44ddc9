"""The Twin protocol without ROS: both implementations satisfy it, step_to's contract, commands
refused by name (the trajectory interpolation: test_joint_trajectory.py)."""
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
    assert isinstance(RobotinoTwin("twist"), Twin)


def test_step_to_returns_the_last_state_for_earlier_times_and_ends_a_step_at_t():
    tw = load_robot(str(SLIDER_YAML)).make_twin()
    s1 = tw.step_to(0.5)
    assert tw.step_to(0.3).position[0] == s1.position[0] and tw.t == 0.5
    assert 0.0 <= tw.sim.solver.st[0] - 0.5 <= 1e-13  # the solver's last step ends at t
    s2 = tw.step_to(0.5 + 1e-7)
    assert s2.t == pytest.approx(0.5 + 1e-7, abs=0)


def test_commands_a_twin_does_not_take_are_refused_by_name():
    tw = load_robot(str(SLIDER_YAML)).make_twin()
    with pytest.raises(CommandError, match="no twist command"):
        tw.set_twist(0.1, 0.0, 0.0)
    with pytest.raises(CommandError, match="no joint trajectory"):
        tw.set_joint_trajectory(JointTrajectory(["slide"], np.array([1.0]), np.array([[0.1]])))
    with pytest.raises(CommandError, match="strictly increasing"):
        TrajectorySampler(JointTrajectory(["a"], np.array([1.0, 1.0]), np.array([[0.0], [1.0]])), 0.0, 0.0, {})


def _protocol_members() -> set:
    import typing

    return set(typing._get_protocol_attrs(Twin))  # noqa: SLF001 - the members isinstance checks


def test_the_dynamics_node_uses_only_the_twin_protocol():
    """Every ``self.twin.X`` and ``twin.X`` of the node and of the modules it hands its twin to
    is a protocol member, or one the protocol documents as optional, or PlacedTwin's
    ``set_pose``: any Twin runs in the node, whatever its class."""
    import ast
    import importlib
    import inspect

    optional = {"set_pose", "columns", "column", "param_topics", "check_params", "output_topics", "wheel_joints",
                "twist_for_wheel_speeds"}
    for name in ("ros.dynamics_node", "ros.state_topics", "ros.messages", "ros.joint_commands", "ros.model_io",
                 "ros.command_queue", "twin.failures"):
        source = inspect.getsource(importlib.import_module(f"bondsim_ros.{name}"))
        used = {node.attr for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.Attribute) and (
                    isinstance(node.value, ast.Attribute) and node.value.attr == "twin"
                    and isinstance(node.value.value, ast.Name) and node.value.value.id == "self"
                    or isinstance(node.value, ast.Name) and node.value.id == "twin")}
        assert used and used <= _protocol_members() | optional, (name, sorted(used - _protocol_members() - optional))
        assert "hasattr(self.twin" not in source and "hasattr(twin" not in source, name


def test_unknowns_and_motors_are_protocol_members_of_both_twins():
    from bondsim_ros.robots.robotino.twin import RobotinoTwin

    assert {"unknowns", "motor_names", "motor_states", "trajectory_joints"} <= _protocol_members()
    tw = load_robot(str(SLIDER_YAML)).make_twin()
    assert tw.unknowns == tw.compiled.n > 0 and tw.motor_names == ()
    names, *values = tw.motor_states(tw.state())
    assert names == [] and all(len(v) == 0 for v in values)
    rt = RobotinoTwin("twist")
    assert rt.unknowns == rt.compiled.n and rt.motor_names == ("motor1", "motor2", "motor3")
    names, pos, vel, eff = rt.motor_states(rt.state())
    assert names == ["motor1", "motor2", "motor3"] and len(pos) == len(vel) == len(eff) == 3


@pytest.mark.parametrize("robot", ["omni5dpo", "dualarm"])
def test_a_base_that_records_its_body_velocity_reports_it_at_any_heading(robot):
    """The 5DPO's and the commanded dual-arm's vx, vy, wz columns are in the base's own frame;
    taken as world-frame velocities they were turned by the heading once more: driving forward
    at 1 rad of yaw read as a body twist with a sideways vy of -0.84 vx."""
    from bondsim_ros.twin.protocol import world_twist

    tw = load_robot(robot).make_twin("twist")
    tw.set_twist(0.3, 0.0, 0.5)
    state = None
    for k in range(1, 121):  # 4 s at 30 Hz: a yaw of some 2 rad
        state = tw.step_to(k / 30.0)
    vx, vy, wz = state.twist_body
    assert abs(state.pose[2]) > 1.0
    assert (vx, vy, wz) == (tw.column("vx"), tw.column("vy"), tw.column("wz"))  # the model's own, this instant
    assert vx == pytest.approx(0.3, rel=0.05) and abs(vy) < 0.02 * abs(vx) and wz == pytest.approx(0.5, rel=0.05)
    assert state.twist_world == pytest.approx(world_twist(state.pose[2], vx, vy, wz), abs=1e-12)


def test_odometry_and_placement_beyond_the_world_bounds_are_refused():
    """A driver's odometry reset to x = 3e38 was taken: the odom frame then lay so far out that a
    pose set in it reached the world at -3e38, where a frame's motion is lost to rounding."""
    from bondsim_ros.twin.placement import WORLD_BOUND, OdometryOrigin
    from bondsim_ros.twin.protocol import CommandError

    origin = OdometryOrigin()
    with pytest.raises(CommandError, match=r"odometry: \(3e\+38, 0\) is beyond the world's bounds"):
        origin.reset((3e38, 0.0, 0.0), (0.0, 0.0, 0.0))
    assert origin.offset is None  # nothing taken
    origin.reset((WORLD_BOUND, -WORLD_BOUND, 0.5), (1.0, 2.0, 0.0))
    assert origin.to_odom((1.0, 2.0, 0.0)) == pytest.approx((WORLD_BOUND, -WORLD_BOUND, 0.5))
