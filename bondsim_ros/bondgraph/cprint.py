"""The C source of a model's kernels: sympy expressions printed as straight-line C99.

:func:`generate_source` writes one translation unit holding the kernels of a reduced DAE --
residual, Jacobian values, outputs, pivots, and with events the modes, switching functions and
moded residual/Jacobian -- with the kernel ABI of solver/native.py. The printer (a sympy C99
printer with its own sums, products, powers and functions, keeping the laws' meaning rather
than C's: ``C_PRELUDE``) names the model's symbols as it meets them; common-subexpression
elimination happens while printing (each sub-expression met twice in a function becomes a
``const double _cK``); a kernel of more than ``CHUNK`` expressions is printed as several
functions.
"""
from __future__ import annotations

from .fingerprint import CODEGEN_VERSION
from .jacobian import moded_jacobian

# Helpers the kernels call, with the semantics the Python printer had (numba compiled Python):
# Mod follows Python's float % (sign of the divisor; sympy's Mod(a, c) = a - c floor(a/c)),
# not C's fmod; min/max take the first argument unless the second is strictly smaller/larger
# (Python's min/max, also with NaN); sign is 0 at 0, else copysign(1, x).
C_PRELUDE = r"""#include <math.h>
#include <string.h>

static inline double bs_mod(double a, double c) {
    double r = fmod(a, c);
    if (r != 0.0) {
        if ((c < 0.0) != (r < 0.0)) r += c;
    } else {
        r = copysign(0.0, c);
    }
    return r;
}
static inline double bs_min(double a, double b) { return b < a ? b : a; }
static inline double bs_max(double a, double b) { return b > a ? b : a; }
static inline double bs_sign(double x) { return x == 0.0 ? 0.0 : copysign(1.0, x); }
"""


