#!/usr/bin/env python3
"""Generate the ROS 2 interface packages that PyPI's ROS wheels lack into a venv: tf2_msgs (the
nodes publish /tf), composition_interfaces (launch_ros imports it) and simulation_interfaces
(dynamics_node serves the simulation interfaces standard; its files are vendored, with their
licence, in tools/msgs/simulation_interfaces) and rto_msgs (the Robotino driver's service types,
which dynamics_node's driver interface serves; tools/msgs/rto_msgs/README.md says where they
come from).

    python tools/build_msgs.py --venv .venv [--distro kilted|jazzy]

The distro (default: $ROS_DISTRO if it is one of DISTROS, else kilted) picks the generator
wheels (ros-<distro>-*); it must be the distro of the venv's rclpy.
Idempotent: does nothing for a package that already imports in the venv, or that a ROS install
provides (AMENT_PREFIX_PATH). A package built once is kept in the user's cache
(``$BONDSIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/bondsim_ros``, else ``~/.cache/bondsim_ros``,
folder ``interfaces/``), keyed by its interface files, the distro, the Python ABI and the
versions of everything rclpy and the message wheels it depends on need at run time: another
venv of that kind (a new clone) unpacks it in a second instead of building it again
(simulation_interfaces alone takes minutes), and keeps it once its types' libraries load.
``--no-cache`` builds anyway. Otherwise it installs the rosidl generator wheels, points the
include folders that the message wheels' CMake exports hard-code from their build host
(/opt/python/cp311-cp311/...) at this venv's Python and numpy, and runs CMake on a tiny
package (the interface files in tools/msgs/<package>), installing into the venv: the Python
package into site-packages, the type-support libraries into <venv>/lib, which the wheels'
bootstrapper already puts on LD_LIBRARY_PATH.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = {"tf2_msgs": {"module": "tf2_msgs.msg", "deps": ["geometry_msgs"]},
            "composition_interfaces": {"module": "composition_interfaces.srv", "deps": ["rcl_interfaces"]},
            "simulation_interfaces": {"module": "simulation_interfaces.srv",
                                      "deps": ["builtin_interfaces", "std_msgs", "geometry_msgs", "action_msgs"]},
            # the Robotino driver's service and message types (dynamics_node's driver interface)
            "rto_msgs": {"module": "rto_msgs.srv", "deps": ["std_msgs"]}}
DISTROS = ("kilted", "jazzy")  # ROS 2 distros with wheels on PyPI; the first is the default
# ament_cmake_ros's core part is its own package from Kilted on; Jazzy has the whole one
GENERATORS = {d: [f"ros-{d}-rosidl-default-generators", f"ros-{d}-ament-cmake", f"ros-{d}-ament-cmake-python",
                  f"ros-{d}-ament-package", "catkin-pkg", f"ros-{d}-rosidl-core-generators",
                  f"ros-{d}-ament-cmake-include-directories",
                  f"ros-{d}-ament-cmake-ros-core" if d != "jazzy" else f"ros-{d}-ament-cmake-ros"]
              for d in DISTROS}


def default_distro() -> str:
    env = os.environ.get("ROS_DISTRO", "")
    return env if env in DISTROS else DISTROS[0]


BUILD_HOST = "/opt/python/cp311-cp311"


def say(msg: str) -> None:
    print(f"[build_msgs] {msg}", file=sys.stderr, flush=True)


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


# imports a generated module and loads the type support of each of its types, as a publisher or
# service would (importing the module alone maps none of its libraries)
_LOADS = """
import importlib
module = importlib.import_module(%r)
types = [type(getattr(module, n)) for n in dir(module) if not n.startswith("_")]
loaded = [t.__import_type_support__() for t in types if hasattr(t, "__import_type_support__")]
raise SystemExit(0 if loaded else 3)
"""


def importable(py: Path, module: str) -> bool:
    """``module`` imports in the venv and its types' libraries load."""
    r = subprocess.run([str(py), "-c", _LOADS % module], capture_output=True, text=True)
    return r.returncode == 0


def on_ros_install(pkg: str) -> bool:
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        if (Path(prefix) / "share" / pkg / "package.xml").exists() and ".venv" not in prefix:
            return True
    return False


