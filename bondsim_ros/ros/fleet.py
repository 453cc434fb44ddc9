"""``bondsim-ros fleet N --processes P``: N twins over P processes, talking over DDS.

Each process runs its share of the robots (namespaces ``robot0`` .. ``robot{N-1}``, numbered
across processes) on one executor and one FleetClock (graph.start_fleet). The processes are
independent ROS participants: their topics meet on the DDS domain as those of separate robots
would, and a machine's cores share the solver work.

Whether the fleet held real time is judged over the whole measured run, per process: no frame
the timer skipped, no twin that computed a frame after its instant (an overrun), and the 99th
percentile of a tick's wall time (every robot of the process: publish, then step) under the
frame period.
"""
from __future__ import annotations

import threading
import time


def split(n: int, processes: int) -> list:
    """(first robot, robots) of each process: as even as possible, the larger shares first."""
    base, extra = divmod(n, processes)
    out, first = [], 0
    for k in range(processes):
        count = base + (1 if k < extra else 0)
        out.append((first, count))
        first += count
    return out


def held(stats: dict) -> bool:
    """Real time held by one process over the run (see the module's docstring)."""
    return stats["ticks"] > 0 and stats["skipped"] == 0 and stats["overruns"] == 0 and \
        stats["tick_p99_s"] < stats["period_s"]


def _process(index: int, first: int, count: int, dynamics: dict, warmup: float, duration: float | None,
             ready, go, results) -> None:
    """One process of the fleet: build its twins, wait for all processes, warm up, measure.
    SIGINT or SIGTERM (a terminal's Ctrl-C, or the parent's, forwarded) before the run ends it
    with an error; during the run it stops the run, whose figures are reported."""
    import signal

    graph = context = None
    stats = {"process": index, "first": first, "error": None}
    stop = []
    try:
        # inside the report: rclpy that cannot be imported or initialised is this process's error
        import rclpy

        from ._env import (ensure_local_discovery, init_rclpy, spin_until_signal, start_up_heap_frozen,
                           start_up_signals)
        from .graph import start_fleet

        ensure_local_discovery()
        context = rclpy.Context()
        init_rclpy(context=context)
        with start_up_signals() as start_up:
            graph = start_fleet(count, dynamics, context=context, first=first, clock_name=f"fleet_clock_{index}")
            clock = graph.nodes["fleet_clock"].fleet
            start_up.end()
            # from here a signal only sets a flag: an exception inside the waits below breaks
            # multiprocessing's locks, and a terminal's Ctrl-C and the parent's forwarded one both
            # arrive, the second of which must not cut the report short
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda signum, _frame: stop.append(signal.Signals(signum).name))
        try:
            ready.wait()  # every process built its twins (model loading is not part of the run)
        except threading.BrokenBarrierError:
            if not stop:
                raise
        while not stop and not go.wait(timeout=0.1):  # the parent, stopped, may never set it
            pass
        if stop:
            raise KeyboardInterrupt
        with start_up_heap_frozen():
            for node in graph.nodes.values():  # the twins' clocks start together, at the measured run
                if hasattr(node, "restart"):
                    node.restart()
            why = spin_until_signal(graph.executor, context, duration=warmup)
            if why == "duration" and not stop:
                clock.reset_stats()
                why = spin_until_signal(graph.executor, context, duration=duration)
        stats.update(clock.stats())
        if why in ("SIGINT", "SIGTERM") or stop:
            stats["stopped"] = why if why in ("SIGINT", "SIGTERM") else stop[0]
    except KeyboardInterrupt:
        stats["error"] = "stopped before the run started"
        ready.abort()
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which names the process
        stats["error"] = f"{type(exc).__name__}: {exc}"
        ready.abort()  # the others (and the parent) stop waiting for this process
    finally:
        results.put(stats)
        if graph is not None:
            graph.shutdown()
        if context is not None:
            rclpy.try_shutdown(context=context)


# s the parent waits, once stopped by a signal, for its processes' reports, then for their exits
STOP_REPORT_WAIT = 10.0
STOP_EXIT_WAIT = 5.0


# What one machine can run. A core held about 34 Robotino twins in real time (docs/benchmarks.md)
# and a twin takes about 3 MB and 0.1 s to build: 10,000 is beyond a 256-core machine. An N past
# it (a stray digit) is refused before ROS or a process starts, not left building twins for good
MAX_ROBOTS = 10_000
# Each process is a DDS participant taking two ports of its domain's range: past 120 on one
# computer they spill into the next domain's ports (ROS 2 docs, "About Domain ID"; rmw_cyclonedds
# on Jazzy allows 32 per host)
MAX_PROCESSES = 120


