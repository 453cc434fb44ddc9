"""Random benign laws read by the project's parser and by sympy's own (``parse_expr`` with
``convert_xor``, which runs the text as Python on sympy objects): both readings must give the
same values. A seeded generator covers numbers, names, ``+ - * / % ** ^``, unary signs,
parentheses, every function of ``laws.FUNCTIONS`` and Piecewise with a default branch.

``BONDSIM_LAW_CASES`` sets the number of laws (default 600, about five seconds);
``BONDSIM_LAW_SEED`` the seed."""
import ast
import cmath
import collections
import math
import os
import random
import re

import sympy as sp
from sympy.parsing.sympy_parser import convert_xor, parse_expr, standard_transformations

from bondsim_ros.bondgraph.laws import FUNCTIONS, LawError, Mod, clip, parse_law
from time_limit import time_bound  # noqa: E402

CASES = int(os.environ.get("BONDSIM_LAW_CASES", "600"))
SEED = int(os.environ.get("BONDSIM_LAW_SEED", "20261125"))
POINTS = 3
MAX_CHARS = 300  # longer random laws get Piecewise of Piecewise that sympy itself takes minutes over

SYMBOLS = {n: sp.Symbol(n, real=True) for n in ("x", "y", "z", "k")}


def _clip(u, lo, hi):
    return sp.Min(sp.Max(u, lo), hi)


ONE_ARG = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log", "sqrt", "Abs",
           "abs", "sign", "floor", "ceiling", "Heaviside"]
TWO_ARGS = ["atan2", "Mod", "mod"]
MANY_ARGS = ["Min", "Max", "min", "max"]
assert set(ONE_ARG + TWO_ARGS + MANY_ARGS + ["clip", "Piecewise"]) == set(FUNCTIONS), \
    "a function of the law language the generator does not call"


def _mod(a, c):
    """a % c by its definition, a - c floor(a/c): sympy's Mod simplifies some symbolic arguments
    wrongly (Mod(-x, 2*x) is -x in sympy 1.14), so it cannot be the oracle; of two numbers,
    sympy's (2 % 0.1 is 0.0999..., as in doubles)."""
    if a.is_Number and c.is_Number:
        return sp.Mod(a, c)
    return a - c * sp.floor(a / c)


# sympy's own functions by their names, the project's lowercase ones, clip (min(max(u, lo), hi))
# and Mod by its definition
ORACLE_NAMES = {**{n: getattr(sp, n) for n in FUNCTIONS if n not in ("abs", "min", "max", "mod", "Mod", "clip")},
                "abs": sp.Abs, "min": sp.Min, "max": sp.Max, "mod": _mod, "Mod": _mod, "clip": _clip,
                "pi": sp.pi, "E": sp.E, **SYMBOLS}
TRANSFORMS = standard_transformations + (convert_xor,)

INTS = ["0", "1", "2", "3", "4", "7", "10", "12"]
FLOATS = ["0.5", "1.5", "2.25", "0.1", "3.75", "1e-3", "2.5e2", "1.", ".25", "6.0E-1"]
EXPONENTS = ["2", "3", "-1", "-2", "0.5", "1.5", "x", "y", "(1/2)", "(-1)", "k"]


