"""Robots as plug-ins: each robot a folder (``bondsim_ros/robots/<name>/``) exposing a
:class:`Robot`, registered under the ``bondsim_ros.robots`` entry-point group (setup.py), so that
another installed package adds robots the same way::

    entry_points={"bondsim_ros.robots": ["mybot = mypkg.mybot:ROBOT"]}

The value is a Robot or a zero-argument callable returning one. ``load_robot(spec)`` also takes a
YAML model file with a ``mechanism:`` section (bondsim_ros.robots.yaml_binding).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable

# the plug-in types live in .plugin so that yaml_binding (imported by load_robot) need not import
# this registry back
from .plugin import Robot, RobotError

GROUP = "bondsim_ros.robots"

# The built-in robots, as setup.py registers them; also used from a source checkout whose
# installed metadata does not list them (e.g. PYTHONPATH on a worktree).
BUILTIN = {
    "robotino": "bondsim_ros.robots.robotino:ROBOT",
    "dualarm": "bondsim_ros.robots.dualarm:ROBOT",
    "arm3dof": "bondsim_ros.robots.arm3dof:ROBOT",
    "omni5dpo": "bondsim_ros.robots.omni5dpo:ROBOT",
    "slider_crank_lagrange": "bondsim_ros.robots.multibody:SLIDER_CRANK_LAGRANGE",
    "pendulum_lagrange": "bondsim_ros.robots.multibody:PENDULUM_LAGRANGE",
}


def _resolve(value) -> Robot:
    if isinstance(value, str):
        mod, _, attr = value.partition(":")
        value = getattr(importlib.import_module(mod), attr)
    elif hasattr(value, "load"):  # an importlib.metadata EntryPoint
        value = value.load()
    robot = value() if callable(value) and not isinstance(value, Robot) else value
    if not isinstance(robot, Robot):
        raise RobotError(f"robot plug-in {value!r} is not a bondsim_ros.robots.Robot")
    return robot


def available() -> dict:
    """name -> entry (a 'module:attr' string or an EntryPoint), built-ins and installed plug-ins."""
    from importlib.metadata import entry_points  # 0.1 s: only when robots are looked up

    out = dict(BUILTIN)
    for ep in entry_points(group=GROUP):
        out[ep.name] = ep
    return out


def load_robot(spec: str) -> Robot:
    """A registered robot by name, or a YAML model file bound to its mechanism."""
    if str(spec).endswith((".yaml", ".yml")):
        from .yaml_binding import yaml_robot

        return yaml_robot(spec)
    entries = available()
    if spec not in entries:
        raise RobotError(f"unknown robot {spec!r}: registered are {', '.join(sorted(entries))}, "
                         f"or give a .yaml model file with a mechanism: section")
    robot = _resolve(entries[spec])
    if robot.name != spec:
        robot = Robot(**{**robot.__dict__, "name": spec})
    return robot


def model_robot(name: str, description: str, build: Callable, mechanism, joints: dict, *, base: dict | None = None,
                derive=None, velocities=None, efforts=None, command_models: dict | None = None,
                model: str = "") -> Robot:
    """A Robot over the generic ModelTwin: ``build()`` the model with its built-in reference;
    ``command_models`` {"twist"|"trajectory": (builder, params)} the variants taking commands
    (the COMMAND_MODELS contract of the model modules)."""
    command_models = dict(command_models or {})

    def make_twin(command: str = "builtin", rtol=1e-6, atol=1e-8, hmax=0.02, limits=None, log=None, config=None):
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
        binding = Binding(mechanism=Path(mechanism), joints=dict(joints), base=base, velocities=dict(velocities or {}),
                          efforts=dict(efforts or {}), derive=derive, source=name,
                          twist=params if command == "twist" else other.get("twist"),
                          trajectory=params if command == "trajectory" else other.get("trajectory"))
        return ModelTwin(name, builder(), binding, rtol=rtol, atol=atol, hmax=hmax, limits=limits, command=command,
                         log=log)

    return Robot(name, description, Path(mechanism), make_twin, tuple(sorted(command_models)), model=model or name)


def command_models(module) -> dict:
    """The COMMAND_MODELS of a model module (empty until the module declares them)."""
    return dict(getattr(module, "COMMAND_MODELS", {}) or {})


__all__ = ["Robot", "RobotError", "GROUP", "BUILTIN", "available", "load_robot", "model_robot", "command_models"]
