"""Every output of every command follows one rule (bondsim_ros.outfiles): a regular file is
replaced whole, a symbolic link is written through (the link stays), a FIFO or character device
is written to and never replaced, ``-`` is standard output where the option allows it, and a
write that fails (no space left on the device) is a clean error with exit status 2."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bondsim_ros.cli import main
from bondsim_ros.cliargs import Terminated
from procs import terminal_sigint

ROOT = Path(__file__).resolve().parents[1]

ROBOT = """<robot id="r" name="R">
  <joint name="j1">
    <drive type="revolute_z"/>
    <link id="l1" name="link1"/>
    <cuboid id="c1" lx="1" ly="1" lz="1" mass="1"/>
    <render ref="c1" color="red"/>
  </joint>
</robot>
"""


@pytest.fixture
def inputs(tmp_path):
    """A mechanism XML, a joint CSV and a small drive-log bag for the commands that read files."""
    from test_fit_input import CMD, JS, T0, write_bag

    src = tmp_path / "in" / "R.xml"
    src.parent.mkdir()
    src.write_text(ROBOT)
    joints = src.parent / "j.csv"
    joints.write_text("t,j1\n0,0\n0.1,0.5\n0.2,1\n")
    bag = write_bag(src.parent / "bag", [(T0, 0.5, 0.0, 0.0)],
                    [(T0 + k * 10**7, T0 + k * 10**7, (k, 2 * k, 3 * k)) for k in range(5)])
    return {"xml": src, "joints": joints, "bag": bag, "cmd": CMD, "js": JS}


# (name, argv for output OUT, output suffix, what the written bytes start with)
COMMANDS = {
    "simulate --csv": (lambda i, out: ["simulate", "dc_motor", "--t-end", "0.1", "--dt-out", "0.01", "-q",
                                       "--csv", out], ".csv", b"t,"),
    "simulate --plot": (lambda i, out: ["simulate", "dc_motor", "--t-end", "0.1", "--dt-out", "0.01", "-q",
                                        "--plot", out], ".png", b"\x89PNG"),
    "xml2urdf -o": (lambda i, out: ["xml2urdf", str(i["xml"]), "-o", out, "-q"], ".urdf", b"<?xml"),
    "render -o png": (lambda i, out: ["render", str(i["xml"]), "-o", out, "--size", "80x64", "-q"], ".png",
                      b"\x89PNG"),
    "render -o mp4": (lambda i, out: ["render", str(i["xml"]), "-o", out, "--joints", str(i["joints"]),
                                      "--size", "80x64", "-q"], ".mp4", None),
    "bag2csv -o": (lambda i, out: ["bag2csv", str(i["bag"]), "-o", out, "--cmd-vel", i["cmd"], "--joint-states",
                                   i["js"], "--wheel-joints", "a,b,c", "--no-odom"], ".csv", b"t,"),
    "draw -o": (lambda i, out: ["draw", "dc_motor", "-o", out], ".dot", b"digraph"),
}


def starts_right(data: bytes, suffix: str, head) -> bool:
    if head is None:  # MP4: a box size, then the ftyp box
        return data[4:8] == b"ftyp"
    return data.startswith(head)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_symlinked_output_is_written_through(tmp_path, inputs, command):
    """The link stays a link and its target gets the new content (a link to a file elsewhere,
    e.g. results kept in another folder, is not replaced by a copy)."""
    argv, suffix, head = COMMANDS[command]
    target = tmp_path / "kept" / f"result{suffix}"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / "out" / f"r{suffix}"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(target, link.parent))
    assert main(argv(inputs, str(link))) == 0
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert starts_right(target.read_bytes(), suffix, head), target.read_bytes()[:40]
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temporary file left


def read_fifo_in_thread(path):
    got = {}

    def reader():
        with open(path, "rb") as fh:
            got["data"] = fh.read()

    t = threading.Thread(target=reader, daemon=True)  # daemon: a FIFO never opened cannot hang the run
    t.start()
    return t, got


@pytest.mark.parametrize("command", ["simulate --csv", "xml2urdf -o", "render -o png", "render -o mp4",
                                     "bag2csv -o"])
def test_fifo_receives_the_output_and_stays_a_fifo(tmp_path, inputs, command):
    argv, suffix, head = COMMANDS[command]
    fifo = tmp_path / f"pipe{suffix}"
    os.mkfifo(fifo)
    thread, got = read_fifo_in_thread(fifo)
    assert main(argv(inputs, str(fifo))) == 0
    thread.join(timeout=60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a file"
    assert not thread.is_alive(), "nothing was written into the FIFO"
    assert starts_right(got["data"], suffix, head), got["data"][:40]


@pytest.fixture
def full_device(tmp_path):
    """A character device that behaves as /dev/full (major 1, minor 7: every write fails with
    ENOSPC), made in the test's folder so that a regression cannot destroy the real one."""
    node = tmp_path / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("making a device node needs root (CAP_MKNOD)")
    return node


