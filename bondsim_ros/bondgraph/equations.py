"""From a hierarchical bond graph to the raw implicit DAE (Damic & Cohodar Husic, section 3.7).

Passes over the model tree, as BondSim does: check every connection, resolve vector ports into
scalar bonds (a port's dimension is the number of bonds joined to it inside), trace every
signal input to the output that drives it, then collect each elementary component's
constitutive relations as implicit equations ``F(t, y, y') = 0``. Every bond contributes an
effort and a flow unknown; nothing is made causal.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import sympy as sp

from .core import Component, ControlPort, Model, ModelError, PowerPort, at, float_or_inf, number_shown
from .elements import Element, Junction, Se, Sf, parse_expression

T = sp.Symbol("t", real=True)


def derivative_symbol(sym: sp.Symbol) -> sp.Symbol:
    return sp.Symbol(f"d:{sym.name}", real=True)


@dataclass
class RawDAE:
    """Equations before elimination. ``states`` are the storage variables with initial values."""

    model_name: str
    equations: list  # sympy expressions, each == 0
    eq_names: list  # "component.path: relation"
    variables: list  # sympy symbols (bond efforts/flows, states, signals)
    states: dict  # symbol -> initial value
    state_names: dict  # symbol -> model name (e.g. "mass.p")
    derivative_of: dict  # derivative symbol -> state symbol
    parameters: dict  # name -> value
    parameter_symbols: dict  # name -> symbol
    recorded: dict  # column name -> expression
    bond_names: dict = field(default_factory=dict)  # symbol -> name
    # (expression in parameters, description, "positive" | "nonnegative" | "nonzero"): the sign
    # an element's law needs of a run-time parameter value (an inertia given as a parameter)
    param_checks: list = field(default_factory=list)
    param_uses: dict = field(default_factory=dict)  # parameter name -> ["r (resistance)", ...]
    sources: list = field(default_factory=list)  # paths of the Se and Sf elements
    # state symbol -> (what the model file says: "c: q0 = 5", that value in the state's units):
    # the initial values given explicitly, which must hold where the constraints fix the state
    given_initial: dict = field(default_factory=dict)
    # the I and C states given no initial value (p0, f0, q0): a momentum or displacement the
    # constraints may fix, whose default 0 the consistent start may move (reduce's free_start)
    defaulted: set = field(default_factory=set)


@dataclass
class _Terminal:
    port: PowerPort
    side: str  # "el" (elementary port), "inner" or "outer" (component port)
    index: int

    def key(self):
        return (id(self.port), self.side, self.index)


class _Context:
    """What an element sees while writing its relations (see elements.Element.equations)."""

    def __init__(self, model: Model, bond_of, signal_source):
        self.model = model
        self.t = T
        self._bond_of = bond_of
        self._signal_source = signal_source
        self.equations: list = []
        self.eq_names: list = []
        self.states: dict = {}
        self.state_names: dict = {}
        self.derivative_of: dict = {}
        self.signal_vars: dict = {}
        self.recorded: dict = {}
        self.param_symbols = {name: sp.Symbol(f"param:{name}", real=True) for name in model.parameters}
        self.param_checks: list = []
        self.param_uses: dict = defaultdict(list)
        self.given_initial: dict = {}
        self.defaulted: set = set()

    # port variables --------------------------------------------------------------------
    def e(self, port: PowerPort):
        return self._bond_of[id(port)][0]

    def f(self, port: PowerPort):
        return self._bond_of[id(port)][1]

    def signal(self, port: ControlPort):
        src = self._signal_source[id(port)]
        return self.output_symbol(src)

    def output_symbol(self, port: ControlPort):
        key = id(port)
        if key not in self.signal_vars:
            self.signal_vars[key] = sp.Symbol(f"{port.path}", real=True)
        return self.signal_vars[key]

    def output(self, port: ControlPort, expr):
        self.equation(port.owner, self.output_symbol(port) - expr, f"signal {port.name}")

    def state(self, element: Element, local: str, initial, given: str | None = None, defaulted: bool = False):
        """The state ``local`` of ``element`` starting at ``initial``; ``given``: the element's
        key and value as the model gives them ("q0 = 5"), when given explicitly; ``defaulted``:
        an energy store's state whose 0 nobody gave (RawDAE.defaulted)."""
        name = f"{element.path}.{local}"
        sym = sp.Symbol(name, real=True)
        dsym = derivative_symbol(sym)
        try:
            if isinstance(initial, bool):  # (YAML's true, false, on, off)
                raise TypeError
            value = float_or_inf(initial)
        except (TypeError, ValueError):
            raise ModelError(element.path, f"initial value of {local} must be a number, got {initial!r}") from None
        if not math.isfinite(value):  # else the run fails at t = 0 naming whichever law reads it first
            raise ModelError(element.path, f"initial value of {local} must be a finite number, "
                                           f"got {number_shown(initial) if isinstance(initial, int) else value}")
        initial = value
        self.states[sym] = initial
        self.state_names[sym] = name
        if given is not None:
            self.given_initial[sym] = f"{element.path}: {given}"
        elif defaulted:
            self.defaulted.add(sym)
        self.derivative_of[dsym] = sym
        return sym, dsym

    def equation(self, element: Component, expr, what: str):
        self.equations.append(sp.sympify(expr))
        self.eq_names.append(f"{element.path}: {what}")

    def record(self, element, column: str, expr):
        if column in self.recorded:
            raise ModelError(element.path, f"column {column!r} is already recorded elsewhere")
        self.recorded[column] = expr

    def used(self, element: Element, expr, what: str) -> None:
        """Remember which element laws a parameter enters (named in run-time refusals)."""
        for name, sym in self.param_symbols.items():
            if sym in expr.free_symbols:
                entry = f"{element.path} ({what})"
                if entry not in self.param_uses[name]:
                    self.param_uses[name].append(entry)

    def require(self, element: Element, expr, kind: str, what: str) -> None:
        """``expr`` (an element's coefficient) must be positive / non-negative: checked now when
        it is a number, before every run (and each set_param) when it is made of parameters."""
        expr = sp.sympify(expr)
        free = expr.free_symbols
        word = "positive" if kind == "positive" else "non-negative"
        if not free:
            value = float(expr)
            if not (value > 0 if kind == "positive" else value >= 0):
                raise ModelError(element.law_where(what), f"{what} must be {word}, got {value:g}")
        elif free <= set(self.param_symbols.values()):
            self.param_checks.append((expr, f"{element.path} ({what} = {str(expr).replace('param:', '')}) "
                                            f"must be {word}", kind))

    def names_for(self, element: Element) -> dict:
        names = {"t": T}
        for pname, sym in self.param_symbols.items():
            names[pname] = sym
        # the parameters of the model-file definitions the element sits in, outermost first, each
        # value a law over the names around its instance (yamlmodel: `scope`)
        scoped = set()
        for where, layer in zip(getattr(element, "scope_where", ()), getattr(element, "scope", ())):
            values = _layer_values(layer, names, where)
            names.update(values)
            scoped.update(values)
        for port in element.ports.values():
            if isinstance(port, ControlPort) and port.direction == "in":
                if port.name in self.param_symbols:
                    raise ModelError(port.path, f"input name {port.name!r} clashes with a model parameter")
                if port.name in scoped:
                    raise ModelError(port.path, f"input name {port.name!r} clashes with a parameter of the "
                                                f"definition it is in")
                names[port.name] = self.signal(port)
        return names


