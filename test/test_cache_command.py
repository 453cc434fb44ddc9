"""``bondsim-ros cache``: old entries go, used ones and the newest solver core stay, and a model
whose code was removed is simply built again."""
import os
import subprocess
import sys
import time
from pathlib import Path

from bondsim_ros.bondgraph import cache

ROOT = Path(__file__).resolve().parent.parent
DAY = 86400.0


def touch(path: Path, age_days: float, now: float, size: int = 10) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (now - age_days * DAY, now - age_days * DAY))
    return path


def test_prune_removes_whole_old_entries_and_keeps_the_newest_core(tmp_path):
    now = time.time()
    old_key, new_key = "m_" + "a" * 24, "m_" + "b" * 24
    old = [touch(tmp_path / "models" / f"{old_key}{s}", 40, now) for s in (".c", ".json", "_0123456789.so")]
    # an entry is used as a whole: its library read yesterday keeps its 40-day-old source
    new = [touch(tmp_path / "models" / f"{new_key}.c", 40, now),
           touch(tmp_path / "models" / f"{new_key}_99.so", 1, now)]
    record = touch(tmp_path / "models" / "r_0f0f.json", 60, now)
    cores = [touch(tmp_path / "solver" / f"bdf_core_{h}.so", age, now) for h, age in (("old", 90), ("newest", 45))]
    files, size = cache.remove(30 * DAY, tmp_path, now=now)
    assert (files, size) == (5, 50)
    assert not any(p.exists() for p in old + [record, cores[0]])
    assert all(p.exists() for p in new + [cores[1]])
    assert cache.usage(tmp_path) == {"models": (2, 20), "solver": (1, 10)}


def test_every_folder_the_package_writes_is_listed_pruned_and_cleared(tmp_path):
    """The converted URDFs, RViz views and IDA builds are entries as the generated code is: a
    subfolder is one entry, old when none of its files was used. What else the cache's folder
    holds is not the package's and stays."""
    now = time.time()
    urdf_old = [touch(tmp_path / "urdf" / "Arm-0123" / f, 40, now) for f in ("Arm.urdf", "Arm/meshes/cone.stl")]
    urdf_new = [touch(tmp_path / "urdf" / "Arm-4567" / "Arm.urdf", 40, now),
                touch(tmp_path / "urdf" / "Arm-4567" / "Arm" / "meshes" / "cone.stl", 1, now)]
    rviz = [touch(tmp_path / "rviz" / f"arm-{k}.rviz", age, now) for k, age in (("old", 40), ("new", 1))]
    ida = touch(tmp_path / "c_ida" / "3fe8" / "model.c", 40, now)
    foreign = [touch(tmp_path / "notes.txt", 400, now), touch(tmp_path / "mine" / "data.csv", 400, now)]
    assert cache.usage(tmp_path) == {"urdf": (4, 40), "rviz": (2, 20), "c_ida": (1, 10)}
    r = run("cache", env_root=tmp_path)
    assert r.returncode == 0, r.stderr
    # (host/: the compiler and CPU facts that naming the solver core, the listing's last line, remembers)
    listed = [line.split()[:2] for line in r.stdout.splitlines()[1:-1] if line.split()[0] != "host"]
    assert listed == [["c_ida", "1"], ["rviz", "2"], ["urdf", "4"]]
    assert r.stdout.splitlines()[-1].startswith("solver core: ")
    host = cache.usage(tmp_path).get("host", (0, 0))
    assert cache.remove(30 * DAY, tmp_path, now=now) == (4, 40)  # (host/'s facts are new)
    assert not any(p.exists() for p in urdf_old + [rviz[0], ida]) and not (tmp_path / "urdf" / "Arm-0123").exists()
    assert all(p.exists() for p in urdf_new + rviz[1:] + foreign)
    r = run("cache", "--clear", env_root=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"removed {3 + host[0]} files (0.0 MB) "
                               f"from {tmp_path}\n") and cache.usage(tmp_path) == {}
    assert not list((tmp_path / "urdf").iterdir()) and all(p.exists() for p in foreign)


def run(*args, env_root):
    env = dict(os.environ, BONDSIM_CACHE_DIR=str(env_root), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "bondsim_ros.cli", *args], env=env, capture_output=True,
                          text=True, timeout=600)


def test_clear_empties_the_cache_and_the_next_run_builds_again(tmp_path):
    csv1, csv2 = tmp_path / "a.csv", tmp_path / "b.csv"
    r = run("simulate", "mass_spring_damper", "--t-end", "1", "--csv", str(csv1), "-q", env_root=tmp_path / "c")
    assert r.returncode == 0, r.stderr
    assert cache.usage(tmp_path / "c")["models"][0] > 0
    r = run("cache", "--clear", env_root=tmp_path / "c")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("removed ") and cache.usage(tmp_path / "c") == {}
    r = run("simulate", "mass_spring_damper", "--t-end", "1", "--csv", str(csv2), "-q", env_root=tmp_path / "c")
    assert r.returncode == 0, r.stderr
    assert csv1.read_text() == csv2.read_text()


