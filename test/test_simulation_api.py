"""The Python API used as a script would use it, wrongly: every misuse is an exception that
names what was wrong, and no call answers with numbers computed from a failed state."""
import math

import numpy as np
import pytest

from bondsim_ros.bondgraph import C, EffortJunction, Model, R, Se, compile_model
from bondsim_ros.bondgraph.simulation import Simulation
from bondsim_ros.fit.core import FitError, FitProblem, LogData
from bondsim_ros.solver import SolverError, StepSizeUnderflow


def tangent():
    """q' = 1 + q^2 from q = 0: q = tan(t), which leaves every bound at pi/2."""
    m = Model("tan")
    j = m.add(EffortJunction("j"))
    m.add(Se("E", 1.0), R("r", 1.0), C("x", effort="-q**2", q0=0.0))
    m.bond("E", j)
    m.bond(j, "r")
    m.bond(j, "x")
    return compile_model(m)


def rc():
    m = Model("rc")
    j = m.add(EffortJunction("j"))
    m.add(Se("E", 3.0), R("r", 2.0), C("c", 0.5))
    m.bond("E", j)
    m.bond(j, "r")
    m.bond(j, "c")
    return compile_model(m)


def test_after_a_failed_advance_no_answer_comes_from_the_failed_state():
    """An output time before the failure, after the last one answered, came back as -5.7e77
    (the failed step's polynomial) without a word; a restart from the last output answers it."""
    sim = Simulation(tangent())
    assert sim.advance([0.5])[0, 1] == pytest.approx(math.tan(0.5), rel=1e-5)
    with pytest.raises(StepSizeUnderflow):
        sim.advance([2.0])
    with pytest.raises(SolverError, match=r"^the last advance failed \(step size underflow at t=1\.57.*restart"):
        sim.advance([0.9])
    sim.restart()
    assert sim.advance([0.9])[0, 1] == pytest.approx(math.tan(0.9), rel=1e-5)


@pytest.mark.parametrize("call, error, says", [
    (lambda: Simulation(rc()).outputs_at(0.0, np.array([1.0, 2.0]), np.array([])), ValueError,
     r"one value per unknown of the model \(1\), got 2 and 0"),
    (lambda: Simulation(rc()).advance([1.0, 2.0], tstop=1.5), ValueError, r"output time 2\.0 is past tstop 1\.5"),
    (lambda: Simulation("rc"), TypeError, r"needs a Model or a CompiledModel, got str 'rc'"),
    (lambda: Simulation(rc(), y0={"c.q": float("nan")}), ValueError,
     r"y0 'c\.q': an initial value must be a finite number, got nan"),
])
def test_a_misuse_is_an_error_naming_it(call, error, says):
    with pytest.raises(error, match=says):
        call()


def test_a_fit_output_the_model_lacks_lists_the_ones_it_has():
    """A model that records nothing has its states as outputs: the list named none of them."""
    m = Model("rc")
    m.parameters["R1"] = 2.0
    j = m.add(EffortJunction("j"))
    m.add(Se("E", 3.0), R("r", "R1"), C("c", 0.5))
    m.bond("E", j)
    m.bond(j, "r")
    m.bond(j, "c")
    t = np.linspace(0.0, 2.0, 21)
    data = LogData(["t", "c.q"], np.column_stack([t, 1.5 * (1 - np.exp(-t))]))
    with pytest.raises(FitError, match=r"has no output column 'nope' \(has: c\.q\)$"):
        FitProblem(compile_model(m), data, params=["R1"], outputs=["nope"])


def test_simulate_reports_its_progress_to_a_callback_and_draws_nothing_itself(capsys):
    """The engine takes a progress callback (the command line's bar moves with it); it prints
    nothing of its own."""
    from bondsim_ros.bondgraph.simulation import simulate

    seen = []
    result = simulate(rc(), t_end=5.0, dt_out=0.01, progress=seen.append)
    assert seen and seen == sorted(seen) and seen[-1] == pytest.approx(5.0)
    assert result.t[-1] == 5.0
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
