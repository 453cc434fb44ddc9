"""step_to(t) for any t at or after the last output (a late timer tick: the solver is already
past t), and a twin that survives quickly changing in-limit commands (issue 12 item 5, issue 15)."""
import math

import numpy as np
import pytest

from bondsim_ros.solver import BDFSolver, DAEProblem, jacobian_kernel, residual_kernel


@residual_kernel
def decay_res(t, y, yp, p, out):
    out[0] = yp[0] + y[0]


@jacobian_kernel
def decay_jac(t, y, yp, p, cj, vals):
    vals[0] = 1.0 + cj


def decay_solver():
    problem = DAEProblem(decay_res, decay_jac, np.array([0, 1], dtype=np.int64), np.array([0], dtype=np.int64),
                         np.ones(1, bool), np.zeros(1), ["y"])
    s = BDFSolver(problem, rtol=1e-8, atol=1e-10, hmax=0.05)
    s.init(0.0, [1.0])
    return s


def test_solver_answers_an_output_time_it_has_already_stepped_past():
    s = decay_solver()
    s.advance([0.1])
    t_solver = s.st[0]
    assert t_solver > 0.1 + 1e-6, "the integrator did not step past the output: the test proves nothing"
    t_late = 0.1 + 0.5 * (t_solver - 0.1)  # after the last output, before the solver's own time
    Y, YP = s.advance([t_late])
    assert Y[0, 0] == pytest.approx(math.exp(-t_late), rel=1e-6)
    assert YP[0, 0] == pytest.approx(-math.exp(-t_late), rel=1e-4)
    # and it goes on from there as before
    Y, _ = s.advance([0.5])
    assert Y[0, 0] == pytest.approx(math.exp(-0.5), rel=1e-6)
    # before the last output is still refused, by name
    with pytest.raises(ValueError, match="before the last output time"):
        s.advance([0.4])


@pytest.fixture(scope="module")
def twin():
    from bondsim_ros.robots.robotino.twin import RobotinoTwin

    return RobotinoTwin(reference="twist")


def test_twin_step_to_a_time_the_solver_is_past(twin):
    twin.reset()
    twin.set_command(0.3, 0.1, 0.5)
    s1 = twin.step_to(0.5)
    solver = twin.sim.solver
    # what a late tick asks: the solver ends its steps at each output time, so put it past
    # the last output the way an interleaved interpolating call would
    solver.advance([0.5 + 0.3 * solver.hmax])
    solver.t = 0.5  # the last output time of the twin; the solver itself is at 0.506
    twin.t = 0.5
    assert solver.st[0] > 0.5
    t0 = 0.5 + 0.1 * solver.hmax
    s0 = twin.step_to(t0)  # raised ValueError "before the current time" before the fix
    assert s0.t == t0
    assert s0.pose[0] > s1.pose[0]  # still moving forward at 0.3 m/s
    assert np.all(np.isfinite(s0.position))


def test_twin_outputs_are_step_points_at_the_requested_times(twin):
    twin.reset()
    twin.set_command(0.2, 0.0, 0.0)
    for t in (0.03, 0.061, 0.09):
        st = twin.step_to(t)
        assert st.t == t
        # the integrator ended a step (to within a few ulps) at the output time
        assert 0.0 <= twin.sim.solver.st[0] - t <= 1e-13


def test_random_in_limit_commands_at_100_hz_do_not_underflow(twin):
    """Seeds 1 and 2 ended in StepSizeUnderflow at t = 14.6 s and 45.9 s before the twin took
    its outputs at step points (restarts from interpolated states broke the rolling
    constraints); bounded here to 16 s of simulated time."""
    twin.reset()
    rng = np.random.default_rng(1)
    t = 0.0
    while t < 16.0:
        twin.set_command(*(rng.uniform(-1, 1, 3) * np.array([0.7, 0.7, 3.0])))
        t += 0.01 * rng.uniform(0.5, 1.5)
        state = twin.step_to(t)
    assert state.t == t and np.all(np.isfinite(state.position))
