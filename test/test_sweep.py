"""`bondsim-ros sweep`: every row is what `bondsim-ros simulate` gives for that run's parameters,
whether the runs go to this process, a local pool or a Dask cluster; bad --param specs are
refused by name; a failing run is reported in its row and the others still run."""
from __future__ import annotations

import csv
import math
import multiprocessing
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.cli import main
from bondsim_ros.solver import SolverOptions
from procs import left_over, pool_workers, started_workers, terminal_sigint

SERVO = str(Path(__file__).resolve().parent / "data" / "models" / "servo.yaml")
RUN = ["--t-end", "1", "--dt-out", "0.01"]


def read_rows(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def simulate_rows(tmp_path, params: dict) -> dict:
    """The CSV of `bondsim-ros simulate SERVO --param ...` as {column: values}."""
    out = tmp_path / "sim.csv"
    argv = ["simulate", SERVO, *RUN, "--csv", str(out), "-q"]
    for name, value in params.items():
        argv += ["--param", f"{name}={value!r}"]
    assert main(argv) == 0
    rows = read_rows(out)
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """`simulate` of each point of m=1,2 x kp=20,40 (the sweeps below), in grid order."""
    tmp = tmp_path_factory.mktemp("serial")
    return [simulate_rows(tmp, {"m": m, "kp": kp}) for m in (1.0, 2.0) for kp in (20.0, 40.0)]


def check_against_serial(rows, serial, columns=None):
    columns = columns or [c for c in serial[0] if c != "t"]
    assert [(float(r["m"]), float(r["kp"])) for r in rows] == [(1.0, 20.0), (1.0, 40.0), (2.0, 20.0), (2.0, 40.0)]
    for row, sim in zip(rows, serial):
        assert row["status"] == "ok" and row["message"] == ""
        for col in columns:  # the final value, bit for bit (both files round-trip float64)
            assert float(row[col]) == sim[col][-1], (col, row)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_rows_are_the_serial_simulate_results(tmp_path, serial, jobs, capsys):
    out = tmp_path / "sweep.csv"
    assert main(["sweep", SERVO, "--param", "m=1:2:2", "--param", "kp=20,40", *RUN, "--jobs", jobs,
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "4 of 4 runs, 0 failed" in err and ("2 jobs" if jobs == "2" else "1 job") in err, err
    rows = read_rows(out)
    assert list(rows[0])[:5] == ["run", "m", "kp", "status", "message"]
    # every output column of simulate's CSV but t, as its final value
    assert list(rows[0])[6:] == [c for c in serial[0] if c != "t"]
    check_against_serial(rows, serial)


def test_dash_writes_the_table_as_csv_on_standard_output(serial, capfd):
    """`-o -` is CSV on standard output, as the help says (it used to end in a traceback after
    every run had finished: the table's staged file had no .csv for the writer to go by)."""
    assert main(["sweep", SERVO, "--param", "m=1:2:2", "--param", "kp=20,40", *RUN, "--jobs", "1", "-o", "-"]) == 0
    out, err = capfd.readouterr()
    assert "Traceback" not in err, err
    rows = list(csv.DictReader(out.splitlines()))
    check_against_serial(rows, serial)


def test_at_takes_the_outputs_at_those_times_and_npz_holds_the_same(tmp_path, serial):
    out = tmp_path / "sweep.npz"
    assert main(["sweep", SERVO, "--param", "m=1,2", "--param", "kp=20:40:2", *RUN, "--jobs", "2",
                 "--outputs", "pos,force", "--at", "0.5,1", "-o", str(out), "-q"]) == 0
    data = np.load(out)
    assert list(data.files) == ["run", "m", "kp", "status", "message", "seconds", "pos@0.5", "force@0.5", "pos@1",
                                "force@1"]
    assert list(data["status"]) == ["ok"] * 4
    for i, sim in enumerate(serial):
        row = int(np.flatnonzero(np.isclose(sim["t"], 0.5))[0])
        assert data["pos@0.5"][i] == sim["pos"][row] and data["force@0.5"][i] == sim["force"][row]
        assert data["pos@1"][i] == sim["pos"][-1]


def test_a_dask_cluster_gives_the_same_rows(tmp_path, serial, capsys):
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] "
                                      "extra; tools/setup.sh installs it)")
    out = tmp_path / "dask.csv"
    # two worker processes: each loads the model by its path, as a cluster's workers do
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        assert main(["sweep", SERVO, "--param", "m=1,2", "--param", "kp=20,40", *RUN, "--scheduler",
                     cl.scheduler_address, "--chunksize", "1", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"Dask at {cl.scheduler_address}, 2 worker threads" in err, err
    check_against_serial(read_rows(out), serial)


def test_an_unreachable_scheduler_is_refused(tmp_path, capsys):
    pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] extra)")
    out = tmp_path / "x.csv"
    tic = time.perf_counter()
    rc = main(["sweep", SERVO, "--param", "m=1", *RUN, "--scheduler", "tcp://127.0.0.1:9", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "--scheduler: cannot connect to the Dask scheduler tcp://127.0.0.1:9" in err, err
    assert "Traceback" not in err and not out.exists()
    assert time.perf_counter() - tic < 5  # refused at once, not after the Client's 10 s of retries


@pytest.mark.parametrize("spec, fragment", [
    ("m=1:2", "--param m: expects START:STOP:COUNT, V1,V2,... or VALUE, got '1:2'"),
    ("m=1:2:0", "--param m: COUNT must be a whole number >= 1, got '0'"),
    ("m=1:2:2.5", "--param m: COUNT must be a whole number >= 1, got '2.5'"),
    ("m=1,,2", "--param m: expects START:STOP:COUNT, V1,V2,... or VALUE, got '1,,2'"),
    ("m=a", "--param m: expects"),
    ("m=1,nan", "--param m: values must be finite numbers, got nan"),
    ("m=1:inf:3", "--param m: STOP must be a finite number, got inf"),  # (linspace: nan)
    ("m=-inf:1:3", "--param m: START must be a finite number, got -inf"),
    ("m", "--param expects NAME=START:STOP:COUNT, NAME=V1,V2,... or NAME=VALUE, got 'm'"),
    ("=1", "--param expects NAME=START:STOP:COUNT"),
    ("zz=1,2", "--param: model 'servo' has no parameter 'zz' (has: m, b, kp)"),
    ("m=1:2:2000000", "--param m: COUNT 2000000 is more than 1000000 runs"),
])
def test_bad_param_specs_are_refused_naming_the_argument(tmp_path, capsys, spec, fragment):
    out = tmp_path / "x.csv"
    rc = main(["sweep", SERVO, "--param", spec, *RUN, "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith("bondsim-ros sweep: error: ") and "Traceback" not in err, err
    assert fragment in err, err
    assert not out.exists()


@pytest.mark.parametrize("argv, fragment", [
    (["--param", "m=1", "--param", "m=2"], "--param m: given twice"),
    (["--param", "m=1:2:1001", "--param", "kp=1:2:1000"], "--param: 1001 x 1000 = 1001000 runs: more than 1000000"),
    (["--param", "m=1", "--at", "0.505"], "--at: time 0.505 is not an output time"),
    (["--param", "m=1", "--at", "2"], "--at: time 2 is outside the run (0..1)"),
    (["--param", "m=1", "--at", "1.0000000001"], "--at: time 1.0000000001 is outside the run (0..1)"),
    (["--param", "m=1", "--outputs", "pos,nope"], "--outputs: model 'servo' has no output column 'nope'"),
    (["--param", "m=1", "--outputs", "pos,pos"], "--outputs: column 'pos' is given twice"),
    (["--param", "m=1", "--outputs", "t,pos"], "--outputs: 't' is the run's time, not an output column"),
    (["--param", "m=1", "--at", "1,1"], "--at: time 1 is given twice"),
    (["--param", "m=1", "--jobs", "-1"], "--jobs must be >= 0 (0: every usable core), got -1"),
    (["--param", "m=1", "--rtol", "2"], "--rtol must be a number in [2.22e-14, 0.1], got 2"),
])
def test_bad_options_are_refused(tmp_path, capsys, argv, fragment):
    out = tmp_path / "x.csv"
    rc = main(["sweep", SERVO, *RUN, *argv, "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and fragment in err and "Traceback" not in err, err
    assert not out.exists()


def test_jobs_0_is_every_usable_core_as_for_fit(tmp_path, capsys):
    from bondsim_ros.sweep.workers import default_jobs

    out = tmp_path / "x.csv"
    assert main(["sweep", SERVO, *RUN, "--param", "m=1:2:4", "--jobs", "0", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    jobs = min(default_jobs(), 4)
    assert (f"{jobs} local worker" in err or f"{jobs} job" in err), err
    assert [r["status"] for r in read_rows(out)] == ["ok"] * 4


def test_output_format_and_place_are_checked_before_running(tmp_path, capsys):
    rc = main(["sweep", SERVO, "--param", "m=1", *RUN, "-o", str(tmp_path / "x.xlsx")])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown format '.xlsx'" in err, err
    rc = main(["sweep", SERVO, "--param", "m=1", *RUN, "-o", str(tmp_path / "no" / "x.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "--output" in err and "does not exist" in err, err


def test_parquet_is_written_or_its_library_named(tmp_path, capsys):
    out = tmp_path / "x.parquet"
    rc = main(["sweep", SERVO, "--param", "m=1,2", *RUN, "-o", str(out), "-q", "--jobs", "1"])
    err = capsys.readouterr().err
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert rc == 2 and "writing Parquet needs pyarrow" in err and not out.exists(), err
        return
    assert rc == 0, err
    table = pq.read_table(out).to_pydict()
    assert table["m"] == [1.0, 2.0] and table["status"] == ["ok", "ok"]


def test_a_failing_run_is_reported_in_its_row_and_the_sweep_goes_on(tmp_path, serial, capsys):
    out = tmp_path / "sweep.csv"
    # m = 0: the mass's inertia must be positive, refused when that run starts
    rc = main(["sweep", SERVO, "--param", "m=0,1,2", "--param", "kp=20,40", *RUN, "--jobs", "2", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 1, err  # some runs failed; the table is written
    assert "6 of 6 runs, 2 failed" in err and "run 0 (m=0, kp=20) failed: servo: parameter value(s) m = 0 refused" \
        in err, err
    rows = read_rows(out)
    for row in rows[:2]:
        assert row["status"] == "failed" and "m = 0 refused" in row["message"] and "must be positive" in row["message"]
        assert math.isnan(float(row["pos"]))
    check_against_serial(rows[2:], serial)


def test_python_api_and_ctrl_c_stops_the_workers(tmp_path):
    from bondsim_ros.sweep import SweepError, SweepInterrupted, sweep

    result = sweep(SERVO, {"m": [1.0, 2.0], "kp": "20,40"}, t_end=1.0, dt_out=0.01, outputs=["pos"], jobs=1)
    assert result.status == ["ok"] * 4 and result.columns[-1] == "pos"
    assert list(result["kp"]) == [20.0, 40.0, 20.0, 40.0]
    listed = sweep(SERVO, [{"m": 2.0, "kp": 40.0}, {"kp": 20.0, "m": 1.0}], t_end=1.0, dt_out=0.01, outputs=["pos"],
                   jobs=1)
    assert listed["pos"][0] == result["pos"][3] and listed["pos"][1] == result["pos"][0]
    with pytest.raises(SweepError, match=r"params: run 1 sets \['m'\], run 0 \['kp', 'm'\]"):
        sweep(SERVO, [{"m": 2.0, "kp": 40.0}, {"m": 1.0}], t_end=1.0, dt_out=0.01, jobs=1)

    calls = []

    def interrupt(done, total, failed):  # Ctrl-C as the first chunk comes back
        calls.append(done)
        raise KeyboardInterrupt

    with pytest.raises(SweepInterrupted) as info:
        sweep(SERVO, {"m": np.linspace(1, 2, 20)}, t_end=4.0, dt_out=0.01,
              options=SolverOptions(hmax=1e-5), jobs=2, chunksize=1,
              progress=interrupt)
    status = info.value.result.status
    assert calls == [1] and status.count("ok") == 1 and status.count("cancelled") == 19, status
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not multiprocessing.active_children()  # no worker left running


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to see the worker processes")
def test_ctrl_c_on_the_command_line_writes_the_table_and_leaves_no_worker(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    out = tmp_path / "sweep.csv"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    # 200 runs of about 0.1 s each: still running when Ctrl-C comes
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "sweep", SERVO, "--param", "m=1:2:200",
                             "--t-end", "4", "--dt-out", "0.01", "--hmax", "1e-5", "--jobs", "2", "--chunksize", "1",
                             "-o", str(out)], env=env, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=terminal_sigint)
    try:
        workers = started_workers(proc.pid)
        time.sleep(1.0)  # runs under way
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal signals the whole process group
        err = proc.communicate(timeout=30)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted:" in err and "marked cancelled" in err, err
    status = [r["status"] for r in read_rows(out)]
    assert len(status) == 200 and status.count("cancelled") > 0 and "failed" not in status, status
    assert all(s == "ok" for s in status if s != "cancelled")
    left = left_over(workers)
    assert not left, f"processes outlived the sweep: {left}"


def test_sigterm_on_the_command_line_writes_the_table_and_says_terminated(tmp_path):
    """`kill` (SIGTERM) ends a sweep as it ends every command, exit status 143 and "terminated"
    (it was reported as a Ctrl-C, 130 "interrupted"), the table written with the runs not run
    marked cancelled."""
    import os
    import signal
    import subprocess
    import sys

    out = tmp_path / "sweep.csv"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "sweep", SERVO, "--param", "m=1:2:200",
                             "--t-end", "4", "--dt-out", "0.01", "--hmax", "1e-5", "--jobs", "1", "-o", str(out)],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(4.0)  # runs under way (200 take some 17 s)
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=30)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "terminated:" in err and "marked cancelled" in err, err
    status = [r["status"] for r in read_rows(out)]
    assert len(status) == 200 and status.count("cancelled") > 0 and "failed" not in status, status


def test_the_readme_sweep_runs_as_written(tmp_path, monkeypatch, capsys):
    import shlex

    root = Path(__file__).resolve().parents[1]
    block = (root / "README.md").read_text().split("## Using it", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [shlex.split(line, comments=True) for line in block.splitlines() if line.startswith("bondsim-ros sweep")]
    assert len(lines) == 1
    assert lines[0] == shlex.split("bondsim-ros sweep " + (root / "docs" / "engine.md").read_text().split(
        "```bash\nbondsim-ros sweep ", 1)[1].split("\n", 1)[0]), "README and docs/engine.md show the same command"
    monkeypatch.chdir(tmp_path)
    assert main(lines[0][1:] + ["-q"]) == 0, capsys.readouterr().err
    rows = read_rows(tmp_path / "sweep.csv")
    assert [r["status"] for r in rows] == ["ok"] * 12
    assert list(rows[0]) == ["run", "vx_cmd", "wz_cmd", "status", "message", "seconds", "x", "y", "phi"]
    # straight ahead at 0.5 m/s for the model's 5 s, and turning on the spot: what the grid asks for
    assert float(rows[10]["x"]) == pytest.approx(2.5, rel=0.01) and abs(float(rows[10]["phi"])) < 1e-9
    assert float(rows[1]["phi"]) == pytest.approx(5.0, rel=0.01)


def test_a_script_without_the_main_guard_is_told_why_its_workers_died(tmp_path):
    """A script that runs a sweep with jobs=2 at module level: each spawned worker imports it
    again and cannot start a pool of its own there. The script ends within seconds with an
    error that names the __main__ guard, not only "a process terminated abruptly"."""
    import os
    import subprocess

    script = tmp_path / "unguarded.py"
    script.write_text("from bondsim_ros.sweep import sweep\n"
                      "sweep('pendulum', {'L': '0.5:1.5:4'}, t_end=0.5, dt_out=0.1, jobs=2)\n")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(root)))
    assert proc.returncode == 1
    # the error's line (multiprocessing's resource tracker may warn after it about the dead
    # workers' semaphores)
    said = [line for line in proc.stderr.splitlines() if "SweepAborted: a worker process died" in line]
    assert said and 'under `if __name__ == "__main__":`' in said[-1], proc.stderr


def test_the_sweep_snippet_of_the_engine_doc_runs_as_a_script(tmp_path):
    """docs/engine.md's Python example, saved as a script and run: its jobs=2 workers import the
    script again, which the example's __main__ guard lets them do."""
    import os
    import re
    import subprocess

    root = Path(__file__).resolve().parents[1]
    blocks = re.findall(r"```python\n(.*?)```", (root / "docs" / "engine.md").read_text(), re.S)
    (snippet,) = [b for b in blocks if "jobs=2" in b and "sweep(" in b]
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(root)))
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "sweep.npz") as table:
        assert list(table["status"]) == ["ok"] * 12 and len(table["x"]) == 12


def test_an_output_no_column_has_is_refused_before_any_run_for_a_postprocessed_model():
    """robotino_twist's postprocessing names the columns it adds (roller joints, x, y, phi):
    a typo among --outputs is refused at once, as for any other model, instead of every run
    failing on it."""
    from bondsim_ros.sweep import SweepError, sweep

    with pytest.raises(SweepError, match="no output column 'nope'"):
        sweep("robotino_twist", {"vx_cmd": [0.0, 0.5]}, t_end=1.0, dt_out=0.1, outputs=["x", "nope"], jobs=1)
    result = sweep("robotino_twist", {"vx_cmd": [0.5]}, t_end=0.2, dt_out=0.02, outputs=["x", "wheel1_roller1"], jobs=1)
    assert result.status == ["ok"] and result["x"][0] > 0.05 and result["wheel1_roller1"][0] > 0.1


def test_at_columns_near_1e5_seconds_are_two_columns_with_their_own_times(tmp_path):
    """A mass pushed by 1 N from rest: p = t. Two output times 0.5 s apart near 123,456 s are
    two columns, each holding its own time's value; the same time twice is refused."""
    from bondsim_ros.sweep import SweepError, sweep

    model = tmp_path / "ramp.yaml"
    model.write_text("model: ramp\nparameters: {F0: 1.0}\ncomponents:\n  F: {type: Se, effort: F0}\n"
                     "  v: {type: EffortJunction}\n  mass: {type: I, inertia: 1.0}\nbonds: [[F, v], [v, mass]]\n")
    result = sweep(str(model), {"F0": [1.0]}, t_end=123457.0, dt_out=0.5, at=[123456.0, 123456.5], jobs=1)
    assert result["mass.p@123456"][0] == pytest.approx(123456.0)
    assert result["mass.p@123456.5"][0] == pytest.approx(123456.5)
    with pytest.raises(SweepError, match="time 1 is given twice"):
        sweep(str(model), {"F0": [1.0]}, t_end=2.0, dt_out=0.5, at=[1, 1.0], jobs=1)


@pytest.mark.parametrize("params, extra, says", [
    ({"L": [1.0]}, {"chunksize": 0}, "chunksize: must be a whole number of runs, at least 1, got 0"),
    ({"L": [1.0]}, {"chunksize": -1}, "chunksize: must be a whole number of runs, at least 1, got -1"),
    ({"L": ["a"]}, {}, "params: L: 'a' is not a number"),
    ({"L": None}, {}, "params: L: None is not a number"),
    ({"L": [True, 2.0]}, {}, "params: L: True is not a number"),
    ([{"L": np.False_}], {}, "params: L: False is not a number"),
    ({"L": [float("nan"), 1.0]}, {}, "params: L: the values must be finite numbers, got nan"),
    ([{"L": "x"}], {}, "params: L: 'x' is not a number"),
])
def test_the_python_api_refuses_what_the_command_line_refuses(params, extra, says):
    """Before any run, as SweepError naming the argument: a chunk size below 1 (-1 ran nothing
    and reported every run cancelled by an interruption that never came; 0 raised range()'s
    ValueError), a value that is no number, NaN."""
    from bondsim_ros.sweep import SweepError, sweep

    with pytest.raises(SweepError) as exc:
        sweep("pendulum", params, t_end=0.1, dt_out=0.1, jobs=2, **extra)
    assert str(exc.value) == says


def test_a_sweep_whose_every_run_fails_still_has_the_output_columns():
    """Each failed run's outputs are NaN under the columns a finished run would have: a table
    of failures had no output columns at all, and result["x"] raised KeyError."""
    from bondsim_ros.sweep import sweep

    ok = sweep("pendulum", {"L": [1.0]}, t_end=0.1, dt_out=0.1, jobs=1)
    failed = sweep("pendulum", {"L": [0.0]}, t_end=0.1, dt_out=0.1, jobs=1)
    assert failed.status == ["failed"]
    assert failed.output_names == ok.output_names and ok.output_names
    for name in ok.output_names:
        assert np.isnan(failed[name]).all()


def _fake_scheduler(reply: bytes | None):
    """A port that accepts connections and sends ``reply`` on each (None: never a byte, as an HTTP
    server waiting for a request); (address, stop)."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    conns, done = [], threading.Event()

    def serve():
        while not done.is_set():
            try:
                conn = server.accept()[0]
            except OSError:
                continue
            conns.append(conn)
            if reply is not None:
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    def stop():
        done.set()
        thread.join()
        for conn in conns:
            conn.close()
        server.close()

    return f"tcp://127.0.0.1:{server.getsockname()[1]}", stop


def test_a_scheduler_port_that_never_answers_is_refused_after_the_deadline(tmp_path, capsys, monkeypatch):
    """A port that accepts and stays silent (a dashboard's HTTP port) kept Dask's Client waiting
    for good, its own timeout notwithstanding: the connection has a deadline of its own."""
    pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] extra)")
    from bondsim_ros.sweep import workers

    monkeypatch.setattr(workers, "CONNECT_TIMEOUT", 2.0)
    address, stop = _fake_scheduler(None)
    out = tmp_path / "x.csv"
    tic = time.perf_counter()
    try:
        rc = main(["sweep", SERVO, "--param", "m=1", *RUN, "--scheduler", address, "-o", str(out)])
    finally:
        stop()
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert err.startswith(f"bondsim-ros sweep: error: --scheduler: cannot connect to the Dask scheduler {address}: "
                          f"no answer within 2 s (is it the scheduler's port (8786 by default), not its "
                          f"dashboard's"), err
    assert time.perf_counter() - tic < 8 and not out.exists()


def test_a_service_that_answers_otherwise_is_refused_naming_its_answer(tmp_path, capsys):
    """An HTTP server's 400, read as a Dask message, made numpy try to allocate 3 EiB (a
    traceback, exit 1)."""
    pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] extra)")
    address, stop = _fake_scheduler(b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
    out = tmp_path / "x.csv"
    try:
        rc = main(["sweep", SERVO, "--param", "m=1", *RUN, "--scheduler", address, "-o", str(out)])
    finally:
        stop()
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"cannot connect to the Dask scheduler {address}: the service there answered 'HTTP/1.1 400 Bad Request', " \
           f"which is not Dask's protocol" in err, err
    assert not out.exists()


def test_a_scheduler_port_out_of_range_is_refused_at_once(tmp_path, capsys):
    pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] extra)")
    tic = time.perf_counter()
    rc = main(["sweep", SERVO, "--param", "m=1", *RUN, "--scheduler", "tcp://127.0.0.1:99999", "-o",
               str(tmp_path / "x.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot connect to the Dask scheduler tcp://127.0.0.1:99999: Port out of range 0-65535" in err
    assert time.perf_counter() - tic < 5, "refused at once, not after the Client's timeout"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to see the worker processes")
def test_a_worker_killed_mid_sweep_fails_the_unfinished_runs_and_keeps_the_finished(tmp_path):
    """kill -9 of a pool's worker (as the out-of-memory killer does): one error line, exit 1, the
    table written with the finished rows and the rest failed "not finished" (it was a traceback
    advising the __main__ guard, and no table)."""
    import os
    import signal
    import subprocess

    out = tmp_path / "sweep.csv"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "sweep", SERVO, "--param", "m=1:2:200",
                             "--t-end", "4", "--dt-out", "0.01", "--hmax", "1e-5", "--jobs", "2", "--chunksize", "1",
                             "-o", str(out)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        workers = pool_workers(proc.pid)
        time.sleep(2.0)  # runs finished, and more under way
        os.kill(workers[0], signal.SIGKILL)
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "__main__" not in err, err
    said = [line for line in err.splitlines() if line.startswith("bondsim-ros sweep: error:")]
    assert len(said) == 1, err
    assert said[0].startswith("bondsim-ros sweep: error: a worker process died (killed by SIGKILL"), err
    rows = read_rows(out)
    status = [r["status"] for r in rows]
    assert len(rows) == 200 and 0 < status.count("ok") < 200, status
    lost = [r for r in rows if r["status"] != "ok"]
    assert all(r["status"] == "failed" and r["message"].startswith("not finished: a worker process died (killed by "
                                                                   "SIGKILL") for r in lost), lost[:2]
    assert f"{len(lost)} runs not finished (marked failed in {out})" in said[0]
    assert f"{status.count('ok')} of 200 runs, 0 failed" in err, err


def test_a_cluster_without_workers_is_said_and_waited_for(tmp_path, capsys):
    """A scheduler with no workers: the sweep says so once and waits (it waited silently, its
    summary saying "1 worker threads"); the summary then names the workers that ran it."""
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] "
                                      "extra)")
    import threading

    out = tmp_path / "x.csv"
    with distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        later = threading.Timer(2.0, cl.scale, (1,))  # a worker comes while the runs wait
        later.start()
        try:
            rc = main(["sweep", SERVO, "--param", "m=1,2", *RUN, "--scheduler", cl.scheduler_address, "-o", str(out)])
        finally:
            later.cancel()
    err = capsys.readouterr().err
    assert rc == 0, err
    assert err.count(f"[bondsim] the Dask cluster at {cl.scheduler_address} has no workers yet: waiting for them") == 1
    assert f"Dask at {cl.scheduler_address}, 1 worker thread)" in err, err
    assert [r["status"] for r in read_rows(out)] == ["ok", "ok"]


def test_a_dask_worker_that_dies_is_reported_as_such():
    """KilledWorker: the scheduler gave up on a task whose workers died."""
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] not installed (the [cluster] "
                                      "extra)")
    import os

    import dask

    from bondsim_ros.sweep.workers import WorkerDied, Workers

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
            with Workers(scheduler=cl.scheduler_address) as workers:
                with pytest.raises(WorkerDied, match=r"^a Dask worker died running a task"):
                    workers.run(os._exit, [(3,)])


@pytest.mark.parametrize("spec, fragment", [
    ("m=-1e308:1e308:3", "--param m: the range -1e+308 to 1e+308 is wider than a float holds (STOP - START overflows)"),
    ("m=1_0", "--param m: expects START:STOP:COUNT, V1,V2,... or VALUE, got '1_0'"),
    ("m=1:2_0:3", "--param m: expects START:STOP:COUNT"),
])
def test_param_specs_a_float_would_misread_are_refused(tmp_path, capsys, spec, fragment):
    """A range whose step overflows said "got nan" after numpy's warnings; 1_0, Python's literal
    syntax, was taken as 10."""
    import warnings

    out = tmp_path / "x.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning on the way
        rc = main(["sweep", SERVO, "--param", spec, *RUN, "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and fragment in err and err.count("\n") == 1, err
    assert main(["simulate", SERVO, *RUN, "--param", "m=1_0", "-q"]) == 2
    assert "--param expects NAME=NUMBER, got 'm=1_0'" in capsys.readouterr().err


def test_the_python_api_takes_jobs_and_params_as_the_command_line(tmp_path):
    from bondsim_ros.sweep import SweepError, sweep
    from bondsim_ros.sweep.workers import default_jobs

    run = dict(t_end=0.1, dt_out=0.1)
    with pytest.raises(SweepError, match=r"^params: no parameters given$"):
        sweep("pendulum", {}, **run, jobs=1)
    with pytest.raises(SweepError, match=r"^jobs: must be a whole number, got 2.5$"):
        sweep("pendulum", {"L": [1.0]}, **run, jobs=2.5)
    with pytest.raises(SweepError, match=r"^jobs: give jobs or scheduler, not both"):
        sweep("pendulum", {"L": [1.0]}, **run, jobs=2, scheduler="tcp://127.0.0.1:9")
    result = sweep("pendulum", {"L": [1.0, 2.0]}, **run, jobs=0)  # every usable core, as --jobs 0
    assert result.status == ["ok", "ok"]
    assert result.workers == ("2 jobs" if default_jobs() >= 2 else "1 job (this process)")
    with pytest.raises(SweepError, match=r"x.txt: unknown format '.txt'"):
        result.write(tmp_path / "x.txt")
    assert not (tmp_path / "x.txt").exists()
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        with pytest.raises(SweepError, match="writing Parquet needs pyarrow"):
            result.write(tmp_path / "x.parquet")


def test_progress_lines_when_stderr_is_no_terminal(tmp_path, capsys):
    """A sweep logged to a file shows how far it got: a line at each tenth of the runs."""
    out = tmp_path / "x.csv"
    assert main(["sweep", SERVO, "--param", "m=1:2:20", *RUN, "--jobs", "1", "-o", str(out)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[bondsim] sweep: ")]
    assert lines[0].startswith("[bondsim] sweep: 2 of 20 runs done (10 %), 0 failed, ") and len(lines) == 9, lines


@pytest.mark.parametrize("kw, says", [
    ({"outputs": "mass.p"}, "expected a list of column names, got the string 'mass.p'"),  # split into m, a, s, s
    ({"at": 0.5}, "expected a list of times, got 0.5"),  # a TypeError
])
def test_the_sweep_api_refuses_a_single_value_for_a_list(tmp_path, kw, says):
    from bondsim_ros.sweep import SweepError, sweep
    from test_fit_input import MSD_K

    model = tmp_path / "msd_k.yaml"
    model.write_text(MSD_K)
    with pytest.raises(SweepError, match=re.escape(says)):
        sweep(str(model), {"k": [1.0, 2.0]}, t_end=1.0, dt_out=0.5, jobs=1, **kw)


def test_the_table_may_not_replace_a_file_the_model_is_built_from(tmp_path, capsys, monkeypatch):
    """`sweep motor.py -o table.csv` with table.csv a link to gains.py (motor.py imports it): the
    table replaced the module (a name ending in .py itself is no table format)."""
    import textwrap

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "gains.py").write_text("K = 4.0\n")
    (tmp_path / "table.csv").symlink_to("gains.py")
    (tmp_path / "motor.py").write_text(textwrap.dedent("""
        from bondsim_ros.bondgraph import C, EffortJunction, I, Model, R, Se
        import gains

        def build():
            m = Model("msd_gains")
            m.parameter("c", 0.5)
            v = m.add(EffortJunction("v", output=True))
            m.add(Se("F", 1.0), I("mass", 2.0), C("spring", 1.0 / gains.K), R("damper", "c"))
            m.bond("F", v)
            for n in ("mass", "spring", "damper"):
                m.bond(v, n)
            return m
        """))
    for built in ("built now", "from its record"):
        rc = main(["sweep", "motor.py", "--param", "c=0.5,1", "--t-end", "0.1", "--dt-out", "0.05", "-q",
                   "--jobs", "1", "-o", "table.csv"])
        err = capsys.readouterr().err
        assert rc == 2 and f"--output table.csv: refusing to overwrite {tmp_path / 'gains.py'}, a file the model " \
            f"is built from" in err, (built, err)
        assert (tmp_path / "gains.py").read_text() == "K = 4.0\n"
        assert main(["simulate", "motor.py", "--t-end", "0.1", "--dt-out", "0.05", "-q", "--csv", "out.csv"]) == 0
