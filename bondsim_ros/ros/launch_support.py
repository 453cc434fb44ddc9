"""What the launch files (launch/*.launch.py) need to know about the model they run, so that one
launch file serves every robot plug-in (bondsim_ros.robots) and YAML model with a mechanism:
section: its robot_description, whether it is a mobile base and takes /cmd_vel, the frame RViz
should hold fixed, its probes, and an RViz view made for it.

No rclpy here: the launch process imports this module before any node runs.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from bondsim_ros.outfiles import write_text_atomic
from bondsim_ros.paths import cache_root

MESH_RELATIVE = re.compile(r'filename="(?![A-Za-z][A-Za-z0-9+.-]*://)(?!/)([^"]+)"')
# probe markers in the generated view, in turn
PROBE_COLOURS = ("255; 0; 0", "0; 170; 255", "255; 200; 0", "0; 200; 80", "200; 0; 255", "255; 120; 0")


class ModelLaunchError(ValueError):
    """The model does not fit the launch file (the message says which model, which file and why)."""


@dataclass
class ModelView:
    spec: str  # what model:= said: a registered name or a YAML model file
    robot: object  # bondsim_ros.robots.Robot
    mechanism: Path
    description: str | None  # URDF text for robot_description, or None where `xacro` gives it
    xacro: Path | None  # a packaged xacro beside the packaged URDF (its meshes as package:// URIs)
    mobile: bool  # a planar base: odom -> base_footprint on /tf
    fixed_frame: str  # odom for a mobile base, else the URDF's root link
    probes: list
    takes_twist: bool  # dynamics_node's reference:=cmd_vel works


def _packaged_description(urdf: Path) -> tuple[str | None, Path | None]:
    """A packaged URDF: its xacro twin where there is one (robotino.urdf.xacro: package:// mesh
    URIs, which RViz resolves on any machine with the package), else the URDF with relative mesh
    paths made file:// URIs of its folder (relative paths resolve against nothing in RViz)."""
    xacro = urdf.with_name(urdf.name + ".xacro")
    if xacro.is_file():
        return None, xacro
    folder = urdf.resolve().parent
    text = urdf.read_text(encoding="utf-8")
    return MESH_RELATIVE.sub(lambda m: f'filename="{(folder / m.group(1)).as_uri()}"', text), None


def model_view(spec: str, launch_file: str = "") -> ModelView:
    """Everything a launch file needs about ``spec`` (model:=). A model that cannot be loaded
    raises ModelLaunchError naming the launch file, the model and why (file and line of a
    YAML model or mechanism XML)."""
    from bondsim_ros.mechanism.errors import MechanismError
    from bondsim_ros.mechanism.probes import ProbeKinematics
    from bondsim_ros.mechanism.urdf import robot_description
    from bondsim_ros.robots import RobotError, load_robot

    spec = str(spec).strip()
    if spec.endswith((".yaml", ".yml")) and Path(spec).is_file():
        spec = str(Path(spec).resolve())  # the nodes get a path that does not depend on their working folder
    try:
        robot = load_robot(spec)
        kin = ProbeKinematics.from_file(str(robot.mechanism))
        if robot.urdf is not None:
            description, xacro = _packaged_description(Path(robot.urdf))
        else:
            description, xacro = robot_description(robot.mechanism), None
    except (RobotError, MechanismError, OSError) as exc:
        raise ModelLaunchError(f"{launch_file + ': ' if launch_file else ''}model:={spec}: {exc}") from None
    # probe_node's rule (a planar mechanism's probes are in odom, others in the URDF's root frame),
    # so RViz holds fixed the frame the probe points are stamped with
    mobile = bool(kin.unit.planar)
    return ModelView(spec, robot, Path(robot.mechanism), description, xacro, mobile,
                     "odom" if mobile else kin.root, list(kin.probe_names), "twist" in robot.commands)


def require_cmd_vel(view: ModelView, launch_file: str, why: str) -> None:
    """Refuse, before any node starts, a model that is not a mobile base taking /cmd_vel."""
    if view.mobile and view.takes_twist:
        return
    commands = ", ".join(view.robot.commands) or "none, only its built-in reference"
    what = "has no planar base" if not view.mobile else f"takes no /cmd_vel (its commands: {commands})"
    raise ModelLaunchError(f"{launch_file}: model:={view.spec} {what}; {why} needs a mobile base that takes "
                           f"/cmd_vel ({', '.join(cmd_vel_models()) or 'none registered'}). "
                           f"rviz.launch.py model:={view.spec} shows it without that.")


def cmd_vel_models() -> list:
    """The registered robots with a planar base that take /cmd_vel (for error messages)."""
    from bondsim_ros.robots import available, load_robot

    out = []
    for name in sorted(available()):
        try:
            robot = load_robot(name)
        except Exception:  # noqa: BLE001 - a broken third-party plug-in is not this error's subject
            continue
        if "twist" in robot.commands:
            out.append(name)
    return out


def rviz_view(view: ModelView, template: Path) -> dict:
    """The RViz view for the model, from the generic ``template`` (config/robot.rviz): fixed frame,
    odometry for a mobile base, one PointStamped display per probe."""
    doc = yaml.safe_load(Path(template).read_text(encoding="utf-8"))
    manager = doc["Visualization Manager"]
    manager.setdefault("Global Options", {})["Fixed Frame"] = view.fixed_frame
    displays = manager.setdefault("Displays", [])
    for d in displays:
        if d.get("Class") == "rviz_default_plugins/RobotModel":
            d["Name"] = view.robot.name
    if view.mobile:
        displays.append({"Class": "rviz_default_plugins/Odometry", "Name": "Odometry", "Enabled": True,
                         "Topic": {"Value": "/odom"}, "Keep": 300,
                         "Shape": {"Value": "Arrow", "Shaft Length": 0.15, "Shaft Radius": 0.01,
                                   "Head Length": 0.05, "Head Radius": 0.03},
                         "Covariance": {"Value": False}})
    for k, name in enumerate(view.probes):
        displays.append({"Class": "rviz_default_plugins/PointStamped", "Name": f"Probe {name}", "Enabled": True,
                         "Topic": {"Value": f"/probes/{name}"}, "Color": PROBE_COLOURS[k % len(PROBE_COLOURS)],
                         "Radius": 0.03, "History Length": 200})
    return doc


def write_rviz_view(view: ModelView, template: Path, folder: Path | None = None) -> Path:
    """The model's RViz view as a file rviz2 can read (-d): one per model in the cache folder,
    rewritten whole (atomically) at each launch."""
    folder = Path(folder or cache_root() / "rviz")
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(view.spec.encode()).hexdigest()[:10]
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", view.robot.name)[:60]
    target = folder / f"{stem}-{key}.rviz"
    text = "# Made by bondsim_ros's launch files for model:=" + view.spec.replace("\n", " ") + \
        " from config/robot.rviz; rewritten at each launch (copy it to keep changes).\n" + \
        yaml.safe_dump(rviz_view(view, template), sort_keys=False)
    write_text_atomic(target, text)
    return target


__all__ = ["ModelLaunchError", "ModelView", "model_view", "require_cmd_vel", "cmd_vel_models", "rviz_view",
           "write_rviz_view"]
