"""The constitutive-law language: a whitelist parser from law text to sympy, never ``eval``.

A law string (``"Bv*f + Fc*tanh(f/omega_s)"``) comes from a model file that anyone may share,
so it is read with Python's own grammar and the tree is walked here, admitting only

* numbers (finite), the names the element declares (``t``, its control inputs, the model's
  parameters, its own port variable such as ``q``/``p``/``e``/``f``) and the constants ``pi``, ``E``,
  ``True``, ``False``;
* ``+ - * / ** %`` with ``^`` a synonym of ``**``, unary ``+ -``, comparisons
  ``< <= > >= == !=`` (chained ones too) and ``and or not & | ~`` for ``Piecewise`` conditions;
* calls of the functions in :data:`FUNCTIONS` by name, positional arguments only, and the
  ``(value, condition)`` pairs of ``Piecewise``.

``^`` is turned into ``**`` token by token (:mod:`tokenize`, as sympy's ``convert_xor``)
before :func:`ast.parse` reads the text, so it has exactly the precedence and right
associativity of ``**``: ``k*q + a*q^3`` is ``k*q + a*q**3``, ``-x^2`` is ``-(x**2)`` and
``x^y^z`` is ``x**(y**z)``. Precedence from loosest to tightest: ``or``; ``and``; ``not``;
comparisons; ``|``; ``&``; ``+ -``; ``* / %``; unary ``+ - ~``; ``** ^`` (right associative;
binds more tightly than a unary operator on its left, less tightly than one on its right:
``2**-1``); calls and parentheses.

Everything else (attributes, subscripts, lambdas, strings, keyword arguments, comprehensions,
unknown names or functions, dunder names) is refused with the component, the law and the
refused construct named. The sympy expression is built by applying sympy's own operators to
the leaves, which gives the same tree ``sympify`` gives (with ``convert_xor``) for every law
accepted, except for remainders: ``mod`` and ``%`` are :class:`Mod`, which leaves symbolic
arguments as they are where sympy's Mod would simplify them (some of them wrongly).

Values are refused where they could only become NaN or infinity at run time, naming the
subexpression as written: a constant subexpression that is not real (``asin(2)``,
``(-8)**(1/3)``), not finite (``1/0``) or beyond a double (``exp(1000)``); a ``Piecewise``
whose last condition is not ``True`` (no value where no condition holds); ``clip(u, lo, hi)``
with numbers lo > hi.

The work is bounded, not only the length (each refusal names its limit): :data:`MAX_LAW_CHARS`
characters; :data:`MAX_DEPTH` levels of nesting (a chain ``a + b - c + ...`` or ``a*b/c*...``
is one level, however long); numeric literals of at most :data:`MAX_DIGITS` digits; exact
powers of numbers with at most :data:`MAX_DIGITS` digits (``10**10**10`` is refused, a
floating-point power such as ``0.5**1e6`` is computed); integer exponents up to
:data:`MAX_EXPONENT` on a symbolic base (sympy expands ``(2*x)**n``); at most
:data:`MAX_MINMAX_ARGS` arguments to one ``Min``/``Max`` after sympy merges nested ones and
:data:`MAX_MINMAX_TOTAL` to all of a law's (sympy compares them pairwise, a few milliseconds a
pair); :data:`MAX_MOD_NODES` expression nodes in the arguments of all of a law's ``Mod`` and
``%`` (sympy simplifies them, in time growing steeply with their size).
"""
from __future__ import annotations

import ast
import functools
import io
import math
import operator
import sys
import threading
import tokenize
import unicodedata
import warnings

import sympy as sp

from .core import LAW_CONSTANTS, LAW_FUNCTIONS

MAX_LAW_CHARS = 100_000
MAX_DEPTH = 100
MAX_DIGITS = 400
MAX_EXPONENT = 1000
MAX_MINMAX_ARGS = 16
MAX_MINMAX_TOTAL = 128
MAX_MOD_NODES = 100


class clip(sp.Function):
    """clip(u, lo, hi) = min(max(u, lo), hi), kept unevaluated unless all three are numbers:
    sympy's Min/Max re-derive their argument order on every rebuild, which made code generation
    of saturated models slow."""

    nargs = 3

    @classmethod
    def eval(cls, u, lo, hi):
        # of constants, a number (as Min/Max give it): Min, Max and comparisons need one
        if u.is_number and lo.is_number and hi.is_number:
            return _clip_value(u, lo, hi)
        return None

    def fdiff(self, argindex=1):
        return _clip_fdiff(*self.args, argindex)


