"""Hostile and careless input to the engine and its command line: no law runs code,
every refusal names what and where (file:line, component, law, parameter), exit status 2, no
traceback, no output file left behind."""
import errno
import re
import textwrap
from pathlib import Path

import pytest
import sympy as sp

from bondsim_ros.bondgraph import ModelError
from bondsim_ros.bondgraph.laws import LawError, parse_law
from bondsim_ros.cli import main
from time_limit import time_bound  # noqa: E402

MODELS = Path(__file__).parent / "data" / "models"


def run(argv, capsys, seconds=120):
    with time_bound(seconds):
        rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, err


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def simulate_args(path, *extra):
    return ["simulate", path, "--t-end", "0.05", "--dt-out", "0.01", "-q", *extra]


# ---------------------------------------------------------------- laws never run code
EXPLOITS = [
    "1.0 + 0*sin(__import__('os').system('touch {marker}'))",
    "exec(\"open('{marker}', 'w')\")",
    "(lambda: __import__('os').system('touch {marker}'))()",
    "open('{marker}', 'w')",
    "eval(\"__import__('os').system('touch {marker}')\")",
    "sin.__globals__['os'].system('touch {marker}')",
    "[c for c in ().__class__.__base__.__subclasses__()]",
    "getattr(__builtins__, 'open')('{marker}', 'w')",
]

# where each exploit is written: (YAML of the component, component name, law name, line)
PLACES = [
    ('  F: {{type: Se, effort: "{law}"}}', "F", "effort"),
    ('  c: {{type: C, effort: "{law}"}}', "c", "effort law"),
    ('  g: {{type: Function, expr: "{law}", inputs: [u]}}', "g", "function"),
    ('  src: {{type: Input, value: "{law}"}}', "src", "value"),
]


def exploit_model(tmp_path, law, place):
    comp = place.format(law=law.replace('"', '\\"'))
    text = (
        "model: shared\n"
        "components:\n"
        "  F: {type: Se, effort: 1.0}\n"
        "  j: {type: EffortJunction}\n"
        "  mass: {type: I, inertia: 1.0}\n"
        "  c: {type: C, capacitance: 1.0}\n"
        "  src: {type: Input, value: 1.0}\n"
        "  g: {type: Function, expr: u, inputs: [u]}\n"
        "  rec: {type: Recorder, columns: [y]}\n"
        "bonds: [[F, j], [j, mass], [j, c]]\n"
        "signals: [[src.out, g.u], [g.out, rec.y]]\n"
    )
    name = place.split(":")[0].strip()
    lines = text.splitlines()
    index = next(i for i, ln in enumerate(lines) if ln.startswith(f"  {name}:"))
    lines[index] = comp
    path = tmp_path / "shared.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, index + 1


@pytest.mark.parametrize("law", EXPLOITS)
@pytest.mark.parametrize("place", PLACES, ids=[p[1] for p in PLACES])
def test_a_law_in_a_shared_model_file_never_runs_code(tmp_path, capsys, law, place):
    marker = tmp_path / "PWNED"
    path, line = exploit_model(tmp_path, law.format(marker=marker), place[0])
    rc, err = run(simulate_args(path), capsys)
    assert not marker.exists(), "the law ran code"
    assert rc == 2
    assert f"shared.yaml:{line}: {place[1]} ({place[2]})" in err, err
    assert "refused" in err


def test_a_parameter_value_in_a_model_file_is_a_number_not_code(tmp_path, capsys):
    marker = tmp_path / "PWNED"
    path = write(tmp_path, "p.yaml", f"""
        model: p
        parameters: {{k: "__import__('os').system('touch {marker}')"}}
        components:
          F: {{type: Se, effort: k}}
          mass: {{type: I, inertia: 1.0}}
        bonds: [[F, mass]]
        """)
    rc, err = run(simulate_args(path), capsys)
    assert rc == 2 and not marker.exists()
    assert "p.yaml:2: parameters" in err and "k:" in err


