"""Components, ports and bonds: the acausal bond-graph language (Damic & Cohodar Husic, section 3.1).

A model is a tree of components. Every component has a *document* holding inner components,
the bonds between their power ports and the signal connections between their control ports
(BondSim's word model and its document). Elementary components (I, C, R, TF, GY, Se, Sf and
the two junctions, in ``elements``) and signal blocks (``signals``) have no document; they
contribute constitutive relations instead.

No causality is assigned anywhere: every bond carries an unknown effort and an unknown flow,
and the constitutive relations become implicit equations (``equations.build_dae``).

Power ports have a direction, the half arrow of the diagram: ``"in"`` (power into the
component) or ``"out"``. A bond ``doc.bond(a, b)`` carries power from ``a`` to ``b``. A
component port's dimension is the number of scalar bonds joined to it inside its document,
so efforts and flows travel as vectors through the hierarchy, as in BondSim.
"""
from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # (sympy is imported where a law is built: a cached model runs without it)
    import sympy as sp


NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Components nest at most this deep below the model: the engine's tree walks (a component's
# path, the port dimensions) recurse once per level
MAX_NESTING = 100


class ModelError(ValueError):
    """A modelling mistake, reported with the component path and port it concerns."""

    def __init__(self, where: str, message: str):
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}" if where else message)

    def __reduce__(self):  # (a worker process's error, sent back: its own fields, not str(self))
        return type(self), (self.where, self.message)

    @property
    def located(self) -> bool:
        """True when ``where`` already names a file and line (``model.yaml:12: ...``)."""
        return bool(_LOCATION.search(self.where or ""))


_LOCATION = re.compile(r":\d+(: |$)")


def what_went_wrong(exc: BaseException, limit: int | None = 200) -> str:
    """``TypeName: first line of its message`` of a library's exception (sympy's, the C
    printer's), to say inside a ModelError without a traceback."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:limit]}" if lines else type(exc).__name__


def at(obj, where: str) -> str:
    """``where`` prefixed with the model-file position of ``obj`` (component, bond, signal line)
    when it was read from a file: ``model.yaml:12: loose.p``."""
    loc = getattr(obj, "source_location", None)
    return f"{loc}: {where}" if loc and where else (loc or where)


def locate(model, exc: "ModelError") -> "ModelError":
    """``exc`` with the file and line of the component it names, when the model was read from
    a file and ``exc`` does not carry a position yet. ``where`` is a component path, a port
    path (``loose.p``) or a law (``r (effort law)``): the longest component path it starts
    with is the one meant."""
    if exc.located:
        return exc
    comps = {c.path: c for c in model.walk()}
    head = (exc.where or "").split(" ")[0]
    while head:
        comp = comps.get(head)
        if comp is not None and getattr(comp, "source_location", None):
            return ModelError(at(comp, exc.where), exc.message)
        head = head.rpartition(".")[0]
    loc = getattr(model, "source_location", None)
    return ModelError(at(model, exc.where or model.name), exc.message) if loc else exc


# The functions and constants a law may use (laws.py maps them to sympy; docs/engine.md lists
# them). Named here, not taken from laws.py, so that building a model's structure does not
# import sympy (the warm `simulate` path never needs it).
LAW_FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "log",
                 "sqrt", "Abs", "sign", "Min", "Max", "Piecewise", "Mod", "floor", "ceiling", "Heaviside",
                 "clip", "abs", "min", "max", "mod")
LAW_CONSTANTS = ("pi", "E")

# names a law gives a meaning of its own: not available for parameters or control inputs. Python's
# keywords too: a law is read by Python's parser, where `lambda` or `in` is syntax, never a name
RESERVED_NAMES = frozenset({"t", "True", "False"} | set(LAW_CONSTANTS) | set(LAW_FUNCTIONS) | set(keyword.kwlist))
RESERVED_WHY = "(time t, a constant, a function or a word of the law syntax)"


def number_shown(value) -> str:
    """A number as a message quotes it: a whole number of many digits cut short (str() of one
    of 4300 digits raises ValueError)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    return str(value)