class Mod(sp.Mod):
    """a % c with the sign of c, as Python's %: sympy's Mod, evaluated for constants only. sympy
    1.14 simplifies some symbolic arguments wrongly: Mod(-P/2, P) gave -P/2 where every P != 0
    has P/2, Mod(-x, 2*x) gave -x (it is x); an elimination that substitutes signals into a
    law's Mod can form such arguments from laws that are right as written."""

    @classmethod
    def eval(cls, a, c):
        if a.is_number and c.is_number:  # (Float % Float a Float, Mod(-pi/2, pi) pi/2, as sympy's)
            return sp.Mod(a, c)
        r = a / c
        if r.is_Number and r.is_finite:  # a a multiple r of c: c (r - floor(r)), 0 for an integer r
            return c * (r - sp.floor(r))
        return None


def _clip_value(u, lo, hi):
    return sp.Min(sp.Max(u, lo), hi)


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
        "sqrt", "Abs", "sign", "Min", "Max", "Piecewise", "floor", "ceiling", "Heaviside",
    )
}
FUNCTIONS.update({"clip": clip, "abs": sp.Abs, "min": sp.Min, "max": sp.Max, "mod": Mod, "Mod": Mod})
CONSTANTS = {"pi": sp.pi, "E": sp.E}
assert set(FUNCTIONS) == set(LAW_FUNCTIONS) and set(CONSTANTS) == set(LAW_CONSTANTS), \
    "core.LAW_FUNCTIONS / LAW_CONSTANTS (the reserved names) must list what laws accept"

# '%' is mod() (Float % Float a Float, as sympy's own); a remainder by the number 0 (which sympy
# gives as 0.5 % 0 = 0.5) is refused before
_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Mod: Mod,
}
_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: lambda a, b: sp.Eq(a, b), ast.NotEq: lambda a, b: sp.Ne(a, b),
}
# operators of one precedence level, left associative: a chain of them is one level of nesting
_FAMILY = {ast.Add: "sum", ast.Sub: "sum", ast.Mult: "product", ast.Div: "product", ast.Mod: "product",
           ast.FloorDiv: "product", ast.MatMult: "product"}


def _family(op):
    return _FAMILY.get(type(op), type(op))


# a longer chain of * / % is built as one product, not factor by factor
_FOLD_LINKS = 32

# operators whose result may be a non-real or non-finite number although their operands are real
_CHECKED_OPS = (ast.Pow, ast.Div, ast.Mod)

# what a refused node is, in words
_REFUSED = {
    ast.Attribute: "attribute access ('.')", ast.Subscript: "subscript ('[...]')", ast.Lambda: "lambda",
    ast.ListComp: "comprehension", ast.SetComp: "comprehension", ast.DictComp: "comprehension",
    ast.GeneratorExp: "comprehension", ast.Starred: "'*' unpacking", ast.JoinedStr: "f-string",
    ast.NamedExpr: "assignment expression (':=')", ast.IfExp: "'if ... else' (use Piecewise)",
    ast.List: "list", ast.Dict: "dict", ast.Set: "set", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield", ast.Slice: "slice", ast.FormattedValue: "f-string",
    ast.FloorDiv: "'//' (use floor(a/b))", ast.LShift: "'<<'", ast.RShift: "'>>'", ast.MatMult: "'@'",
    ast.BitXor: "'^' that could not be read as a power",
    ast.Is: "'is'", ast.IsNot: "'is not'", ast.In: "'in'", ast.NotIn: "'not in'",
}


class LawError(ValueError):
    """A law text that is not in the law language (the caller adds component and law)."""


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _xor_to_pow(text: str) -> str:
    """``^`` -> ``**`` on the operator tokens only (not in strings or comments), as sympy's
    ``convert_xor`` does, so that ``^`` is read with the precedence and associativity of ``**``.
    Text the tokenizer cannot read is returned as it is: the parser refuses it, or a ``^`` that
    survives is refused as an operator."""
    lines = io.StringIO(text).readlines()  # the very lines tokenize reads, so its columns index them
    at = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.OP and tok.string == "^":
                at.append(tok.start)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return text
    for row, col in reversed(at):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + "**" + line[col + 1:]
    return "".join(lines)