@pytest.mark.parametrize("law, refused", [
    ("10**10**10", "too large"),
    ("(2*q)**(10**9)", "exponent 1000000000 is larger than 1000"),
    ("factorial(10**6)", "function 'factorial'"),
    ("(" * 500 + "q" + ")" * 500, "nested"),
    ("-" * 50000 + "q", "nested"),
    ("1+" * 60000 + "q", "characters long"),
    ("q.real", "attribute access"),
    ("q[0]", "subscript"),
    ("'abc'", "string"),
    ("sin(x=q)", "keyword argument"),
    ("1/0", "divides by zero"),
    ("q/(t - t)", "divides by zero"),
    ("1e999*q", "not finite"),
    ("sqrt(-1)*q", "is not real"),
    ("log(-2) + q", "is not real"),
    ("x + q", "unknown name(s) x"),
    ("__class__", "name '__class__'"),
    ("q if t > 1 else 0", "Piecewise"),
])
def test_refused_law_constructs_are_named(tmp_path, capsys, law, refused):
    path = write(tmp_path, "law.yaml", f"""
        model: law
        components:
          F: {{type: Se, effort: 1.0}}
          j: {{type: EffortJunction}}
          spring:
            type: C
            effort: "{law}"
        bonds: [[F, j], [j, spring]]
        """)
    rc, err = run(simulate_args(path), capsys, seconds=30)
    assert rc == 2
    assert "law.yaml:7: spring (effort law)" in err, err[:300]
    assert refused in err, err[:300]


def test_the_law_language_builds_what_it_admits():
    q, t, u = (sp.Symbol(n, real=True) for n in ("q", "t", "u"))
    names = {"q": q, "t": t, "u": u}
    assert parse_law("2*q**3 - q/4 + 1", names) == 2 * q ** 3 - q / 4 + 1
    assert parse_law("q ^ 2", names) == q ** 2  # as sympify read it
    assert parse_law("clip(u, -1, 1) + abs(q) + max(q, 0)", names).has(sp.Abs, sp.Max)
    pw = parse_law("Piecewise((0, t < 1), (q, (t >= 1) & (t < 2)), (1, True))", names)
    assert pw.subs({t: 1.5, q: 7.0}) == 7.0 and pw.subs({t: 3}) == 1
    assert parse_law("Piecewise((1, 0 < t <= 2 and not q > 1), (0, True))", names).subs({t: 1, q: 0}) == 1
    assert float(parse_law("pi*E + 1.5e-3", names)) == pytest.approx(3.141592653589793 * 2.718281828459045 + 1.5e-3)
    # the literal's digits set the precision, as sympify's did
    assert parse_law("sin(1.0471975511965976)*u", names) == sp.sympify("sin(1.0471975511965976)*u", locals=names)
    with pytest.raises(LawError, match="is a condition"):
        parse_law("q < 1", names)


# ---------------------------------------------------------------- errors after loading: file:line
LOCATED = {
    "dangling": ("""
        model: dangling
        components:
          F: {type: Se, effort: 1.0}
          mass: {type: I, inertia: 1.0}
          loose: {type: C, capacitance: 1.0}
        bonds:
          - [F, mass]
        """, "dangling.yaml:5: loose.p: power port is not bonded"),
    "unknown_name": ("""
        model: unknown_name
        components:
          F:
            type: Se
            effort: "k*2"
          mass: {type: I, inertia: 1.0}
        bonds:
          - [F, mass]
        """, "unknown_name.yaml:5: F (effort): law 'k*2' refused: uses unknown name(s) k"),
    "dimension": ("""
        model: dimension
        definitions:
          Pair:
            ports: {v: in}
            components:
              a: {type: I, inertia: 1.0}
              b: {type: I, inertia: 1.0}
            bonds: [[self.v, a], [self.v, b]]
        components:
          F: {type: Se, effort: 1.0}
          pair: {type: Pair}
        bonds:
          - [F, pair.v]
        """, "dimension.yaml:13: dimension: dimension mismatch: bond F.p -> pair.v joins ports of dimension 1 and 2"),
    "two_efforts": ("""
        model: two_efforts
        components:
          n: {type: FlowJunction}
          A: {type: Se, effort: 1.0}
          B: {type: Se, effort: 0.0}
          c: {type: C, capacitance: 1.0}
        bonds: [[A, n], [B, n], [n, c]]
        """, "two_efforts.yaml:3: n: inconsistent equation"),
    "control": ("""
        model: control
        components:
          F: {type: Se, effort: 1.0}
          tf: {type: TF, ratio: "cos(a)", inputs: [a]}
          mass: {type: I, inertia: 1.0}
        bonds: [[F, tf.p1], [tf.p2, mass]]
        """, "control.yaml:4: tf.a: control input is not connected"),
    "singular": ("""
        model: singular
        components:
          j: {type: EffortJunction}
          s1: {type: Sf, flow: 0.0}
          s2: {type: Sf, flow: 0.0}
          mass: {type: I, inertia: 1.0}
        bonds: [[s1, j], [s2, j], [j, mass]]
        """, "singular.yaml:3: j: redundant equation (j: equal flows): it reduces to 0 = 0"),
    "two_drivers": ("""
        model: two_drivers
        components:
          a: {type: Input, value: 1.0}
          b: {type: Input, value: 2.0}
          rec: {type: Recorder, columns: [y]}
          F: {type: Se, effort: 1.0}
          mass: {type: I, inertia: 1.0}
        bonds: [[F, mass]]
        signals:
          - [a.out, rec.y]
          - [b.out, rec.y]
        """, "two_drivers.yaml:11: rec.y: input driven by 2 signal lines"),
}