def count_text(n) -> str:
    """``n`` as an error message quotes it: a whole number of many digits in short form."""
    if isinstance(n, int) and not isinstance(n, bool) and abs(n) >= 10 ** 15:
        try:
            digits = str(abs(n))
        except ValueError:  # past Python's limit on the digits an int is written with
            return "a number of thousands of digits"
        return f"{'-' if n < 0 else ''}{digits[:6]}... ({len(digits)} digits)"
    return repr(n)


def check_counts(n, processes) -> None:
    """ValueError, naming the argument as the command line has it, for a fleet of ``n`` robots
    over ``processes`` processes that cannot run (see MAX_ROBOTS, MAX_PROCESSES)."""
    whole = [isinstance(v, int) and not isinstance(v, bool) for v in (n, processes)]
    if not (whole[0] and n >= 1):
        raise ValueError(f"N: a fleet needs at least one robot, got {count_text(n)}")
    if n > MAX_ROBOTS:
        raise ValueError(f"N: at most {MAX_ROBOTS} robots, more than one machine runs (a core holds about 34 twins "
                         f"in real time), got {count_text(n)}")
    top = min(n, MAX_PROCESSES)
    if not (whole[1] and 1 <= processes <= top):
        why = "at least one robot per process" if top == n else \
            f"one DDS participant each: at most {MAX_PROCESSES} on one computer"
        raise ValueError(f"--processes must be 1..{top} ({why}), got {count_text(processes)}")


def run_fleet(n: int, processes: int = 1, dynamics: dict | None = None, duration: float | None = 10.0,
              warmup: float = 2.0, progress=None) -> list:
    """Run ``n`` twins over ``processes`` processes for ``duration`` wall seconds (None: until
    Ctrl-C) after ``warmup`` seconds; returns each process's stats (FleetClock.stats() plus
    ``process``, ``first``, ``error``), in process order.

    Ctrl-C or SIGTERM (KeyboardInterrupt or the CLI's Terminated here) is forwarded to every
    process, which stops and reports; the exception then goes on, carrying the reports as
    ``stats`` (a process that sent none: an error saying so). A process that cannot build its
    twins, or that ends without its report (a crash, the OOM killer, rcl ending a process whose
    RMW implementation it cannot load), ends the fleet at once: RuntimeError naming it and how it
    ended, the other processes stopped."""
    import multiprocessing as mp
    import signal

    check_counts(n, processes)
    ctx = mp.get_context("spawn")  # a fresh interpreter per process: rclpy is not fork-safe
    parts = split(n, processes)
    ready = ctx.Barrier(processes + 1)
    go = ctx.Event()
    results = ctx.Queue()
    procs = [ctx.Process(target=_process, args=(k, first, count, dict(dynamics or {}), warmup, duration,
                                                ready, go, results), name=f"fleet-{k}")
             for k, (first, count) in enumerate(parts)]
    out = []
    stopped = None
    try:
        for p in procs:
            p.start()
        started = threading.Event()
        threading.Thread(target=_abort_if_one_ends, args=(procs, ready, started), daemon=True).start()
        try:
            ready.wait(timeout=600)
        except threading.BrokenBarrierError:  # a process could not build its twins, or ended
            go.set()
            _collect(procs, results, out, limit=30.0)
            errors = [f"process {s['process']}: {s['error']}" for s in sorted(out, key=lambda s: s["process"])
                      if s.get("error")] + _unreported(procs, out, "before its twins were built")
            raise RuntimeError("; ".join(errors) or "a fleet process ended before its twins were built") from None
        finally:
            started.set()
        go.set()
        if progress:
            progress(f"{n} robots in {processes} process(es): warming up {warmup:g} s, then "
                     + ("until Ctrl-C" if duration is None else f"{duration:g} s measured"))
        deadline = None if duration is None else time.monotonic() + warmup + duration + 60
        while len(out) < processes:
            # in slices: a process that ended without its report (killed, crashed) ends the wait;
            # one that had ended before a slice began has had its report read in it, if it sent one
            ended = {k for k, p in enumerate(procs) if p.exitcode is not None}
            _collect(procs, results, out, limit=1.0)
            lost = _unreported(procs, out, "during the run", ended)
            if lost:
                raise RuntimeError("fleet: " + "; ".join(lost))
            if len(out) < processes and deadline is not None and time.monotonic() > deadline:
                late = [f"process {k}" for k in range(processes) if k not in {s["process"] for s in out}]
                raise RuntimeError(f"fleet: no report from {', '.join(late)} in time")
    except KeyboardInterrupt as exc:
        stopped = exc
        ready.abort()  # processes still waiting for the others stop waiting
        _collect_after_signal(procs, results, out, signal.SIGINT if type(exc) is KeyboardInterrupt else signal.SIGTERM)
        reported = {s["process"] for s in out}
        out += [{"process": k, "first": first, "error": "stopped before it reported"}
                for k, (first, _) in enumerate(parts) if k not in reported]
        exc.stats = sorted(out, key=lambda s: s["process"])
        raise
    except RuntimeError as exc:
        # a process failed or was lost: the others are stopped as a signal stops them (they
        # report to no one), not waited for until their run ends
        stopped = exc
        _signal_live(procs, signal.SIGTERM)
        raise
    finally:
        limit = time.monotonic() + STOP_EXIT_WAIT  # after a signal: the processes' teardowns together
        for p in procs:
            if p.pid is None:  # never started (a signal during the start)
                continue
            p.join(timeout=max(0.0, limit - time.monotonic()) if stopped is not None else 30)
            if p.is_alive():
                p.terminate()
                p.join(timeout=1.0)
            if p.is_alive():
                p.kill()
                p.join()
    return sorted(out, key=lambda s: s["process"])


