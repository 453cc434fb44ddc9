"""What a user waits for: `bondsim-ros simulate` wall time, warm and cold.

    python benchmarks/cli_bench.py                      # warm Robotino paper case, median of 7
    python benchmarks/cli_bench.py --ref ../other       # ... alternating with another checkout
    python benchmarks/cli_bench.py --cold               # + Robotino on empty generated-code caches
    python benchmarks/cli_bench.py --cold --dualarm     # + the 18-DOF dual-arm model (minutes)

Each run is a fresh `bondsim-ros simulate ...` process, the command the install put beside this
Python (scripts/bondsim-ros), timed from spawn to exit, with the compiled modules (.pyc) Python keeps for an
installed package: PYTHONDONTWRITEBYTECODE is dropped from the runs' environment, else every run
would compile the package's sources again (40-60 ms). Warm: the generated-code cache of this
user (``$BONDSIM_CACHE_DIR`` or ~/.cache/bondsim_ros) after one untimed run. Cold: a new empty
``BONDSIM_CACHE_DIR`` per run, a user's first run after the install: the model is built,
reduced, printed and compiled, the C solver core is the one the install compiled (setup.py; its
compile, what the install spends on it, is timed on its own). Without an installed core: the
same with the package as a wheel built on another machine would install it (links to the
checkout's files, its ``solver/prebuilt`` left out), so the core's build overlaps the model's.
The build time is the one the command prints (`build X s`). The same command each time, so
from the second run on its solve starts ahead, from the image the run before left
(solver/ahead.py; the summary line says so, counted here). Every run starts as a command typed
in a shell does: the ROS 2 wheels' bootstrapper (a .pth file of the venv) starts each new
interpreter a second time with the ROS libraries on LD_LIBRARY_PATH, unless its guard variable
says the process is that second start; this script runs as one, so the guard is dropped from
the runs' environment (`simulate` needs no second start: the command starts Python once,
scripts/bondsim-ros). Beside the warm runs, in the same rounds, the parts of the wait that are
no code of this package's: the interpreter's start as the command makes it, numpy's import after
it, each ended with os._exit as the command ends, and for comparison a plain `python` start (with
the bootstrapper's second start); with the solve time the command prints, the rest by difference
is what the package itself adds (its imports, finding the cached model, set-up, the CSV's last
rows). ``--ref ROOT`` runs the same command with ROOT first on PYTHONPATH, alternating with this
checkout (same load); runs start in a temporary folder, so that the current folder's package
does not shadow ROOT's. Wall times are medians and minima of
--repeat runs; the CPU time (user + system of the process and its compilers) moves far less
with the load of a shared machine.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # noqa: E402  (benchmarks/record.py, beside this script)

HERE = Path(__file__).resolve().parents[1]
# Damic & Cohodar Husic section 4, as README and docs/robotino.md give it
ROBOTINO = ["robotino", "--t-end", "50", "--dt-out", "0.02", "--hmax", "0.02", "--rtol", "1e-6"]
DUALARM = ["dualarm"]


# the ROS 2 wheels' bootstrapper (ros_wheels_bootstrapper): set in a process it has started the
# second time, and so in this script's environment, never in a user's shell
BOOTSTRAP_GUARD = "_ROS_WHEELS_BOOTSTRAP_COMPLETE"


def run_env(root: Path, env_extra: dict | None = None, shell: bool = True) -> dict:
    """The environment of a run with ``root`` first on sys.path. ``shell``: as a shell's command
    starts (no bootstrapper guard), else as this script's children would by default."""
    env = dict(os.environ, PYTHONPATH=str(root), **(env_extra or {}))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: the package's modules compiled once
    if shell:
        env.pop(BOOTSTRAP_GUARD, None)
    else:
        env[BOOTSTRAP_GUARD] = "1"
    return env