@pytest.mark.parametrize("case", sorted(LOCATED))
def test_errors_found_after_loading_name_file_line_and_component(tmp_path, capsys, case):
    text, expected = LOCATED[case]
    path = write(tmp_path, f"{case}.yaml", text)
    csv = tmp_path / "out.csv"
    rc, err = run(simulate_args(path, "--csv", csv), capsys)
    assert rc == 2
    assert re.search(re.escape(expected), err), err
    assert not csv.exists()


def test_structurally_singular_model_names_file_line(tmp_path, capsys):
    # the resistor's law does not involve its flow, and the source then fixes an effort
    # already fixed: the flow is no unknown of any equation
    path = write(tmp_path, "stuck.yaml", """
        model: stuck
        components:
          j: {type: EffortJunction}
          V: {type: Se, effort: "t"}
          r: {type: R, effort: "1 + 0*f"}
        bonds: [[V, j], [j, r]]
        """)
    rc, err = run(simulate_args(path), capsys)
    assert rc == 2
    assert "stuck.yaml:4: V: structurally singular model: unknowns no equation determines: r.f" in err, err


# ---------------------------------------------------------------- run-time parameters
RC = """
    model: rc
    parameters: {R: 2.0, C: 0.5}
    components:
      V: {type: Se, effort: 1.0}
      j: {type: EffortJunction}
      r: {type: R, resistance: R}
      c: {type: C, capacitance: C}
    bonds: [[V, j], [j, r], [j, c]]
    """
MASS = """
    model: massp
    parameters: {m: 2.0, k: 3.0}
    components:
      F: {type: Se, effort: 1.0}
      j: {type: EffortJunction}
      mass: {type: I, inertia: m}
      spring: {type: C, effort: "k*q"}
      d: {type: R, resistance: 0.5}
    bonds: [[F, j], [j, mass], [j, d], [j, spring]]
    """


@pytest.mark.parametrize("model, param, expected", [
    (RC, "C=0", r"C = 0 refused \(C enters c \(capacitance\)\): c \(capacitance = C\) must be positive"),
    (RC, "C=-0.5", r"C = -0.5 refused .*c \(capacitance = C\) must be positive"),
    (RC, "R=-1", r"R = -1 refused .*r \(resistance = R\) must be non-negative"),
    (RC, "R=0", r"R = 0 refused \(R enters r \(resistance\)\)"),
    (MASS, "m=0", r"m = 0 refused \(m enters mass \(inertia\)\): mass \(inertia = m\) must be positive"),
    (MASS, "m=-1", r"m = -1 refused .*mass \(inertia = m\) must be positive"),
    (MASS, "k=-3", r"k = -3 refused .*spring \(effort law slope d/dq = k\) must be positive"),
    (MASS, "k=nan", r"--param k: the value must be a finite number"),
    (MASS, "k=inf", r"--param k: the value must be a finite number"),
])
def test_run_time_parameter_values_are_checked_by_the_laws_they_enter(tmp_path, capsys, model, param, expected):
    path = write(tmp_path, "model.yaml", model)
    csv = tmp_path / "out.csv"
    rc, err = run(simulate_args(path, "--param", param, "--csv", csv), capsys)
    assert rc == 2 and re.search(expected, err), err
    assert not csv.exists()


def test_set_param_refuses_what_the_file_would_refuse(tmp_path):
    from bondsim_ros.bondgraph.simulation import Simulation
    from bondsim_ros.bondgraph.yamlmodel import loads_model

    sim = Simulation(loads_model(textwrap.dedent(MASS)))
    sim.advance([0.01])
    with pytest.raises(ModelError, match=r"m = -2 refused .*mass \(inertia = m\) must be positive"):
        sim.set_param("m", -2.0)
    assert sim.param("m") == 2.0  # refused values are not kept
    sim.set_param("m", 3.0)
    assert sim.param("m") == 3.0


