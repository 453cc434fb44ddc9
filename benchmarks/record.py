"""A benchmark's result as JSON in benchmarks/results/NAME.json, from which benchmarks/report.py
renders docs/benchmarks.md.

A record holds what the figures need to be read and reproduced: the machine (CPU model from
/proc/cpuinfo, cores, Python), the commit measured (``+changes`` when the work tree differed
from it), the date (UTC), the command that reproduces the run, and the figures themselves
(each script defines their keys; report.py knows how to lay out each benchmark's).
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import shlex
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it (lscpu's may be a shorter marketing name)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "arch": platform.machine(),
            "python": platform.python_version(),
            "load_average": [round(v, 2) for v in os.getloadavg()]}


def commit() -> str | None:
    """Short hash of HEAD, with ``+changes`` when tracked files differ from it; None outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if dirty else "")


def add_argument(parser, name: str) -> None:
    parser.add_argument("--record", action="store_true",
                        help=f"write the result to benchmarks/results/{name}.json (docs/benchmarks.md is "
                             f"rendered from these files by benchmarks/report.py)")


def command(name: str, argv, placeholders=None) -> str:
    """The command line that reproduces the run (without --record). Options in ``placeholders``
    (option -> word) get the word instead of their value: a path of this machine, such as a
    SUNDIALS prefix or another checkout, means nothing on another one."""
    placeholders = placeholders or {}
    args, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        opt = a.split("=", 1)[0]
        if a == "--record":
            continue
        if opt in placeholders:
            args.append(f"{opt} {placeholders[opt]}")
            skip = "=" not in a
            continue
        args.append(shlex.quote(a))
    return " ".join(["python", f"benchmarks/{name}.py", *args])


def merge(name: str, argv, figures: dict, list_key: str, id_key: str, same=(), placeholders=None) -> Path:
    """A partial rerun (some entries of ``figures[list_key]``, e.g. one model) into the recorded
    benchmarks/results/NAME.json: the entries with the same ``id_key`` are replaced, the others
    and the record's header (machine, commit, date, command) stay those of their own run. Each
    new entry carries its run (``"run"``: machine, commit, date, command), and a note says which
    entries were rerun when. ``same``: figures that must equal the recorded ones (the settings
    the tables share, such as the tolerances), else SystemExit. Without a record: ``write``."""
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        return write(name, argv, figures, placeholders=placeholders)
    rec = json.loads(path.read_text())
    old = rec["figures"]
    for key in same:
        if old.get(key) != _finite(figures.get(key)):
            raise SystemExit(f"{name}: cannot merge into {path.name}: {key} {figures.get(key)!r} differs from the "
                             f"recorded {old.get(key)!r} (rerun with the recorded settings, or all of it)")
    now = datetime.datetime.now(datetime.timezone.utc)
    run = {"machine": machine(), "commit": commit(), "date": now.strftime("%Y-%m-%d %H:%M UTC"),
           "command": command(name, argv, placeholders)}
    new = {e[id_key]: dict(_finite(e), run=run) for e in figures[list_key]}
    entries = [new.pop(e[id_key], e) for e in old[list_key]] + list(new.values())
    for key, value in figures.items():  # flags such as "a reference was in the run": any run's
        if key not in (list_key, *same) and isinstance(value, bool):
            old[key] = bool(old.get(key)) or value
    old[list_key] = entries
    replaced = [e[id_key] for e in figures[list_key]]
    notes = [n for n in rec.get("notes", []) if not any(n.startswith(f"{r}: rerun") for r in replaced)]
    m = run["machine"]
    notes += [f"{r}: rerun alone at commit `{run['commit'] or 'unknown'}`, {run['date']} ({m.get('cpu')}, "
              f"{m.get('cores')} cores, load average {' '.join(f'{v:.1f}' for v in m.get('load_average') or [])}): "
              f"`{run['command']}`." for r in replaced]
    rec["notes"] = notes
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rec, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    os.replace(tmp, path)
    print(f"recorded (merged: {', '.join(replaced)}): {path}")
    return path


def _finite(value):
    """NaN and infinities (a figure that could not be measured) as null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def write(name: str, argv, figures: dict, notes=(), placeholders=None) -> Path:
    """Write benchmarks/results/NAME.json and return its path."""
    now = datetime.datetime.now(datetime.timezone.utc)
    rec = {"benchmark": name, "command": command(name, argv, placeholders), "machine": machine(), "commit": commit(),
           "date": now.strftime("%Y-%m-%d %H:%M UTC"), "source": f"written by benchmarks/{name}.py --record",
           "figures": _finite(figures), "notes": list(notes)}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rec, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    os.replace(tmp, path)
    print(f"recorded: {path}")
    return path
