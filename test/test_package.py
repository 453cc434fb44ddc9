"""The package as ROS and pip see it: entry points resolve, data files exist, launch files parse."""
import ast
import importlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _console_scripts():
    text = (ROOT / "setup.py").read_text()
    return re.findall(r'"([\w-]+) = ([\w.]+):(\w+)"', text)


@pytest.mark.parametrize("name,module,func", _console_scripts())
def test_console_script_targets_exist(name, module, func):
    if module.startswith("bondsim_ros.ros."):
        pytest.importorskip("rclpy")
    assert callable(getattr(importlib.import_module(module), func)), f"{name} -> {module}:{func}"


def test_every_node_has_an_entry_point():
    scripts = {m for _, m, _ in _console_scripts()}
    nodes = {f"bondsim_ros.ros.{p.stem}" for p in (ROOT / "bondsim_ros" / "ros").glob("*.py")
             if "def main(" in p.read_text()}
    assert nodes and nodes <= scripts, f"nodes without a console script: {sorted(nodes - scripts)}"


def test_package_xml_is_format_3_and_names_the_package():
    root = ET.parse(ROOT / "package.xml").getroot()
    assert root.get("format") == "3"
    assert root.findtext("name") == "bondsim_ros"
    assert root.find("export/build_type").text == "ament_python"


@pytest.mark.parametrize("launch", sorted((ROOT / "launch").glob("*.launch.py")), ids=lambda p: p.name)
def test_launch_files_parse_and_reference_existing_files(launch):
    tree = ast.parse(launch.read_text())
    assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)
    # every file of this package it joins (os.path.join(share, "config", "x.yaml")) exists
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "join" and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id == "share":
            parts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(parts) == len(node.args) - 1 and parts:
                assert (ROOT.joinpath(*parts)).exists(), f"{launch.name}: {'/'.join(parts)} missing"
    # executables it starts from this package are console scripts
    scripts = {n for n, _, _ in _console_scripts()}
    for m in re.finditer(r'package="bondsim_ros", executable="(\w+)"', launch.read_text()):
        assert m.group(1) in scripts, f"{launch.name}: executable {m.group(1)} is not a console script"


def _rosdep_keys():
    """test/data/rosdep_keys.txt: key -> python modules it provides (keys verified in rosdistro)."""
    keys = {}
    for line in (ROOT / "test" / "data" / "rosdep_keys.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            parts = line.split()
            keys[parts[0]] = set(parts[2].split(",")) if len(parts) > 2 else set()
    return keys


def _declared():
    root = ET.parse(ROOT / "package.xml").getroot()
    return {e.text.strip() for tag in ("depend", "exec_depend", "build_depend", "test_depend", "buildtool_depend")
            for e in root.iter(tag)}


def test_every_package_xml_key_exists_in_rosdistro():
    """`rosdep install` fails on a single unknown key (python3-numba-pip was one)."""
    known = _rosdep_keys()
    unknown = sorted(_declared() - set(known))
    assert not unknown, f"package.xml: not rosdep keys or ROS packages (test/data/rosdep_keys.txt): {unknown}"


def test_every_imported_third_party_module_is_declared():
    import sys

    keys = _rosdep_keys()
    declared = _declared()
    provided = {m for k, mods in keys.items() if k in declared or k.startswith("pip:") for m in mods}
    imported = {}
    for path in (ROOT / "bondsim_ros").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                imported.setdefault(name.split(".")[0], path.relative_to(ROOT))
    third_party = {m: p for m, p in imported.items() if m not in sys.stdlib_module_names and m != "bondsim_ros"}
    missing = {m: str(p) for m, p in third_party.items() if m not in provided}
    assert not missing, f"imported but not declared in package.xml: {missing}"


def test_launch_files_declare_the_packages_they_start_or_include():
    declared = _declared() | {"bondsim_ros"}
    for launch in sorted((ROOT / "launch").glob("*.launch.py")):
        text = launch.read_text()
        used = set(re.findall(r'package="(\w+)"', text)) | set(re.findall(r'get_package_share_directory\("(\w+)"\)',
                                                                          text))
        assert used <= declared, f"{launch.name}: {sorted(used - declared)} not in package.xml"