def _printer(names: dict):
    """A C99 printer of kernel expressions: each model symbol is printed as the name ``names``
    gives it (``y[3]``, ``yp[3]``, ``p[0]``, ``t``, a mode), looked up while printing instead of
    substituted into every expression beforehand."""
    import sympy as sp
    from sympy.printing.c import C99CodePrinter

    class KernelPrinter(C99CodePrinter):
        def text(self, expr) -> str:
            """C of one expression. sympy's doprint walked every tree once more (UnevaluatedExpr
            replacement), and its Add and Mul printers sorted terms and built new expressions
            (negated coefficients, inverted powers): the 18-DOF dual-arm's code generation took
            8.8 s with them, 4.1 s with the printers below, which print the arguments as stored."""
            self._not_supported, self._number_symbols = set(), set()
            out = self._print(expr)
            if self._not_supported:
                bad = sorted({type(e).__name__ for e in self._not_supported})
                raise RuntimeError(f"no C translation of {', '.join(bad)}")
            return out

        def _print(self, expr, **kwargs):
            name = self.names.get(expr)  # a model symbol or a shared sub-expression's _cK
            return name if name is not None else super()._print(expr, **kwargs)

        def _print_Add(self, expr):
            out = ""
            for term in expr.args:
                t = self._print(term)
                if not out:
                    out = t
                elif t.startswith("-"):  # a product with a negative sign: "a - x*y"
                    out += " - " + t[1:]
                else:
                    out += " + " + t
            return out

        def _print_Mul(self, expr):
            # coefficient first (sympy keeps it there), factors with a negative constant
            # exponent in a denominator: x*y**-1*z**-2 -> x/(y*(z*z)), as sympy prints it
            sign, num, den = "", [], []
            for f in expr.args:
                if f.is_Number:
                    v = float(f)
                    if v == -1.0:
                        sign = "-"
                    elif v < 0:
                        sign, v = "-", -v
                        num.append(self._double(v))
                    elif v != 1.0:
                        num.append(self._double(v))
                elif f.is_Pow and f.exp.is_Number and f.exp < 0:  # by value even if shared: the same C as unshared
                    den.append(self._power(f.base, -f.exp))
                else:
                    t = self._print(f)
                    num.append(f"({t})" if f.is_Add or t.startswith("-") else t)
            text = "*".join(num) if num else "1.0"
            if den:
                text += "/" + (den[0] if len(den) == 1 else "(" + "*".join(den) + ")")
            return sign + text

        def _print_Symbol(self, expr):
            name = self.names.get(expr)
            if name is None:
                raise RuntimeError(f"internal: unmapped symbol {expr} in generated expression")
            return name

        def _print_Float(self, expr):
            return self._double(float(expr))

        def _print_Rational(self, expr):
            return self._double(float(expr))

        def _print_Integer(self, expr):
            return self._double(float(expr))

        @staticmethod
        def _double(v):
            if v != v:
                return "NAN"
            if v in (float("inf"), float("-inf")):
                return "INFINITY" if v > 0 else "(-INFINITY)"
            text = repr(v)  # round-trips; "1e-05", "2.0" are C double literals as they stand
            return f"({text})" if v < 0 else text

        def _print_NumberSymbol(self, expr):  # pi, E, ...: the double nearest
            return self._double(float(expr))

        _print_Pi = _print_Exp1 = _print_GoldenRatio = _print_EulerGamma = _print_Catalan = _print_NumberSymbol

        def _print_Infinity(self, expr):
            return "INFINITY"

        def _print_NegativeInfinity(self, expr):
            return "(-INFINITY)"

        def _print_NaN(self, expr):
            return "NAN"

        def _print_ImaginaryUnit(self, expr):
            # a branch sympy evaluated to a non-real constant (sqrt(clip(x, -1, 1)) where the
            # clip holds -1): NaN, as the double arithmetic of the law there gives; a run that
            # reaches it fails as not finite, naming the equation
            return "NAN"

        def _print_BooleanTrue(self, expr):
            return "1"

        def _print_BooleanFalse(self, expr):
            return "0"

        def _print_Pow(self, expr):
            return self._power(*expr.args)

        def _power(self, base, e):
            b = self._print(base)
            if e.is_Integer:
                n = int(e)
                if n == 1:
                    return f"({b})"
                if n == -1:
                    return f"(1.0/({b}))"
                if n == 2:
                    return f"(({b})*({b}))"
                return f"__builtin_powi({b}, {n})"  # repeated multiplication, as numba does for x**n
            if e == sp.S.Half:
                return f"sqrt({b})"
            if e == -sp.S.Half:
                return f"(1.0/sqrt({b}))"
            return f"pow({b}, {self._print(e)})"

        def _print_Mod(self, expr):
            a, c = (self._print(x) for x in expr.args)
            return f"bs_mod({a}, {c})"

        def _fold(self, fn, args):
            out = self._print(args[0])
            for a in args[1:]:
                out = f"{fn}({out}, {self._print(a)})"
            return out

        def _print_Min(self, expr):
            return self._fold("bs_min", expr.args)

        def _print_Max(self, expr):
            return self._fold("bs_max", expr.args)

        def _print_clip(self, expr):
            u, lo, hi = (self._print(a) for a in expr.args)
            return f"bs_min(bs_max({u}, {lo}), {hi})"

        def _print_Heaviside(self, expr):
            # sympy's value at 0 (H0, 1/2 unless given), as lambdify and every fold of the law give
            a = self._print(expr.args[0])
            h0 = self._print(expr.args[1]) if len(expr.args) > 1 else "0.5"
            return f"(({a}) > 0.0 ? 1.0 : (({a}) < 0.0 ? 0.0 : {h0}))"

        def _print_sign(self, expr):
            return f"bs_sign({self._print(expr.args[0])})"

        def _print_Abs(self, expr):
            return f"fabs({self._print(expr.args[0])})"

        def _print_floor(self, expr):
            return f"floor({self._print(expr.args[0])})"

        def _print_ceiling(self, expr):
            return f"ceil({self._print(expr.args[0])})"

        def _print_Piecewise(self, expr):
            # nested ternaries; no branch taken (no True condition at the end) is NaN
            out = "NAN"
            for value, cond in reversed(expr.args):
                if cond == True:  # noqa: E712 (sympy's true)
                    out = self._print(value)
                else:
                    out = f"(({self._print(cond)}) ? ({self._print(value)}) : ({out}))"
            return out

        def _print_Relational(self, expr):
            op = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}[expr.rel_op]
            return f"(({self._print(expr.lhs)}) {op} ({self._print(expr.rhs)}))"

        def _print_And(self, expr):
            return "(" + " && ".join(f"({self._print(a)})" for a in expr.args) + ")"

        def _print_Or(self, expr):
            return "(" + " || ".join(f"({self._print(a)})" for a in expr.args) + ")"

        def _print_Not(self, expr):
            return f"(!({self._print(expr.args[0])}))"

        def _print_Xor(self, expr):
            return "(" + " ^ ".join(f"(!!({self._print(a)}))" for a in expr.args) + ")"

        def _print_Function(self, expr):
            name = type(expr).__name__
            if name not in _C_FUNCTIONS:
                raise RuntimeError(f"no C translation of the function {name}")
            return f"{_C_FUNCTIONS[name]}({', '.join(self._print(a) for a in expr.args)})"

    printer = KernelPrinter()
    printer.names = names
    return printer


