"""The dynamics node's command queue without rclpy, on a real twin (a YAML model with a twist
command): the newest twist of a frame is applied, clamped to the limits in force, the watchdog
brings the twin to rest after cmd_vel_timeout simulated seconds, a refused command changes
nothing."""

import pytest

from bondsim_ros.robots import load_robot
from bondsim_ros.ros.command_queue import CommandQueue
from bondsim_ros.twin.protocol import CommandError, Limits


@pytest.fixture()
def twin():
    limits = Limits(max_linear=1.0, max_angular=3.0)
    return load_robot("omni5dpo").make_twin("twist", limits=limits)


def test_the_newest_twist_of_a_frame_is_applied_clamped(twin):
    q = CommandQueue(twin)
    q.twist(0.2, 0.0, 0.0)
    assert q.twist(3.0, 4.0, 9.0) == pytest.approx((0.6, 0.8, 3.0))  # |v| scaled to 1, wz clipped
    assert twin.twist == (0.0, 0.0, 0.0)  # nothing before the frame
    assert not q.apply(0.1, watchdog_timeout=0.5)
    assert twin.twist == pytest.approx((0.6, 0.8, 3.0))
    twin.limits.max_linear = 0.5
    q.limits_changed()
    q.apply(0.1, watchdog_timeout=0.5)
    assert twin.twist == pytest.approx((0.3, 0.4, 3.0))


def test_the_watchdog_counts_simulated_time_from_the_frame_that_applies_the_twist(twin):
    """The twist is in force from the instant of the frame applying it (t = 0.2 here, whenever
    it arrived) for exactly watchdog_timeout simulated seconds: the frame that spans t = 0.7 is
    split there. The wall clock does not enter: the same run twice gives the same pose."""
    def run():
        twin.reset()
        q = CommandQueue(twin)
        twin.step_to(0.2)
        q.twist(0.3, 0.0, 0.0)
        fired = []
        for k in range(2, 12):  # frames of 0.15 s: (0.3, 0.45], ..., (1.65, 1.8]
            target = 0.15 * k
            fired.append(q.apply(target, watchdog_timeout=0.5))
            if fired[-1]:
                assert twin.t == pytest.approx(0.7, abs=1e-12) and twin.twist == (0.0, 0.0, 0.0)
            twin.step_to(target)
        assert fired == [False] * 3 + [True] + [False] * 6  # once, in the frame (0.6, 0.75]
        return twin.state().pose

    twin.step_to(0.2)  # the same motion by hand: 0.3 m/s from 0.2 s to 0.7 s, then at rest
    twin.set_twist(0.3, 0.0, 0.0)
    twin.step_to(0.7)
    twin.set_twist(0.0, 0.0, 0.0)
    want = twin.step_to(1.65).pose
    first = run()
    print(f"pose {first}, by hand {want}")
    assert first == run()
    assert first == pytest.approx(want, abs=1e-5) and first[0] > 0.05


def test_the_watchdog_stops_once_and_not_without_a_timeout(twin):
    q = CommandQueue(twin)
    q.twist(0.3, 0.0, 0.0)
    assert not q.apply(0.4, watchdog_timeout=0.5)
    twin.step_to(0.4)
    assert q.apply(0.8, watchdog_timeout=0.5) and twin.t == 0.5 and twin.twist == (0.0, 0.0, 0.0)
    twin.step_to(0.8)
    assert not q.apply(1.5, watchdog_timeout=0.5)  # once
    q.twist(0.3, 0.0, 0.0)
    q.apply(1.5, watchdog_timeout=None)  # no watchdog (waypoints, a trajectory): the command stays
    twin.step_to(5.0)
    assert not q.apply(6.0, watchdog_timeout=None) and twin.twist == pytest.approx((0.3, 0.0, 0.0))


def test_a_lowered_timeout_stops_the_command_at_the_frame_and_a_new_command_restarts_it(twin):
    q = CommandQueue(twin)
    q.twist(0.3, 0.0, 0.0)
    q.apply(0.5, watchdog_timeout=5.0)
    twin.step_to(2.0)
    assert q.apply(2.5, watchdog_timeout=1.0) and twin.t == 2.0  # ran out at 1.0: stops where the twin is
    q.twist(0.2, 0.0, 0.0)
    twin.step_to(3.0)  # received at 2.0, applied by the frame at 3.0: in force until 4.0
    assert not q.apply(3.9, watchdog_timeout=1.0) and twin.twist == pytest.approx((0.2, 0.0, 0.0))
    twin.step_to(3.9)
    q.twist(0.25, 0.0, 0.0)  # a newer command before it ran out: in force from 3.9
    assert not q.apply(4.5, watchdog_timeout=1.0)
    twin.step_to(4.5)
    assert q.apply(5.0, watchdog_timeout=1.0) and twin.t == pytest.approx(4.9)


@pytest.mark.parametrize("off", [1e-12, -1e-12])
def test_a_stop_within_a_microsecond_of_the_frame_is_made_at_the_frame(twin, off):
    """A split a few ulps from the frame's instant would leave a sub-step below the solver's
    smallest step: the twin steps to the frame's instant and stops there."""
    twin.reset()
    q = CommandQueue(twin)
    q.twist(0.3, 0.0, 0.0)
    q.apply(0.25, watchdog_timeout=0.5)
    twin.step_to(0.25)
    target = 0.5 + off
    assert q.apply(target, watchdog_timeout=0.5) and twin.t == target and twin.twist == (0.0, 0.0, 0.0)


def test_clear_forgets_every_command(twin):
    q = CommandQueue(twin)
    q.twist(0.3, 0.0, 0.0)
    q.apply(0.1, watchdog_timeout=0.5)
    q.twist(0.4, 0.0, 0.0)
    q.clear()
    twin.reset()
    q.limits_changed()  # nothing in force to clamp anew
    assert not q.apply(5.0, watchdog_timeout=0.5) and twin.twist == (0.0, 0.0, 0.0)


def test_a_refused_twist_changes_nothing_and_stop_drops_the_command(twin):
    q = CommandQueue(twin)
    q.twist(0.3, 0.0, 0.0)
    with pytest.raises(CommandError, match="not finite"):
        q.twist(float("nan"), 0.0, 0.0)
    assert q.next_twist == pytest.approx((0.3, 0.0, 0.0))
    q.stop()
    q.limits_changed()  # no command in force: nothing to clamp anew
    assert not q.apply(0.1, watchdog_timeout=0.5)
    assert twin.twist == (0.0, 0.0, 0.0) and q.last_raw is None and q.since is None