@pytest.mark.parametrize("command", list(COMMANDS))
def test_full_device_gives_a_clean_error_and_survives(tmp_path, inputs, full_device, capsys, command):
    argv, _, _ = COMMANDS[command]
    if command == "render -o png":  # render takes the format from the name: a link with one
        out = tmp_path / "full.png"
        out.symlink_to(full_device)
    elif command == "render -o mp4":
        out = tmp_path / "full.mp4"
        out.symlink_to(full_device)
    elif command in ("xml2urdf -o", "draw -o"):
        out = tmp_path / f"full{COMMANDS[command][1]}"
        out.symlink_to(full_device)
    else:
        out = full_device
    rc = main(argv(inputs, str(out)))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "No space left on device" in err and "Traceback" not in err, err
    assert str(out) in err, err
    assert stat.S_ISCHR(os.stat(full_device).st_mode), "the device node was replaced"
    assert os.path.islink(out) or out == full_device
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_csv_to_standard_output(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not a file named "-"
    rc = main(["simulate", "dc_motor", "--t-end", "0.1", "--dt-out", "0.05", "-q", "--csv", "-"])
    out = capsys.readouterr().out
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("t,") and len(lines) == 4, out  # header and t = 0, 0.05, 0.1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["render", "{xml}", "-o", "-"], ["xml2urdf", "{xml}", "-o", "-"],
                                  ["simulate", "dc_motor", "--plot", "-"], ["draw", "dc_motor", "-o", "-"]])
