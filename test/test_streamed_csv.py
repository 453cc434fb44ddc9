"""The CSV formatted while the solve runs (bondgraph.simulation.StreamedCsv) is, byte for byte,
the one SimulationResult.to_csv writes after it."""
from __future__ import annotations

import math

import numpy as np

from bondsim_ros.bondgraph import compile_model, simulate
from bondsim_ros.bondgraph.simulation import SimulationResult, StreamedCsv
from bondsim_ros.cli import main
from bondsim_ros.solver import SolverOptions

# values whose text is easy to get wrong: signed zeros, NaN of either sign, infinities,
# the smallest subnormal, the largest double, values that need all 17 digits
SPECIAL = [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 5e-324, -2.2250738585072009e-308,
           1.7976931348623157e308, 0.1, 1 / 3, -1e-300, 123456789012345680.0, 1e16, 1e-5]


def _table(rows, cols, seed):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((rows, cols)) * 10.0 ** rng.integers(-300, 300, (rows, cols))
    data[: len(SPECIAL), 0] = SPECIAL
    data[:, 1] = np.repeat(rng.standard_normal(rows // 10 + 1), 10)[:rows]  # repeated values
    return data


def _stream(data, stops):
    rows = StreamedCsv()
    for stop in stops:
        rows.rows_ready(data, stop)
    return rows


def test_rows_handed_over_in_stretches_write_what_to_csv_writes(tmp_path):
    data = _table(301, 7, 1)
    names = ["t"] + [f"c{j}" for j in range(6)]
    rows = _stream(data, [1, 40, 41, 200, 301])
    result = SimulationResult(names=names, data=data)
    rows.to_csv(result, tmp_path / "streamed.csv")
    result.to_csv(tmp_path / "after.csv")
    assert (tmp_path / "streamed.csv").read_bytes() == (tmp_path / "after.csv").read_bytes()


def test_appended_columns_are_joined_to_the_streamed_rows(tmp_path):
    data = _table(250, 5, 2)
    rows = _stream(data, [1, 128, 250])
    extra = _table(250, 4, 3)
    extra[:, 2] = -0.0
    extra[::3, 2] = 0.0  # -0.0 and 0.0 are equal but print differently
    extra[:, 3] = np.cumsum(np.where(np.arange(250) % 6 == 0, 0.25, 0.0))
    result = SimulationResult(names=[f"c{j}" for j in range(5)], data=data).with_columns(
        ["x1", "x2", "x3", "x4"], list(extra.T))
    rows.to_csv(result, tmp_path / "streamed.csv")
    result.to_csv(tmp_path / "after.csv")
    text = (tmp_path / "streamed.csv").read_bytes()
    assert text == (tmp_path / "after.csv").read_bytes()
    assert b",-0," in text and b",0," in text and b"nan" in text and b"inf" in text


def test_a_result_whose_solved_columns_changed_is_written_from_the_result(tmp_path):
    data = _table(50, 3, 4)
    rows = _stream(data, [1, 50])
    changed = data.copy()
    changed[7, 1] = -changed[7, 1]
    result = SimulationResult(names=["a", "b", "c"], data=changed)
    rows.to_csv(result, tmp_path / "streamed.csv")
    result.to_csv(tmp_path / "after.csv")
    assert (tmp_path / "streamed.csv").read_bytes() == (tmp_path / "after.csv").read_bytes()


def test_closing_before_any_row_and_after_the_rows_returns():
    StreamedCsv().close()
    rows = _stream(np.zeros((3, 2)), [1])
    rows.close()
    rows.close()


def test_derived_columns_made_on_the_thread_are_written_when_they_are_the_results(tmp_path):
    data = _table(90, 3, 5)

    def derive(rows):  # column b and twice column c
        return np.stack([rows[:, 1], rows[:, 2] * 2.0], axis=1)

    rows = StreamedCsv(derive)
    for stop in (1, 33, 90):
        rows.rows_ready(data, stop)
    good = SimulationResult(names=["a", "b", "c"], data=data).with_columns(
        ["b1", "c2"], [data[:, 1], data[:, 2] * 2.0])
    rows.to_csv(good, tmp_path / "streamed.csv")
    good.to_csv(tmp_path / "after.csv")
    assert (tmp_path / "streamed.csv").read_bytes() == (tmp_path / "after.csv").read_bytes()
    # a postprocessor whose columns differ from the thread's: the result's are written
    rows = StreamedCsv(derive)
    rows.rows_ready(data, 90)
    other = SimulationResult(names=["a", "b", "c"], data=data).with_columns(
        ["b1", "c2"], [data[:, 1], data[:, 2] * 3.0])
    rows.to_csv(other, tmp_path / "streamed.csv")
    other.to_csv(tmp_path / "after.csv")
    assert (tmp_path / "streamed.csv").read_bytes() == (tmp_path / "after.csv").read_bytes()


def test_roller_columns_of_blocks_are_those_of_the_whole_table():
    from bondsim_ros.robots.robotino.model import N_ROLLERS, RollerRows, add_roller_columns

    rng = np.random.default_rng(6)
    n = 400
    names = ["t", "wheel1_axle", "wr1", "x", "wheel2_axle", "wr2", "wheel3_axle", "wr3"]
    data = np.column_stack([np.cumsum(rng.uniform(0.001, 0.03, n))] + [rng.normal(0, 3, n) for _ in names[1:]])
    data[:, 1] = np.cumsum(rng.normal(0, 0.4, n))  # axle angles through many contact rollers
    whole = add_roller_columns(SimulationResult(names=names, data=data)).data[:, len(names):]
    assert whole.shape[1] == 3 * N_ROLLERS and np.count_nonzero(np.diff(whole[:, :N_ROLLERS], axis=0)) > 0
    derive, parts, start = RollerRows(names), [], 0
    for size in (1, 7, 1, 128, 64, 199):
        parts.append(derive(data[start:start + size]))
        start += size
    assert start == n
    assert np.concatenate(parts).view(np.int64).tolist() == whole.view(np.int64).tolist()


def test_robotino_command_csv_is_that_of_the_result_written_after_the_solve(tmp_path, monkeypatch):
    """The command streams its CSV (stretches of 128 rows, 501 rows here, roller columns
    made on the thread) and writes the bytes of the result written after the run."""
    from bondsim_ros.models import resolve_model
    from bondsim_ros.robots.robotino.model import add_roller_columns

    out = tmp_path / "cli.csv"

    def not_here(self, path):
        raise AssertionError("written after the solve, not while it ran")

    with monkeypatch.context() as m:
        m.setattr(SimulationResult, "to_csv", not_here)
        assert main(["simulate", "robotino", "--t-end", "10", "--dt-out", "0.02", "--hmax", "0.02",
                     "--csv", str(out), "--quiet"]) == 0
    model, _ = resolve_model("robotino")
    result = simulate(compile_model(model), t_end=10, dt_out=0.02, options=SolverOptions(hmax=0.02))
    add_roller_columns(result).to_csv(tmp_path / "after.csv")
    assert out.read_bytes() == (tmp_path / "after.csv").read_bytes()


def test_rows_written_by_the_thread_are_the_file_to_csv_writes(tmp_path):
    data = _table(200, 4, 7)
    names = ["a", "b", "c", "d"]
    result = SimulationResult(names=names, data=data)
    result.to_csv(tmp_path / "after.csv")
    path = tmp_path / "streamed.csv"
    rows = StreamedCsv(path=path, names=names)
    for stop in (1, 64, 200):
        rows.rows_ready(data, stop)
    rows.to_csv(result, path)
    assert path.read_bytes() == (tmp_path / "after.csv").read_bytes()
    # a result other than the rows written (another header, appended columns): rewritten
    with np.errstate(over="ignore"):  # the largest double among the data: 2x is inf, as meant
        doubled = data[:, 0] * 2.0
    for other in (SimulationResult(names=["a", "b", "c", "x"], data=data),
                  result.with_columns(["e"], [doubled])):
        rows = StreamedCsv(path=path, names=names)
        rows.rows_ready(data, 200)
        rows.to_csv(other, path)
        other.to_csv(tmp_path / "after.csv")
        assert path.read_bytes() == (tmp_path / "after.csv").read_bytes()


def test_a_file_the_thread_cannot_write_is_an_error_of_to_csv(tmp_path):
    import pytest

    data = _table(20, 2, 8)
    rows = StreamedCsv(path=tmp_path / "no" / "such" / "folder.csv", names=["a", "b"])
    rows.rows_ready(data, 20)
    with pytest.raises(OSError):
        rows.to_csv(SimulationResult(names=["a", "b"], data=data), tmp_path / "no" / "such" / "folder.csv")
