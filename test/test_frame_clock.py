"""The dynamics node's frame clock without rclpy: simulated time against a wall clock the test
drives, stamps that name the simulated instant and keep increasing, skipped timer periods and
overruns counted as the node reports them."""
import pytest

from bondsim_ros.ros.frame_clock import FrameClock


class Wall:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_simulated_time_runs_at_the_real_time_factor_and_holds_while_paused():
    wall = Wall()
    clock = FrameClock(2.0, use_sim_time=False, ros_now_ns=5_000_000_000, monotonic=wall)
    wall.t += 1.5
    assert clock.sim_time_now() == pytest.approx(3.0)
    clock.hold(3.0)
    clock.anchor(3.0, ros_now_ns=9_000_000_000)  # resumed 4 s of ROS time later
    wall.t += 0.5
    assert clock.sim_time_now() == pytest.approx(4.0)
    clock.set_real_time_factor(0.5, paused=False, ros_now_ns=10_000_000_000)
    wall.t += 2.0
    assert clock.sim_time_now() == pytest.approx(5.0)


def test_stamps_map_simulated_instants_to_ros_time_and_back_and_never_go_back():
    clock = FrameClock(2.0, use_sim_time=False, ros_now_ns=1_000_000_000, monotonic=Wall())
    assert clock.stamp_ns(0.0) == 1_000_000_000
    assert clock.stamp_ns(1.0) == 1_500_000_000  # 1 simulated s at x2 is half a second later
    assert clock.sim_time_of_stamp(1_500_000_000) == pytest.approx(1.0)
    clock.last_stamp_ns = clock.stamp_ns(1.0)
    clock.anchor(0.0, ros_now_ns=1_200_000_000)  # a reset whose ROS time is behind the last stamp
    assert clock.stamp_ns(0.0) == 1_500_000_001
    sim = FrameClock(3.0, use_sim_time=True, ros_now_ns=7, monotonic=Wall())
    assert sim.stamp_ns(2.5) == 2_500_000_000 and sim.sim_time_of_stamp(2_500_000_000) == 2.5


def test_a_new_factor_while_paused_keeps_the_stamps_of_the_next_steps_increasing():
    """Paused at t = 5 s after 5 s at x1, the factor set to 10: the next step's state (t = 5.3 s)
    was stamped from the old base under the new factor, 4.97 s before the last stamp."""
    wall = Wall()
    clock = FrameClock(1.0, use_sim_time=False, ros_now_ns=1_000_000_000_000, monotonic=wall)
    wall.t += 5.0
    clock.last_stamp_ns = clock.stamp_ns(5.0)
    clock.hold(5.0)
    wall.t += 2.0
    clock.set_real_time_factor(10.0, paused=True, ros_now_ns=1_007_000_000_000)
    assert clock.stamp_ns(5.3) > clock.last_stamp_ns
    assert clock.stamp_ns(5.3) - clock.stamp_ns(5.0) == 30_000_000  # 0.3 simulated s at x10


def test_a_lower_factor_goes_on_from_the_frame_computed_ahead():
    """At x5 with 30 ms frames the node has the frame at sim_time_now() + 0.15 s computed when the
    factor drops to 0.5: the clock goes on from that frame, so the next targets lie past it (not
    behind it for 0.3 s of frames that republish its state under one stamp)."""
    wall = Wall()
    clock = FrameClock(5.0, use_sim_time=True, monotonic=wall)
    wall.t += 1.0
    ahead = clock.sim_time_now() + 0.03 * 5.0
    clock.set_real_time_factor(0.5, paused=False, ros_now_ns=0, t_newest=ahead)
    wall.t += 0.03
    assert clock.sim_time_now() + 0.03 * 0.5 > ahead
    assert clock.sim_time_now() == pytest.approx(ahead + 0.015)
    clock.set_real_time_factor(2.0, paused=False, ros_now_ns=0, t_newest=0.0)  # nothing ahead: from now
    assert clock.sim_time_now() == pytest.approx(ahead + 0.015)


def test_skipped_periods_are_counted_on_the_timer_grid():
    clock = FrameClock(1.0, use_sim_time=False, monotonic=Wall())
    period = 30_000_000
    assert clock.count_skipped(1_000_000_000, period) == 0  # the first tick sets the grid
    assert clock.count_skipped(1_000_000_000 + period + 2_000_000, period) == 0  # jitter is no skip
    assert clock.count_skipped(1_000_000_000 + 5 * period, period) == 3
    assert clock.skipped_frames == 3
    clock.restart_grid()
    assert clock.count_skipped(7, period) == 0 and clock.skipped_frames == 3


def test_overruns_lag_and_the_worst_frame():
    clock = FrameClock(1.0, use_sim_time=False, monotonic=Wall())
    assert not clock.frame_done(0.010, 0.0, 0.030)
    assert clock.frame_done(0.040, 0.0, 0.030)  # took longer than a period
    assert clock.frame_done(0.005, 0.002, 0.030)  # late
    assert (clock.frames, clock.overruns, clock.max_lag) == (3, 2, 0.002)
    assert clock.take_worst() == 0.040 and clock.worst == 0.0
