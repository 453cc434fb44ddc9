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
