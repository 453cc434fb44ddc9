"""Symbolic reduction of the raw DAE and its sparse Jacobian.

Before any numerics, trivial equations are eliminated: junction equalities (a = ±b), sources
(a = c) and every relation that defines an algebraic unknown explicitly with a constant
coefficient (f = p/I, e = R f, signal = expression). Eliminating an unknown through an equation
in which it appears with a constant non-zero coefficient is a Schur complement with a constant
pivot, so the reduced system is singular exactly when the full one is; what remains is the
semi-explicit DAE x' = z, f(x, y, t) = 0 of the paper with z substituted, i.e. F(t, y, y') = 0.
Eliminated unknowns stay available for output as expressions of the remaining ones.

A coefficient made only of run-time parameters (an R, I or TF value given as
``model.parameter``) is a pivot too, once every constant pivot is used up: it is constant during
a run, just not known at build time. Such pivots are kept in ``ReducedDAE.pivots`` and checked
against the parameter values before every run, so a value that makes one zero is refused by
name instead of dividing by zero.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import sympy as sp
from sympy.core.function import ArgumentIndexError

from .core import ModelError
from .equations import RawDAE, T, derivative_symbol


# Fill-in. An equation holding run-time parameters and more unknowns than this is not used to
# eliminate one (it stays in the DAE with its unknown): substituting its right-hand side spreads
# them into every equation of that unknown with coefficients that, unlike numbers, do not fold.
# Along a ladder of N resistors given as a parameter each 0-junction's effort became the sum of
# all before it and the parametric pivots then substituted through all of them: O(N^3), 11 s at
# N = 300, N = 1000 did not finish; with the cap N = 1000 takes 4.7 s (benchmarks/model_size.py).
# The built-in models' longest rows with parameters have 13 unknowns (robotino_twist); their
# rows without parameters may be long (the dual-arm's longest has 313) and are not capped.
MAX_PIVOT_ROW = 32
# Nesting. A parametric pivot divides by its coefficient without folding it into the numbers,
# and an unknown solved from an equation that earlier substitutions filled carries all of them:
# along a ladder of N resistors given as a parameter, the pivot order by row length solved some
# mesh equations for unknowns whose expressions were 116 levels deep (N = 2000) and growing
# with N (k*((... )/k - ...)), which sympy rebuilds and traverses at every substitution: N = 2000
# did not reduce in minutes, 10 000 passed Python's recursion limit. An equation is not solved
# through a parametric pivot for an unknown whose expression would be more than this many
# levels deep: another of its unknowns is taken, or the equation stays in the DAE with them
# (the solver takes algebraic unknowns as they are). The ladder's equations then stay at most
# 13 levels deep and reduce to one (N = 10 000: 53 s, benchmarks/model_size.py). The built-in
# models' parametric pivots are at most 8 levels deep (omni5dpo), so none of them is affected.
MAX_PIVOT_DEPTH = 40


@dataclass
class ReducedDAE:
    name: str
    variables: list  # remaining unknowns y (sympy symbols), ordered: states first
    var_names: list
    equations: list  # F_i(t, y, y', p) == 0
    eq_names: list
    differential: np.ndarray  # bool: y'_i appears in F
    derivative: dict  # var symbol -> derivative symbol
    eliminated: Mapping  # eliminated symbol -> expression in remaining y, y', t, p (composed when read)
    y0: np.ndarray  # initial guess (states from the model, algebraic 0)
    param_names: list
    param_symbols: list
    outputs: list  # (column name, expression)
    jac_rows: list  # per CSC nonzero: row
    jac_cols: list
    jac_dy: list  # dF_i/dy_j expression per nonzero
    jac_dyp: list  # dF_i/dy'_j expression per nonzero
    pivots: list  # (expression in parameters, description): must stay non-zero at run time
    # (expression in parameters, description, kind): signs the element laws need (equations.
    # _Context.require) and derivative coefficients that must not vanish; checked like pivots
    param_checks: list = None
    param_uses: dict = None  # parameter name -> element laws it enters
    sources: list = None  # paths of the Se and Sf elements (named when nothing is left to simulate)
    # (index in variables, "c: q0 = 5"): states given an initial value whose derivative left the
    # equations, so that the constraints fix them (an element in derivative causality): the
    # given value is only where the consistent initialisation starts, and must be the answer
    fixed_given: list = None
    # indices in variables of the differential I and C states given no initial value: where the
    # constraints cannot hold with their default 0, the consistent start may move them
    free_start: list = None
    # bool per variable: in the solver's error test. The differential ones, and the states whose
    # derivative an output reads but no equation (a Derivative block's hidden x = in): outside the
    # test their interpolated slope was never checked, and a recorded d/dt was off by 0.6 of 0.8
    tested: np.ndarray = None


class _Differentiator:
    """d expr / d var as ``sympy.diff`` gives it, memoised per (sub-expression, var).

    After elimination the same sub-expressions (a wheel speed, a joint force) recur in many
    equations, and sympy re-derives them (and recomputes their free symbols and asks whether
    every partial result is zero) at every occurrence. Sums, products, powers and functions
    whose derivative is the chain rule (sin, tanh, clip, ...) are differentiated here by the
    same rule sympy's own ``_eval_derivative`` methods apply, building the same expressions
    with the same constructors in the same order; everything else goes to ``sympy.diff``."""

    def __init__(self):
        self._d: dict = {}
        self._free: dict = {}
        self._depth: dict = {}

    def depth(self, e) -> int:
        """Levels of ``e`` as a tree (a symbol or number: 0), memoised like ``free``."""
        r = self._depth.get(e)
        if r is None:
            r = 1 + max(self.depth(a) for a in e.args) if e.args else 0
            self._depth[e] = r
        return r

    def free(self, e) -> frozenset:
        r = self._free.get(e)
        if r is None:
            if type(e) in _UNION_FREE:  # Basic.free_symbols: the union over the arguments
                r = frozenset().union(*[self.free(a) for a in e.args])
            else:
                r = frozenset(e.free_symbols)
            self._free[e] = r
        return r

    def __call__(self, e, v):
        key = (e, v)
        r = self._d.get(key)
        if r is not None:
            return r
        kind = type(e)
        if v not in self.free(e):
            r = sp.S.Zero
        elif e == v:
            r = sp.S.One
        elif kind is sp.Add:  # Add._eval_derivative
            r = sp.Add(*[self(a, v) for a in e.args])
        elif kind is sp.Mul:  # Mul._eval_derivative_n_times(v, 1): the Leibniz rule, factor by factor
            args = e.args
            if args[0].is_Number and not args[0].is_finite:  # 0*oo is nan: keep every term
                r = sp.Add(*[1 * sp.Mul(*(args[:i] + (self(a, v),) + args[i + 1:])) for i, a in enumerate(args)])
            else:  # a term whose factor does not contain v is 0 and adds nothing: not built
                r = sp.Add(*[1 * sp.Mul(*(args[:i] + (self(a, v),) + args[i + 1:]))
                             for i, a in enumerate(args) if v in self.free(a)])
        elif kind is sp.Pow:  # Pow._eval_derivative
            if v not in self.free(e.exp):  # v only in the base (not a number then): 0*log(base) is 0
                r = e * (self(e.base, v) * e.exp / e.base)
            else:
                r = e * (self(e.exp, v) * sp.log(e.base) + self(e.base, v) * e.exp / e.base)
        elif isinstance(e, sp.Function) and kind._eval_derivative is _FUNCTION_DERIVATIVE \
                and kind._eval_derivative_n_times is _BASIC_DERIVATIVE_N:  # Function._eval_derivative
            terms = []
            for i, a in enumerate(e.args, 1):
                da = self(a, v)
                if da.is_zero:
                    continue
                try:
                    df = e.fdiff(i)
                except ArgumentIndexError:
                    df = sp.Function.fdiff(e, i)
                terms.append(df * da)
            r = sp.Add(*terms)
        else:
            r = sp.diff(e, v)
        self._d[key] = r
        return r

    def diff(self, expr, var):
        """d expr / d var, with the almost-everywhere derivatives sympy leaves unevaluated:
        floor/ceiling -> 0, Mod(a, c) -> da (c constant), DiracDelta -> 0 (kinks, not impulses)."""
        d = self(expr, var)
        if not d.has(sp.Derivative, sp.DiracDelta):
            return d

        def fix(e):
            inner = e.expr
            if isinstance(inner, (sp.floor, sp.ceiling)):
                return sp.S.Zero
            if isinstance(inner, sp.Mod):
                # Mod(a, c) = a - c floor(a/c), floor's derivative 0: da - floor(a/c) dc (a
                # run-time parameter c, or an unknown, as well as a number)
                a_, c_ = inner.args
                v = e.variables[0]
                dc = self.diff(c_, v) if c_.free_symbols else sp.S.Zero
                return self.diff(a_, v) - (sp.floor(a_ / c_) * dc if dc != 0 else sp.S.Zero)
            raise ModelError("derivative", f"cannot differentiate {inner} for the Jacobian")

        d = d.replace(lambda e: isinstance(e, sp.Derivative), fix)
        if d.has(sp.Subs):
            # the chain rule's Subs(df/dxi, xi, arg) is left holding the fixed derivative: apply
            # it, else its Dummy (numbered at random per process) makes the expression differ
            # from build to build although its value does not
            d = d.replace(lambda e: isinstance(e, sp.Subs), lambda e: e.expr.xreplace(dict(zip(e.variables, e.point))))
        return d.replace(lambda e: isinstance(e, sp.DiracDelta), lambda e: sp.S.Zero)


_UNION_FREE = (sp.Add, sp.Mul, sp.Pow)
_FUNCTION_DERIVATIVE = sp.Function._eval_derivative
_BASIC_DERIVATIVE_N = sp.Basic._eval_derivative_n_times


def _substitute(expr, v, rhs, free, memo):
    """``expr.xreplace({v: rhs})``, node for node the same rebuild, but skipping sub-trees
    without ``v`` (``free``: the memoised free symbols; the law language has no construct
    that binds a symbol, so free symbols are all the symbols) and rebuilding a sub-expression
    shared by several equations once per substitution (``memo``)."""
    if v not in free(expr):
        return expr
    if expr == v:
        return rhs
    r = memo.get(expr)
    if r is None:
        r = expr.func(*[_substitute(a, v, rhs, free, memo) if isinstance(a, sp.Basic) else a
                        for a in expr.args])
        memo[expr] = r
    return r


def _affine(expr, v, free) -> bool:
    """True when ``v`` enters ``expr`` only as a term of a sum or a factor of a product whose
    other factors are free of it, at any depth: then ``expr`` at v = 0 is what is left
    without its v-term (the derivative alone cannot tell: Mod(v, 1) has derivative 1)."""
    if v not in free(expr) or expr == v:
        return True
    if isinstance(expr, sp.Add):
        return all(_affine(a, v, free) for a in expr.args)
    if isinstance(expr, sp.Mul):
        inner = [a for a in expr.args if v in free(a)]
        return len(inner) == 1 and _affine(inner[0], v, free)
    return False


def _diff(expr, var):
    """d expr / d var (see _Differentiator.diff), without a memo shared between calls."""
    return _Differentiator().diff(expr, var)


def _linear_coefficient(expr, var, allowed=frozenset(), diff=_diff):
    """Coefficient of ``var`` if ``expr`` is affine in it and the coefficient depends on nothing
    but the symbols in ``allowed`` (run-time parameters), else None."""
    d = diff(expr, var)
    if d == 0 or (d.free_symbols - allowed) or d.has(sp.Piecewise, sp.Min, sp.Max):
        return None
    return d


def reduce_dae(raw: RawDAE, eliminate: bool = True) -> ReducedDAE:
    try:
        return _reduce_dae(raw, eliminate)
    except RecursionError:
        # sympy and the memoised derivative recurse once per level of an expression; should
        # an elimination still nest past Python's recursion limit (MAX_PIVOT_DEPTH bounds only
        # the parametric pivots' expressions), the model is refused by name instead
        raise ModelError(raw.model_name, f"the eliminated equations nest deeper than the symbolic reduction "
                                         f"can follow ({len(raw.equations)} equations; a long chain whose values "
                                         f"are run-time parameters): give those values as numbers, or build "
                                         f"shorter chains") from None


def _reduce_dae(raw: RawDAE, eliminate: bool) -> ReducedDAE:
    states = list(raw.states)
    state_set = set(states)
    deriv = {s: derivative_symbol(s) for s in states}
    algebraic = [v for v in raw.variables if v not in state_set]
    alg_set = set(algebraic)
    equations = list(raw.equations)
    names = list(raw.eq_names)
    alive = [True] * len(equations)
    eliminated_order: list[tuple] = []
    pivots: list[tuple] = []
    param_syms = frozenset(raw.parameter_symbols.values())
    # one memo of derivatives and free symbols for the elimination and the Jacobian
    differentiator = _Differentiator()
    diff, free = differentiator.diff, differentiator.free

    if eliminate:
        occurs: dict = defaultdict(set)
        for i, eq in enumerate(equations):
            for s in free(eq) & alg_set:
                occurs[s].add(i)

        def try_eliminate(i) -> bool:
            eq = equations[i]
            cands = [s for s in free(eq) if s in alg_set]
            if not cands:
                return False
            if len(free(eq) - param_syms) > MAX_PIVOT_ROW and free(eq) & param_syms:
                return False  # its right-hand side would spread this many unknowns (fill-in)
            # prefer unknowns that appear in few other equations: cheaper substitutions
            cands.sort(key=lambda s: (len(occurs[s]), s.name))
            for v in cands:
                c = _linear_coefficient(eq, v, allowed, diff)
                if c is None:
                    continue
                rest = eq - c * v
                if v in free(rest):
                    # a parametric coefficient is not multiplied out (k*(x + v) - k*v stays as
                    # it is): take the equation at v = 0 where v enters only as a term or a
                    # factor, and leave v alone where it only looks affine (Mod(v, 1) - v)
                    if not _affine(eq, v, free):
                        continue
                    rest = _substitute(eq, v, sp.S.Zero, free, {})
                rhs = -rest / c
                if c.free_symbols and differentiator.depth(rhs) > MAX_PIVOT_DEPTH:
                    continue  # v stays an unknown of the DAE: its expression would nest further
                if c.free_symbols:
                    pivots.append((c, f"{names[i]} solved for {raw.state_names.get(v, v.name)}"))
                alive[i] = False
                alg_set.discard(v)
                eliminated_order.append((v, rhs))
                memo: dict = {}
                for j in list(occurs[v]):
                    if j == i or not alive[j]:
                        continue
                    new = _substitute(equations[j], v, rhs, free, memo)
                    equations[j] = new
                    for s in free(new) & alg_set:
                        occurs[s].add(j)
                occurs.pop(v, None)
                return True
            return False

        # constant pivots first, so models without parametric coefficients reduce exactly as
        # before and a parameter becomes a pivot only where no constant one is left
        for allowed in (frozenset(), param_syms):
            changed = True
            while changed:
                changed = False
                # aliases and sources first (two terms or fewer), then explicit definitions
                order = sorted((i for i in range(len(equations)) if alive[i]),
                               key=lambda i: (len(free(equations[i])), i))
                for i in order:
                    if alive[i] and try_eliminate(i):
                        changed = True

    eliminated = _Eliminated(eliminated_order, free)

    rem_eqs, rem_names = [], []
    for i, eq in enumerate(equations):
        if not alive[i]:
            continue
        if eq == 0 or (eq.is_number and abs(float(eq)) == 0):
            raise ModelError(names[i].split(":")[0], f"redundant equation ({names[i]}): it reduces to 0 = 0; "
                                                     f"the model over-constrains this part (hyperstatic)")
        if eq.is_number:
            raise ModelError(names[i].split(":")[0], f"inconsistent equation ({names[i]}): reduces to {eq} = 0 "
                                                     f"(two sources or constraints fix the same effort or flow)")
        rem_eqs.append(eq)
        rem_names.append(names[i])

    remaining_alg = [v for v in algebraic if v in alg_set]
    variables = states + remaining_alg
    var_names = [raw.state_names.get(v, v.name) for v in variables]
    n_eq, n_var = len(rem_eqs), len(variables)
    if n_eq != n_var:
        _structural_report(rem_eqs, rem_names, variables, var_names, deriv)
        raise ModelError(raw.model_name, f"{n_eq} equations for {n_var} unknowns")
    _structural_report(rem_eqs, rem_names, variables, var_names, deriv)

    dsyms = {deriv[s]: s for s in states}
    appearing = set()
    for eq in rem_eqs:
        appearing |= free(eq) & dsyms.keys()
    # a derivative whose only coefficient is made of parameters: a value zeroing it turns the
    # state algebraic (R = 0 in an R-C loop), which the solver cannot integrate: refuse it by name
    checks = list(raw.param_checks)
    eqs_of = defaultdict(list)  # derivative -> the equations it appears in (one pass, not one per state)
    for i, eq in enumerate(rem_eqs):
        for s in free(eq) & dsyms.keys():
            eqs_of[s].append(i)
    for dsym, state in dsyms.items():
        where = eqs_of.get(dsym, [])
        if len(where) == 1:
            coef = diff(rem_eqs[where[0]], dsym)
            if coef.free_symbols and coef.free_symbols <= param_syms:
                # said by its consequence first: the equation that holds the coefficient is where
                # the elimination left it, often not the element the parameter belongs to
                checks.append((coef, f"{raw.state_names[state]}' would drop out of the equations: its only "
                                     f"coefficient, {str(coef).replace('param:', '')} (in {rem_names[where[0]]}, "
                                     f"after the elimination), must not be zero", "nonzero"))
    differential = np.array([v in state_set and deriv[v] in appearing for v in variables], dtype=bool)

    # Sparse Jacobian G = dF/dy + cj dF/dy', column-major (CSC) order.
    index = {v: j for j, v in enumerate(variables)}
    entries: dict = {}
    for i, eq in enumerate(rem_eqs):
        syms = free(eq)
        for s in syms:
            if s in index:
                entries.setdefault((index[s], i), [0, 0])[0] = diff(eq, s)
            elif s in dsyms:
                entries.setdefault((index[dsyms[s]], i), [0, 0])[1] = diff(eq, s)
    keys = sorted(entries)
    outputs = [(raw.state_names[s], s) for s in states]
    for col, expr in raw.recorded.items():
        if col in {o[0] for o in outputs}:
            raise ModelError(raw.model_name, f"recorded column {col!r} clashes with a state name")
        outputs.append((col, expr.xreplace({s: eliminated[s] for s in free(expr) if s in eliminated})))
    read_by_outputs = set()
    for _, expr in outputs:
        read_by_outputs |= free(expr) & dsyms.keys()
    tested = differential | np.array([v in state_set and deriv[v] in read_by_outputs for v in variables], dtype=bool)
    y0 = np.array([raw.states.get(v, 0.0) for v in variables], dtype=float)
    fixed_given = [(j, raw.given_initial[v]) for j, v in enumerate(variables)
                   if not differential[j] and v in raw.given_initial]
    free_start = [j for j, v in enumerate(variables) if differential[j] and v in raw.defaulted]
    sources = list(raw.sources)
    return ReducedDAE(
        name=raw.model_name,
        variables=variables,
        var_names=var_names,
        equations=rem_eqs,
        eq_names=rem_names,
        differential=differential,
        tested=tested,
        derivative={s: deriv[s] for s in states},
        eliminated=eliminated,
        y0=y0,
        param_names=list(raw.parameters),
        param_symbols=[raw.parameter_symbols[n] for n in raw.parameters],
        outputs=outputs,
        jac_rows=[i for (_, i) in keys],
        jac_cols=[j for (j, _) in keys],
        jac_dy=[entries[k][0] for k in keys],
        jac_dyp=[entries[k][1] for k in keys],
        pivots=pivots,
        param_checks=checks,
        param_uses=dict(raw.param_uses),
        sources=sources,
        fixed_given=fixed_given,
        free_start=free_start,
    )


class _Eliminated(Mapping):
    """Eliminated unknown -> its expression in the remaining unknowns, newest first, composed
    when first asked for: each right-hand side refers only to unknowns eliminated after it, which
    are replaced by their own final expressions. Composing them all up front cost more than the
    rest of the reduction of a long parametric ladder, whose outputs need none of them."""

    def __init__(self, order, free):
        self._rhs = {v: rhs for v, rhs in reversed(order)}
        self._pos = {v: k for k, (v, _) in enumerate(order)}
        self._free = free
        self._done: dict = {}

    def __getitem__(self, v):
        r = self._done.get(v)
        if r is not None:
            return r
        rhs = self._rhs[v]
        # the unknowns v's expression needs, not composed yet (without recursion: chains are long)
        need, stack = {v}, [v]
        while stack:
            for w in self._free(self._rhs[stack.pop()]):
                if w in self._rhs and w not in need and w not in self._done:
                    need.add(w)
                    stack.append(w)
        for w in sorted(need, key=self._pos.__getitem__, reverse=True):  # newest first
            rhs = self._rhs[w]
            sub = {u: self._done[u] for u in self._free(rhs) if u in self._rhs}
            self._done[w] = rhs.xreplace(sub) if sub else rhs
        return self._done[v]

    def __contains__(self, v):
        return v in self._rhs

    def __iter__(self):
        return iter(self._rhs)

    def __len__(self):
        return len(self._rhs)


def require_unknowns(red: ReducedDAE) -> None:
    """Refuse a model that leaves the solver nothing to integrate: its sources fix every effort
    and flow (an Se driving an R; an Se and an Sf on one 1-junction), or it has no source and its
    signal blocks compute every value from t and the parameters (a Ramp into a Recorder). Its
    reduction is still meaningful (every unknown is an expression of t), but there is no system
    to step."""
    if red.variables:
        return
    if not red.sources:
        raise ModelError(red.name, "nothing to simulate: every value of the model follows from t and its "
                                   "parameters alone: it has no storage element (I, C), no integrating block "
                                   "(Integrator, PID) and no unknown left for the solver")
    raise ModelError(red.sources[0], f"nothing to simulate: the source(s) {', '.join(red.sources[:8])} fix every "
                                     f"effort and flow of the model, which has no storage element (I, C) and no "
                                     f"unknown left for the solver")


def _structural_report(eqs, eq_names, variables, var_names, deriv):
    """Raise a ModelError naming unmatched equations/unknowns when the system is structurally singular."""
    index = {v: j for j, v in enumerate(variables)}
    dindex = {deriv[v]: index[v] for v in deriv if v in index}
    adj = [sorted({j for s in eq.free_symbols if (j := index.get(s, dindex.get(s))) is not None}) for eq in eqs]
    if not eqs:
        return
    if len(eqs) == len(variables) and min(_maximum_matching(adj, len(variables), cheap=True)) >= 0:
        return  # a perfect matching: structurally regular
    match = _maximum_matching(adj, len(variables))  # equation -> unknown
    unmatched_eq = [eq_names[i] for i in range(len(eqs)) if match[i] < 0]
    matched = {int(j) for j in match if j >= 0}
    unmatched_var = [var_names[j] for j in range(len(variables)) if j not in matched]
    if unmatched_eq or unmatched_var:
        parts = []
        if unmatched_var:
            parts.append("unknowns no equation determines: " + ", ".join(unmatched_var[:8]))
        if unmatched_eq:
            parts.append("equations with nothing left to determine (over-constrained): " + "; ".join(unmatched_eq[:8]))
        # where: the first component involved (its file line is added by codegen.locate)
        first = unmatched_eq[0].split(":")[0] if unmatched_eq else unmatched_var[0].rpartition(".")[0]
        first = first.split(">")[0].split("#")[0]
        raise ModelError(first, "structurally singular model: " + " | ".join(parts))


def _maximum_matching(adj: list, n_cols: int, cheap: bool = False) -> list:
    """A maximum matching of rows to columns (``adj[i]``: the columns row i may take), -1 for
    an unmatched row: augmenting paths (Kuhn), iterative. ``cheap``: a row takes a free column
    of its own before any search (faster on long chains; another maximum matching, so it only
    decides whether one is perfect: the unmatched names of a singular model come from the plain
    search). Written here rather than taken from
    scipy.sparse.csgraph because importing scipy.sparse cost 0.4 s of a 3 s cold Robotino
    build, for a graph of a few hundred equations at most (the ones left after elimination)."""
    col_of = [-1] * len(adj)
    row_of = [-1] * n_cols
    seen = [-1] * n_cols  # the root whose search saw a column (no new list per root)
    for root in range(len(adj)):
        if cheap:  # a free column of the row itself first: chains of thousands match without searching
            j = next((j for j in adj[root] if row_of[j] < 0), -1)
            if j >= 0:
                col_of[root], row_of[j] = j, root
                continue
        # depth-first search for an augmenting path from root, with an explicit stack
        stack = [(root, iter(adj[root]))]
        path = []  # (row, column) edges of the current path
        found = False
        while stack and not found:
            row, cols = stack[-1]
            for j in cols:
                if seen[j] == root:
                    continue
                seen[j] = root
                path.append((row, j))
                if row_of[j] < 0:
                    found = True
                else:
                    stack.append((row_of[j], iter(adj[row_of[j]])))
                break
            else:
                stack.pop()
                if path:
                    path.pop()
        if found:
            for row, j in path:
                col_of[row] = j
                row_of[j] = row
    return col_of


__all__ = ["ReducedDAE", "reduce_dae", "require_unknowns", "T"]
