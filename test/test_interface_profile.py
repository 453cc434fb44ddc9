"""Interface profiles without ROS: the velocity limits and the bumper stop's timing, against
robocup-logistics/ros2-robotino's OmniDriveROS.cpp (commit dc2883a2dbc6231b5364f3ab0800133ab8b762f3),
the timing on a clock the test sets.

The driver's bumperCallback starts a hold on a contact message (data true) when neither of its
two states is set; its timer (period bumper_timeout) ends the hold at the first firing and
re-arms the bumper at the second, one period later."""
import math

import pytest

from bondsim_ros.twin.interface_profile import BumperHold, VelocityLimits


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _at(clock, bumper, t):
    clock.now = 100.0 + t
    return bumper.holding()


def test_a_contact_holds_for_the_timeout_and_contacts_count_again_a_timeout_later():
    clock = Clock()
    bumper = BumperHold(clock)
    assert not bumper.holding()
    assert bumper.contact(2.0)  # t = 0: the hold starts
    assert _at(clock, bumper, 1.99)
    assert not bumper.contact(2.0)  # in the hold: ignored, the hold is not restarted
    assert not _at(clock, bumper, 2.0)  # ended at 2 s, not 2 s after the last contact
    # released and pressed again one timeout after the hold: still ignored, the robot may back away
    clock.now = 100.0 + 3.9
    assert not bumper.contact(2.0) and not bumper.holding()
    # re-armed at 2 x timeout: a contact message stops it again (still pressed: no release needed)
    clock.now = 100.0 + 4.0
    assert bumper.contact(2.0)
    assert _at(clock, bumper, 5.99) and not _at(clock, bumper, 6.0)
    clock.now = 100.0 + 7.9
    assert not bumper.contact(2.0)
    clock.now = 100.0 + 8.0
    assert bumper.contact(2.0)


@pytest.mark.parametrize("timeout", [0.0, -1.0])
def test_bumper_timeout_zero_or_less_turns_the_stop_off(timeout):
    bumper = BumperHold(Clock())
    assert not bumper.contact(timeout) and not bumper.holding()


def _driver(v, low, high):
    """OmniDriveROS::cmdVelCallback on one component: if |v| > max ... else if |v| < min and |v| > 0."""
    if math.fabs(v) > high:
        return high if v > 0.0 else -high
    elif math.fabs(v) < low and math.fabs(v) > 0.0:
        return low if v > 0.0 else -low
    return v


@pytest.mark.parametrize("limits", [(3.0, 0.02, 3.0, 0.07),  # RTONode's defaults
                                    (0.1, 0.5, 0.2, 1.0)])  # minimum above maximum: the else-if decides
@pytest.mark.parametrize("command", [(0.01, -0.01, 0.03), (4.0, -5.0, -3.5), (0.0, 0.3, -0.05), (0.05, -0.2, 0.15),
                                     (0.5, -0.5, 1.0), (-0.0, 0.0, 0.0)])
def test_velocity_limits_are_the_driver_s_per_component(limits, command):
    max_lin, min_lin, max_ang, min_ang = limits
    expected = (_driver(command[0], min_lin, max_lin), _driver(command[1], min_lin, max_lin),
                _driver(command[2], min_ang, max_ang))
    assert VelocityLimits(*limits).apply(*command) == expected


def test_a_minimum_above_the_maximum_raises_small_components_past_the_maximum():
    """The driver checks the maximum first: with max 0.1 and min 0.5 a command of 0.05 becomes
    0.5, one of 0.2 becomes 0.1."""
    assert VelocityLimits(0.1, 0.5, 0.2, 1.0).apply(0.05, 0.2, -0.1) == (0.5, 0.1, -1.0)
