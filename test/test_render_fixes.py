"""The renderer's path, video timing and joint CSV reading: the path drawn under a robot a project
moves and turns, a GIF that plays in real time, an Excel CSV's byte order mark, joints without a
column, and the CSV line a time-order error names."""
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.cli import main
from bondsim_ros.mechanism import render as render_mod

pytest.importorskip("yourdfpy")

ROOT = Path(__file__).resolve().parents[1]
ROBOTINO = ROOT / "urdf" / "robotino"
PENDULUM = ROOT / "urdf" / "multibody" / "Pendulum.xml"
ARM = ROOT / "urdf" / "arm3dof" / "Arm3DOF.xml"
BASE = '<translation x="-1.5" y="1.5" z="0.015"/><rotation axis="z" angle="90"/>'


def _moved_robotino(tmp_path) -> Path:
    """The packaged Robotino project with the robot moved to (-1.5, 1.5) and turned by 90 deg."""
    folder = tmp_path / "robotino"
    shutil.copytree(ROBOTINO, folder)
    project = folder / "Robotino_project.xml"
    text = project.read_text()
    assert text.count('<translation z="0.015"/>') == 1
    project.write_text(text.replace('<translation z="0.015"/>', BASE))
    return project


def _gif_delays(path) -> list:
    from PIL import Image

    with Image.open(path) as im:
        delays = []
        for k in range(im.n_frames):
            im.seek(k)
            delays.append(im.info["duration"])
    return delays


