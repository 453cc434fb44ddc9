"""Models by name or path: the registry ``simulate`` uses.

The worked examples live here (examples.py); every other named model comes from a robot
plug-in's ``MODELS`` (bondsim_ros.robots: the built-in robot folders and the packages registered
under the ``bondsim_ros.robots`` entry points), each with its figures (``ModelEntry.plot``).

``resolve_model("dc_motor")`` builds a named model; a path ending in .yaml/.yml is read as a
declarative model file; a .py file must define ``build() -> Model``. A built-in model's name (an
example or a model of the package's own robots) resolves without importing other packages'
plug-ins; any other name loads them all, and one that does not load is an error naming it.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path

# the entry type lives below both registries (a plug-in imports it without importing this one)
from bondsim_ros.robots.plugin import ModelEntry


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


_EXAMPLES = "bondsim_ros.models.examples"


def registry(sources: dict | None = None, installed: bool = True) -> dict:
    """name -> ModelEntry of every named model (the examples, then each robot plug-in's MODELS;
    the first of two that give the same name); only the built-in models (the examples and the
    package's own robots) unless ``installed``; ``sources`` (if given) gets name -> the module
    providing it (for :func:`entry_from`). An installed plug-in that does not load: RobotError."""
    from bondsim_ros.robots import plugin_models

    entries = {e.name: e for e in _examples()}
    where = dict.fromkeys(entries, _EXAMPLES)
    for module, found in plugin_models(installed):
        for e in found:
            if e.name not in entries:
                entries[e.name] = e
                where[e.name] = module
    if sources is not None:
        sources.update(where)
    return entries


def lookup(name: str, sources: dict | None = None) -> dict:
    """The registry that settles ``name``: the built-in models' when one of them is ``name`` (no
    installed plug-in imported), else every model's (:func:`registry`)."""
    entries = registry(sources, installed=False)
    return entries if name in entries else registry(sources)


def entry_from(module: str, name: str):
    """The entry ``name`` as ``module`` (the examples or a plug-in module) provides it (the warm
    ``simulate`` path: buildcache), found as :func:`lookup` finds it: a built-in's from its module
    alone, an installed plug-in's with every installed plug-in loaded; None if that module no
    longer provides it, or a plug-in does not load (the caller then builds the model by name,
    and says which)."""
    if module == _EXAMPLES:
        found = [e for e in _examples() if e.name == name]
    else:
        from bondsim_ros.robots import RobotError, builtin_plugins, models_of

        if module in {p.module for p in builtin_plugins()}:
            try:
                found = [e for e in models_of(module) if e.name == name]
            except ImportError:  # a robot folder removed since: the caller builds the model by name again
                found = []
        else:
            sources: dict = {}
            try:
                entries = registry(sources)
            except RobotError:
                return None
            found = [entries[name]] if sources.get(name) == module else []
    return found[0] if found else None


def _line_in(exc: BaseException, path: Path) -> int:
    """The deepest line of the model file ``path`` in ``exc``'s traceback; 0 if none."""
    line = 0
    target = str(path.resolve())
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if str(Path(frame.f_code.co_filename).resolve()) == target:
            line = lineno
    return line


def _code_error(exc: BaseException, path: Path, spec: str):
    """A ModelError for an exception raised by a Python model file's code, at the deepest line
    of that file in the traceback (file:line: ExceptionType: message). A ModelError the model's
    calls raised (a bond to a component the document lacks) keeps its own words, put at that
    line as a YAML model's are at theirs."""
    from bondsim_ros.bondgraph.core import ModelError

    line = _line_in(exc, path)
    if isinstance(exc, ModelError):
        return exc if exc.located or not line else ModelError(f"{spec}:{line}", str(exc))
    what = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, SystemExit):  # sys.exit() in a model file would end the command as if it had run
        what = f"{type(exc).__name__}({exc.code!r}): a model file's code must not end the program"
    return ModelError(f"{spec}:{line}" if line else spec, what)


def _as_typed(filename: str | None, path: Path, spec: str) -> str:
    """``filename`` (a file the interpreter names, by its absolute path) as the user wrote its
    place: the model file as ``spec``, a file beside or below it under the folder ``spec`` names."""
    if not filename:
        return spec
    real = Path(os.path.realpath(filename))
    if real == Path(os.path.realpath(path)):
        return spec
    folder = Path(os.path.realpath(path.parent))
    return str(path.parent / real.relative_to(folder)) if real.is_relative_to(folder) else filename


def _own_module(module, folder: Path) -> bool:
    """Whether the top-level ``module`` is a file or package of ``folder`` itself."""
    f = getattr(module, "__file__", None)
    if not f:
        return False
    real = Path(os.path.realpath(f))
    return real.parent == folder or (real.stem == "__init__" and real.parent.parent == folder)


@contextlib.contextmanager
def _as_script(path: Path):
    """The model file's folder first on sys.path while its code runs (and its build()), as for a
    script run from it: ``import gains`` finds gains.py beside it. Afterwards the folder leaves
    sys.path and the modules imported from it leave sys.modules, so that the next model file
    built in this process (a sweep worker's next) imports its own ``gains``, and its build reads
    the file again for its build record. Unlike a script, a module beside it whose name this
    process has already imported (another package's ``utils``) is that module: Python's import
    cache answers first, so a model's own modules are best named for the model."""
    folder = Path(os.path.realpath(path.parent))
    before = set(sys.modules)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # the model's code may have taken it out itself
            sys.path.remove(str(folder))
        new = set(sys.modules) - before
        own = {name for name in new if "." not in name and _own_module(sys.modules[name], folder)}
        for name in new:
            if name.partition(".")[0] in own:
                del sys.modules[name]


def resolve_model(spec: str):
    """Return (Model, ModelEntry or None) for a built-in name or a model file path."""
    from bondsim_ros.bondgraph.core import Model, ModelError

    path = Path(spec)
    if path.suffix not in (".yaml", ".yml", ".py"):  # a name (no model file needs the plug-ins)
        entries = lookup(spec)
        if spec in entries:
            return entries[spec].build(), entries[spec]
        raise ModelError(spec, f"unknown model: not a built-in ({', '.join(sorted(entries))}) "
                               f"nor a .yaml/.py model file")
    if path.suffix in (".yaml", ".yml"):
        from bondsim_ros.bondgraph.yamlmodel import load_model

        return load_model(path), None
    if path.suffix == ".py":
        if not path.exists():
            raise ModelError(spec, "no such model file")
        mspec = importlib.util.spec_from_file_location(f"bondsim_user_model_{path.stem}", path)
        module = importlib.util.module_from_spec(mspec)
        with _as_script(path):
            try:
                mspec.loader.exec_module(module)
            except SyntaxError as exc:  # IndentationError, a file that is not UTF-8 text too
                where = _as_typed(exc.filename, path, spec)
                raise ModelError(f"{where}:{exc.lineno}" if exc.lineno else where,
                                 f"{type(exc).__name__}: {exc.msg}") from None
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - the file's own code failed: say where in it
                raise _code_error(exc, path, spec) from None
            if not hasattr(module, "build"):
                raise ModelError(spec, "a Python model file must define build() -> Model")
            try:
                model = module.build()
            except (Exception, SystemExit) as exc:  # noqa: BLE001
                raise _code_error(exc, path, spec) from None
        if not isinstance(model, Model):
            raise ModelError(spec, f"build() returned {type(model).__name__}, not a Model")
        return model, None
