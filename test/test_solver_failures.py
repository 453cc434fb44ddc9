"""What the node does when the model fails, without rclpy: the first failure restarts from the
last good state, a second in a row or a failed restart resets the twin; the report says which."""
import math

import pytest

from bondsim_ros.twin.failures import SolverFailures


class Twin:
    def __init__(self, recover_fails=False):
        self.recover_fails = recover_fails
        self.calls = []

    def recover(self):
        self.calls.append("recover")
        if self.recover_fails:
            raise RuntimeError("no consistent state")
        return "restarted from t=1.000 s"

    def reset(self):
        self.calls.append("reset")


class Wall:
    t = 50.0

    def __call__(self):
        return self.t


def test_a_failure_recovers_and_a_second_in_a_row_resets():
    wall, twin = Wall(), Twin()
    f = SolverFailures(monotonic=wall)
    assert (f.count, f.last, f.age()) == (0, None, math.inf)
    assert f.failed(twin, ValueError("step size too small"), "stepping to t=1.030 s") is False
    assert twin.calls == ["recover"]
    assert f.last == "ValueError while stepping to t=1.030 s: step size too small; twin restarted from t=1.000 s"
    wall.t += 2.0
    assert f.age() == pytest.approx(2.0)
    assert f.failed(twin, ValueError("again"), "stepping to t=1.030 s") is True
    assert twin.calls == ["recover", "reset"] and f.count == 2
    assert f.last.endswith("twin reset to the initial state (the restart from the last state failed too)")
    f.succeeded()  # a good step between failures: the next one restarts again
    assert f.failed(twin, ValueError("once more"), "reset") is False and f.count == 3


def test_a_restart_that_fails_resets_and_says_why():
    twin = Twin(recover_fails=True)
    f = SolverFailures(monotonic=Wall())
    assert f.failed(twin, ArithmeticError("nan"), "stepping to t=2.000 s") is True
    assert twin.calls == ["recover", "reset"]
    assert f.last == ("ArithmeticError while stepping to t=2.000 s: nan; twin reset to the initial state "
                      "(recovery failed: RuntimeError: no consistent state)")
