"""Render docs/benchmarks.md from the recorded results in benchmarks/results/*.json.

    python benchmarks/report.py            # print the document
    python benchmarks/report.py --write    # write docs/benchmarks.md
    python benchmarks/report.py --check    # exit 1 if docs/benchmarks.md differs from the records

A benchmark script run with ``--record`` writes its result (benchmarks/record.py); this script
lays out one table per benchmark, headed by the machine, the commit and the date of the run and
the command that reproduces it. test/test_benchmarks_report.py keeps the committed document
equal to what this script renders.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOC = HERE.parent / "docs" / "benchmarks.md"
DASH = "–"


# -- number formatting ------------------------------------------------------------------------
def sig(v, digits: int = 3, strip: bool = True) -> str:
    """``v`` with ``digits`` significant digits, never in exponent form (288.4 -> 288, 0.0731 -> 0.0731);
    trailing zeros dropped unless ``strip`` is false (1.0 s measured to two digits stays 1.0)."""
    if v is None or not math.isfinite(float(v)):
        return DASH
    v = float(v)
    if v == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    text = f"{v:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if strip and "." in text else text


def ratio(v) -> str:
    return DASH if v is None else f"{v:.2f}"


def sci(v) -> str:
    """2.34e-6, not 2.34e-06."""
    if v is None:
        return DASH
    mantissa, exponent = f"{v:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def count(v) -> str:
    return DASH if v is None else f"{int(v):,}"


def span(lo, hi, fmt=sig, unit="") -> str:
    if lo is None or hi is None:
        return DASH
    a, b = fmt(lo), fmt(hi)
    return (a if a == b else f"{a}{DASH}{b}") + unit


def table(header: list, rows: list) -> list:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def dig(d, *keys):
    """d[k1][k2]... or None where any level is missing or None."""
    for k in keys:
        if not isinstance(d, dict) or d.get(k) is None:
            return None
        d = d[k]
    return d


# -- one renderer per benchmark -----------------------------------------------------------------
def solver_bench(f: dict) -> list:
    models = f["models"]
    refs = [k for k in ("C-IDA", "C-IDA KLU", "C-IDA native", "C-IDA native KLU")
            if any(k in (m.get("time_s") or {}) for m in models)]
    label = {"C-IDA": "Debian's C-IDA (dense)", "C-IDA KLU": "Debian's C-IDA with KLU",
             "C-IDA native": "native C-IDA (dense)", "C-IDA native KLU": "native C-IDA with KLU"}

    def cell(m, key):
        v, out = dig(m, "equal_error", "state", key), dig(m, "equal_error", "outputs", key)
        if v is None and out is None:
            return DASH
        pts = dig(m, "points", "state", key) or []
        return (f"**{ratio(v)}**" if v is not None else DASH) + \
            (" (" + ", ".join(ratio(r) for _, r in pts) + ")" if len(pts) > 1 else "") + f"; outputs {ratio(out)}"

    def front(m, measure, key):
        fr = dig(m, "pareto", measure, key)
        return DASH if fr is None else str(len(fr))

    n_rtols = len(f["rtols"])
    header = ["model", "n"] + [f"ours / {label[k]} at equal error: state (its points); outputs" for k in refs] + \
        [f"Pareto points (state) of {n_rtols}: ours / " + " / ".join(k for k in refs)]
    rows = []
    for m in models:
        row = [m["model"], m["n"]]
        for k in refs:
            row.append(cell(m, k))
        row.append(" / ".join(front(m, "state", k) for k in ["ours", *refs]))
        rows.append(row)
    out = table(header, rows)
    mid = models[0]["rtol"] if models else 1e-6
    lu_names = {"dense": "dense LU", "klu": "KLU", "own": "own sparse LU"}
    out += ["", f"At rtol {mid:.0e}: median time of a run, set-up included (min{DASH}max), and the time per step"
            " (ours: with its LU where the run recorded it):", ""]
    out += table(["model"] + ["ours"] + [label[k] for k in refs],
                 [[m["model"]] + [f"{sig(m['time_s'][k] * 1e3)} ms ({span(*(x * 1e3 for x in m['time_range_s'][k]))}); "
                                  f"{sig(m['per_step_us'][k])} µs/step"
                                  + (f"; {lu_names.get(m['ours_lu'], m['ours_lu'])}"
                                     if k == "ours" and m.get("ours_lu") else "")
                                  if k in m["time_s"] else DASH
                                  for k in ["ours", *refs]] for m in models])
    out += ["", f"Work per run at rtol {mid:.0e} (ours / Debian's C-IDA, dense):", ""]
    out += table(["model", "steps", "rejected", "Newton iterations", "LU factorisations", "mode switches (restarts)"],
                 [[m["model"]] + [f"{count(m['work']['ours'][k])} / {count(m['work']['C-IDA'][k])}"
                                  for k in ("steps", "rejected", "newton_iters", "lu_factorizations")]
                  + [f"{count(m['work']['ours']['events'])} ({count(m['work']['ours']['event_restarts'])}) / "
                     f"{count(m['work']['C-IDA']['events'])} ({count(m['work']['C-IDA']['event_restarts'])})"]
                  for m in models])
    return out


def robotino_bench(f: dict) -> list:
    ours, ida = f["work"]["ours"], f["work"]["C-IDA"]

    def solve(who):
        med, rng = dig(f, "solve_s", who), dig(f, "solve_s_range", who)
        if med is not None:
            return f"{sig(med)} s" + (f" ({span(*rng)})" if rng else "")
        return span(*rng, unit=" s") if rng else DASH

    attempts = lambda w: (w["newton_iters"] / (w["steps"] + w["rejected"])  # noqa: E731
                          if w.get("steps") is not None and w.get("rejected") is not None else None)
    located = lambda w: (f"{count(w.get('events'))} ({count(w.get('event_restarts'))})"  # noqa: E731
                         if w.get("events") is not None else "not located")
    rows = [
        ["steps", count(ours["steps"]), count(ida["steps"])],
        ["rejected steps (error test + Newton)",
         f"{count(ours['rejected'])} ({100 * ours['rejected'] / ours['steps']:.1f} %)",
         f"{count(ida['rejected'])} ({100 * ida['rejected'] / ida['steps']:.1f} %)"],
        ["Newton iterations", count(ours["newton_iters"]), count(ida["newton_iters"])],
        ["Newton iterations per attempted step", sig(attempts(ours)), sig(attempts(ida))],
        ["LU factorisations", count(ours["lu_factorizations"]), count(ida["lu_factorizations"])],
        ["mode switches at located roots (of them restarts)", located(ours), located(ida)],
        [f"time of {f['repeat']} runs" + (", set-up included" if f.get("setup_included") else "") + ": "
         + ("median (min" if dig(f, "solve_s", "ours") is not None else "(min") + f"{DASH}max)",
         solve("ours"), solve("C-IDA")],
        ["**ours / C-IDA**", f"**{ratio(f['ratio'])}**", "1"],
    ]
    names = {"C-IDA KLU": "Debian's C-IDA with KLU", "C-IDA native": "native C-IDA (dense)",
             "C-IDA native KLU": "native C-IDA with KLU"}
    for key, r in (f.get("ratios") or {}).items():
        rows += [[f"{names.get(key, key)}: time, median (min{DASH}max)", DASH, solve(key)],
                 [f"**ours / {names.get(key, key)}**", f"**{ratio(r)}**", DASH]]
    ida_name = "SUNDIALS IDA from C (Debian" + (", moded, rootfinding)" if f.get("ida_moded") else ")")
    out = table(["", "bondsim_ros BDF", ida_name], rows)
    err = f["tracking_error_after_5s"]
    cold = dig(f, "build_s", "cold")
    out += ["", wrap(f"Build of the model: cold {f'{sig(cold)} s' if cold is not None else 'not measured'}, cached "
                     f"{sig(dig(f, 'build_s', 'cached'))} s. Tracking errors after 5 s: x {sci(err['x'])} m, "
                     f"y {sci(err['y'])} m, φ {sci(err['phi'])} rad; largest pose difference to C-IDA over the run "
                     f"{sci(f['max_pose_difference_to_cida'])}."
                     + (f" IDA through scikit-sundae (Python callbacks): {sig(f['sksundae_s'])} s."
                        if f.get("sksundae_s") is not None else ""))]
    return out


def cli_bench(f: dict) -> list:
    sig2 = lambda v, digits=2: sig(v, digits, strip=False)  # noqa: E731 (times to two digits)
    w = f.get("warm") or {}
    rows = []
    if w:
        rows.append([f"warm: wall, median of {w['runs']} (min{DASH}max)",
                     f"**{sig2(w['wall_median_s'], 2)} s** "
                     f"({span(w['wall_min_s'], w['wall_max_s'], lambda v: sig2(v, 2))})"])
        p = w.get("parts")
        if p:
            if "plain_start_s" in p:
                rows.append(["warm, of which (medians of the same rounds): the interpreter's start, as the command "
                             "makes it (a plain `python` start, the ROS 2 wheels' second start in it)",
                             f"{sig2(p['interpreter_s'], 2)} s ({sig2(p['plain_start_s'], 2)} s)"])
            else:  # (a record from before the command started Python once: its start was a plain one)
                rows.append(["warm, of which (medians of the same rounds): the interpreter's start "
                             "(the ROS 2 wheels' second start in it)",
                             f"{sig2(p['interpreter_s'], 2)} s ({sig2(p['reexec_s'], 2)} s)"])
            rows.append(["warm, of which: numpy's import", f"{sig2(p['numpy_import_s'], 2)} s"])
            ahead = w.get("ahead_runs")
            started = f" (started ahead in {ahead} of {w['runs']} runs: the wait for it)" if ahead else ""
            rows.append([f"warm, of which: the solve `simulate` prints{started}", f"{sig2(p['solve_s'], 2)} s"])
            rows.append(["warm, of which: the rest, by difference (the package's imports, the cached model, "
                         "set-up, the CSV's last rows)", f"{sig2(p['rest_s'], 2)} s"])
        rows.append(["warm: CPU time, median", f"{sig2(w['cpu_median_s'], 2)} s" if w.get("cpu_median_s") else DASH])
        rows.append(["warm: build time `simulate` prints", f"{sig2(w['build_median_s'], 2)} s"])
    for key, label in (("robotino", "Robotino"), ("dualarm", "18-DOF dual-arm (`simulate dualarm`)")):
        for suffix, what in (("", "empty cache, the solver core as installed"),
                             ("_no_core", "empty cache, no installed solver core (built beside the model)")):
            c = dig(f, "cold", key + suffix)
            if c:
                best = f" (fastest of {c['runs']})" if c.get("runs", 1) > 1 else ""
                cpu = f", CPU {sig2(c['cpu_s'], 2)} s" if c.get("cpu_s") is not None else ""
                rows.append([f"{what}, {label}: printed build / wall of the command{best}",
                             f"{sig2(c['build_s'], 2)} s / **{sig2(c['wall_s'], 2)} s**{cpu}"])
    if f.get("core_build_s") is not None:
        rows.append(["C solver core, its compile (at install; on first use where the install compiled none)",
                     f"{sig2(f['core_build_s'], 2)} s"])
    return [f"The command: `{f['command']}`.", ""] + table(["", "measured"], rows)


def small_runs(f: dict) -> list:
    keys = ["new solver", "reused solver", "reused, values given", "C-IDA", "simulate, per run of a sweep",
            "simulate_many, per run"]
    header = ["model", "n, outputs, steps"] + [f"{k} [µs]" for k in keys] + ["reused / new", "reused / C-IDA",
                                                                             "values given / C-IDA"]
    rows = []
    lead = [f"C-IDA: {f['ida']}.", ""] if f.get("ida") else []
    for m in f["models"]:
        us = m["us_per_run"]
        rows.append([m["model"], f"{m['n']}, {count(m['outputs'])}, {count(m['steps'])}"
                    + (f" / {count(m['ida_steps'])}" if m.get("ida_steps") is not None else "")]
                    + [sig(us.get(k)) for k in keys]
                    + [f"**{ratio(m['ratio_reused_to_new'])}**", f"**{ratio(m['ratio_reused_to_cida'])}**",
                       ratio(m["ratio_given_to_cida"])])
    return lead + table(header, rows)


def ros_bench(f: dict) -> list:
    runs, over = f["runs"], f.get("over_runs") or {}

    def rtf(r):
        x = r.get("rtf_run")
        if not x:
            return None
        return (f"rtf {sig(x['rtf'])}: {sig(x['simulated_s'], 4)} s simulated in {sig(x['wall_s'])} s, "
                f"{x['overruns']} overruns")

    quantities = [
        ("one frame (30.3 ms simulated: solver + outputs)",
         lambda r: f"{sig(r['frame_ms'])} ms" if r.get("frame_ms") is not None else None,
         lambda o: f"{span(*o['frame_ms'])} ms" if o.get("frame_ms") else None),
        ("the solver alone, × real time",
         lambda r: sig(r["solver_real_time_factor"]) if r.get("solver_real_time_factor") is not None else None,
         lambda o: span(*o["solver_real_time_factor"]) if o.get("solver_real_time_factor") else None),
        ("sustained real-time factor while publishing at 33 Hz", rtf, rtf),
        ("publication rate at rtf 1",
         lambda r: f"{r['real_time']['rate_hz']:.2f} Hz" if dig(r, "real_time", "rate_hz") is not None else None,
         lambda o: None),
        ("publication period jitter at rtf 1, p99",
         lambda r: (f"{sig(r['real_time']['jitter_p99_ms'], 2)} ms"
                    if dig(r, "real_time", "jitter_p99_ms") is not None else None),
         lambda o: None),
        ("same, at a subscriber in another process, p99",
         lambda r: (f"{sig(r['real_time']['subscriber_p99_ms'], 3)} ms"
                    if dig(r, "real_time", "subscriber_p99_ms") is not None else None),
         lambda o: None),
    ]
    has_over = bool(over)
    header = [""] + [f"run {k + 1}" for k in range(len(runs))] + (["all runs"] if has_over else [])
    rows = []
    for label, per_run, all_runs in quantities:
        row = [label] + [per_run(r) or DASH for r in runs]
        if has_over:
            row.append(all_runs(over) or DASH)
        rows.append(row)
    return table(header, rows)


def ros_soak(f: dict) -> list:
    rss = f"{sig(f['rss_mb_start'], 4)} → {sig(f['rss_mb_end'], 4)} MB"
    if f.get("rss_mb_max") is not None:
        rss += f" (max {sig(f['rss_mb_max'], 4)})"
    rss += f"; second half {sig(f['rss_mb_per_sim_hour_second_half'], 2)} MB per simulated hour"
    rows = [
        ["run", f"{sig(f['sim_seconds'], 4)} simulated seconds at a real-time factor of {sig(f['rtf'])}"],
        ["node deaths / tracebacks in its log / exit status on SIGINT",
         f"**{f['node_deaths']} / {f['tracebacks']} / {f['exit_status_on_sigint']}**"],
        ["solver failures (each reported on `/diagnostics` and recovered)", f"**{f['solver_failures']}**"],
        ["resident memory after warm-up → at the end", rss],
        ["frames / overruns / max lag", f"{count(f['frames'])} / {f['overruns']} / {sig(f['max_lag_ms'])} ms"],
        ["largest gap between two `/joint_states` received (pauses excluded)",
         f"{sig(f['max_joint_state_gap_ms'])} ms"],
        ["commands sent / of them hostile / service calls",
         f"{count(f['commands_sent'])} / {count(f['hostile_commands'])} / {f['service_calls']}"],
    ]
    return table(["", "measured"], rows)


def twin_stress(f: dict) -> list:
    wall = f["wall_s_per_seed"]
    per_seed = (f"{sig(wall['median'], 2)} s (median; {span(wall['min'], wall['max'], lambda v: sig(v, 2))} s)"
                if wall.get("median") is not None else f"{span(wall['min'], wall['max'], lambda v: sig(v, 2))} s")
    rows = [["seeds / frames per seed", f"{f['seeds']} ({f['seeds_run']} seeds) / {count(f['frames'])}"],
            ["seeds with a solver failure / failures in all", f"**{f['failed_seeds']} / {f['failures']}**"],
            ["wall time per seed", per_seed]]
    for x in f.get("failed") or []:
        rows.append([f"seed {x['seed']}", f"{x['failures']} failures, first at t = {x['first_t']:.4f}: "
                                          f"{x['first_message']}"])
    return table(["", "measured"], rows)


def fleet_bench(f: dict) -> list:
    rows = []
    for b in f["by_processes"]:
        limit = "+" if b.get("at_search_limit") else ""
        at_best = []
        for best, trials in zip(b["largest_held"], b["trials"]):
            at_best += [t["tick_p99_ms"] for t in trials if t["robots"] == best and t["ok"]]
        p99 = span(min(at_best), max(at_best), unit=" ms") if at_best else DASH
        rows.append([str(b["processes"]), ", ".join(str(v) for v in b["largest_held"]),
                     f"**{sig(b['median'])}{limit}**", span(min(b["largest_held"]), max(b["largest_held"])), p99])
    intro = (f"{f['seconds']:g} s measured after a {f['warmup']:g} s warm-up per trial, "
             f"search limit {f['max_robots']} robots.")
    if any(b.get("at_search_limit") for b in f["by_processes"]):
        intro += (" A median marked + is the search limit where a run held it: the largest fleet held "
                  "lies at or beyond it.")
    return [intro, ""] + table(["processes", "largest fleet held, per run", "median", "spread",
                                "worst process's tick p99 at that fleet"], rows)


def model_size(f: dict) -> list:
    phases = ["load", "dae", "reduce"] + (["source"] if f.get("codegen") else [])
    rows = []
    for r in f["rows"]:
        if "refusal" in r:
            rows.append([f"`{r['chain']}`", count(r["n"]), f"refused after {sig(r['refused_after_s'])} s: "
                         f"{r['refusal'][:80]}"] + [""] * (len(phases) + 3))
            continue
        rows.append([f"`{r['chain']}`", count(r["n"]), count(r["raw_eqs"]), count(r["eqs"]), count(r["nnz"])]
                    + [sig(r[f"{p}_s"]) for p in phases] + [f"**{sig(r['total_s'])}**"])
    return table(["chain", "N", "raw equations", "after elimination", "Jacobian non-zeros"]
                 + [f"{p} s" for p in phases] + ["total s"], rows)


def demo(f: dict) -> list:
    e = f["tracking_error_after_5s"]
    m, s = divmod(int(round(f["demo_wall_s"])), 60)
    rows = [["`bondsim-ros demo` (60 s of rose path, bag, plots, video)",
             f"{m} min {s:02d} s; {count(f['frames'])} frames, {f['overruns']} overruns, "
             f"{f['frames_skipped']} skipped; tracking error after 5 s x {sci(e['x'])} m, y {sci(e['y'])} m, "
             f"φ {sci(e['phi'])} rad"]]
    for key in ("tests", "ci"):
        t = f.get(key)
        if t:
            m, s = divmod(int(round(t["wall_s"])), 60)
            rows.append([f"`{t['command']}`",
                         f"{t['passed']} passed in {m} min {s:02d} s "
                         f"({'setup included' if t['setup_included'] else 'setup already done'})"])
    return table(["command", "measured"], rows)


def sweep_bench(f: dict) -> list:
    labels = {"jobs_1": "`--jobs 1` (this process)", "jobs_2": "`--jobs 2` (2 spawned processes)",
              "dask_2": "`--scheduler`: local Dask cluster, 2 worker processes"}
    rows = []
    for case in ("small", "robotino"):
        c = f.get(case)
        if not c:
            continue
        what = f"{c['model']}" + (f", {sig(c['t_end'])} s each" if c.get("t_end") else "")
        for key, label in labels.items():
            v = c.get(key)
            if v:
                load = f"{sig(v['load_before'][0], 2)} / {sig(v['load_after'][0], 2)}" if v.get("load_before") else DASH
                rows.append([what, label, count(v["runs"]), f"{sig(v['wall_s'])} s", f"**{sig(v['runs_per_s'])}**",
                             ratio(v["speedup"]), "yes" if v["identical_to_jobs_1"] else "**no**", load])
    for key, when in (("control_before", "before"), ("control_after", "after")):
        c = f.get(key)
        if c:
            rows.append([f"control {when}: a pure-Python loop, no sweep", "2 spawned processes", "2",
                         f"{sig(c['two_processes_s'])} s", DASH, ratio(c["speedup"]), DASH, DASH])
    return table(["model", "where", "runs", "wall", "runs/s", "× jobs 1", "same table as jobs 1",
                  "load average (1 min) before / after"], rows)


def fit_bench(f: dict) -> list:
    labels = {"jobs_1": "`--jobs 1` (this process)", "jobs_2": "`--jobs 2` (2 spawned processes)",
              "dask_2": "`--scheduler`: local Dask cluster, 2 worker processes"}
    rows = []
    for case in ("omni5dpo", "robotino"):
        c = f.get(case)
        if not c:
            continue
        what = (f"{c['model']}: {c['parameters']} parameters, {sig(c['seconds'])} s log, "
                f"{count(c['residuals'])} residuals")
        for key, label in labels.items():
            v = c.get(key)
            if v:
                load = f"{sig(v['load_before'][0], 2)} / {sig(v['load_after'][0], 2)}"
                walls = ", ".join(sig(w) for w in v.get("walls_s", [v["wall_s"]]))
                rows.append([what, label, count(v["simulations"]), f"**{sig(v['wall_s'])} s**", walls,
                             ratio(v["speedup"]), "yes" if v["identical_to_jobs_1"] else "**no**", load])
    for key, when in (("control_before", "before"), ("control_after", "after")):
        c = f.get(key)
        if c:
            rows.append([f"control {when}: a pure-Python loop twice, no fit", "2 spawned processes", DASH,
                         f"{sig(c['two_processes_s'])} s", DASH, ratio(c["speedup"]), DASH, DASH])
    return table(["fit", "where the Jacobian's runs go", "simulations", "wall (fastest)", "each run [s]", "× jobs 1",
                  "same fit as jobs 1", "load average (1 min) before first / after last"], rows)


# (record name, section title, what it measures, renderer)
SECTIONS = [
    ("solver_bench", "The solver against SUNDIALS IDA at equal error",
     "A work-precision sweep (atol = rtol/100) of bondsim_ros's BDF and C-IDA (Debian's build and one "
     "built `-O3 -march=native`, each with dense LU and, above 20 unknowns, with KLU), alternating in "
     "one process. Both integrate the same generated C: the "
     "moded residual and analytic Jacobian where the model has modes (the Robotino's roller switches), "
     "IDA locating the switches with its rootfinding and restarting there (`IDAReInit`), ours with its "
     "events. A run's time includes its set-up (ours: `BDFSolver` and `init`; IDA: created and "
     "initialised inside its C call), not the output columns; the median of the repeats. The error of a "
     "run is the largest max|x − x_ref| / max|x_ref| over the compared columns: the state (the pose x, "
     "y, φ of the robots, the closed form where there is one) and all named outputs, against C-IDA at "
     "rtol 1e-10 where there is no closed form; errors below twice the distance between our and "
     "C-IDA's tight runs are not counted. Only Pareto points count (a run is dropped when a cheaper run "
     "of the same solver has an equal or lower error). The figure of merit is our time over C-IDA's at "
     "equal error: both Pareto fronts interpolated (log-log) at each front point's error inside the "
     "errors both reach, the median of those ratios (the ratios themselves in brackets).",
     solver_bench),
    ("robotino_bench", "The Robotino paper case",
     "The paper's run: 50 s, output every 0.02 s, hmax 0.02 s, rtol 1e-6, atol 1e-8, on the same "
     "generated equations and consistent initial values for both solvers, alternating in one process; "
     "IDA (Debian's build and the native one, dense and KLU) on the moded residual with rootfinding, as "
     "in the sweep above, set-up timed on both sides. "
     "Equal tolerances, not equal error: the sweep above compares at equal error. The work counters do "
     "not depend on the machine or its load. For scale, the paper's C++ BondSim took 0.51 s on a Ryzen 7 "
     "PRO 4750G.",
     robotino_bench),
    ("cli_bench", "`bondsim-ros simulate` from the command line",
     "What a user waits for: each run a fresh `bondsim-ros simulate` process (the installed command) "
     "started as from a shell, timed from spawn to exit, with the package's compiled modules (.pyc) as "
     "an installed package has them. In the pip environment the ROS 2 wheels start every interpreter a "
     "second time with their libraries on LD_LIBRARY_PATH; the command spares `simulate` and the other "
     "commands that load no ROS library that second start (`scripts/bondsim-ros`), and the table gives "
     "a plain `python` start beside its own. "
     "The warm wall time is split, with medians of the same rounds, into the interpreter's start and "
     "numpy's import (measured alone), the solve the command prints, and the rest by difference: "
     "what the package adds around its solve. The command is the same each time, so from the second "
     "run on its solve starts ahead, on the second core, from the image the run before left "
     "(`docs/solver.md`, solver/ahead.py) while numpy and the package are imported: the solve it "
     "prints is then the wait for that run once the solver is set up. "
     "Warm: the generated-code cache after one untimed run. Empty cache: a new `BONDSIM_CACHE_DIR` "
     "with nothing in it, a user's first run after the install, so the model is built, reduced, "
     "printed as C and compiled; the C solver core is the one the install compiled (`pip install`, "
     "`pip install -e` and `colcon build` run gcc on it, timed on its own below). No installed solver "
     "core: the same for a package installed without it (a wheel built on another machine, an "
     "install without a compiler): gcc builds the core in the background from the command's start, "
     "while the model is built. "
     "The CPU time (user + system of the command and its compilers) moves far less with the load "
     "of a shared machine than the wall time. A warm run's CPU time exceeds its wall time: its solve "
     "runs on the second core while the main thread imports and sets up, and a third thread "
     "formats the CSV (by the solver core, `docs/solver.md`) as the rows come.",
     cli_bench),
    ("small_runs", "Small models: set-up plus solve per run, against IDA with its set-up",
     "What a fit or a parameter sweep pays per simulation of a small model (rtol 1e-6, atol 1e-8), each run "
     "with another value of one run-time parameter, alternating in one process, the fastest of the "
     "repeats: a new `BDFSolver` + `init` (consistent initial values) + `advance`; the same on one "
     "solver through `BDFSolver.reset` (what `simulate_many` and the fit do; bit for bit the new solver's "
     "results, which the script checks); `reset` handed the consistent values (no initialisation: the "
     "work C-IDA is given); C-IDA's run from Python, its IDACreate/IDAInit/linear solver set-up and "
     "IDAFree included, from the SUNDIALS build the table's heading names (with `--sundials-prefix`: "
     "the one built `-O3 -march=native`, IDA's fastest here); and the simulation layer, a sweep of "
     "`simulate` calls against one `simulate_many` over the same sets (outputs and results included). "
     "These rows compare a run's whole cost at equal tolerances (the steps: ours / C-IDA's); the "
     "solver tables above compare at equal error.",
     small_runs),
    ("ros_bench", "The ROS 2 graph: frame cost, real-time factor, jitter",
     "Real rclpy (EventsExecutor, Fast DDS, localhost discovery). One Robotino twin on the rose path "
     "publishing at 33 Hz at a real-time factor of 50 and of 1 (publication period jitter, and as "
     "received by a subscriber in another process).",
     ros_bench),
    ("fleet_bench", "Fleets: Robotino twins in real time, in one process and over two",
     "`bondsim-ros fleet N --processes P` (rose path, 33 Hz, namespaces robot0..): each run searches "
     "the largest N that holds real time over the whole measured run in every process: no frame "
     "skipped, no overrun, tick p99 (all of a process's robots: publish, then step) under the 30.3 ms "
     "period. N doubles from P until a fleet fails, then the boundary is bisected; the median and the "
     "spread over the runs are reported, since a shared machine's noise moves the boundary.",
     fleet_bench),
    ("ros_soak", "Soak: the running graph under hostile commands",
     "`bondsim-ros up --reference cmd_vel` in its own process at a real-time factor of 20, under a "
     "20 s cycle of random commands (a third beyond the limits), NaN, ±inf and ±1e300 values, a 1 kHz "
     "burst, silence, `~/reset` and `~/pause`, then SIGINT.",
     ros_soak),
    ("twin_stress", "Twin stress: random commands without ROS",
     "The Robotino twin driven by a seeded random twist stream (a new command in 70 % of the frames, a "
     "third beyond the limits; frames of 1, 30.3, 50 or 606 ms, one `step_to` each); 4,000 frames are "
     "about 10 simulated minutes. A solver failure is counted and the twin recovers from it as the node "
     "does; the script exits 1 if there was any. `test/test_twin_step_to.py` replays seeds 28 and 94, "
     "`test/test_events.py` seeds 10 and 152 (a PID's clip switched back, and one on its limit).",
     twin_stress),
    ("sweep_bench", "`bondsim-ros sweep`: runs per second",
     "One `bondsim_ros.sweep.sweep()` call per row, timed whole as a user waits for it: with `--jobs 2` "
     "that includes starting the two worker processes and their loading the model from the generated-code "
     "cache; the Dask cluster is started before the timing (as a running cluster would be), its workers "
     "load the model within it. Small model: the built-in pendulum over its rod length L (about 2 ms a "
     "run); Robotino: robotino_twist, 50 s each, over 10 × n/10 body-twist commands (vx_cmd, wz_cmd). Every table "
     "must equal the serial one value for value.",
     sweep_bench),
    ("fit_bench", "`bondsim-ros fit`: the Jacobian's runs on workers",
     "One `bondsim_ros.fit.fit()` call per row, timed whole as a user waits for it: with `--jobs 2` that "
     "includes starting the two worker processes and their loading the model (from the generated-code cache) "
     "and the fit's problem; the Dask cluster is started before the timing. Each iteration simulates the "
     "accepted point in the calling process, then one point per parameter for the Jacobian, these in "
     "parallel: with 3 parameters and 2 workers an iteration takes at best 3 runs' time instead of 4 "
     "(× 1.33). 5DPO: the identification of docs/examples/omni5dpo.md (I_zz, kp, ki from yaw-rate steps at "
     "50 Hz); Robotino: "
     "robotino_twist's mass, yaw inertia and motor constant from a cmd_vel log at 100 Hz (test/test_fit.py's "
     "3 s pattern of steps, repeated). The three kinds run in turn, a few times each; the fastest of each "
     "counts (the one the machine's other jobs disturbed least), and every one must equal the serial fit "
     "bit for bit (estimate, covariance, number of simulations).",
     fit_bench),
    ("model_size", "Build time against model size",
     "Ladders of 10 … 10 000 elements on alternating 1- and 0-junctions driven by a voltage source, "
     "built from a YAML model file through the phases of a build: reading the file, collecting the "
     "equations, the elimination and the Jacobian, the last two as `compile_model` runs them (the "
     "Floats' shared records of facts, docs/engine.md step 4). `R`: resistors closed by one inertia; `IRC`: I, R, C "
     "in turn; `Rp`, `IRCp`: the same with every value the run-time parameter `k` (pivots made of "
     "parameters, docs/engine.md step 3). One process, one build per row.",
     model_size),
    ("demo", "The README's commands from a fresh clone",
     "The demo and the test suite as a new user runs them (README, \"Two commands\"), from a fresh "
     "clone with the generated-code cache of the machine warm.",
     demo),
]

OTHER_SCRIPTS = [
    ("c_ida.py", "the C driver of SUNDIALS IDA that solver_bench and robotino_bench use as the reference "
                 "(above); not run on its own"),
    ("multibody_bench.py", "the pendulum and slider-crank variants against their minimal-coordinates "
                           "models; its table is in docs/examples/multibody.md"),
    ("call_overhead.py", "the fixed cost of a solver call (`advance()` of one frame, `BDFSolver` + "
                         "`init` without consistent initialisation) on a two-unknown model"),
    ("reduce_identity.py", "not a timing: checks that two checkouts reduce every built-in model to "
                           "identical equations (`--against OTHER_CHECKOUT`)"),
]

INTRO = """\
Measured figures of the solver, the command line and the ROS graph, one table per benchmark, each
from the latest recorded run: the machine, commit and date it ran on, and the command that runs it
again. The scripts are in `benchmarks/`; nothing here is a timed test.