def _abort_if_one_ends(procs, ready, started: threading.Event) -> None:
    """Break the start barrier when a process ends before every process has reached it: one
    whose start failed outside its own error report (rcl ends a process whose RMW
    implementation it cannot load, with exit status 102; a crash; the OOM killer). Its error
    report, if any, is on the queue; the parent and the other processes stop waiting at once
    instead of after the barrier's 600 s."""
    from multiprocessing.connection import wait

    sentinels = [p.sentinel for p in procs]
    while not started.is_set():
        if wait(sentinels, timeout=0.2):
            if not started.is_set():
                ready.abort()
            return


def _collect(procs, results, out: list, limit: float) -> None:
    """Reports from the queue into ``out`` for at most ``limit`` seconds, fewer once every
    process has reported, or has ended and left nothing more on the queue."""
    import queue

    deadline = time.monotonic() + limit
    while len(out) < len(procs) and time.monotonic() < deadline:
        alive = any(p.is_alive() for p in procs)  # read before the queue: a report put before the exit is seen
        try:
            out.append(results.get(timeout=min(0.2, max(0.0, deadline - time.monotonic()))))
        except queue.Empty:
            if not alive:
                return


def _unreported(procs, out: list, when: str, ended=None) -> list:
    """A line for each process that ended without a report (its own output, printed above the
    fleet's, says why); ``ended``: of these processes only (those whose report, had they sent
    one, the queue has been read for since)."""
    import signal

    reported = {s["process"] for s in out}
    lines = []
    for k, p in enumerate(procs):
        if k in reported or p.exitcode is None or (ended is not None and k not in ended):
            continue
        if p.exitcode >= 0:  # what ended it is in its own output, above the fleet's
            lines.append(f"process {k} ended (exit status {p.exitcode}) {when}, without a report (its output "
                         f"above says why)")
        else:
            try:
                how = signal.Signals(-p.exitcode).name
            except ValueError:  # a real-time signal
                how = f"signal {-p.exitcode}"
            lines.append(f"process {k} ended (killed by {how}) {when}, without a report")
    return lines


def _signal_live(procs, sig) -> None:
    import os

    for p in procs:
        if p.pid is not None and p.is_alive():
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass


def _collect_after_signal(procs, results, out: list, sig) -> None:
    """The parent was stopped (Ctrl-C, SIGTERM): pass the signal on to every process, each of
    which stops and reports (a terminal's Ctrl-C reached them already, a `kill PID` or a
    supervisor's SIGTERM did not), and collect the reports for STOP_REPORT_WAIT s at most. More
    signals meanwhile are ignored: the wait is bounded."""
    import signal

    main = threading.current_thread() is threading.main_thread()
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        _signal_live(procs, sig)
        _collect(procs, results, out, limit=STOP_REPORT_WAIT)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def summary(stats: list) -> list:
    """Lines for the user: one per process and the verdict."""
    lines = []
    for s in stats:
        if s.get("error"):
            lines.append(f"process {s['process']}: {s['error']}")
            continue
        last = s["first"] + s["robots"] - 1
        how = f" (stopped by {s['stopped']})" if s.get("stopped") else ""
        lines.append(f"process {s['process']}{how}: robot{s['first']}..robot{last} ({s['robots']}), "
                     f"{s['ticks']} frames, "
                     f"tick p50 {s['tick_p50_s'] * 1e3:.2f} ms, p99 {s['tick_p99_s'] * 1e3:.2f} ms, "
                     f"max {s['tick_max_s'] * 1e3:.2f} ms (period {s['period_s'] * 1e3:.1f} ms), "
                     f"{s['skipped']} skipped, {s['overruns']} overruns: "
                     + ("real time held" if held(s) else "real time NOT held"))
    ok = bool(stats) and all(not s.get("error") and held(s) for s in stats)
    robots = sum(s.get("robots", 0) for s in stats)
    lines.append(f"fleet of {robots} robots in {len(stats)} process(es): "
                 + ("held real time over the whole run" if ok else "did not hold real time"))
    return lines


__all__ = ["run_fleet", "split", "held", "summary"]