def _parse_deep(text: str):
    """ast.parse with room for a long flat chain (``q + q + ... + q``): its tree is as deep as
    the chain is long, more than Python's recursion limit lets the tree be built. Retried in a
    thread of its own with a large stack, the depth being bounded by the text's length. (Python
    3.11 bounds building the tree by the recursion limit; a Python that bounds it by a fixed C
    limit refuses such a chain as nested too deeply.)"""
    result = {}

    def run():
        try:
            result["tree"] = ast.parse(text, mode="eval")
        except BaseException as exc:  # handed to the caller's thread
            result["error"] = exc

    old_limit = sys.getrecursionlimit()
    old_stack = threading.stack_size()
    need = old_limit + len(text)
    try:
        try:
            threading.stack_size(256 * 1024 * 1024)  # address space only: pages are used as touched
        except (ValueError, RuntimeError):  # a platform without it: refused as too deep
            raise RecursionError from None
        sys.setrecursionlimit(need)
        worker = threading.Thread(target=run, name="law-parser", daemon=True)
        worker.start()
        worker.join()
    finally:
        threading.stack_size(old_stack)
        if sys.getrecursionlimit() == need:
            sys.setrecursionlimit(old_limit)
    if "error" in result:
        raise result["error"]
    return result["tree"]


def _depth_ok(tree) -> None:
    """Refuse nesting deeper than MAX_DEPTH without recursing (a left-leaning chain of operators
    of one precedence level, as in a long sum, counts once)."""
    stack = [(tree, 0)]
    while stack:
        node, d = stack.pop()
        if d > MAX_DEPTH:
            raise LawError(f"nested more than {MAX_DEPTH} levels deep")
        for child in ast.iter_child_nodes(node):
            same_chain = (isinstance(node, ast.BinOp) and isinstance(child, ast.BinOp) and child is node.left
                          and _family(child.op) == _family(node.op))
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
        if text:
            # from the literal's text, as sympify does: its precision follows the digits written,
            # bounded (arithmetic on a 20,000-digit Float takes seconds)
            text = text.replace("_", "")
            digits = sum(c.isdigit() for c in text.lower().partition("e")[0])
            if digits > MAX_DIGITS:
                raise LawError(f"number {_short(text, 20)} has {digits} digits (limit {MAX_DIGITS})")
            return sp.Float(text)
        return sp.Float(value)
    if isinstance(value, complex):
        raise LawError(f"complex number {value!r}")
    if isinstance(value, (str, bytes)):
        raise LawError(f"string {_short(repr(value), 30)}")
    raise LawError(f"constant {_short(repr(value), 30)}")


def _power(base, exp):
    if isinstance(exp, sp.Number) and isinstance(base, sp.Number):
        # a power of exact numbers (Integer, Rational) is computed exactly: bound its digits
        # first (10**10**10, 2**-10**9). A floating-point one is cheap whatever its size; beyond
        # a double it is refused as not finite, below one it is a double's 0.0.
        exact = not isinstance(base, sp.Float) and not isinstance(exp, sp.Float)
        if exact and base.is_Rational and exp.is_Rational and abs(base) not in (0, 1) and exp != 0:
            digits = abs(float(exp)) * math.log10(max(abs(base.p), base.q))
            if digits > MAX_DIGITS:
                raise LawError(f"number {_short(str(base), 20)}**{_short(str(exp), 20)} is too large to "
                               f"compute exactly (more than {MAX_DIGITS} digits)")
    elif isinstance(exp, sp.Number) and abs(float(exp)) > MAX_EXPONENT:
        raise LawError(f"exponent {exp} is larger than {MAX_EXPONENT}")
    return base ** exp


def _is_constant(value) -> bool:
    return isinstance(value, sp.Expr) and not value.free_symbols


_NOT_REAL = "is not real (a root, power, log or inverse function out of its real domain)"


def _constant_problem(value) -> str | None:
    """Why a constant subexpression is not a finite real number, or None: in double precision
    a non-real or infinite one is NaN or inf at every step of the run."""
    if not isinstance(value, sp.Expr) or value.is_Rational:
        return None
    if value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return "divides by zero or is not finite"
    if value.is_extended_real is False:
        return _NOT_REAL
    try:
        number = complex(value)
    except OverflowError:
        return "is not finite in double precision"
    except (TypeError, ValueError):  # not a number to sympy: its parts are checked
        return None
    if number.imag != 0 and abs(number.imag) > 1e-12 * abs(number.real):
        return _NOT_REAL
    if not math.isfinite(number.real):
        return "is not finite in double precision"
    return None