def test_dash_is_refused_where_the_output_cannot_go_to_stdout(tmp_path, inputs, capsys, argv, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = main([a.format(xml=inputs["xml"]) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot go to standard output" in err, err
    assert not (tmp_path / "-").exists()


def test_replaced_file_keeps_its_mode(tmp_path):
    out = tmp_path / "r.csv"
    out.write_text("old\n")
    out.chmod(0o640)
    assert main(["simulate", "dc_motor", "--t-end", "0.1", "--dt-out", "0.05", "-q", "--csv", str(out)]) == 0
    assert out.read_text().startswith("t,")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_writer_failure_leaves_the_target_and_no_temporary(tmp_path):
    from bondsim_ros.outfiles import output_path

    target = tmp_path / "kept.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with pytest.raises(RuntimeError):
        with output_path(link) as tmp:
            tmp.write_text("half")
            raise RuntimeError("writer failed")
    assert target.read_text() == "old\n" and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.csv", "link.csv"]


def test_plot_of_several_figures_into_a_pipe_is_refused_and_makes_no_files(tmp_path, capsys):
    """arm3dof's plot is several figures named after --plot (r_joints.png, ...): a pipe or
    device has no name to give them; they used to be made as files beside it (/dev/full_joints.png)."""
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    rc = main(["simulate", "arm3dof", "--t-end", "0.1", "--dt-out", "0.05", "-q", "--plot", str(fifo)])
    err = capsys.readouterr().err
    assert rc == 2 and "a device or pipe takes one figure" in err and "Traceback" not in err, err
    assert [p.name for p in tmp_path.iterdir()] == ["pipe.png"]


def test_mp4_into_a_pipe_without_ffmpeg_is_an_error_not_a_gif_beside_it(tmp_path, inputs, capsys, monkeypatch):
    """Where MP4 cannot be written a file gets a GIF beside it instead; a pipe's reader wants
    the MP4 it asked for, and no file is made beside the pipe."""
    import imageio_ffmpeg

    def no_ffmpeg(*a, **k):
        raise RuntimeError("no ffmpeg here")

    monkeypatch.setattr(imageio_ffmpeg, "write_frames", no_ffmpeg)
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)
    argv, _, _ = COMMANDS["render -o mp4"]
    rc = main(argv(inputs, str(fifo)))
    err = capsys.readouterr().err
    assert rc == 2 and "cannot write MP4 (no ffmpeg here)" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "pipe.mp4"]


@pytest.mark.parametrize("command", ["simulate --csv", "simulate --plot", "bag2csv -o", "draw -o"])
def test_a_folder_that_takes_no_new_file_is_an_error_naming_the_option(tmp_path, inputs, capsys, command):
    """/proc looks writable to root, yet no file can be made in it: the staging fails, and the
    command says so by its option, without a traceback, where it used to raise FileNotFoundError."""
    argv, suffix, _ = COMMANDS[command]
    out = f"/proc/bondsim-out{suffix}"
    rc = main(argv(inputs, out))
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert f"{out}: " in err and ("cannot write" in err or "not writable" in err), err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_output_in_a_missing_folder_is_refused_and_no_folder_is_made(tmp_path, inputs, capsys, monkeypatch,
                                                                        command):
    argv, suffix, _ = COMMANDS[command]
    monkeypatch.chdir(tmp_path)
    out = f"newdir/sub/out{suffix}"
    rc = main(argv(inputs, out))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith(f"bondsim-ros {command.split()[0]}: error: ") and "Traceback" not in err, err
    assert err.endswith(f" {out}: the folder newdir/sub does not exist\n"), err
    assert not (tmp_path / "newdir").exists()


@pytest.mark.parametrize("argv, message", [
    (["simulate", "dc_motor", "--t-end", "0.1", "--dt-out", "0.01", "--plot", "{tmp}/p.txt"],
     "--plot {tmp}/p.txt: no figure format .txt"),
    (["draw", "dc_motor", "-o", "{tmp}/drawing"],
     "--output {tmp}/drawing: a drawing is written as .png, .svg, .pdf, .dot"),
    (["draw", "dc_motor", "-o", "{tmp}/d.dot", "--depth", "-1"],
     "--depth -1: give 0 (the model's own document) or more"),
])
def test_an_output_format_no_writer_has_is_refused_by_the_name_given(tmp_path, capsys, argv, message):
    """The format is refused before the run, by the name the user gave: `draw -o drawing` used
    to say "unsupported drawing format '.5b6a2ufy'", the suffix of its temporary file."""
    rc = main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and message.format(tmp=tmp_path) in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sig, status, said", [(signal.SIGTERM, 143, "terminated"),
                                               (signal.SIGINT, 130, "interrupted")])
def test_a_run_stopped_by_a_signal_leaves_no_partial_file(tmp_path, sig, status, said):
    """`kill` (SIGTERM) during `simulate --csv` cleans up as Ctrl-C does: the CSV written while
    it solves is removed, no file under the name given. SIGTERM used to end the process where it
    stood and leave the hidden staged CSV (137 MB after 4 s of a long run)."""
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "simulate", "robotino", "--t-end", "5000",
                             "--dt-out", "0.01", "--csv", "r.csv", "-q"], cwd=tmp_path, stderr=subprocess.PIPE,
                            text=True, preexec_fn=terminal_sigint)
    try:
        deadline = time.monotonic() + 120.0
        while time.monotonic() < deadline and not any(p.stat().st_size > 100_000 for p in tmp_path.glob(".r.csv.*")):
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()
        proc.send_signal(sig)
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status and err.strip().splitlines()[-1] == said, (proc.returncode, err)
    assert "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("stop, status", [(KeyboardInterrupt, 130), (Terminated, 143)])