def _layer_values(layer, names: dict, where) -> dict:
    """The values of one definition instance's parameters (yamlmodel: ``(name, value, default)``
    in the definition's order; ``where``: the instance's place and each default's). An
    instance's own value is a law over ``names``, the names around the instance; a default may
    also read the definition's other parameters, in whatever order they are written
    (``c2: "2*c"``), so the defaults are parsed with a placeholder for each and resolved in the
    order they refer to each other."""
    instance, lines = where
    out = {pname: parse_expression(value, dict(names), f"{instance} ({pname})")
           for pname, value, default in layer if not default}
    holders = {pname: sp.Dummy(pname) for pname, _, default in layer if default}
    pending = {pname: parse_expression(value, {**names, **out, **holders}, f"{lines[pname]} ({pname})")
               for pname, value, default in layer if default}
    while pending:
        waiting = {holders[q] for q in pending}
        ready = [p for p, expr in pending.items() if not expr.free_symbols & waiting]
        if not ready:
            for pname, expr in pending.items():
                if holders[pname] in expr.free_symbols:
                    raise ModelError(f"{lines[pname]} ({pname})", "its default refers to itself")
            first = next(iter(pending))
            raise ModelError(lines[first], f"the defaults of parameters {', '.join(pending)} refer to each "
                                           f"other in a loop")
        for pname in ready:
            out[pname] = pending.pop(pname).xreplace({holders[q]: out[q] for q in holders if q in out})
    return out