_CONDITIONS = (sp.core.relational.Relational, sp.logic.boolalg.BooleanFunction, sp.logic.boolalg.BooleanAtom)


def _condition(value, node=None, builder=None):
    """``value`` if it is a condition (a comparison, True/False, or conditions joined by
    and/or/not): sympy takes a name or a number there as well, and `t > 1 & u < 5` (Python's
    precedence: t > (1 & u) < 5) became t > u < 5 without a word."""
    if not isinstance(value, _CONDITIONS):
        what = builder.quote(node) if builder is not None and node is not None else repr(str(value))
        raise LawError(f"{what} is a value where a condition belongs: and, or, not, &, | and ~ join comparisons, "
                       f"and a Piecewise branch's condition is one (write (t > 1) & (u < 5), & binding tighter "
                       f"than >)")
    return value


def _check_constants(expr) -> None:
    """Every constant subexpression of the law as sympy holds it (sympy's own rewriting, such as
    Piecewise(...)**1.5 into its branches, can make one; clip as Min/Max, which sympy evaluates
    where it can: clip(2**x + 1, -2, -1) is -1): the tree is walked bottom up."""
    _check_constant_nodes(expr)
    constant_clips = {}
    for c in expr.atoms(clip):
        try:
            value = _clip_value(*c.args)
        except (TypeError, ValueError):  # bounds sympy cannot compare with u
            continue
        if not value.free_symbols:
            constant_clips[c] = value
    if constant_clips:
        try:
            expr = expr.xreplace(constant_clips)
        except ZeroDivisionError:
            expr = sp.nan
        if expr.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
            raise LawError("divides by zero or is not finite (clip(u, lo, hi) read as Min(Max(u, lo), hi))")
        _check_constant_nodes(expr)
        if expr.has(sp.I):  # sqrt(clip(.., -2, -1)) is sqrt(-1): sympy makes it I, a leaf the walk passes
            raise LawError(f"'I' (as sympy holds the law, clip(u, lo, hi) read as Min(Max(u, lo), hi)) {_NOT_REAL}")


def _check_constant_nodes(expr) -> None:
    constant = {}
    stack = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if node in constant:
            continue
        if not ready:
            stack.append((node, True))
            stack.extend((a, False) for a in node.args if a not in constant)
            continue
        if not node.args:
            constant[node] = not isinstance(node, sp.Symbol)
            continue
        constant[node] = all(constant[a] for a in node.args)
        if constant[node]:
            problem = _constant_problem(node)
            if problem:
                raise LawError(f"{_short(str(node), 60)!r} (as sympy holds the law) {problem}")


