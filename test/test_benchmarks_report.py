"""docs/benchmarks.md is what benchmarks/report.py renders from the recorded results in
benchmarks/results/, so the document cannot drift from the records; and a benchmark run with
--record writes a result the report lays out."""
import json
import sys
from pathlib import Path

import pytest
from bench_scripts import BENCH, load

ROOT = Path(__file__).resolve().parent.parent


def test_docs_benchmarks_md_is_the_rendered_report():
    report = load("report")
    assert (ROOT / "docs" / "benchmarks.md").read_text() == report.render(), (
        "docs/benchmarks.md differs from the records: run `python benchmarks/report.py --write`")


def test_every_record_names_machine_commit_date_command_and_source():
    for path in sorted((BENCH / "results").glob("*.json")):
        rec = json.loads(path.read_text())
        assert rec["benchmark"] == path.stem, path
        for key in ("command", "commit", "date", "source", "figures"):
            assert rec.get(key), f"{path.name}: no {key}"
        assert rec["machine"].get("cpu") and rec["machine"].get("cores"), f"{path.name}: machine incomplete"


def test_a_recorded_run_is_laid_out_by_the_report(tmp_path, monkeypatch):
    """twin_stress --record (a few frames) writes its JSON with this machine and commit, and the
    report renders its table from it, with the command that reproduces it (without --record)."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # the scripts put benchmarks/ on it
    record = load("record")
    monkeypatch.setattr(record, "RESULTS", tmp_path)
    monkeypatch.setitem(sys.modules, "record", record)
    stress = load("twin_stress")
    assert stress.main(["--seeds", "5", "--frames", "20", "--record"]) == 0
    rec = json.loads((tmp_path / "twin_stress.json").read_text())
    assert rec["command"] == "python benchmarks/twin_stress.py --seeds 5 --frames 20"
    assert rec["figures"]["seeds_run"] == 1 and rec["figures"]["failures"] == 0
    assert rec["machine"]["cpu"] == record.cpu_model()
    text = load("report").render(tmp_path)
    assert "Reproduce: `python benchmarks/twin_stress.py --seeds 5 --frames 20`" in text
    assert "| seeds with a solver failure / failures in all | **0 / 0** |" in text
    assert "solver_bench.py`: no recorded result yet" in text


def test_machine_paths_in_a_command_are_replaced():
    record = load("record")
    cmd = record.command("solver_bench", ["--sundials-prefix", "/opt/sun", "--dualarm", "--record",
                                          "--json=/var/x.json"], {"--sundials-prefix": "PREFIX", "--json": "OUT"})
    assert cmd == "python benchmarks/solver_bench.py --sundials-prefix PREFIX --dualarm --json OUT"


def test_fit_bench_records_equal_fits_and_the_report_lays_them_out(tmp_path, monkeypatch):
    """fit_bench --record (short logs, no Dask): jobs 2 gives the jobs 1 fit bit for bit, and the
    report renders its rows with the command that reproduces it."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    record = load("record")
    monkeypatch.setattr(record, "RESULTS", tmp_path)
    monkeypatch.setitem(sys.modules, "record", record)
    bench = load("fit_bench")
    assert bench.main(["--omni5dpo", "2", "--robotino", "1", "--no-dask", "--repeat", "1", "--record"]) == 0
    rec = json.loads((tmp_path / "fit_bench.json").read_text())
    assert rec["command"] == "python benchmarks/fit_bench.py --omni5dpo 2 --robotino 1 --no-dask --repeat 1"
    for case in ("omni5dpo", "robotino"):
        c = rec["figures"][case]
        assert c["parameters"] == 3 and set(c) >= {"jobs_1", "jobs_2"} and "dask_2" not in c
        assert c["jobs_2"]["identical_to_jobs_1"] and c["jobs_2"]["simulations"] == c["jobs_1"]["simulations"]
    assert "shared with other jobs" in rec["notes"][0]
    text = load("report").render(tmp_path)
    assert "Reproduce: `python benchmarks/fit_bench.py --omni5dpo 2 --robotino 1 --no-dask --repeat 1`" in text
    assert "| robotino_twist: 3 parameters, 1 s log, 606 residuals | `--jobs 2` (2 spawned processes) |" in text


def test_cli_bench_reads_the_times_the_command_prints_and_splits_the_wait(tmp_path, monkeypatch):
    """cli_bench runs `simulate` as a shell starts it (without the ROS wheels' bootstrapper guard
    this test's own process may carry) and reads the build and solve times the command prints;
    the warm wall time's split adds back up to it."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "record", load("record"))
    bench = load("cli_bench")
    monkeypatch.setenv(bench.BOOTSTRAP_GUARD, "1")
    assert bench.BOOTSTRAP_GUARD not in bench.run_env(ROOT)
    assert bench.run_env(ROOT, shell=False)[bench.BOOTSTRAP_GUARD] == "1"
    wall, cpu, err = bench.run(ROOT, ["mass_spring_damper", "--t-end", "1"], tmp_path / "msd.csv")
    solve, build = bench.solve_time(err), bench.build_time(err)
    assert 0 <= solve < wall and 0 <= build < wall, err  # (NaN, nothing read, fails both)
    assert (tmp_path / "msd.csv").read_text().startswith("t,")
    split = bench.parts([0.30, 0.32, 0.31], [0.16, 0.17, 0.15],
                        {"interpreter": [0.05, 0.05, 0.06], "interpreter_plain": [0.07, 0.08, 0.07],
                         "numpy": [0.12, 0.13, 0.12]})
    assert split["interpreter_s"] + split["numpy_import_s"] + split["solve_s"] + split["rest_s"] == \
        pytest.approx(0.31)
    assert split["plain_start_s"] == pytest.approx(0.07) and split["rest_s"] == pytest.approx(0.03)
