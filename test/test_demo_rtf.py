"""`bondsim-ros demo` and `up` refuse a real-time factor they cannot run, by name and before
starting the graph (a demo at --rtf 1e6 published no frame and ended in a RuntimeError about
its empty bag; `up` at 1e6 stepped 30 000 simulated seconds a frame until the solver failed)."""
import pytest

pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")

from bondsim_ros.cli import main  # noqa: E402


def _run(capfd, *argv):
    rc = main(list(argv))
    out, err = capfd.readouterr()
    assert "Traceback" not in err + out
    return rc, err


@pytest.mark.parametrize("command", [["demo", "--no-video", "--quiet"], ["up", "--duration", "1"]])
def test_a_real_time_factor_above_the_limit_is_refused(tmp_path, capfd, command):
    rc, err = _run(capfd, *command, "--rtf", "1e6", *(["--out", str(tmp_path / "o")] if command[0] == "demo" else []))
    assert rc == 2, err
    assert (f"bondsim-ros {command[0]}: error: --rtf must be at most 100 (each frame steps the twin "
            f"rtf/publish_rate simulated seconds; faster than that it falls behind), got 1e+06") in err
    assert not (tmp_path / "o").exists()


def test_a_demo_too_short_for_its_real_time_factor_is_refused(tmp_path, capfd):
    rc, err = _run(capfd, "demo", "--rtf", "100", "--duration", "2", "--out", str(tmp_path / "o"), "--no-video",
                   "--quiet")
    assert rc == 2, err
    assert ("bondsim-ros demo: error: --rtf 100 with --duration 2: the run would publish 0.66 frames (one per "
            "3.03 simulated seconds at 33 Hz), the demo needs at least 10: use --rtf 6.6 or less, or a longer "
            "--duration") in err
    assert not (tmp_path / "o").exists()


def test_run_demo_refuses_the_same_before_recording(tmp_path):
    from bondsim_ros.ros.demo import DemoOptionError, run_demo

    with pytest.raises(DemoOptionError, match="would publish 0.33 frames"):
        run_demo(duration=1.0, out_dir=tmp_path / "o", rtf=100.0, video=False, quiet=True)
    assert not (tmp_path / "o").exists()