def timed(cmd: list, env: dict, cwd: Path) -> tuple[float, float, str]:
    """(wall, CPU seconds of the process: user + system, stderr). On a shared machine the CPU
    time varies far less with the load than the wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    tic = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - tic
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stderr


def command() -> Path:
    """The installed `bondsim-ros`, beside this Python (pip and `pip install -e` put it there)."""
    path = Path(sys.executable).with_name("bondsim-ros")
    if not path.exists():
        raise SystemExit(f"no {path}: install the package into this Python first (pip install -e .)")
    return path


def run(root: Path, model_args: list, csv: Path, env_extra: dict | None = None) -> tuple[float, float, str]:
    """`simulate MODEL_ARGS --csv CSV` as typed in a shell: (wall, CPU seconds, stderr)."""
    cmd = [str(command()), "simulate", *model_args, "--csv", str(csv)]
    # cwd: a folder without a package in it (`python -m` puts the current folder first on sys.path)
    return timed(cmd, run_env(root, env_extra), csv.parent)


# the parts of a warm run that are no code of the package's: the interpreter's start as the
# command makes it for `simulate` (scripts/bondsim-ros: -S, then site's step with the ROS 2 wheels'
# bootstrapper told not to restart), numpy's import after it as the command imports it (one BLAS
# thread unless set otherwise), and a plain `python` start as typed in a shell, for comparison;
# each ends as the command does, with os._exit (cli._exit_now), so that no interpreter teardown is
# counted that the command skips
_START = f"import os, site; os.environ[{BOOTSTRAP_GUARD!r}] = '1'; site.main(); "
_NUMPY = "os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); import numpy; "
_EXIT = "os._exit(0)"
FLOORS = {"interpreter": ["-S", "-c", _START + _EXIT], "interpreter_plain": ["-c", "import os; " + _EXIT],
          "numpy": ["-S", "-c", _START + _NUMPY + _EXIT]}


def floor_times(root: Path, cwd: Path) -> dict:
    """One wall time of each FLOORS command, started as from a shell."""
    return {name: timed([sys.executable, *args], run_env(root), cwd)[0] for name, args in FLOORS.items()}


def build_time(stderr: str) -> float:
    m = re.search(r"build ([0-9.]+) s", stderr)
    return float(m.group(1)) if m else float("nan")


def solve_time(stderr: str) -> float:
    """The solve time the command prints (`solve X s`), NaN when it printed none."""
    m = re.search(r"solve ([0-9.]+) s", stderr)
    return float(m.group(1)) if m else float("nan")


def parts(walls: list, solves: list, floors: dict) -> dict:
    """Where a warm run's wall time goes, from medians of the same rounds: the interpreter's
    start as the command makes it (and, beside, a plain Python start), numpy's import, the printed
    solve, and the rest by difference (the package's imports, the cached model, set-up, the CSV's
    last rows). A solve started ahead (solver/ahead.py) prints the wait for it once the solver is
    set up: the part of the solve that the start-up did not hide."""
    med = {name: statistics.median(v) for name, v in floors.items()}
    solve = statistics.median(solves)
    return {"interpreter_s": med["interpreter"], "plain_start_s": med["interpreter_plain"],
            "numpy_import_s": med["numpy"] - med["interpreter"], "solve_s": solve,
            "rest_s": statistics.median(walls) - med["numpy"] - solve}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def warm(roots: dict, repeat: int, tmp: Path) -> dict:
    """Warm runs of every checkout, alternating; returns this checkout's figures."""
    for label, root in roots.items():  # fill the caches (untimed)
        run(root, ROBOTINO, tmp / f"{label}.csv")
    times = {label: [] for label in roots}
    cpus = {label: [] for label in roots}
    builds = {label: [] for label in roots}
    solves = {label: [] for label in roots}
    aheads = {label: 0 for label in roots}  # runs whose solve started from the last run's image
    floors = {name: [] for name in FLOORS}
    for _ in range(repeat):
        for label, root in roots.items():
            wall, cpu, err = run(root, ROBOTINO, tmp / f"{label}.csv")
            times[label].append(wall)
            cpus[label].append(cpu)
            builds[label].append(build_time(err))
            solves[label].append(solve_time(err))
            aheads[label] += "(started ahead)" in err
        for name, wall in floor_times(roots["this"], tmp).items():
            floors[name].append(wall)
    print(f"warm `bondsim-ros simulate {' '.join(ROBOTINO)} --csv r.csv`, {repeat} runs each "
          f"(load average after: {load()})")
    for label in roots:
        t = times[label]
        print(f"  {label:10s} wall median {statistics.median(t):.2f} s (min {min(t):.2f}, max {max(t):.2f}); "
              f"CPU median {statistics.median(cpus[label]):.2f} s; "
              f"printed build median {statistics.median(builds[label]):.2f} s; solve started ahead in "
              f"{aheads[label]} of {repeat}")
    if len(roots) == 2:
        a, b = (statistics.median(times[k]) for k in roots)
        print(f"  ratio {list(roots)[0]} / {list(roots)[1]}: {a / b:.2f}")
    t = times["this"]
    split = parts(t, solves["this"], floors)
    print(f"  of which (medians): interpreter start {split['interpreter_s']:.3f} s (a plain `python` start: "
          f"{split['plain_start_s']:.3f} s), numpy import {split['numpy_import_s']:.3f} s, printed solve "
          f"{split['solve_s']:.3f} s, the rest {split['rest_s']:.3f} s")
    return {"runs": repeat, "wall_median_s": statistics.median(t), "wall_min_s": min(t), "wall_max_s": max(t),
            "cpu_median_s": statistics.median(cpus["this"]), "build_median_s": statistics.median(builds["this"]),
            "ahead_runs": aheads["this"], "parts": split}


def core_build(root: Path) -> float:
    """The C solver core compiled as the install compiles it (once per install, machine and compiler)."""
    with tempfile.TemporaryDirectory(prefix="bondsim_core_") as folder:
        # a checkout from before the install compiled the core: its first build into a cache
        code = (f"import os; from bondsim_ros.solver import _ccore; os.environ['BONDSIM_CACHE_DIR'] = {folder!r}; "
                f"_ccore.install_build({folder!r}) if hasattr(_ccore, 'install_build') else _ccore._build()")
        tic = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=run_env(root), check=True)
        wall = time.perf_counter() - tic
        print(f"C solver core, its compile at install: wall {wall:.2f} s "
              f"(a Python process importing the solver and running gcc)")
        return wall


