"""`bondsim-ros up` and `demo` answer bad input by name with exit status 2, no traceback, and
never delete what the run did not create."""
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")

from bondsim_ros.cli import main  # noqa: E402


def _run(capfd, *argv):
    rc = main(list(argv))
    out, err = capfd.readouterr()
    assert "Traceback" not in err + out
    return rc, err


@pytest.mark.parametrize("argv, message", [
    (["up", "--rate", "0"], "--rate must be a positive rate in Hz, got 0"),
    (["up", "--rate", "-3"], "--rate must be a positive rate in Hz, got -3"),
    (["up", "--rtf", "0"], "--rtf must be a positive real-time factor, got 0"),
    (["up", "--rtf", "inf"], "--rtf must be a positive real-time factor, got inf"),
    (["up", "--duration", "-1"], "--duration must be a positive number of seconds, got -1"),
    (["up", "--duration", "nan"], "--duration must be a positive number of seconds, got nan"),
    (["demo", "--duration", "0"], "--duration must be a positive, finite number of simulated seconds, got 0"),
    (["demo", "--duration", "nan"], "--duration must be a positive, finite number of simulated seconds, got nan"),
    (["demo", "--duration", "inf"], "--duration must be a positive, finite number of simulated seconds, got inf"),
    (["demo", "--rtf", "0"], "--rtf must be a positive real-time factor, got 0"),
])
def test_bad_numbers_are_refused_by_name(capfd, argv, message):
    rc, err = _run(capfd, *argv)
    assert rc == 2
    assert f"bondsim-ros {argv[0]}: error: {message}" in err


@pytest.mark.parametrize("body, message", [
    ("publish_rate: -5.0", "publish_rate: must be finite, in [0.1, 1000], got -5.0"),
    ("publish_rate: .nan", "publish_rate: must be finite, in [0.1, 1000], got nan"),
    ("publish_rate: fast", "publish_rate: expected a floating-point number (write 3.0, not 3), got 'fast'"),
    ("no_such_parameter: 1", "unknown parameter 'no_such_parameter'"),
    ("reference: cmd_vel\n    cmd_vel_topic: 'bad topic'", "cmd_vel_topic: 'bad topic' is not a valid topic name"),
    ("reference: teleport", "reference: rose | builtin | cmd_vel | waypoints | joint_trajectory, got 'teleport'"),
])
def test_up_bad_parameters_in_the_params_file(tmp_path, capfd, body, message):
    f = tmp_path / "dyn.yaml"
    f.write_text(f"dynamics_node:\n  ros__parameters:\n    {body}\n")
    rc, err = _run(capfd, "up", "--params", str(f), "--duration", "0.2")
    assert rc == 2, err
    assert message in err


@pytest.mark.parametrize("text", ["dynamics_node: [1\n", "dynamics_node:\n  publish_rate: 3\n", None])
def test_up_unreadable_params_file_is_named(tmp_path, capfd, text):
    f = tmp_path / "dyn.yaml"
    if text is not None:
        f.write_text(text)
    rc, err = _run(capfd, "up", "--params", str(f), "--duration", "0.2")
    assert rc == 2
    assert f"--params {f}" in err or f"{f}: section" in err


def test_up_bad_namespace(capfd, recwarn):
    rc, err = _run(capfd, "up", "--namespace", "9robots", "--duration", "0.2")
    assert rc == 2 and "namespace" in err and "Traceback" not in err, err
    # refused before any node exists: no rclpy "Failed to fini rosout publisher" RuntimeWarning
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in recwarn]