def query(py: Path, code: str) -> str:
    return subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def patch_build_host_paths(venv: Path, py: Path) -> int:
    """Replace the wheel build host's include folders in the venv's CMake exports."""
    py_inc = query(py, "import sysconfig; print(sysconfig.get_paths()['include'])")
    np_inc = query(py, "import numpy; print(numpy.get_include())")
    if not (Path(py_inc) / "Python.h").exists():
        raise SystemExit(f"[build_msgs] Python headers missing ({py_inc}/Python.h): install python3-dev")
    repl = {
        f"{BUILD_HOST}/lib/python3.11/site-packages/numpy/_core/include": np_inc,
        f"{BUILD_HOST}/include/python3.11": py_inc,
    }
    count = 0
    for f in (venv / "share").glob("*/cmake/*.cmake"):
        text = f.read_text()
        if BUILD_HOST not in text:
            continue
        for old, new in repl.items():
            text = text.replace(old, new)
        f.write_text(text)
        count += 1
    return count


MISSING = re.compile(r'Could not find a package configuration file provided\s+by\s+"([A-Za-z0-9_]+)"')


def build_package(name: str, spec: dict, venv: Path, py: Path, log: Path, distro: str) -> list:
    """Configure, build, install; a CMake package the wheels lack is pip-installed and retried.
    Returns the files installed."""
    for _ in range(20):
        start = log.stat().st_size if log.exists() else 0
        try:
            return [f for f in _build_once(name, spec, venv, py, log) if f]
        except RuntimeError as exc:
            text = log.read_text()[start:]
            missing = MISSING.search(text)
            if not missing:
                raise SystemExit(f"[build_msgs] {exc}; see {log}") from None
            wheel = f"ros-{distro}-" + missing.group(1).replace("_", "-")
            say(f"CMake needs {missing.group(1)}: pip install {wheel}")
            r = subprocess.run([str(py), "-m", "pip", "install", "-q", wheel], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"[build_msgs] {name} needs {missing.group(1)} and pip cannot install {wheel}: "
                                 f"{r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}") from None
    raise SystemExit(f"[build_msgs] {name}: too many missing CMake packages; see {log}")


