"""SolverOptions: one checked value for the solver's options, taken by every API that runs the
solver and built by the command line from its flags."""
from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.bondgraph import compile_model, simulate
from bondsim_ros.cli import main
from bondsim_ros.models import examples as ex
from bondsim_ros.models import resolve_model
from bondsim_ros.solver import BDFSolver, SolverOptionError, SolverOptions

ROOT = Path(__file__).resolve().parents[1]


# -- the value -----------------------------------------------------------------------------------
@pytest.mark.parametrize("field, value, allowed", [
    ("rtol", 0.0, "[2.22e-14, 0.1]"), ("rtol", -1e-6, "[2.22e-14, 0.1]"), ("rtol", 0.2, "[2.22e-14, 0.1]"),
    ("rtol", math.nan, "[2.22e-14, 0.1]"),
    # below 100 eps the error test asks for digits double precision does not hold (1e-16 ran 14,000
    # steps to an error 900 times the tolerance, without a word)
    ("rtol", 1e-16, "[2.22e-14, 0.1]"),
    ("rtol", "1e-6", "[2.22e-14, 0.1]"), ("rtol", True, "[2.22e-14, 0.1]"),
    ("atol", 0.0, "positive finite"), ("atol", -1.0, "positive finite"), ("atol", math.inf, "positive finite"),
    ("atol", [1e-8, 0.0], "one per unknown"), ("atol", [], "one per unknown"), ("atol", None, "positive finite"),
    ("hmax", 0.0, "positive"), ("hmax", -0.02, "positive"), ("hmax", math.nan, "positive"),
    ("hmax", 1e-300, "at least 2.22e-15, the solver's smallest step"),
    ("h0", 0.0, "None or a positive"), ("h0", math.inf, "None or a positive"), ("h0", -1e-3, "None or a positive"),
    ("max_order", 0, "from 1 to 5"), ("max_order", 6, "from 1 to 5"), ("max_order", 2.5, "from 1 to 5"),
    ("max_order", True, "from 1 to 5"),
    ("suppress_alg", 1, "True or False"), ("suppress_alg", "yes", "True or False"),
    ("linear_solver", "klu", "'auto', 'dense' or 'sparse'"), ("linear_solver", None, "'auto', 'dense' or 'sparse'"),
    ("max_steps", 0, "positive integer"), ("max_steps", 10.5, "positive integer"),
    ("max_steps", -5, "positive integer"),
])
def test_a_value_out_of_range_is_refused_naming_the_field_and_its_range(field, value, allowed):
    with pytest.raises(SolverOptionError) as info:
        SolverOptions(**{field: value})
    assert info.value.field == field
    assert isinstance(info.value, ValueError)
    assert f"solver option {field} must be" in str(info.value) and allowed in str(info.value), str(info.value)


def test_the_defaults_and_the_edges_of_the_ranges():
    d = SolverOptions()
    assert (d.rtol, d.atol, d.hmax, d.h0, d.max_order, d.suppress_alg, d.linear_solver, d.max_steps) == \
        (1e-6, 1e-8, math.inf, None, 5, True, "auto", 500_000)
    edge = SolverOptions(rtol=0.1, hmax=math.inf, h0=1e-9, max_order=1, max_steps=1, atol=np.array([1e-8, 1e-6]))
    assert edge.atol == (1e-8, 1e-6) and isinstance(edge.atol, tuple)  # frozen, so hashable and comparable
    assert hash(edge) == hash(SolverOptions(rtol=0.1, h0=1e-9, max_order=1, max_steps=1, atol=(1e-8, 1e-6)))
    assert SolverOptions(max_order=np.int64(3)).max_order == 3
    assert type(SolverOptions(rtol=np.float64(1e-4)).rtol) is float


def test_replace_gives_a_checked_copy():
    base = SolverOptions(rtol=1e-7, hmax=0.02)
    new = base.replace(max_order=2, linear_solver="dense")
    assert (new.rtol, new.hmax, new.max_order, new.linear_solver) == (1e-7, 0.02, 2, "dense")
    assert (base.max_order, base.linear_solver) == (5, "auto")  # the original is unchanged
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.rtol = 1e-3
    with pytest.raises(SolverOptionError) as info:
        base.replace(hmax=0.0)
    assert info.value.field == "hmax"
    with pytest.raises(TypeError):
        base.replace(tolerance=1e-3)  # no such option


