"""The one registry of robots and named models: a package of its own, registered only through an
entry point (a dist-info's entry_points.txt on the path, as pip leaves it), is a robot
`bondsim-ros robots` lists and `up --model` accepts, and its models are models `bondsim-ros
simulate NAME` runs and `bondsim-ros models` lists -- the command line run as a program. The
built-in robots are the folders below bondsim_ros/robots, declared in setup.py the same way."""
import csv
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SLIDE_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<robot id="r-slidebot" name="SlideBot">
  <cuboid id="rail" name="rail" lx="1.0" ly="0.04" lz="0.02"/>
  <render ref="rail" color="dimgray"/>
  <joint name="slide">
    <drive type="prismatic_x"/>
    <link id="block_frame" name="block"/>
    <cuboid id="block" name="block" lx="0.1" ly="0.1" lz="0.1" mass="1.0"/>
    <render ref="block" color="steelblue"/>
  </joint>
</robot>
"""

# a block whose position follows a 0.2 m step through a first-order loop: q = 0.2 (1 - exp(-k t))
SLIDE_YAML = """\
model: slide_step
parameters: {q_ref: 0.2, k: 4.0}
components:
  law: {type: Function, expr: "k*(q_ref - u)", inputs: [u]}
  q: {type: Integrator}
  rec: {type: Recorder, columns: [slide_q]}
signals:
  - [law.out, q.in_]
  - [q.out, law.u, rec.slide_q]
