"""An initial value given for a state that the model's constraints fix (an element in
derivative causality) is the answer the user asked for, not a guess: a capacitor across an
effort source has q = C e whatever ``q0`` says, an inertia driven by a flow source has p = I f
whatever ``f0`` says. Such a start is refused, naming the value given and the one the
constraints allow; a value equal to it, or none, runs."""
import textwrap

import numpy as np
import pytest

from bondsim_ros.bondgraph import C, EffortJunction, FlowJunction, I, Model, R, Se, Sf, compile_model
from bondsim_ros.bondgraph.simulation import Simulation
from bondsim_ros.cli import main
from bondsim_ros.solver import InconsistentInitialValues, SolverOptions


def capacitor_across_source(q0=None, effort=2.0, capacitance=0.5):
    """Se -> 0-junction -> C and R in parallel: the junction's effort is the source's, so
    q = C e at every instant (q0 cannot choose it)."""
    model = Model("c_across_se", "a capacitor across an effort source")
    model.parameters["E0"] = effort
    j = model.add(FlowJunction("j"))
    model.add(Se("E", "E0"), C("c", capacitance, **({} if q0 is None else {"q0": q0})), R("r", 1.0))
    for name in ("E", "c", "r"):
        model.bond(name, j) if name == "E" else model.bond(j, name)
    return model


def inertia_on_flow_source(f0=None, flow=1.5, inertia=2.0):
    """Sf -> 1-junction -> I and R in series: the junction's flow is the source's, p = I f."""
    model = Model("i_on_sf", "an inertia driven by a flow source")
    j = model.add(EffortJunction("j"))
    model.add(Sf("F", flow), I("m", inertia, **({} if f0 is None else {"f0": f0})), R("r", 1.0))
    model.bond("F", j)
    model.bond(j, "m")
    model.bond(j, "r")
    return model


def start_of(model, **kw):
    sim = Simulation(compile_model(model), **kw)
    return dict(zip(sim.compiled.var_names, sim.solver.y))


def test_a_capacitor_charge_the_source_contradicts_is_refused_naming_both_values():
    with pytest.raises(InconsistentInitialValues) as err:
        start_of(capacitor_across_source(q0=5.0))
    text = str(err.value)
    assert text.startswith("c: q0 = 5 cannot hold")
    assert "fix c.q at 1 at t=0" in text  # q = C e = 0.5 * 2
    assert "give 1" in text


def test_a_flow_the_source_contradicts_is_refused_in_the_users_terms():
    with pytest.raises(InconsistentInitialValues) as err:
        start_of(inertia_on_flow_source(f0=4.0))
    assert str(err.value).startswith("m: f0 = 4 (p = 8) cannot hold")
    assert "fix m.p at 3 at t=0" in str(err.value)  # p = I f = 2 * 1.5


@pytest.mark.parametrize("q0", [None, 1.0, 1.0 + 1e-9])
def test_no_initial_value_or_the_consistent_one_runs_from_the_constraint(q0):
    assert start_of(capacitor_across_source(q0=q0))["c.q"] == pytest.approx(1.0, rel=1e-12)


def test_a_small_initial_value_is_held_to_the_absolute_tolerance():
    """q = C e = 5e-10 (a 0.5 nF capacitor at 1 V): q0 = 5e-8 is a hundred times that, which
    a test relative to 1 would pass; the solver's atol (1e-11 here) does not."""
    with pytest.raises(InconsistentInitialValues, match=r"^c: q0 = 5e-08 cannot hold.*fix c.q at 5e-10"):
        start_of(capacitor_across_source(q0=5e-8, effort=1.0, capacitance=5e-10),
                 options=SolverOptions(atol=1e-11))
    start_of(capacitor_across_source(q0=5e-10, effort=1.0, capacitance=5e-10), options=SolverOptions(atol=1e-11))


def test_an_integral_causality_capacitor_keeps_its_initial_value():
    """The same capacitor behind a resistor is a state of its own: q0 is its start."""
    model = Model("rc", "source, resistor and capacitor in series")
    j = model.add(EffortJunction("j"))
    model.add(Se("E", 2.0), R("r", 1.0), C("c", 0.5, q0=5.0))
    model.bond("E", j)
    model.bond(j, "r")
    model.bond(j, "c")
    sim = Simulation(compile_model(model))
    assert sim.solver.y[sim.compiled.var_names.index("c.q")] == 5.0


def test_a_y0_given_through_the_api_is_held_to_the_same_rule():
    compiled = compile_model(capacitor_across_source(q0=1.0))
    with pytest.raises(InconsistentInitialValues, match=r"^y0 'c.q' = 7 cannot hold"):
        Simulation(compiled, y0={"c.q": 7.0})


def test_a_reset_whose_parameters_move_the_constraint_is_refused():
    """A fit or a sweep changes E0 between runs: q0 = 1 holds for E0 = 2 only."""
    sim = Simulation(compile_model(capacitor_across_source(q0=1.0)))
    with pytest.raises(InconsistentInitialValues, match=r"^c: q0 = 1 cannot hold.*fix c.q at 1.5"):
        sim.reset(params={"E0": 3.0})
    sim.reset(params={"E0": 2.0})
    assert sim.solver.y[0] == pytest.approx(1.0)