def test_a_bad_age_is_one_line_exit_2(tmp_path):
    r = run("cache", "--prune", "--older-than", "nan", env_root=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["bondsim-ros cache: error: --older-than nan: expected a finite "
                                             "number of days >= 0"]
    # an age limit where nothing takes it: --clear removes every entry (it used to ignore the limit)
    (tmp_path / "models").mkdir()
    kept = touch(tmp_path / "models" / "m_x.c", 1.0, time.time())
    r = run("cache", "--clear", "--older-than", "5", env_root=tmp_path)
    assert r.returncode == 2 and kept.exists()
    assert r.stderr.strip().splitlines() == ["bondsim-ros cache: error: --older-than is the age limit of --prune "
                                             "(--clear removes every entry)"]


def test_a_cache_folder_that_cannot_hold_files_is_one_line_exit_2(tmp_path):
    """$BONDSIM_CACHE_DIR naming a file, or a place no folder can be made in, is said by name
    before any work, by every command that builds or loads compiled code (it used to end in a
    traceback)."""
    afile = tmp_path / "afile"
    afile.write_text("")
    for root, why in ((afile, "not a folder"), (Path("/proc/bondsim-cache"), "No such file or directory")):
        for argv in (["simulate", "dc_motor", "--t-end", "0.1", "--dt-out", "0.05"],):
            r = run(*argv, env_root=root)
            assert r.returncode == 2, r.stderr
            assert r.stderr.strip().splitlines() == [
                f"bondsim-ros {argv[0]}: error: cache folder {root} ($BONDSIM_CACHE_DIR) cannot hold the compiled "
                f"models: {why}"], r.stderr


def test_the_listing_only_reads(tmp_path):
    """`bondsim-ros cache` made the cache folder and wrote the compiler's and CPU's facts into
    host/ to name the solver core: showing the cache changed it."""
    root = tmp_path / "cache"
    r = run("cache", env_root=root)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == str(root) and r.stdout.splitlines()[-1].startswith("solver core: ")
    assert not root.exists()
    (root / "models").mkdir(parents=True)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    r = run("cache", env_root=root)
    assert r.returncode == 0, r.stderr
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_commands_without_compiled_code_need_no_cache_folder(tmp_path):
    """A cache folder that cannot be made ($BONDSIM_CACHE_DIR under a file) stopped every command
    but models, robots and draw with "cannot hold the compiled models": converting, rendering,
    reading a bag and showing or clearing the cache use no compiled code. Each goes on to its own
    work (here: its missing input, said by name) and makes no cache folder."""
    afile = tmp_path / "afile"
    afile.write_text("")
    root = afile / "cache"
    for argv, said in ((["xml2urdf", "none.xml", "-o", str(tmp_path / "o.urdf")], "none.xml"),
                       (["render", "none.xml", "-o", str(tmp_path / "o.png")], "none.xml"),
                       (["bag2csv", str(tmp_path / "nobag"), "-o", str(tmp_path / "o.csv")], "nobag"),
                       (["draw", "none.yaml", "-o", str(tmp_path / "o.svg")], "none.yaml")):
        r = run(*argv, env_root=root)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and said in lines[0], r.stderr
        assert "cache folder" not in r.stderr, r.stderr
    for argv in (["models"], ["robots"], ["cache"], ["cache", "--prune"], ["cache", "--clear"]):
        r = run(*argv, env_root=root)
        assert r.returncode == 0 and "cache folder" not in r.stderr, (argv, r.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_build_in_progress_is_not_an_entry(tmp_path):
    """native.build_library compiles in a hidden folder beside its library: --clear while another
    process builds must leave it (rmtree made that build fail), and the listing does not count it."""
    from bondsim_ros.bondgraph import cache

    building = tmp_path / "solver" / ".bdf_core_abc-xyz"
    building.mkdir(parents=True)
    (building / "bdf_core.c").write_text("int x;\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / ".m_0123.c.tmp").write_text("partial")
    assert cache.remove(None, tmp_path) == (0, 0)
    assert (building / "bdf_core.c").exists() and (tmp_path / "models" / ".m_0123.c.tmp").exists()
    assert cache.usage(tmp_path) == {}


def test_the_listing_says_which_solver_core_a_simulation_loads(tmp_path, monkeypatch):
    """The listing names the core file a simulation would load and where it is (the install's
    folder, which --clear leaves, or the cache), found without compiling one."""
    from bondsim_ros.cache_commands import _core_found, _core_text
    from bondsim_ros.solver import _ccore, native

    def _core():
        return _core_text(_core_found())

    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_ccore, "PREBUILT", tmp_path / "prebuilt")
    assert _core() == "not compiled for this machine yet; the first simulation compiles it into the cache"
    assert not (tmp_path / "cache" / "solver").exists()  # (nothing compiled to find that out)
    flags, libs = _ccore._configs()[0]
    for folder, where in ((tmp_path / "cache" / "solver", "in the cache"),
                          (tmp_path / "prebuilt", "installed with the package")):
        lib = native.library_path(_ccore.source(), "bdf_core", folder, flags, libs)
        touch(lib, 0.0, time.time())
        klu = ", sparse LU by KLU" if libs else ", sparse LU of its own"
        assert _core() == f"{where}, for this CPU (-march=native){klu}: {lib}"
    # a core whose -march=native build failed on this compiler: the portable one is loaded
    for folder in (tmp_path / "cache" / "solver", tmp_path / "prebuilt"):
        for old in folder.iterdir():
            old.unlink()
    monkeypatch.setenv("BONDSIM_NO_KLU", "1")
    monkeypatch.setattr(_ccore, "_klu_flags", [])
    native_flags, _ = _ccore._configs()[0]
    touch(_ccore._failed_mark(tmp_path / "cache" / "solver", native_flags, ()), 0.0, time.time())
    portable = native.library_path(_ccore.source(), "bdf_core", tmp_path / "cache" / "solver", *_ccore._configs()[1])
    touch(portable, 0.0, time.time())
    assert _core() == f"in the cache, portable, sparse LU of its own: {portable}"
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert _core().startswith("none (C compiler ")
