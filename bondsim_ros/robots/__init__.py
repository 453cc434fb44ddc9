"""Robots as plug-ins, and the one registry of them: each robot a folder
(``bondsim_ros/robots/<name>/``) whose ``__init__.py`` is its plug-in module, registered under the
``bondsim_ros.robots`` entry-point group, so that another installed package adds robots the same
way::

    entry_points={"bondsim_ros.robots": ["mybot = mypkg.mybot:ROBOT"]}

A plug-in module holds

- ``ROBOT`` (the attribute the entry point names): a :class:`Robot`, a zero-argument callable
  returning one, or a dict {robot name: either} for a plug-in of several robots; a single robot
  takes the entry point's name;
- ``MODELS`` (optional): a list of :class:`ModelEntry`, or a zero-argument callable returning
  one: the models ``bondsim-ros simulate`` runs and ``bondsim-ros models`` lists by name
  (bondsim_ros.models reads them from here).

The package's own robots are the folders below this one with an ``__init__.py``, each
``<folder> = bondsim_ros.robots.<folder>:ROBOT``: setup.py declares exactly these entry points
(from the same scan), and this registry scans the folders itself instead of trusting the
installed metadata for them, so the robots are the same from a pip or colcon install and from a
source checkout run through PYTHONPATH (no metadata, or an older install's).

``load_robot(spec)`` also takes a YAML model file with a ``mechanism:`` section
(bondsim_ros.robots.yaml_binding).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable, NamedTuple

# the plug-in types live in .plugin so that the plug-ins and yaml_binding (imported by load_robot)
# need not import this registry back
from .plugin import ModelEntry, Robot, RobotError

GROUP = "bondsim_ros.robots"
# the robot a node or command runs when given none (dynamics_node's ``model``, state_publisher's URDF)
DEFAULT_ROBOT = "robotino"
ATTR = "ROBOT"  # what a built-in folder's entry point names


class Plugin(NamedTuple):
    """An entry point of the group: its name, the plug-in module and the attribute it names."""

    name: str
    module: str
    attr: str

    def __str__(self):
        return f"{self.name} = {self.module}:{self.attr}"


def builtin_plugins() -> list:
    """The package's own robot folders as the entry points setup.py declares for them."""
    here = Path(__file__).resolve().parent
    return [Plugin(d.name, f"{__name__}.{d.name}", ATTR) for d in sorted(here.iterdir())
            if (d / "__init__.py").is_file() and not d.name.startswith(("_", "."))]


def plugins() -> list:
    """Every registered plug-in: the built-in folders, then other packages' entry points."""
    from importlib.metadata import entry_points  # 0.1 s: only when plug-ins are looked up

    out = builtin_plugins()
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        module, _, attr = ep.value.partition(":")
        module, attr = module.strip(), attr.strip()
        # this package's own entries: the folders scanned above are what is imported
        if module == __name__ or module.startswith(__name__ + "."):
            continue
        out.append(Plugin(ep.name, module, attr))
    return out


def _load(plugin: Plugin):
    try:
        value = importlib.import_module(plugin.module)
        for part in plugin.attr.split(".") if plugin.attr else ():
            value = getattr(value, part)
    except Exception as exc:  # noqa: BLE001 - an installed plug-in that does not load: say which
        raise RobotError(f"robot plug-in {plugin}: cannot load: {type(exc).__name__}: {exc}") from exc
    return value


def _members(plugin: Plugin) -> dict:
    """robot name -> (Robot or callable) that the plug-in's attribute holds."""
    value = _load(plugin)
    return dict(value) if isinstance(value, dict) else {plugin.name: value}


def _providers() -> list:
    """(robot name, Plugin) for every robot each plug-in gives, in registry order (the built-ins
    first); a plug-in that does not import gives its entry point's name."""
    out = []
    for plugin in plugins():
        try:
            names = _members(plugin)
        except RobotError:
            names = {plugin.name: None}
        out += [(name, plugin) for name in names]
    return out


def available() -> dict:
    """robot name -> the Plugin that provides it, built-ins and installed plug-ins (the first of
    two that give the same name: shadowed() names the others). A plug-in that does not import
    is listed under its entry point's name; loading it says why."""
    out: dict = {}
    for name, plugin in _providers():
        out.setdefault(name, plugin)
    return out


def shadowed() -> list:
    """(robot name, the Plugin that gives it, a later Plugin whose robot of that name is never
    used) for every name two plug-ins give."""
    first, out = {}, []
    for name, plugin in _providers():
        if name in first and first[name] != plugin:
            out.append((name, first[name], plugin))
        first.setdefault(name, plugin)
    return out


def _resolve(value, plugin: Plugin | None = None) -> Robot:
    """The Robot a plug-in's member is, or makes when called; RobotError naming the plug-in when
    making it fails (a mechanism file it cannot find, a bad binding)."""
    where = f"robot plug-in {plugin}" if plugin is not None else f"robot plug-in {value!r}"
    if callable(value) and not isinstance(value, Robot):
        try:
            robot = value()
        except RobotError:
            raise
        except Exception as exc:  # noqa: BLE001 - the plug-in's own code: say which, and why
            raise RobotError(f"{where}: cannot make its robot: {type(exc).__name__}: {exc}") from exc
    else:
        robot = value
    if not isinstance(robot, Robot):
        raise RobotError(f"{where} is not a bondsim_ros.robots.Robot")
    return robot