def test_the_solver_and_the_options_agree_on_the_highest_order():
    from bondsim_ros.solver import _ccore, options

    assert options.MAX_ORDER == _ccore.MAX_ORDER


def test_atol_per_unknown_is_checked_against_the_problem_and_equal_values_match_one_number():
    compiled = compile_model(ex.mass_spring_damper())
    n = compiled.n
    with pytest.raises(SolverOptionError, match=f"atol has {n + 1} values, the problem has {n} unknowns"):
        BDFSolver(compiled.problem(), SolverOptions(atol=[1e-8] * (n + 1)))
    runs = []
    loose = [1e-8] * n
    loose[int(np.flatnonzero(compiled.problem().differential)[0])] = 1e-2  # one state in the error test
    for atol in (1e-8, [1e-8] * n, loose):
        s = BDFSolver(compiled.problem(), SolverOptions(atol=atol))
        s.init(0.0, compiled.y0)
        runs.append(s.advance(np.linspace(0.1, 2.0, 20))[0])
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])  # the per-unknown values reach the error test


def test_something_else_than_options_is_a_type_error():
    with pytest.raises(TypeError, match="options must be a SolverOptions, not dict"):
        BDFSolver(compile_model(ex.mass_spring_damper()).problem(), {"rtol": 1e-6})


