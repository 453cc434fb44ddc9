"""The shape of the code: no import cycles among bondsim_ros modules, and the layering
README.md states ("What is where").

Imports are read from the source (ast), not by importing: every ``import`` and ``from ... import``
counts wherever it stands, inside a function too (a lazy import that closes a cycle is still a
cycle: it only moves the failure to the first call). So does a module named as text to
``importlib.import_module`` or ``__import__``: a string constant that reaches the call's first
argument -- written in the call, or a module-level constant (a name, a list or dict of names, an
item of one, a loop over one) -- and names a module of the package, absolute or relative to the
``package=`` argument (``__package__`` or ``__name__``). What the code cannot know before it runs
(the robots' entry points, a folder scan) is plug-in discovery, not an import. Nor is the parent
package that Python runs before a submodule (``import a.b`` runs a/__init__.py): only the module
named counts.
"""
from __future__ import annotations

import ast
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import bondsim_ros

ROOT = Path(bondsim_ros.__file__).resolve().parent

# ROS 2 itself: the client library, launch, and the interface (message/service) packages.
ROS_PREFIXES = ("rclpy", "rcl_interfaces", "launch", "launch_ros", "rosidl", "rmw", "rosgraph_msgs")
ROS_SUFFIXES = ("_msgs", "_srvs", "_interfaces")


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> source file, for every .py file below ``root`` (package ``package``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([package, *parts])] = path
    return out


