"""ROS 2 Jazzy or Kilted from PyPI: ROS_DISTRO picks the wheels of setup.py's `ros` extra and of
tools/build_msgs.py's generators; the venv this test runs in holds the ones of its distro
(`bash tools/setup.sh` -> Kilted in .venv, `ROS_DISTRO=jazzy bash tools/setup.sh` -> Jazzy in
.venv-jazzy)."""
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# setup.py's keyword arguments without building anything: setuptools.setup replaced by a recorder
PROBE = """
import json, sys, setuptools
setuptools.setup = lambda **kw: print(json.dumps(kw["extras_require"]["ros"]))
sys.argv = ["setup.py"]
exec(compile(open("setup.py").read(), "setup.py", "exec"))
"""


def _ros_extra(distro):
    env = {k: v for k, v in os.environ.items() if k != "ROS_DISTRO"}
    if distro is not None:
        env["ROS_DISTRO"] = distro
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _build_msgs():
    spec = importlib.util.spec_from_file_location("build_msgs", ROOT / "tools" / "build_msgs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("distro,expected", [(None, "kilted"), ("kilted", "kilted"), ("jazzy", "jazzy"),
                                             ("humble", "kilted")])
def test_ros_distro_selects_the_wheels(distro, expected):
    wheels = [w for w in _ros_extra(distro) if w.startswith("ros-")]
    assert wheels and all(w.startswith(f"ros-{expected}-") for w in wheels), wheels
    assert f"ros-{expected}-rclpy" in wheels


def test_build_msgs_generators_follow_the_distro(monkeypatch):
    bm = _build_msgs()
    assert bm.DISTROS[0] == "kilted"
    for distro in bm.DISTROS:
        assert all(g.startswith(f"ros-{distro}-") or not g.startswith("ros-") for g in bm.GENERATORS[distro])
    # ament_cmake_ros's core package exists from Kilted on; Jazzy has only the whole one
    assert "ros-jazzy-ament-cmake-ros" in bm.GENERATORS["jazzy"]
    assert "ros-kilted-ament-cmake-ros-core" in bm.GENERATORS["kilted"]
    monkeypatch.setenv("ROS_DISTRO", "jazzy")
    assert bm.default_distro() == "jazzy"
    monkeypatch.setenv("ROS_DISTRO", "rolling")
    assert bm.default_distro() == "kilted"


def _venv_distro():
    found = {d.metadata["Name"].lower().split("-")[1] for d in importlib.metadata.distributions()
             if (d.metadata["Name"] or "").lower().startswith("ros-") and
             (d.metadata["Name"] or "").lower().endswith("-rclpy") and d.metadata["Name"].count("-") == 2}
    return found


def test_this_venv_holds_the_wheels_of_its_distro():
    """The names resolve on PyPI: every wheel of the `ros` extra for this venv's distro is installed."""
    pytest.importorskip("rclpy", reason="no ROS wheels in this environment")
    distros = _venv_distro()
    if not distros:
        pytest.skip("rclpy does not come from PyPI's ros-<distro>-rclpy here (a ROS install)")
    assert len(distros) == 1, f"wheels of several distros in one venv: {distros}"
    distro = distros.pop()
    for wheel in _ros_extra(distro):
        name = wheel.split(">")[0].split("=")[0]
        assert importlib.metadata.version(name), f"{name} missing in the {distro} venv"
    import rclpy  # noqa: F401 -- and the rclpy that imports is that distro's

    assert importlib.metadata.version(f"ros-{distro}-rclpy").split(".")[0] == {"jazzy": "7", "kilted": "9"}[distro]


def _tar(path, members):
    """A cache file of (name, bytes) regular files and (name, "->", target) links."""
    import io
    import tarfile

    with tarfile.open(path, "w") as tar:
        for name, *rest in members:
            info = tarfile.TarInfo(name)
            if rest[0] == "->":
                info.type, info.linkname = tarfile.SYMTYPE, rest[1]
                tar.addfile(info)
            else:
                info.size = len(rest[0])
                tar.addfile(info, io.BytesIO(rest[0]))


