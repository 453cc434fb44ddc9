"""Declarative model files (YAML), the text form of a bond-graph document.

::

    model: mass_spring_damper
    parameters: {k: 4.0}                 # run-time parameters, usable in laws
    definitions:                         # reusable components (instantiate many times)
      Damper:
        ports: {p: in}                   # power ports: in | out | [in, domain]
        components: {r: {type: R, resistance: 0.4}}
        bonds: [[self.p, r]]             # the component's own ports are self.<port>
    components:
      v: {type: EffortJunction, output: true}
      F: {type: Se, effort: 1.0}
      mass: {type: I, inertia: 1.0}
      spring: {type: C, effort: "k*q", q0: 0.1}
      d: {type: Damper}
      rec: {type: Recorder, columns: [v]}
    bonds:                               # [from, to]: power flows from -> to
      - [F, v]
      - [v, mass]
      - [v, spring]
      - [v, d.p]
    signals:                             # [source, target, ...]
      - [v.out, rec.v]

Every error names the file, the line and the component path.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import yaml

from .core import MAX_NESTING, RESERVED_NAMES, RESERVED_WHY, Component, Model, ModelError
from .elements import ELEMENTS
from .signals import SIGNALS, Input


class _LineDict(dict):
    line = 0
    key_texts = value_texts = None  # {key: text} of the keys, values YAML read as booleans (_as_written)


class _LineList(list):
    line = 0
    item_lines = item_texts = None  # {index: line} of scalars off the list's line, {index: text} as above


class _KeyLine:
    """The line of ``key`` in ``mapping``, for ``_Reader.fail``."""

    def __init__(self, mapping, key):
        self.line = getattr(mapping, "key_lines", {}).get(key, getattr(mapping, "line", 0))


class _ItemLine:
    """The line of item ``i`` of ``items`` (a scalar has none of its own), for ``_Reader.fail``."""

    def __init__(self, items, i):
        self.line = (getattr(items, "item_lines", None) or {}).get(i, getattr(items, "line", 0))


_BOOL_TAG = "tag:yaml.org,2002:bool"


def _as_written(texts, key, value) -> str:
    """``value`` as the file has it: the word YAML 1.1 read as a boolean (``on``, ``No``), else str()."""
    return (texts or {}).get(key, str(value))


def _not_bool(what: str, texts, key, value: bool) -> str:
    """The error for a name YAML read as a boolean, in the words of the file: ``what`` is the
    name expected (``a component name``), ``texts`` and ``key`` where the word is kept."""
    text = _as_written(texts, key, value)
    return f"{what} is text, but YAML reads {text} unquoted as a boolean ({str(value).lower()}): quote it, '{text}'"


class _Loader(yaml.SafeLoader):
    """Marks every mapping and list with its line; refuses nesting deeper than MAX_YAML_DEPTH
    (PyYAML composes and constructs recursively: 2000 nested lists end in a RecursionError)."""

    depth = 0

    def compose_node(self, parent, index):
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise ModelError("", f"line {mark.line + 1}: values nested more than {MAX_YAML_DEPTH} deep: refused")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _short(value, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _kind(value) -> str:
    """What ``value`` is, in the words of a model file (not Python's type names)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    for types, word in ((str, "text"), (list, "a list"), (dict, "a mapping"), ((set, frozenset), "a set")):
        if isinstance(value, types):
            return word
    return "nothing" if value is None else f"a {type(value).__name__}"


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader, node, deep=False):
    merges = [k for k, _ in node.value if k.tag == _MERGE_TAG]
    if len(merges) > 1:  # flatten_mapping would let the last one win without a word
        raise ModelError("", f"line {merges[1].start_mark.line + 1}: duplicate key '<<' (merge several mappings "
                             f"with one: <<: [*a, *b])")
    # the mapping's own keys: flatten_mapping puts the keys of its `<<: *anchor` merges before
    # them, and an own key then overrides a merged one, as YAML has it (`{<<: *mass, inertia: 2}`)
    own = {id(k) for k, _ in node.value if k.tag != _MERGE_TAG}
    loader.flatten_mapping(node)
    out = _LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    merged = set()  # keys whose value came from a merge, which a later one may override
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:  # `[a]: ...`, `{a: 1}: ...`, `? !!set {a: null}`: a key is a name
            raise ModelError("", f"line {key_node.start_mark.line + 1}: a key must be a name, got "
                                 f"{_kind(key)} {_short(key)}") from None
        if key in out and key not in merged:
            if key_node.tag == _BOOL_TAG:  # `on:` after `yes:`: both the key true
                word = key_node.value
                raise ModelError("", f"line {key_node.start_mark.line + 1}: duplicate key: YAML reads {word} unquoted "
                                     f"as a boolean ({str(key).lower()}), as it does a key before it: quote them, "
                                     f"'{word}'")
            raise ModelError("", f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
        if key_node.tag == _BOOL_TAG:  # (the words, for the errors where a name was meant)
            out.key_texts = out.key_texts or {}
            out.key_texts[key] = key_node.value
        if value_node.tag == _BOOL_TAG:
            out.value_texts = out.value_texts or {}
            out.value_texts[key] = value_node.value
        if id(key_node) in own:
            merged.discard(key)
        else:
            merged.add(key)
    return out


def _construct_sequence(loader, node, deep=False):
    out = _LineList(loader.construct_object(n, deep=True) for n in node.value)
    out.line = node.start_mark.line + 1
    for i, item in enumerate(node.value):
        # a scalar item's own line, where it is not the list's (`- F-m` under `bonds:`), and the
        # words YAML read as booleans: for the errors about that item
        if item.start_mark.line + 1 != out.line and isinstance(item, yaml.ScalarNode):
            out.item_lines = out.item_lines or {}
            out.item_lines[i] = item.start_mark.line + 1
        if item.tag == _BOOL_TAG:
            out.item_texts = out.item_texts or {}
            out.item_texts[i] = item.value
    return out


def _construct_int(loader, node):
    """A whole number as written in decimal digits: YAML 1.1 (PyYAML) reads 010 as 8, the octal
    of C, where YAML 1.2, Python's float and --param read 10; and it reads 1:30 (base 60) as 90
    and 1_0 as 10, which are refused at their line."""
    if _DECIMAL_INT.fullmatch(node.value):
        if len(node.value.lstrip("+-").lstrip("0")) > _MAX_INT_DIGITS:  # (int() refuses 4300 digits itself)
            raise _beyond_double(node)
        return _in_double(node, int(node.value, 10))
    return _in_double(node, _yaml12_number(node, loader.construct_yaml_int(node)))  # 0x1f, 0b101: as YAML 1.2


def _construct_float(loader, node):
    value = _yaml12_number(node, loader.construct_yaml_float(node))
    if math.isinf(value) and "inf" not in node.value.lower():  # 1e400: .inf is refused where it is used
        raise _beyond_double(node)
    return value


_MAX_INT_DIGITS = 310  # more are beyond a double whatever they are (1.8e308)


def _in_double(node, value: int) -> int:
    """A whole number a double holds (every number of a model ends as one): beyond, refused at
    its line, not with float()'s OverflowError where the value is used."""
    try:
        float(value)
    except OverflowError:
        raise _beyond_double(node) from None
    return value


def _beyond_double(node) -> ModelError:
    text = node.value if len(node.value) <= 24 else f"{node.value[:20]}... ({len(node.value)} characters)"
    return ModelError("", f"line {node.start_mark.line + 1}: {text} is beyond the range of a double "
                          f"(about 1.8e308): refused")


def _yaml12_number(node, value):
    """``value``, read from ``node``, unless only YAML 1.1 reads its text as that number."""
    if "_" in node.value or ":" in node.value:
        raise ModelError("", f"line {node.start_mark.line + 1}: {node.value} is read as {value!r} by YAML 1.1 only "
                             f"(digits grouped by _, or base 60 by :): write the number in decimal digits")
    return value


_DECIMAL_INT = re.compile(r"[-+]?[0-9]+")
# YAML 1.2's floats (core schema): PyYAML's YAML 1.1 resolver leaves 1e3, 2e0, 1.5e3 and -.5 as
# text, which a key that needs a number (f0's inertia) then refused; added after 1.1's own, so
# that 1_0.5 and 1:30.5 still reach _yaml12_number and are refused there
_YAML12_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                           r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_FLOAT_FIRST = list("-+0123456789.")

_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML12_FLOAT, _FLOAT_FIRST)