def test_a_negative_literal_written_as_text_is_refused_like_a_number(tmp_path, capsys):
    path = write(tmp_path, "neg.yaml", """
        model: neg
        components:
          F: {type: Se, effort: 1.0}
          mass:
            type: I
            inertia: "-2*3"
        bonds: [[F, mass]]
        """)
    rc, err = run(simulate_args(path), capsys)
    assert rc == 2 and "neg.yaml:6: mass (inertia): inertia must be positive, got -6" in err, err


@pytest.mark.parametrize("initial, element", [("p0: .nan", "I"), ("p0: .inf", "I"), ("q0: -.inf", "C")])
def test_an_initial_value_that_is_not_finite_is_refused_naming_its_element(tmp_path, capsys, initial, element):
    """The run used to fail at t = 0 blaming another element's law ("s: displacement law q' = f
    is not finite at t=0")."""
    law = "inertia: 1" if element == "I" else "capacitance: 1"
    path = write(tmp_path, "init.yaml", f"""
        model: init
        components:
          s: {{type: C, capacitance: 2}}
          e: {{type: {element}, {law}, {initial}}}
          j: {{type: EffortJunction}}
        bonds: [[j, s], [j, e]]
        """)
    rc, err = run(simulate_args(path), capsys)
    local = initial.split(":")[0][0]
    assert rc == 2 and f"init.yaml:4: e: initial value of {local} must be a finite number, got " in err, err


# ---------------------------------------------------------------- simulate's command line
def test_output_paths_are_checked_before_the_run(tmp_path, capsys):
    model = MODELS / "rc_step.yaml"
    afile = tmp_path / "afile"
    afile.write_text("x")
    for option, target, expected in [
        ("--csv", tmp_path / "missing" / "out.csv", "does not exist"),
        ("--csv", tmp_path, "is a directory"),
        ("--csv", afile / "out.csv", "is not a folder"),
        ("--plot", tmp_path / "missing" / "out.png", "does not exist"),
        ("--plot", tmp_path, "is a directory"),
    ]:
        rc, err = run(simulate_args(model, option, target), capsys)
        assert rc == 2 and f"{option} {target}" in err and expected in err, err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_run_the_solver_cannot_finish_exits_1_and_writes_nothing(tmp_path, capsys):
    """F = 1/(1 - t) drives the mass's momentum to infinity at t = 1: valid input, a run that
    cannot be finished. Exit 1 (a script tells it from a refused input, 2), the solver's reason
    and where it stopped, and no CSV."""
    model = write(tmp_path, "blow.yaml", """
        model: blow
        components:
          F: {type: Se, effort: "1/(1-t)"}
          m: {type: I, inertia: 1.0}
        bonds: [[F, m]]
        """)
    out = tmp_path / "blow.csv"
    rc, err = run(["simulate", model, "--t-end", "2", "--dt-out", "0.5", "--csv", out, "-q"], capsys)
    assert rc == 1, err
    assert re.search(r"error: simulation failed: step size underflow at t=1\b.*m\.p", err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blow.yaml"]


def test_draw_refuses_an_unwritable_output_and_a_broken_model(tmp_path, capsys):
    rc, err = run(["draw", MODELS / "servo.yaml", "-o", tmp_path / "missing" / "servo.dot"], capsys)
    assert rc == 2 and "--output" in err and "does not exist" in err, err
    path = write(tmp_path, "bad.yaml", """
        model: bad
        components:
          a: {type: I, inertia: 1.0}
          b: {type: Bogus}
        """)
    rc, err = run(["draw", path, "-o", tmp_path / "bad.dot"], capsys)
    assert rc == 2 and "bad.yaml:4: b: unknown element type 'Bogus'" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]
    rc, err = run(["draw", MODELS / "servo.yaml", "-o", tmp_path / "servo.dot"], capsys)
    assert rc == 0 and "subgraph" not in err and '"PID: pid"' in (tmp_path / "servo.dot").read_text()