def test_a_cached_interface_build_unpacks_into_another_venv_with_its_paths(tmp_path, monkeypatch, capfd):
    """tools/build_msgs.py keeps what a build installed (CMake's install manifest) and unpacks it
    into another venv: text files that hold the first venv's path (CMake exports, setup scripts)
    get the new one, binaries and symlinks are kept as they are."""
    bm = _build_msgs()
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "cache"))
    old, new = tmp_path / "a" / ".venv", tmp_path / "b" / ".venv"
    files = {"share/pkg/cmake/export.cmake": f'set(_IMPORT_PREFIX "{old}")\n'.encode(),
             "lib/libpkg.so": b"\x7fELF\x00" + str(old).encode(),
             "lib/python3.11/site-packages/pkg/__init__.py": b"x = 1\n",
             "lib/python3.11/site-packages/pkg/__pycache__/__init__.cpython-311.pyc": b"\x00pyc"}
    for rel, data in files.items():
        (old / rel).parent.mkdir(parents=True, exist_ok=True)
        (old / rel).write_bytes(data)
    (old / "lib/libpkg.so.1").symlink_to("libpkg.so")
    manifest = [str(old / rel) for rel in files] + [str(old / "lib/libpkg.so.1")]
    bm.save_to_cache("pkg", "k1", old.resolve(), manifest)
    new.mkdir(parents=True)
    assert bm.restore_from_cache("pkg", "k1", new.resolve()) is not None
    assert (new / "share/pkg/cmake/export.cmake").read_text() == f'set(_IMPORT_PREFIX "{new.resolve()}")\n'
    assert (new / "lib/libpkg.so").read_bytes() == files["lib/libpkg.so"]  # a binary: byte for byte
    assert os.readlink(new / "lib/libpkg.so.1") == "libpkg.so"
    assert (new / "lib/python3.11/site-packages/pkg/__init__.py").read_bytes() == b"x = 1\n"
    assert not (new / "lib/python3.11/site-packages/pkg/__pycache__").exists()
    assert bm.restore_from_cache("pkg", "other-key", new.resolve()) is None  # nothing cached: build
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("members", [
    [("lib/ok.txt", b"ok"), ("../../outside.txt", b"no")],  # a path out of the venv
    [("lib/ok.txt", b"ok"), ("lib/d", "->", "/tmp"), ("lib/d/outside.txt", b"no")],  # a link out of it
    [("lib/ok.txt", b"ok"), ("lib/d", "->", "../../.."), ("lib/d/outside.txt", b"no")],
    [("share/pkg/ok.txt", b"ok"), ("share/up", "->", "../..")],
], ids=["path", "absolute-link", "relative-link", "link-only"])
def test_a_cached_build_that_reaches_out_of_the_venv_is_refused_and_leaves_nothing(tmp_path, monkeypatch, capfd,
                                                                                   members):
    bm = _build_msgs()
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "cache"))
    bm._cached("evil", "k").parent.mkdir(parents=True)
    _tar(bm._cached("evil", "k"), [(".bondsim_interfaces.json", b'{"prefix": "/x"}')] + members)
    venv = (tmp_path / "v" / ".venv")
    venv.mkdir(parents=True)
    assert bm.restore_from_cache("evil", "k", venv.resolve()) is None
    assert "cached build unreadable" in capfd.readouterr().err
    assert list(venv.iterdir()) == []  # no file, no link, no empty package folder left behind
    assert not any(p.name == "outside.txt" for p in tmp_path.rglob("*")) and not os.path.exists("/tmp/outside.txt")


@pytest.mark.parametrize("content", [b"not a tar", None], ids=["not-a-tar", "bad-metadata"])
def test_a_cache_file_that_cannot_be_read_means_a_build(tmp_path, monkeypatch, capfd, content):
    bm = _build_msgs()
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "cache"))
    target = bm._cached("broken", "k")
    target.parent.mkdir(parents=True)
    if content is None:
        _tar(target, [(".bondsim_interfaces.json", b"[]"), ("lib/x.txt", b"x")])
    else:
        target.write_bytes(content)
    venv = tmp_path / ".venv"
    venv.mkdir()
    assert bm.restore_from_cache("broken", "k", venv.resolve()) is None
    assert "cached build unreadable" in capfd.readouterr().err
    assert list(venv.iterdir()) == []


def test_older_builds_of_a_package_go_but_other_distros_and_pythons_stay(tmp_path, monkeypatch):
    bm = _build_msgs()
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path))
    keys = ["kilted-cpython-311-aaa", "kilted-cpython-311-bbb", "jazzy-cpython-311-ccc", "kilted-cpython-312-ddd"]
    bm._cached("pkg", keys[0]).parent.mkdir(parents=True)
    for k in keys:
        bm._cached("pkg", k).write_bytes(b"")
    bm._drop_older("pkg", keys[1])
    assert sorted(p.name for p in (tmp_path / "interfaces").iterdir()) == sorted(
        f"pkg-{k}.tar" for k in keys[1:])