if getattr(yaml, "__with_libyaml__", False):
    class _CLoader(yaml.CSafeLoader):
        """The same reading with libyaml's parser and composer: PyYAML's own took 65 s over a
        9.8 MB file of 300,000 components before the component limit could refuse it. libyaml's
        composer recurses in C with no limit, so the nesting is checked on its events first
        (_check_depth)."""

    _CLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _CLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
    _CLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    _CLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
    _CLoader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML12_FLOAT, _FLOAT_FIRST)
else:  # a PyYAML built without libyaml
    _CLoader = None


def _check_depth(text: str) -> None:
    """_Loader's nesting limit on libyaml's event stream: a node (the document's top one at
    depth 1) deeper than MAX_YAML_DEPTH is refused at its line."""
    def refuse(mark):
        return ModelError("", f"line {mark.line + 1}: values nested more than {MAX_YAML_DEPTH} deep: refused")

    depth = 0
    try:
        for event in yaml.parse(text, Loader=_CLoader):
            if isinstance(event, yaml.NodeEvent):
                if depth + 1 > MAX_YAML_DEPTH:
                    raise refuse(event.start_mark)
                if isinstance(event, yaml.CollectionStartEvent):
                    depth += 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as exc:  # libyaml's own limit (1000), met scanning ahead of the events
        if exc.problem_mark is not None and "maximum nesting depth" in str(exc.problem):
            raise refuse(exc.problem_mark) from None
        raise