def test_ctrl_c_while_the_plot_is_drawn_leaves_no_staged_csv(tmp_path, capsys, monkeypatch, stop, status):
    """The solve is done and its CSV staged beside the target when Ctrl-C (or SIGTERM) comes
    during the plot: the command ends 130 (143) and the staged CSV goes too. It used to stay,
    hidden, beside the name given."""
    from bondsim_ros import model_commands

    def stopped(result, out):
        raise stop()

    monkeypatch.setattr(model_commands, "plot_result", stopped)
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "rc.yaml"
    model.write_text((ROOT / "test" / "data" / "models" / "rc_step.yaml").read_text())
    assert main(["simulate", str(model), "--t-end", "0.2", "--dt-out", "0.1", "--csv", "r.csv", "--plot", "r.png",
                 "-q"]) == status
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rc.yaml"]


def test_ctrl_c_while_the_sweep_table_is_written_leaves_no_staged_file(tmp_path, capsys, monkeypatch):
    from bondsim_ros.sweep.core import SweepResult

    def stopped(self, path):
        Path(path).write_text("run,L\n")  # part of the table, then Ctrl-C
        raise KeyboardInterrupt()

    monkeypatch.setattr(SweepResult, "write", stopped)
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "pendulum", "--param", "L=1,2", "--t-end", "0.1", "--dt-out", "0.1", "--jobs", "1",
                 "-o", "s.csv", "-q"]) == 130
    assert list(tmp_path.iterdir()) == []


def test_a_plot_of_several_figures_is_written_whole_or_not_at_all(tmp_path, capsys, monkeypatch):
    """arm3dof's plot is three figures (a_joints, a_path, a_torques): with a folder where the
    second goes, the command fails naming it and leaves neither the other two nor the CSV."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_path.png").mkdir()
    assert main(["simulate", "arm3dof", "--csv", "a.csv", "--plot", "a.png", "-q"]) == 2
    assert "--plot a_path.png: is a directory" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_path.png"]
    (tmp_path / "a_path.png").rmdir()
    assert main(["simulate", "arm3dof", "--csv", "a.csv", "--plot", "a.png", "-q"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a_joints.png", "a_path.png", "a_torques.png"]


@pytest.mark.parametrize("csv, plot, refused", [
    ("x.png", "x.png", "--csv and --plot name the same file x.png"),
    ("a_path.png", "a.png", "--plot a_path.png is also the file --csv writes"),  # a figure named after --plot
])
def test_the_csv_and_a_figure_of_the_plot_cannot_be_one_file(tmp_path, capsys, monkeypatch, csv, plot, refused):
    """simulate's CSV and figures go to different files: a CSV over a figure (or the reverse)
    is refused naming both, and nothing is written, an existing file left as it was."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / csv).write_text("before")
    assert main(["simulate", "arm3dof", "--t-end", "0.1", "--dt-out", "0.05", "-q", "--csv", csv, "--plot", plot]) == 2
    err = capsys.readouterr().err
    assert refused in err and "Traceback" not in err, err
    assert [p.name for p in tmp_path.iterdir()] == [csv] and (tmp_path / csv).read_text() == "before"


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_an_empty_output_name_is_refused(tmp_path, capsys, monkeypatch, option):
    """--csv "" (an unset variable in a script) was taken as no --csv at all: the run wrote nothing."""
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "mass_spring_damper", "--t-end", "0.1", "-q", option, ""]) == 2
    assert f"{option}: an empty file name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
