"""Built-in models and model-file loading, by name or path: the registry ``simulate`` uses.

The worked examples live here (examples.py); the robot models in their plug-in folders
(bondsim_ros/robots/<name>/model.py, listed in _EXTRA_MODULES), their figures in
bondsim_ros/plotting/models.py.

``resolve_model("dc_motor")`` builds a built-in model; a path ending in .yaml/.yml is read as a
declarative model file; a .py file must define ``build() -> Model``.
"""
from __future__ import annotations

import importlib
import importlib.util
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


@dataclass
class ModelEntry:
    name: str
    build: Callable
    description: str
    # plot(result, out_png) -> list of written files: a plug-in's own figure; the built-in
    # models' figures live in bondsim_ros.plotting.models (models do not plot), which
    # `simulate --plot` asks by name
    plot: Callable | None = None
    defaults: dict = field(default_factory=dict)  # suggested simulate options (t_end, dt_out, hmax, rtol)
    postprocess: Callable | None = None  # postprocess(result) -> result with derived columns
    # write_config(estimates: dict, out_path, notes: dict): the model's parameter file with fitted
    # values substituted (``bondsim-ros fit --config-out``), for models built from one
    write_config: Callable | None = None


def _examples():
    from . import examples as ex

    return [
        ModelEntry("mass_spring_damper", ex.mass_spring_damper, "mass on a spring and damper released from 0.1 m",
                   defaults=dict(t_end=10.0, dt_out=0.01)),
        ModelEntry("series_rlc", ex.series_rlc, "series R-L-C loop, 10 V step", defaults=dict(t_end=1.0, dt_out=0.001)),
        ModelEntry("dc_motor", ex.dc_motor, "DC motor with gear and load, 24 V step",
                   defaults=dict(t_end=0.5, dt_out=0.0005)),
        ModelEntry("lossless_oscillator", ex.lossless_oscillator, "I-C oscillator without losses",
                   defaults=dict(t_end=20.0, dt_out=0.01)),
        ModelEntry("pendulum", ex.pendulum, "Cartesian pendulum with a velocity-level rod constraint",
                   defaults=dict(t_end=10.0, dt_out=0.01)),
    ]


# Optional model modules register more entries through a module-level ENTRIES list.
_EXTRA_MODULES = [
    "bondsim_ros.robots.robotino.model",  # the Robotino plug-in's model
    "bondsim_ros.robots.multibody.model",  # seed 003: pendulum and slider-crank variants
    "bondsim_ros.robots.arm3dof.model",  # seed 004: 3-DOF planar arm
    "bondsim_ros.robots.omni5dpo.model",  # seed 002: 5DPO omnidirectional robot
    "bondsim_ros.robots.dualarm.model",  # seed 001: dual-arm mobile manipulator
]


_EXAMPLES = "bondsim_ros.models.examples"


def registry(sources: dict | None = None) -> dict:
    """name -> ModelEntry of every built-in model; ``sources`` (if given) gets name -> the
    module providing it (for :func:`entry_from`)."""
    entries = {e.name: e for e in _examples()}
    where = dict.fromkeys(entries, _EXAMPLES)
    for modname in _EXTRA_MODULES:
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name == modname:
                continue
            raise
        for e in getattr(mod, "ENTRIES", []):
            entries[e.name] = e
            where[e.name] = modname
    if sources is not None:
        sources.update(where)
    return entries


def entry_from(module: str, name: str):
    """The entry ``name`` as ``module`` provides it, importing no other model module (the warm
    ``simulate`` path: buildcache); None if that module has no such entry (any more)."""
    if module == _EXAMPLES:
        found = [e for e in _examples() if e.name == name]
    elif module in _EXTRA_MODULES:
        found = [e for e in getattr(importlib.import_module(module), "ENTRIES", []) if e.name == name]
    else:
        found = []
    return found[-1] if found else None


def _code_error(exc: Exception, path: Path, spec: str):
    """A ModelError for an exception raised by a Python model file's code, at the deepest line
    of that file in the traceback (file:line: ExceptionType: message)."""
    from bondsim_ros.bondgraph.core import ModelError

    line = 0
    target = str(path.resolve())
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if str(Path(frame.f_code.co_filename).resolve()) == target:
            line = lineno
    return ModelError(f"{spec}:{line}" if line else spec, f"{type(exc).__name__}: {exc}")


def resolve_model(spec: str):
    """Return (Model, ModelEntry or None) for a built-in name or a model file path."""
    from bondsim_ros.bondgraph.core import Model, ModelError

    entries = registry()
    if spec in entries:
        return entries[spec].build(), entries[spec]
    path = Path(spec)
    if path.suffix in (".yaml", ".yml"):
        from bondsim_ros.bondgraph.yamlmodel import load_model

        return load_model(path), None
    if path.suffix == ".py":
        if not path.exists():
            raise ModelError(spec, "no such model file")
        mspec = importlib.util.spec_from_file_location(f"bondsim_user_model_{path.stem}", path)
        module = importlib.util.module_from_spec(mspec)
        try:
            mspec.loader.exec_module(module)
        except SyntaxError as exc:  # IndentationError, a file that is not UTF-8 text too
            where = f"{exc.filename or spec}:{exc.lineno}" if exc.lineno else (exc.filename or spec)
            raise ModelError(where, f"{type(exc).__name__}: {exc.msg}") from None
        except Exception as exc:  # noqa: BLE001 - the file's own code failed: say where in it
            raise _code_error(exc, path, spec) from None
        if not hasattr(module, "build"):
            raise ModelError(spec, "a Python model file must define build() -> Model")
        try:
            model = module.build()
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise _code_error(exc, path, spec) from None
        if not isinstance(model, Model):
            raise ModelError(spec, f"build() returned {type(model).__name__}, not a Model")
        return model, None
    raise ModelError(spec, f"unknown model: not a built-in ({', '.join(sorted(entries))}) "
                           f"nor a .yaml/.py model file")
