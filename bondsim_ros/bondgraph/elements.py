"""The nine elementary bond-graph components (Damic & Cohodar Husic, Table 1).

Each turns into implicit equations over its port variables; nothing here decides causality.
Sign conventions follow the paper: power is positive in the direction of the half arrow; at a
junction an effort (or flow) counts + when its bond points into the junction.

    I   p' = e,  f = Phi(p)          (linear: f = p / I)
    C   q' = f,  e = Phi(q)          (linear: e = q / C)
    R   e = Phi(f) or f = Phi(e)     (linear: e = R f)
    Se  e = E(t, inputs)             Sf  f = F(t, inputs)
    TF  f1 = k f2, e2 = k e1         (paper: P1 = e1 f1 = e1 k f2 = e2 f2)
    GY  e1 = r f2, e2 = r f1
    effort junction (1): flows equal, signed efforts sum to zero
    flow junction (0):   efforts equal, signed flows sum to zero

Parameters may be numbers or expressions (strings or sympy) of ``t``, the element's control
inputs (declared with ``inputs=[...]``, each becoming an input port), model parameters and the
element's own port variables, which gives the modulated (MTF, MGY, MSe...) and nonlinear variants.
"""
from __future__ import annotations

import math

from .core import (RESERVED_NAMES, RESERVED_WHY, Component, ControlPort, ModelError, PowerPort, float_or_inf,
                   number_shown)

# sympy and the law parser load when equations are built, not when a model's structure is:
# a cached model runs without them


def __getattr__(name):
    if name == "clip":
        from .laws import clip

        return clip
    raise AttributeError(name)


