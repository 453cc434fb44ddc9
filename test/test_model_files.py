"""Model files a careless or hostile user may give ``bondsim-ros simulate``: keys that are not
names, nesting without end, sources that leave nothing to integrate, long chains, Python model
files that do not run. Each is refused with one line naming file, line and component (exit
status 2, no traceback) or, for a long chain, built in bounded time."""
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.bondgraph import ModelError
from bondsim_ros.cli import main
from time_limit import time_bound  # noqa: E402


def simulate(path, capsys, *extra, seconds=120):
    with time_bound(seconds):
        rc = main(["simulate", str(path), "--t-end", "0.05", "--dt-out", "0.01", "-q", *map(str, extra)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def refused(rc, err):
    """Exit status 2 and one line, the CLI's error line."""
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bondsim-ros simulate: error: "), err
    return lines[0]


# ----------------------------------------------------------------- keys that are not names
def test_a_list_as_a_component_key_is_refused_with_its_line(tmp_path, capsys):
    path = write(tmp_path, "m.yaml", """
        model: m
        components:
          [a]: {type: I, inertia: 1.0}
        """)
    line = refused(*simulate(path, capsys))
    assert "m.yaml:3: a key must be a name, got a list ['a']" in line


def test_a_mapping_as_a_parameter_key_is_refused_with_its_line(tmp_path, capsys):
    path = write(tmp_path, "m.yaml", """
        model: m
        parameters:
          k: 1.0
          {a: 1}: 2.0
        components:
          mass: {type: I, inertia: 1.0}
        """)
    line = refused(*simulate(path, capsys))
    assert "m.yaml:4: a key must be a name, got a mapping" in line


def test_a_number_as_a_component_name_is_refused_with_its_line(tmp_path, capsys):
    path = write(tmp_path, "m.yaml", """
        model: m
        components:
          F: {type: Se, effort: 1.0}
          1: {type: I, inertia: 1.0}
        bonds: [[F, 1]]
        """)
    line = refused(*simulate(path, capsys))
    assert "m.yaml:4: 1: a component name is text" in line


# YAML 1.1 reads on, off, yes, no, true, false (any case) unquoted as booleans: where a name is
# meant, the error says so in the words of the file
_SOURCE_AND_MASS = "components:\n  F: {type: Se, effort: 1.0}\n  'on': {type: I, inertia: 1.0}\n"


@pytest.mark.parametrize("text, where, message", [
    ("model: onoff\ncomponents:\n  F: {type: Se, effort: 1.0}\n  on: {type: I, inertia: 1.0}\nbonds: [[F, 'on']]",
     "4: on", "a component name is text, but YAML reads on unquoted as a boolean (true): quote it, 'on'"),
    ("model: onoff\n" + _SOURCE_AND_MASS + "bonds: [[F, on]]",
     "5: onoff", "a bond or signal end is text, but YAML reads on unquoted as a boolean (true): quote it, 'on'"),
    ("model: onoff\n" + _SOURCE_AND_MASS + "bonds:\n  - - F\n    - On",
     "7: onoff", "a bond or signal end is text, but YAML reads On unquoted as a boolean (true): quote it, 'On'"),
    ("model: onoff\n" + _SOURCE_AND_MASS + "bonds:\n  - {from: F,\n     to: on}",
     "7: onoff", "a bond or signal end is text, but YAML reads on unquoted as a boolean (true): quote it, 'on'"),
    ("model: onoff\n" + _SOURCE_AND_MASS + "bonds: [[F, 'on']]\nsignals: [[F.e, NO]]",
     "6: onoff", "a bond or signal end is text, but YAML reads NO unquoted as a boolean (false): quote it, 'NO'"),
    ("model: onoff\nparameters:\n  k: 1.0\n  yes: 2.0\n" + _SOURCE_AND_MASS,
     "4: parameters", "a parameter name is text, but YAML reads yes unquoted as a boolean (true): quote it, 'yes'"),
    ("model: onoff\ndefinitions:\n  D:\n    ports: {off: in}\n    components: {r: {type: R, resistance: 1}}\n"
     "    bonds: [[self.off, r]]\n" + _SOURCE_AND_MASS + "  d: {type: D}\nbonds: [[F, d.off]]",
     "4: d", "ports: a port name is text, but YAML reads off unquoted as a boolean (false): quote it, 'off'"),
    ("model: False\n" + _SOURCE_AND_MASS,
     "1", "the model's name is text, but YAML reads False unquoted as a boolean (false): quote it, 'False'"),
    ("model: onoff\ncomponents:\n  F: {type: Se, effort: u, inputs: [off]}\n  m: {type: I, inertia: 1.0}",
     "3: F", "inputs: a name is text, but YAML reads off unquoted as a boolean (false): quote it, 'off'"),
    ("model: onoff\n" + _SOURCE_AND_MASS + "  rec:\n    type: Recorder\n    columns:\n      - v\n      - On",
     "9: rec", "columns: a name is text, but YAML reads On unquoted as a boolean (true): quote it, 'On'"),
])
def test_a_name_yaml_reads_as_a_boolean_is_refused_in_the_words_of_the_file(tmp_path, capsys, text, where, message):
    """`on: {type: I}` was refused as "True: ... got bool True", a name the file does not hold:
    the error names the word as written, says YAML reads it as a boolean and how to quote it."""
    path = tmp_path / "onoff.yaml"
    path.write_text(text + "\n")
    err = refused(*simulate(path, capsys))
    assert err == f"bondsim-ros simulate: error: {path}:{where}: {message}", err


def test_two_keys_yaml_reads_as_the_same_boolean_are_refused_in_the_words_of_the_file(tmp_path, capsys):
    path = tmp_path / "onoff.yaml"
    path.write_text("model: onoff\ncomponents:\n  yes: {type: Se, effort: 1.0}\n  On: {type: I, inertia: 1.0}\n")
    err = refused(*simulate(path, capsys))
    assert err == (f"bondsim-ros simulate: error: {path}:4: duplicate key: YAML reads On unquoted as a boolean (true), "
                   f"as it does a key before it: quote them, 'On'"), err


_MSD = """
    model: msd
    parameters: {{k: {k}, m: 1}}
    components:
      F: {{type: Se, effort: 0.0}}
      v: {{type: EffortJunction, output: true}}
      mass: {{type: I, inertia: m}}
      spring: {{type: C, capacitance: 1/k, q0: 0.1}}
    bonds: [[F, v], [v, mass], [v, spring]]
    """


def test_a_whole_number_with_a_leading_zero_is_decimal(tmp_path, capsys):
    """k: 010 is 10, as --param k=010 and YAML 1.2 read it; YAML 1.1 (PyYAML) made it the octal 8."""
    out = tmp_path / "r.csv"
    rc, _ = simulate(write(tmp_path, "m.yaml", _MSD.format(k="010")), capsys, "--csv", out)
    assert rc == 0
    x_end = np.loadtxt(out, delimiter=",", skiprows=1)[-1, 2]  # spring.q at t = 0.05
    assert x_end == pytest.approx(0.1 * np.cos(np.sqrt(10.0) * 0.05), rel=1e-5)


@pytest.mark.parametrize("k, value", [("1_0", "10"), ("1:30", "90"), ("1_0.5", "10.5")])
def test_a_number_only_yaml_1_1_reads_is_refused_at_its_line(tmp_path, capsys, k, value):
    """Digits grouped by _ and base-60 numbers (1:30 is 90) are YAML 1.1's alone: --param refuses
    1_0, and a file read them without a word."""
    path = write(tmp_path, "m.yaml", _MSD.format(k=k))
    err = refused(*simulate(path, capsys))
    assert err == (f"bondsim-ros simulate: error: {path}:2: {k} is read as {value} by YAML 1.1 only (digits grouped "
                   f"by _, or base 60 by :): write the number in decimal digits"), err


@pytest.mark.parametrize("loader", ["_Loader", "_CLoader"])
def test_a_float_with_an_exponent_and_no_dot_is_a_number_as_yaml_1_2_reads_it(loader):
    """YAML 1.1 (PyYAML's resolver) reads a float only with a dot and a signed exponent: 1e3 was the
    text '1e3'; both readers give YAML 1.2's numbers."""
    import yaml

    from bondsim_ros.bondgraph import yamlmodel

    data = yaml.load("x: [1e3, 2e0, 1.5e3, 1E-3, -.5, +1e+3, 1.0, 10, 1e]\n", Loader=getattr(yamlmodel, loader))
    assert data["x"] == [1000.0, 2.0, 1500.0, 0.001, -0.5, 1000.0, 1.0, 10, "1e"]
    assert [type(v) for v in data["x"]] == [float] * 7 + [int, str]


def test_an_inertia_written_with_an_exponent_takes_an_initial_flow(tmp_path, capsys):
    """`inertia: 2e0, f0: 3.0` was refused ("f0 needs a constant linear inertia") where
    `inertia: 2.0` ran: 2e0 reached the element as text. p = I f0 = 6, p' = -p/(I R)."""
    out = tmp_path / "r.csv"
    path = write(tmp_path, "m.yaml", """
        model: m
        components:
          v: {type: EffortJunction}
          mass: {type: I, inertia: 2e0, f0: 3.0}
          r: {type: R, resistance: 1E0}
        bonds: [[v, mass], [v, r]]
        """)
    rc, err = simulate(path, capsys, "--csv", out)
    assert rc == 0, err
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    assert data[:, 1] == pytest.approx(6.0 * np.exp(-data[:, 0] / 2.0), rel=1e-5)


@pytest.mark.parametrize("value", ["1" + "0" * 400, "-1" + "0" * 400, "1" * 5000, "1e400", "0x" + "f" * 300])
@pytest.mark.parametrize("where, line", [
    ("parameters: {{k: {v}}}\ncomponents:\n  m: {{type: I, inertia: 1.0}}", 2),
    ("components:\n  m: {{type: I, inertia: {v}}}", 3),
    ("components:\n  m: {{type: I, inertia: 1.0, p0: {v}}}", 3),
    ("components:\n  m: {{type: I, inertia: 1.0, f0: {v}}}", 3),
    ("components:\n  m: {{type: C, capacitance: 1.0, q0: {v}}}", 3),
    ("components:\n  m: {{type: Integrator, x0: {v}}}", 3),
    ("components:\n  m: {{type: Step, t0: {v}}}", 3),
    ("definitions:\n  D: {{parameters: {{c: {v}}}}}\ncomponents:\n  d: {{type: D}}", 3),
])
def test_a_number_beyond_a_double_is_refused_at_its_line(tmp_path, capsys, where, line, value):
    """A whole number of 400 digits ended in OverflowError tracebacks (float() of it, and
    math.isfinite, format's g) wherever the model read it; refused at its line, as 1e400 is."""
    path = tmp_path / "m.yaml"
    path.write_text("model: m\n" + where.format(v=value) + "\n")
    err = refused(*simulate(path, capsys))
    shown = value if len(value) <= 24 else f"{value[:20]}... ({len(value)} characters)"
    assert err == (f"bondsim-ros simulate: error: {path}:{line}: {shown} is beyond the range of a double "
                   f"(about 1.8e308): refused"), err


@pytest.mark.parametrize("umin, umax, shown", [('"2"', '"1"', "2, 1"), ('"1 + 1"', "1", "2, 1"),
                                               ('"pi"', '"3"', "3.14159, 3"), ("2e0", "1e0", "2, 1"),
                                               ('"1"', '"1"', "1, 1")])
def test_pid_limits_given_as_constant_laws_the_wrong_way_round_are_refused(tmp_path, capsys, umin, umax, shown):
    """umin: "2", umax: "1" ran with the output held at umax: only numbers were checked when the
    PID was made, and laws only when they held parameters."""
    path = write(tmp_path, "m.yaml", f"""
        model: m
        components:
          ref: {{type: Constant, value: 1}}
          pid: {{type: PID, kp: 1, ki: 1, umin: {umin}, umax: {umax}}}
          integ: {{type: Integrator}}
        signals: [[ref.out, pid.in_], [pid.out, integ.in_]]
        """)
    line = refused(*simulate(path, capsys))
    assert line.startswith(f"bondsim-ros simulate: error: {path}:4: pid: PID limits need umin < umax, got "), line
    assert line.endswith(shown if "e0" not in umin else "2.0, 1.0"), line


def test_pid_limits_given_as_constant_laws_the_right_way_round_saturate(tmp_path, capsys):
    out = tmp_path / "r.csv"
    path = write(tmp_path, "m.yaml", """
        model: m
        components:
          ref: {type: Constant, value: 1}
          pid: {type: PID, kp: 5, umin: "-1", umax: "1/2"}
          integ: {type: Integrator}
          rec: {type: Recorder, columns: [u]}
        signals: [[ref.out, pid.in_], [pid.out, integ.in_, rec.u]]
        """)
    rc, err = simulate(path, capsys, "--csv", out)
    assert rc == 0, err
    assert np.loadtxt(out, delimiter=",", skiprows=1)[:, 2] == pytest.approx(0.5)  # 5 * 1, held at umax


# ----------------------------------------------------------------- what YAML cannot read
@pytest.mark.parametrize("text, line, message", [
    ("model: x\x01y\ncomponents: {}\n", 1, "YAML cannot read character #x0001: control characters are not allowed"),
    ("model: x\ncomponents:\n  a: {type: R, resistance: \"1\x00\"}\n", 3,
     "YAML cannot read character #x0000: control characters are not allowed"),
    ("model: x\ncomponents:\n  ? !!set {a: null}\n  : {type: R}\n", 3, "a key must be a name, got a set {'a'}"),
    ("model: x\nbase: &b {type: R}\ncomponents:\n  r: {<<: *b,\n      <<: {resistance: 5.0}}\n", 5,
     "duplicate key '<<' (merge several mappings with one: <<: [*a, *b])"),
])
def test_what_yaml_cannot_read_as_a_model_is_refused_at_its_line(tmp_path, capsys, text, line, message):
    """A control character ended in yaml.reader.ReaderError, a set as a key in TypeError
    (unhashable), both tracebacks; two merge keys in one mapping took the last one's values."""
    path = tmp_path / "m.yaml"
    path.write_bytes(text.encode())
    err = refused(*simulate(path, capsys))
    assert err == f"bondsim-ros simulate: error: {path}:{line}: {message}", err


# ----------------------------------------------------------------- sections of the wrong kind
@pytest.mark.parametrize("text, line, message", [
    ("model: m\n\ncomponents:\n  mass: {type: I, inertia: 1.0}\n\nbonds: 5\n", 6,
     "m: 'bonds' must be a list, got a number 5"),
    ("model: m\nparameters: {k: 1}\n\ncomponents: oops\n", 4, "m: 'components' must be a mapping, got text 'oops'"),
    ("model: m\n\nparameters: 3\ncomponents: {}\n", 3, "parameters: 'parameters' must be a mapping, got a number 3"),
    ("model: m\n\ndefinitions: [D]\ncomponents: {}\n", 3,
     "definitions: must be a mapping name -> component spec, got a list ['D']"),
    ("model: m\ncomponents: {}\nsignals: {a: b}\n", 3, "m: 'signals' must be a list, got a mapping {'a': 'b'}"),
    ("model: m\ndefinitions:\n  D:\n    ports: {p: in}\n\n    components: 7\ncomponents:\n  d: {type: D}\n", 6,
     "d: 'components' must be a mapping, got a number 7"),
    ("model: m\ndefinitions:\n  D:\n\n    parameters: [1, 2]\ncomponents:\n  d: {type: D}\n", 5,
     "D: 'parameters' must be a mapping name -> value, got a list [1, 2]"),
])
def test_a_section_of_the_wrong_kind_is_refused_at_its_keys_line(tmp_path, capsys, text, line, message):
    """`bonds: 5` was refused at line 1 (the enclosing mapping's), and a list as
    'got _LineList [1, 2]', the reader's own type name."""
    path = tmp_path / "m.yaml"
    path.write_text(text)
    err = refused(*simulate(path, capsys))
    assert err == f"bondsim-ros simulate: error: {path}:{line}: {message}", err


# ----------------------------------------------------------------- bonds written as mappings
def test_a_bond_written_as_a_mapping_runs_as_the_list_does(tmp_path, capsys):
    outs = []
    for bond in ("[v, r]", "{from: v, to: r}"):
        out = tmp_path / f"{len(outs)}.csv"
        path = write(tmp_path, "m.yaml", f"""
            model: m
            components:
              v: {{type: EffortJunction}}
              mass: {{type: I, inertia: 1.0, p0: 1.0}}
              r: {{type: R, resistance: 2.0}}
            bonds: [[v, mass], {bond}]
            """)
        rc, err = simulate(path, capsys, "--csv", out)
        assert rc == 0, err
        outs.append(np.loadtxt(out, delimiter=",", skiprows=1))
    assert outs[1] == pytest.approx(outs[0])
    assert outs[1][:, 1] == pytest.approx(np.exp(-2.0 * outs[1][:, 0]), rel=1e-5)


@pytest.mark.parametrize("bond, line, message", [
    ("{from: v, to: r,\n     label: damper}", 8, "got unknown key(s) label"),
    ("{from: v, too: r}", 7, "got unknown key(s) too"),
    ("{from: v}", 7, "got no 'to:'"),
])
def test_a_bond_written_as_a_mapping_takes_from_and_to_only(tmp_path, capsys, bond, line, message):
    """`{from: v, to: r, label: damper}` ran with label read by nothing, and a misspelt key
    (`too:`) as well."""
    path = tmp_path / "m.yaml"
    path.write_text("model: m\ncomponents:\n  v: {type: EffortJunction}\n  mass: {type: I, inertia: 1.0, p0: 1.0}\n"
                    f"  r: {{type: R, resistance: 2.0}}\nbonds:\n  - {bond}\n")
    err = refused(*simulate(path, capsys))
    assert err == (f"bondsim-ros simulate: error: {path}:{line}: m: a bond written as a mapping has the keys from "
                   f"and to, {message}"), err


# ----------------------------------------------------------------- bonds and signal lines that are not lists
@pytest.mark.parametrize("connections, line, message", [
    ("bonds: [F-m]", 5, "a bond is [from, to], got 'F-m'"),
    ('bonds: ["F, m"]', 5, "a bond is [from, to], got 'F, m'"),
    ("bonds:\n  - [F, m]\n  - F-m", 7, "a bond is [from, to], got 'F-m'"),
    ("bonds: [[F, m],\n  F-m]", 6, "a bond is [from, to], got 'F-m'"),
    ("bonds: [[F, m]]\nsignals: [\n  m.p]", 7, "a signal line is [source, target, ...], got 'm.p'"),
])
def test_a_bond_or_signal_line_written_as_text_is_refused_at_its_own_line(tmp_path, capsys, connections, line,
                                                                          message):
    """A bond given as a string instead of a list: the error names the line of that bond, not the
    model's first line."""
    path = tmp_path / "m.yaml"
    path.write_text("model: m\ncomponents:\n  F: {type: Se, effort: 1.0}\n  m: {type: I, inertia: 1.0}\n"
                    + connections + "\n")
    err = refused(*simulate(path, capsys))
    assert err == f"bondsim-ros simulate: error: {path}:{line}: m: {message}", err


@pytest.mark.parametrize("connections, line, message", [
    ("bonds:\n  - [F, x]", 7, "m: bond target: no component 'x' in this document"),
    ("bonds:\n  - [F, 1]", 7, "m: a bond or signal end is 'component' or 'component.port', got 1"),
    ("bonds:\n  - [F, m.q]", 7, "m: no port 'q' (ports: p)"),  # the component whose port it is
    ("bonds: [[F, m]]\nsignals:\n  - [st.out, x.in_]", 8, "m: signal target: no component 'x' in this document"),
    ("bonds: [[F, m]]\nsignals:\n  - [m.p, st.in_]", 8,
     "m.p: is a power port: a signal source must be a control port (power ports are joined by bonds)"),
])
def test_a_bond_or_signal_end_that_names_nothing_is_refused_naming_it_once(tmp_path, capsys, connections, line,
                                                                           message):
    """The error of a bond's end carries its own place (the document, or the component whose
    port is missing): said once, after the bond's line (it was `m: m: bond target: ...`)."""
    path = tmp_path / "m.yaml"
    path.write_text("model: m\ncomponents:\n  F: {type: Se, effort: 1.0}\n  m: {type: I, inertia: 1.0}\n"
                    "  st: {type: Step}\n" + connections + "\n")
    err = refused(*simulate(path, capsys))
    assert err == f"bondsim-ros simulate: error: {path}:{line}: {message}", err


# ----------------------------------------------------------------- run-time parameter values refused
def test_a_parameter_value_the_model_refuses_is_named_at_its_line_in_the_file(tmp_path, capsys):
    """The refusal comes from the compiled model at run time (the second run does not even load
    the file); a value written in the file is still named where it is written, one given by
    --param is not the file's."""
    path = write(tmp_path, "m.yaml", """
        model: m
        parameters:
          k: 4.0
          b: {value: -0.5, doc: damping}
        components:
          F: {type: Se, effort: 0.0}
          v: {type: EffortJunction}
          mass: {type: I, inertia: 1.0}
          spring: {type: C, effort: "k*q", q0: 0.1}
          d: {type: R, resistance: b}
        bonds: [[F, v], [v, mass], [v, spring], [v, d]]
        """)
    for _ in range(2):  # built, then from the build record
        line = refused(*simulate(path, capsys))
        assert line.startswith(f"bondsim-ros simulate: error: {path}:4: m: parameter value(s) b = -0.5 refused "
                               f"(b enters d (resistance))"), line
    line = refused(*simulate(path, capsys, "--param", "b=0.5", "--param", "k=-1"))
    assert line.startswith("bondsim-ros simulate: error: m: parameter value(s) k = -1 refused"), line


def test_a_coefficient_that_is_infinite_is_refused_as_not_finite(tmp_path, capsys):
    """A capacitance 1/k at k = 0 is inf: positive by its sign, refused for not being a number;
    the message said "must be positive (it is inf)"."""
    path = write(tmp_path, "m.yaml", """
        model: m
        parameters: {k: 2.0}
        components:
          F: {type: Se, effort: 1.0}
          v: {type: EffortJunction}
          mass: {type: I, inertia: 1.0}
          spring: {type: C, capacitance: "1/k"}
        bonds: [[F, v], [v, mass], [v, spring]]
        """)
    line = refused(*simulate(path, capsys, "--param", "k=0"))
    assert "spring (capacitance = 1/k) must be positive (it is inf, not a finite number)" in line, line


@pytest.mark.parametrize("shape, line, message", [
    ("{type: Step, t0: 0.1,\n        after: w_reff}", 5,
     "ref (after): law 'w_reff' refused: uses unknown name(s) w_reff"),
    ("{type: Ramp, slope: 2*w_reff}", 4, "ref (slope): law '2*w_reff' refused: uses unknown name(s) w_reff"),
    ("{type: Sine, omega: w_ref, phase: 'pi/'}", 4, "ref (phase): law 'pi/' refused"),
])
def test_a_shape_key_with_a_bad_law_is_named_by_its_key_and_line(tmp_path, capsys, shape, line, message):
    """A Step's `after: w_reff` was refused through the law the shape composes from its keys
    (`law 'Piecewise((0, t < 0.1), ((w_reff), True))'`), which the user never wrote."""
    path = write(tmp_path, "m.yaml", f"""
        model: m
        parameters: {{w_ref: 2.0}}
        components:
          ref: {shape}
          F: {{type: Se, effort: u, inputs: [u]}}
          m: {{type: I, inertia: 1.0}}
        bonds: [[F, m]]
        signals: [[ref.out, F.u]]
        """)
    err = refused(*simulate(path, capsys))
    assert err.startswith(f"bondsim-ros simulate: error: {path}:{line}: {message}"), err


def test_a_parameter_that_would_remove_a_state_is_refused_by_that_consequence(capsys):
    """R = 0 in an R-C loop leaves cap.q' with no coefficient; the elimination left that
    coefficient in the capacitor's equation, which the message names after the consequence."""
    model = Path(__file__).parent / "data" / "models" / "rc_step.yaml"
    line = refused(*simulate(model, capsys, "--param", "R=0"))
    assert line == ("bondsim-ros simulate: error: rc_step: parameter value(s) R = 0 refused (R enters r "
                    "(resistance)): cap.q' would drop out of the equations: its only coefficient, -R (in cap: "
                    "e = q/C, after the elimination), must not be zero (it is 0)"), line


# ----------------------------------------------------------------- nesting
def nested_definitions(depth):
    lines = ["model: deep", "definitions:"]
    for i in range(depth - 1):
        lines.append(f"  D{i}: {{ports: {{p: in}}, components: {{x: {{type: D{i + 1}}}}}, bonds: [[self.p, x.p]]}}")
    lines.append(f"  D{depth - 1}: {{ports: {{p: in}}, components: {{m: {{type: I, inertia: 1.0}}}}, "
                 f"bonds: [[self.p, m]]}}")
    lines += ["components:", "  E: {type: Se, effort: 1.0}", "  d: {type: D0}", "bonds: [[E, d.p]]"]
    return "\n".join(lines) + "\n"


def test_definitions_nested_2000_deep_are_refused_past_the_limit(tmp_path, capsys):
    path = tmp_path / "deep.yaml"
    path.write_text(nested_definitions(2000))
    line = refused(*simulate(path, capsys, seconds=60))
    # the line of the definition whose components pass the limit, and the component path
    assert "deep.yaml:102: d.x.<96 levels>.x.x: components nested more than 100 deep: refused" in line


def test_definitions_nested_within_the_limit_simulate(tmp_path, capsys):
    path = tmp_path / "deep.yaml"
    path.write_text(nested_definitions(60))
    rc, err = simulate(path, capsys, "--csv", tmp_path / "out.csv")
    assert rc == 0, err
    assert (tmp_path / "out.csv").exists()


def test_yaml_values_nested_2000_deep_are_refused(tmp_path, capsys):
    path = tmp_path / "deep.yaml"
    path.write_text("model: m\ncomponents:\n  a: {type: I, inertia: " + "[" * 2000 + "]" * 2000 + "}\n")
    line = refused(*simulate(path, capsys, seconds=60))
    assert "deep.yaml:3: values nested more than 100 deep: refused" in line


def _lines(value):
    """A read model file's values with the lines (and words read as booleans) its mappings and lists
    were marked with."""
    if isinstance(value, dict):
        return ("map", value.line, list(value.key_lines.items()), value.key_texts, value.value_texts,
                {k: _lines(v) for k, v in value.items()})
    if isinstance(value, list):
        return ("list", value.line, value.item_lines, value.item_texts, [_lines(v) for v in value])
    return value


def test_libyamls_reading_gives_the_pure_python_readers_values_lines_and_limit():
    """Model files are read with libyaml (a 9.8 MB file took 65 s with PyYAML's own parser);
    the values, their lines and the nesting limit must be the ones PyYAML's reader gives."""
    import yaml

    from bondsim_ros.bondgraph import yamlmodel

    assert yamlmodel._CLoader is not None  # PyYAML's wheels and Debian's python3-yaml have it
    data = Path(__file__).parent / "data" / "models"
    texts = [f.read_text() for f in sorted(data.glob("*.yaml"))]
    texts.append("model: m\nbase: &b {x: [1, 2, {y: 3}]}\nuse: *b\nlist:\n  - - a\n    - b\n  - {c: d}\n")
    texts.append("model: m\nbonds:\n  - [a, b]\n  - a-b\nflow: [x,\n  y, [z]]\n")
    texts.append("model: m\nOn: yes\nlist: [NO, x, 'off']\n")
    for text in texts:
        assert _lines(yamlmodel._read_yaml(text)) == _lines(yaml.load(text, Loader=yamlmodel._Loader))
    for depth, refused_at in ((99, None), (100, 3), (150, 3)):  # the top mapping is depth 1
        text = "model: m\nx:\n  " + "[" * depth + "]" * depth + "\n"
        for read in (yamlmodel._read_yaml, lambda t: yaml.load(t, Loader=yamlmodel._Loader)):
            if refused_at is None:
                read(text)
            else:
                with pytest.raises(ModelError, match=f"line {refused_at}: values nested more than 100 deep"):
                    read(text)


def test_components_nested_past_the_limit_in_python_are_refused():
    from bondsim_ros.bondgraph import I, Se, compile_model
    from bondsim_ros.bondgraph.core import Component, Model

    model = Model("deep")
    outer = model
    for k in range(2000):
        inner = Component(f"c{k}", ports={"p": "in"})
        outer.add(inner)
        if outer is model:
            model.add(Se("E", 1.0))
            model.bond("E", inner.p)
        else:
            outer.bond(outer.p, inner.p)
        outer = inner
    outer.add(I("m", 1.0))
    outer.bond(outer.p, "m")
    with time_bound(60), pytest.raises(ModelError, match="components nested more than 100 deep"):
        compile_model(model, use_cache=False)


# ----------------------------------------------------------------- sources without dynamics
def test_an_se_and_an_sf_on_one_effort_junction_are_refused_by_name(tmp_path, capsys):
    path = write(tmp_path, "m.yaml", """
        model: m
        components:
          j: {type: EffortJunction}
          E: {type: Se, effort: 1.0}
          F: {type: Sf, flow: 2.0}
        bonds: [[E, j], [F, j]]
        """)
    line = refused(*simulate(path, capsys))
    assert "m.yaml:4: E: nothing to simulate: the source(s) E, F fix every effort and flow" in line


def test_a_source_driving_a_resistor_alone_is_refused(tmp_path, capsys):
    path = write(tmp_path, "m.yaml", """
        model: m
        components:
          E: {type: Se, effort: 1.0}
          r: {type: R, resistance: 2.0}
        bonds: [[E, r]]
        """)
    line = refused(*simulate(path, capsys))
    assert "m.yaml:3: E: nothing to simulate: the source(s) E fix" in line


def test_signal_blocks_that_compute_every_value_from_t_are_refused_as_such(tmp_path, capsys):
    """A ramp into a recorder: no source fixes anything, every value follows from t."""
    path = write(tmp_path, "sig.yaml", """
        model: sig
        components:
          r: {type: Ramp, slope: 2}
          rec: {type: Recorder, columns: [y]}
        signals: [[r.out, rec.y]]
        """)
    line = refused(*simulate(path, capsys))
    assert line == (f"bondsim-ros simulate: error: {path}:1: sig: nothing to simulate: every value of the model "
                    f"follows from t and its parameters alone: it has no storage element (I, C), no integrating "
                    f"block (Integrator, PID) and no unknown left for the solver")


# ----------------------------------------------------------------- long chains
def ladder(n, resistance="1.5", parameters=""):
    """Se, then n resistors on alternating 1- and 0-junctions, closed by an inertia."""
    lines = ["model: ladder"] + ([f"parameters: {{{parameters}}}"] if parameters else [])
    lines += ["components:", "  E: {type: Se, effort: \"sin(10*t)\"}", "  load: {type: I, inertia: 0.5}"]
    bonds = ["  - [E, j0]", f"  - [j{n - 1}, load]"]
    for k in range(n):
        lines.append(f"  j{k}: {{type: {'EffortJunction' if k % 2 == 0 else 'FlowJunction'}}}")
        lines.append(f"  r{k}: {{type: R, resistance: {resistance}}}")
        bonds.append(f"  - [j{k}, r{k}]")
        if k + 1 < n:
            bonds.append(f"  - [j{k}, j{k + 1}]")
    return "\n".join(lines + ["bonds:"] + bonds) + "\n"


def test_a_ladder_of_resistors_given_as_a_parameter_matches_the_numbers(tmp_path, capsys):
    """The parametric pivots (R = k) must eliminate their unknown completely: the parameter's
    k*(x + v) - k*v is not multiplied out by sympy, and an unknown left behind in the reduced
    equations failed code generation ("unmapped symbol")."""
    out = {}
    for name, text in (("num", ladder(100)), ("par", ladder(100, "k", "k: 1.5"))):
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        rc, err = simulate(path, capsys, "--no-cache", "--csv", tmp_path / f"{name}.csv")
        assert rc == 0, err
        out[name] = np.genfromtxt(tmp_path / f"{name}.csv", delimiter=",", names=True)
    assert out["num"].dtype.names == out["par"].dtype.names
    for col in out["num"].dtype.names:
        np.testing.assert_allclose(out["par"][col], out["num"][col], rtol=1e-6, atol=1e-9)


# ----------------------------------------------------------------- Python model files
@pytest.mark.parametrize("code, expected", [
    ("def build(:\n    pass\n", "bad.py:1: SyntaxError: invalid syntax"),
    ("def build():\n    x = 1\n     y = 2\n", "bad.py:3: IndentationError: unexpected indent"),
    ("import os\nimport no_such_module_here\n", "bad.py:2: ModuleNotFoundError: No module named 'no_such_module_here'"),
    ("def inner():\n    return 1 / 0\n\ndef build():\n    return inner()\n",
     "bad.py:2: ZeroDivisionError: division by zero"),
    # sys.exit in a model file used to end the command with its status, 0 with nothing done
    ("import sys\n\ndef build():\n    sys.exit(0)\n",
     "bad.py:4: SystemExit(0): a model file's code must not end the program"),
    ("import sys\nsys.exit('no')\n", "bad.py:2: SystemExit('no'): a model file's code must not end the program"),
    # a modelling mistake in the file's calls: at its line, in the engine's own words
    ("from bondsim_ros.bondgraph import Model, EffortJunction, I\n\ndef build():\n    m = Model('msd')\n"
     "    v = m.add(EffortJunction('v'))\n    m.add(I('mass', 2.0))\n    m.bond(v, 'mas')\n    return m\n",
     "bad.py:7: msd: bond target: no component 'mas' in this document"),
    ("from bondsim_ros.bondgraph import Model, I\nm = Model('top')\nm.add(I('a', 1.0), I('a', 2.0))\n",
     "bad.py:3: top: duplicate component name 'a'"),
])
def test_a_python_model_file_that_fails_is_named_by_file_and_line(tmp_path, capsys, monkeypatch, code, expected):
    path = tmp_path / "bad.py"
    path.write_text(code)
    line = refused(*simulate(path, capsys))
    assert line == f"bondsim-ros simulate: error: {path.parent}/{expected}"
    # the path as typed, a syntax error's too (the interpreter names the file by its absolute path)
    monkeypatch.chdir(tmp_path.parent)
    line = refused(*simulate(Path(tmp_path.name) / "bad.py", capsys))
    assert line == f"bondsim-ros simulate: error: {tmp_path.name}/{expected}"


def test_a_syntax_error_in_a_module_beside_the_model_file_names_that_module(tmp_path, capsys, monkeypatch):
    (tmp_path / "values.py").write_text("V0 = (\n")
    (tmp_path / "bad.py").write_text("import values\n")
    monkeypatch.chdir(tmp_path)
    line = refused(*simulate("bad.py", capsys))
    assert line == "bondsim-ros simulate: error: values.py:1: SyntaxError: '(' was never closed"


def test_a_ladder_of_1000_resistors_given_as_a_parameter_builds_in_bounded_time(tmp_path, capsys):
    """Without a cap on the equations that spread parametric coefficients, the elimination of
    this ladder grew cubically (300 resistors: 11 s; 1000 did not finish in 4 minutes)."""
    path = tmp_path / "ladder.yaml"
    path.write_text(ladder(1000, "k", "k: 1.5"))
    rc, err = simulate(path, capsys, "--no-cache", "--csv", tmp_path / "out.csv", seconds=90)
    assert rc == 0, err
    out = np.genfromtxt(tmp_path / "out.csv", delimiter=",", skip_header=1)
    assert out.shape == (6, 2) and np.all(np.isfinite(out))  # t and load.p, 0 ... 0.05 s


def test_equations_nested_past_the_recursion_limit_are_refused_by_name():
    """sympy recurses once per level of an expression, and the elimination nests parametric
    coefficients: a ladder of 10 000 resistors given as a parameter passed Python's recursion
    limit after 99 s (RecursionError). Here a limit a few levels above the caller's stands in
    for that ladder: the refusal is a ModelError naming the model, not a RecursionError."""
    import inspect
    import sys

    from bondsim_ros.bondgraph.equations import build_dae
    from bondsim_ros.bondgraph.reduce import reduce_dae
    from bondsim_ros.bondgraph.yamlmodel import loads_model

    raw = build_dae(loads_model(ladder(100, "k", "k: 1.5"), "ladder.yaml"))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 30)
    try:
        with pytest.raises(ModelError) as err:
            reduce_dae(raw)
    finally:
        sys.setrecursionlimit(limit)
    assert str(err.value).startswith("ladder: the eliminated equations nest deeper than the symbolic reduction "
                                     "can follow (403 equations; a long chain whose values are run-time "
                                     "parameters)"), err.value


# ----------------------------------------------------------------- keys no reader takes
RC = """
    model: rc
    parameters:
      R: {value: 2.0, doc: "resistance [ohm]"}
      C: 0.5
    components:
      V: {type: Se, effort: 1.0}
      loop: {type: EffortJunction}
      r: {type: R, resistance: R}
      cap: {type: C, capacitance: C}
    bonds: [[V, loop], [loop, r], [loop, cap]]
    """


@pytest.mark.parametrize("old, new, where, says", [
    # a misspelt section far down the file: named at its own line, not at the mapping's first
    ("bonds: [[V, loop]", "bond: [[V, loop]", "m.yaml:10:", "unexpected top-level key(s): bond"),
    ("model: rc", "modle: rc", "m.yaml:1:", "unexpected top-level key(s): modle"),
    # a key the parameter reader does not take would leave the value as written (2000 "mohm")
    ('R: {value: 2.0, doc: "resistance [ohm]"}', "R: {value: 2000, unit: mohm}", "m.yaml:3:",
     "R: a parameter given as a mapping has 'value:' and optionally 'doc:' (values are in SI units), "
     "got unknown key(s) 'unit'"),
    ("C: 0.5", "C: {valeu: 0.5}", "m.yaml:4:", "C: a parameter given as a mapping has 'value:' and optionally "
     "'doc:' (values are in SI units), got unknown key(s) 'valeu'"),
    ("C: 0.5", "C: {doc: capacitance}", "m.yaml:4:", "got no 'value:'"),
])
def test_a_key_no_reader_takes_is_refused_at_its_line(tmp_path, capsys, old, new, where, says):
    text = textwrap.dedent(RC).lstrip()
    assert old in text
    path = write(tmp_path, "m.yaml", text.replace(old, new))
    assert simulate(write(tmp_path, "ok.yaml", text), capsys)[0] == 0
    line = refused(*simulate(path, capsys))
    assert where in line and says in line, line


@pytest.mark.parametrize("value", ["1_0", "\u0661"])
def test_a_number_option_takes_decimal_digits_only(tmp_path, capsys, value):
    """--t-end 1_0 ran 10 s and --t-end with an Arabic-Indic one ran 1 s: Python's float reads
    both; every number option reads what --param reads."""
    with pytest.raises(SystemExit) as stop:  # argparse's own refusal
        main(["simulate", "mass_spring_damper", "--t-end", value, "-q"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"argument --t-end: invalid number value: '{value}'" in err, err


@pytest.mark.parametrize("value", ["1_0", "\u0661", "\uff15"])
@pytest.mark.parametrize("words, option", [
    (["simulate", "mass_spring_damper", "--max-order"], "--max-order"),
    (["render", "in.xml", "-o", "out.mp4", "--fps"], "--fps"),
    (["render", "in.xml", "-o", "out.mp4", "--every"], "--every"),
    (["render", "in.xml", "-o", "out.png", "--row"], "--row"),
    (["render", "in.xml", "-o", "out.mp4", "--jobs"], "--jobs/-j"),
    (["draw", "mass_spring_damper", "-o", "out.svg", "--depth"], "--depth"),
    (["sweep", "mass_spring_damper", "--param", "k=1,2", "-o", "out.csv", "--jobs"], "--jobs/-j"),
    (["sweep", "mass_spring_damper", "--param", "k=1,2", "-o", "out.csv", "--chunksize"], "--chunksize"),
    (["fit", "omni5dpo", "d.csv", "--params", "k", "--outputs", "x", "--max-evals"], "--max-evals"),
    (["fleet"], "N"), (["fleet", "2", "--processes"], "--processes/-p"), (["up", "--foxglove"], "--foxglove"),
])
def test_a_whole_number_option_takes_decimal_digits_only(tmp_path, monkeypatch, capsys, words, option, value):
    """int() reads 1_0 as 10 and any script's digits (a full-width 5 as 5): `fleet 1_0` started
    ten twins, `render --fps 1_0` made a 10 fps video. Every whole-number option reads only what
    a number option reads."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([*words, value])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"argument {option}: invalid integer value: '{value}'" in err, err


@pytest.mark.parametrize("value", ["1_0", "\u0661"])
def test_sweep_output_times_take_decimal_digits_only(tmp_path, monkeypatch, capsys, value):
    """--at 1_0 sampled the runs at t = 10 (float's reading) under a column named @10."""
    monkeypatch.chdir(tmp_path)
    code = main(["sweep", "mass_spring_damper", "--param", "k=1,2", "-o", "out.csv", "--at", value, "-q"])
    err = capsys.readouterr().err
    assert code != 0 and f"--at expects comma-separated times, got '{value}'" in err, err
    assert not (tmp_path / "out.csv").exists()


# ----------------------------------------------------------------- the cache
def test_no_cache_writes_no_build_record(tmp_path, capsys, monkeypatch):
    """`simulate --no-cache` wrote the build record (models/r_*.json) its help says it does not
    write: the next run without the option then took the model from that record."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(cache))
    model = tmp_path / "rc.yaml"
    model.write_text((Path(__file__).parent / "data" / "models" / "rc_step.yaml").read_text())
    for spec in (model, "mass_spring_damper"):
        rc, err = simulate(spec, capsys, "--no-cache")
        assert rc == 0, err
    assert list((cache / "models").glob("r_*.json")) == []
    rc, err = simulate(model, capsys)  # without the option: the record is written
    assert rc == 0 and len(list((cache / "models").glob("r_*.json"))) == 1, err


# ----------------------------------------------------------------- outputs over the model's own files
GAINS_MODEL = """
    from bondsim_ros.bondgraph import C, EffortJunction, I, Model, R, Se
    import gains

    def build():
        m = Model("msd_gains")
        v = m.add(EffortJunction("v", output=True))
        m.add(Se("F", 1.0), I("mass", 2.0), C("spring", 1.0 / gains.K), R("damper", 0.5))
        m.bond("F", v)
        for n in ("mass", "spring", "damper"):
            m.bond(v, n)
        return m
    """


@pytest.mark.parametrize("args", [["--csv", "gains.py"], ["--csv", "link.csv"], ["--plot", "link.png"]],
                         ids=["csv", "csv-link", "plot-link"])
def test_an_output_over_a_module_the_model_file_imports_is_refused(tmp_path, capsys, monkeypatch, args):
    """`simulate motor.py --csv gains.py` (motor.py imports gains.py) replaced gains.py with the
    CSV: only the model file itself was checked. Refused before any work, from the build just
    made and from the build record alike."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "cache"))
    model = write(tmp_path, "motor.py", GAINS_MODEL)
    (tmp_path / "gains.py").write_text("K = 4.0\n")
    (tmp_path / "link.csv").symlink_to("gains.py")
    (tmp_path / "link.png").symlink_to("gains.py")
    for built in ("built now", "from its record"):
        line = refused(*simulate(model.name, capsys, *args))
        assert line == (f"bondsim-ros simulate: error: {args[0]} {args[1]}: refusing to overwrite "
                        f"{'gains.py' if args[1] == 'gains.py' else tmp_path / 'gains.py'}, "
                        f"a file the model is built from"), built
        assert (tmp_path / "gains.py").read_text() == "K = 4.0\n"
        rc, err = simulate(model.name, capsys, "--csv", "out.csv")  # the record written
        assert rc == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "gains.py", "link.csv", "link.png", "motor.py",
                                                          "out.csv"]


def test_an_output_over_the_robotino_config_is_refused(tmp_path, capsys, monkeypatch):
    """With $BONDSIM_ROBOTINO_CONFIG naming the Robotino's parameter file, `simulate robotino_twist
    --csv` of that file replaced the parameters with the CSV."""
    config = tmp_path / "robotino.yaml"
    text = (Path(__file__).resolve().parents[1] / "config" / "robotino.yaml").read_text()
    config.write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BONDSIM_ROBOTINO_CONFIG", str(config))
    for built in ("built now", "from its record"):
        line = refused(*simulate("robotino_twist", capsys, "--csv", "robotino.yaml"))
        assert line == ("bondsim-ros simulate: error: --csv robotino.yaml: refusing to overwrite robotino.yaml, "
                        "a file the model is built from"), built
        assert config.read_text() == text
        rc, err = simulate("robotino_twist", capsys, "--csv", "out.csv")
        assert rc == 0, err