def without_installed_core(root: Path, tmp: Path) -> Path:
    """A folder to put first on PYTHONPATH: ``root``'s bondsim_ros as links to its files, without
    the solver core its install compiled (``solver/prebuilt``)."""
    out = tmp / f"no_core_{abs(hash(str(root)))}"
    if not out.exists():
        (out / "bondsim_ros" / "solver").mkdir(parents=True)
        for item in (root / "bondsim_ros").iterdir():
            if item.name not in ("solver", "__pycache__"):
                (out / "bondsim_ros" / item.name).symlink_to(item)
        for item in (root / "bondsim_ros" / "solver").iterdir():
            if item.name not in ("prebuilt", "__pycache__"):
                (out / "bondsim_ros" / "solver" / item.name).symlink_to(item)
    return out


def cold(label: str, root: Path, model_args: list, tmp: Path, installed_core: bool = True) -> dict:
    """A run on a new empty cache, with the solver core as installed or without one."""
    what = "cold" if installed_core else "cold without an installed core"
    path = root if installed_core else without_installed_core(root, tmp)
    with tempfile.TemporaryDirectory(prefix="bondsim_cold_") as cache:
        before = load()
        wall, cpu, err = run(path, model_args, tmp / f"cold_{label}.csv", {"BONDSIM_CACHE_DIR": cache})
        compiled = list(Path(cache).glob("solver/bdf_core_*.so"))
        if installed_core and compiled:
            # the checkout's install holds no core for this machine (not installed since the core
            # or the compiler changed, or a checkout from before the install compiled it)
            what += " (no installed core for this machine: the run compiled it)"
            if label == "this":
                raise SystemExit("this checkout's solver/prebuilt has no core for this machine: "
                                 "run `pip install -e .` (tools/setup.sh) first")
        print(f"{what} `simulate {model_args[0]}` ({label}): wall {wall:.2f} s, CPU {cpu:.2f} s, printed build "
              f"{build_time(err):.2f} s (load average before {before}, after {load()})")
        # then warm from that same cache
        wall2, cpu2, err2 = run(path, model_args, tmp / f"cold_{label}.csv", {"BONDSIM_CACHE_DIR": cache})
        print(f"  next run on that cache: wall {wall2:.2f} s, CPU {cpu2:.2f} s, printed build {build_time(err2):.2f} s")
        return {"wall_s": wall, "cpu_s": cpu, "build_s": build_time(err)}


def best_of(repeat: int, fn) -> dict:
    """The run of least wall time of ``repeat`` (a shared machine's load only adds time)."""
    runs = [fn() for _ in range(max(1, repeat))]
    best = min(runs, key=lambda r: r["wall_s"])
    return dict(best, runs=len(runs), wall_max_s=max(r["wall_s"] for r in runs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--ref", type=Path, help="another checkout to compare with (alternating runs)")
    ap.add_argument("--cold", action="store_true", help="also time builds on empty caches")
    ap.add_argument("--dualarm", action="store_true", help="with --cold: the dual-arm model too (minutes)")
    ap.add_argument("--cold-repeat", type=int, default=1, help="runs of each cold case (the fastest is kept)")
    ap.add_argument("--no-warm", action="store_true")
    record.add_argument(ap, "cli_bench")
    a = ap.parse_args()
    roots = {"this": HERE}
    if a.ref:
        roots["ref"] = a.ref.resolve()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load()}")
    figures = {"command": f"bondsim-ros simulate {' '.join(ROBOTINO)} --csv r.csv", "warm": None,
               "cold": {}, "core_build_s": None}
    with tempfile.TemporaryDirectory(prefix="bondsim_cli_bench_") as tmp:
        tmp = Path(tmp)
        if not a.no_warm:
            figures["warm"] = warm(roots, a.repeat, tmp)
        if a.cold:
            for label, root in roots.items():
                core = core_build(root)
                n = a.cold_repeat
                robotino = best_of(n, lambda: cold(label, root, ROBOTINO, tmp))
                bare = best_of(n, lambda: cold(label, root, ROBOTINO, tmp, installed_core=False))
                dualarm = best_of(n, lambda: cold(label, root, DUALARM, tmp)) if a.dualarm else None
                dual_bare = (best_of(n, lambda: cold(label, root, DUALARM, tmp, installed_core=False))
                             if a.dualarm else None)
                if label == "this":
                    figures["core_build_s"] = core
                    figures["cold"] = {"robotino": robotino, "robotino_no_core": bare,
                                       **({"dualarm": dualarm, "dualarm_no_core": dual_bare} if dualarm else {})}
    if a.record:
        record.write("cli_bench", sys.argv[1:], figures, placeholders={"--ref": "OTHER_CHECKOUT"})


if __name__ == "__main__":
    main()
