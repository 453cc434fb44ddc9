"""The law language reads a law as written: ``^`` is ``**`` with its precedence and right
associativity, values that can only be NaN at run time are refused by name and line, and the
parser's work is bounded whatever the text (docs/engine.md, "The law language")."""
import math
import re
import textwrap
import time

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from bondsim_ros.bondgraph import compile_model, simulate
from bondsim_ros.bondgraph.laws import (MAX_DIGITS, MAX_MINMAX_ARGS, MAX_MINMAX_TOTAL, MAX_MOD_NODES, LawError,
                                        Mod, parse_law)
from bondsim_ros.bondgraph.yamlmodel import loads_model
from bondsim_ros.cli import main
from time_limit import time_bound  # noqa: E402
from bondsim_ros.solver import SolverOptions  # noqa: E402

X, Y, Z, Q, K, A = (sp.Symbol(n, real=True) for n in ("x", "y", "z", "q", "k", "a"))
NAMES = {"x": X, "y": Y, "z": Z, "q": Q, "k": K, "a": A}


# ---------------------------------------------------------------- ^ is ** exactly
@pytest.mark.parametrize("law, expected", [
    ("k*q + a*q^3", K * Q + A * Q ** 3),
    ("x^2 + 1", X ** 2 + 1),
    ("a*x^2", A * X ** 2),
    ("-x^2", -(X ** 2)),
    ("-2^2", sp.Integer(-4)),
    ("x^y^z", X ** (Y ** Z)),
    ("(x^y)^z", (X ** Y) ** Z),
    ("x % 3^2", Mod(X, 9)),
    ("2^-1*x", X / 2),
    ("x^2^-1", X ** sp.Rational(1, 2)),
    ("k*q^3 + a*q ^ 2 / 2", K * Q ** 3 + A * Q ** 2 / 2),
])
def test_caret_is_a_power_with_the_precedence_of_starstar(law, expected):
    assert parse_law(law, NAMES) == expected
    assert parse_law(law, NAMES) == parse_law(law.replace("^", "**"), NAMES)


DUFFING = """\
model: duffing
parameters: {m: 1.0, k: 1.0, a: 5.0, b: 0.2}
components:
  mass: {type: I, inertia: m}
  spring: {type: C, effort: "k*q + a*q^3", q0: 1.0}
  damper: {type: R, resistance: b}
  j: {type: EffortJunction}
bonds: [[j, mass], [j, spring], [j, damper]]
"""


def test_a_duffing_spring_written_with_caret_simulates_to_the_oracle():
    """m q'' + b q' + k q + a q^3 = 0 from q(0) = 1 at rest, against scipy's solve_ivp."""
    m, k, a, b = 1.0, 1.0, 5.0, 0.2
    # built afresh: generated code cached under the law's text would not show how it is read now
    model = compile_model(loads_model(DUFFING, "duffing.yaml"), use_cache=False)
    res = simulate(model, t_end=2.0, dt_out=0.5, options=SolverOptions(rtol=1e-9, atol=1e-11))
    ref = solve_ivp(lambda t, y: [y[1] / m, -(k * y[0] + a * y[0] ** 3) - b * y[1] / m], (0.0, 2.0),
                    [1.0, 0.0], t_eval=res.t, rtol=1e-11, atol=1e-13, method="DOP853")
    np.testing.assert_allclose(res["spring.q"], ref.y[0], atol=1e-5)
    np.testing.assert_allclose(res["mass.p"], ref.y[1], atol=1e-5)


