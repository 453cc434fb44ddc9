"""The constitutive-law language: a whitelist parser from law text to sympy, never ``eval``.

A law string (``"Bv*f + Fc*tanh(f/omega_s)"``) comes from a model file that anyone may share,
so it is read with :func:`ast.parse` in ``eval`` mode and the tree is walked here, admitting
only

* numbers (finite), the names the element declares (``t``, its control inputs, the model's
  parameters, its own port variable such as ``q``/``p``/``e``/``f``) and the constants ``pi``, ``E``,
  ``True``, ``False``;
* ``+ - * / ** %`` (``^`` is read as ``**``, as sympy does), unary ``+ -``, comparisons
  ``< <= > >= == !=`` (chained ones too) and ``and or not & | ~`` for ``Piecewise`` conditions;
* calls of the functions in :data:`FUNCTIONS` by name, positional arguments only, and the
  ``(value, condition)`` pairs of ``Piecewise``.

Everything else (attributes, subscripts, lambdas, strings, keyword arguments, comprehensions,
unknown names or functions, dunder names) is refused with the component, the law and the
refused construct named. The sympy expression is built by applying sympy's own operators to
the leaves, which gives the same tree ``sympify`` gave for every law it accepted.

Size limits (each refusal names the limit): :data:`MAX_LAW_CHARS` characters,
:data:`MAX_DEPTH` levels of nesting (a chain ``a + b + c + ...`` is one level), numeric powers
whose result would have more than :data:`MAX_DIGITS` decimal digits (``10**10**10``) and integer
exponents above :data:`MAX_EXPONENT` on a symbolic base (sympy expands ``(2*x)**n``).
"""
from __future__ import annotations

import ast
import functools
import math
import operator
import warnings

import sympy as sp

from .core import LAW_CONSTANTS, LAW_FUNCTIONS

MAX_LAW_CHARS = 100_000
MAX_DEPTH = 100
MAX_DIGITS = 400
MAX_EXPONENT = 1000


class clip(sp.Function):
    """clip(u, lo, hi) = min(max(u, lo), hi), kept unevaluated: sympy's Min/Max re-derive their
    argument order on every rebuild, which made code generation of saturated models slow."""

    nargs = 3

    def fdiff(self, argindex=1):
        return _clip_fdiff(*self.args, argindex)


@functools.lru_cache(maxsize=4096)
def _clip_fdiff(u, lo, hi, argindex):
    """clip's partial derivatives, remembered: one clip recurs in many Jacobian entries and
    building its Piecewise (sympy orders the And and collapses the branches) is slow."""
    if argindex == 1:
        return sp.Piecewise((1, sp.And(u > lo, u < hi)), (0, True))
    if argindex == 2:
        return sp.Piecewise((1, u <= lo), (0, True))
    return sp.Piecewise((1, u >= hi), (0, True))


# Functions a law may call (docs/engine.md lists them); anything else is refused by name.
FUNCTIONS = {
    name: getattr(sp, name)
    for name in (
        "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "log",
        "sqrt", "Abs", "sign", "Min", "Max", "Piecewise", "Mod", "floor", "ceiling", "Heaviside",
    )
}
FUNCTIONS.update({"clip": clip, "abs": sp.Abs, "min": sp.Min, "max": sp.Max, "mod": sp.Mod})
CONSTANTS = {"pi": sp.pi, "E": sp.E}
assert set(FUNCTIONS) == set(LAW_FUNCTIONS) and set(CONSTANTS) == set(LAW_CONSTANTS), \
    "core.LAW_FUNCTIONS / LAW_CONSTANTS (the reserved names) must list what laws accept"

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Mod: lambda a, b: sp.Mod(a, b),
}
_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: lambda a, b: sp.Eq(a, b), ast.NotEq: lambda a, b: sp.Ne(a, b),
}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%", ast.Pow: "**",
           ast.BitXor: "^", ast.BitAnd: "&", ast.BitOr: "|"}

# what a refused node is, in words
_REFUSED = {
    ast.Attribute: "attribute access ('.')", ast.Subscript: "subscript ('[...]')", ast.Lambda: "lambda",
    ast.ListComp: "comprehension", ast.SetComp: "comprehension", ast.DictComp: "comprehension",
    ast.GeneratorExp: "comprehension", ast.Starred: "'*' unpacking", ast.JoinedStr: "f-string",
    ast.NamedExpr: "assignment expression (':=')", ast.IfExp: "'if ... else' (use Piecewise)",
    ast.List: "list", ast.Dict: "dict", ast.Set: "set", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield", ast.Slice: "slice", ast.FormattedValue: "f-string",
    ast.FloorDiv: "'//' (use floor(a/b))", ast.LShift: "'<<'", ast.RShift: "'>>'", ast.MatMult: "'@'",
    ast.Is: "'is'", ast.IsNot: "'is not'", ast.In: "'in'", ast.NotIn: "'not in'",
}