def _read_yaml(text: str):
    """The file's values, with the garbage collector paused: a large file makes millions of
    nodes, marks and values, none of them garbage, and the collections they set off took three
    quarters of its reading (28 s of a 10 MB file; 6.9 s without them)."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if _CLoader is None:
            return yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
        _check_depth(text)
        return yaml.load(text, Loader=_CLoader)  # noqa: S506 - CSafeLoader subclass
    finally:
        if was_enabled:
            gc.enable()


# Size limits of a model file (a shared file must not exhaust the machine): its bytes, and the
# components it may create once definitions are instantiated (a definition used 10 times in a
# definition used 10 times ... fans out exponentially).
MAX_MODEL_BYTES = 10_000_000
MAX_COMPONENTS = 20_000
# YAML aliases share one node many times ("billion laughs"): the tree the reader walks (and an
# error message prints) is bounded by its size with every alias expanded
MAX_YAML_NODES = 1_000_000
# Nesting: of YAML values (lists in lists ...), and of components (a definition that uses a
# definition that uses ...; each level is a recursion in the engine's tree walks)
MAX_YAML_DEPTH = 100


def _check_expanded_size(data, filename):
    count, stack = 0, [data]
    while stack:
        node = stack.pop()
        count += 1
        if count > MAX_YAML_NODES:
            raise ModelError(filename, f"the model file expands to more than {MAX_YAML_NODES} values "
                                       f"(YAML aliases repeat their anchor's content): refused")
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _keys_taken(kind: str, factory) -> str:
    """`` (GY takes: ratio, inputs)``: the keys an element type's constructor takes besides its
    name, to say beside Python's "unexpected keyword argument 'r'"."""
    import inspect

    try:
        names = [p.name for p in list(inspect.signature(factory).parameters.values())[1:]
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        return ""
    return f" ({kind} takes: {', '.join(names)})" if names else ""


def _input(name, value=0.0):
    """The type Input of a model file: ``value`` alone (Input's ``keys`` are its shapes' own)."""
    return Input(name, value)


# looked up before ELEMENTS and SIGNALS: a file's Input takes the keys docs/engine.md lists, no more
_INPUT_SHAPES = {"Input": _input, "Constant": Input.constant, "Step": Input.step, "Ramp": Input.ramp,
                 "Sine": Input.sine}
_DOC_KEYS = {"type", "ports", "controls", "components", "bonds", "signals", "description", "parameters"}


class _Reader:
    def __init__(self, path: str, data):
        self.path = path
        self.data = data
        self.definitions = data.get("definitions") or {}
        if not isinstance(self.definitions, dict):
            self.fail(_KeyLine(data, "definitions"), "definitions",
                      f"must be a mapping name -> component spec, got {_kind(self.definitions)} "
                      f"{_short(self.definitions)}")
        self.count = 0

    def where(self, node, comp_path=""):
        line = getattr(node, "line", 0)
        loc = f"{self.path}:{line}" if line else self.path
        return f"{loc}: {comp_path}" if comp_path else loc

    def fail(self, node, comp_path, message):
        raise ModelError(self.where(node, comp_path), message)

    def section(self, spec, key, comp_path, kind):
        """``spec[key]`` checked to be a mapping (``kind`` dict) or a list; absent or empty: empty."""
        value = spec.get(key)
        if value is None:
            return kind()
        if not isinstance(value, kind):  # at the key's line: a scalar has no line of its own
            self.fail(_KeyLine(spec, key), comp_path,
                      f"'{key}' must be {_kind(kind())}, got {_kind(value)} {_short(value)}")
        return value

    def fill(self, comp: Component, spec, stack=()):
        comps = self.section(spec, "components", comp.path, dict)
        depth = getattr(comp, "_yaml_depth", 0) + 1
        if comps and depth > MAX_NESTING:
            parts = comp.path.split(".")
            where = ".".join(parts[:2] + [f"<{len(parts) - 4} levels>"] + parts[-2:]) if len(parts) > 6 else comp.path
            self.fail(spec, where, f"components nested more than {MAX_NESTING} deep: refused")
        for name, cspec in comps.items():
            written = _as_written(comps.key_texts, name, name)
            child_path = f"{comp.path}.{written}" if comp.parent is not None else written
            if isinstance(name, bool):
                self.fail(_KeyLine(comps, name), child_path, _not_bool("a component name", comps.key_texts, name, name))
            if not isinstance(name, str):  # `1:` would become a name only by str()
                self.fail(_KeyLine(comps, name), child_path,
                          f"a component name is text (letters, digits, '_'), got {type(name).__name__} {name!r}")
            if not isinstance(cspec, dict) or "type" not in cspec:
                self.fail(cspec if isinstance(cspec, dict) else spec, child_path, "needs a mapping with a 'type'")
            try:
                child = self.make(str(name), cspec, stack, getattr(comp, "_yaml_scope", ()), child_path)
                child._yaml_depth = depth
                # positions for the errors found later (build, reduction, run-time checks)
                child.source_location = f"{self.path}:{cspec.line}"
                if child.elementary:
                    child.law_locations = {k: f"{self.path}:{ln}" for k, ln in cspec.key_lines.items()}
                    scope = getattr(comp, "_yaml_scope", ())
                    if scope:  # (an attribute of the element: the compiled code's key depends on it,
                        # not on where the values were written)
                        child.scope = tuple(layer for _, layer in scope)
                        child.scope_where = tuple(where for where, _ in scope)
                comp.add(child)
            except ModelError as exc:
                if exc.where.startswith(self.path):
                    raise
                self.fail(cspec, child_path, exc.message)
        bonds = self.section(spec, "bonds", comp.path, list)
        for i, bond in enumerate(bonds):
            if isinstance(bond, dict):  # {from: a, to: b}: any other key would be read by nothing
                unknown = [k for k in bond if k not in ("from", "to")]
                missing = [k for k in ("from", "to") if k not in bond]
                if unknown or missing:
                    what = (f"unknown key(s) {', '.join(_as_written(bond.key_texts, k, k) for k in unknown)}"
                            if unknown else f"no '{missing[0]}:'")
                    self.fail(_KeyLine(bond, unknown[0]) if unknown else bond, comp.path,
                              f"a bond written as a mapping has the keys from and to, got {what}")
            ends = [bond.get("from"), bond.get("to")] if isinstance(bond, dict) else bond
            if not isinstance(ends, list) or len(ends) != 2:
                self.fail(bond if hasattr(bond, "line") else _ItemLine(bonds, i), comp.path,
                          f"a bond is [from, to], got {bond!r}")
            if isinstance(bond, dict):
                self.no_bool_ends(bond, ("from", "to"), _KeyLine, bond.value_texts, comp.path)
            else:
                self.no_bool_ends(bond, range(2), _ItemLine, bond.item_texts, comp.path)
            try:
                made = comp.bond(self.end(comp, ends[0]), self.end(comp, ends[1]))
            except ModelError as exc:  # (its own where: the component or end it names, once)
                self.fail(bond, exc.where or comp.path, exc.message)
            made.source_location = self.where(bond if hasattr(bond, "line") else spec)
        lines = self.section(spec, "signals", comp.path, list)
        for i, line in enumerate(lines):
            if not isinstance(line, list) or len(line) < 2:
                self.fail(line if hasattr(line, "line") else _ItemLine(lines, i), comp.path,
                          f"a signal line is [source, target, ...], got {line!r}")
            self.no_bool_ends(line, range(len(line)), _ItemLine, line.item_texts, comp.path)
            try:
                made = comp.connect(self.end(comp, line[0]), *[self.end(comp, x) for x in line[1:]])
            except ModelError as exc:  # (its own where: the component or end it names, once)
                self.fail(line, exc.where or comp.path, exc.message)
            for conn in made:
                conn.source_location = self.where(line)

    def no_bool_ends(self, node, keys, at, texts, comp_path):
        """Refuse an end of a bond or signal line that YAML read as a boolean (``[F, on]``),
        naming it as written."""
        for key in keys:
            value = node.get(key) if isinstance(node, dict) else node[key]
            if isinstance(value, bool):
                self.fail(at(node, key), comp_path, _not_bool("a bond or signal end", texts, key, value))

    @staticmethod
    def end(comp: Component, text):
        if not isinstance(text, str):
            raise ModelError(comp.path, f"a bond or signal end is 'component' or 'component.port', got {text!r}")
        if text.startswith("self."):
            return comp.port(text[5:])
        return text

    def make(self, name: str, spec, stack, scope=(), path: str = "") -> Component:
        kind = spec["type"]
        if isinstance(kind, bool):
            raise ModelError(name, _not_bool("'type'", spec.value_texts, "type", kind))
        if not isinstance(kind, str):
            raise ModelError(name, f"'type' must be a name, got {kind!r}")
        self.count += 1
        if self.count > MAX_COMPONENTS:
            raise ModelError(name, f"the model has more than {MAX_COMPONENTS} components (definitions instantiated "
                                   f"inside definitions multiply): refused")
        kwargs = {k: v for k, v in spec.items() if k != "type"}
        for key, value in kwargs.items():  # a list of names (columns, inputs) never holds a boolean
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, bool):
                        self.fail(_ItemLine(value, i), path or name,
                                  f"{key}: {_not_bool('a name', value.item_texts, i, item)}")
        if kind in self.definitions:
            if kind in stack:
                raise ModelError(name, f"definition {kind!r} contains itself ({' -> '.join(stack + (kind,))})")
            definition = self.definitions[kind]
            defaults, lines = self.scope_values(definition, kind) if isinstance(definition, dict) else ({}, {})
            extra = set(kwargs) - {"description"} - set(defaults)
            if extra:
                takes = f" ({kind} takes: {', '.join(defaults)})" if defaults else ""
                raise ModelError(name, f"unexpected key(s) for an instance of {kind}: "
                                       f"{', '.join(sorted(map(str, extra)))}{takes}")
            given = {k: self.scope_value(spec, k, v, path or name) for k, v in kwargs.items() if k in defaults}
            # (name, value, whether it is the definition's default: a default may read the
            # definition's other parameters, an instance's value reads the names around it)
            values = tuple((k, given[k], False) if k in given else (k, v, True) for k, v in defaults.items())
            layer = scope + (((self.where(spec, path or name), lines), values),) if defaults else scope
            return self.document(name, definition, stack + (kind,), layer)
        if kind == "Component":
            inline, lines = self.scope_values(spec, name)
            values = tuple((k, v, True) for k, v in inline.items())
            layer = scope + (((self.where(spec, path or name), lines), values),) if inline else scope
            return self.document(name, spec, stack, layer)
        factory = _INPUT_SHAPES.get(kind) or ELEMENTS.get(kind) or SIGNALS.get(kind)
        if factory is None:
            known = sorted(
                set(ELEMENTS) | set(SIGNALS) | set(_INPUT_SHAPES) | set(map(str, self.definitions)) | {"Component"})
            raise ModelError(name, f"unknown element type {kind!r} (known: {', '.join(known)})")
        try:
            return factory(name, **kwargs)
        except TypeError as exc:
            msg = re.sub(r"^[\w.]*\(\) ", "", str(exc))
            raise ModelError(name, f"{kind}: {msg}{_keys_taken(kind, factory)}") from None

    def scope_values(self, spec, kind) -> tuple[dict, dict]:
        """A definition's own ``parameters:``: name -> number or law text, in order, and name ->
        where its default is written (``file:line: kind``)."""
        params = spec.get("parameters")
        if params is None:
            return {}, {}
        if not isinstance(params, dict):
            self.fail(_KeyLine(spec, "parameters"), kind,
                      f"'parameters' must be a mapping name -> value, got {_kind(params)} {_short(params)}")
        out, lines = {}, {}
        for pname, value in params.items():
            if isinstance(pname, bool):
                self.fail(_KeyLine(params, pname), kind,
                          f"parameters: {_not_bool('a parameter name', params.key_texts, pname, pname)}")
            if not isinstance(pname, str) or not pname.isidentifier():
                self.fail(_KeyLine(params, pname), kind, f"parameters: {pname!r} is not a parameter name")
            if pname in RESERVED_NAMES:  # as a model's own parameter: it would hide pi, E or sin in the laws
                self.fail(_KeyLine(params, pname), kind,
                          f"parameters: {pname!r} is reserved in laws {RESERVED_WHY}")
            out[pname] = self.scope_value(params, pname, value, f"{kind}: parameters")
            lines[pname] = self.where(_KeyLine(params, pname), kind)
        return out, lines

    def scope_value(self, node, key, value, who: str):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.fail(_KeyLine(node, key), who, f"{key}: a parameter value is a number or a law, got {value!r}"[:300])
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(_KeyLine(node, key), who, f"{key}: a parameter value must be finite, got {value!r}")
        return value

    def document(self, name, spec, stack, scope=()) -> Component:
        if not isinstance(spec, dict):
            raise ModelError(name, f"a component definition is a mapping, got {spec!r}"[:300])
        extra = set(spec) - _DOC_KEYS
        if extra:
            self.fail(spec, name, f"unexpected key(s) in a component: {', '.join(sorted(map(str, extra)))}")
        ports, controls = {}, {}
        for key in ("ports", "controls"):
            names = self.section(spec, key, name, dict)
            for pname in names:
                if isinstance(pname, bool):
                    self.fail(_KeyLine(names, pname), name,
                              f"{key}: {_not_bool('a port name', names.key_texts, pname, pname)}")
        for pname, value in self.section(spec, "ports", name, dict).items():
            if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
                value = tuple(value)
            elif not isinstance(value, str):
                self.fail(spec["ports"], name, f"port {pname!r}: give in, out or [in|out, domain], got {value!r}")
            ports[pname] = value
        for cname, value in self.section(spec, "controls", name, dict).items():
            if not isinstance(value, str):
                self.fail(spec["controls"], name, f"control port {cname!r}: give in or out, got {value!r}")
            controls[cname] = value
        comp = Component(name, ports=ports, controls=controls)
        comp.description = str(spec.get("description") or "")
        comp._yaml_spec = (self, spec, stack)
        comp._yaml_scope = scope
        comp._built = True
        self.pending.append(comp)
        return comp