# ---------------------------------------------------------------- refused values, by name and line
def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@pytest.mark.parametrize("law, refused", [
    ("asin(2)*q", "'asin(2)' is not real"),
    ("acos(3) + q", "'acos(3)' is not real"),
    ("(-8)**(1/3)*q", "'(-8)**(1/3)' is not real"),
    ("(-1)**(1/3)*q", "'(-1)**(1/3)' is not real"),
    ("abs(asin(2))*q", "'asin(2)' is not real"),
    ("(-2.0)^0.5*q", "'(-2.0)**0.5' is not real"),
    ("exp(1000)*q", "'exp(1000)' is not finite"),
    ("atan2(0, 0)*q", "'atan2(0, 0)' divides by zero"),
    ("q + 0.5 % 0", "'0.5 % 0' divides by zero"),
    ("q/clip(0, -1, 1)", "'q/clip(0, -1, 1)' divides by zero"),
    ("q % (2 - 2)", "'q % (2 - 2)' divides by zero"),
    ("q*clip(-2, -3, -1)^0.5", "'clip(-2, -3, -1)**0.5' is not real"),
    ("q + clip(2^q + 1, -2, -1)^1.5", "*I' (as sympy holds the law) is not real"),
    ("q + sqrt(clip(2^q + 1, -2, -1))", "'I' (as sympy holds the law, clip(u, lo, hi) read as Min(Max(u, lo), hi)) "
                                        "is not real"),
    ("q/clip(q^2 + 1, -1, 0)", "divides by zero or is not finite (clip(u, lo, hi) read as Min(Max(u, lo), hi))"),
    ("q*Piecewise((-2, q < 1), (1, True))**1.5", "*I' (as sympy holds the law) is not real"),
    ("Piecewise((q, q > 0))", "'Piecewise((q, q > 0))' has no default branch"),
    ("Piecewise((q, q > 0), (2*q, q < 0))", "has no default branch"),
    ("clip(q, 2, 1)", "'clip(q, 2, 1)' has its lower bound above its upper bound"),
    # sympy's sqrt(u, 3) is sqrt(u) (its second argument is a flag) and log(u, 0) is 0
    ("sqrt(q, 3)", "'sqrt(q, 3)': sqrt takes one argument"),
    ("log(q, 0)", "'log(q, 0)': the base of a logarithm is a positive number other than 1"),
    ("log(q, 1.0)", "the base of a logarithm is a positive number other than 1"),
    ("log(q, -2)", "the base of a logarithm is a positive number other than 1"),
    # a value where a condition belongs: `t > 1 & q < 5` is t > (1 & q) < 5 to Python, and sympy
    # took 1 & q as q; a bare name as a branch's condition failed later with a TypeError
    ("Piecewise((1, t > 1 & q < 5), (0, True))", "'1' is a value where a condition belongs"),
    ("Piecewise((1, q), (0, True))", "'q' is a value where a condition belongs"),
    ("Piecewise((1, (t > 1) | q), (0, True))", "is a value where a condition belongs"),
    ("clip(q, 0.5, -0.5)", "'clip(q, 0.5, -0.5)' has its lower bound above its upper bound"),
])
def test_values_that_can_only_be_nan_are_refused_by_name_and_line(tmp_path, monkeypatch, capsys, law, refused):
    # a cache of its own: code generated for the same law text elsewhere would not be read again
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "cache"))
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
    with time_bound(60):
        rc = main(["simulate", str(path), "--t-end", "0.05", "--dt-out", "0.01", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert "law.yaml:7: spring (effort law)" in err, err[:300]
    assert refused in err, err[:300]


@pytest.mark.parametrize("law", [
    "Piecewise((q, q > 0), (0, True))", "clip(q, -1, 1)", "clip(q, 1, 1)", "clip(q, k, 1)", "asin(1/2)*q",
    "sqrt(2)*q", "8**(1/3)*q", "(-8)**2*q", "log(2)*q", "exp(700)*q", "(-2.0)**2*q",
])
def test_real_constants_and_complete_piecewise_are_accepted(law):
    assert not parse_law(law, NAMES).has(sp.I, sp.nan, sp.zoo)


# ---------------------------------------------------------------- bounded work, no over-refusal
def _timed(law):
    """The parse's outcome and its CPU time: the work the parser does, which other processes on a
    loaded machine do not stretch as they stretch wall time."""
    tic = time.process_time()
    try:
        out = parse_law(law, NAMES)
    except LawError as exc:
        out = exc
    return out, time.process_time() - tic


@pytest.mark.parametrize("law, refused", [
    ("Max(" + ", ".join(f"{i}*x" for i in range(600)) + ")", f"(limit {MAX_MINMAX_ARGS}"),
    ("Max(" + ", ".join(f"{i}*x" for i in range(1200)) + ")", f"(limit {MAX_MINMAX_ARGS}"),
    ("max(" + ", ".join(f"max({i}*x, {i}*y)" for i in range(300)) + ")", f"(limit {MAX_MINMAX_TOTAL} a law)"),
    ("+".join(f"max({i}*x, {i}*y)" for i in range(300)), f"(limit {MAX_MINMAX_TOTAL} a law)"),
    ("1." + "3" * 20000 + "*x", f"(limit {MAX_DIGITS})"),
    ("0." + "3" * 5000, f"(limit {MAX_DIGITS})"),
    ("10**10**10", "too large"),
    ("2**-(10**9)*x", "too large"),
    ("(2*x)**(10**9)", "larger than 1000"),
    ("mod(" + "+".join(f"sin({i}*x)" for i in range(100)) + ", 7)", f"(limit {MAX_MOD_NODES})"),
    ("(" + "+".join(f"sin({i}*x)" for i in range(100)) + ") % y", f"(limit {MAX_MOD_NODES})"),
    ("*".join(f"(x+{i})" for i in range(1000)) + " % 7", f"(limit {MAX_MOD_NODES})"),
    ("+".join(f"x % {i + 1}" for i in range(100)), f"(limit {MAX_MOD_NODES})"),
])
def test_costly_laws_are_refused_quickly(law, refused):
    with time_bound(60):
        out, seconds = _timed(law)
    assert isinstance(out, LawError) and refused in str(out), out
    # bounded work, not a stopwatch: the slowest of these takes 0.2 s of CPU alone and took 0.51 s
    # once in a full run on two virtual CPUs (a busy sibling stretches CPU time too); unbounded
    # work on these texts takes minutes
    assert seconds < 2.0, seconds


def test_a_long_product_is_the_product_of_its_factors():
    law = "*".join(["2", "x", "y/3", "(x + 1)"] * 20) + " % 5 * x"
    assert parse_law(law, NAMES) == Mod((2 * X * Y / 3 * (X + 1)) ** 20, 5) * X


def test_a_min_or_max_within_the_limit_is_read_as_sympy_reads_it():
    law = "Max(" + ", ".join(f"{i}*x" for i in range(MAX_MINMAX_ARGS)) + ")"
    assert parse_law(law, NAMES) == sp.Max(*[i * X for i in range(MAX_MINMAX_ARGS)])


@pytest.mark.parametrize("law, value", [
    ("0.5**1e6 + x", 1.0),
    ("1e-300**2 + x", 1.0),
    ("2.0**-3000 + x", 1.0),
    ("+".join(["x"] * 15000), 15000.0),
    ("x" + "-x+x" * 5000, 1.0),
    ("x" + "*x/x" * 5000, 1.0),
    ("+".join(f"{i}*x" for i in range(10000)), 10000 * 9999 / 2),
    ("*".join(f"(x+{i})/(x+{i + 1})" for i in range(1, 2001)), 2 / 2002),
    ("*".join(f"(x/{i} + 1)" for i in range(1, 1001)) + " / 2", 1001 / 2),
])
def test_tiny_powers_and_long_flat_chains_are_accepted(law, value):
    with time_bound(60):
        out, seconds = _timed(law)
    assert not isinstance(out, LawError), out
    assert float(out.subs(X, 1.0)) == pytest.approx(value, rel=1e-12)
    # bounded work, not a stopwatch: the slowest (10,000 terms, sympy collecting them) takes 1.1 s
    # of CPU alone and took 2.2 s in a CI run on two busy virtual CPUs; work growing with the
    # square of the chain's length, what this guards against, takes minutes on these texts
    assert seconds < 10.0, seconds


@pytest.mark.parametrize("law, refused", [
    ("\uff4b*x", "U+FF4B) stands for 'k'"),  # full-width k: Python's reader folds it to k
    ("\ufb01 + x", "stands for 'fi'"),  # the fi ligature
    ("x\u00b2", "is a superscript: write a power with ^"),
    ("x\u207b\u00b9", "is a superscript: write a power with ^"),
])
def test_characters_python_reads_as_others_are_refused_not_folded(law, refused):
    """Python folds the names it reads to NFKC: a full-width k would silently be the parameter k,
    which the law as written does not name (an unknown name is refused, never guessed)."""
    with pytest.raises(LawError, match=re.escape(refused)):
        parse_law(law, {**NAMES, "k": sp.Symbol("k"), "fi": sp.Symbol("fi")})


def test_greek_names_read_as_written():
    theta = sp.Symbol("\u03b8")
    assert parse_law("2*\u03b8", {"\u03b8": theta}) == 2 * theta


@pytest.mark.parametrize("law, values, a, c", [
    # sympy 1.14 simplified these symbolic remainders to the wrong sign; a, c: the arguments' values
    ("mod(-q/2, q)", {"q": 2.0}, -1.0, 2.0),
    ("mod(-x, 2*x)", {"x": 1.5}, -1.5, 3.0),
    ("mod(x, -2*x)", {"x": 1.5}, 1.5, -3.0),
    ("mod(-0.2*a, a)", {"a": 3.0}, -0.6, 3.0),
    ("((-3-3/5)*y) % y", {"y": 2.0}, -7.2, 2.0),
    ("Mod(-pi/2, pi)", {}, -math.pi / 2, math.pi),
    ("z % -z + mod(2*x, x)", {"x": 1.5, "z": 0.7}, 0.0, 1.0),
])
def test_a_remainder_has_the_sign_of_its_divisor_as_pythons(law, values, a, c):
    """mod(a, c) and a % c are a - c floor(a/c) whatever the symbols in a and c (docs/engine.md)."""
    value = float(parse_law(law, NAMES).subs({NAMES[k]: v for k, v in values.items()}))
    assert value == pytest.approx(a % c, abs=1e-12)


def test_a_remainder_formed_by_the_wiring_has_the_sign_of_its_divisor(tmp_path, monkeypatch):
    """A Function 'mod(a, b)' fed -x and 2x (x = 1 + t, integrated): the elimination substitutes
    the signals into the law, forming mod(-x, 2x), which is x (sympy's simplification made it -x)."""
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path))
    model = loads_model(textwrap.dedent("""\
        model: mod_wiring
        components:
          one: {type: Function, expr: "1", inputs: []}
          x: {type: Integrator, x0: 1.0}
          split: {type: Node, n: 2}
          neg: {type: Gain, k: -1.0}
          dbl: {type: Gain, k: 2.0}
          r: {type: Function, expr: "mod(a, b)", inputs: [a, b]}
          rec: {type: Recorder, columns: [r]}
        signals:
          - [one.out, x.in_]
          - [x.out, split.in_]
          - [split.out1, neg.in_]
          - [split.out2, dbl.in_]
          - [neg.out, r.a]
          - [dbl.out, r.b]
          - [r.out, rec.r]
        """), "mod_wiring.yaml")
    result = simulate(model, t_end=1.0, dt_out=0.25)
    x = 1.0 + np.asarray(result.t)
    np.testing.assert_allclose(result["r"], np.mod(-x, 2 * x), rtol=1e-12)
    np.testing.assert_allclose(result["r"], x, rtol=1e-12)