def load_robot(spec: str) -> Robot:
    """A registered robot by name, or a YAML model file bound to its mechanism."""
    if str(spec).endswith((".yaml", ".yml")):
        from .yaml_binding import yaml_robot

        return yaml_robot(spec)
    entries = available()
    if spec not in entries:
        raise RobotError(f"unknown robot {spec!r}: registered are {', '.join(sorted(entries))}, "
                         f"or give a .yaml model file with a mechanism: section")
    robot = _resolve(_members(entries[spec])[spec], entries[spec])
    if robot.name != spec:
        robot = Robot(**{**robot.__dict__, "name": spec})
    return robot


def models_of(module: str) -> list:
    """The ModelEntry list a plug-in module declares (``MODELS``; empty without one); an entry
    that is no ModelEntry, or whose functions are not callable, is refused here, naming it,
    not met as a traceback when a run calls it."""
    value = getattr(importlib.import_module(module), "MODELS", None) or []
    entries = list(value() if callable(value) else value)
    for entry in entries:
        if not isinstance(entry, ModelEntry):
            raise TypeError(f"MODELS holds {type(entry).__name__} {entry!r:.60}, not a ModelEntry")
        if not callable(entry.build):
            raise TypeError(f"model {entry.name!r}: build is {type(entry.build).__name__}, not a function")
        for field in ("plot", "postprocess", "postprocess_rows", "write_config"):
            fn = getattr(entry, field)
            if fn is not None and not callable(fn):
                raise TypeError(f"model {entry.name!r}: {field} is {type(fn).__name__} {fn!r:.40}, not a function")
    return entries


def plugin_models(installed: bool = True) -> list:
    """(plug-in module, its ModelEntry list) for every registered plug-in module, once each; only
    the package's own robot folders unless ``installed`` (other packages' plug-ins are then not
    imported: one that does not load cannot stop a built-in model)."""
    out, seen = [], set()
    for plugin in plugins() if installed else builtin_plugins():
        if plugin.module in seen:
            continue
        seen.add(plugin.module)
        try:
            out.append((plugin.module, models_of(plugin.module)))
        except Exception as exc:  # noqa: BLE001 - an installed plug-in that does not load: say which
            raise RobotError(f"robot plug-in {plugin}: cannot load its MODELS: {type(exc).__name__}: {exc}") from exc
    return out


def model_robot(name: str, description: str, build: Callable, mechanism, joints: dict, *, base: dict | None = None,
                derive=None, velocities=None, efforts=None, command_models: dict | None = None,
                model: str = "", body_velocity: dict | None = None) -> Robot:
    """A Robot over the generic ModelTwin: ``build()`` the model with its built-in reference;
    ``command_models`` {"twist"|"trajectory": (builder, params)} the variants taking commands
    (the COMMAND_MODELS contract of the model modules)."""
    command_models = dict(command_models or {})
    if not Path(mechanism).is_file():  # said when the plug-in loads, not when a twin is first made
        raise RobotError(f"{name}: mechanism file {mechanism} does not exist")

    def make_twin(command: str = "builtin", options=None, limits=None, log=None, config=None):
        from bondsim_ros.twin.model_twin import Binding, ModelTwin

        if config:
            raise RobotError(f"{name}: robot_config is a Robotino parameter file; {name} takes none")
        if command == "builtin":
            builder, params = build, None
        elif command in command_models:
            builder, params = command_models[command]
        else:
            raise RobotError(f"{name}: no {command} command (has: {', '.join(sorted(command_models)) or 'none'})")
        # the other command too where the same model variant takes it (dual-arm: base and arms)
        other = {k: p for k, (b, p) in command_models.items() if b is builder and k != command}
        binding = Binding(mechanism=Path(mechanism), joints=dict(joints), base=base, body_velocity=body_velocity,
                          velocities=dict(velocities or {}),
                          efforts=dict(efforts or {}), derive=derive, source=name,
                          twist=params if command == "twist" else other.get("twist"),
                          trajectory=params if command == "trajectory" else other.get("trajectory"))
        return ModelTwin(name, builder(), binding, options, limits=limits, command=command, log=log)

    return Robot(name, description, Path(mechanism), make_twin, tuple(sorted(command_models)), model=model or name)


def command_models(module) -> dict:
    """The COMMAND_MODELS of a model module (empty until the module declares them)."""
    return dict(getattr(module, "COMMAND_MODELS", {}) or {})


__all__ = ["Robot", "RobotError", "ModelEntry", "GROUP", "DEFAULT_ROBOT", "Plugin", "builtin_plugins", "plugins",
           "available", "shadowed", "load_robot", "models_of", "plugin_models", "model_robot", "command_models"]