class _Builder:
    def __init__(self, names: dict, source: str):
        self.names = names
        self.source = source
        # the source's lines as UTF-8 (ast's offsets count bytes), split once: ast.
        # get_source_segment re-splits the whole text per literal, quadratic in a long law
        self.lines = source.encode().splitlines()  # bytes split at \n, \r, \r\n only, as ast does
        self.minmax_args = 0
        self.mod_nodes = 0

    def segment(self, node) -> str:
        if node.lineno == node.end_lineno:
            return self.lines[node.lineno - 1][node.col_offset:node.end_col_offset].decode()
        return ast.get_source_segment(self.source, node)

    def quote(self, node) -> str:
        """The text of a subexpression, to name it in a refusal."""
        return repr(_short(" ".join(self.segment(node).split()), 60))

    def check_constant(self, node, value):
        problem = _constant_problem(value)
        if problem:
            raise LawError(f"{self.quote(node)} {problem}")

    def build(self, node):
        kind = type(node)
        if kind is ast.Expression:
            return self.build(node.body)
        if kind is ast.Constant:
            text = self.segment(node) if isinstance(node.value, float) else None
            return _number(node.value, text)
        if kind is ast.Name:
            return self.name(node.id)
        if kind is ast.UnaryOp:
            v = self.build(node.operand)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return v
            return sp.Not(_condition(v, node, self))  # ast.Not, ast.Invert
        if kind is ast.BinOp:
            return self.binop(node)
        if kind is ast.BoolOp:
            fn = sp.And if isinstance(node.op, ast.And) else sp.Or
            return fn(*[_condition(self.build(v), v, self) for v in node.values])
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
        """A left-leaning chain of operators of one precedence level (a long sum) is built in a
        loop, not recursively; a sum at once (sympy's Add of n terms one by one is quadratic)."""
        family = _family(node.op)
        links, cur = [], node
        while isinstance(cur, ast.BinOp) and _family(cur.op) == family:
            links.append(cur)
            cur = cur.left
        links.reverse()
        acc = self.build(cur)
        if family == "sum":
            rights = [self.build(link.right) for link in links]
            if isinstance(acc, sp.Expr) and all(isinstance(r, sp.Expr) for r in rights):
                # a - b is Add(a, -b) in sympy: the same tree, and float terms summed in the same order
                return sp.Add(acc, *(-r if isinstance(link.op, ast.Sub) else r for link, r in zip(links, rights)))
            for link, right in zip(links, rights):  # a condition among the terms: sympy says what is wrong
                acc = self.apply(type(link.op), acc, right)
            return acc
        if len(links) > _FOLD_LINKS:
            return self.product(acc, links)
        constant = _is_constant(acc)
        for link in links:
            right = self.build(link.right)
            if isinstance(link.op, ast.Mod):
                self.count_mod(link, (acc, right))
            self.check_divisor(link, right)
            try:
                acc = self.apply(type(link.op), acc, right)
            except ZeroDivisionError:  # sympy's Mod(5, 0)
                raise LawError(f"{self.quote(link)} divides by zero") from None
            constant = constant and _is_constant(right)
            if constant and isinstance(link.op, _CHECKED_OPS):
                self.check_constant(link, acc)
        return acc

    def product(self, acc, links):
        """A long chain of * / %: each run of * and / one Mul (sympy's Mul of n factors one by
        one is quadratic: 2000 factors took 80 s). a / b is Mul(a, Pow(b, -1)), as in sympy;
        the tree can differ from the one-by-one product only where a partial product distributes
        a number over a sum (2*(x + 1)*y), not in value."""
        rights = [self.build(link.right) for link in links]
        if not (isinstance(acc, sp.Expr) and all(isinstance(r, sp.Expr) for r in rights)):
            for link, right in zip(links, rights):  # a condition among the factors: sympy says what is wrong
                acc = self.apply(type(link.op), acc, right)
            return acc
        factors = [acc]
        for link, right in zip(links, rights):
            self.check_divisor(link, right)
            op = type(link.op)
            if op is ast.Mult:
                factors.append(right)
            elif op is ast.Div:
                factors.append(sp.Pow(right, -1))
            else:
                left = sp.Mul(*factors)
                if op is ast.Mod:
                    self.count_mod(link, (left, right))
                try:
                    factors = [self.apply(op, left, right)]
                except ZeroDivisionError:
                    raise LawError(f"{self.quote(link)} divides by zero") from None
        return sp.Mul(*factors)

    @staticmethod
    def apply(op, a, b):
        if op is ast.Pow:
            return _power(a, b)
        if op is ast.BitAnd:
            return sp.And(_condition(a), _condition(b))
        if op is ast.BitOr:
            return sp.Or(_condition(a), _condition(b))
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
        self.check_call(node, fname, fn, args)
        try:
            value = fn(*args)
        except LawError:
            raise
        except ZeroDivisionError:  # Mod(5, 0)
            raise LawError(f"{self.quote(node)} divides by zero") from None
        except Exception as exc:  # sympy's own complaint about the arguments (count, types)
            raise LawError(f"cannot apply {fname}: {exc}") from None
        if fname != "Piecewise" and all(_is_constant(a) for a in args):
            self.check_constant(node, value)
        return value

    def check_divisor(self, link, right):
        if isinstance(link.op, (ast.Div, ast.Mod)) and isinstance(right, sp.Number) and right.is_zero:
            raise LawError(f"{self.quote(link)} divides by zero")

    def count_mod(self, node, args):
        """sympy's Mod simplifies its arguments, in time growing steeply with their size (a sum
        of 100 sines: 10 s): their expression nodes are bounded, for all of a law's Mod and %."""
        for a in args:
            for _ in sp.preorder_traversal(a):
                self.mod_nodes += 1
                if self.mod_nodes > MAX_MOD_NODES:
                    raise LawError(f"{self.quote(node)}: the arguments of the law's Mod and % have more than "
                                   f"{MAX_MOD_NODES} terms in all (limit {MAX_MOD_NODES})")

    def check_call(self, node, fname, fn, args):
        if fn is sp.Piecewise:
            for arg, branch in zip(args, node.args):
                if isinstance(arg, tuple):
                    _condition(arg[1], branch.elts[1], self)
        if fn is sp.Piecewise and args and isinstance(args[-1], tuple) and args[-1][1] is not sp.true:
            # where no condition holds sympy's Piecewise is NaN: a default branch says what it is
            raise LawError(f"{self.quote(node)} has no default branch: end it with (value, True)")
        if fn is clip and len(args) == 3 and all(isinstance(a, sp.Number) for a in args[1:]) and args[1] > args[2]:
            raise LawError(f"{self.quote(node)} has its lower bound above its upper bound")
        if fn is Mod:
            self.count_mod(node, args)
        if fn is sp.sqrt and len(args) != 1:
            # sympy's second argument of sqrt is its evaluate flag: sqrt(u, 3) would be sqrt(u)
            raise LawError(f"{self.quote(node)}: sqrt takes one argument (a cube root is u**(1/3))")
        base = args[1] if fn is sp.log and len(args) == 2 and _is_constant(args[1]) else None
        if base is not None and not (base.is_positive and (base - 1).is_nonzero):
            # sympy's log(u, 0) is log(u)/log(0) = 0, a value for a logarithm that has none
            raise LawError(f"{self.quote(node)}: the base of a logarithm is a positive number other than 1")
        if fn in (sp.Min, sp.Max):
            # sympy compares the arguments pairwise, a few milliseconds a pair (and merges nested
            # Max into Max): 600 arguments take a minute
            n = sum(len(a.args) if isinstance(a, fn) else 1 for a in args)
            if n > MAX_MINMAX_ARGS:
                raise LawError(f"{fname}(...) of {n} arguments (limit {MAX_MINMAX_ARGS}, nested "
                               f"{fn.__name__} counted by their arguments)")
            self.minmax_args += n
            if self.minmax_args > MAX_MINMAX_TOTAL:
                raise LawError(f"Min/Max calls of more than {MAX_MINMAX_TOTAL} arguments in all (limit "
                               f"{MAX_MINMAX_TOTAL} a law)")