def test_a_failed_csv_write_leaves_nothing_behind(tmp_path, capsys, monkeypatch):
    from bondsim_ros.bondgraph.simulation import SimulationResult, StreamedCsv

    def full_disk(self, *result_path):
        Path(result_path[-1]).write_text("t,partial\n")
        raise OSError(errno.ENOSPC, "No space left on device")

    # the CSV written after the run, or by the thread formatting it during the run
    monkeypatch.setattr(SimulationResult, "to_csv", full_disk)
    monkeypatch.setattr(StreamedCsv, "to_csv", full_disk)
    out = tmp_path / "out.csv"
    rc, err = run(simulate_args(MODELS / "rc_step.yaml", "--csv", out), capsys)
    assert rc == 2 and "No space left on device" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("options, expected", [
    (["--t-end", "inf", "--dt-out", "0.01"], "must be positive finite numbers"),
    (["--t-end", "nan", "--dt-out", "0.01"], "must be positive finite numbers"),
    (["--t-end", "1", "--dt-out", "1e-12"], "output rows (limit 1000000)"),
    (["--t-end", "1", "--dt-out", "0.1", "--rtol", "inf"], "--rtol must be a number in [2.22e-14, 0.1]"),
    (["--t-end", "1", "--dt-out", "0.1", "--rtol", "0"], "--rtol must be a number in [2.22e-14, 0.1]"),
    (["--t-end", "1", "--dt-out", "0.1", "--atol", "nan"], "--atol must be a positive finite number"),
    (["--t-end", "1", "--dt-out", "0.1", "--param", "R"], "--param expects NAME=NUMBER"),
])
def test_run_options_out_of_range_are_refused(tmp_path, capsys, options, expected):
    out = tmp_path / "out.csv"
    rc, err = run(["simulate", MODELS / "rc_step.yaml", "-q", "--csv", out, *options], capsys)
    assert rc == 2 and expected in err, err
    assert not out.exists()


def test_model_file_that_is_not_utf8_is_named(tmp_path, capsys):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("model: x\n# R\xe9sistance\ncomponents: {}\n".encode("latin-1"))
    rc, err = run(simulate_args(path), capsys)
    assert rc == 2 and "latin1.yaml:2: model file is not UTF-8 text (byte 0xe9)" in err, err


def test_nan_output_columns_are_named_in_a_warning(tmp_path, capsys):
    path = write(tmp_path, "nan.yaml", """
        model: nan_out
        components:
          F: {type: Se, effort: 1.0}
          mass: {type: I, inertia: 1.0}
          src: {type: Input, value: "1 - 10*t"}
          root: {type: Function, expr: "sqrt(u)", inputs: [u]}
          rec: {type: Recorder, columns: [y]}
        bonds: [[F, mass]]
        signals: [[src.out, root.u], [root.out, rec.y]]
        """)
    out = tmp_path / "out.csv"
    rc, err = run(["simulate", path, "--t-end", "0.2", "--dt-out", "0.01", "-q", "--csv", out], capsys)
    assert rc == 0 and out.exists()
    assert re.search(r"warning: column 'y' has 10 non-finite value\(s\), the first at t = 0\.11", err), err
    assert "mass.p" not in err


def test_packaged_test_models_simulate(tmp_path, capsys):
    """The YAML models the fuzz test mutates run as they are (R-C step: u_C = 10 (1 - e^{-(t-0.1)/RC}))."""
    import numpy as np

    for path in sorted(MODELS.glob("*.yaml")):
        out = tmp_path / f"{path.stem}.csv"
        rc, err = run(["simulate", path, "--t-end", "1", "--dt-out", "0.01", "-q", "--csv", out], capsys)
        assert rc == 0 and "warning" not in err, (path, err)
    data = np.genfromtxt(tmp_path / "rc_step.csv", delimiter=",", names=True)
    # not the sample at the step itself: there an output that depends on y' is the interpolant's
    # value across the discontinuity (a known limit of dense output, not of the input checks)
    off_step = np.abs(data["t"] - 0.1) > 1e-9
    t = data["t"][off_step]
    exact = np.where(t < 0.1, 0.0, 10.0 * (1 - np.exp(-(t - 0.1) / 1.0)))
    assert np.max(np.abs(data["uc"][off_step] - exact)) < 1e-3


