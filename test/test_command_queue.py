"""The dynamics node's command queue without rclpy, on a real twin (a YAML model with a twist
command): the newest twist of a frame is applied, clamped to the limits in force, the watchdog
brings the twin to rest, a refused command changes nothing."""

import pytest

from bondsim_ros.robots import load_robot
from bondsim_ros.ros.command_queue import CommandQueue
from bondsim_ros.twin.protocol import CommandError, Limits



class Wall:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@pytest.fixture()
def twin():
    limits = Limits(max_linear=1.0, max_angular=3.0)
    return load_robot("omni5dpo").make_twin("twist", limits=limits)


def test_the_newest_twist_of_a_frame_is_applied_clamped(twin):
    wall = Wall()
    q = CommandQueue(twin, monotonic=wall)
    q.twist(0.2, 0.0, 0.0)
    assert q.twist(3.0, 4.0, 9.0) == pytest.approx((0.6, 0.8, 3.0))  # |v| scaled to 1, wz clipped
    assert twin.twist == (0.0, 0.0, 0.0)  # nothing before the frame
    assert not q.apply(watchdog_timeout=0.5)
    assert twin.twist == pytest.approx((0.6, 0.8, 3.0))
    twin.limits.max_linear = 0.5
    q.limits_changed()
    q.apply(watchdog_timeout=0.5)
    assert twin.twist == pytest.approx((0.3, 0.4, 3.0))


def test_the_watchdog_brings_the_twin_to_rest_once(twin):
    wall = Wall()
    q = CommandQueue(twin, monotonic=wall)
    q.twist(0.3, 0.0, 0.0)
    q.apply(watchdog_timeout=0.5)
    wall.t = 0.4
    assert not q.apply(watchdog_timeout=0.5) and twin.twist == pytest.approx((0.3, 0.0, 0.0))
    wall.t = 0.6
    assert q.apply(watchdog_timeout=0.5) and twin.twist == (0.0, 0.0, 0.0)
    assert not q.apply(watchdog_timeout=0.5)  # once
    q.twist(0.3, 0.0, 0.0)
    wall.t = 5.0
    q.apply(watchdog_timeout=None)  # no watchdog (waypoints, a trajectory): the command stays
    assert twin.twist == pytest.approx((0.3, 0.0, 0.0))


def test_a_refused_twist_changes_nothing_and_stop_drops_the_command(twin):
    q = CommandQueue(twin, monotonic=Wall())
    q.twist(0.3, 0.0, 0.0)
    with pytest.raises(CommandError, match="not finite"):
        q.twist(float("nan"), 0.0, 0.0)
    assert q.next_twist == pytest.approx((0.3, 0.0, 0.0))
    q.stop()
    q.limits_changed()  # no command in force: nothing to clamp anew
    q.apply(watchdog_timeout=0.5)
    assert twin.twist == (0.0, 0.0, 0.0) and q.last_wall is None