def float_or_inf(value) -> float:
    """``float(value)``, with a whole number beyond a double's range as +-inf where float()
    raises OverflowError: refused as not finite wherever inf is."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def check_name(name: str, where: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ModelError(where, f"invalid name {name!r}: use letters, digits and '_', not starting with a digit")
    return name


# --------------------------------------------------------------------------------------
# Ports
# --------------------------------------------------------------------------------------
class PowerPort:
    """A power port: half arrow with direction, carrying effort and flow (vectors if dim > 1)."""

    kind = "power"

    def __init__(self, owner: "Component", name: str, direction: str, domain: str | None = None):
        if direction not in ("in", "out", "any"):
            raise ModelError(owner.path, f"port {name!r}: direction must be 'in' or 'out', not {direction!r}")
        self.owner = owner
        self.name = name
        self.direction = direction
        self.domain = domain

    @property
    def path(self) -> str:
        return f"{self.owner.path}.{self.name}"

    def __repr__(self) -> str:
        return f"<PowerPort {self.path} ({self.direction})>"


class ControlPort:
    """A control (signal) port: arrow into (``in``) or out of (``out``) its component."""

    kind = "control"

    def __init__(self, owner: "Component", name: str, direction: str):
        if direction not in ("in", "out"):
            raise ModelError(owner.path, f"control port {name!r}: direction must be 'in' or 'out'")
        self.owner = owner
        self.name = name
        self.direction = direction

    @property
    def path(self) -> str:
        return f"{self.owner.path}.{self.name}"

    def __repr__(self) -> str:
        return f"<ControlPort {self.path} ({self.direction})>"


@dataclass
class Bond:
    """A bond in a document: power flows from ``source`` to ``target``."""

    source: PowerPort
    target: PowerPort
    document: "Component"
    label: str | None = None
    source_location: str | None = None  # "file:line" when read from a model file


@dataclass
class Connection:
    """A signal line in a document, from an output-like port to an input-like port."""

    source: ControlPort
    target: ControlPort
    document: "Component"
    source_location: str | None = None


# --------------------------------------------------------------------------------------
# Components
# --------------------------------------------------------------------------------------
class Component:
    """A word model: named power and control ports plus a document of inner components.

    Subclass and override :meth:`build` to make a reusable component (a wheel instantiated
    three times), or build the document from outside with :meth:`add`, :meth:`bond`,
    :meth:`connect`. Inside the document, the component's own ports are the document ports.
    """

    elementary = False
    source_location: str | None = None  # "file:line" of its entry when read from a model file

    def __init__(self, name: str, ports: dict | None = None, controls: dict | None = None, **params):
        self.name = check_name(name, "model")
        self.parent: Component | None = None
        self.ports: dict[str, PowerPort | ControlPort] = {}
        self.children: dict[str, Component] = {}
        self.bonds: list[Bond] = []
        self.connections: list[Connection] = []
        self.params = params
        self.description = ""
        for pname, spec in (ports or {}).items():
            direction, domain = (spec, None) if isinstance(spec, str) else (spec[0], spec[1])
            self.add_power_port(pname, direction, domain)
        for cname, direction in (controls or {}).items():
            self.add_control_port(cname, direction)
        self._built = False

    # -- identity ----------------------------------------------------------------------
    @property
    def path(self) -> str:
        # names are relative to the root model: "wheel1.motor.La", not "robotino.wheel1..."
        if self.parent is None or self.parent.parent is None:
            return self.name
        return f"{self.parent.path}.{self.name}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path}>"

    def __getattr__(self, item):
        # Ports and children read like the diagram: wheel.axle, chassis.drive1
        ports = self.__dict__.get("ports")
        if ports is not None and item in ports:
            return ports[item]
        children = self.__dict__.get("children")
        if children is not None and item in children:
            return children[item]
        raise AttributeError(f"{type(self).__name__} {self.__dict__.get('name', '?')!r} "
                             f"has no port or component {item!r}")

    # -- ports -----------------------------------------------------------------------
    def add_power_port(self, name: str, direction: str, domain: str | None = None) -> PowerPort:
        check_name(name, self.path)
        if name in self.ports:
            raise ModelError(self.path, f"duplicate port name {name!r}")
        port = PowerPort(self, name, direction, domain)
        self.ports[name] = port
        return port

    def add_control_port(self, name: str, direction: str) -> ControlPort:
        check_name(name, self.path)
        if name in self.ports:
            raise ModelError(self.path, f"duplicate port name {name!r}")
        port = ControlPort(self, name, direction)
        self.ports[name] = port
        return port

    def port(self, name: str):
        try:
            return self.ports[name]
        except KeyError:
            known = ", ".join(self.ports) or "none"
            raise ModelError(self.path, f"no port {name!r} (ports: {known})") from None

    def bond_port(self, role: str) -> PowerPort:
        """The port a bond drawn to this component by name ends on (``role``: "source" or
        "target"): its one power port. A junction overrides this and grows a port per bond."""
        power = [p for p in self.ports.values() if isinstance(p, PowerPort)]
        if len(power) != 1:
            names = ", ".join(f"{self.name}.{p.name}" for p in power) or "none"
            raise ModelError(self.path, f"has {len(power)} power ports; name the port to bond ({names})")
        return power[0]

    # -- document --------------------------------------------------------------------
    def build(self) -> None:
        """Fill the document. Reusable components override this; called once, lazily."""

    def ensure_built(self) -> None:
        if not self._built:
            self._built = True
            self.build()

    def add(self, *components: "Component"):
        """Insert components into this document; returns the (last) component added."""
        for comp in components:
            if not isinstance(comp, Component):
                raise ModelError(self.path, f"can only add components, got {comp!r}")
            if comp.name in self.children:
                raise ModelError(self.path, f"duplicate component name {comp.name!r}")
            if comp.parent is not None:
                raise ModelError(self.path, f"component {comp.name!r} already belongs to {comp.parent.path}")
            comp.parent = self
            self.children[comp.name] = comp
        return components[-1] if components else None

    def _endpoint(self, item, role: str) -> PowerPort:
        """Resolve a bond end given as a port, a one-port/junction component, or 'child.port'."""
        if isinstance(item, str):
            head, _, tail = item.partition(".")
            if head not in self.children:
                raise ModelError(self.path, f"bond {role}: no component {head!r} in this document")
            item = self.children[head].port(tail) if tail else self.children[head]
        if isinstance(item, Component):
            item = item.bond_port(role)
        if not isinstance(item, PowerPort):
            raise ModelError(self.path, f"bond {role} must be a power port, got {item!r}")
        owner = item.owner
        if owner is not self and owner.parent is not self:
            raise ModelError(self.path, f"bond {role} {item.path} is not in this document")
        return item

    def bond(self, source, target, label: str | None = None) -> Bond:
        """Draw a bond carrying power from ``source`` to ``target``.

        Ends are ports (``wheel.axle``), junction or one-port components (a junction then
        grows a new port), or strings ``"child.port"``. Inside a component, its own ports are
        the document ports: ``self.bond(self.axle, inertia)``.
        """
        a = self._endpoint(source, "source")
        b = self._endpoint(target, "target")
        self._check_direction(a, "source")
        self._check_direction(b, "target")
        self._check_domains(a, b)
        bond = Bond(a, b, self, label)
        self.bonds.append(bond)
        return bond

    @staticmethod
    def _check_domains(a: PowerPort, b: PowerPort) -> None:
        # A port without a domain (a junction's, or one declared without) joins any; two declared
        # domains must agree, or the bond would equate, say, a voltage with a force.
        if a.domain is not None and b.domain is not None and a.domain != b.domain:
            raise ModelError(b.path, f"domain mismatch: a bond from {a.path} ({a.domain}) cannot enter "
                                     f"{b.path} ({b.domain})")

    def _check_direction(self, port: PowerPort, role: str) -> None:
        if port.direction == "any":
            return
        inside = port.owner is self  # a document port seen from inside flips its role
        emits = (port.direction == "out") != inside
        if role == "source" and not emits:
            raise ModelError(port.path, f"power direction mismatch: port takes power {'in' if not inside else 'out'}, "
                                        f"but the bond leaves it (swap the bond's ends)")
        if role == "target" and emits:
            raise ModelError(port.path, "power direction mismatch: port gives power, but the bond enters it "
                                        "(swap the bond's ends)")

    def connect(self, source, *targets) -> list[Connection]:
        """Draw signal lines from an output (or a document input port) to input ports."""
        src = self._signal_end(source, "source")
        made = []
        for target in targets:
            dst = self._signal_end(target, "target")
            conn = Connection(src, dst, self)
            self.connections.append(conn)
            made.append(conn)
        return made

    def _signal_end(self, item, role: str) -> ControlPort:
        if isinstance(item, str):
            head, _, tail = item.partition(".")
            if head not in self.children:
                raise ModelError(self.path, f"signal {role}: no component {head!r} in this document")
            item = self.children[head].port(tail) if tail else self.children[head]
        if isinstance(item, Component):
            wanted = "out" if role == "source" else "in"
            cands = [p for p in item.ports.values() if isinstance(p, ControlPort) and p.direction == wanted]
            if len(cands) != 1:
                raise ModelError(item.path, f"has {len(cands)} control {wanted}puts; name the port to connect")
            item = cands[0]
        if isinstance(item, PowerPort):  # named as the file names it, with what it is
            raise ModelError(item.path, f"is a power port: a signal {role} must be a control port (power "
                                        f"ports are joined by bonds)")
        if not isinstance(item, ControlPort):
            raise ModelError(self.path, f"signal {role} must be a control port, got {item!r}")
        inside = item.owner is self
        if item.owner is not self and item.owner.parent is not self:
            raise ModelError(self.path, f"signal {role} {item.path} is not in this document")
        gives = (item.direction == "out") != inside
        if role == "source" and not gives:
            raise ModelError(item.path, "is an input: a signal line cannot start there")
        if role == "target" and gives:
            raise ModelError(item.path, "is an output: a signal line cannot end there")
        return item

    # -- traversal -------------------------------------------------------------------
    def walk(self) -> Iterable["Component"]:
        """Depth-first: this component, then every descendant (building documents on the way)."""
        # iterative: a recursive generator fails past Python's recursion limit
        stack = [(self, 0)]
        while stack:
            comp, depth = stack.pop()
            if depth > MAX_NESTING:
                raise ModelError(comp.parent.path, f"components nested more than {MAX_NESTING} deep: refused")
            comp.ensure_built()
            yield comp
            stack.extend((child, depth + 1) for child in reversed(comp.children.values()))


class Model(Component):
    """The root document of a bond-graph model (BondSim's project level)."""

    def __init__(self, name: str = "model", description: str = ""):
        super().__init__(name)
        self.description = description
        self.parameters: dict[str, float] = {}
        self.parameter_docs: dict[str, str] = {}
        self.recorded: dict[str, object] = {}

    def parameter(self, name: str, value: float, doc: str = "") -> sp.Symbol:
        """A named run-time parameter (changeable between solver steps without rebuilding)."""
        check_name(name, self.path)
        if name in RESERVED_NAMES:
            raise ModelError(self.path, f"parameter name {name!r} is reserved in laws {RESERVED_WHY}")
        if name in self.parameters:
            raise ModelError(self.path, f"duplicate parameter {name!r}")
        # as a run's params take it: not a bool (float(True) is 1.0), text in decimal ASCII
        # digits only (float reads '1_0' as 10), no array
        given = value
        try:
            if (isinstance(value, bool) or getattr(value, "ndim", 0) != 0
                    or getattr(getattr(value, "dtype", None), "kind", "") == "b"
                    or (isinstance(value, str) and ("_" in value or not value.isascii()))):
                raise ValueError
            value = float_or_inf(value)
        except (TypeError, ValueError):
            raise ModelError(self.path, f"parameter {name!r}: expected a number, got {given!r}") from None
        if not math.isfinite(value):
            raise ModelError(self.path, f"parameter {name!r} must be finite, got {number_shown(given)}")
        self.parameters[name] = value
        self.parameter_docs[name] = doc
        import sympy as sp

        return sp.Symbol(f"param:{name}", real=True)