def test_demo_never_deletes_an_existing_recording(tmp_path, capfd):
    """A user's own bag in OUT/bag (with metadata.yaml) was deleted with everything in it."""
    out = tmp_path / "out"
    mine = out / "bag"
    mine.mkdir(parents=True)
    (mine / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    (mine / "my_recording_0.mcap").write_bytes(b"precious")
    rc, err = _run(capfd, "demo", "--duration", "1", "--out", str(out), "--no-video", "--quiet")
    assert rc == 0, err
    assert (mine / "my_recording_0.mcap").read_bytes() == b"precious"
    assert (mine / "metadata.yaml").read_text() == "rosbag2_bagfile_information: {}\n"
    assert sorted(p.name for p in mine.iterdir()) == ["metadata.yaml", "my_recording_0.mcap"]
    new = out / "bag-2"
    assert (new / "metadata.yaml").is_file() and list(new.glob("*.mcap"))
    assert (out / "joints.csv").is_file()


def test_demo_without_ffmpeg_renders_its_video_as_a_gif_and_says_why(tmp_path, capfd, monkeypatch):
    """render refuses an MP4 without ffmpeg; the demo, which names its own outputs, asks for a GIF."""
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(tmp_path / "no-ffmpeg"))
    out = tmp_path / "out"
    rc, err = _run(capfd, "demo", "--duration", "1", "--out", str(out), "--no-sensors")
    assert rc == 0, err
    assert f"[demo] no MP4: ffmpeg is missing (IMAGEIO_FFMPEG_EXE={tmp_path / 'no-ffmpeg'} is no program to run); " \
           f"the video is a GIF" in err, err
    assert f"[demo] video: {out / 'robotino.gif'}" in err, err
    assert (out / "robotino.gif").stat().st_size > 0 and not (out / "robotino.mp4").exists()


def test_demo_out_that_is_a_file_is_refused(tmp_path, capfd):
    f = tmp_path / "out"
    f.write_text("mine")
    rc, err = _run(capfd, "demo", "--duration", "1", "--out", str(f), "--no-video", "--quiet")
    assert rc == 2 and f"--out {f}: exists and is not a folder" in err
    assert f.read_text() == "mine"


@pytest.mark.parametrize("out, says", [
    ("file/x", "cannot make this folder (Not a directory)"),  # was NotADirectoryError's traceback
    ("file/x/y", "cannot make this folder (Not a directory)"),
    ("/proc/bondsim-demo", "cannot make this folder (No such file or directory)"),
    ("/proc", "cannot write in this folder (No such file or directory)"),  # was the recorder's traceback, ROS up
])
def test_demo_out_where_no_folder_can_be_made_is_refused_in_one_line(tmp_path, capfd, monkeypatch, out, says):
    if out.startswith("/proc") and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("mine")
    rc, err = _run(capfd, "demo", "--duration", "1", "--out", out, "--no-video", "--quiet")
    assert rc == 2, err
    assert err.strip() == f"bondsim-ros demo: error: --out {out}: {says}", err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"] and (tmp_path / "file").read_text() == "mine"


@pytest.mark.parametrize("command", [["up", "--duration", "0.2"], ["fleet", "1", "--duration", "0.2"],
                                     ["demo", "--duration", "1", "--no-video"]])
@pytest.mark.parametrize("domain, message", [
    ("abc", "ROS_DOMAIN_ID='abc' is not a number"),  # rcl's refusal was a traceback
    ("300", "ROS_DOMAIN_ID='300': a domain is 0 to 232"),  # Fast DDS ended the process with status 1
])
def test_a_domain_that_cannot_work_is_refused_before_anything_starts(
        tmp_path, capfd, monkeypatch, command, domain, message):
    monkeypatch.setenv("ROS_DOMAIN_ID", domain)
    monkeypatch.chdir(tmp_path)
    rc, err = _run(capfd, *command)
    assert rc == 2 and f"bondsim-ros {command[0]}: error: {message}" in err, err
    assert list(tmp_path.iterdir()) == []  # the demo made no output folder


def test_a_discovery_range_rcl_would_take_for_localhost_is_refused(capfd, monkeypatch):
    """rcl reads ROS_AUTOMATIC_DISCOVERY_RANGE in capitals and takes anything else for LOCALHOST:
    `up --bridge` said "discovery range subnet" and never met the robot on the subnet."""
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "subnet")
    rc, err = _run(capfd, "up", "--bridge", "--duration", "0.2")
    assert rc == 2, err
    assert "bondsim-ros up: error: ROS_AUTOMATIC_DISCOVERY_RANGE='subnet': one of OFF, LOCALHOST, SUBNET" in err, err