def _no_lookalikes(text: str) -> None:
    """LawError for a character Python's reader would silently take for another: it folds the
    names it reads to NFKC, so a full-width k or a ligature would be the parameter k or fi, where
    the law as written names no such thing (a name the model lacks is refused, not guessed)."""
    for ch in text:
        if ch.isascii():
            continue
        folded = unicodedata.normalize("NFKC", ch)
        if folded != ch and "SUPERSCRIPT" in unicodedata.name(ch, ""):
            raise LawError(f"character {ch!r} (U+{ord(ch):04X}) is a superscript: write a power with ^ (x^2, x^-1)")
        if folded != ch:
            raise LawError(f"character {ch!r} (U+{ord(ch):04X}) stands for {folded!r}: write {folded!r} if that is "
                           f"meant")


def parse_law(text: str, names: dict):
    """Read ``text`` into a sympy expression over ``names`` (name -> sympy symbol); raises
    :class:`LawError` saying what was refused. Never evaluates Python."""
    if len(text) > MAX_LAW_CHARS:
        raise LawError(f"law is {len(text)} characters long (limit {MAX_LAW_CHARS})")
    text = _xor_to_pow(text.strip())
    _no_lookalikes(text)
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like: refused below
            warnings.simplefilter("ignore")
            try:
                tree = ast.parse(text, mode="eval")
            except RecursionError:  # building the tree of a long flat chain
                tree = _parse_deep(text)
    except SyntaxError as exc:
        raise LawError(f"syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError):  # the parser's own stack: "(" or "-" 50000 times
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
    if isinstance(expr, (sp.logic.boolalg.BooleanFunction, sp.logic.boolalg.BooleanAtom,
                         sp.core.relational.Relational)):
        raise LawError("is a condition, not a value (use Piecewise((value, condition), ...))")
    if expr.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise LawError("divides by zero or is not finite")
    _check_constants(expr)
    if expr.has(sp.I):
        raise LawError("is not real (a square root, power or log of a negative number)")
    for num in expr.atoms(sp.Number):
        if not math.isfinite(float(num)):
            raise LawError(f"number {_short(str(num), 30)} is too large")
    return expr


__all__ = ["parse_law", "LawError", "FUNCTIONS", "CONSTANTS", "clip", "MAX_LAW_CHARS", "MAX_DEPTH",
           "MAX_DIGITS", "MAX_EXPONENT", "MAX_MINMAX_ARGS", "MAX_MINMAX_TOTAL", "MAX_MOD_NODES"]