# ---------------------------------------------------------------- size limits of a model file
def test_yaml_aliases_that_expand_a_billion_times_are_refused(tmp_path, capsys):
    text = 'model: lol\ndescription: &l0 ["a", "a", "a", "a", "a", "a", "a", "a", "a", "a"]\nparameters:\n'
    for i in range(1, 9):
        text += f"  p{i}: {{value: 1.0, doc: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]}\n"
    path = tmp_path / "lol.yaml"
    path.write_text(text + "components: {}\n")
    rc, err = run(simulate_args(path), capsys, seconds=60)
    assert rc == 2 and "lol.yaml: the model file expands to more than 1000000 values" in err, err


def test_definitions_fanning_out_exponentially_are_refused(tmp_path, capsys):
    text = ("model: fan\ndefinitions:\n"
            "  D0: {components: {m: {type: I, inertia: 1.0}, j: {type: EffortJunction}}, bonds: [[j, m]]}\n")
    for i in range(1, 9):  # 10^8 inertias
        text += f"  D{i}:\n    components: {{" + ", ".join(f"c{k}: {{type: D{i - 1}}}" for k in range(10)) + "}\n"
    path = tmp_path / "fan.yaml"
    path.write_text(text + "components: {top: {type: D8}}\n")
    rc, err = run(simulate_args(path), capsys, seconds=60)
    assert rc == 2 and "the model has more than 20000 components" in err and "fan.yaml:" in err, err


@pytest.mark.parametrize("component, expected", [
    ("{type: Node, n: 100000000}", "n must be a whole number of outputs from 1 to 1000"),
    ("{type: Sum, signs: '" + "+" * 5000 + "'}", "5000 inputs (limit 1000)"),
    ("{type: Se, effort: t, inputs: [t]}", "input name 't' is reserved"),
    ("{type: Function, expr: sin, inputs: [sin]}", "input name 'sin' is reserved"),
    ("{type: Se, effort: 1, inputs: u}", "inputs must be a list of names"),
    ("{type: Step, t0: [1, 2]}", "Step: t0 must be a number or an expression"),
    # (these were refused as a law using an unknown name 'nan')
    ("{type: Step, t0: .nan}", "Step: t0 must be a finite number, got nan"),
    ("{type: Sine, omega: .inf}", "Sine: omega must be a finite number, got inf"),
    # keys is Input's own argument for its shapes, no key of the file's Input (an AttributeError traceback)
    ("{type: Input, value: 1, keys: 5}", "Input: got an unexpected keyword argument 'keys' (Input takes: value)"),
    ("{type: Input, value: 1, keys: {after: x}}", "Input: got an unexpected keyword argument 'keys'"),
    ("{type: Function, expr: 2*in, inputs: [in]}", "input name 'in' is reserved in laws"),
    ("{type: Se, effort: 2*lambda, inputs: [lambda]}", "input name 'lambda' is reserved in laws"),
])
def test_block_shapes_out_of_range_are_refused(tmp_path, capsys, component, expected):
    path = write(tmp_path, "blk.yaml", f"""
        model: blk
        components:
          b: {component}
        """)
    rc, err = run(simulate_args(path), capsys, seconds=60)
    assert rc == 2 and "blk.yaml:3: b" in err and expected in err, err


def test_a_parameter_may_not_take_a_name_the_laws_reserve(tmp_path, capsys):
    path = write(tmp_path, "res.yaml", """
        model: res
        parameters: {pi: 3.0}
        components:
          F: {type: Se, effort: pi}
          mass: {type: I, inertia: 1.0}
        bonds: [[F, mass]]
        """)
    rc, err = run(simulate_args(path), capsys)
    assert rc == 2 and "res.yaml:2: parameters: pi:" in err and "reserved" in err, err


@pytest.mark.parametrize("name", ["lambda", "in", "is", "not", "None", "if", "yield"])
def test_a_parameter_may_not_take_a_python_keyword(tmp_path, capsys, name):
    """`parameters: {lambda: 0.5}` was taken, and every law that used it refused later as a
    syntax error ("law 'lambda' refused: syntax error: invalid syntax")."""
    path = write(tmp_path, "res.yaml", f"""
        model: res
        parameters: {{{name}: 3.0}}
        components:
          F: {{type: Se, effort: 1.0}}
          mass: {{type: I, inertia: 1.0}}
        bonds: [[F, mass]]
        """)
    rc, err = run(simulate_args(path), capsys)
    assert rc == 2 and f"res.yaml:2: parameters: {name}: res: parameter name '{name}' is reserved in laws (time t, " \
                       f"a constant, a function or a word of the law syntax)" in err, err