# sympy function -> C <math.h> (what laws accept, laws.FUNCTIONS, and what their derivatives bring)
_C_FUNCTIONS = {
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
    "atan2": "atan2", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "asinh",
    "acosh": "acosh", "atanh": "atanh", "exp": "exp", "log": "log", "sqrt": "sqrt",
    "erf": "erf", "erfc": "erfc", "gamma": "tgamma", "loggamma": "lgamma",
}


# Largest number of expressions printed into one C function: the compiler's optimiser is
# superlinear in the size of a function (as LLVM's was for numba: the 18-DOF dual-arm Jacobian,
# 1837 entries, took about 4 min in one function). Each chunk is a function of its own that the
# compiler must not inline back (noinline). The function calls that more than one chunk needs
# (the sines and cosines of the joint angles, the input's Chebyshev terms) are computed once by
# the calling function and handed to the chunks in sh[]; other common subexpressions are
# recomputed in each chunk. Small models stay in one function.
CHUNK = 150

_ARGS = {"res": "double t, const double *y, const double *yp, const double *p, double *out",
         "jac": "double t, const double *y, const double *yp, const double *p, double cj, double *vals"}
_CALL = {"res": "t, y, yp, p, out", "jac": "t, y, yp, p, cj, vals"}


def _nodes_once(exprs):
    """Every compound sub-expression of ``exprs`` once, children before parents: the kernels'
    trees share sub-expressions heavily, and a plain traversal enters each shared one again."""
    import sympy as sp

    seen = set()

    def visit(e):
        if e.is_Atom or not e.args or e in seen:
            return
        seen.add(e)
        for a in e.args:
            yield from visit(a)
        yield e

    for e in exprs:
        yield from visit(sp.sympify(e))


def _calls_across(chunks: list) -> list:
    """The function calls (sin, cos, acos, exp, ...) met in more than one of ``chunks`` (lists of
    expressions), inner ones before the calls that contain them."""
    import sympy as sp

    where: dict = {}
    for c, exprs in enumerate(chunks):
        for e in _nodes_once(exprs):
            if isinstance(e, sp.Function) and isinstance(e, sp.Expr):
                where.setdefault(e, set()).add(c)
    return [e for e, found_in in where.items() if len(found_in) > 1]


# Fewest integer multiples of one angle, among the calls handed to chunks, computed by rotation
# rather than each by its own call, and the largest multiple so computed.
ROTATION_MIN_TERMS, ROTATION_MAX_K = 3, 64


def _multiples(calls: list) -> dict:
    """Among ``calls``, the cos(k a) and sin(k a) (integer k, 2 <= |k| <= ROTATION_MAX_K) of each
    angle a with at least ROTATION_MIN_TERMS of them: {first call of the group: group}, a group
    being (a, [(k, call)])."""
    import sympy as sp

    groups: dict = {}
    for f in calls:
        if isinstance(f, (sp.sin, sp.cos)):
            k, a = f.args[0].as_coeff_Mul()
            if k.is_Number and k == int(k) and 2 <= abs(int(k)) <= ROTATION_MAX_K and not a.is_number:
                groups.setdefault(a, []).append((int(k), f))
    return {members[0][1]: (a, members) for a, members in groups.items()
            if len({abs(k) for k, _ in members}) >= ROTATION_MIN_TERMS}


