"""The Jacobian of equations whose switching laws read modes (bondgraph/events.py).

reduce.py forms the sparse Jacobian dF/dy, dF/dy' of the reduced equations. Once events.py has
given each switching construct (Piecewise, Min/Max, clip, floor) a mode, the rows whose
equations changed are differentiated again, a mode being a constant there:
:func:`moded_jacobian` keeps reduce.py's sparsity pattern and returns the new entries;
:func:`diff_moded` differentiates through a Piecewise branch by branch.
"""
from __future__ import annotations


def moded_jacobian(red, equations):
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
            jac_dy[k] = diff_moded(equations[i], v, split, diff)
            dv = red.derivative.get(v)
            jac_dyp[k] = diff_moded(equations[i], dv, split, diff) if dv is not None and dv in dsyms else 0
    return jac_dy, jac_dyp


def diff_moded(expr, var, split: dict, diff=None):
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
        branches = [(diff_moded(v, var, split, diff), c) for v, c in pw.args]
        if all(b == 0 for b, _ in branches):
            continue
        coeff = diff(flat, d)
        if coeff != 0:
            total += coeff * sp.Piecewise(*branches, evaluate=False)
    return total.xreplace(back)


__all__ = ["moded_jacobian", "diff_moded"]