def test_importing_the_solver_package_or_building_the_command_line_imports_no_numpy():
    code = ("import sys; import bondsim_ros.solver; a = 'numpy' in sys.modules; "
            "from bondsim_ros.cli import build_parser; build_parser(); print(a, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_the_command_map_names_what_each_module_registers():
    """cli.COMMANDS (a run of one command registers its module alone) agrees with the modules."""
    import argparse
    import importlib

    from bondsim_ros import cli

    registered = {}
    for name in cli.COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(name).register(sub)
        registered.update(dict.fromkeys(sub.choices, name))
    assert cli.COMMANDS == registered


def test_a_commands_own_parser_parses_and_refuses_as_the_whole_one():
    from bondsim_ros.cli import build_parser

    def commands(parser):
        return parser._subparsers._group_actions[0].choices

    argv = ["simulate", "dc_motor", "--rtol", "1e-5", "--csv", "o.csv"]
    own, whole = build_parser("simulate"), build_parser()
    assert vars(own.parse_args(argv)) == vars(whole.parse_args(argv))
    assert commands(own)["simulate"].format_help() == commands(whole)["simulate"].format_help()
    assert set(commands(own)) == {"simulate", "draw", "models", "robots"}
    assert build_parser("no-such-command").format_help() == whole.format_help()


@pytest.mark.parametrize("argv, usage", [
    (["simulate", "dc_motor", "--t-end", "1", "--bogus"], "usage: bondsim-ros simulate "),
    (["cache", "list"], "usage: bondsim-ros cache "),
    (["--bogus"], "usage: bondsim-ros [-h] COMMAND"),
])
def test_an_unknown_argument_is_refused_with_its_commands_usage(argv, usage, capsys):
    """An argument no option takes is named under the usage of the command it was given to, as
    argparse does for every other mistake there, not under the top-level usage."""
    from bondsim_ros.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    who = f"bondsim-ros {argv[0]}" if not argv[0].startswith("-") else "bondsim-ros"
    assert exc.value.code == 2 and err.startswith(usage), err
    assert err.rstrip().endswith(f"{who}: error: unrecognized arguments: {argv[-1]}"), err


# -- the runs ------------------------------------------------------------------------------------
def test_no_options_and_the_default_options_written_out_give_the_same_run_bit_for_bit():
    compiled = compile_model(ex.dc_motor())
    written = SolverOptions(rtol=1e-6, atol=1e-8, hmax=math.inf, h0=None, max_order=5, suppress_alg=True,
                            linear_solver="auto", max_steps=500_000)
    a = simulate(compiled, t_end=0.5, dt_out=0.005)
    b = simulate(compiled, t_end=0.5, dt_out=0.005, options=written)
    assert np.array_equal(a.data, b.data) and a.stats == b.stats
    assert a.stats["steps"] > 50


def test_max_order_one_takes_many_more_steps_than_five():
    compiled = compile_model(ex.mass_spring_damper())
    steps = {}
    for order in (1, 5):
        r = simulate(compiled, t_end=10.0, dt_out=0.05, options=SolverOptions(rtol=1e-7, atol=1e-9, max_order=order))
        steps[order] = r.stats["steps"]
        assert r.stats["max_order"] == order if order == 1 else r.stats["max_order"] >= 4
    assert steps[1] > 5 * steps[5], steps


def test_the_robotino_paper_case_runs_the_same_with_the_defaults_spelled_out():
    """The Robotino on its rose path for 5 s (``bondsim-ros simulate robotino --t-end 5``): no
    options, ``SolverOptions()`` and every default written out give the same run, step for step
    and bit for bit (the counters are the solver's whole work: a default read in two places
    would show there)."""
    model, entry = resolve_model("robotino")
    compiled = compile_model(model)
    spelled = SolverOptions(rtol=1e-6, atol=1e-8, hmax=math.inf, h0=None, max_order=5, suppress_alg=True,
                            linear_solver="auto", max_steps=500000)
    runs = [simulate(compiled, t_end=5.0, dt_out=entry.defaults["dt_out"], options=o)
            for o in (None, SolverOptions(), spelled)]
    keys = ("steps", "rejected", "newton_iters", "lu_factorizations", "events")
    first = {k: runs[0].stats[k] for k in keys}
    assert first["steps"] > 1000 and first["events"] > 0, first
    for r in runs[1:]:
        assert {k: r.stats[k] for k in keys} == first
        assert np.array_equal(r.data, runs[0].data)


# -- the command line ----------------------------------------------------------------------------
SIMULATE = ["simulate", "dc_motor", "--t-end", "0.05", "--dt-out", "0.01", "-q"]


HMAX_MUST = "--hmax must be a positive number of at least 2.22e-15, the solver's smallest step (inf: no limit), "


@pytest.mark.parametrize("argv, says", [
    (SIMULATE + ["--rtol", "0.5"], "--rtol must be a number in [2.22e-14, 0.1], got 0.5"),
    (SIMULATE + ["--atol", "-1"], "--atol must be a positive finite number, got -1"),
    # a negative number with an exponent is the flag's value, not an option ("expected one argument")
    (SIMULATE + ["--rtol", "-1e-6"], "--rtol must be a number in [2.22e-14, 0.1], got -1e-06"),
    (SIMULATE + ["--atol", "-2.5E-8"], "--atol must be a positive finite number, got -2.5e-08"),
    (SIMULATE + ["--hmax", "0"], HMAX_MUST + "got 0"),
    # below the solver's smallest step: not a run that failed (exit 1, "step size underflow")
    (SIMULATE + ["--hmax", "1e-300"], HMAX_MUST + "got 1e-300"),
    (SIMULATE + ["--hmax", "2e-15"], HMAX_MUST + "got 2e-15"),
    (["fit", "dc_motor", "data.csv", "--params", "Ra", "--outputs", "current", "--hmax", "1e-16"],
     HMAX_MUST + "got 1e-16"),
    (SIMULATE + ["--max-order", "6"], "--max-order must be an integer from 1 to 5, got 6"),
    (["fit", "dc_motor", "data.csv", "--params", "Ra", "--outputs", "current", "--max-order", "0"],
     "--max-order must be an integer from 1 to 5, got 0"),
    (["sweep", "dc_motor", "--param", "Ra=1,2", "-o", "x.csv", "--atol", "inf"],
     "--atol must be a positive finite number, got inf"),
])
def test_a_bad_solver_flag_is_one_line_naming_the_flag_exit_2(tmp_path, monkeypatch, capsys, argv, says):
    monkeypatch.chdir(tmp_path)
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.strip() == f"bondsim-ros {argv[0]}: error: {says}", err
    assert not (tmp_path / "x.csv").exists()


def test_the_smallest_hmax_is_the_solvers_smallest_step(tmp_path, capsys):
    from bondsim_ros.solver.options import HMAX_MIN
    from bondsim_ros.solver.bdf import _hmin

    assert HMAX_MIN == _hmin(0.0)
    assert main(SIMULATE + ["--hmax", "1e-3"]) == 0, capsys.readouterr().err


def test_the_flags_reach_the_solver(tmp_path, capsys):
    out = tmp_path / "o.csv"
    assert main(SIMULATE + ["--max-order", "2", "--rtol", "1e-5", "--hmax", "0.003", "--csv", str(out)]) == 0
    want = simulate(compile_model(ex.dc_motor()), t_end=0.05, dt_out=0.01,
                    options=SolverOptions(rtol=1e-5, hmax=0.003, max_order=2))
    got = np.genfromtxt(out, delimiter=",", skip_header=1)
    assert np.array_equal(got, want.data)


def test_fit_and_sweep_flags_default_to_their_contexts_options():
    from bondsim_ros.cli import build_parser
    from bondsim_ros.cliargs import solver_options
    from bondsim_ros.fit.options import FIT_OPTIONS

    parser = build_parser()
    fit = solver_options(parser.parse_args(["fit", "m", "d.csv", "--params", "a", "--outputs", "b"]))
    sweep = solver_options(parser.parse_args(["sweep", "m", "--param", "a=1", "-o", "x.csv", "--max-order", "3"]))
    assert fit == FIT_OPTIONS and (fit.rtol, fit.atol, fit.hmax) == (1e-7, 1e-9, math.inf)
    assert sweep == SolverOptions(max_order=3)


def test_max_steps_bounds_the_steps_between_two_output_times_however_they_are_asked_for():
    """hmax 0.01 s over 2 s: 279 steps, at most 89 between outputs 0.1 s apart (the first,
    from the start's small steps; 10 after). max_steps=100 lets the run finish whether its
    output times come in one call (simulate) or one call each (a CSV streamed, a twin's
    frames): counted per call, the same run failed or not with --csv. Outputs 1 s apart need
    more than 100 each: refused either way."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.simulation import Simulation, simulate
    from bondsim_ros.models import resolve_model
    from bondsim_ros.solver import TooManySteps

    compiled = compile_model(resolve_model("mass_spring_damper")[0])
    options = SolverOptions(hmax=0.01, max_steps=100)
    whole = simulate(compiled, t_end=2.0, dt_out=0.1, options=options)
    assert whole.stats["steps"] > 200
    sim = Simulation(compiled, options)
    rows = np.vstack([sim.advance([k * 0.1], tstop=2.0) for k in range(1, 21)])
    np.testing.assert_array_equal(rows, whole.data[1:])
    with pytest.raises(TooManySteps, match="more than 100 steps"):
        simulate(compiled, t_end=2.0, dt_out=1.0, options=options)


def test_a_first_step_below_the_smallest_step_is_refused_naming_h0():
    """h0 = 1e-15 (allowed: > 0) ended in 'StepSizeUnderflow at t=0: h=1e-15', not naming h0."""
    from bondsim_ros.bondgraph import I, Model, Se, simulate
    from bondsim_ros.solver.options import SolverOptionError

    m = Model("first_step")
    m.add(Se("F", 1.0), I("m", 1.0))
    m.bond("F", "m")
    with pytest.raises(SolverOptionError, match=r"solver option h0 = 1e-15 is below the smallest step the solver "
                                                r"takes at t=0: 2\.22e-15") as err:
        simulate(m, t_end=1.0, dt_out=0.5, options=SolverOptions(h0=1e-15))
    assert err.value.field == "h0"
    assert simulate(m, t_end=1.0, dt_out=0.5, options=SolverOptions(h0=1e-14))["m.p"][-1] == pytest.approx(1.0)
