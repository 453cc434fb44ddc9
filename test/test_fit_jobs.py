"""`bondsim-ros fit --jobs N` and `--scheduler`: the finite-difference Jacobian's simulations on the
sweep's workers give the `--jobs 1` fit bit for bit (least_squares gets the same Jacobian and
so takes the same steps); bad --jobs is refused in one line; Ctrl-C ends the fit with exit 130,
no traceback and no worker left."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.cli import main
from bondsim_ros.fit import FitError, FitProblem, LogData, fit, read_csv
from bondsim_ros.solver import SolverOptions
from procs import left_over, pool_workers, started_workers, terminal_sigint

from test_fit import MOTOR_PY, TRUTH, _noisy_log, _write

ROOT = Path(__file__).resolve().parent.parent
FIT = ["--params", "Ra,K,bL", "--outputs", "current,omega_load", "--inputs", "V", "--weight", "current=5",
       "--weight", "omega_load=10"]
BOUNDS = {"Ra": (0.0, math.inf), "K": (0.0, math.inf), "bL": (0.0, math.inf)}


@pytest.fixture(scope="module")
def motor_log(tmp_path_factory):
    """The dc motor model file of test_fit.py and a noisy voltage-step log of it."""
    folder = tmp_path_factory.mktemp("fitjobs")
    path = folder / "motor.py"
    path.write_text(MOTOR_PY)
    t = np.linspace(0.0, 0.5, 201)
    volts = np.where(t < 0.2, 24.0, 12.0)
    gen = FitProblem(str(path), LogData(["t", "V", "current", "omega_load"], np.column_stack([t, volts, 0 * t, 0 * t])),
                     ["Ra", "K"], ["current", "omega_load"], inputs=["V"],
                     options=SolverOptions(rtol=1e-10, atol=1e-12))
    data = folder / "log.csv"
    _write(data, _noisy_log(t, volts, gen.simulate([TRUTH["Ra"], TRUTH["K"]]), seed=11))
    return path, data


def _problem(motor_log) -> FitProblem:
    path, data = motor_log
    return FitProblem(str(path), read_csv(data), ["Ra", "K", "bL"], ["current", "omega_load"], inputs=["V"],
                      weights={"current": 5.0, "omega_load": 10.0})


def _same(a, b) -> None:
    """Two FitResults equal bit for bit (but for the wall time and where the runs went)."""
    assert np.array_equal(a.estimate, b.estimate), (a.estimate, b.estimate)
    assert np.array_equal(a.cov, b.cov, equal_nan=True)
    assert np.array_equal(a.stderr, b.stderr, equal_nan=True)
    assert (a.cost, a.sigma, a.n_eval, a.message, a.singular_values) == \
        (b.cost, b.sigma, b.n_eval, b.message, b.singular_values)


@pytest.fixture(scope="module")
def serial(motor_log):
    progress = []
    result = fit(_problem(motor_log), bounds=BOUNDS, progress=lambda n, c, th: progress.append((n, c, tuple(th))))
    return result, progress


def test_command_line_jobs_2_writes_the_jobs_1_fit(motor_log, tmp_path, capsys):
    path, data = motor_log
    outs = {}
    for jobs in ("1", "2"):
        js, fitted = tmp_path / f"fit{jobs}.json", tmp_path / f"fit{jobs}.csv"
        # bL is not determined by this log: exit 1, the report and the files written all the same
        assert main(["fit", str(path), str(data), *FIT, "--jobs", jobs, "--json", str(js), "--csv", str(fitted),
                     "-q"]) == 1
        out = capsys.readouterr().out
        assert ("(2 jobs)" in out) == (jobs == "2"), out
        doc = json.loads(js.read_text())
        assert doc.pop("workers") == ("2 jobs" if jobs == "2" else "1 job (this process)")
        doc.pop("seconds")
        outs[jobs] = (doc, fitted.read_bytes())
    assert outs["1"] == outs["2"]
    assert outs["1"][0]["not_identifiable"] == ["bL"]


def test_python_api_jobs_2_and_0_are_the_serial_fit(motor_log, serial):
    from bondsim_ros.sweep.workers import default_jobs

    reference, progress = serial
    for jobs in (2, 0):  # 0: every usable core (a pool no larger than the 3 points of a Jacobian)
        seen = []
        result = fit(_problem(motor_log), bounds=BOUNDS, jobs=jobs,
                     progress=lambda n, c, th: seen.append((n, c, tuple(th))))
        _same(result, reference)
        # every run reported with the running count, the Jacobian's in the order they came back
        assert sorted(s[1:] for s in seen) == sorted(p[1:] for p in progress)
        assert [n for n, *_ in seen] == [n for n, *_ in progress] == list(range(1, len(seen) + 1))
        size = 2 if jobs == 2 else min(default_jobs(), 3)
        assert result.workers == (f"{size} jobs" if size > 1 else "1 job (this process)")


def test_a_dask_cluster_gives_the_serial_fit(motor_log, serial, tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] "
                                      "extra)")
    path, data = motor_log
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        _same(fit(_problem(motor_log), bounds=BOUNDS, scheduler=cl.scheduler_address), serial[0])
        js = tmp_path / "dask.json"
        assert main(["fit", str(path), str(data), *FIT, "--scheduler", cl.scheduler_address, "--json", str(js),
                     "-q"]) == 1
    title = " ".join(capsys.readouterr().out.split())  # the table's title wraps at the terminal's width
    assert f"(Dask at {cl.scheduler_address}, 2 worker threads)" in title, title
    doc = json.loads(js.read_text())
    assert doc["parameters"]["Ra"]["estimate"] == serial[0].estimate[0]
    assert doc["evaluations"] == serial[0].n_eval


def test_forward_steps_are_least_squares_own():
    """The Jacobian the workers' runs make, with forward_steps, is scipy's '2-point' one bit for
    bit: unbounded, a step reversed at an upper bound, one shortened in a narrow box, a zero."""
    from scipy.optimize._numdiff import approx_derivative

    from bondsim_ros.fit.core import forward_steps

    def f(z):
        return np.array([np.sin(z[0]) * z[1], np.exp(0.3 * z[2]) - z[0] ** 3, z[1] * z[2] + z[3], np.cos(z[3] * z[0])])

    z = np.array([0.7, -1.3, 0.0, 2.5])
    cases = [(np.full(4, -np.inf), np.full(4, np.inf)),
             (np.array([0.0, -np.inf, -1.0, 0.0]), np.array([0.7 + 1e-9, 0.0, np.inf, 2.5 + 1e-4])),
             (np.array([0.7 - 1e-7, -1.3 - 1e-8, -1e-9, -np.inf]), np.array([0.7 + 2e-7, -1.3 + 1e-8, 1e-9, np.inf]))]
    for rel in (1e-2, 1e-6, 3e-9):
        for lb, ub in cases:
            f0 = f(z)
            ref = approx_derivative(f, z, method="2-point", rel_step=rel, f0=f0, bounds=(lb, ub))
            h = forward_steps(z, rel, lb, ub)
            assert np.all(z + h >= lb) and np.all(z + h <= ub)
            ours = np.empty_like(ref)
            for i in range(len(z)):
                zi = z.copy()
                zi[i] = z[i] + h[i]
                ours[:, i] = (f(zi) - f0) / ((z[i] + h[i]) - z[i])
            assert np.array_equal(ours, ref), (rel, lb, ub)


def test_bad_jobs_and_scheduler_are_refused_in_one_line(motor_log, capsys):
    path, data = motor_log
    for jobs in ("-1", "two", "1.5"):
        assert main(["fit", str(path), str(data), *FIT, "--jobs", jobs, "-q"]) == 2
        err = capsys.readouterr().err
        assert err == f"bondsim-ros fit: error: --jobs expects a whole number of processes >= 0 (0: every usable " \
                      f"core), got {jobs!r}\n", err
    assert main(["fit", str(path), str(data), *FIT, "--jobs", "2", "--scheduler", "tcp://127.0.0.1:9", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give --jobs or --scheduler, not both" in err, err

    from bondsim_ros.sweep.workers import WorkersError

    with pytest.raises(WorkersError, match=r"jobs: must be >= 0 \(0: every usable core\), got -2"):
        fit(_problem(motor_log), jobs=-2)
    with pytest.raises(WorkersError, match="jobs: must be a whole number, got 1.5"):
        fit(_problem(motor_log), jobs=1.5)


def test_unreachable_scheduler_is_named(motor_log, capsys):
    pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] extra)")
    path, data = motor_log
    assert main(["fit", str(path), str(data), *FIT, "--scheduler", "tcp://127.0.0.1:9", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bondsim-ros fit: error: --scheduler: cannot connect to the Dask scheduler "
                          "tcp://127.0.0.1:9") and err.count("\n") == 1, err


def test_workers_need_the_model_by_name_and_the_same_model(motor_log):
    from bondsim_ros.fit.core import FitSpec
    from bondsim_ros.sweep.workers import load_model

    path, data = motor_log
    compiled, _ = load_model(str(path))
    anonymous = FitProblem(compiled, read_csv(data), ["Ra", "K"], ["current"], inputs=["V"])
    with pytest.raises(FitError, match=r"loads model 'dc_motor_fit' by name: give FitProblem\(\.\.\., model=NAME"):
        fit(anonymous, jobs=2)
    fit(anonymous, jobs=1, max_nfev=1)  # in this process it needs none
    spec = _problem(motor_log).spec()
    assert spec.model == str(path.resolve()) and spec.data.names == ["t", "V", "current", "omega_load"]
    other = FitSpec(**{**spec.__dict__, "defaults": (2.0,) + spec.defaults[1:]})
    with pytest.raises(FitError, match="as a worker loads it differs from the fit's \\(its parameter values\\)"):
        other.problem()
    assert np.array_equal(spec.problem().residuals([1.5, 0.028, 1e-4]),
                          _problem(motor_log).residuals([1.5, 0.028, 1e-4]))


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to see the worker processes")
def test_ctrl_c_during_a_parallel_fit_exits_130_and_leaves_no_worker(motor_log, tmp_path):
    path, _ = motor_log
    data = tmp_path / "square.csv"
    t = np.linspace(0.0, 1.0, 401)
    volts = np.where(np.floor(t / 0.05) % 2 == 0, 24.0, 12.0)  # a change every 0.05 s
    _write(data, LogData(["t", "V", "current", "omega_load"], np.column_stack([t, volts, 0 * t + 1.0, 0 * t])))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # hmax 4e-7: 2.5 million steps a simulation, about a second each: the fit runs for long
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "fit", str(path), str(data), *FIT,
                             "--hmax", "4e-7", "--jobs", "2"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=terminal_sigint)
    try:
        workers = started_workers(proc.pid)
        time.sleep(4.0)  # past the two runs at the start: the first Jacobian's on the workers
        assert proc.poll() is None, "the fit ended before Ctrl-C"
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal signals the whole process group
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().endswith("interrupted"), err
    left = left_over(workers)
    assert not left, f"processes outlived the fit: {left}"


def test_workers_run_tasks_in_order_here_and_on_a_pool():
    from bondsim_ros.sweep.workers import Workers

    for jobs, where in ((1, "1 job (this process)"), (2, "2 jobs")):
        seen = []
        with Workers(jobs) as workers:
            assert workers.description == where and workers.remote == (jobs > 1)
            assert workers.run(pow, [(2, 3), (3, 2), (5, 1)], lambda i, v: seen.append((i, v))) == [8, 9, 5]
            assert sorted(seen) == [(0, 8), (1, 9), (2, 5)]
            with pytest.raises(ZeroDivisionError):  # a task's exception is raised here
                workers.run(divmod, [(1, 1), (1, 0)])
        with pytest.raises(RuntimeError, match="stopped or closed"):
            workers.run(pow, [(2, 3)])


def test_a_refusal_raised_on_a_worker_comes_back_as_itself():
    """A worker returns its run's error to the fit through pickle: a ModelError (and the
    parameter refusal, with the names it refuses) must come back with its own fields, not fail
    to unpickle (its constructor takes the place and the message, not the text)."""
    import pickle

    from bondsim_ros.bondgraph.compiled import ParameterRefused
    from bondsim_ros.bondgraph.core import ModelError

    for exc in (ParameterRefused("rc", "parameter value(s) C = 0 refused", ["C"]), ModelError("m.yaml:3: r", "bad"),
                ModelError("", "no place")):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)
        assert (back.where, back.message, getattr(back, "names", None)) == (exc.where, exc.message,
                                                                            getattr(exc, "names", None))


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to see the worker processes")
def test_a_worker_killed_mid_fit_ends_it_in_one_line_with_status_1(motor_log, tmp_path):
    """kill -9 of a pool's worker: one error line and exit 1 (a run failed), not a traceback that
    advises the __main__ guard."""
    path, _ = motor_log
    data = tmp_path / "square.csv"
    t = np.linspace(0.0, 1.0, 401)
    volts = np.where(np.floor(t / 0.05) % 2 == 0, 24.0, 12.0)
    _write(data, LogData(["t", "V", "current", "omega_load"], np.column_stack([t, volts, 0 * t + 1.0, 0 * t])))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "fit", str(path), str(data), *FIT,
                             "--hmax", "4e-7", "--jobs", "2"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        workers = pool_workers(proc.pid)
        time.sleep(4.0)  # the first Jacobian's runs under way on the workers
        assert proc.poll() is None, "the fit ended before the kill"
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "__main__" not in err, err
    assert err.strip().splitlines()[-1] == "bondsim-ros fit: error: a worker process died (killed by SIGKILL: out of " \
                                           "memory, or killed by hand): the fit stopped", err


def test_a_simulation_failing_during_the_search_is_a_failed_run_not_bad_input(motor_log, capsys, monkeypatch):
    """Initial values the solver finds inconsistent at a point the search stepped to (an omni
    drive's Izz driven to 1e-15) exited 2, as if the user's input were refused: the user's
    input was the start, which simulated."""
    from bondsim_ros.solver import InconsistentInitialValues

    path, data = motor_log
    residuals = FitProblem.residuals
    calls = []

    def failing_after_the_start(self, theta):
        calls.append(tuple(theta))
        if len(calls) > 1:
            raise InconsistentInitialValues("initial values violate drive1.slew: residual 3.2")
        return residuals(self, theta)

    monkeypatch.setattr(FitProblem, "residuals", failing_after_the_start)
    assert main(["fit", str(path), str(data), *FIT, "-q"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bondsim-ros fit: error: simulation failed at {'Ra': ") and err.count("\n") == 1, err
    assert "initial values violate drive1.slew" in err

    calls.clear()
    monkeypatch.setattr(FitProblem, "residuals", lambda self, theta: (_ for _ in ()).throw(
        InconsistentInitialValues("initial values violate drive1.slew: residual 3.2")))
    assert main(["fit", str(path), str(data), *FIT, "-q"]) == 2  # the start's own values: refused input
    assert "initial values violate drive1.slew" in capsys.readouterr().err


def test_a_cluster_without_workers_is_said_and_the_fit_waits(motor_log, serial, capsys):
    """client.scatter gave up after its timeout with a traceback (No valid workers found)."""
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] "
                                      "extra)")
    import threading

    notes = []
    with distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        later = threading.Timer(2.0, cl.scale, (1,))
        later.start()
        try:
            result = fit(_problem(motor_log), bounds=BOUNDS, scheduler=cl.scheduler_address, log=notes.append)
        finally:
            later.cancel()
    _same(result, serial[0])
    assert notes == [f"the Dask cluster at {cl.scheduler_address} has no workers yet: waiting for them (start some "
                     f"with `dask worker {cl.scheduler_address}`; Ctrl-C stops)"]
    assert result.workers == f"Dask at {cl.scheduler_address}, 1 worker thread"


# A fit whose first run on a worker misbehaves as the signal comes, which the command then gets
# alone (as `kill PID` or a timeout sends it): "half-sent", the worker ends in the middle of
# sending its result (part of a message left in the pool's result pipe); "stubborn", the worker
# does not end on SIGTERM, and a second signal comes while the command ends the workers
MISBEHAVING = '''
import os, signal, struct, sys, time

import bondsim_ros.fit.core as core
from bondsim_ros.cli import main

run = core.evaluate


def misbehave(*args):
    try:
        os.close(os.open(os.environ["CUT_MARK"], os.O_CREAT | os.O_EXCL))
    except FileExistsError:  # (the other worker's runs)
        return run(*args)
    sig = int(os.environ["CUT_SIGNAL"])
    if os.environ["CUT_MODE"] == "half-sent":
        frame = sys._getframe()
        while frame.f_code.co_name != "_process_worker":  # the pool's loop in this worker: its result pipe
            frame = frame.f_back
        os.write(frame.f_locals["result_queue"]._writer.fileno(), struct.pack("!i", 1 << 20) + bytes(16))
        os.kill(os.getppid(), sig)
    else:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.kill(os.getppid(), sig)
        time.sleep(0.5)
        os.kill(os.getppid(), sig)
    time.sleep(600)


core.evaluate = misbehave  # (this module is imported again by each worker: they run it too)
if __name__ == "__mp_main__":  # a worker: its process id, to see that none is left
    with open(os.environ["CUT_MARK"] + ".pids", "a") as pids:
        print(os.getpid(), file=pids)

if __name__ == "__main__":
    sys.argv = ["bondsim-ros", *sys.argv[1:]]
    sys.exit(main())
'''


@pytest.mark.parametrize("mode", ["half-sent", "stubborn"])
@pytest.mark.parametrize("sig, code, word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")],
                         ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_a_parallel_fit_whatever_its_workers_do(motor_log, tmp_path, mode, sig, code, word):
    """The fit waited for good for the pool to end: on a result pipe a worker left half written,
    or on a worker that did not end on SIGTERM. It ends within seconds, as a signal ends any
    command, and leaves no worker."""
    path, data = motor_log
    script = tmp_path / "misbehaving.py"
    script.write_text(MISBEHAVING)
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUT_MARK=str(tmp_path / "cut"), CUT_SIGNAL=str(int(sig)),
               CUT_MODE=mode)
    proc = subprocess.Popen([sys.executable, str(script), "fit", str(path), str(data), *FIT, "--jobs", "2", "-q"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=terminal_sigint)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the fit did not end after {sig.name}")
    assert (tmp_path / "cut").exists(), "no run reached a worker"
    assert proc.returncode == code, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == word, err
    left = left_over([int(pid) for pid in (tmp_path / "cut.pids").read_text().split()])
    assert not left, f"processes outlived the fit: {left}"
