"""The sources pass flake8 (pyflakes and pycodestyle, with the project's settings in setup.cfg), as
a ROS package's own linter tests have them pass: no unused or undefined names, no line over 120
columns, the layout PEP 8 asks. `colcon test` runs it with the rosdep key python3-flake8."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the package, its tests, launch files, benchmarks, tools and setup.py: every Python file the
# repository holds
CHECKED = ["bondsim_ros", "test", "launch", "benchmarks", "tools", "setup.py"]


def test_the_sources_pass_flake8():
    pytest.importorskip("flake8", reason="flake8 is not installed (pip: the test extra; rosdep: python3-flake8)")
    proc = subprocess.run([sys.executable, "-m", "flake8", *CHECKED], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"flake8 found:\n{proc.stdout}{proc.stderr}"


def test_flake8_reads_the_project_settings(tmp_path):
    """The check is the one setup.cfg configures: a line of 121 columns is refused, one of 120
    passes (so the test above cannot pass by reading no configuration or another one)."""
    pytest.importorskip("flake8", reason="flake8 is not installed (pip: the test extra; rosdep: python3-flake8)")
    (tmp_path / "setup.cfg").write_text((ROOT / "setup.cfg").read_text())
    ok, long = tmp_path / "ok.py", tmp_path / "long.py"
    ok.write_text("X = '" + "a" * 114 + "'\n")  # 120 columns
    long.write_text("X = '" + "a" * 115 + "'\n")  # 121
    run = [sys.executable, "-m", "flake8", "ok.py", "long.py"]
    proc = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True)
    assert "long.py:1:121: E501" in proc.stdout and "ok.py" not in proc.stdout, proc.stdout + proc.stderr