def test_a_failed_plot_keeps_the_users_old_csv(tmp_path, capsys, monkeypatch):
    from bondsim_ros import model_commands as commands

    def full_disk(result, out_png):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(commands, "plot_result", full_disk)
    out = tmp_path / "out.csv"
    out.write_text("the user's own data\n")
    rc, err = run(simulate_args(MODELS / "rc_step.yaml", "--csv", out, "--plot", tmp_path / "out.png"), capsys)
    assert rc == 2 and "--plot" in err and "No space left on device" in err, err
    assert out.read_text() == "the user's own data\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_fit_reads_laws_with_the_same_parser(tmp_path, capsys):
    marker = tmp_path / "PWNED"
    text = (MODELS / "rc_step.yaml").read_text().replace(
        "effort: u,", f"effort: \"u + 0*sin(__import__('os').system('touch {marker}'))\",")
    model = tmp_path / "fx.yaml"
    model.write_text(text)
    data = tmp_path / "d.csv"
    data.write_text("t,uc\n0,0\n0.1,0.1\n0.2,0.2\n0.3,0.3\n")
    rc, err = run(["fit", model, data, "--params", "R", "--outputs", "uc", "-q"], capsys)
    assert rc == 2 and not marker.exists()
    assert "fx.yaml:10: V (effort): law" in err and "refused: attribute access" in err, err


# ---------------------------------------------------------------- Derivative's start
def test_initial_from_equation_is_no_key_of_a_model_file(tmp_path, capsys):
    # it was an engine keyword that did nothing (an option that is documented but ignored is refused instead)
    path = write(tmp_path, "deriv.yaml", """
        model: deriv
        components:
          u: {type: Sine, amplitude: 1.0}
          d: {type: Derivative, initial_from_equation: true}
          rec: {type: Recorder, columns: [du]}
        signals: [[u.out, d.in_], [d.out, rec.du]]
        """)
    out = tmp_path / "out.csv"
    rc, err = run(simulate_args(path, "--csv", out), capsys)
    assert rc == 2 and "deriv.yaml:4: d: Derivative:" in err and "initial_from_equation" in err, err
    assert not out.exists()


DERIVATIVE = """
    model: deriv
    components:
      u: {{type: Input, value: "{u}"}}
      d: {{type: Derivative}}
      v: {{type: EffortJunction}}
      F: {{type: Se, inputs: [s], effort: "s"}}
      m: {{type: I, inertia: 1.0}}
      r: {{type: R, resistance: 1.0}}
      rec: {{type: Recorder, columns: [du]}}
    bonds: [[F, v], [v, m], [v, r]]
    signals: [[u.out, d.in_], [d.out, F.s], [d.out, rec.du]]
    """


def test_a_derivative_in_the_dynamics_starts_from_its_input_or_is_refused_by_name(tmp_path, capsys):
    import numpy as np

    # input 0 at t0: runs, out = d/dt (2 t + sin 3t) = 2 + 3 cos 3t
    out = tmp_path / "ok.csv"
    rc, err = run(simulate_args(write(tmp_path, "ok.yaml", DERIVATIVE.format(u="2*t + sin(3*t)")), "--csv", out),
                  capsys)
    assert rc == 0, err
    data = np.genfromtxt(out, delimiter=",", names=True)
    assert np.allclose(data["du"], 2 + 3 * np.cos(3 * data["t"]), atol=1e-4)
    # input 1 at t0: the hidden state starts at 0, so x = in cannot hold: refused before the run
    out = tmp_path / "bad.csv"
    rc, err = run(simulate_args(write(tmp_path, "bad.yaml", DERIVATIVE.format(u="1 + 2*t")), "--csv", out), capsys)
    assert rc == 2 and "d: x = in" in err, err
    assert "bad.yaml:4: simulation failed: initial values violate d: x = in" in err, err  # d's line in the file
    assert not out.exists()