def parameter_locations(path) -> dict:
    """``{name: "file:line"}`` of the model file's own run-time parameters: where a value the
    model refuses at run time was written (the run itself may hold only the compiled model).
    Empty when the file cannot be read again."""
    try:
        data = _read_yaml(Path(path).read_text(encoding="utf-8"))
        params = data.get("parameters") if isinstance(data, dict) else None
        lines = getattr(params, "key_lines", {})
        return {str(name): f"{path}:{line}" for name, line in lines.items()}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ModelError, RecursionError):
        return {}


def component_locations(path) -> dict:
    """``{component path: "file:line"}`` of a model file's components (those of its definitions'
    instances too): where an equation a run names (``d: x = in``) was written. Empty when the file
    cannot be read again."""
    try:
        model = load_model(path)
        return {comp.path: comp.source_location for comp in model.walk()
                if comp is not model and getattr(comp, "source_location", None)}
    except (OSError, ModelError, RecursionError):
        return {}


def load_model(path) -> Model:
    """Read a model file (YAML) into a :class:`Model`."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_MODEL_BYTES:
            raise ModelError(str(path), f"model file is {size} bytes (limit {MAX_MODEL_BYTES})")
        data = path.read_bytes()
    except OSError as exc:
        raise ModelError(str(path), f"cannot read model file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ModelError(f"{path}:{line}", f"model file is not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
    return loads_model(text, str(path))


# mechanism:, commands:, outputs:: the IPC binding to a mechanism XML, what ROS may set and which
# columns it publishes, read by bondsim_ros.robots.yaml_binding
TOP_LEVEL_KEYS = frozenset({"model", "description", "parameters", "definitions", "components", "bonds", "signals",
                            "mechanism", "commands", "outputs"})


def loads_model(text: str, filename: str = "<string>") -> Model:
    try:
        data = _read_yaml(text)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 0
        raise ModelError(f"{filename}:{line}", f"YAML syntax error: {exc.problem}") from None
    except yaml.reader.ReaderError as exc:  # a character YAML admits nowhere (a control character, NUL)
        line = text[: exc.position].count("\n") + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or "\0")
        raise ModelError(f"{filename}:{line}", f"YAML cannot read character #x{char:04x}: {exc.reason}") from None
    except ModelError as exc:  # raised while reading, with "line N: " for the file's position
        line, _, message = str(exc).partition(": ")
        if line.startswith("line ") and line[5:].isdigit():
            raise ModelError(f"{filename}:{line[5:]}", message) from None
        raise ModelError(filename, str(exc)) from None
    _check_expanded_size(data, filename)
    if not isinstance(data, dict):
        raise ModelError(filename, "a model file is a mapping with at least 'model: NAME' and 'components'")
    allowed = TOP_LEVEL_KEYS
    extra = sorted(set(data) - allowed, key=lambda k: data.key_lines.get(k, data.line))
    if extra:  # at the first one's line (a misspelt 'signals:' far down the file)
        raise ModelError(f"{filename}:{data.key_lines.get(extra[0], data.line)}",
                         f"unexpected top-level key(s): {', '.join(map(str, extra))} "
                         f"(allowed: {', '.join(sorted(allowed))})")
    if "model" not in data:
        raise ModelError(f"{filename}:{data.line}", "a model file is a mapping with at least 'model: NAME' and "
                                                    "'components': no 'model:' key")
    reader = _Reader(filename, data)
    reader.pending = []
    top = f"{filename}:{data.key_lines.get('model', data.line)}"
    if isinstance(data["model"], bool):
        raise ModelError(top, _not_bool("the model's name", data.value_texts, "model", data["model"]))
    try:
        model = Model(str(data["model"]), str(data.get("description") or ""))
    except ModelError as exc:
        raise ModelError(top, exc.message) from None
    model.source_location = top
    params = reader.section(data, "parameters", "parameters", dict)
    for name, value in params.items():
        doc = ""
        line = params.key_lines.get(name, params.line)
        if isinstance(value, dict):
            # {value:, doc:} only: a key read nowhere (unit: g) would leave the value unconverted
            unknown = [k for k in value if k not in ("value", "doc")]
            if unknown or "value" not in value:
                what = (f"unknown key(s) {', '.join(map(repr, unknown))}" if unknown else "no 'value:'")
                raise ModelError(f"{filename}:{line}: parameters",
                                 f"{name}: a parameter given as a mapping has 'value:' and optionally 'doc:' "
                                 f"(values are in SI units), got {what}")
            doc, value = value.get("doc", ""), value.get("value")
        if isinstance(name, bool):
            raise ModelError(f"{filename}:{line}: parameters",
                             _not_bool("a parameter name", params.key_texts, name, name))
        try:
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise ValueError(f"a parameter value is a number, got {value!r}")
            model.parameter(str(name), value, str(doc))
        except (TypeError, ValueError) as exc:
            raise ModelError(f"{filename}:{line}: parameters", f"{name}: {exc}") from None
    reader.fill(model, data)
    while reader.pending:  # documents of sub-components, breadth first
        comp = reader.pending.pop(0)
        rd, spec, stack = comp._yaml_spec
        rd.fill(comp, spec, stack)
    return model
