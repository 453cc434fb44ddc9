"""bondsim_ros: an ament_python package that also installs with plain pip.

On a ROS 2 install `colcon build` uses the data_files below (launch, urdf, config) and puts
the console scripts under lib/bondsim_ros so `ros2 run bondsim_ros <node>` finds them. In a
venv `pip install .[ros,test]` gives the same commands on PATH.
"""
import os
import sys
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.develop import develop

try:  # setuptools >= 70.1 has its own; before, the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:  # no wheel building here (colcon's `setup.py build install` needs none)
        bdist_wheel = None

PACKAGE = "bondsim_ros"
# setup.py runs in its own folder (pip, colcon); a caller that execs it may set no __file__
HERE = os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else os.getcwd()


def tree(folder):
    """data_files entries for every file below `folder`, keeping the sub-folder layout."""
    entries = {}
    for path in glob(os.path.join(folder, "**", "*"), recursive=True):
        if os.path.isfile(path):
            dest = os.path.join("share", PACKAGE, os.path.dirname(path))
            entries.setdefault(dest, []).append(path)
    return sorted(entries.items())


def robot_entry_points():
    """One entry point per robot folder (bondsim_ros/robots/<name>/__init__.py, its ROBOT): the
    same scan as bondsim_ros.robots.builtin_plugins, so a new folder is registered by existing."""
    robots = os.path.join(HERE, PACKAGE, "robots")
    return [f"{name} = {PACKAGE}.robots.{name}:ROBOT" for name in sorted(os.listdir(robots))
            if os.path.isfile(os.path.join(robots, name, "__init__.py")) and not name.startswith(("_", "."))]


def build_solver_core(package_root):
    """Compile the C solver core into ``<package_root>/bondsim_ros/solver/prebuilt`` (gcc, about
    1 s), so that a user's first run compiles only its model. Without a compiler, or where it
    refuses the core, the install goes on and the core is built on first use (the message says
    why). The build is _ccore's own (flags, KLU, the name the loader checks); _ccore and
    native import nothing but the standard library, so this needs no dependency installed."""
    sys.path.insert(0, HERE)
    bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True  # no __pycache__ left in the sources by a build
    try:
        from bondsim_ros.solver import _ccore

        _ccore.install_build(os.path.join(package_root, PACKAGE, "solver", _ccore.PREBUILT.name))
    except Exception as exc:  # noqa: BLE001 - whatever it is, the package still installs
        print(f"bondsim_ros: the solver core was not compiled now ({exc}); "
              "it is compiled on first use instead", file=sys.stderr)
    finally:
        sys.dont_write_bytecode = bytecode
        sys.path.remove(HERE)


class BuildPyWithCore(build_py):
    """build_py (pip, colcon build), then the solver core beside the built modules; in an
    editable install (``pip install -e``) beside the sources, where the package is imported from."""

    def run(self):
        super().run()
        build_solver_core(HERE if self._editable() else self.build_lib)

    def _editable(self):
        return getattr(self, "editable_mode", False)

    def get_outputs(self, *args, **kwargs):
        # the core among the files built, so that an install's record (colcon's install.log,
        # which its next build uninstalls by) lists it
        out = super().get_outputs(*args, **kwargs)
        if not self._editable():
            out += sorted(glob(os.path.join(self.build_lib, PACKAGE, "solver", "prebuilt", "bdf_core_*")))
        return out


class DevelopWithCore(develop):
    """``setup.py develop`` (colcon build --symlink-install), then the solver core beside the sources."""

    def run(self):
        super().run()
        if not getattr(self, "uninstall", False):
            build_solver_core(HERE)