def is_import_call(node: ast.Call) -> bool:
    """importlib.import_module(...), import_module(...) or __import__(...)."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in ("import_module", "__import__")


def module_constants(tree: ast.Module) -> dict:
    """name -> the expressions bound to it at module level, and to each loop variable the
    expression it loops over (``for name in COMMAND_MODULES``)."""
    out = defaultdict(list)
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Name):
                    out[t.id].append(node.value)
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            out[node.target.id].append(node.iter)
    return out


def strings_reaching(expr, consts: dict, seen=None) -> set:
    """The string constants in ``expr`` and in the module-level constants it names."""
    seen = set() if seen is None else seen
    out = set()
    # the pieces of an f-string are not module names: what it names is known only when it runs
    pieces = {id(n) for j in ast.walk(expr) if isinstance(j, ast.JoinedStr) for n in ast.walk(j)}
    for node in ast.walk(expr):
        if id(node) in pieces:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.add(node.value)
        elif isinstance(node, ast.Name) and node.id in consts and node.id not in seen:
            seen.add(node.id)
            for value in consts[node.id]:
                out |= strings_reaching(value, consts, seen)
    return out


def named_modules(call: ast.Call, consts: dict, mod: str, is_pkg: bool) -> list:
    """The dotted names an import_module / __import__ call may import: absolute strings as they
    are, relative ones (".x") against its package= argument (__package__ or __name__)."""
    if not call.args:
        return []
    package = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "package"),
                                                           None)
    here = mod if is_pkg else mod.rpartition(".")[0]
    if isinstance(package, ast.Name) and package.id == "__name__":
        here = mod  # __name__ as the package: only meaningful in a package's __init__
    out = []
    for text in strings_reaching(call.args[0], consts):
        if text.startswith("."):
            if not isinstance(package, ast.Name) or package.id not in ("__package__", "__name__"):
                continue
            level = len(text) - len(text.lstrip("."))
            base = here.split(".")
            base = base[: len(base) - (level - 1)]
            out.append(".".join(base + [text[level:]]) if text[level:] else ".".join(base))
        elif text.replace("_", "").replace(".", "").isalnum():
            out.append(text)
    return out


def imports(root: Path, package: str):
    """(internal edges, external imports): edges as {(importer, imported): line} between modules of
    ``package``; external as {importer: {(top-level name, line)}}."""
    mods = module_files(root, package)
    edges: dict[tuple, int] = {}
    external: dict[str, set] = defaultdict(set)

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        consts = module_constants(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and is_import_call(node):
                targets = named_modules(node, consts, mod, is_pkg)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module
                # `from pkg import sub` imports the submodule; `from mod import name`, the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for target in targets:
                if target == package or target.startswith(package + "."):
                    dst = owner(target)
                    if dst and dst != mod:
                        edges.setdefault((mod, dst), node.lineno)
                else:
                    external[mod].add((target.partition(".")[0], node.lineno))
    return edges, external, mods


def cycles(nodes, edges: dict) -> list[list]:
    """One cycle (a list of nodes, first = last) per strongly connected component of more than one
    node (Tarjan's algorithm, iterative)."""
    succ = defaultdict(list)
    for a, b in sorted(edges):
        succ[a].append(b)
    index, low, on_stack, stack, comps, counter = {}, {}, set(), [], [], [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(succ[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(comp)
    out = []
    for comp in comps:
        # shortest way from the first node back to itself inside the component (BFS)
        first = min(comp)
        prev, frontier = {}, [first]
        while first not in prev:
            nxt = []
            for v in frontier:
                for w in succ[v]:
                    if w in comp and w not in prev:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
        path, v = [first], prev[first]
        while v != first:
            path.append(v)
            v = prev[v]
        out.append([first, *reversed(path[1:]), first])
    return out


def layer(mod: str) -> str:
    """bondsim_ros.X... -> X (a sub-package or a top-level module)."""
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


EDGES, EXTERNAL, MODS = imports(ROOT, "bondsim_ros")


def where(mod: str, line: int) -> str:
    return f"{MODS[mod].relative_to(ROOT.parent)}:{line}"


def test_no_import_cycle_between_modules():
    found = cycles(MODS, EDGES)
    assert not found, "import cycles (module (file:line of its import) -> ...):\n" + "\n".join(
        " -> ".join(f"{a} ({where(a, EDGES[(a, b)])})" for a, b in zip(c, c[1:])) + f" -> {c[-1]}" for c in found)


def test_no_import_cycle_between_layers():
    layer_edges: dict[tuple, str] = {}
    for (a, b), line in EDGES.items():
        la, lb = layer(a), layer(b)
        if la != lb:
            layer_edges.setdefault((la, lb), where(a, line))
    found = cycles({layer(m) for m in MODS}, layer_edges)
    assert not found, "import cycles between layers (layer (first import) -> ...):\n" + "\n".join(
        " -> ".join(f"{a} ({layer_edges[(a, b)]})" for a, b in zip(c, c[1:])) + f" -> {c[-1]}" for c in found)


def violations(of: str, allowed_layers: set, forbidden_external=(), allowed_modules=()):
    """"file:line: what" for each import of layer ``of`` that breaks a rule."""
    out = []
    for (a, b), line in sorted(EDGES.items()):
        if layer(a) != of:
            continue
        lb = layer(b)
        if lb == of or b in allowed_modules:
            continue
        if lb not in allowed_layers:
            out.append(f"{where(a, line)}: {a} imports {b}")
    for a, names in sorted(EXTERNAL.items()):
        if layer(a) == of:
            out += [f"{where(a, line)}: {a} imports {n}" for n, line in sorted(names) if n in forbidden_external]
    return out


def test_the_engine_knows_nothing_of_models_robots_ros_mechanism_cli_or_plotting():
    # (nor a terminal's progress bar: the command line draws it from simulate's progress callback)
    bad = violations("bondgraph", allowed_layers={"solver"}, forbidden_external={"matplotlib", "rclpy", "rich"})
    assert not bad, "bondgraph/ may import only itself and solver/:\n" + "\n".join(bad)


def test_the_solver_knows_nothing_of_bond_graphs():
    bad = violations("solver", allowed_layers=set(), forbidden_external={"matplotlib", "rclpy"})
    assert not bad, "solver/ may import only itself:\n" + "\n".join(bad)


def is_ros(name: str) -> bool:
    return name.startswith(ROS_PREFIXES) or name.endswith(ROS_SUFFIXES)


def test_only_ros_imports_ros():
    bad = [f"{where(m, line)}: {m} imports {n}" for m, names in sorted(EXTERNAL.items()) if layer(m) != "ros"
           for n, line in sorted(names) if is_ros(n)]
    assert not bad, "only bondsim_ros/ros/ imports rclpy and ROS packages:\n" + "\n".join(bad)
    assert any(is_ros(n) for m, names in EXTERNAL.items() if layer(m) == "ros" for n, _ in names)


def test_ros_imports_no_robot_by_name():
    # the Twin protocol (twin/), the robots registry (not a robot's own modules), the mechanism
    # layer and the package's small shared helpers
    bad = violations("ros", allowed_layers={"twin", "mechanism", "sensors", "msgutil", "planar", "paths", "outfiles",
                                            "cliargs", "plotting"},
                     allowed_modules={"bondsim_ros.robots", "bondsim_ros.robots.plugin"})
    assert not bad, "ros/ imports something other than the Twin protocol, the robots registry and mechanism/:\n" \
        + "\n".join(bad)


def test_the_plugin_types_import_nothing_else_of_the_package():
    # robots/plugin.py is what a robot plug-in outside the package imports: it must not drag the
    # registry, the engine or ROS in with it
    bad = [f"{where(a, line)}: {a} imports {b}" for (a, b), line in sorted(EDGES.items())
           if a == "bondsim_ros.robots.plugin" and b != a]
    assert "bondsim_ros.robots.plugin" in MODS
    assert not bad, "robots/plugin.py imports other modules of the package:\n" + "\n".join(bad)


def test_the_package_never_imports_the_test_oracles():
    bad = [f"{where(m, line)}: {m} imports {n}" for m, names in sorted(EXTERNAL.items()) for n, line in sorted(names)
           if n.split(".")[0] in ("test", "oracles", "conftest")]
    assert not bad, "the package imports test code:\n" + "\n".join(bad)


def test_the_sensors_import_only_numpy_yaml_and_pil():
    # the simulated sensors stand alone: no other layer, no ROS; third-party only numpy, PyYAML, Pillow
    bad = violations("sensors", allowed_layers={"planar"})
    allowed = {"numpy", "yaml", "PIL", "__future__"} | set(sys.stdlib_module_names)
    bad += [f"{where(m, line)}: {m} imports {n}" for m, names in sorted(EXTERNAL.items()) if layer(m) == "sensors"
            for n, line in sorted(names) if n not in allowed]
    assert not bad, "sensors/ may import only itself, planar.py, the standard library, numpy, yaml and PIL:\n" + \
        "\n".join(bad)
    assert any(layer(m) == "sensors" for m in MODS)


def test_plotting_knows_no_robot():
    # figure helpers only: each robot's own figures live in its folder (robots/<name>/plots.py)
    bad = violations("plotting", allowed_layers={"outfiles", "cliargs"})
    assert not bad, "plotting/ imports more than the output-file helpers:\n" + "\n".join(bad)


GENERIC_LAYERS = ("bondgraph", "solver", "mechanism", "twin", "sensors", "ros", "fit", "sweep", "plotting", "physics")


def robot_names_in_code(path: Path, robots: set) -> list:
    """Where the code of ``path`` names a robot: an identifier holding its name, or a string
    value that is the name or a file named after it (robotino_bridge.yaml). Comments, docstrings
    and prose (a help text naming a robot as an example: a string with a space) do not count."""
    import io
    import re
    import tokenize

    files = re.compile(r"\b(" + "|".join(sorted(robots)) + r")\w*\.(yaml|yml|xml|urdf|py|json)\b", re.I)
    name = path.relative_to(ROOT.parent) if ROOT in path.parents else path.name
    out, prev = [], None
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type == tokenize.NAME and any(r in tok.string.lower() for r in robots):
            out.append(f"{name}:{tok.start[0]}: {tok.string}")
        elif tok.type == tokenize.STRING and prev is not None and prev.type not in (
                tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, tokenize.NL):  # (not a docstring)
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):  # an f-string: its literal parts
                value = tok.string
            if isinstance(value, str) and (value.lower() in robots or (" " not in value and files.search(value))):
                out.append(f"{name}:{tok.start[0]}: {tok.string}")
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            prev = tok
    return out


def test_the_generic_layers_name_no_robot_in_their_code():
    # robots are reached through the registry (its DEFAULT_ROBOT, a Robot's fields and profiles);
    # a name written into generic code is a second source that the registry cannot change
    from bondsim_ros.robots import builtin_plugins

    robots = {p.name for p in builtin_plugins()} | {"5dpo"}
    bad = [hit for layer_name in GENERIC_LAYERS for f in sorted((ROOT / layer_name).rglob("*.py"))
           for hit in robot_names_in_code(f, robots)]
    assert not bad, "robot names in the code of generic layers:\n" + "\n".join(bad)


def test_the_robot_name_scan_sees_identifiers_values_and_file_names_but_not_prose(tmp_path):
    f = tmp_path / "probe.py"
    f.write_text('"""Docstring naming robotino."""\n# robotino in a comment\nhelp = "robot (default robotino)"\n'
                 'a = "robotino"\nb = share("config", "robotino_bridge.yaml")\nrobotino_gear = 16\n')
    hits = robot_names_in_code(f, {"robotino"})
    assert [h.split(": ", 1)[1] for h in hits] == ['"robotino"', '"robotino_bridge.yaml"', "robotino_gear"]


def test_the_small_shared_helpers_import_nothing_of_the_package():
    # msgutil.py and planar.py sit below every layer that uses them
    bad = [f"{where(a, line)}: {a} imports {b}" for (a, b), line in sorted(EDGES.items())
           if a in ("bondsim_ros.msgutil", "bondsim_ros.planar") and b != a]
    assert {"bondsim_ros.msgutil", "bondsim_ros.planar"} <= set(MODS)
    assert not bad, "a shared helper imports the package:\n" + "\n".join(bad)


# -- the checker itself, on a small package with the cases that matter --------------------------

def make_package(tmp_path, files: dict) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_checker_finds_a_cycle_closed_by_a_lazy_relative_import(tmp_path):
    root = make_package(tmp_path, {
        "__init__.py": "",
        "a/__init__.py": "",
        "a/core.py": "import os\n\ndef f():\n    from .elements import J\n    return J\n",
        "a/elements.py": "from .core import f\n",
        "b.py": "from pkg.a import core\nfrom pkg import a\n",
    })
    edges, external, mods = imports(root, "pkg")
    assert edges[("pkg.a.core", "pkg.a.elements")] == 4  # the lazy import, at its line
    assert ("pkg.b", "pkg.a.core") in edges and ("pkg.b", "pkg.a") in edges
    assert external["pkg.a.core"] == {("os", 1)}
    assert cycles(mods, edges) == [["pkg.a.core", "pkg.a.elements", "pkg.a.core"]]


def test_checker_finds_a_longer_cycle_and_none_in_a_tree(tmp_path):
    root = make_package(tmp_path, {
        "__init__.py": "",
        "x.py": "import pkg.y\n",
        "y.py": "from . import z\n",
        "z.py": "def g():\n    import pkg.x as x\n",
        "w.py": "import pkg.x\n",
    })
    edges, _, mods = imports(root, "pkg")
    assert cycles(mods, edges) == [["pkg.x", "pkg.y", "pkg.z", "pkg.x"]]
    del edges[("pkg.z", "pkg.x")]
    assert cycles(mods, edges) == []


def test_checker_follows_module_names_given_to_importlib(tmp_path):
    root = make_package(tmp_path, {
        "__init__.py": "",
        "registry.py": ("import importlib\n\nPLUGINS = ['pkg.plug']\n\n\ndef load():\n"
                        "    for name in PLUGINS:\n        importlib.import_module(name)\n"),
        "plug.py": "from pkg.registry import load\n",
        "lazy/__init__.py": ("import importlib\n_EXPORTS = {'Thing': '.things'}\n\n\ndef __getattr__(name):\n"
                             "    return importlib.import_module(_EXPORTS[name], __name__)\n"),
        "lazy/things.py": "from pkg import lazy\n",
        "direct.py": "def f():\n    return __import__('pkg.plug')\n",
        "rel.py": "import importlib\nimportlib.import_module('.direct', package=__package__)\n",
        "other.py": "import importlib\nimportlib.import_module('json')\nimportlib.import_module(f'pkg.{1}')\n",
    })
    edges, external, mods = imports(root, "pkg")
    assert edges[("pkg.registry", "pkg.plug")] == 8  # the call's line
    assert ("pkg.lazy", "pkg.lazy.things") in edges
    assert ("pkg.direct", "pkg.plug") in edges and ("pkg.rel", "pkg.direct") in edges
    assert not [e for e in edges if e[0] == "pkg.other"]  # not the package's, or not known before it runs
    assert external["pkg.other"] >= {("json", 2)}
    assert sorted(map(tuple, cycles(mods, edges))) == [("pkg.lazy", "pkg.lazy.things", "pkg.lazy"),
                                                       ("pkg.plug", "pkg.registry", "pkg.plug")]
