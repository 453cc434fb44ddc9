"""`simulate` runs a model it has run before from its build record (models/buildcache.py):
without building it again, and never with what a model file said before an edit."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.cli import main

ROOT = Path(__file__).resolve().parents[1]
RC_YAML = (Path(__file__).parent / "data" / "models" / "rc_step.yaml").read_text()
RC_PY = textwrap.dedent("""
    from bondsim_ros.bondgraph import C, EffortJunction, FlowJunction, Model, R, Recorder, Se

    def build():
        m = Model("rc_py")
        V0 = m.parameter("V0", 10.0)
        m.add(Se("V", V0), EffortJunction("loop", output=True), R("r", 2.0), FlowJunction("c", output=True),
              C("cap", 0.5), Recorder("rec", ["uc"]))
        m.bond("V", "loop"); m.bond("loop", "r"); m.bond("loop", "c"); m.bond("c", "cap")
        m.connect("c.out", "rec.uc")
        return m
""").lstrip()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(path))
    return path


def simulate(model, out, capsys):
    rc = main(["simulate", str(model), "--t-end", "1", "--dt-out", "0.1", "--csv", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    data = np.genfromtxt(out, delimiter=",", names=True)
    return data, err


@pytest.mark.parametrize("name, text", [("rc.yaml", RC_YAML), ("rc.py", RC_PY)])
def test_an_edited_model_file_runs_as_edited(tmp_path, cache, capsys, name, text):
    model = tmp_path / name
    model.write_text(text)
    first, err = simulate(model, tmp_path / "a.csv", capsys)
    assert "(cached)" not in err  # built: generated code and record written
    again, err = simulate(model, tmp_path / "b.csv", capsys)
    assert "(cached)" in err and (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    # a parameter value is not part of the generated code's key: the record must notice the edit
    model.write_text(text.replace("10.0", "20.0"))
    edited, err = simulate(model, tmp_path / "c.csv", capsys)
    assert "(cached)" in err  # same structure: same generated code, new parameter value
    np.testing.assert_allclose(edited["uc"], 2 * first["uc"], rtol=1e-6, atol=1e-9)
    assert edited["uc"][-1] > 1.0


def test_a_python_model_file_imports_a_module_beside_it_as_a_script_does(tmp_path, cache, capsys, monkeypatch):
    """`import values` in a .py model file finds values.py in the file's folder (given relative
    to the current one); the build record lists values.py, so an edit of it runs as edited. The
    folder is on sys.path only while the file runs, and another model file's `values` is its own."""
    text = RC_PY.replace("from bondsim_ros", "import values\nfrom bondsim_ros", 1)
    text = text.replace('m.parameter("V0", 10.0)', 'm.parameter("V0", values.V0)')
    for folder, v0 in (("a", "10.0"), ("b", "5.0")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "rc.py").write_text(text)
        (tmp_path / folder / "values.py").write_text(f"V0 = {v0}\n")
    monkeypatch.chdir(tmp_path)
    path = list(sys.path)
    first, err = simulate("a/rc.py", tmp_path / "1.csv", capsys)
    assert sys.path == path and "values" not in sys.modules
    again, err = simulate("a/rc.py", tmp_path / "2.csv", capsys)
    assert "(cached)" in err and (tmp_path / "1.csv").read_bytes() == (tmp_path / "2.csv").read_bytes()
    (tmp_path / "a" / "values.py").write_text("V0 = 20.0\n")
    edited, err = simulate("a/rc.py", tmp_path / "3.csv", capsys)
    np.testing.assert_allclose(edited["uc"], 2 * first["uc"], rtol=1e-6, atol=1e-9)
    other, err = simulate("b/rc.py", tmp_path / "4.csv", capsys)
    np.testing.assert_allclose(other["uc"], first["uc"] / 2, rtol=1e-6, atol=1e-9)
    assert first["uc"][-1] > 1.0