class LawError(ValueError):
    """A law text that is not in the law language (the caller adds component and law)."""


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _depth_ok(tree) -> None:
    """Refuse nesting deeper than MAX_DEPTH without recursing (a left-leaning chain of one
    operator, as in a long sum, counts once)."""
    stack = [(tree, 0)]
    while stack:
        node, d = stack.pop()
        if d > MAX_DEPTH:
            raise LawError(f"nested more than {MAX_DEPTH} levels deep")
        for child in ast.iter_child_nodes(node):
            same_chain = (isinstance(node, ast.BinOp) and isinstance(child, ast.BinOp)
                          and type(child.op) is type(node.op) and child is node.left)
            stack.append((child, d if same_chain else d + 1))


def _number(value, text=None):
    if isinstance(value, bool):
        return sp.true if value else sp.false
    if isinstance(value, int):
        if abs(value) > 10 ** 300:
            raise LawError(f"number {_short(str(value), 20)} is too large")
        return sp.Integer(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise LawError(f"number {value!r} is not finite")
        # from the literal's text, as sympify does: its precision follows the digits written
        return sp.Float(text.replace("_", "")) if text else sp.Float(value)
    if isinstance(value, complex):
        raise LawError(f"complex number {value!r}")
    if isinstance(value, (str, bytes)):
        raise LawError(f"string {_short(repr(value), 30)}")
    raise LawError(f"constant {_short(repr(value), 30)}")


def _power(base, exp):
    if isinstance(exp, sp.Number) and isinstance(base, sp.Number):
        # a numeric power is evaluated exactly by sympy: bound its size first (10**10**10)
        b, e = abs(float(base)), float(exp)
        if b not in (0.0, 1.0) and (math.isinf(b) or abs(e) * abs(math.log10(b)) > MAX_DIGITS):
            raise LawError(f"number {base}**{exp} is too large (more than {MAX_DIGITS} digits)")
    elif isinstance(exp, sp.Number) and abs(float(exp)) > MAX_EXPONENT:
        raise LawError(f"exponent {exp} is larger than {MAX_EXPONENT}")
    return base ** exp


class _Builder:
    def __init__(self, names: dict, source: str):
        self.names = names
        self.source = source
        # the source's lines as UTF-8 (ast's offsets count bytes), split once: ast.
        # get_source_segment re-splits the whole text per literal, quadratic in a long law
        self.lines = source.encode().splitlines()  # bytes split at \n, \r, \r\n only, as ast does

    def literal_text(self, node) -> str:
        if node.lineno == node.end_lineno:
            return self.lines[node.lineno - 1][node.col_offset:node.end_col_offset].decode()
        return ast.get_source_segment(self.source, node)

    def build(self, node):
        kind = type(node)
        if kind is ast.Expression:
            return self.build(node.body)
        if kind is ast.Constant:
            text = self.literal_text(node) if isinstance(node.value, float) else None
            return _number(node.value, text)
        if kind is ast.Name:
            return self.name(node.id)
        if kind is ast.UnaryOp:
            v = self.build(node.operand)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return v
            return sp.Not(v)  # ast.Not, ast.Invert
        if kind is ast.BinOp:
            return self.binop(node)
        if kind is ast.BoolOp:
            fn = sp.And if isinstance(node.op, ast.And) else sp.Or
            return fn(*[self.build(v) for v in node.values])
        if kind is ast.Compare:
            return self.compare(node)
        if kind is ast.Call:
            return self.call(node)
        if kind is ast.Tuple:
            raise LawError("a tuple outside Piecewise((value, condition), ...)")
        raise LawError(_REFUSED.get(kind, f"{kind.__name__} syntax"))

    def name(self, ident: str):
        if ident.startswith("__"):
            raise LawError(f"name {ident!r}")
        if ident in self.names:
            return self.names[ident]
        if ident in CONSTANTS:
            return CONSTANTS[ident]
        if ident in FUNCTIONS:
            raise LawError(f"function {ident!r} used without calling it")
        known = ", ".join(sorted(self.names)) or "none"
        raise LawError(f"uses unknown name(s) {ident} (known: {known}; constants: pi, E)")

    def binop(self, node):
        # a left-leaning chain of one operator (a long sum) is built in a loop, not recursively
        chain, op = [], type(node.op)
        cur = node
        while isinstance(cur, ast.BinOp) and type(cur.op) is op:
            chain.append(cur.right)
            cur = cur.left
        acc = self.build(cur)
        for right in reversed(chain):
            acc = self.apply(op, acc, self.build(right))
        return acc

    @staticmethod
    def apply(op, a, b):
        if op in (ast.Pow, ast.BitXor):  # sympify reads '^' as a power, so do we
            return _power(a, b)
        if op is ast.BitAnd:
            return sp.And(a, b)
        if op is ast.BitOr:
            return sp.Or(a, b)
        fn = _BINARY.get(op)
        if fn is None:
            raise LawError(_REFUSED.get(op, f"operator {op.__name__}"))
        return fn(a, b)

    def compare(self, node):
        parts, left = [], self.build(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            fn = _COMPARE.get(type(op))
            if fn is None:
                raise LawError(_REFUSED.get(type(op), f"comparison {type(op).__name__}"))
            right = self.build(right_node)
            parts.append(fn(left, right))
            left = right
        return parts[0] if len(parts) == 1 else sp.And(*parts)

    def call(self, node):
        if not isinstance(node.func, ast.Name):
            raise LawError("a call of something that is not a function name" if not isinstance(node.func, ast.Attribute)
                           else _REFUSED[ast.Attribute])
        fname = node.func.id
        fn = FUNCTIONS.get(fname)
        if fn is None:
            raise LawError(f"function {fname!r} (allowed: {', '.join(sorted(FUNCTIONS))})")
        if node.keywords:
            raise LawError(f"keyword argument in {fname}(...)")
        args = []
        for a in node.args:
            if fname == "Piecewise" and isinstance(a, ast.Tuple):
                if len(a.elts) != 2:
                    raise LawError("a Piecewise branch is (value, condition)")
                args.append(tuple(self.build(x) for x in a.elts))
            else:
                args.append(self.build(a))
        try:
            return fn(*args)
        except LawError:
            raise
        except Exception as exc:  # sympy's own complaint about the arguments (count, types)
            raise LawError(f"cannot apply {fname}: {exc}") from None


def parse_law(text: str, names: dict):
    """Read ``text`` into a sympy expression over ``names`` (name -> sympy symbol); raises
    :class:`LawError` saying what was refused. Never evaluates Python."""
    if len(text) > MAX_LAW_CHARS:
        raise LawError(f"law is {len(text)} characters long (limit {MAX_LAW_CHARS})")
    text = text.strip()
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like: refused below
            warnings.simplefilter("ignore")
            tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise LawError(f"syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError):  # the parser's own stack: "1+1+...+1" 30000 times
        raise LawError(f"nested too deeply to be read (limit {MAX_DEPTH} levels)") from None
    except ValueError as exc:  # null bytes
        raise LawError(f"cannot be read: {exc}") from None
    _depth_ok(tree)
    try:
        expr = _Builder(names, text).build(tree)
    except RecursionError:
        raise LawError(f"nested more than the parser can follow (limit {MAX_DEPTH} levels)") from None
    except LawError:
        raise
    except (TypeError, ValueError, ArithmeticError, AttributeError) as exc:
        # sympy refusing an operation: a condition used as a number, a number as a condition
        raise LawError(f"cannot combine its terms: {exc}") from None
    if not isinstance(expr, sp.Basic):
        raise LawError(f"does not give an expression (got {type(expr).__name__})")
    if isinstance(expr, (sp.logic.boolalg.BooleanFunction, sp.logic.boolalg.BooleanAtom, sp.core.relational.Relational)):
        raise LawError("is a condition, not a value (use Piecewise((value, condition), ...))")
    if expr.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise LawError("divides by zero or is not finite")
    if expr.has(sp.I):
        raise LawError("is not real (a square root, power or log of a negative number)")
    for num in expr.atoms(sp.Number):
        if not math.isfinite(float(num)):
            raise LawError(f"number {_short(str(num), 30)} is too large")
    return expr


__all__ = ["parse_law", "LawError", "FUNCTIONS", "CONSTANTS", "clip", "MAX_LAW_CHARS", "MAX_DEPTH",
           "MAX_DIGITS", "MAX_EXPONENT"]
