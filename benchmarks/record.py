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
