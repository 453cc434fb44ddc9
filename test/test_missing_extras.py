"""A command whose optional dependency is not installed (an extra of setup.py left out, rclpy outside a
sourced ROS install) says which one and how to get it: exit status 1, no traceback, nothing written.
An import error of the package's own modules is a bug and keeps its traceback.

Each run is a fresh process in which the hidden modules are absent as Python itself reports an
uninstalled module (ModuleNotFoundError "No module named ..."), or, for rclpy's C extension, as it
fails where the ROS libraries are not on the loader's path."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bondsim_ros.cli import missing_dependency

ROOT = Path(__file__).resolve().parents[1]
MECHANISM = ROOT / "test" / "data" / "mechanism" / "full_project.xml"

# a finder first on sys.meta_path: the hidden modules raise what an absent module raises;
# LIBRARY_ERROR modules raise what a C extension whose shared libraries are missing raises
RUN = """
import sys
from importlib.abc import MetaPathFinder

HIDDEN, BROKEN = {hidden!r}, {broken!r}


class Absent(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == h or name.startswith(h + ".") for h in HIDDEN):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        if name in BROKEN:
            raise ImportError("librcl_action.so: cannot open shared object file: No such file or directory",
                              name=name.rpartition(".")[2], path=f"/site-packages/{{name.replace('.', '/')}}.so")
        return None


sys.meta_path.insert(0, Absent())
from bondsim_ros.cli import main

sys.exit(main())
"""


def _run(tmp_path, argv, hidden=(), broken=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    code = RUN.format(hidden=tuple(hidden), broken=tuple(broken))
    proc = subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("module", ["trimesh", "transforms3d", "defusedxml"])
def test_xml2urdf_without_the_mechanism_extra_names_it(tmp_path, module):
    out = tmp_path / "robot.urdf"
    rc, err = _run(tmp_path, ["xml2urdf", str(MECHANISM), "-o", str(out)], hidden=[module])
    assert rc == 1, err
    assert "Traceback" not in err, err
    assert f"bondsim-ros xml2urdf: error: No module named '{module}" in err, err
    assert "pip install 'bondsim_ros[mechanism]'" in err, err
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nothing half-written


def test_render_without_the_mechanism_extra_names_it(tmp_path):
    rc, err = _run(tmp_path, ["render", str(MECHANISM), "-o", str(tmp_path / "robot.png")],
                   hidden=["trimesh", "yourdfpy"])
    assert rc == 1 and "Traceback" not in err, err
    assert "bondsim-ros render: error: No module named" in err and "[mechanism]" in err, err


@pytest.mark.parametrize("command", [["up", "--duration", "1"], ["demo", "--duration", "1"]])
def test_ros_commands_without_rclpy_say_how_to_get_it(tmp_path, command):
    rc, err = _run(tmp_path, command, hidden=["rclpy"])
    assert rc == 1, err
    assert "Traceback" not in err, err
    assert f"bondsim-ros {command[0]}: error: No module named 'rclpy" in err, err
    assert "ROS 2 install (Jazzy or Kilted) is sourced" in err and "pip install 'bondsim_ros[ros]'" in err, err
    assert list(tmp_path.iterdir()) == []  # the demo made no output folder


def test_rclpy_that_cannot_load_its_libraries_is_named(tmp_path):
    pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
    rc, err = _run(tmp_path, ["up", "--duration", "1"], broken=["rclpy._rclpy_pybind11"])
    assert rc == 1, err
    assert "Traceback" not in err, err
    assert "bondsim-ros up: error: librcl_action.so: cannot open shared object file" in err, err
    assert "ROS 2 Python packages are missing or cannot load their libraries" in err, err


def test_an_import_error_of_the_package_itself_keeps_its_traceback(tmp_path):
    # a module of the package that fails to import is a bug to report, not a missing extra
    rc, err = _run(tmp_path, ["xml2urdf", str(MECHANISM), "-o", str(tmp_path / "robot.urdf")],
                   hidden=["bondsim_ros.mechanism.urdf"])
    assert rc == 1
    assert "Traceback" in err and "No module named 'bondsim_ros.mechanism.urdf'" in err, err


@pytest.mark.parametrize("name, extra", [
    ("rclpy", "ros"), ("rclpy.node", "ros"), ("sensor_msgs", "ros"), ("std_srvs.srv", "ros"),
    ("simulation_interfaces.msg", "ros"), ("rosbags.highlevel", "ros"), ("yourdfpy", "mechanism"),
    ("imageio_ffmpeg", "mechanism"), ("dask.distributed", "cluster"), ("foxglove", "foxglove"),
])
def test_the_extra_named_is_the_one_that_brings_the_module(name, extra):
    message = missing_dependency(ModuleNotFoundError(f"No module named {name!r}", name=name))
    assert message is not None and (f"[{extra}]" in message), message


@pytest.mark.parametrize("name", ["bondsim_ros.mechanism", "sympy", "numpy", "json", None])
def test_modules_no_extra_brings_are_not_called_missing_extras(name):
    assert missing_dependency(ModuleNotFoundError("No module named x", name=name)) is None


def test_an_error_raised_from_a_missing_extra_names_that_extra():
    # bondsim_ros.ros.messages says how to get tf2_msgs, raising from the import's own error
    try:
        try:
            raise ModuleNotFoundError("No module named 'tf2_msgs'", name="tf2_msgs")
        except ImportError as exc:
            raise ImportError("tf2_msgs is missing: on a ROS install source it") from exc
    except ImportError as exc:
        message = missing_dependency(exc)
    assert message is not None and message.startswith("tf2_msgs is missing: on a ROS install source it: ")
    assert "[ros]" in message