def test_the_command_line_refuses_it_with_status_2_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent("""
        model: m
        components:
          E: {type: Se, effort: 2.0}
          j: {type: FlowJunction}
          c: {type: C, capacitance: 1.0, q0: 5.0}
          r: {type: R, resistance: 1.0}
        bonds: [[E, j], [j, c], [j, r]]
        """).lstrip())
    out = tmp_path / "out.csv"
    rc = main(["simulate", str(path), "--t-end", "1", "--dt-out", "0.5", "-q", "--csv", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"error: {path}:5: simulation failed: c: q0 = 5 cannot hold: the constraints of the model fix c.q at 2" \
        in err
    assert "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == [path]
    path.write_text(path.read_text().replace("q0: 5.0", "q0: 2.0"))
    assert main(["simulate", str(path), "--t-end", "1", "--dt-out", "0.5", "-q", "--csv", str(out)]) == 0
    assert np.loadtxt(out, delimiter=",", skiprows=1)[:, 1] == pytest.approx([2.0, 2.0, 2.0])


# -- states tied to a given one: they start where the constraints put them ----------------------
def _cartpole(tmp_path, pendulum_p0, cart_p0=None):
    """test/data/models/cartpole.yaml with initial momenta for the hinge (and the cart): the bob's
    momenta, m l cos(th) th' and m l sin(th) th' beside the cart's, are the constraints' to fix."""
    from pathlib import Path

    text = (Path(__file__).parent / "data" / "models" / "cartpole.yaml").read_text()
    text = text.replace("  pendulum: {type: I, inertia: J}", f"  pendulum: {{type: I, inertia: J, p0: {pendulum_p0}}}")
    if cart_p0 is not None:
        text = text.replace("  cart: {type: I, inertia: M}", f"  cart: {{type: I, inertia: M, p0: {cart_p0}}}")
    path = tmp_path / "cartpole.yaml"
    path.write_text(text)
    return path


def test_momenta_the_constraints_tie_to_a_given_one_start_where_they_put_them(tmp_path):
    """The hinge given p0 = 0.05 and the cart p0 = 0: the bob's momenta, given nothing, start on
    the constraints (they were held at 0, and the start was refused: 'initial values violate
    arm_x: f1 = k f2 ... cannot be removed by adjusting algebraic unknowns'). The run follows the
    Lagrangian ODE from th' = p0 / J, v = 0."""
    from scipy.integrate import solve_ivp

    from bondsim_ros.bondgraph.simulation import simulate
    from bondsim_ros.bondgraph.yamlmodel import load_model

    M, m, l, J, g = 1.5, 0.8, 0.40625, 0.01815625, 9.81

    def rhs(_, s):
        th, _, w = s
        mass = np.array([[M + m, -m * l * np.cos(th)], [-m * l * np.cos(th), m * l * l + J]])
        return [w, *np.linalg.solve(mass, [-m * l * np.sin(th) * w * w, -m * g * l * np.sin(th)])]

    res = simulate(load_model(_cartpole(tmp_path, 0.05, 0.0)), t_end=3.0, dt_out=0.01,
                   options=SolverOptions(rtol=1e-8, atol=1e-10))
    ref = solve_ivp(rhs, (0.0, 3.0), [0.5, 0.0, 0.05 / J], t_eval=res.t, rtol=1e-12, atol=1e-12).y
    assert res["w"][0] == pytest.approx(0.05 / J, rel=1e-9) and res["v"][0] == pytest.approx(0.0, abs=1e-12)
    for i, name in enumerate(("th", "v", "w")):
        assert np.max(np.abs(res[name] - ref[i])) < 1e-5, name


def test_momenta_the_constraints_tie_to_each_other_and_to_none_given_are_named(tmp_path, capsys):
    """The hinge given p0 and the cart nothing: the cart's and the bob's x momenta share one
    constraint, so which of them moves is not the model's to say. Refused naming them."""
    path = _cartpole(tmp_path, 0.05)
    assert main(["simulate", str(path), "--t-end", "1", "--dt-out", "0.1", "-q"]) == 2
    err = capsys.readouterr().err
    assert ("simulation failed: the constraints tie cart.p, bob_x.p together and no initial value was given to any "
            "of them: give initial values to 1 of them (the others then start where the constraints "
            "put them)") in err, err
    assert "Traceback" not in err


def test_a_y0_for_a_fixed_state_the_model_gave_no_value_is_checked_too():
    """y0 c.q = 5 for a capacitor across a source, whose model gives no q0: the start moved it to
    q = C e = 1 and ran without a word (only a value the model itself gave was checked)."""
    model = capacitor_across_source()
    with pytest.raises(InconsistentInitialValues, match=r"^y0 'c\.q' = 5 cannot hold.*fix c\.q at 1 at t=0"):
        start_of(model, y0={"c.q": 5.0})
    assert start_of(model, y0={"c.q": 1.0})["c.q"] == pytest.approx(1.0)
    assert start_of(model)["c.q"] == pytest.approx(1.0)