class Gen:
    """Law text built from tokens, without parentheses the grammar does not need: the
    readings have to agree on precedence, not only on a tree written out in full."""

    def __init__(self, rng):
        self.rng = rng

    def sp(self):
        return self.rng.choice(["", " ", " ", "  "])

    def atom(self):
        r = self.rng.random()
        if r < 0.45:
            return self.rng.choice(list(SYMBOLS))
        if r < 0.7:
            return self.rng.choice(INTS)
        if r < 0.92:
            return self.rng.choice(FLOATS)
        return self.rng.choice(["pi", "E"])

    def unit(self, depth):
        """An operand of * / % + -: a primary, maybe raised (a tower of at most two), maybe signed."""
        r = self.rng.random()
        if depth <= 0 or r < 0.45:
            base = self.atom()
        elif r < 0.7:
            base = self.call(depth - 1)
        elif r < 0.85:
            base = "(" + self.expr(depth - 1) + ")"
        else:
            base = self.piecewise(depth - 1)
        if self.rng.random() < 0.3:
            for _ in range(self.rng.choice([1, 1, 1, 2])):
                base += self.sp() + self.rng.choice(["^", "**"]) + self.sp() + self.rng.choice(EXPONENTS)
        if self.rng.random() < 0.2:
            base = self.rng.choice(["-", "+", "- ", "-"]) + base
        return base

    def expr(self, depth):
        text = self.unit(depth)
        for _ in range(self.rng.choice([0, 1, 1, 2, 3])):
            op = self.rng.choice(["+", "-", "*", "/", "%", "+", "-", "*"])
            text += self.sp() + op + self.sp() + self.unit(depth)
        return text

    def call(self, depth):
        r = self.rng.random()
        if r < 0.55:
            fn, n = self.rng.choice(ONE_ARG), 1
        elif r < 0.75:
            fn, n = self.rng.choice(TWO_ARGS), 2
        elif r < 0.92:
            fn, n = self.rng.choice(MANY_ARGS), self.rng.randint(2, 4)
        else:
            lo, hi = sorted(self.rng.uniform(-3, 3) for _ in range(2))
            bounds = self.rng.choice([[f"{lo:.3g}", f"{hi:.3g}"], ["-k", "k"], ["y", "y + 1"]])
            return f"clip({self.expr(depth)}, {bounds[0]}, {bounds[1]})"
        return fn + "(" + ("," + self.sp()).join(self.expr(depth) for _ in range(n)) + ")"

    def condition(self, depth):
        r = self.rng.random()
        rel = self.rng.choice(["<", "<=", ">", ">="])
        one = f"({self.expr(depth)} {rel} {self.expr(depth)})"
        if r < 0.6:
            return one
        if r < 0.8:
            return f"{one} {self.rng.choice(['&', '|'])} ({self.atom()} {rel} {self.expr(depth)})"
        return f"~{one}"

    def piecewise(self, depth):
        branches = [f"({self.expr(depth)}, {self.condition(depth)})" for _ in range(self.rng.randint(1, 3))]
        branches.append(f"({self.expr(depth)}, True)")
        return "Piecewise(" + ", ".join(branches) + ")"


def _numeric(expr):
    """The project's reading with clip and Mod by their definitions, as the oracle reads them."""
    expr = expr.replace(lambda e: isinstance(e, clip), lambda e: _clip(*e.args))
    return expr.replace(lambda e: isinstance(e, Mod), lambda e: _mod(*e.args))


def _value(expr, point):
    """The law's value at ``point`` as a float, None where it is not a finite real."""
    try:
        v = complex(expr.xreplace(point))
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        return None
    if v.imag != 0 or not cmath.isfinite(v):
        return None
    return v.real


def _has_bad_constant(expr) -> bool:
    """Whether a reading contains a constant that is NaN, infinite or not real in doubles (the
    project refuses such laws, sympy keeps them)."""
    if expr.has(sp.nan, sp.zoo, sp.oo, -sp.oo, sp.I):
        return True
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Expr) and not node.is_Atom and not node.free_symbols:
            try:
                v = complex(node)
            except (TypeError, ValueError):
                continue
            except (OverflowError, ZeroDivisionError):
                return True
            if v.imag != 0 or not cmath.isfinite(v):
                return True
    return False


def _modulo_zero(text) -> bool:
    """Whether ``text`` is ``a % b`` with b zero (sympy's Float % 0 is the Float, no error; in
    doubles it is NaN)."""
    node = ast.parse(text.replace("^", "**"), mode="eval").body
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)):
        return False
    right = ast.get_source_segment(text.replace("^", "**"), node.right)
    return parse_expr(right, local_dict=dict(ORACLE_NAMES), transformations=TRANSFORMS) == 0