def _rotation(group, slot: dict, printer) -> list:
    """C lines setting sh[] of a group of _multiples: cos(k a) and sin(k a) from cos a and sin a by
    rotation, (c_k, s_k) = (c_{k-1} c_1 - s_{k-1} s_1, s_{k-1} c_1 + c_{k-1} s_1), six flops for each
    k instead of a libm call (the dual-arm's voltages are a Chebyshev series of degree 40, T_k(s) =
    cos(k acos s)). A rotation keeps |e^{ika}| = 1, so the rounding error grows by about an ulp per
    k (1e-14 at k = 40, against one ulp for a call)."""
    import sympy as sp

    a, members = group
    by_k: dict = {}
    for k, f in members:
        by_k.setdefault(abs(k), []).append((k, f))
    lines = ["    {", f"        const double a = {printer.text(a)}, c1 = cos(a), s1 = sin(a);",
             "        double c = c1, s = s1, c_next;"]
    for k in range(2, max(by_k) + 1):
        lines.append("        c_next = c * c1 - s * s1; s = s * c1 + c * s1; c = c_next;")
        for kk, f in by_k.get(k, []):
            # cos(-x) = cos x, sin(-x) = -sin x
            value = "c" if isinstance(f, sp.cos) else ("-s" if kk < 0 else "s")
            lines.append(f"        sh[{slot[f]}] = {value};")
            printer.names[f] = f"sh[{slot[f]}]"
    return lines + ["    }"]


def _shared(exprs, handed=frozenset()) -> set:
    """The sub-expressions met more than once in ``exprs`` (sympy's tree CSE counting: a node seen
    again is not entered again), but those ``handed`` in by the caller (sh[]). Only numbers are
    shared: not conditions, not Piecewise pairs."""
    import sympy as sp

    seen, shared = set(), set()

    def count(e):
        if e.is_Atom or not e.args or e in handed:
            return
        if e in seen:
            if isinstance(e, sp.Expr):
                shared.add(e)
                # a product prints its negative powers by value (x/(d), _print_Mul): what
                # repeats in the C is the base (the Robotino's 1/(r_0 + r cos θ) computed
                # its cosine three times a call)
                if e.is_Pow and e.exp.is_Number and e.exp < 0 and not e.base.is_Atom and e.base not in handed:
                    shared.add(e.base)
            return
        seen.add(e)
        for a in e.args:
            count(a)

    for e in exprs:
        count(e)
    return shared


def _define_shared(exprs, shared: set, printer, lines: list, handed=frozenset(), first: int = 0) -> list:
    """Common-subexpression elimination at print time: each shared sub-expression becomes a
    ``const double _cK``, children before parents, and the printer prints its name wherever it
    meets it again. sympy's tree_cse rebuilt every expression around its new symbols (new Add and
    Mul objects, each deducing its assumptions): 6.8 s of the 18-DOF dual-arm's 10 s of code
    generation. The expressions stay as they are, so the C computes exactly what they say.
    Returns the names defined (the caller forgets them after its function); ``first``: the
    number of the first name (for a function that calls it more than once)."""
    done, defined = set(), []

    def define(e):
        if e.is_Atom or not e.args or e in done or e in handed:
            return
        done.add(e)
        for a in e.args:
            define(a)
        if e in shared:
            name = f"_c{first + len(defined)}"
            lines.append(f"    const double {name} = {printer.text(e)};")
            printer.names[e] = name
            defined.append(e)

    for e in exprs:
        define(e)
    return defined


def _emit_function(name: str, kind: str, exprs: list, printer, offset: int = 0, chunk: bool = False) -> list:
    """C lines of kernel ``name`` (``kind`` "res" or "jac": the ABI of solver/native.py) writing
    ``exprs`` to out[] (vals[]) after common-subexpression elimination; chunks above CHUNK."""
    import sympy as sp

    from bondsim_ros.solver.native import UNIT_MARK

    target = "out" if kind == "res" else "vals"
    # a chunk: its own function, which may land in another translation unit (native.UNIT_MARK)
    head = ('__attribute__((noinline, visibility("hidden"))) void ' if chunk else "void ") + f"{name}({_ARGS[kind]}"
    head += ", const double *sh)" if chunk else ")"
    if len(exprs) > CHUNK:
        parts = [exprs[start:start + CHUNK] for start in range(0, len(exprs), CHUNK)]
        across = _calls_across(parts)
        body = [f"    double sh[{max(len(across), 1)}];"]
        series = _multiples(across)
        slot = {e: k for k, e in enumerate(across)}
        for k, e in enumerate(across):  # inner calls first: each printed with those before it
            if e in series:
                body += _rotation(series.pop(e), slot, printer)
            elif e not in printer.names:
                body.append(f"    sh[{k}] = {printer.text(e)};")
            printer.names[e] = f"sh[{k}]"
        lines = []
        for c, part in enumerate(parts):
            lines += _emit_function(f"{name}_{c}", kind, part, printer, offset + c * CHUNK, chunk=True) + [""]
            body.append(f"    {name}_{c}({_CALL[kind]}, sh);")
        for e in across:
            del printer.names[e]
        return lines + [UNIT_MARK, head + " {"] + body + ["}"]
    lines = [UNIT_MARK, head + " {"]
    if exprs:
        exprs = [sp.sympify(e) for e in exprs]
        handed = {e for e in printer.names if isinstance(e, sp.Function)}  # sh[] of the caller
        defined = _define_shared(exprs, _shared(exprs, handed), printer, lines, handed)
        for k, val in enumerate(exprs):
            lines.append(f"    {target}[{offset + k}] = {printer.text(val)};")
        for e in defined:  # the next function numbers its own
            del printer.names[e]
    lines.append("}")
    return lines