def _swing_csv(path, t_end, dt=0.01) -> Path:
    lines = ["t,pivot_joint"] + [f"{k * dt:.6g},{0.5 * math.sin(3 * k * dt):.6f}"
                                 for k in range(int(round(t_end / dt)) + 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("urdf", [False, True], ids=["xml", "keep-virtual-urdf"])
def test_the_path_is_drawn_under_a_robot_the_project_base_moves_and_turns(tmp_path, monkeypatch, urdf):
    project = _moved_robotino(tmp_path)
    source = project
    if urdf:  # the same project as a URDF with the virtual joints under world -> ROOT_base (the <base>)
        assert main(["xml2urdf", str(project), "-o", str(tmp_path / "r.urdf"), "--keep-virtual", "-q"]) == 0
        source = tmp_path / "r.urdf"
    csv_path = tmp_path / "r.csv"
    xy = np.array([[0.0, 0.0], [0.5, 0.2], [1.0, 0.5]])
    csv_path.write_text("t,x,y,phi\n" + "".join(f"{0.1 * k},{x},{y},{0.3 * k}\n" for k, (x, y) in enumerate(xy)))
    # the <base>: x, y turned by 90 deg about z, then moved by (-1.5, 1.5)
    want = np.column_stack([-1.5 - xy[:, 1], 1.5 + xy[:, 0]])

    # the path the video's frames draw, and the one its camera frames
    drawn, fitted = [], []
    real_draw, real_fit = render_mod.Renderer.draw, render_mod.Renderer.fit
    monkeypatch.setattr(render_mod.Renderer, "draw",
                        lambda self, q, title="", trail=None, inset=None:
                        drawn.append(trail) or real_draw(self, q, title, trail, inset))
    monkeypatch.setattr(render_mod.Renderer, "fit",
                        lambda self, rows, trail=None: fitted.append(trail) or real_fit(self, rows, trail))
    render_mod.render(source, tmp_path / "r.gif", joints_csv=csv_path, fps=10, size=(96, 72), quiet=True)
    assert np.allclose(fitted[0], want, atol=1e-9)
    assert np.allclose(drawn[-1], want, atol=1e-9)

    drawing = render_mod._from_urdf(source) if urdf else render_mod._from_xml(source, ())
    header, data = render_mod.read_joint_csv(csv_path)
    rows = render_mod.joint_rows(drawing, header, data, render_mod._joint_names(drawing, source, ()))
    assert np.allclose(render_mod.trail_points(drawing, rows), want, atol=1e-9)
    if not urdf:  # where the robot is drawn: its base_link's origin, over the floor
        assert np.allclose([drawing.fk(q)["base_link"][:2, 3] for q in rows], want, atol=1e-9)


@pytest.mark.parametrize("fps,speed,t_end", [(30, 1.0, 1.0), (45, 1.0, 0.5), (20, 2.0, 2.0), (7, 1.0, 1.0)])
def test_a_gif_plays_in_real_time(tmp_path, fps, speed, t_end):
    """Frame delays read back from the file: the GIF lasts the frames' n / fps (the run's time /
    speed and the last frame's own time, as an MP4) within one 10 ms tick, and frame j starts
    within half a tick of j / fps. (One fixed delay cannot: at 30 fps 33 ms is stored as 30 ms, 10 % fast.)"""
    csv_path = _swing_csv(tmp_path / "s.csv", t_end)
    out = render_mod.render(PENDULUM, tmp_path / "s.gif", joints_csv=csv_path, fps=fps, speed=speed, size=(96, 72),
                            quiet=True)
    delays = _gif_delays(out)
    n = math.floor(t_end * fps / speed * (1 + 1e-12)) + 1  # the frames (render.frame_rows)
    assert len(delays) == n  # (each frame differs: its title gives its time)
    assert abs(sum(delays) - 1000 * n / fps) <= 5
    assert sum(delays[:-1]) - 5 <= 1000 * t_end / speed < sum(delays) + 5  # the run ends in the last frame
    starts = np.cumsum([0] + delays[:-1])
    assert np.abs(starts - 1000 * np.arange(n) / fps).max() <= 5
    assert all(d % 10 == 0 and d >= 20 for d in delays)


def test_gif_delays_track_the_frame_times():
    for fps in (1, 7, 24, 25, 29.97, 30, 33, 45, 49, 50):
        d = np.array(render_mod.gif_delays(1000, fps))
        assert np.all(d % 10 == 0) and d.min() >= 20, fps
        assert np.abs(np.cumsum(d) - 1000 * np.arange(1, 1001) / fps).max() <= 5, fps


def test_a_gif_above_50_fps_is_refused_saying_why_and_an_mp4_is_not(tmp_path, capsys):
    csv_path = _swing_csv(tmp_path / "s.csv", 0.1)
    out = tmp_path / "s.gif"
    assert main(["render", str(PENDULUM), "--joints", str(csv_path), "-o", str(out), "--fps", "60",
                 "--size", "96x72", "-q"]) == 2
    err = capsys.readouterr().err
    assert "60 fps" in err and "at most 50 fps" in err and "10 ms" in err and "MP4" in err
    assert not out.exists()
    assert main(["render", str(PENDULUM), "--joints", str(csv_path), "-o", str(out), "--fps", "50",
                 "--size", "96x72", "-q"]) == 0
    assert _gif_delays(out) == [20] * 6
    pytest.importorskip("imageio_ffmpeg")
    assert main(["render", str(PENDULUM), "--joints", str(csv_path), "-o", str(tmp_path / "s.mp4"), "--fps", "60",
                 "--size", "96x72", "-q"]) == 0


def test_a_csv_with_a_byte_order_mark_keeps_its_first_column(tmp_path):
    """Excel's "CSV UTF-8" starts with a BOM: read as part of the text, it makes the t column
    '\\ufefft', which nothing reads, and a video shows one frame per row instead of the rows' times."""
    csv_path = tmp_path / "excel.csv"
    csv_path.write_bytes(b"\xef\xbb\xbft,pivot_joint\r\n0,0\r\n1,0.5\r\n")
    assert render_mod.read_csv_header(csv_path) == ["t", "pivot_joint"]
    header, data = render_mod.read_joint_csv(csv_path)
    assert header == ["t", "pivot_joint"] and data.tolist() == [[0.0, 0.0], [1.0, 0.5]]
    out = render_mod.render(PENDULUM, tmp_path / "e.gif", joints_csv=csv_path, fps=10, size=(96, 72), quiet=True)
    assert sum(_gif_delays(out)) == 1100  # t = 0..1 s at 10 fps: 11 frames


def test_a_joint_without_a_column_is_named_in_a_warning_and_drawn_at_zero(tmp_path, capsys):
    """Partial CSVs are allowed (a robot's wheels without its rollers): a joint the CSV lacks stays
    at 0, and render says which, with the CSV's columns and the column that looks meant for it."""
    from PIL import Image

    typo = tmp_path / "typo.csv"
    typo.write_text("t,q1,Q2,q3\n0,-1.3,1.0,0.3\n")
    zero = tmp_path / "zero.csv"
    zero.write_text("t,q1,q2,q3\n0,-1.3,0,0.3\n")
    assert main(["render", str(ARM), "--joints", str(typo), "-o", str(tmp_path / "typo.png"),
                 "--size", "160x120", "-q"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and f"{typo}: no column for joint q2: drawn at 0" in err
    assert "its columns: t, q1, Q2, q3" in err and "column 'Q2' is not joint 'q2'" in err
    assert main(["render", str(ARM), "--joints", str(zero), "-o", str(tmp_path / "zero.png"),
                 "--size", "160x120", "-q"]) == 0
    assert "warning" not in capsys.readouterr().err  # every joint has its column
    drawn = [np.asarray(Image.open(tmp_path / f"{name}.png")) for name in ("typo", "zero")]
    assert np.array_equal(*drawn)  # q2 at 0


def test_a_planar_base_without_x_y_phi_columns_is_named_in_the_warning(tmp_path, capsys):
    csv_path = tmp_path / "w.csv"
    csv_path.write_text("t,wheel1_axle\n0,0.5\n")
    assert main(["render", str(ROBOTINO / "Robotino_project.xml"), "--joints", str(csv_path),
                 "-o", str(tmp_path / "w.png"), "--size", "96x72", "-q"]) == 0
    err = capsys.readouterr().err
    assert "no column for joints base_x (or x), base_y (or y), base_phi (or phi), wheel1_roller1" in err
    assert "and 3 more" in err and "its columns: t, wheel1_axle" in err


def test_time_going_back_names_the_csv_line_past_blank_lines(tmp_path, capsys):
    csv_path = tmp_path / "back.csv"
    csv_path.write_text("t,pivot_joint\n0,0\n\n0.1,0.1\n\n\n0.05,0.2\n")  # 0.05 on line 7
    assert main(["render", str(PENDULUM), "--joints", str(csv_path), "-o", str(tmp_path / "b.gif"),
                 "--size", "96x72", "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{csv_path}:7: column 't' goes back in time (0.1 -> 0.05)" in err


def test_value_errors_name_the_csv_line_past_blank_lines_and_quoted_line_breaks(tmp_path):
    csv_path = tmp_path / "v.csv"
    csv_path.write_text('t,"pivot\njoint"\n\n0,0\n0.1,x\n')  # the header spans lines 1-2; 'x' on line 5
    with pytest.raises(render_mod.RenderError, match=r"v\.csv:5: column 'pivot\\njoint': 'x' is not a number"):
        render_mod.read_joint_csv(csv_path)


def _no_drawing(monkeypatch):
    """Renderer.draw fails the test: what is refused must be refused before any frame is drawn."""
    def draw(*args, **kwargs):
        raise AssertionError("a frame was drawn")

    monkeypatch.setattr(render_mod.Renderer, "draw", draw)


def test_an_mp4_without_ffmpeg_is_refused_before_drawing_and_no_gif_is_written(tmp_path, monkeypatch, capsys):
    """No ffmpeg: the MP4's frames became a GIF beside it, replacing a v.gif the user had (exit 0),
    or, with a folder v.gif, failed once every frame was drawn."""
    csv_path = _swing_csv(tmp_path / "s.csv", 1.0)
    (tmp_path / "v.gif").write_bytes(b"mine")
    (tmp_path / "w.gif").mkdir()
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(tmp_path / "nonexistent"))
    _no_drawing(monkeypatch)
    for name in ("v", "w", "x"):
        out = tmp_path / f"{name}.mp4"
        assert main(["render", str(PENDULUM), "--joints", str(csv_path), "-o", str(out), "--fps", "2",
                     "--size", "96x72", "-q"]) == 2
        err = capsys.readouterr().err
        assert err.strip() == f"bondsim-ros render: error: {out}: cannot write MP4: ffmpeg is missing " \
                              f"(IMAGEIO_FFMPEG_EXE={tmp_path / 'nonexistent'} is no program to run); ask for a GIF " \
                              f"instead (-o {tmp_path / name}.gif)", err
    assert (tmp_path / "v.gif").read_bytes() == b"mine" and (tmp_path / "w.gif").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv", "v.gif", "w.gif"]


def test_an_mp4_ffmpeg_refuses_is_an_error_and_no_gif(tmp_path, monkeypatch):
    def refused(out, first, frames, fps):
        raise render_mod._EncoderFailed(OSError("refused here"))

    monkeypatch.setattr(render_mod, "mp4_unavailable", lambda: None, raising=False)  # ffmpeg there, as if
    monkeypatch.setattr(render_mod, "_write_mp4", refused)
    csv_path = _swing_csv(tmp_path / "s.csv", 1.0)
    with pytest.raises(render_mod.RenderError, match=r"b\.mp4: cannot write MP4 \(refused here\)$"):
        render_mod.render(PENDULUM, tmp_path / "b.mp4", joints_csv=csv_path, fps=30, size=(96, 72), quiet=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]


def test_a_quiet_render_of_a_short_mp4_says_nothing_on_stderr(tmp_path, capfd):
    """ffmpeg's "not enough frames to estimate rate" of a video of a few frames reached stderr
    under -q."""
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    if shutil.which(imageio_ffmpeg.get_ffmpeg_exe()) is None:
        pytest.skip("no ffmpeg")
    csv_path = _swing_csv(tmp_path / "s.csv", 1.0)
    out = tmp_path / "v.mp4"
    # frames of the default size: ffmpeg's probe of its input takes in one or two of them
    assert main(["render", str(PENDULUM), "--joints", str(csv_path), "-o", str(out), "--fps", "2", "-q"]) == 0
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == f"{out}\n", captured
    assert out.stat().st_size > 0


@pytest.mark.parametrize("options, says", [
    (["--fps", "5", "--speed", "3", "--every", "7", "--jobs", "4"], "--fps 5, --speed 3, --every 7, --jobs 4: options"),
    (["--jobs", "2"], "--jobs 2: option"),
    (["--speed", "0.5"], "--speed 0.5: option"),
    (["--fps", "99999999999999999999"], "--fps 999999... (20 digits): option"),
])
def test_a_still_image_refuses_the_options_of_a_video(tmp_path, monkeypatch, capsys, options, says):
    """They were ignored without a word (exit 0), as --row is not for a video."""
    csv_path = _swing_csv(tmp_path / "s.csv", 1.0)
    out = tmp_path / "still.png"
    _no_drawing(monkeypatch)
    assert main(["render", str(PENDULUM), "--joints", str(csv_path), "-o", str(out), *options, "-q"]) == 2
    err = capsys.readouterr().err
    tail = "of a video (.mp4, .gif); a still image (.png) draws one row (--row)"
    assert err.strip() == f"bondsim-ros render: error: {says} {tail}", err
    assert not out.exists()


def test_a_still_image_takes_the_video_options_at_their_defaults(tmp_path):
    csv_path = _swing_csv(tmp_path / "s.csv", 1.0)
    out = tmp_path / "still.png"
    assert main(["render", str(PENDULUM), "--joints", str(csv_path), "-o", str(out), "--fps", "25", "--speed", "1",
                 "--every", "1", "--jobs", "1", "--row", "3", "--size", "96x72", "-q"]) == 0
    assert out.stat().st_size > 0


@pytest.mark.parametrize("speed, frames", [("1e-300", "5e+301"), ("5e-324", "inf")])
def test_a_tiny_speed_is_refused_in_a_short_line(tmp_path, capsys, speed, frames):
    """--speed 1e-300 quoted a frame count of 302 digits; 5e-324 raised OverflowError."""
    csv_path = _swing_csv(tmp_path / "s.csv", 2.0)
    assert main(["render", str(PENDULUM), "--joints", str(csv_path), "-o", str(tmp_path / "v.gif"), "--fps", "25",
                 "--speed", speed, "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bondsim-ros render: error: t spans 2 s: {frames} frames at 25 fps and speed ") and \
        len(err) < 200 and "Traceback" not in err, err


def test_a_xacro_file_and_a_short_color_are_named_as_such(tmp_path, capsys):
    """render of the packaged .urdf.xacro said "missing required attribute 'id'" (read as a
    mechanism XML); a URDF <color rgba="1 0"/> ended in numpy's "could not broadcast"."""
    from bondsim_ros.cli import main
    from bondsim_ros.mechanism.urdf import to_urdf

    xacro = ROOT / "urdf" / "robotino.urdf.xacro"
    assert main(["render", str(xacro), "-o", str(tmp_path / "x.png")]) == 2
    assert f"{xacro}: a xacro file: expand it first" in capsys.readouterr().err
    urdf = tmp_path / "P.urdf"
    to_urdf(ROOT / "urdf" / "multibody" / "Pendulum.xml", urdf)
    text = urdf.read_text()
    line = text[:text.index("<color rgba=")].count("\n") + 1
    urdf.write_text(re.sub(r'<color rgba="[^"]*"', '<color rgba="1 0"', text, count=1))
    assert main(["render", str(urdf), "-o", str(tmp_path / "x.png")]) == 2
    assert f"P.urdf:{line}: <color>: rgba='1 0': expected 4 numbers, got 2" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