"""

PLUGIN = ('''\
"""slidebot: a robot plug-in of another package."""
from pathlib import Path

from bondsim_ros.bondgraph.yamlmodel import load_model
from bondsim_ros.robots import ModelEntry, model_robot

HERE = Path(__file__).parent


def build():
    return load_model(HERE / "slide.yaml")


def ROBOT():
    return model_robot("slidebot", "a block on a rail", build, HERE / "slidebot.xml", {"slide": "slide_q"},
                       model="slide_step")


MODELS = [ModelEntry("slide_step", build, "slidebot: a 0.2 m step of the block", '''
          'defaults={"t_end": 1.0, "dt_out": 0.25})]\n')


def install_plugin(where: Path, name: str, entry: str, files: dict) -> None:
    """A package folder and the dist-info pip would leave for it, with one robot entry point."""
    pkg = where / name
    pkg.mkdir(parents=True)
    for fname, text in files.items():
        (pkg / fname).write_text(text)
    info = where / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[bondsim_ros.robots]\n{entry}\n")


def cli(site: Path, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    return subprocess.run([sys.executable, "-m", "bondsim_ros.cli", *args], env=env, cwd=site, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site"
    install_plugin(site, "slidebot_plugin", "slidebot = slidebot_plugin:ROBOT",
                   {"__init__.py": PLUGIN, "slide.yaml": SLIDE_YAML, "slidebot.xml": SLIDE_XML})
    return site


def test_simulate_runs_an_installed_plugins_model_by_name(site, tmp_path):
    listed = cli(site, "models")
    assert listed.returncode == 0, listed.stderr
    assert "slide_step" in listed.stdout and "dc_motor" in listed.stdout and "robotino_twist" in listed.stdout
    robots = cli(site, "robots")
    assert robots.returncode == 0, robots.stderr
    rows = {line.split()[0]: line for line in robots.stdout.splitlines()}
    assert "a block on a rail" in rows["slidebot"]
    assert {"robotino", "dualarm", "arm3dof", "omni5dpo", "slider_crank_lagrange", "pendulum_lagrange"} <= set(rows)
    # twice: the second run finds the compiled code through its build record, and the plug-in's
    # entry (its default t_end, dt_out) through the plug-in module alone
    for run in (1, 2):
        out = tmp_path / f"slide{run}.csv"
        proc = cli(site, "simulate", "slide_step", "--csv", str(out))
        assert proc.returncode == 0, proc.stderr
        with open(out) as fh:
            table = list(csv.DictReader(fh))
        assert [float(r["t"]) for r in table] == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
        for r in table:
            assert float(r["slide_q"]) == pytest.approx(0.2 * (1 - math.exp(-4.0 * float(r["t"]))), abs=1e-5)
    assert "(cached)" in proc.stderr


def test_a_plugin_that_does_not_load_is_named(tmp_path):
    site = tmp_path / "site"
    install_plugin(site, "broken_plugin", "brokenbot = broken_plugin:ROBOT",
                   {"__init__.py": "import numpy\nraise RuntimeError('no calibration file')\n"})
    for args in (("models",), ("simulate", "nosuchmodel"), ("robots",)):
        proc = cli(site, *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert "brokenbot = broken_plugin:ROBOT" in proc.stderr and "no calibration file" in proc.stderr, proc.stderr
        if args == ("robots",):  # the robots that load are listed all the same
            assert {"robotino", "omni5dpo"} <= {line.split()[0] for line in proc.stdout.splitlines()}, proc.stdout
    # a model file does not depend on the plug-ins
    model = tmp_path / "m.yaml"
    model.write_text(SLIDE_YAML)
    proc = cli(site, "simulate", str(model), "--t-end", "0.5", "--dt-out", "0.5", "--csv", str(tmp_path / "m.csv"))
    assert proc.returncode == 0, proc.stderr


def test_a_broken_plugin_stops_the_same_names_cached_or_not(site, tmp_path):
    """An installed plug-in that does not import: a built-in model runs (its own module alone is
    read), built or found through its build record alike; a plug-in's model is refused naming the
    broken one, whether or not an earlier run left a build record."""
    first = cli(site, "simulate", "slide_step", "--csv", str(tmp_path / "slide.csv"), "-q")
    assert first.returncode == 0, first.stderr  # the build record the next run would use
    info = site / "brk_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brk-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[bondsim_ros.robots]\nbrk = brk_plugin.nosuchmod:ROBOT\n")
    for args in (("lossless_oscillator",), ("dc_motor", "--no-cache"), ("dc_motor",)):
        proc = cli(site, "simulate", *args, "--t-end", "0.01", "--dt-out", "0.01", "--csv", str(tmp_path / "b.csv"))
        assert proc.returncode == 0, (args, proc.stderr)
        assert "brk" not in proc.stderr
    out = str(tmp_path / "s.csv")
    for args in (("simulate", "slide_step", "--csv", out), ("simulate", "slide_step", "--no-cache", "--csv", out),
                 ("simulate", "nosuchmodel", "--csv", out), ("sweep", "slide_step", "--param", "k=1,2", "-o", out)):
        proc = cli(site, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert "robot plug-in brk = brk_plugin.nosuchmod:ROBOT: cannot load its MODELS" in proc.stderr, proc.stderr


def test_setup_py_declares_the_robot_folders_as_entry_points(tmp_path):
    """The metadata setup.py writes (what pip and colcon install) lists one entry point per robot
    folder, the same the registry scans from a source checkout; each loads to its robots."""
    from bondsim_ros.robots import builtin_plugins, load_robot

    proc = subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "bondsim_ros.egg-info" / "entry_points.txt").read_text()
    group = text.split("[bondsim_ros.robots]\n")[1].split("\n\n")[0]
    declared = sorted(line.replace(" ", "") for line in group.strip().splitlines())
    assert declared == sorted(str(p).replace(" ", "") for p in builtin_plugins())
    assert {p.name for p in builtin_plugins()} == {"arm3dof", "dualarm", "multibody", "omni5dpo", "robotino"}
    for name in ("robotino", "slider_crank_lagrange", "pendulum_lagrange"):
        robot = load_robot(name)
        assert robot.name == name and robot.mechanism.is_file()


def test_a_new_robot_folder_is_registered_by_existing(tmp_path):
    """A copy of the package with one more robot folder (and no installed metadata for it): the
    registry lists the robot and its model."""
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(REPO / "bondsim_ros", copy / "bondsim_ros", ignore=shutil.ignore_patterns("__pycache__"))
    for share in ("urdf", "config"):  # the checkout's shared files (bondsim_ros.paths)
        (copy / share).symlink_to(REPO / share)
    folder = copy / "bondsim_ros" / "robots" / "slidebot"
    folder.mkdir()
    (folder / "__init__.py").write_text(PLUGIN)
    (folder / "slide.yaml").write_text(SLIDE_YAML)
    (folder / "slidebot.xml").write_text(SLIDE_XML)
    code = ("from bondsim_ros.robots import available, load_robot; from bondsim_ros.models import registry; "
            "print(sorted(available())); print(load_robot('slidebot').description); "
            "print(registry()['slide_step'].description)")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(copy)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    names, description, model = proc.stdout.splitlines()
    assert "'slidebot'" in names and "'robotino'" in names
    assert description == "a block on a rail" and model.startswith("slidebot:")


def test_the_listings_name_each_system_not_a_number(capsys):
    """`models` and `robots` describe each built-in by what it is and whose paper it follows."""
    from bondsim_ros.cli import main

    assert main(["models"]) == 0 and main(["robots"]) == 0
    out = capsys.readouterr().out
    assert "seed" not in out.lower()
    rows = {line.split()[0]: line for line in out.splitlines()}
    for name, words in {"dualarm": "dual-arm mobile manipulator (Qian & Rahmani", "omni5dpo": "5DPO",
                        "arm3dof": "3-DOF planar arm (Boiadjiev et al.)", "robotino": "Damic & Cohodar Husic",
                        "slider_crank_lagrange": "Boudon et al.", "pendulum_minimal": "pendulum benchmark"}.items():
        assert words in rows[name], rows[name]


def test_the_models_help_says_it_lists_the_plugins_models_too(capsys):
    from bondsim_ros.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    listing = " ".join(capsys.readouterr().out.split())
    assert "models list the named models (built-in and installed plug-ins)" in listing
    with pytest.raises(SystemExit):
        main(["models", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the models of the built-in robots and of installed robot plug-ins" in text


def test_a_plugin_whose_robot_cannot_be_made_is_named(tmp_path):
    """A plug-in that imports but whose ROBOT() raises (its mechanism file misspelt): `robots`
    and `up --model` exit 2 naming the entry point and the error; `robots` ended in a traceback."""
    site = tmp_path / "site"
    install_plugin(site, "typo_plugin", "typobot = typo_plugin:ROBOT",
                   {"__init__.py": "def ROBOT():\n    raise FileNotFoundError('typobot/difbot.xml: no such file')\n"})
    for args in (("robots",), ("up", "--model", "typobot", "--duration", "1")):
        proc = cli(site, *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert "typobot = typo_plugin:ROBOT" in proc.stderr and "difbot.xml: no such file" in proc.stderr, proc.stderr


@pytest.mark.parametrize("plot, says", [
    ("def plot(result, out):\n    raise RuntimeError('figure code broken')\n",
     "its figure function (slidebot_plugin.plot) failed: RuntimeError: figure code broken"),
    ("def plot(result, out):\n    return result['no_such_column']\n",
     "its figure function (slidebot_plugin.plot) failed: KeyError"),
    ("def plot(result, out):\n    raise ValueError('bad value')\n",
     "its figure function (slidebot_plugin.plot) failed: ValueError: bad value"),
])
def test_a_plugins_figure_function_that_fails_is_named_not_a_traceback(tmp_path, plot, says):
    """A plug-in's plot that raised ended `simulate --plot` in a traceback, or, raising
    ValueError, was reported as a figure that could not be written."""
    site = tmp_path / "site"
    text = PLUGIN.replace("MODELS = [ModelEntry(\"slide_step\", build, \"slidebot: a 0.2 m step of the block\", ",
                          plot + "\n\nMODELS = [ModelEntry(\"slide_step\", build, \"slidebot: a 0.2 m step of the "
                          "block\", plot=plot, ")
    assert "plot=plot" in text
    install_plugin(site, "slidebot_plugin", "slidebot = slidebot_plugin:ROBOT",
                   {"__init__.py": text, "slide.yaml": SLIDE_YAML, "slidebot.xml": SLIDE_XML})
    proc = cli(site, "simulate", "slide_step", "--plot", str(tmp_path / "f.png"))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "cannot write" not in proc.stderr, proc.stderr
    assert "model 'slide_step': " + says in proc.stderr, proc.stderr
    assert not list(tmp_path.glob("f*.png"))


def test_a_plugin_entry_whose_plot_is_no_function_is_refused_naming_it(tmp_path):
    site = tmp_path / "site"
    text = PLUGIN.replace("defaults={\"t_end\": 1.0", "plot=\"figure.png\", defaults={\"t_end\": 1.0")
    install_plugin(site, "slidebot_plugin", "slidebot = slidebot_plugin:ROBOT",
                   {"__init__.py": text, "slide.yaml": SLIDE_YAML, "slidebot.xml": SLIDE_XML})
    for args in (("models",), ("simulate", "slide_step", "--plot", str(tmp_path / "f.png"))):
        proc = cli(site, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert "slidebot = slidebot_plugin:ROBOT" in proc.stderr and \
            "model 'slide_step': plot is str 'figure.png', not a function" in proc.stderr, proc.stderr


@pytest.mark.parametrize("change, says", [
    (('{"slide": "slide_q"}', '{"elbow": "slide_q"}'),
     "slidebot: joints: slidebot.xml has no moving joint 'elbow' (its joints: slide)"),
    (('HERE / "slidebot.xml"', 'HERE / "nosuch" / "slidebot.xml"'), "mechanism file"),
])
def test_a_python_binding_to_a_joint_or_file_the_mechanism_lacks_is_refused(tmp_path, change, says):
    """model_robot's joints were not checked against the XML: the twin published /joint_states
    for a joint the URDF does not have (robot_state_publisher moved nothing), where a YAML
    binding is refused; a missing mechanism file was met only when a twin was made."""
    site = tmp_path / "site"
    text = PLUGIN.replace(*change)
    assert text != PLUGIN
    install_plugin(site, "slidebot_plugin", "slidebot = slidebot_plugin:ROBOT",
                   {"__init__.py": text, "slide.yaml": SLIDE_YAML, "slidebot.xml": SLIDE_XML})
    proc = cli(site, "up", "--model", "slidebot", "--duration", "1")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and says in proc.stderr, proc.stderr


def test_a_plugin_robot_named_like_a_built_in_one_is_said_to_be_hidden(tmp_path):
    """The registry takes the first robot of a name (the built-ins come first): a plug-in's own
    arm3dof was never used, without a word."""
    site = tmp_path / "site"
    install_plugin(site, "slidebot_plugin", "arm3dof = slidebot_plugin:ROBOT",
                   {"__init__.py": PLUGIN, "slide.yaml": SLIDE_YAML, "slidebot.xml": SLIDE_XML})
    proc = cli(site, "robots")
    assert proc.returncode == 0, proc.stderr
    assert "warning: robot plug-in arm3dof = slidebot_plugin:ROBOT gives 'arm3dof' too; " \
           "arm3dof = bondsim_ros.robots.arm3dof:ROBOT gives the one used" in proc.stderr, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()}
    assert "a block on a rail" not in rows["arm3dof"]  # the built-in one is listed
    alone = cli(tmp_path, "robots")  # no plug-in installed: nothing to say
    assert alone.returncode == 0 and "warning" not in alone.stderr, alone.stderr