def cache_root() -> Path:
    """The user's bondsim_ros cache, as the package finds it (bondsim_ros/paths.py)."""
    if os.environ.get("BONDSIM_CACHE_DIR"):
        return Path(os.environ["BONDSIM_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bondsim_ros"


# the versions of the distributions that the given ones need, transitively (their runtime: the
# rosidl libraries the generated type supports link against, numpy, whose headers they read),
# with the interpreter's ABI tag and the machine; run in the venv's Python
_CLOSURE = """
import importlib.metadata as m, platform, re, sys
seen, todo = {}, %r
while todo:
    name = todo.pop()
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        continue
    try:
        dist = m.distribution(name)
    except m.PackageNotFoundError:
        seen[key] = None
        continue
    seen[key] = dist.version
    todo += [re.match(r"[A-Za-z0-9._-]+", r).group(0) for r in dist.requires or () if "extra ==" not in r]
print(sorted(seen.items()), sys.implementation.cache_tag, platform.machine())
"""


def cache_key(name: str, spec: dict, py: Path, distro: str) -> str:
    """What a built package depends on: its interface files, the distro, the venv's Python ABI
    and the versions of everything rclpy and the message wheels it names need at run time
    (their headers and the type-support libraries the build links against)."""
    wheels = [f"ros-{distro}-rclpy"] + [f"ros-{distro}-{d.replace('_', '-')}" for d in spec["deps"]]
    versions = query(py, _CLOSURE % (wheels,))
    h = hashlib.sha256(f"{name}\n{distro}\n{versions}\n{sorted(spec['deps'])}\n".encode())
    h.update(f"{CMAKELISTS}\n{CMAKE_FLAGS}\n".encode())  # the CMake project and its configuration
    for f in sorted((HERE / "msgs" / name).rglob("*")):
        if f.is_file():
            h.update(f.relative_to(HERE).as_posix().encode() + b"\0" + f.read_bytes())
    abi = versions.rsplit(" ", 2)[-2]  # (the closure's line ends with the ABI tag and the machine)
    return f"{distro}-{abi}-{h.hexdigest()[:20]}"


def _cached(name: str, key: str) -> Path:
    return cache_root() / "interfaces" / f"{name}-{key}.tar"


def _drop_older(name: str, key: str) -> None:
    """Builds of ``name`` for the same distro and Python ABI under other keys (older interface
    files or wheels); another distro's or Python's are kept."""
    keep = _cached(name, key)
    for old in keep.parent.glob(f"{name}-{key.rsplit('-', 1)[0]}-*.tar"):
        if old != keep:
            old.unlink(missing_ok=True)


def save_to_cache(name: str, key: str, venv: Path, installed: list) -> None:
    """The files the build installed (CMake's install manifest), relative to the venv, with the
    venv's path, which some of them hold (CMake exports, setup scripts), for the unpacking to
    replace. Written to a temporary name and renamed: a concurrent setup sees all or nothing."""
    import io
    import tarfile

    target = _cached(name, key)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    try:
        with tarfile.open(tmp, "w") as tar:
            meta = json.dumps({"prefix": str(venv)}).encode()
            info = tarfile.TarInfo(".bondsim_interfaces.json")
            info.size = len(meta)
            tar.addfile(info, io.BytesIO(meta))
            for f in installed:
                rel = Path(os.path.abspath(f)).relative_to(venv)  # (not resolved: a symlink stays one)
                if "__pycache__" not in rel.parts:
                    tar.add(str(venv / rel), arcname=rel.as_posix(), recursive=False)
        os.replace(tmp, target)
    except (OSError, ValueError) as exc:  # a cache that cannot be written costs the next build only
        tmp.unlink(missing_ok=True)
        say(f"{name}: not cached ({exc})")


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def remove_restored(written: list, made: list) -> None:
    """Take back a restore: the files and links written, then the folders made for them (an
    empty package folder left behind would import as a namespace package)."""
    for f in written:
        if os.path.lexists(f):
            os.unlink(f)
    for d in sorted(made, key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()
        except OSError:  # not empty: something else is in it
            pass


def restore_from_cache(name: str, key: str, venv: Path):
    """Unpack a cached build into ``venv``, its old venv path replaced by this one in the text
    files; (files written, folders made), or None when there is none or it cannot be read (then
    nothing of it is left). Nothing is written outside the venv: a member whose path or link
    leads out of it, or a file to be written through a link, refuses the whole file."""
    import tarfile

    cached = _cached(name, key)
    if not cached.exists():
        return None
    root = os.path.realpath(venv)
    written, made = [], []
    try:
        with tarfile.open(cached) as tar:
            members = tar.getmembers()
            meta = json.load(tar.extractfile(".bondsim_interfaces.json"))
            old = meta["prefix"].encode()
            for m in members:
                if m.name == ".bondsim_interfaces.json":
                    continue
                dest = os.path.normpath(os.path.join(root, m.name))
                if not (m.isfile() or m.issym()) or not _inside(dest, root) or dest == root:
                    raise ValueError(f"unexpected member {m.name!r}")
                if m.issym() and (os.path.isabs(m.linkname) or
                                  not _inside(os.path.normpath(os.path.join(os.path.dirname(dest), m.linkname)), root)):
                    raise ValueError(f"link {m.name!r} -> {m.linkname!r} leads out of the venv")
                parent = Path(os.path.dirname(dest))
                missing = [d for d in (parent, *parent.parents) if _inside(str(d), root) and not d.exists()]
                parent.mkdir(parents=True, exist_ok=True)
                made += missing
                if not _inside(os.path.realpath(parent), root):  # a folder that is a link out of the venv
                    raise ValueError(f"member {m.name!r} would be written outside the venv")
                if os.path.lexists(dest):
                    os.unlink(dest)  # (never written through: a link there is replaced, not followed)
                if m.issym():
                    os.symlink(m.linkname, dest)
                else:
                    data = tar.extractfile(m).read()
                    if old in data and b"\0" not in data:
                        data = data.replace(old, root.encode())
                    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, m.mode & 0o755)
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(data)
                written.append(dest)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, tarfile.TarError) as exc:
        say(f"{name}: cached build unreadable ({exc}); building it")
        remove_restored(written, made)
        return None
    return written, made


# the package's CMake project (its interface files listed), and how it is configured
CMAKELISTS = """cmake_minimum_required(VERSION 3.8)
project({name})
find_package(ament_cmake REQUIRED)
find_package(rosidl_default_generators REQUIRED)
{finds}
rosidl_generate_interfaces(${{PROJECT_NAME}} {msgs} DEPENDENCIES {deps})
ament_export_dependencies(rosidl_default_runtime)
ament_package()
"""
CMAKE_FLAGS = ("-DBUILD_TESTING=OFF", "-DCMAKE_BUILD_TYPE=Release")


def _build_once(name: str, spec: dict, venv: Path, py: Path, log: Path) -> list:
    src = HERE / "msgs" / name
    with tempfile.TemporaryDirectory(prefix=f"bondsim_{name}_") as tmp:
        pkg = Path(tmp) / name
        shutil.copytree(src, pkg)
        deps = " ".join(spec["deps"])
        msgs = " ".join(f'"{f.parent.name}/{f.name}"' for f in sorted(pkg.glob("*/*"))
                        if f.suffix in (".msg", ".srv", ".action"))
        finds = "\n".join(f"find_package({d} REQUIRED)" for d in spec["deps"])
        (pkg / "CMakeLists.txt").write_text(CMAKELISTS.format(name=name, finds=finds, msgs=msgs, deps=deps))
        build = Path(tmp) / "build"
        env = dict(os.environ)
        env["AMENT_PREFIX_PATH"] = str(venv)
        env["CMAKE_PREFIX_PATH"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["LD_LIBRARY_PATH"] = f"{venv / 'lib'}{os.pathsep}{env.get('LD_LIBRARY_PATH', '')}"
        env["_ROS_WHEELS_BOOTSTRAP_COMPLETE"] = "1"  # the generators run our python: no re-exec
        site = query(py, "import sysconfig; print(sysconfig.get_paths()['purelib'])")
        cmds = [
            ["cmake", "-S", str(pkg), "-B", str(build), f"-DCMAKE_INSTALL_PREFIX={venv}",
             f"-DPython3_EXECUTABLE={py}", f"-DPYTHON_EXECUTABLE={py}",
             f"-DPYTHON_INSTALL_DIR={os.path.relpath(site, venv)}", *CMAKE_FLAGS],
            ["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2)],
            ["cmake", "--install", str(build)],
        ]
        with open(log, "a") as fh:
            for step, cmd in zip(("configure", "build", "install"), cmds):
                fh.write(f"\n$ {' '.join(cmd)}\n")
                fh.flush()
                r = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
                if r.returncode != 0:
                    raise RuntimeError(f"{name}: CMake {step} failed")
        manifest = build / "install_manifest.txt"
        return manifest.read_text().split("\n") if manifest.exists() else []


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", default=str(HERE.parent / ".venv"))
    ap.add_argument("--force", action="store_true", help="rebuild even if importable")
    ap.add_argument("--no-cache", action="store_true", help="build even where the cache has the package")
    ap.add_argument("--distro", choices=DISTROS, default=default_distro(),
                    help="ROS 2 distro of the venv's wheels (default: $ROS_DISTRO, else %(default)s)")
    args = ap.parse_args(argv)
    venv = Path(args.venv).resolve()
    py = venv_python(venv)
    if not py.exists():
        raise SystemExit(f"[build_msgs] no venv at {venv}")
    todo = [n for n, spec in PACKAGES.items()
            if args.force or not (importable(py, spec["module"]) or on_ros_install(n))]
    if not todo:
        return 0
    tic = time.monotonic()
    keys = {name: cache_key(name, PACKAGES[name], py, args.distro) for name in todo}
    if not (args.force or args.no_cache):
        for name in list(todo):
            restored = restore_from_cache(name, keys[name], venv)
            if restored is None:
                continue
            if importable(py, PACKAGES[name]["module"]):
                say(f"{name} ready, from the cache ({time.monotonic() - tic:.1f} s)")
                todo.remove(name)
            else:
                remove_restored(*restored)
                say(f"{name}: the cached build does not load here; building it")
    if not todo:
        return 0
    if shutil.which("cmake") is None or shutil.which("g++") is None:
        raise SystemExit("[build_msgs] cmake and g++ are needed (apt-get install cmake g++)")
    say(f"generating {', '.join(todo)} into {venv} (ROS 2 {args.distro})")
    subprocess.run([str(py), "-m", "pip", "install", "-q", *GENERATORS[args.distro]], check=True)
    patched = patch_build_host_paths(venv, py)
    if patched:
        say(f"pointed {patched} CMake export files at this venv's Python and numpy headers")
    log = venv / "build_msgs.log"
    for name in todo:
        installed = build_package(name, PACKAGES[name], venv, py, log, args.distro)
        if not importable(py, PACKAGES[name]["module"]):
            raise SystemExit(f"[build_msgs] {name} built but does not import; see {log}")
        if not args.no_cache:
            save_to_cache(name, keys[name], venv, installed)
            _drop_older(name, keys[name])
        say(f"{name} ready ({time.monotonic() - tic:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