def test_a_second_run_builds_nothing(tmp_path, cache, capsys):
    """The second run finds the code from the model file alone: sympy (0.5-0.7 s to import) is
    not loaded, nor any other package a warm run does without (SciPy, matplotlib, numba,
    numpy.ma: 15 ms), and the output is the first run's to the last digit."""
    model = tmp_path / "rc.yaml"
    model.write_text(RC_YAML)
    simulate(model, tmp_path / "a.csv", capsys)
    heavy = ("sympy", "scipy", "matplotlib", "numba", "numpy.ma")
    code = ("import sys; from bondsim_ros.cli import main; "
            f"rc = main(['simulate', {str(model)!r}, '--t-end', '1', '--dt-out', '0.1', '-q', "
            f"'--csv', {str(tmp_path / 'b.csv')!r}]); "
            f"print(rc, *[m for m in {heavy!r} if m in sys.modules])")
    env = dict(os.environ, PYTHONPATH=str(ROOT), BONDSIM_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["0"], proc.stderr
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_record_names_sources_also_with_a_pycache_prefix(tmp_path, cache):
    """With $PYTHONPYCACHEPREFIX the compiled modules a build reads live outside __pycache__:
    the record lists their sources (the package's own, not sympy's), not some 500 .pyc files
    that every later run would hash before it starts."""
    model = tmp_path / "rc.yaml"
    model.write_text(RC_YAML)
    code = ("from bondsim_ros.cli import main; "
            f"main(['simulate', {str(model)!r}, '--t-end', '1', '--dt-out', '0.1', '-q', '--csv', '-'])")
    env = dict(os.environ, PYTHONPATH=str(ROOT), BONDSIM_CACHE_DIR=str(cache),
               PYTHONPYCACHEPREFIX=str(tmp_path / "pyc"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for _ in range(2):  # the second run reads the .pyc files the first one wrote
        (cache / "models").is_dir() and [p.unlink() for p in (cache / "models").glob("r_*.json")]
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    (record,) = (cache / "models").glob("r_*.json")
    files = json.loads(record.read_text())["files"]
    assert not [f for f in files if f.endswith(".pyc")]
    assert str(model.resolve()) in files and any(f.endswith("bondgraph/codegen.py") for f in files)


def test_no_cache_rebuilds(tmp_path, cache, capsys):
    model = tmp_path / "rc.yaml"
    model.write_text(RC_YAML)
    simulate(model, tmp_path / "a.csv", capsys)
    rc = main(["simulate", str(model), "--t-end", "1", "--dt-out", "0.1", "--no-cache",
               "--csv", str(tmp_path / "b.csv")])
    err = capsys.readouterr().err
    assert rc == 0 and "building equations" in err and "(cached)" not in err


@pytest.mark.parametrize("name", ["mass_spring_damper", "pendulum_zcp"])
def test_a_built_in_model_from_its_record_keeps_its_defaults_and_columns(tmp_path, cache, capsys, name):
    """From the record, a built-in model still gets its entry's suggested t_end/dt_out and its
    derived columns (pendulum_zcp: joint angles added after the run), as when it was built."""
    outs = []
    for run in ("a", "b"):
        out = tmp_path / f"{run}.csv"
        assert main(["simulate", name, "--csv", str(out)]) == 0
        outs.append(out.read_bytes())
        err = capsys.readouterr().err
    assert "(cached)" in err
    assert outs[0] == outs[1]


def test_two_checkouts_sharing_a_cache_each_run_their_own_model(tmp_path, cache):
    """A second copy of the package (another checkout, another install) whose built-in model
    differs runs its own model, not the first copy's build: a record found by the model's name
    alone listed the first copy's files, unchanged, and handed the second copy their build."""
    import shutil

    copies = {}
    for label, x0 in (("a", "0.1"), ("b", "0.3")):
        root = tmp_path / label
        shutil.copytree(ROOT / "bondsim_ros", root / "bondsim_ros", ignore=shutil.ignore_patterns("__pycache__"))
        for share in ("urdf", "config"):  # the checkout's shared files (bondsim_ros.paths)
            (root / share).symlink_to(ROOT / share)
        examples = root / "bondsim_ros" / "models" / "examples.py"
        text = examples.read_text()
        assert "x0=0.1, force=0.0" in text
        examples.write_text(text.replace("x0=0.1, force=0.0", f"x0={x0}, force=0.0"))
        copies[label] = root
    first = {}
    for label in ("a", "b", "a", "b"):  # each twice: the second run of each comes from its record
        out = tmp_path / f"{label}.csv"
        proc = subprocess.run([sys.executable, "-m", "bondsim_ros.cli", "simulate", "mass_spring_damper",
                               "--t-end", "1", "--dt-out", "0.5", "--csv", str(out)],
                              env={**os.environ, "PYTHONPATH": str(copies[label])}, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        x_start = np.genfromtxt(out, delimiter=",", names=True)["x"][0]
        first.setdefault(label, x_start)
        assert x_start == pytest.approx(0.1 if label == "a" else 0.3), (label, proc.stderr)
    assert first == {"a": pytest.approx(0.1), "b": pytest.approx(0.3)}


def test_code_gone_after_the_record_was_read_is_built_again(tmp_path, cache, capsys):
    """The record found the key, then the generated code left the cache (another process
    cleaning it) before it was loaded: the model is built on demand and runs, rather than
    the run failing."""
    from bondsim_ros.models import buildcache

    model = tmp_path / "rc.yaml"
    model.write_text(RC_YAML)
    simulate(model, tmp_path / "a.csv", capsys)
    resolved = buildcache.resolve(str(model))
    assert resolved.key is not None  # from the record: nothing built yet
    for stale in (cache / "models").glob(f"m_{resolved.key}*"):
        stale.unlink()
    compiled = resolved.compile()
    assert compiled.key == resolved.key and not compiled.from_cache
    again, err = simulate(model, tmp_path / "b.csv", capsys)
    assert "(cached)" in err
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_dependencies_are_listed_by_their_real_paths(tmp_path):
    """A build's files are recorded under os.path.realpath of what it opened: through a linked
    folder, a linked file, a relative path and '..' alike (the real paths of folders are
    worked out once per folder, not per file)."""
    from bondsim_ros.models import buildcache

    real_dir = tmp_path / "real" / "deep"
    real_dir.mkdir(parents=True)
    for name in ("a.yaml", "b.yaml", "target.yaml"):
        (real_dir / name).write_text(name)
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (real_dir / "link.yaml").symlink_to(real_dir / "target.yaml")
    opened = {str(tmp_path / "linked" / "deep" / "a.yaml"), str(tmp_path / "linked" / "deep" / "link.yaml"),
              str(tmp_path / "real" / "deep" / ".." / "deep" / "b.yaml"),
              os.path.relpath(tmp_path / "linked" / "deep" / "b.yaml")}
    files = buildcache._dependencies(opened)
    for path in opened:
        assert os.path.realpath(path) in files
    mine = {f for f in files if f.startswith(os.path.realpath(tmp_path))}
    assert mine == {os.path.realpath(real_dir / n) for n in ("a.yaml", "b.yaml", "target.yaml")}