def _emit_modes(natural: list, modes: list, printer) -> list:
    """C lines of the ``modes`` kernel: each natural mode in terms of the modes before it (inner
    ones first), computed in order, each reading those before it from out[] where it has just
    written them. Each shared sub-expression is defined before the first mode that uses it, so
    one that reads a mode comes after it. Writing the earlier modes into the later ones instead
    made sympy fold every condition with a Piecewise in it into normal form: a Max of six sines
    did not finish generating in 5 minutes."""
    import sympy as sp

    from bondsim_ros.solver.native import UNIT_MARK

    exprs = [sp.sympify(e) for e in natural]
    saved = {m: printer.names.get(m) for m in modes}
    for j, m in enumerate(modes):
        printer.names[m] = f"out[{j}]"
    lines = [UNIT_MARK, f"void modes({_ARGS['res']}) {{"]
    shared = _shared(exprs)
    defined = []
    for k, val in enumerate(exprs):
        defined += _define_shared([val], shared - set(defined), printer, lines, first=len(defined))
        lines.append(f"    out[{k}] = {printer.text(val)};")
    for e in defined:
        del printer.names[e]
    for m, name in saved.items():
        if name is None:
            del printer.names[m]
        else:
            printer.names[m] = name
    return lines + ["}"]


def _offset_of(arg):
    """(c, a) when ``arg`` is a + c with c a nonzero number and a not a number, else None."""
    import sympy as sp

    if not isinstance(arg, sp.Add):
        return None
    const = [term for term in arg.args if term.is_number]
    if not const or len(const) == len(arg.args):
        return None
    c = float(sp.Add(*const))
    return (c, sp.Add(*[term for term in arg.args if not term.is_number])) if c != 0.0 else None


def split_offsets(exprs: list) -> list:
    """sin(a + c) and cos(a + c), c a number, written with sin(a) and cos(a): the three wheels of
    an omnidrive at a + 2 pi/3 k then cost one sincos, not three (the Robotino residual's trig
    fell from 8 sincos to 4 a call). The sums are exact to an ulp of each factor; the
    coefficients are the doubles nearest cos(c) and sin(c)."""
    import math

    import sympy as sp

    mapping = {}
    exprs = [sp.sympify(e) for e in exprs]
    for f in list(_nodes_once(exprs)):
        split = _offset_of(f.args[0]) if isinstance(f, (sp.sin, sp.cos)) else None
        if split is None:
            continue
        c, a = split
        cc, sc = sp.Float(math.cos(c)), sp.Float(math.sin(c))
        if isinstance(f, sp.sin):  # sin(a + c) = sin a cos c + cos a sin c
            mapping[f] = sp.sin(a) * cc + sp.cos(a) * sc
        else:  # cos(a + c) = cos a cos c - sin a sin c
            mapping[f] = sp.cos(a) * cc - sp.sin(a) * sc
    return [e.xreplace(mapping) for e in exprs] if mapping else exprs