def parse_expression(value, names: dict, where: str):
    """Turn a number, sympy expression or law text into a sympy expression over ``names``.

    Text goes through the whitelist parser of ``laws`` (never ``eval``): a shared model file
    must not be able to run code."""
    import sympy as sp

    from .laws import LawError, parse_law

    if isinstance(value, sp.Basic):
        return value
    if getattr(value, "dtype", None) is not None and getattr(value, "ndim", None) == 0 and value.dtype.kind in "iuf":
        value = value.item()  # a numpy number (np.int64(3), np.float32(1.5)) as the Python one
    if isinstance(value, bool):
        raise ModelError(where, f"expected a number or expression, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(float_or_inf(value)):
            raise ModelError(where, f"value must be finite, got {number_shown(value)}")
        return sp.Float(value) if isinstance(value, float) else sp.Integer(value)
    if not isinstance(value, str):
        raise ModelError(where, f"expected a number or expression, got {type(value).__name__}")
    try:
        return parse_law(value, names)
    except LawError as exc:
        raise ModelError(where, f"law {_short(value)!r} refused: {exc}") from None


def _shown(value) -> str:
    """An initial value as a message quotes it (a number compactly, anything else as given)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = float_or_inf(value)  # (format's g of a whole number beyond a double raises OverflowError)
        return f"{value:g}"
    return repr(value)


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


class Element(Component):
    """Base of elementary components: no document, contributes equations."""

    elementary = True
    symbol = "?"
    reserved_inputs = RESERVED_NAMES  # input names are law names

    def __init__(self, name: str, inputs=(), **kw):
        super().__init__(name, **kw)
        if isinstance(inputs, str) or not isinstance(inputs, (list, tuple)):
            raise ModelError(self.path, f"inputs must be a list of names, got {type(inputs).__name__}")
        for inp in inputs:
            if inp in self.reserved_inputs:
                raise ModelError(self.path, f"input name {inp!r} is reserved in laws {RESERVED_WHY}")
            self.add_control_port(inp, "in")

    def add(self, *components):
        raise ModelError(self.path, "an elementary component has no document")

    # the keyword (and YAML key) a law's description comes from, where the two differ
    _LAW_KEYS = {"gain": "k", "function": "expr"}

    def law_where(self, what: str) -> str:
        """``path (what)``, after the model-file line of that law (or of the element)."""
        locs = getattr(self, "law_locations", None) or {}
        word = what.split()[0]
        loc = locs.get(self._LAW_KEYS.get(word, word)) or self.source_location
        return f"{loc}: {self.path} ({what})" if loc else f"{self.path} ({what})"

    def law(self, value, ctx, local: dict | None = None, what: str = "law", forms: dict | None = None):
        """``value`` parsed over the element's inputs, the parameters and ``local`` (its own
        variables). ``forms``: for a linear coefficient, the element's variables and the key that
        takes a law in each (R's ``resistance: b*f`` -> a law in f is ``effort:``), said beside an
        unknown-name refusal."""
        names = ctx.names_for(self)
        if local:
            clash = sorted(set(local) & set(names))
            if clash:
                raise ModelError(self.law_where(what), f"{clash[0]!r} (an input or parameter) has the name of the "
                                                       f"law's own variable")
            names.update(local)
        try:
            expr = parse_expression(value, names, self.law_where(what))
        except ModelError as exc:
            for var, key in (forms or {}).items():
                if f"unknown name(s) {var} (" in exc.message:
                    raise ModelError(exc.where, exc.message + f"; {var} is the element's own variable: a law in "
                                                              f"{var} is given as {key}: instead of {what}:") from None
            raise
        ctx.used(self, expr, what)
        from .laws import clip

        for c in expr.atoms(clip):  # bounds of parameters: lo <= hi before each run, as numbers are now
            lo, hi = c.args[1:]
            if lo.free_symbols or hi.free_symbols:
                ctx.require(self, hi - lo, "nonnegative", f"{what}: clip's upper bound minus its lower")
        return expr

    def require_slope(self, ctx, law, var, kind, what):
        """A law affine in its own variable with a parameter slope (``effort: "k*q"``) needs
        that slope's sign as the linear element needs its value's."""
        import sympy as sp

        # sympy 1.14 differentiating Mod(a, c) recursed until RecursionError (a traceback from
        # `simulate` for an R law with mod()); almost everywhere its slope is a's
        law = law.replace(lambda e: isinstance(e, sp.Mod), lambda e: e.args[0])
        slope = sp.diff(law, var)
        if sp.diff(slope, var) == 0:
            ctx.require(self, slope, kind, f"{what} slope d/d{var.name.rsplit('.', 1)[-1]}")

    def equations(self, ctx) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class OnePort(Element):
    direction = "in"

    def __init__(self, name: str, inputs=(), direction: str | None = None):
        super().__init__(name, inputs=inputs)
        self.add_power_port("p", direction or self.direction)


class I(OnePort):
    """Inertia: p' = e, f = p/I (or a nonlinear ``flow`` law of p). Initial p0 or flow f0."""

    symbol = "I"

    def __init__(self, name, inertia=None, *, flow=None, p0=None, f0=None, inputs=()):
        super().__init__(name, inputs)
        if (inertia is None) == (flow is None):
            raise ModelError(self.path, "give exactly one of inertia= (linear) or flow= (law in p)")
        if isinstance(inertia, (int, float)) and not inertia > 0:
            raise ModelError(self.path, f"inertia must be positive, got {inertia}")
        if p0 is not None and f0 is not None:
            raise ModelError(self.path, "give p0 or f0, not both")
        self.inertia, self.flow_law, self.p0, self.f0 = inertia, flow, p0, f0

    def equations(self, ctx):
        e, f = ctx.e(self.p), ctx.f(self.p)
        p0 = self.p0 if self.p0 is not None else 0.0
        given = None if self.p0 is None else f"p0 = {_shown(self.p0)}"
        if self.f0 is not None:
            if self.inertia is None or not isinstance(self.inertia, (int, float)):
                raise ModelError(self.path, "f0 needs a constant linear inertia; give p0 instead")
            try:  # a number first: inertia 3 times the text "2" was "222"
                f0 = None if isinstance(self.f0, bool) else float_or_inf(self.f0)
            except (TypeError, ValueError):
                f0 = None
            if f0 is None:
                raise ModelError(self.path, f"initial flow f0 must be a number, got {self.f0!r}")
            p0 = float_or_inf(self.inertia) * f0
            given = f"f0 = {f0:g} (p = {p0:g})"
        p, dp = ctx.state(self, "p", p0, given, defaulted=given is None)
        ctx.equation(self, dp - e, "momentum law p' = e")
        if self.inertia is not None:
            inertia = self.law(self.inertia, ctx, what="inertia", forms={"p": "flow"})
            ctx.require(self, inertia, "positive", "inertia")
            ctx.equation(self, f - p / inertia, "f = p/I")
        else:
            law = self.law(self.flow_law, ctx, {"p": p}, "flow law")
            self.require_slope(ctx, law, p, "positive", "flow law")
            ctx.equation(self, f - law, "f = Phi(p)")


class C(OnePort):
    """Capacitance (compliance): q' = f, e = q/C (or a nonlinear ``effort`` law of q)."""

    symbol = "C"

    def __init__(self, name, capacitance=None, *, effort=None, q0=None, inputs=()):
        super().__init__(name, inputs)
        if (capacitance is None) == (effort is None):
            raise ModelError(self.path, "give exactly one of capacitance= (linear) or effort= (law in q)")
        if isinstance(capacitance, (int, float)) and not capacitance > 0:
            raise ModelError(self.path, f"capacitance must be positive, got {capacitance}")
        self.capacitance, self.effort_law, self.q0 = capacitance, effort, q0

    def equations(self, ctx):
        e, f = ctx.e(self.p), ctx.f(self.p)
        given = None if self.q0 is None else f"q0 = {_shown(self.q0)}"
        q, dq = ctx.state(self, "q", 0.0 if self.q0 is None else self.q0, given, defaulted=given is None)
        ctx.equation(self, dq - f, "displacement law q' = f")
        if self.capacitance is not None:
            capacitance = self.law(self.capacitance, ctx, what="capacitance", forms={"q": "effort"})
            ctx.require(self, capacitance, "positive", "capacitance")
            ctx.equation(self, e - q / capacitance, "e = q/C")
        else:
            law = self.law(self.effort_law, ctx, {"q": q}, "effort law")
            self.require_slope(ctx, law, q, "positive", "effort law")
            ctx.equation(self, e - law, "e = Phi(q)")


class R(OnePort):
    """Resistance: e = R f, or a nonlinear ``effort`` law of f, or a ``flow`` law of e."""

    symbol = "R"

    def __init__(self, name, resistance=None, *, effort=None, flow=None, inputs=()):
        super().__init__(name, inputs)
        given = sum(x is not None for x in (resistance, effort, flow))
        if given != 1:
            raise ModelError(self.path, "give exactly one of resistance=, effort= (law in f) or flow= (law in e)")
        if isinstance(resistance, (int, float)) and resistance < 0:
            raise ModelError(self.path, f"resistance must not be negative (it would create energy), got {resistance}")
        self.resistance, self.effort_law, self.flow_law = resistance, effort, flow

    def equations(self, ctx):
        e, f = ctx.e(self.p), ctx.f(self.p)
        if self.resistance is not None:
            resistance = self.law(self.resistance, ctx, what="resistance", forms={"f": "effort", "e": "flow"})
            ctx.require(self, resistance, "nonnegative", "resistance")
            ctx.equation(self, e - resistance * f, "e = R f")
        elif self.effort_law is not None:
            law = self.law(self.effort_law, ctx, {"f": f}, "effort law")
            self.require_slope(ctx, law, f, "nonnegative", "effort law")
            ctx.equation(self, e - law, "e = Phi(f)")
        else:
            law = self.law(self.flow_law, ctx, {"e": e}, "flow law")
            self.require_slope(ctx, law, e, "nonnegative", "flow law")
            ctx.equation(self, f - law, "f = Phi(e)")


class Se(OnePort):
    """Source of effort e = E(t, inputs). Power leaves it."""

    symbol = "Se"
    direction = "out"

    def __init__(self, name, effort=0.0, inputs=(), direction=None):
        super().__init__(name, inputs, direction)
        self.effort = effort

    def equations(self, ctx):
        ctx.equation(self, ctx.e(self.p) - self.law(self.effort, ctx, what="effort"), "e = E(t)")


class Sf(OnePort):
    """Source of flow f = F(t, inputs). Sf(0) is the zero-velocity constraint of mechanics."""

    symbol = "Sf"
    direction = "out"

    def __init__(self, name, flow=0.0, inputs=(), direction=None):
        super().__init__(name, inputs, direction)
        self.flow = flow

    def equations(self, ctx):
        ctx.equation(self, ctx.f(self.p) - self.law(self.flow, ctx, what="flow"), "f = F(t)")


class TwoPort(Element):
    def __init__(self, name, inputs=()):
        super().__init__(name, inputs=inputs)
        self.add_power_port("p1", "in")
        self.add_power_port("p2", "out")


class TF(TwoPort):
    """Transformer, f1 = k f2, e2 = k e1; modulated when ``ratio`` uses inputs, e.g. cos(phi)."""

    symbol = "TF"

    def __init__(self, name, ratio, inputs=()):
        super().__init__(name, inputs)
        self.ratio = ratio

    def equations(self, ctx):
        k = self.law(self.ratio, ctx, what="ratio")
        ctx.equation(self, ctx.f(self.p1) - k * ctx.f(self.p2), "f1 = k f2")
        ctx.equation(self, ctx.e(self.p2) - k * ctx.e(self.p1), "e2 = k e1")


class GY(TwoPort):
    """Gyrator, e1 = r f2, e2 = r f1 (a DC motor's torque/back-EMF constant)."""

    symbol = "GY"

    def __init__(self, name, ratio, inputs=()):
        super().__init__(name, inputs)
        self.ratio = ratio

    def equations(self, ctx):
        r = self.law(self.ratio, ctx, what="ratio")
        ctx.equation(self, ctx.e(self.p1) - r * ctx.f(self.p2), "e1 = r f2")
        ctx.equation(self, ctx.e(self.p2) - r * ctx.f(self.p1), "e2 = r f1")


class Junction(Element):
    """Common base of the two junctions: ports grow as bonds are drawn to them."""

    def __init__(self, name, output: bool = False):
        super().__init__(name)
        self._count = 0
        if output:
            self.add_control_port("out", "out")

    def bond_port(self, role: str) -> PowerPort:
        self._count += 1
        # power enters the junction through a port that is a bond's target
        return self.add_power_port(f"b{self._count}", "in" if role == "target" else "out")

    def power_ports(self) -> list[PowerPort]:
        return [p for p in self.ports.values() if isinstance(p, PowerPort)]

    def signs(self, ctx):
        ports = self.power_ports()
        if len(ports) < 2:
            raise ModelError(self.path, f"a junction needs at least two bonds, has {len(ports)}")
        return ports, [1 if p.direction == "in" else -1 for p in ports]


class EffortJunction(Junction):
    """1-junction (effort junction, a flow node): equal flows, signed efforts sum to zero."""

    symbol = "1"

    def equations(self, ctx):
        ports, signs = self.signs(ctx)
        import sympy as sp

        ctx.equation(self, sp.Add(*[s * ctx.e(p) for s, p in zip(signs, ports)]), "sum of efforts = 0")
        for p in ports[1:]:
            ctx.equation(self, ctx.f(p) - ctx.f(ports[0]), "equal flows")
        if "out" in self.ports:
            ctx.output(self.ports["out"], ctx.f(ports[0]))


class FlowJunction(Junction):
    """0-junction (flow junction, an effort node): equal efforts, signed flows sum to zero."""

    symbol = "0"

    def equations(self, ctx):
        ports, signs = self.signs(ctx)
        import sympy as sp

        ctx.equation(self, sp.Add(*[s * ctx.f(p) for s, p in zip(signs, ports)]), "sum of flows = 0")
        for p in ports[1:]:
            ctx.equation(self, ctx.e(p) - ctx.e(ports[0]), "equal efforts")
        if "out" in self.ports:
            ctx.output(self.ports["out"], ctx.e(ports[0]))


ELEMENTS = {
    "I": I, "C": C, "R": R, "Se": Se, "Sf": Sf, "TF": TF, "GY": GY,
    "EffortJunction": EffortJunction, "FlowJunction": FlowJunction,
    "1": EffortJunction, "0": FlowJunction,
}

__all__ = ["I", "C", "R", "Se", "Sf", "TF", "GY", "EffortJunction", "FlowJunction", "Junction",
           "Element", "ELEMENTS", "parse_expression", "ControlPort"]
