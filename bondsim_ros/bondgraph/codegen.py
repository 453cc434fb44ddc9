"""Numeric code for the reduced DAE: sympy -> CSE -> C kernels, compiled and cached on disk.

The residual, the sparse Jacobian values and the output columns are printed as straight-line
C (after common-subexpression elimination) with the kernel ABI of solver/native.py, and
compiled by the system C compiler into a shared library, so the BDF core calls them through
plain function pointers without Python in the loop. BondGraphTools lambdifies and loops in
Python; BondSim compiles to .NET: this is the Python-native equivalent.

Generated code is cached under ``$BONDSIM_CACHE_DIR`` (default ``~/.cache/bondsim_ros``),
keyed by a fingerprint of the model *structure* (component tree, parameters, bonds, laws) and
of this package's engine source: ``m_<key>.c`` (the source), ``m_<key>_<hash>.so`` (the
library) and ``m_<key>.json`` (names, sparsity, the library's name; written last), so a second
run skips sympy and the compiler entirely and only loads the library.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core import Component, Model, ModelError, locate

CODEGEN_VERSION = "7"  # 2: pivots kernel; 3: large kernels in chunks; 4: parameter checks; 5: events; 6: C;
# 7: own Add/Mul printers (terms in stored order), CSE at print time
_ENGINE_FILES = ("core.py", "elements.py", "signals.py", "laws.py", "equations.py", "reduce.py", "codegen.py",
                 "events.py")


def cache_dir() -> Path:
    from bondsim_ros.solver import native

    path = native.cache_root() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


# --------------------------------------------------------------------------------------
# Fingerprint
# --------------------------------------------------------------------------------------
# not part of the equations: a comment added to a model file must not invalidate its code
_SKIP = {"parent", "children", "ports", "bonds", "connections", "_built", "_count", "description",
         "source_location", "law_locations"}
_engine_hash_cache: list = []


def _engine_hash() -> str:
    if not _engine_hash_cache:
        h = hashlib.sha256(CODEGEN_VERSION.encode())
        here = Path(__file__).parent
        for name in _ENGINE_FILES:
            h.update((here / name).read_bytes())
        _engine_hash_cache.append(h.hexdigest())
    return _engine_hash_cache[0]


def _plain(value):
    import sympy as sp

    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, sp.Basic):
        return "sympy:" + sp.srepr(value)
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (np.floating, np.integer)):
        return repr(value.item())
    return f"{type(value).__qualname__}:{value!r}"


_class_src: dict = {}


def _class_id(cls) -> str:
    if cls not in _class_src:
        ident = f"{cls.__module__}.{cls.__qualname__}"
        if not cls.__module__.startswith("bondsim_ros.bondgraph"):
            try:  # user-defined element laws change the equations: fold their source in
                ident += ":" + hashlib.sha256(inspect.getsource(cls).encode()).hexdigest()[:16]
            except (OSError, TypeError):
                pass
        _class_src[cls] = ident
    return _class_src[cls]


def fingerprint(model: Model) -> str:
    """A key that changes whenever the equations could change (not with parameter values)."""
    desc = []
    for comp in model.walk():
        entry = {
            "path": comp.path,
            "class": _class_id(type(comp)),
            "ports": [(p.name, type(p).__name__, p.direction) for p in comp.ports.values()],
            "bonds": [(b.source.path, b.target.path) for b in comp.bonds],
            "signals": [(c.source.path, c.target.path) for c in comp.connections],
        }
        if comp.elementary:
            entry["attrs"] = {k: _plain(v) for k, v in sorted(vars(comp).items()) if k not in _SKIP}
        desc.append(entry)
    desc.append({"parameters": sorted(model.parameters)})
    blob = json.dumps(desc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256((_engine_hash() + blob).encode()).hexdigest()[:24]


# --------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------
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
# superlinear in the size of a function (as LLVM's was for numba: the 18-DOF seed 001 Jacobian,
# 1837 entries, took about 4 min in one function). Each chunk is a function of its own that the
# compiler must not inline back (noinline); the price is common subexpressions recomputed
# across chunks. Small models stay in one function.
CHUNK = 150

_ARGS = {"res": "double t, const double *y, const double *yp, const double *p, double *out",
         "jac": "double t, const double *y, const double *yp, const double *p, double cj, double *vals"}
_CALL = {"res": "t, y, yp, p, out", "jac": "t, y, yp, p, cj, vals"}


def _shared(exprs) -> set:
    """The sub-expressions met more than once in ``exprs`` (sympy's tree CSE counting: a node seen
    again is not entered again). Only numbers are shared: not conditions, not Piecewise pairs."""
    import sympy as sp

    seen, shared = set(), set()

    def count(e):
        if e.is_Atom or not e.args:
            return
        if e in seen:
            if isinstance(e, sp.Expr):
                shared.add(e)
            return
        seen.add(e)
        for a in e.args:
            count(a)

    for e in exprs:
        count(e)
    return shared


def _define_shared(exprs, shared: set, printer, lines: list) -> list:
    """Common-subexpression elimination at print time: each shared sub-expression becomes a
    ``const double _cK``, children before parents, and the printer prints its name wherever it
    meets it again. sympy's tree_cse rebuilt every expression around its new symbols (new Add and
    Mul objects, each deducing its assumptions): 6.8 s of the 18-DOF dual-arm's 10 s of code
    generation. The expressions stay as they are, so the C computes exactly what they say.
    Returns the names defined (the caller forgets them after its function)."""
    done, defined = set(), []

    def define(e):
        if e.is_Atom or not e.args or e in done:
            return
        done.add(e)
        for a in e.args:
            define(a)
        if e in shared:
            name = f"_c{len(defined)}"
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
    head = ('__attribute__((noinline, visibility("hidden"))) void ' if chunk else "void ") + f"{name}({_ARGS[kind]})"
    if len(exprs) > CHUNK:
        lines, calls = [], []
        for c, start in enumerate(range(0, len(exprs), CHUNK)):
            lines += _emit_function(f"{name}_{c}", kind, exprs[start:start + CHUNK], printer, offset + start,
                                    chunk=True) + [""]
            calls.append(f"    {name}_{c}({_CALL[kind]});")
        return lines + [UNIT_MARK, head + " {"] + calls + ["}"]
    lines = [UNIT_MARK, head + " {"]
    if exprs:
        exprs = [sp.sympify(e) for e in exprs]
        defined = _define_shared(exprs, _shared(exprs), printer, lines)
        for k, val in enumerate(exprs):
            lines.append(f"    {target}[{offset + k}] = {printer.text(val)};")
        for e in defined:  # the next function numbers its own
            del printer.names[e]
    lines.append("}")
    return lines


def _moded_jacobian(red, equations):
    """Jacobian entries (same pattern) of the equations with modes: only the rows that changed
    are differentiated again; a mode is a constant for the derivative."""
    changed = {i for i, (a, b) in enumerate(zip(red.equations, equations)) if a is not b}
    dsyms = {red.derivative[v]: v for v in red.derivative}
    jac_dy, jac_dyp = list(red.jac_dy), list(red.jac_dyp)
    from .reduce import _Differentiator

    split: dict = {}
    diff = _Differentiator().diff  # one memo for all entries: their sub-expressions recur
    for k, (i, j) in enumerate(zip(red.jac_rows, red.jac_cols)):
        if i in changed:
            v = red.variables[j]
            jac_dy[k] = _diff_moded(equations[i], v, split, diff)
            dv = red.derivative.get(v)
            jac_dyp[k] = _diff_moded(equations[i], dv, split, diff) if dv is not None and dv in dsyms else 0
    return jac_dy, jac_dyp


def _diff_moded(expr, var, split: dict, diff=None):
    """d expr / d var (reduce._diff) for an equation whose Piecewise laws switch on modes, the
    Piecewise taken apart: expr = E(var, P1, P2, ...) with the outermost Piecewise P_k as
    stand-in symbols, d expr = dE/dvar + sum dE/dP_k dP_k, each dP_k the Piecewise of its
    branches' derivatives under the same conditions (what sympy's derivative of a Piecewise is;
    a condition on a mode does not depend on var). sympy differentiating through the Piecewise
    re-derived its conditions' assumptions at every product-rule step: the Robotino's moded
    Jacobian took 1.5 s. ``split`` caches each expression's stand-ins across calls; ``diff`` (reduce's
    differentiator) may carry one memo over many calls."""
    import sympy as sp

    if diff is None:
        from .reduce import _diff as diff

    if not expr.has(sp.Piecewise):
        return diff(expr, var)
    if expr not in split:
        outer: dict = {}

        def collect(e):
            if isinstance(e, sp.Piecewise):
                outer.setdefault(e, sp.Dummy("pw"))
            else:
                for a in e.args:
                    collect(a)

        collect(expr)
        split[expr] = (expr.xreplace(outer), outer)
    flat, outer = split[expr]
    back = {d: pw for pw, d in outer.items()}
    total = diff(flat, var)
    for pw, d in outer.items():
        branches = [(_diff_moded(v, var, split, diff), c) for v, c in pw.args]
        if all(b == 0 for b, _ in branches):
            continue
        coeff = diff(flat, d)
        if coeff != 0:
            total += coeff * sp.Piecewise(*branches, evaluate=False)
    return total.xreplace(back)


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
        jac_dy, jac_dyp = _moded_jacobian(red, moded_eqs)
        res = list(moded_eqs)
    else:
        jac_dy, jac_dyp = red.jac_dy, red.jac_dyp
        res = list(red.equations)
    jac = [sp.sympify(dy) + cj * sp.sympify(dyp) if dyp != 0 else sp.sympify(dy) for dy, dyp in zip(jac_dy, jac_dyp)]
    outs = [e for _, e in red.outputs]
    # the pivots kernel: the elimination's parametric pivots, then the parameter checks
    pivots = [e for e, _ in red.pivots] + [e for e, _, _ in (red.param_checks or [])]
    lines = [f"/* Generated by bondsim_ros codegen v{CODEGEN_VERSION} for model {_c_comment(red.name)}, key {key}. "
             "Do not edit. */", C_PRELUDE]
    if ev:
        n_modes = len(ev.modes)
        # the natural modes: each in terms of the modes before it (inner ones first), here
        # with those written out, so that one common-subexpression elimination serves them all
        natural = []
        for k, nat in enumerate(ev.natural):
            natural.append(sp.sympify(nat).xreplace(dict(zip(ev.modes[:k], natural))))
        lines += _emit_function("modes", "res", natural, printer) + [""]
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
    lines += _emit_function("outputs", "res", outs, printer) + [""]
    # parametric pivots of the elimination (reduce.py): evaluated before a run, never in the loop
    lines += _emit_function("pivots", "res", pivots, printer)
    # every function declared after the prelude: the header each translation unit repeats
    protos = [line[:-2] + ";" for line in lines if line.endswith(") {") and not line.startswith(" ")]
    at = lines.index(C_PRELUDE) + 1
    return "\n".join(lines[:at] + protos + [""] + lines[at:]) + "\n"


def _c_comment(text: str) -> str:
    return repr(str(text)).replace("*/", "* /")


def _csc(rows, cols, n):
    indptr = np.zeros(n + 1, dtype=np.int64)
    for c in cols:
        indptr[c + 1] += 1
    np.cumsum(indptr, out=indptr)
    return indptr, np.asarray(rows, dtype=np.int64)


# --------------------------------------------------------------------------------------
# The compiled model
# --------------------------------------------------------------------------------------
@dataclass
class CompiledModel:
    """Everything the solver and the outputs need, without sympy."""

    name: str
    key: str
    var_names: list
    eq_names: list
    differential: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    y0: np.ndarray
    param_names: list
    params: np.ndarray
    output_names: list
    residual: object
    jacobian: object
    outputs: object
    source_path: str
    from_cache: bool = False
    pivot_names: list = None
    pivots: object = None  # kernel: the pivots, then the checks
    check_names: list = None
    check_kinds: list = None
    pivot_params: list = None
    param_uses: dict = None
    # events (bondgraph/events.py): kernels with the modes after the parameters in p
    n_modes: int = 0
    root_names: list = None
    mode_names: list = None
    roots: object = None
    modes: object = None
    residual_modes: object = None
    jacobian_modes: object = None

    def check_params(self, params) -> None:
        """Refuse parameter values the model cannot run with, naming the parameter and the
        element law it enters: not finite; a sign an element needs (an inertia or capacitance
        must be positive, a resistance non-negative, wherever the value comes from: file,
        --param, set_param, fit); zero where the symbolic elimination divided by it (a pivot)
        or where it is a derivative's only coefficient."""
        from .core import ModelError

        params = np.asarray(params, dtype=float)
        bad_values = [n for n, v in zip(self.param_names, params) if not np.isfinite(v)]
        if bad_values:
            raise ModelError(self.name, "parameter values must be finite: "
                             + ", ".join(f"{n} = {params[self.param_names.index(n)]}" for n in bad_values))
        pivot_names, check_names = self.pivot_names or [], self.check_names or []
        if not (pivot_names or check_names):
            return
        out = np.zeros(len(pivot_names) + len(check_names))
        z = np.zeros(self.n)
        with np.errstate(all="ignore"):
            self.pivots(0.0, z, z, params, out)
        problems = []
        for k, v in enumerate(out):
            if k < len(pivot_names):
                ok, text = np.isfinite(v) and v != 0.0, f"{pivot_names[k]} (pivot = {v + 0.0:g})"
            else:
                kind = self.check_kinds[k - len(pivot_names)]
                ok = np.isfinite(v) and (v > 0 if kind == "positive" else v >= 0 if kind == "nonnegative" else v != 0)
                text = f"{check_names[k - len(pivot_names)]} (it is {v + 0.0:g})"
            if not ok:
                problems.append((k, text))
        if problems:
            named = []
            for k, _ in problems:
                for n in (self.pivot_params[k] if k < len(self.pivot_params or []) else []):
                    if n not in named:
                        named.append(n)
            values = ", ".join(f"{n} = {params[self.param_names.index(n)]:g}" for n in named) or \
                ", ".join(f"{n} = {v:g}" for n, v in zip(self.param_names, params))
            uses = "; ".join(f"{n} enters {', '.join(self.param_uses[n])}" for n in named if self.param_uses.get(n))
            raise ModelError(self.name, f"parameter value(s) {values} refused{f' ({uses})' if uses else ''}: "
                             + "; ".join(t for _, t in problems))

    @property
    def n(self) -> int:
        return len(self.var_names)

    def param_index(self, name: str) -> int:
        try:
            return self.param_names.index(name)
        except ValueError:
            raise KeyError(f"model {self.name!r} has no parameter {name!r} (has: {', '.join(self.param_names) or 'none'})") from None

    def problem(self):
        from bondsim_ros.solver import DAEProblem

        ev = self.n_modes > 0
        return DAEProblem(
            residual=self.residual_modes if ev else self.residual,
            jacobian=self.jacobian_modes if ev else self.jacobian, indptr=self.indptr, indices=self.indices,
            differential=self.differential.copy(), params=self.params.copy(),
            var_names=list(self.var_names), eq_names=list(self.eq_names),
            roots=self.roots if ev else None, modes=self.modes if ev else None,
            n_roots=len(self.root_names or []) if ev else 0, n_modes=self.n_modes, root_names=self.root_names,
            mode_names=self.mode_names,
        )


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