def bdist_wheel_with_core():
    """bdist_wheel for a wheel holding a compiled library (the solver core, loaded with ctypes,
    no Python extension): tagged for this platform (py3-none-<platform>), not "any". Only the
    wheel: `setup.py install` (colcon) keeps installing into purelib, where colcon's PYTHONPATH
    points. {} where no bdist_wheel is installed."""
    if bdist_wheel is None:
        return {}

    class BdistWheelWithCore(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, platform = super().get_tag()
            return "py3", "none", platform

    return {"bdist_wheel": BdistWheelWithCore}


# ROS 2 distros with wheels on PyPI (ros-<distro>-*); the first is the default. The `ros` extra
# is for the pip environment only (a ROS install brings its own): ROS_DISTRO=jazzy selects the
# Jazzy wheels (tools/setup.sh does so for `ROS_DISTRO=jazzy bash tools/setup.sh`); any other
# value, or none, the default.
ROS_DISTROS = ("kilted", "jazzy")
ROS_DISTRO = os.environ.get("ROS_DISTRO", "") if os.environ.get("ROS_DISTRO", "") in ROS_DISTROS else ROS_DISTROS[0]
ROS_PACKAGES = ["rclpy", "rmw-fastrtps-cpp", "std-msgs", "std-srvs", "sensor-msgs", "geometry-msgs", "nav-msgs",
                "visualization-msgs", "diagnostic-msgs", "trajectory-msgs", "rosgraph-msgs"]
ROS_WHEELS = [f"ros-{ROS_DISTRO}-{name}" for name in ROS_PACKAGES] + [
    "rosbags>=0.10",  # rosbag2 MCAP writing/reading for the demo (rosbag2 itself is not on PyPI)
]

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "benchmarks"]),
    include_package_data=True,
    package_data={PACKAGE: ["solver/*.c"]},  # the solver core's source (built by BuildPyWithCore)
    # the command line: a script of its own, not an entry point, read by sh first (scripts/bondsim-ros:
    # one interpreter start for the commands that load no ROS library)
    scripts=["scripts/bondsim-ros"],
    cmdclass={"build_py": BuildPyWithCore, "develop": DevelopWithCore, **bdist_wheel_with_core()},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
    ]
    + tree("launch")
    + tree("urdf")
    + tree("config"),
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.24",
        "scipy>=1.10",
        "sympy>=1.12",
        "numba>=0.59",
        "pyyaml>=6",
        "pillow>=9",  # map images (sensors/); matplotlib needs it too
        "matplotlib>=3.7",
        "rich>=13",
        "threadpoolctl>=3",  # numpy's BLAS on one thread where results would follow the thread count (solver/bdf.py)
    ],
    extras_require={
        "ros": ROS_WHEELS,
        "mechanism": ["transforms3d>=0.4", "yourdfpy>=0.0.56", "trimesh>=4", "defusedxml>=0.7", "imageio-ffmpeg>=0.4",
                      "xacro>=2"],
        # mcap: decode the demo bag independently; pin (Pinocchio): the dual-arm and 3-DOF arm RNEA cross-checks
        # (test/oracles)
        # websockets: the test's Foxglove client
        # flake8: test/test_flake8.py
        "test": ["pytest>=7", "pytest-xdist>=3", "mcap>=1.1", "mcap-ros2-support>=0.5", "pin>=3", "websockets>=12",
                 "flake8>=7"],
        "bench": ["scikit-sundae>=1.0"],
        # `bondsim-ros up/demo --foxglove`: the twin live in Foxglove (WebSocket server); websockets:
        # the public port that serves both subprotocol names (15: the client's proxy= argument)
        "foxglove": ["foxglove-sdk>=0.30", "websockets>=15"],
        # `bondsim-ros sweep --scheduler ADDRESS`: a sweep's runs on a Dask cluster (docs/engine.md, "Sweeps")
        "cluster": ["dask[distributed]>=2024.1"],
    },
    zip_safe=False,
    maintainer="bondsim_ros maintainers",
    maintainer_email="maintainers@bondsim-ros.invalid",
    description="Bond-graph digital twin of mechatronic systems (Festo Robotino) for ROS 2",
    license="Apache-2.0",
    entry_points={
        # robots as plug-ins (bondsim_ros/robots): another package adds its own under this group
        "bondsim_ros.robots": robot_entry_points(),
        "console_scripts": [
            "dynamics_node = bondsim_ros.ros.dynamics_node:main",
            "probe_node = bondsim_ros.ros.probe_node:main",
            "twin_bridge = bondsim_ros.ros.twin_bridge:main",
            "state_publisher = bondsim_ros.ros.state_publisher:main",
            "sensor_node = bondsim_ros.ros.sensor_node:main",
            "bumper_stop = bondsim_ros.ros.bumper_stop:main",
        ],
    },
)