# --------------------------------------------------------------------------------------
def _bond_dims(model: Model):
    """Dimension of every component power port (number of scalar bonds joined inside)."""
    dims: dict[int, int] = {}
    inner: dict[int, list] = defaultdict(list)  # port -> [(bond, end)]
    outer: dict[int, list] = defaultdict(list)
    comps = list(model.walk())
    for comp in comps:
        for bond in comp.bonds:
            for end, port in (("source", bond.source), ("target", bond.target)):
                other = bond.target if end == "source" else bond.source
                if port.owner is comp:
                    if other.owner is comp:
                        raise ModelError(at(bond, comp.path),
                                         f"a bond joins two document ports ({port.name}, {other.name}); "
                                         f"put a junction between them")
                    inner[id(port)].append((bond, end))
                else:
                    outer[id(port)].append((bond, end))

    def dim(port: PowerPort, stack=()):
        if port.owner.elementary:
            return 1
        key = id(port)
        if key in dims:
            return dims[key]
        if key in stack:
            raise ModelError(port.path, "cyclic port dimension")
        bonds = inner.get(key, [])
        if not bonds:
            raise ModelError(port.path, "power port is not connected inside its component")
        total = 0
        for bond, end in bonds:
            other = bond.target if end == "source" else bond.source
            total += dim(other, stack + (key,))
        dims[key] = total
        return total

    def bond_dim(bond):
        doc = bond.document
        ends = [p for p in (bond.source, bond.target) if p.owner is not doc]
        ds = [dim(p) for p in ends]
        if len(ds) == 2 and ds[0] != ds[1]:
            raise ModelError(at(bond, doc.path), f"dimension mismatch: bond {bond.source.path} -> {bond.target.path} "
                                                 f"joins ports of dimension {ds[0]} and {ds[1]}")
        return ds[0]

    return comps, inner, outer, dim, bond_dim


def _resolve_bonds(model: Model):
    comps, inner, outer, dim, bond_dim = _bond_dims(model)
    # Slots: each component port has `dim` inner and outer slots filled in bond order.
    segments: dict = {}  # terminal key -> (other terminal, "source"/"target" role of this terminal)
    terminals: dict = {}
    slot_cursor: dict = defaultdict(int)

    def terminal(port, doc, d_index):
        if port.owner.elementary:
            t = _Terminal(port, "el", 0)
        else:
            side = "inner" if port.owner is doc else "outer"
            t = _Terminal(port, side, d_index)
        terminals[t.key()] = t
        return t

    for comp in comps:
        for bond in comp.bonds:
            d = bond_dim(bond)
            ends = []
            for port in (bond.source, bond.target):
                side = "inner" if port.owner is comp else "outer"
                key = (id(port), side)
                start = slot_cursor[key]
                slot_cursor[key] += d if not port.owner.elementary else 1
                ends.append((port, start))
            if d > 1 and any(p.owner.elementary for p, _ in ends):
                raise ModelError(at(bond, comp.path), f"dimension mismatch: bond {bond.source.path} -> "
                                                      f"{bond.target.path} joins an elementary port (dimension 1) "
                                                      f"to one of dimension {d}")
            for i in range(d):
                a = terminal(ends[0][0], comp, ends[0][1] + i)
                b = terminal(ends[1][0], comp, ends[1][1] + i)
                for t_, other, role in ((a, b, "source"), (b, a, "target")):
                    if t_.key() in segments:
                        raise ModelError(t_.port.path, "port joined by more than one bond" if t_.side == "el"
                                         else f"slot {t_.index} used twice")
                    segments[t_.key()] = (other, role)

    # every component port: as many scalar bonds outside as inside
    for comp in comps:
        if comp.elementary or comp is model:
            continue
        for port in comp.ports.values():
            if not isinstance(port, PowerPort):
                continue
            n_in = slot_cursor[(id(port), "inner")]
            n_out = slot_cursor[(id(port), "outer")]
            if n_out == 0:
                raise ModelError(port.path, "power port is not connected (dangling port)")
            if n_in != n_out:
                raise ModelError(port.path, f"dimension mismatch: {n_in} bond(s) inside, {n_out} outside")
    for port in model.ports.values():
        if isinstance(port, PowerPort):
            raise ModelError(port.path, "the root model cannot have power ports")

    def cross(t: _Terminal) -> _Terminal:
        side = "outer" if t.side == "inner" else "inner"
        key = (id(t.port), side, t.index)
        if key not in terminals:
            raise ModelError(t.port.path, f"slot {t.index} has no bond on the {side} side")
        return terminals[key]

    scalar_bonds = []
    seen = set()
    for comp in comps:
        if not comp.elementary:
            continue
        for port in comp.ports.values():
            if not isinstance(port, PowerPort):
                continue
            key = (id(port), "el", 0)
            if key not in segments:
                raise ModelError(port.path, "power port is not bonded (dangling port)")
            if key in seen:
                continue
            start = terminals[key]
            other, role = segments[key]
            guard = 0
            while other.side != "el":
                other = cross(other)
                nxt, _ = segments.get(other.key(), (None, None))
                if nxt is None:
                    raise ModelError(other.port.path, "bond chain ends at an unconnected port")
                other = nxt
                guard += 1
                if guard > 10000:
                    raise ModelError(port.path, "bond chain does not terminate")
            seen.add(key)
            seen.add(other.key())
            src, dst = (start.port, other.port) if role == "source" else (other.port, start.port)
            scalar_bonds.append((src, dst))
    return comps, scalar_bonds


