"""The shape of the code: no import cycles among bondsim_ros modules, and the layering
README.md states ("What is where").

Imports are read from the source (ast), not by importing: every ``import`` and ``from ... import``
counts wherever it stands, inside a function too (a lazy import that closes a cycle is still a
cycle: it only moves the failure to the first call). A name given as text to importlib (the
command modules in cli.COMMAND_MODULES, the model modules of the models registry, the robots'
entry points) is plug-in discovery, not an import: the plug-in depends on the registry's types,
the registry only on the plug-in's name. Nor is the parent package that Python runs before a
submodule (``import a.b`` runs a/__init__.py): only the module named counts.
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

# Cycles between layers (top-level packages) that are known and being dissolved, with the reason.
# Every entry must still be a cycle: a stale one fails the test, so it is deleted, not forgotten.
LAYER_CYCLE_EXEMPTIONS: dict = {
    # frozenset({"layer_a", "layer_b"}): "why this cycle must stay for now (and what removes it)"
}


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> source file, for every .py file below ``root`` (package ``package``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([package, *parts])] = path
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
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
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
    unexpected = [c for c in found if frozenset(c) not in LAYER_CYCLE_EXEMPTIONS]
    assert not unexpected, "import cycles between layers (layer (first import) -> ...):\n" + "\n".join(
        " -> ".join(f"{a} ({layer_edges[(a, b)]})" for a, b in zip(c, c[1:])) + f" -> {c[-1]}" for c in unexpected)
    stale = [sorted(k) for k in LAYER_CYCLE_EXEMPTIONS if k not in {frozenset(c) for c in found}]
    assert not stale, f"exempted layer cycles that no longer exist, delete their exemptions: {stale}"


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
    bad = violations("bondgraph", allowed_layers={"solver"}, forbidden_external={"matplotlib", "rclpy"})
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
    bad = violations("ros", allowed_layers={"twin", "mechanism", "sensors", "msgutil", "paths", "outfiles", "cliargs",
                                            "plotting"},
                     allowed_modules={"bondsim_ros.robots", "bondsim_ros.robots.plugin"})
    assert not bad, "ros/ imports something other than the Twin protocol, the robots registry and mechanism/:\n" \
        + "\n".join(bad)


def test_the_sensors_import_only_numpy_yaml_and_pil():
    # the simulated sensors stand alone: no other layer, no ROS; third-party only numpy, PyYAML, Pillow
    bad = violations("sensors", allowed_layers=set())
    allowed = {"numpy", "yaml", "PIL", "__future__"} | set(sys.stdlib_module_names)
    bad += [f"{where(m, line)}: {m} imports {n}" for m, names in sorted(EXTERNAL.items()) if layer(m) == "sensors"
            for n, line in sorted(names) if n not in allowed]
    assert not bad, "sensors/ may import only itself, the standard library, numpy, yaml and PIL:\n" + "\n".join(bad)
    assert any(layer(m) == "sensors" for m in MODS)


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