def generate_source(red, key: str, events=None) -> str:
    """C source (one translation unit) of the kernels for a :class:`reduce.ReducedDAE`:
    residual, jacobian, outputs and pivots, with the ABI of solver/native.py; with ``events``
    (equations with modes, :class:`events.Events`) also modes, roots, residual_modes and
    jacobian_modes (the modes in p after the parameters), residual and jacobian then computing
    the modes at their point first (the same values as the laws as written)."""
    import sympy as sp

    from bondsim_ros.solver.native import UNIT_MARK

    from .reduce import T

    cj = sp.Symbol("cj")
    names = {T: "t", cj: "cj"}
    for i, v in enumerate(red.variables):
        names[v] = f"y[{i}]"
        if v in red.derivative:
            names[red.derivative[v]] = f"yp[{i}]"
    for k, s in enumerate(red.param_symbols):
        names[s] = f"p[{k}]"
    printer = _printer(names)

    n_par = len(red.param_symbols)
    moded_eqs, ev = events if events else (None, None)
    if ev:
        for k, m in enumerate(ev.modes):
            names[m] = f"p[{n_par + k}]"
        jac_dy, jac_dyp = moded_jacobian(red, moded_eqs)
        res = list(moded_eqs)
    else:
        jac_dy, jac_dyp = red.jac_dy, red.jac_dyp
        res = list(red.equations)
    jac = [sp.sympify(dy) + cj * sp.sympify(dyp) if dyp != 0 else sp.sympify(dy) for dy, dyp in zip(jac_dy, jac_dyp)]
    # dF/dt of the residual the solver calls (with modes: a mode a constant, as for the Jacobian),
    # for the hidden constraints of a consistent start: a difference quotient over 1e-5 s was
    # 6.5 % off for a 10 kHz source, and undefined for a law defined from t0 on (docs/solver.md)
    differential_rows = {i for i, dyp in zip(red.jac_rows, jac_dyp) if dyp != 0}
    dt = _time_derivative(res, T, bool(ev), differential_rows)
    # the kernels of the solver's loop; outputs and pivots run once per row or per run
    res, jac = split_offsets(res), split_offsets(jac)
    outs = [e for _, e in red.outputs]
    # the pivots kernel: the elimination's parametric pivots, then the parameter checks
    pivots = [e for e, _ in red.pivots] + [e for e, _, _ in (red.param_checks or [])]
    lines = [f"/* Generated by bondsim_ros codegen v{CODEGEN_VERSION} for model {_c_comment(red.name)}, key {key}. "
             "Do not edit. */", C_PRELUDE]
    if ev:
        n_modes = len(ev.modes)
        lines += _emit_modes(list(ev.natural), ev.modes, printer) + [""]
        lines += _emit_function("roots", "res", list(ev.roots), printer) + [""]
        lines += _emit_function("residual_modes", "res", res, printer) + [""]
        lines += _emit_function("jacobian_modes", "jac", jac, printer) + [""]
        for name, kind in (("residual", "res"), ("jacobian", "jac")):
            lines += [UNIT_MARK, f"void {name}({_ARGS[kind]}) {{",
                      f"    double pm[{n_par + n_modes}];",
                      f"    memcpy(pm, p, {n_par} * sizeof(double));" if n_par else "",
                      f"    modes(t, y, yp, p, pm + {n_par});",
                      f"    {name}_modes({_CALL[kind].replace(' p,', ' pm,')});",
                      "}", ""]
    else:
        lines += _emit_function("residual", "res", res, printer) + [""]
        lines += _emit_function("jacobian", "jac", jac, printer) + [""]
    lines += _emit_function("time_derivative", "res", split_offsets(dt), printer) + [""]
    lines += _emit_function("outputs", "res", outs, printer) + [""]
    # parametric pivots of the elimination (reduce.py): evaluated before a run, never in the loop
    lines += _emit_function("pivots", "res", pivots, printer)
    # every function declared after the prelude: the header each translation unit repeats
    protos = [line[:-2] + ";" for line in lines if line.endswith(") {") and not line.startswith(" ")]
    at = lines.index(C_PRELUDE) + 1
    return "\n".join(lines[:at] + protos + [""] + lines[at:]) + "\n"


def _time_derivative(res: list, t, moded: bool, differential_rows: set) -> list:
    """dF/dt of each residual expression without y' (0 where t does not appear), by the
    differentiator of the Jacobian: kinks and steps differentiate to their almost-everywhere
    values. A row with y' is NaN, which the solver takes as a central difference: such a row
    enters a hidden constraint only in a combination with others (the dual-arm's velocity
    constraints), and differentiating them all doubled the dual-arm's build time."""
    import sympy as sp

    from .jacobian import diff_moded
    from .reduce import _Differentiator

    diff = _Differentiator().diff
    split: dict = {}
    out = []
    for i, e in enumerate(res):
        e = sp.sympify(e)
        if t not in e.free_symbols:
            out.append(sp.S.Zero)
        elif i in differential_rows:
            out.append(sp.nan)
        else:
            out.append(diff_moded(e, t, split, diff) if moded else diff(e, t))
    return out


def _c_comment(text: str) -> str:
    return repr(str(text)).replace("*/", "* /")


__all__ = ["C_PRELUDE", "CHUNK", "generate_source"]