# kernel field of CompiledModel -> its ABI kind (solver/native.py)
_KERNELS = {"residual": "res", "jacobian": "jac", "outputs": "res", "pivots": "res"}
_EVENT_KERNELS = {"roots": "res", "modes": "res", "residual_modes": "res", "jacobian_modes": "jac"}


class _KeyLock:
    """An exclusive lock on one key's build (flock: released by the kernel if the process
    dies), so concurrent first runs of a model build it once; the lock file goes with it."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        import fcntl

        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        # unlinked while held: a process waiting on this file finds the built code on waking
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)


# -O1 for the kernels (straight-line arithmetic): gcc 0.29 s instead of 0.41 s on the Robotino's
# 511 lines, 5.0 s instead of 6.3 s on the dual-arm's 4067; the Robotino solve measured the same
KERNEL_CFLAGS = ("-O1",)


def _library(name: str, src_path: Path, source: str, folder: Path) -> Path:
    from bondsim_ros.solver import native

    try:
        return native.build_library(source, src_path.stem, folder, extra_flags=KERNEL_CFLAGS, what=f"model {name!r}")
    except native.NativeBuildError as exc:
        text = str(exc).strip()
        raise ModelError(name, f"the generated code does not compile ({text})") from None


def compile_model(model: Model, use_cache: bool = True, log=None, eliminate: bool = True,
                  key: str | None = None) -> CompiledModel:
    """Build (or load from the cache) the numeric kernels of ``model``: C compiled by the
    system compiler into a shared library, its kernels as native.CKernel. ``key``: the model's
    fingerprint when already known (models.buildcache: then ``model`` needs only ``name`` and
    ``parameters``, and the cached code must exist)."""
    log = log or (lambda msg: None)
    key_given = key is not None
    key = key or fingerprint(model) + ("" if eliminate else "-full")
    folder = cache_dir()
    src_path, meta_path = folder / f"m_{key}.c", folder / f"m_{key}.json"

    def cached():
        return src_path.exists() and meta_path.exists()

    from_cache = use_cache and cached()
    if key_given and not from_cache:  # removed since the build record was read
        raise ModelError(model.name, f"generated code {src_path.name} left the cache while loading: run again")
    if from_cache:
        meta = json.loads(meta_path.read_text())
    else:
        with _KeyLock(folder / f"m_{key}.lock"):
            from_cache = use_cache and cached()  # built by another process while this one waited
            if from_cache:
                meta = json.loads(meta_path.read_text())
            else:
                meta = _build(model, key, eliminate, src_path, meta_path, folder, log)
    if from_cache:
        log(f"model {model.name!r}: generated code from cache ({src_path.name})")
    lib_path = folder / meta["library"]
    if not lib_path.exists():  # the library alone was removed: compile the cached C again (no sympy)
        lib_path = _library(model.name, src_path, src_path.read_text(), folder)
        if lib_path.name != meta["library"]:  # another compiler version since
            meta["library"] = lib_path.name
            _atomic_write(meta_path, json.dumps(meta))
    from bondsim_ros.solver import native

    try:
        lib = native.load_library(lib_path)
        kernels = {f: native.CKernel(lib, f, kind) for f, kind in _KERNELS.items()}
        if meta.get("n_modes", 0):
            kernels.update({f: native.CKernel(lib, f, kind) for f, kind in _EVENT_KERNELS.items()})
    except (OSError, AttributeError) as exc:  # a damaged library: keep no broken cache
        for stale in (src_path, meta_path, lib_path):
            stale.unlink(missing_ok=True)
        raise ModelError(model.name, f"the generated library {lib_path.name} does not load ({exc}): run again") from None
    params = np.array([model.parameters[n] for n in meta["param_names"]], dtype=float)
    return CompiledModel(
        name=meta["name"], key=key, var_names=meta["var_names"], eq_names=meta["eq_names"],
        differential=np.array(meta["differential"], dtype=bool),
        indptr=np.array(meta["indptr"], dtype=np.int64), indices=np.array(meta["indices"], dtype=np.int64),
        y0=np.array(meta["y0"], dtype=float), param_names=meta["param_names"], params=params,
        output_names=meta["output_names"], residual=kernels["residual"], jacobian=kernels["jacobian"],
        outputs=kernels["outputs"], source_path=str(src_path), from_cache=from_cache,
        pivot_names=meta.get("pivot_names", []), pivots=kernels["pivots"],
        check_names=meta.get("check_names", []), check_kinds=meta.get("check_kinds", []),
        pivot_params=meta.get("pivot_params", []), param_uses=meta.get("param_uses", {}),
        n_modes=meta.get("n_modes", 0), root_names=meta.get("root_names", []),
        mode_names=meta.get("mode_names", []),
        roots=kernels.get("roots"), modes=kernels.get("modes"),
        residual_modes=kernels.get("residual_modes"), jacobian_modes=kernels.get("jacobian_modes"),
    )


def _build(model, key, eliminate, src_path, meta_path, folder, log) -> dict:
    """Equations, elimination, C source, library; then the source and the metadata (last: the
    cache entry exists once the metadata does). A compile failure leaves nothing behind."""
    from .equations import build_dae
    from .events import extract_events
    from .reduce import reduce_dae, require_unknowns

    log(f"model {model.name!r}: building equations")
    try:
        raw = build_dae(model)
        red = reduce_dae(raw, eliminate=eliminate)
        require_unknowns(red)
    except ModelError as exc:  # add the model-file line of the component it names
        raise locate(model, exc) from None
    log(f"model {model.name!r}: {len(raw.equations)} equations -> {len(red.equations)} after elimination; "
        f"{len(red.jac_rows)} Jacobian non-zeros; generating code")
    indptr, indices = _csc(red.jac_rows, red.jac_cols, len(red.variables))
    meta = {
        "name": red.name,
        "var_names": red.var_names,
        "eq_names": red.eq_names,
        "differential": red.differential.tolist(),
        "indptr": indptr.tolist(),
        "indices": indices.tolist(),
        "y0": red.y0.tolist(),
        "param_names": red.param_names,
        "output_names": [n for n, _ in red.outputs],
        "pivot_names": [f"{d}: coefficient {e}".replace("param:", "") for e, d in red.pivots],
        "check_names": [d for _, d, _ in red.param_checks or []],
        "check_kinds": [k for _, _, k in red.param_checks or []],
        # parameters in each pivot, then in each check: named with their values when refused
        "pivot_params": [_param_names(e) for e, _ in red.pivots] + [_param_names(e) for e, _, _ in
                                                                       red.param_checks or []],
        "param_uses": red.param_uses or {},
    }
    moded, ev = extract_events(red.equations, red.eq_names)
    meta["n_modes"] = len(ev.modes)
    meta["root_names"] = ev.root_names
    meta["mode_names"] = ev.mode_names
    if ev:
        log(f"model {model.name!r}: {len(ev.roots)} switching functions, {len(ev.modes)} modes (events)")
    try:
        source = generate_source(red, key, (moded, ev) if ev else None)
    except Exception as exc:  # a law with no C translation the checks let through: name it
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(model.name, f"the generated code does not compile ({type(exc).__name__}: {first})") from None
    log(f"model {model.name!r}: compiling the kernels (C)")
    meta["library"] = _library(model.name, src_path, source, folder).name
    _atomic_write(src_path, source)
    _atomic_write(meta_path, json.dumps(meta))
    return meta


def _param_names(expr) -> list:
    return sorted(s.name[len("param:"):] for s in expr.free_symbols if s.name.startswith("param:"))


__all__ = ["CompiledModel", "compile_model", "fingerprint", "generate_source", "cache_dir", "Component"]
