"""scripts/bondsim-ros, the command's launcher: sh picks the interpreter the install wrote into the
package's other scripts, and starts it once (-S, then site's step with the ROS 2 wheels'
bootstrapper told not to restart) for the commands that load no ROS library."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "scripts" / "bondsim-ros"


def _one_start() -> set:
    case = re.search(r"^ {4}([\w|]+)\) exec \"\$python\" -S", LAUNCHER.read_text(), re.M)
    return set(case.group(1).split("|"))


def test_the_launcher_is_sh_and_python_and_names_real_commands():
    text = LAUNCHER.read_text()
    assert text.startswith("#!/bin/sh\n")  # (pip rewrites only a "#!python" line; this one it keeps)
    compile(text, str(LAUNCHER), "exec")
    assert "'''" not in text.split("'''")[1]  # the sh part is one Python string
    from bondsim_ros.cli import COMMANDS

    assert _one_start() and _one_start() <= set(COMMANDS)
    # none of them is a command of the ROS layer (the only one that loads rclpy)
    assert not {c for c in _one_start() if COMMANDS[c] == "bondsim_ros.ros.commands"}


def _recording_python(path: Path, record: Path) -> Path:
    """An interpreter that appends its arguments to ``record``, then runs this test's Python."""
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{record}'\nexec '{sys.executable}' \"$@\"\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def install(tmp_path):
    """A bin folder with the launcher, and where the recording interpreter writes its calls."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shutil.copy(LAUNCHER, bindir / "bondsim-ros")
    return bindir, tmp_path / "calls.txt"


@pytest.mark.parametrize("form", ["plain", "env", "sh"])
def test_the_interpreter_is_the_one_the_install_wrote(install, tmp_path, form):
    """The first line of the package's console script beside it: ``#!PATH [flags]`` (setuptools,
    pip), ``#!/usr/bin/env NAME`` (PATH finds it), or pip's sh form for a path with spaces."""
    bindir, record = install
    if form == "sh":
        python = _recording_python(tmp_path / "py thon", record)
        first = "#!/bin/sh\n" + "'" * 3 + f"exec' \"{python}\" \"$0\" \"$@\"\n' " + "'" * 3 + "\n"
    else:
        python = _recording_python(tmp_path / "python-rec", record)
        first = f"#!{python} -E\n" if form == "plain" else "#!/usr/bin/env python-rec\n"
    (bindir / "dynamics_node").write_text(first + "import sys\n")
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    out = subprocess.run([str(bindir / "bondsim-ros"), "models"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0 and "dc_motor" in out.stdout, out.stderr
    assert record.read_text().splitlines() == [f"-S {bindir / 'bondsim-ros'} models"]


def test_ros_commands_start_as_a_plain_script(install, tmp_path):
    bindir, record = install
    (bindir / "dynamics_node").write_text(f"#!{_recording_python(tmp_path / 'python-rec', record)}\n")
    out = subprocess.run([str(bindir / "bondsim-ros"), "fleet", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "usage: bondsim-ros fleet" in out.stdout, out.stderr
    assert record.read_text().splitlines() == [f"{bindir / 'bondsim-ros'} fleet --help"]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace counts the interpreter's starts")
def test_a_simulate_starts_the_interpreter_once_where_the_ros_wheels_restart_it(tmp_path):
    """In the pip environment (the ROS 2 wheels' .pth file restarts every interpreter), `models`
    starts Python once; a plain Python start twice; and `models`' children start as usual."""
    pytest.importorskip("ros_wheels_bootstrapper")
    script = Path(sys.prefix) / "bin" / "bondsim-ros"
    if not script.exists() or script.read_text() != LAUNCHER.read_text():
        pytest.skip("the environment's bondsim-ros is not this checkout's launcher (pip install -e .)")
    env = {k: v for k, v in os.environ.items() if k != "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}

    def pythons(*cmd):
        out = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(tmp_path / "trace"), *cmd],
                             capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        starts = re.findall(r'execve\("([^"]+)"', (tmp_path / "trace").read_text())
        return [s for s in starts if re.search(r"python[\d.]*$", s)]

    assert len(pythons(str(script), "models")) == 1
    assert len(pythons(sys.executable, "-c", "pass")) == 2