SIZE_LIMITS = ("too large", "is larger than", "digits", "arguments")


class Stalled(Exception):
    pass


class _RemainderCalls(ast.NodeTransformer):
    """a % b as Mod(a, b): the oracle's remainder by its definition (_mod), not sympy's."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Mod):
            return ast.Call(ast.Name("Mod", ast.Load()), [node.left, node.right], [])
        return node


def _oracle(text, evaluate=True):
    text = ast.unparse(_RemainderCalls().visit(ast.parse(text.replace("^", "**"), mode="eval")))
    return parse_expr(text, local_dict=dict(ORACLE_NAMES), transformations=TRANSFORMS, evaluate=evaluate)


def check(case, text, rng) -> str:
    """Read ``text`` both ways and compare; returns how the case ended."""
    # the project answers every law in bounded time; sympy's own reading may stall or recurse
    # (a Piecewise of conditions on complex constants): then there is nothing to compare
    with time_bound(20, TimeoutError(f"case {case}: no answer within 20 s to {text!r}")):
        try:
            mine = parse_law(text, SYMBOLS)
        except LawError as exc:
            mine = exc
    try:
        with time_bound(10, Stalled()):
            oracle = _oracle(text)
    except Stalled:
        return "sympy stalled"
    except RecursionError:
        return "sympy recursed"
    except (TypeError, ValueError, ArithmeticError):
        assert isinstance(mine, LawError), f"case {case}: sympy cannot read {text!r}, the project reads {mine}"
        return "refused with sympy"
    if isinstance(mine, LawError):
        exc = mine
        if any(s in str(exc) for s in SIZE_LIMITS):
            return "size limit"
        # the refusal names a constant subexpression (sympy may simplify it away: E/0**-1 is 0)
        named = re.match(r"'(.*)' (is not|divides)", str(exc))
        if named is None:
            assert _has_bad_constant(oracle), f"case {case}: refused ({exc}): {text!r}, sympy reads {oracle}"
            return "refused with sympy"
        part = named.group(1)
        if part.endswith("..."):
            return "refusal not checked"
        # read evaluated (1**x is 1) and not (sympy's own Float % 0 is the Float, no error)
        assert _has_bad_constant(_oracle(part)) or _has_bad_constant(_oracle(part, False)) or _modulo_zero(part), \
            f"case {case}: refused ({exc}): {text!r}, sympy reads {oracle}"
        return "refused with sympy"
    assert not _has_bad_constant(oracle), f"case {case}: {text!r} accepted as {mine}, sympy: {oracle}"
    mine, oracle = _numeric(mine), _numeric(oracle)
    if mine == oracle:
        return "same tree"
    compared = 0
    for _ in range(POINTS * 3):
        point = {s: sp.Float(round(rng.uniform(-3, 3), 3)) for s in SYMBOLS.values()}
        a, b = _value(mine, point), _value(oracle, point)
        if a is None or b is None:
            continue
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), \
            f"case {case}: {text!r} at {point}: project {a} = {mine}, sympy {b} = {oracle}"
        compared += 1
        if compared == POINTS:
            break
    return "same values" if compared else "no real point"


def test_random_laws_read_as_sympy_reads_them():
    rng = random.Random(SEED)
    gen = Gen(rng)
    stats = collections.Counter()
    for case in range(CASES):
        text = gen.expr(rng.choice([0, 1, 1, 2]))
        while len(text) > MAX_CHARS:
            text = gen.expr(rng.choice([0, 1, 1, 2]))
        stats[check(case, text, rng)] += 1
    print(f"{CASES} random laws (seed {SEED}):", dict(stats))
    assert stats["same tree"] + stats["same values"] > 0.8 * CASES, stats
    unchecked = ("size limit", "sympy recursed", "sympy stalled", "refusal not checked")
    assert sum(stats[k] for k in unchecked) <= 0.02 * CASES, stats
