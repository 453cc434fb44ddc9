"""Finding a model's generated code without building the model: the warm ``simulate`` path.

The generated code is keyed by a fingerprint of the *built* model's structure
(bondgraph/fingerprint.py). Building a model imports sympy (0.5-0.7 s) and runs its builder (0.25-0.45 s for
the Robotino): more than the Robotino's whole 50 s solve. A *build record* maps what the user
asked for -- a built-in model's name or a model file, with this copy of the package -- to that fingerprint,
the model's name and its parameter values, and lists every file the build read (the Python modules of this
package and of the model file, parameter files, the model file itself) with a hash of each.
The next request for the same model, with the same engine and the same ``BONDSIM_*``
environment, uses the record while every listed file is unchanged; otherwise the model is
built and the record rewritten. A record never replaces the generated code's own key: it
only finds it.

:func:`resolve` is the one entry: what the user asked for -> a :class:`Resolved`, whose
``entry`` is known at once and whose :meth:`Resolved.compile` loads the recorded key's code, or
compiles the model (built on demand when the record's code left the cache) and records the build.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
from pathlib import Path

# environment variables that steer no model build (the others, e.g. BONDSIM_ROBOTINO_CONFIG,
# go into a record's key)
_NOT_BUILD_ENV = {"BONDSIM_CACHE_DIR"}


def _record_path(spec: str) -> Path | None:
    from bondsim_ros.bondgraph.cache import cache_dir
    from bondsim_ros.bondgraph.fingerprint import engine_hash

    path = Path(spec)
    if path.suffix in (".yaml", ".yml", ".py"):  # a model file (built-in names have no suffix)
        if not path.is_file():
            return None
        what = f"file:{path.resolve()}"
    else:  # a built-in model: its module's source is among the record's files
        what = f"name:{spec}"
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("BONDSIM_") and k not in _NOT_BUILD_ENV)
    # the package's own location: two checkouts or installs sharing one cache each have their
    # records, else one would take the other's build while the other's files stay unchanged
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # .../bondsim_ros
    blob = json.dumps([engine_hash(), what, env, package])
    return cache_dir() / f"r_{hashlib.sha256(blob.encode()).hexdigest()[:24]}.json"


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


class _Reads:
    """Files opened while a model is built (an audit hook: imports, ``open``, ``Path.read_text``).
    A hook rather than each reader reporting its files: whatever code a build runs (a robot's
    YAML config, a model file's own imports and data files, a mechanism XML) is listed, and a
    reader that forgot to report could not leave a stale build in use."""

    _active: list = []
    _hooked = False

    def __enter__(self):
        if not _Reads._hooked:  # an audit hook cannot be removed: one, idle outside a build
            sys.addaudithook(_Reads._hook)
            _Reads._hooked = True
        self.paths = set()
        _Reads._active.append(self.paths)
        return self

    def __exit__(self, *exc):
        _Reads._active.remove(self.paths)
        # hashed now, as the build read them: a file edited during the (long) compilation that
        # follows must not pass for the content the model was built from
        self.files = _dependencies(self.paths) if exc[0] is None else {}

    @staticmethod
    def _hook(event, args):
        if event == "open" and _Reads._active and args and isinstance(args[0], (str, bytes, os.PathLike)):
            mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
            if "r" in mode or not mode:
                for paths in _Reads._active:
                    paths.add(os.fsdecode(args[0]))


def _third_party_dirs() -> list:
    dirs = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return sorted(os.path.realpath(d) + os.sep for d in dirs if d)


def _dependencies(opened: set) -> dict:
    """path -> sha256 of what a build depended on: the files it opened (compiled modules mapped
    to their source), except other packages' and the standard library's modules, and the source
    of every loaded module of this package (imported before the build started, too)."""
    import importlib.util

    known: dict = {}  # os.path.realpath of each folder met, built from its parent's (a build opens ~900 files)

    def real(path: str) -> str:
        """os.path.realpath(path): its folder's real path and its name, unless it is a link."""
        r = known.get(path)
        if r is not None:
            return r
        folder, name = os.path.split(path)
        if not os.path.isabs(path) or folder == path or name in ("", ".", "..") or os.path.islink(path):
            r = os.path.realpath(path)
        else:
            r = os.path.join(real(folder), name)
        if len(known) < 100_000:
            known[path] = r
        return r

    files = set()
    for path in opened:
        if path.endswith(".pyc"):  # in __pycache__, or under $PYTHONPYCACHEPREFIX
            try:
                path = importlib.util.source_from_cache(path)
            except ValueError:
                continue
        files.add(real(path))
    skip = _third_party_dirs()
    files = {f for f in files if not (f.endswith((".py", ".pyc", ".so", ".pth")) and f.startswith(tuple(skip)))}
    for name, module in list(sys.modules.items()):
        if name == "bondsim_ros" or name.startswith("bondsim_ros."):
            f = getattr(module, "__file__", None)
            if f:
                files.add(os.path.realpath(f))
    out = {}
    for f in sorted(files):
        if os.path.isfile(f) and not f.startswith(("/dev/", "/proc/", "/sys/")):
            digest = _digest(f)
            if digest is not None:
                out[f] = digest
    return out


def resolve(spec: str, use_cache: bool = True, load=None) -> Resolved:
    """``spec`` (a built-in model's name or a model file) resolved: from its build record while
    that holds (nothing built, no sympy), else built now by ``load`` (``spec`` -> (Model,
    ModelEntry or None); ``models.resolve_model`` unless given, its errors raised as they are),
    the files the build reads collected for the record that :meth:`Resolved.compile` writes."""
    if load is None:
        from bondsim_ros.models import resolve_model as load
    found = _from_record(spec, load) if use_cache else None
    if found is not None:
        return found
    resolved = Resolved(spec, load, use_cache)
    resolved._build()
    return resolved


class Resolved:
    """A model as the user asked for it: ``entry`` (its built-in ModelEntry, None for a model
    file), ``key`` (its generated code's key, when a build record gave it; else None) and
    ``files`` (the real path of every file its build read -> that file's hash: what no output of
    the command may replace), its CompiledModel from :meth:`compile`."""

    def __init__(self, spec: str, load, use_cache: bool = True, key: str | None = None, name: str = "",
                 parameters: dict | None = None, entry=None, files: dict | None = None):
        self.spec, self.key, self.entry, self.files = spec, key, entry, files or {}
        self._load, self._use_cache = load, use_cache
        self._name, self._parameters = name, parameters or {}  # the record's: the model's name and values
        self._model = self._reads = None

    def _build(self) -> None:
        from bondsim_ros.solver import _ccore

        _ccore.prebuild()  # a first run on this machine: gcc builds the solver core meanwhile
        with _Reads() as reads:
            self._model, self.entry = self._load(self.spec)
        self._reads = reads
        self.files = reads.files

    def compile(self, log=None):
        """The CompiledModel: the recorded key's code when the cache holds it, else the model's
        (built now if the record's code left the cache since :func:`resolve`), its build then
        recorded."""
        from bondsim_ros.bondgraph.codegen import compile_model, load_cached

        if self._model is None:
            compiled = load_cached(self.key, self._name, self._parameters, log=log)
            if compiled is not None:
                return compiled
            self._build()
        compiled = compile_model(self._model, use_cache=self._use_cache, log=log)
        if self._use_cache:  # without the cache (--no-cache) no record is read, nor written
            _record(self.spec, self.entry, self._model, compiled, self._reads)
        return compiled


def _from_record(spec: str, load) -> Resolved | None:
    """``spec`` as its build record tells it, or None (no record, a listed file changed, the
    generated code is gone): then the model is built."""
    from bondsim_ros.bondgraph.cache import is_cached

    rec_path = _record_path(spec)
    if rec_path is None or not rec_path.exists():
        return None
    try:
        rec = json.loads(rec_path.read_text())
        key, deps = rec["key"], rec["files"]
        if not all(_digest(f) == h for f, h in deps.items()):
            return None
        if not is_cached(str(key)):
            return None
        resolved = Resolved(spec, load, key=str(key), name=str(rec["name"]),
                            parameters={str(k): float(v) for k, v in rec["parameters"].items()}, files=deps)
        module = rec["entry_module"]
        if module is not None:  # a built-in: its entry (defaults, plots), from its module alone
            from bondsim_ros.models import entry_from

            resolved.entry = entry_from(str(module), spec)
            if resolved.entry is None:
                return None
        return resolved
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # an unreadable or foreign record: build the model


def _record(spec: str, entry, model, compiled, reads: _Reads) -> None:
    """Write the build record of ``spec`` after ``model`` was built and compiled (``entry``:
    its built-in model entry, None for a model file)."""
    import tempfile

    rec_path = _record_path(spec)
    if rec_path is None:
        return
    module = None
    if entry is not None:
        from bondsim_ros.models import lookup

        sources: dict = {}
        lookup(entry.name, sources)
        module = sources.get(entry.name)
        if module is None:
            return
    rec = {"spec": spec, "key": compiled.key, "name": model.name, "entry_module": module,
           "parameters": {k: float(v) for k, v in model.parameters.items()},
           "files": reads.files}
    try:
        fd, tmp = tempfile.mkstemp(dir=rec_path.parent, prefix=rec_path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(rec, fh)
        os.replace(tmp, rec_path)
    except OSError:
        pass  # a read-only cache: the next run builds again


__all__ = ["resolve", "Resolved"]