def _bond_name(src: PowerPort, dst: PowerPort, used: set) -> str:
    def label(port):
        own = port.owner
        nports = sum(isinstance(p, PowerPort) for p in own.ports.values())
        return own.path if nports == 1 else f"{own.path}.{port.name}"

    # name a bond after the one-port it feeds (mass.e, mass.f), else after a two-port's port
    non_junction = sorted((p for p in (dst, src) if not isinstance(p.owner, Junction)),
                          key=lambda p: sum(isinstance(q, PowerPort) for q in p.owner.ports.values()))
    base = label(non_junction[0]) if non_junction else f"{label(src)}>{label(dst)}"
    name, k = base, 2
    while name in used:
        name = f"{base}#{k}"
        k += 1
    used.add(name)
    return name


def _resolve_signals(comps, model):
    """Map every elementary input port to the elementary output port that drives it."""
    incoming: dict[int, list] = defaultdict(list)  # target port -> [connection]
    for comp in comps:
        for conn in comp.connections:
            incoming[id(conn.target)].append(conn)
    for key, conns in incoming.items():
        if len(conns) > 1:
            raise ModelError(at(conns[1], conns[0].target.path), f"input driven by {len(conns)} signal lines (use one)")

    source: dict[int, ControlPort] = {}
    for comp in comps:
        if not comp.elementary:
            continue
        for port in comp.ports.values():
            if not (isinstance(port, ControlPort) and port.direction == "in"):
                continue
            cur, hops = port, 0
            while True:
                conns = incoming.get(id(cur))
                if not conns:
                    raise ModelError(cur.path, "control input is not connected")
                src = conns[0].source
                if src.owner.elementary:
                    break
                # a component port: continue outside (document input) or inside (child output)
                cur = src
                hops += 1
                if hops > 10000:
                    raise ModelError(port.path, "signal chain does not terminate")
            source[id(port)] = src
    return source


def build_dae(model: Model) -> RawDAE:
    """Check the model and collect its implicit equations (no elimination yet)."""
    if not isinstance(model, Model):
        raise ModelError("", f"expected a Model, got {type(model).__name__}")
    comps, scalar_bonds = _resolve_bonds(model)
    used: set = set()
    bond_of: dict[int, tuple] = {}
    bond_names = {}
    variables = []
    for src, dst in scalar_bonds:
        name = _bond_name(src, dst, used)
        e, f = sp.Symbol(f"{name}.e", real=True), sp.Symbol(f"{name}.f", real=True)
        bond_of[id(src)] = bond_of[id(dst)] = (e, f)
        bond_names[e], bond_names[f] = f"{name}.e", f"{name}.f"
        variables += [e, f]
    signal_source = _resolve_signals(comps, model)
    ctx = _Context(model, bond_of, signal_source)
    for comp in comps:
        if comp.elementary:
            comp.equations(ctx)
    variables += list(ctx.states)
    variables += list(ctx.signal_vars.values())
    if not ctx.equations:
        raise ModelError(model.path, "the model is empty: no elementary components")
    return RawDAE(
        model_name=model.name,
        equations=ctx.equations,
        eq_names=ctx.eq_names,
        variables=variables,
        states=ctx.states,
        state_names=ctx.state_names,
        derivative_of=ctx.derivative_of,
        parameters=dict(model.parameters),
        parameter_symbols=ctx.param_symbols,
        recorded=ctx.recorded,
        bond_names=bond_names,
        param_checks=ctx.param_checks,
        param_uses=dict(ctx.param_uses),
        sources=[c.path for c in comps if isinstance(c, (Se, Sf))],
        given_initial=ctx.given_initial,
        defaulted=ctx.defaulted,
    )
