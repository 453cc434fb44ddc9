"""Discontinuities of the reduced equations as modes and switching functions (events).

A law may switch: ``Mod``/``floor``/``ceiling`` jump, a ``Piecewise`` law changes branch, ``Min``,
``Max`` and ``clip`` (the PID's saturation) change argument. Integrated as they stand, a step
that straddles such a point fails its error test again and again until it is tiny (the
Robotino's roller switches, a step input at tight tolerances: "step size underflow at t=0.5").

Here each switching construct of the residual is given a *mode*, a number that the residual
reads instead of deciding for itself, so that the residual is smooth for fixed modes:

* ``floor(x)`` -> ``K`` (an integer-valued mode); switching functions ``x - K`` and ``x - K - 1``
  (``x`` has left [K, K+1)). ``Mod(a, c) = a - c floor(a/c)``; ``ceiling(x) = -floor(-x)``.
* a relation ``a < b`` (``<=``, ``>``, ``>=``) in a ``Piecewise`` condition -> a mode ``S`` in
  {0, 1} (its truth value) and the switching function ``a - b``; ``==``/``!=`` stay as they are.
* ``Min(a, b)``/``Max(a, b)`` -> ``Piecewise((a, S), (b, True))`` with ``S`` the truth of
  ``a <= b`` (``a >= b``); more arguments are folded pairwise.
* ``clip(u, lo, hi)`` -> modes for ``u <= lo`` and ``u >= hi``, switching functions ``u - lo``,
  ``u - hi`` (an infinite limit has none).

Nested constructs are handled inside out: the switching function of an outer construct uses
the modes of the inner ones, so a ``Piecewise`` on ``Mod(th, pi/3)`` (the rolling arm) switches
at ``th - pi/3 K - pi/6 = 0`` with ``K`` frozen, not at a jump of the Mod. The solver
(``handle_events`` in ``solver/bdf_core.c``) locates sign changes of the switching functions and sets the
modes anew there; ``natural`` below gives, for every mode, the value the law itself would pick
at a point (each in terms of the modes before it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from .core import ModelError, what_went_wrong
from .laws import clip

_RELATIONS = (sp.StrictLessThan, sp.LessThan, sp.StrictGreaterThan, sp.GreaterThan)


@dataclass
class Events:
    modes: list = field(default_factory=list)  # mode symbols, inner ones first
    natural: list = field(default_factory=list)  # per mode: its value at a point (uses earlier modes)
    roots: list = field(default_factory=list)  # switching functions (use the modes)
    root_names: list = field(default_factory=list)
    mode_names: list = field(default_factory=list)  # per mode: the equation and the switch it reads

    def __bool__(self):
        return bool(self.modes)


class _Builder:
    def __init__(self, where: str = ""):
        self.ev = Events()
        self.memo: dict = {}
        self.where = where

    def _mode(self, natural, what, expr):
        sym = sp.Symbol(f"mode{len(self.ev.modes)}", real=True)
        self.ev.modes.append(sym)
        self.ev.natural.append(natural)
        self.ev.mode_names.append(self._name(what, expr))
        return sym

    def _name(self, what, expr):
        text = str(expr)
        return f"{self.where}: {what} {text if len(text) <= 100 else text[:97] + '...'}"

    def _root(self, g, what, expr):
        self.ev.roots.append(g)
        self.ev.root_names.append(self._name(what, expr))

    def floor_mode(self, x):
        key = ("floor", x)
        if key not in self.memo:
            K = self._mode(sp.floor(x), "floor of", x)
            self._root(x - K, "floor decreases:", x)
            self._root(x - K - 1, "floor increases:", x)
            self.memo[key] = K
        return self.memo[key]

    def relation_mode(self, rel, what="condition"):
        """A mode in {0, 1} for the truth of a (walked) relation, its switching function lhs - rhs."""
        key = ("rel", rel)
        if key not in self.memo:
            S = self._mode(sp.Piecewise((sp.Float(1.0), rel), (sp.Float(0.0), True)), what, rel)
            self._root(rel.lhs - rel.rhs, what, rel)
            self.memo[key] = S
        return self.memo[key]

    def condition(self, c):
        if c in (sp.true, sp.false):
            return c
        if isinstance(c, _RELATIONS):
            rel = c.func(self.walk(c.lhs), self.walk(c.rhs))
            if rel in (sp.true, sp.false):
                return rel
            return sp.StrictGreaterThan(self.relation_mode(rel), sp.Float(0.5))
        if isinstance(c, (sp.And, sp.Or, sp.Not, sp.Xor)):
            return c.func(*[self.condition(a) for a in c.args])
        return c.func(*[self.walk(a) for a in c.args]) if c.args else c

    def walk(self, e):
        if not isinstance(e, sp.Basic) or e.is_Atom:
            return e
        if e in self.memo:
            return self.memo[e]
        if isinstance(e, sp.Piecewise):
            out = sp.Piecewise(*[(self.walk(v), self.condition(c)) for v, c in e.args])
        elif isinstance(e, sp.Mod):
            a, c = self.walk(e.args[0]), self.walk(e.args[1])
            out = a - c * self.floor_mode(a / c)
        elif isinstance(e, sp.floor):
            out = self.floor_mode(self.walk(e.args[0]))
        elif isinstance(e, sp.ceiling):
            out = -self.floor_mode(-self.walk(e.args[0]))
        elif isinstance(e, (sp.Min, sp.Max)):
            args = [self.walk(a) for a in e.args]
            out = args[0]
            for b in args[1:]:
                rel = (out <= b) if isinstance(e, sp.Min) else (out >= b)
                if rel in (sp.true, sp.false):
                    out = out if rel == sp.true else b
                    continue
                S = self.relation_mode(rel, type(e).__name__)
                out = sp.Piecewise((out, sp.StrictGreaterThan(S, sp.Float(0.5))), (b, True))
        elif isinstance(e, clip):
            u, lo, hi = (self.walk(a) for a in e.args)
            pieces = []
            for bound, rel, what in ((lo, u <= lo, "clip lower limit"), (hi, u >= hi, "clip upper limit")):
                if bound.is_infinite or rel in (sp.true, sp.false):
                    continue
                pieces.append((bound, sp.StrictGreaterThan(self.relation_mode(rel, what), sp.Float(0.5))))
            out = sp.Piecewise(*pieces, (u, True)) if pieces else u
        else:
            args = [self.walk(a) for a in e.args]
            out = e if all(a is b for a, b in zip(args, e.args)) else e.func(*args)
        self.memo[e] = out
        return out


def extract_events(equations, eq_names) -> tuple[list, Events]:
    """The equations with every switching construct reading a mode, and the events."""
    b = _Builder()
    out = []
    for eq, name in zip(equations, eq_names):
        b.where = name
        if not eq.has(sp.Piecewise, sp.Mod, sp.floor, sp.ceiling, sp.Min, sp.Max, clip):
            out.append(eq)
            continue
        try:
            out.append(b.walk(eq))
        except ModelError:
            raise
        except (TypeError, ValueError, AttributeError, RecursionError) as exc:
            # sympy's refusal of a construct the law checks let through (a comparison of a
            # non-real value, a condition it cannot order): named by its equation, no traceback
            component, _, what = name.partition(": ")
            raise ModelError(component, f"{what}: its switching laws cannot be turned into events "
                                        f"({what_went_wrong(exc)}); write the law without nesting "
                                        f"its switches, or with a real value inside each") from None
    return out, b.ev


__all__ = ["Events", "extract_events"]
