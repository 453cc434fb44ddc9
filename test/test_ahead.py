"""A solve started ahead from the image of the same run (solver/ahead.py): taken only when it is
that run's, and then the solver's own result and state, bit for bit."""
import ctypes
import marshal
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.bondgraph import compile_model
from bondsim_ros.bondgraph.simulation import Simulation, StreamedCsv, _run, output_times, simulate
from bondsim_ros.robots.robotino.model import robotino
from bondsim_ros.solver import SolverOptions, ahead

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.02)
KEY = ("a command",)


@pytest.fixture(scope="module")
def model():
    return compile_model(robotino())  # roller switches: events, modes, restarts


def _bits(a):
    return np.ascontiguousarray(a).view(np.int64)


def _started(path) -> ahead.Ahead:
    """As the command line starts one: the image read and its run on a thread."""
    with open(path, "rb") as f:
        run = ahead.Run(marshal.load(f))
    run.start()
    return ahead.Ahead(str(path), KEY, run)


def test_a_run_started_from_its_image_is_the_solvers_own_result_and_state(model, tmp_path):
    path = tmp_path / "runs" / "x.run"
    t_out = output_times(0.0, 1.0, 0.02)
    first = ahead.Ahead(str(path), KEY, None)
    own = Simulation(model, OPTIONS)
    plain = _run(own, t_out, None, 0.0, 0.0, None, first)
    assert not first.adopted and path.is_file()  # the image written after the run

    taken = _started(path)
    sim = Simulation(model, OPTIONS)
    result = _run(sim, t_out, None, 0.0, 0.0, None, taken)
    assert taken.adopted
    assert np.array_equal(_bits(result.data), _bits(plain.data))
    assert result.stats == plain.stats and result.stats["events"] > 0
    # the solver is left as its own calls leave it: the run goes on identically from there
    later = np.array([1.2, 1.5])
    assert np.array_equal(_bits(sim.advance(later)), _bits(own.advance(later)))
    assert sim.solver.stats == own.solver.stats


def test_a_streamed_csv_from_a_run_started_ahead_is_the_one_written_without(model, tmp_path):
    path = tmp_path / "x.run"
    csv_plain, csv_ahead = tmp_path / "plain.csv", tmp_path / "ahead.csv"
    rows = StreamedCsv()
    plain = simulate(model, t_end=2.0, dt_out=0.01, options=OPTIONS, rows=rows, ahead=ahead.Ahead(str(path), KEY, None))
    rows.to_csv(plain, csv_plain)
    taken = _started(path)
    assert len(taken.run.image["calls"]["stretches"]) > 1  # the CSV's stretches: a core call each
    rows = StreamedCsv()
    result = simulate(model, t_end=2.0, dt_out=0.01, options=OPTIONS, rows=rows, ahead=taken)
    rows.to_csv(result, csv_ahead)
    assert taken.adopted
    assert csv_ahead.read_bytes() == csv_plain.read_bytes()


@pytest.mark.parametrize("change", ["start", "options", "times", "stretches"])
def test_a_run_that_is_not_this_ones_is_stopped_and_the_solver_solves(model, tmp_path, change):
    path = tmp_path / "x.run"
    # 200 output rows: more than a stretch of a streamed CSV
    simulate(model, t_end=1.0, dt_out=0.005, options=OPTIONS, ahead=ahead.Ahead(str(path), KEY, None))
    image = path.read_bytes()
    kw = dict(t_end=1.0, dt_out=0.005, options=OPTIONS)
    if change == "start":
        kw["y0"] = {"chassis.pos_x.x": 0.25}
    elif change == "options":
        kw["options"] = SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.01)
    elif change == "times":
        kw["dt_out"] = 0.004
    expected = simulate(model, **kw)
    if change == "stretches":
        kw["rows"] = StreamedCsv()  # the same rows, solved in stretches: other core calls
    taken = _started(path)
    run = taken.run
    result = simulate(model, **kw, ahead=taken)
    if change == "stretches":
        kw["rows"].close()
    assert not taken.adopted
    run.join(timeout=60)  # stopped: it ends within one call
    assert not run.is_alive()
    assert np.array_equal(_bits(result.data), _bits(expected.data))
    assert path.read_bytes() != image  # this run's own image replaces it


def test_a_run_stopped_ends_at_its_next_step(model, tmp_path):
    path = tmp_path / "x.run"
    simulate(model, t_end=20.0, dt_out=0.02, options=OPTIONS, ahead=ahead.Ahead(str(path), KEY, None))
    run = _started(path).run
    assert run.image["calls"]["stretches"] == [(0, 1000)]  # one call: some 70,000 steps
    run.stop()
    run.join(timeout=60)
    assert not run.is_alive() and run.ended
    assert not run.results or run.results[0][1] < 1000  # no call, or one cut short


def test_an_image_that_does_not_load_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path))
    words = ["simulate", "robotino"]
    assert ahead.start(words).run is None  # none yet
    path = Path(ahead.image_path(words))
    path.parent.mkdir(parents=True)
    for content in (b"", b"not marshal data", marshal.dumps({"key": ahead._key(words)}),
                    marshal.dumps({"key": ahead._key(words), "core": "/nonexistent/bdf_core.so"}),
                    marshal.dumps([1, 2, 3])):
        path.write_bytes(content)
        started = ahead.start(words)
        assert started.run is None and started.path == str(path)


def test_kernels_that_are_no_library_symbol_make_no_image():
    callback = ctypes.CFUNCTYPE(None)(lambda: None)
    assert ahead.symbol_of(ctypes.cast(callback, ctypes.c_void_p).value) is None
    from bondsim_ros.solver import _ccore

    found = ahead.symbol_of(_ccore.no_modes_address())
    assert found is not None and found[1] == "bdf_no_modes" and os.path.isfile(found[0])


def test_the_command_run_again_starts_its_solve_ahead_with_the_same_csv(tmp_path):
    env = dict(os.environ, BONDSIM_CACHE_DIR=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "bondsim_ros.cli", "simulate", "robotino", "--t-end", "2", "--csv", "out.csv"]
    said, csvs = [], []
    for _ in range(3):
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        said.append([line for line in proc.stderr.splitlines() if "output rows" in line][0])
        csvs.append((tmp_path / "out.csv").read_bytes())
    assert "started ahead" not in said[0] and "started ahead" in said[1] and "started ahead" in said[2]
    assert csvs[0] == csvs[1] == csvs[2]
    assert len(list((tmp_path / "cache" / "runs").glob("*.run"))) == 1
    # another command (another output file) has no image yet
    proc = subprocess.run(cmd[:-1] + ["other.csv"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "started ahead" not in proc.stderr, proc.stderr
    assert (tmp_path / "other.csv").read_bytes() == csvs[0]