How to read them: the machines are virtual machines with 2 cores shared with other jobs, so
absolute times move between runs and machines; compare ratios within one run (both solvers
alternate in one process, under the same load), and rely on the work counters (steps, Newton
iterations, LU factorisations, rejected steps), which do not depend on the machine. Software:
Debian 12, Python 3.11, gcc 12 (the solver core and the model kernels), SUNDIALS 6.4.1 (Debian's
`libsundials-dev`, built with KLU from SuiteSparse 5.12, and the same release built `-O3
-march=native` with KLU, below: IDA's fastest build here).

To record a new result, run a script with `--record` (it writes `benchmarks/results/NAME.json`:
machine, commit, date, command and figures), then `python benchmarks/report.py --write`, which
renders this file; `test/test_benchmarks_report.py` fails when the two disagree."""

REFERENCE = """\
## The reference: SUNDIALS IDA driven from C (`benchmarks/c_ida.py`)

IDA integrates the model's own generated C (`bondgraph/codegen.py`), compiled with a small C
driver (`-O3 -march=native`) that integrates over all output times in one call, so no Python runs
inside IDA's loop. It gets what the BDF solver gets: for a model with modes, the moded residual and
Jacobian (`residual_modes`, `jacobian_modes`: smooth while the modes stay fixed), its switching
functions to IDA's rootfinding (`IDARootInit`), and at a root the modes the laws pick just past it,
then a restart there (`IDAReInit`; `IDACalcIC` after it failed at most roller switches, the index-2
rolling constraint, and cost more, `CIDA(restart=...)`); the analytic iteration matrix
`dF/dy + cj dF/dy'` from the same kernel, dense (dense LU) or in its CSC pattern (KLU);
`IDASetId` + `IDASetSuppressAlg`, `IDASVtolerances`, `IDASetMaxStep`. Both solvers get the same
unknowns, consistent initial values, tolerances, hmax and output times. Everything is generated
under `~/.cache/bondsim_ros/c_ida/`. It needs `apt-get install libsundials-dev libsuitesparse-dev`
(benchmarks only; nothing outside `benchmarks/` uses it).

The native build: SUNDIALS 6.4.1, the release Debian ships (its source package, `apt-get source
sundials`, or the tag from GitHub), only IDA with the serial NVector, the dense solver and KLU
(SuiteSparse's, from Debian's `libsuitesparse-dev`), static libraries, built for the CPU it runs
on (5 s here):

    git clone --depth 1 --branch v6.4.1 https://github.com/LLNL/sundials sundials-src
    cmake -S sundials-src -B sundials-bld -DCMAKE_INSTALL_PREFIX=$HOME/sundials-native \\
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O3 -march=native -DNDEBUG" \\
      -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF -DBUILD_STATIC_LIBS=ON \\
      -DBUILD_IDA=ON -DBUILD_ARKODE=OFF -DBUILD_CVODE=OFF -DBUILD_CVODES=OFF -DBUILD_IDAS=OFF \\
      -DBUILD_KINSOL=OFF -DEXAMPLES_ENABLE_C=OFF -DEXAMPLES_INSTALL=OFF -DSUNDIALS_INDEX_SIZE=64 \\
      -DENABLE_KLU=ON -DKLU_INCLUDE_DIR=/usr/include/suitesparse -DKLU_LIBRARY_DIR=/usr/lib/x86_64-linux-gnu
    make -C sundials-bld -j2 install
    python benchmarks/solver_bench.py --sundials-prefix $HOME/sundials-native   # or BONDSIM_SUNDIALS_PREFIX

It is linked statically into the model's library with its symbols kept local
(`-Wl,--exclude-libs,ALL`): Debian's shared library and a native build carry the same soname, and
loaded as two shared libraries into one process the second would silently be the first. Both
builds run the same algorithm; with `-march=native` the compiler contracts into FMA, which rounds
differently, so the counters differ a little{builds}"""


def machine_line(rec: dict) -> str:
    m = rec.get("machine") or {}
    parts = [m.get("cpu") or "unknown CPU"]
    if m.get("cores"):
        parts.append(f"{m['cores']} cores")
    if m.get("arch"):
        parts.append(m["arch"])
    if m.get("python"):
        parts.append(f"Python {m['python']}")
    load = m.get("load_average")
    if isinstance(load, list) and load:
        parts.append("load average " + " ".join(f"{v:.1f}" for v in load))
    elif load:
        parts.append(f"load average {load}")
    return ", ".join(parts)


def wrap(text: str) -> str:
    return textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False)


def section(rec: dict, title: str, what: str, render) -> list:
    out = [f"## {title}", "", wrap(what), "",
           f"Machine: {machine_line(rec)}; commit `{rec.get('commit') or 'unknown'}`; "
           f"{rec.get('date') or 'date unknown'}.  ",
           f"Reproduce: `{rec['command']}`  ",
           f"Source: {rec.get('source', 'unknown')}.", ""]
    out += render(rec["figures"])
    notes = rec.get("notes") or []
    if notes:
        out.append("")
        out += [textwrap.indent(wrap(f"- {n}"), "  ")[2:] for n in notes]
    return out


def builds_compared(results: Path) -> str:
    """The end of the reference's paragraph on the two IDA builds: their counters and per-step times
    on the Robotino, as the recorded solver sweep measured them (nothing when it has no such run)."""
    path = results / "solver_bench.json"
    rows = json.loads(path.read_text())["figures"].get("models", []) if path.is_file() else []
    robotino = next((m for m in rows if m.get("model", "").startswith("Robotino")), None)
    keys = ("C-IDA", "C-IDA native", "C-IDA native KLU")
    if robotino is None or not all(k in robotino.get("per_step_us", {}) for k in keys):
        return "."
    steps = {k: robotino["work"][k]["steps"] for k in keys[:2]}
    us = robotino["per_step_us"]
    rtol = robotino.get("rtol", 1e-6)
    events = robotino["work"]["C-IDA"].get("event_restarts", 0)
    return (f" (by {100 * abs(steps['C-IDA native'] - steps['C-IDA']) / steps['C-IDA']:.1f} % in steps on the "
            f"Robotino at rtol {rtol:g}, whose {events:,} restarts carry rounding along). Per step the native "
            f"build took {us['C-IDA native'] / us['C-IDA']:.2f} of the time of Debian's there "
            f"({us['C-IDA native']:.1f} against {us['C-IDA']:.1f} µs with dense LU in the recorded sweep), "
            f"and {us['C-IDA native KLU']:.1f} µs with KLU.")


def render(results: Path = RESULTS) -> str:
    out = ["<!-- Generated by benchmarks/report.py from benchmarks/results/*.json: edit those (or re-run a "
           "benchmark with --record), then `python benchmarks/report.py --write`. -->", "",
           "# Benchmarks", "", INTRO, ""]
    missing = []
    for name, title, what, fn in SECTIONS:
        path = results / f"{name}.json"
        if not path.is_file():
            missing.append(name)
            continue
        rec = json.loads(path.read_text())
        out += section(rec, title, what, fn) + [""]
    head, _, last = REFERENCE.format(builds=builds_compared(results)).rpartition("\n\n")
    out += [head, "", wrap(last), "", "## Other scripts in `benchmarks/`", ""]
    out += [f"- `{script}`: {text}." for script, text in OTHER_SCRIPTS]
    out += [f"- `{name}.py`: no recorded result yet (run it with `--record`)." for name in missing]
    known = {name for name, *_ in SECTIONS}
    extra = sorted(p.stem for p in results.glob("*.json") if p.stem not in known)
    if extra:
        raise SystemExit(f"report.py: no layout for {', '.join(extra)} (add it to SECTIONS)")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    group.add_argument("--check", action="store_true", help="exit 1 if docs/benchmarks.md is not current")
    args = ap.parse_args(argv)
    text = render()
    if args.write:
        DOC.write_text(text)
        print(f"wrote {DOC}")
    elif args.check:
        if not DOC.is_file() or DOC.read_text() != text:
            print(f"{DOC} is not what benchmarks/report.py renders from benchmarks/results/: run "
                  f"`python benchmarks/report.py --write`", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