@pytest.mark.parametrize("text, line, says", [
    ("""
        model: sfp
        components:
          v: {type: EffortJunction}
          m: {type: I, inertia: 2, p0: 1}
          s: {type: Sf, flow: 0}
          r: {type: R, resistance: 1}
        bonds: [[s, v], [v, m], [v, r]]
        """, 4, "m: p0 = 1 cannot hold: the constraints of the model fix m.p at 0 at t=0"),
    ("""
        model: q0
        definitions:
          Cap:
            ports: {p: in}

            components: {c: {type: C, capacitance: 1, q0: 5}}
            bonds: [[self.p, c]]
        components:
          E: {type: Se, effort: 2}
          n: {type: FlowJunction}
          cap: {type: Cap}
          r: {type: R, resistance: 1}
        bonds: [[E, n], [n, cap.p], [n, r]]
        """, 6, "cap.c: q0 = 5 cannot hold: the constraints of the model fix cap.c.q at 2 at t=0"),
])
def test_a_given_start_value_the_constraints_refuse_is_named_at_its_line(tmp_path, capsys, text, line, says):
    """`m: p0 = 1 cannot hold` reached the user without the file's line, where the start refusal
    of an equation (above) has it."""
    path = write(tmp_path, "fix.yaml", text)
    rc, err = run(simulate_args(path), capsys)
    assert rc == 2 and f"fix.yaml:{line}: simulation failed: {says}" in err, err


def test_a_derivative_only_recorded_is_the_input_s_derivative():
    """A Derivative whose output only a Recorder reads: its hidden x enters no equation with x',
    so it was algebraic and outside the error test, and steps as long as the rest of the model
    allowed made the recorded d/dt (sin 2t + 1) 0.62 off 2 cos 2t, at any rtol."""
    import numpy as np

    from bondsim_ros.bondgraph import Model
    from bondsim_ros.bondgraph.elements import I, Se
    from bondsim_ros.bondgraph.signals import Derivative, Input, Recorder
    from bondsim_ros.bondgraph.simulation import simulate
    from bondsim_ros.solver import SolverOptions

    m = Model("recorded_derivative")
    m.add(Input("s", "sin(2*t) + 1"), Derivative("d"), Recorder("rec", ["y"]), Se("F", 1.0), I("mm", 1.0))
    m.connect("s.out", "d.in_")
    m.connect("d.out", "rec.y")
    m.bond("F", "mm")  # the rest of the model: p = t, which any step integrates exactly
    for rtol in (1e-6, 1e-9):
        r = simulate(m, t_end=3.0, dt_out=0.25, options=SolverOptions(rtol=rtol))
        assert np.max(np.abs(r["y"] - 2 * np.cos(2 * r.t))) < 1e4 * rtol


def test_a_derivative_of_a_signal_minus_its_start_value_runs(tmp_path, capsys):
    # docs/engine.md's way round the refusal above: differentiate u - u(t0)
    import numpy as np

    text = DERIVATIVE.format(u="1 + 2*t").replace(
        "signals: [[u.out, d.in_],",
        "signals: [[u.out, du0.in1], [u0.out, du0.in2], [du0.out, d.in_],").replace(
        "      d: {type: Derivative}\n",
        "      d: {type: Derivative}\n      u0: {type: Constant, value: 1.0}\n      du0: {type: Sum, signs: \"+-\"}\n")
    out = tmp_path / "shifted.csv"
    rc, err = run(simulate_args(write(tmp_path, "shifted.yaml", text), "--csv", out), capsys)
    assert rc == 0, err
    assert np.allclose(np.genfromtxt(out, delimiter=",", names=True)["du"], 2.0, atol=1e-6)


def test_a_resistor_law_with_mod_is_accepted(tmp_path, capsys):
    """An R law using mod(): the slope check's sympy derivative of Mod recursed until
    RecursionError, a traceback from `simulate` (elements.require_slope)."""
    import numpy as np

    model = tmp_path / "r_mod.yaml"
    model.write_text(
        "model: r_mod\n"
        "components:\n"
        "  S: {type: Se, effort: 1.0}\n"
        "  j: {type: EffortJunction}\n"
        "  R: {type: R, effort: \"2*f + 0.1*mod(f, 0.3)\"}\n"
        "  L: {type: I, inertia: 0.5}\n"
        "bonds: [[S, j], [j, R], [j, L]]\n")
    out = tmp_path / "r_mod.csv"
    rc, err = run(["simulate", model, "--t-end", "2", "--dt-out", "0.1", "-q", "--csv", out], capsys)
    assert rc == 0, err
    names = out.read_text().splitlines()[0].split(",")
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    # the current rises towards the f solving 1 = 2 f + 0.1 mod(f, 0.3), on [0.3, 0.6):
    # 1 = 2.1 f - 0.03, f = 1.03 / 2.1, and no further
    f = data[:, names.index("L.p")] / 0.5
    assert np.all(np.diff(f) > 0) and 0.48 < f[-1] < 1.03 / 2.1
