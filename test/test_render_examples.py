"""Mechanism XML of the 5DPO omni robot and the multibody benchmarks (pendulum, slider crank): conversion,
simulate CSV columns named like the XML joints, kinematic agreement with the models, and the
renderer's framing and orientation."""
import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.mechanism import to_urdf
from bondsim_ros.mechanism.render import read_joint_csv

from procs import children

yourdfpy = pytest.importorskip("yourdfpy")

ROOT = Path(__file__).resolve().parents[1]
OMNI = ROOT / "urdf" / "omni5dpo" / "Omni5DPO_project.xml"
PENDULUM = ROOT / "urdf" / "multibody" / "Pendulum.xml"
SLIDER = ROOT / "urdf" / "multibody" / "SliderCrank.xml"
ARM = ROOT / "urdf" / "arm3dof" / "Arm3DOF.xml"
JOINTS = {
    "omni": ["base_x", "base_y", "base_phi", "wheel1_axle", "wheel2_axle", "wheel3_axle"],
    "pendulum": ["pivot_joint"],
    "slider": ["crank_joint", "rod_joint", "piston_joint"],
}
PIVOT_HEIGHT, SLIDER_HEIGHT = 1.2, 0.45  # world z of the model plane's origin in the two XML files


@pytest.fixture(scope="module")
def urdfs(tmp_path_factory):
    out = tmp_path_factory.mktemp("urdf")
    files = {}
    for key, xml in (("omni", OMNI), ("pendulum", PENDULUM), ("slider", SLIDER)):
        result = to_urdf(xml, out / f"{key}.urdf", keep_virtual=True)
        files[key] = result.robots[0]["urdf"]
    return files


def _load(path):
    return yourdfpy.URDF.load(str(path))


def _simulate(tmp_path, name, *extra):
    from bondsim_ros.cli import main

    csv = tmp_path / f"{name}.csv"
    assert main(["simulate", name, "--csv", str(csv), "--quiet", *extra]) == 0
    header, data = read_joint_csv(csv)
    return {h: data[:, k] for k, h in enumerate(header)}


def _at(robot, cfg, frame):
    robot.update_cfg(cfg)
    return robot.get_transform(frame)


@pytest.mark.parametrize("key", ["omni", "pendulum", "slider"])
def test_xml_converts_and_loads(urdfs, key):
    robot = _load(urdfs[key])
    assert robot.actuated_joint_names == JOINTS[key]


@pytest.mark.skipif(shutil.which("check_urdf") is None, reason="check_urdf (liburdfdom-tools) not installed")
def test_check_urdf_accepts_examples(urdfs):
    for path in urdfs.values():
        proc = subprocess.run(["check_urdf", path], capture_output=True, text=True)
        assert proc.returncode == 0 and "Successfully Parsed XML" in proc.stdout, proc.stdout + proc.stderr


def test_omni5dpo_mass_and_yaw_inertia(urdfs):
    """Table II: 26.2 kg; section IV-B: identified I_zz = 1.1 kg m^2 (about the centre, all links)."""
    robot = _load(urdfs["omni"])
    mass = izz = 0.0
    for name, link in robot.link_map.items():
        if link.inertial is None:
            continue
        t = robot.get_transform(name) @ link.inertial.origin
        inertia = t[:3, :3] @ link.inertial.inertia @ t[:3, :3].T
        mass += link.inertial.mass
        izz += inertia[2, 2] + link.inertial.mass * (t[0, 3] ** 2 + t[1, 3] ** 2)
    assert mass == pytest.approx(26.2, rel=1e-6)
    assert izz == pytest.approx(1.1, rel=2e-3)


def test_omni5dpo_columns_pose_and_wheel_sign(urdfs, tmp_path):
    """CSV base pose drives the URDF's base; the axle angles turn the way the ideal omni wheel
    rolls: hub velocity along the wheel frame's y = -r_w * axle rate (model and XML agree)."""
    cols = _simulate(tmp_path, "omni5dpo", "--t-end", "0.8", "--param", "v_step=0.6", "--param", "t_step=0.1")
    for name in ["t", "x", "y", "phi"] + JOINTS["omni"][3:]:
        assert name in cols, f"omni5dpo CSV lacks column {name}"
    robot = _load(urdfs["omni"])
    t = cols["t"]
    k = len(t) - 2  # late in the run: moving and turning
    assert abs(cols["wz"][k]) > 0.5 and math.hypot(cols["vx"][k], cols["vy"][k]) > 0.1

    def cfg(i):
        return {"base_x": cols["x"][i], "base_y": cols["y"][i], "base_phi": cols["phi"][i],
                **{f"wheel{w}_axle": cols[f"wheel{w}_axle"][i] for w in (1, 2, 3)}}

    base = _at(robot, cfg(k), "base_link")
    assert base[:2, 3] == pytest.approx([cols["x"][k], cols["y"][k]], abs=1e-9)
    assert math.atan2(base[1, 0], base[0, 0]) == pytest.approx(math.remainder(cols["phi"][k], 2 * math.pi), abs=1e-9)
    dt = t[k + 1] - t[k - 1]
    for w in (1, 2, 3):
        frame = f"wheel{w}_link"
        before, now, after = (_at(robot, cfg(i), frame) for i in (k - 1, k, k + 1))
        v_hub = (after[:3, 3] - before[:3, 3]) / dt
        rate = (cols[f"wheel{w}_axle"][k + 1] - cols[f"wheel{w}_axle"][k - 1]) / dt
        assert abs(rate) > 0.1
        # rolling direction: horizontal, normal to the axle (the link's own y turns with the axle)
        rolling = np.cross([0.0, 0.0, 1.0], now[:3, 0])
        assert v_hub @ rolling == pytest.approx(-0.0513 * rate, rel=1e-3, abs=1e-5), f"wheel {w}"
        assert now[2, 3] == pytest.approx(0.0513, abs=1e-9)  # axle at the wheel radius: wheels on the floor


@pytest.mark.parametrize("variant", ["pendulum_minimal", "pendulum_lagrange"])
def test_pendulum_tip_matches_model(urdfs, tmp_path, variant):
    cols = _simulate(tmp_path, variant, "--t-end", "0.5")
    assert "pivot_joint" in cols
    robot = _load(urdfs["pendulum"])
    L = 1.0
    if variant == "pendulum_minimal":  # the model's bar end from its angle
        ex, ey = L * np.sin(cols["theta"]), -L * np.cos(cols["theta"])
    else:  # from the bar's centre of mass (x, y) and angle, independent of the pivot column
        ex, ey = cols["x"] + L / 2 * np.sin(cols["theta"]), cols["y"] - L / 2 * np.cos(cols["theta"])
    for k in (0, len(cols["t"]) // 2, len(cols["t"]) - 1):
        tip = _at(robot, {"pivot_joint": cols["pivot_joint"][k]}, "probe_tip")[:3, 3]
        # model plane (x right, y up) stood up in the world: model y is world z
        assert tip == pytest.approx([ex[k], 0.0, PIVOT_HEIGHT + ey[k]], abs=1e-5)


@pytest.mark.parametrize("variant", ["slider_crank_minimal", "slider_crank_lagrange"])
def test_slider_crank_loop_closes(urdfs, tmp_path, variant):
    """The tree's rod end lands on the piston pin at every row (loop closure by joint values)."""
    cols = _simulate(tmp_path, variant, "--t-end", "1.0")
    for name in JOINTS["slider"]:
        assert name in cols, f"{variant} CSV lacks column {name}"
    robot = _load(urdfs["slider"])
    gaps = []
    for k in range(0, len(cols["t"]), 25):
        cfg = {j: cols[j][k] for j in JOINTS["slider"]}
        end = _at(robot, cfg, "probe_rod_end")[:3, 3]
        pin = _at(robot, cfg, "probe_piston_pin")[:3, 3]
        crank_pin = _at(robot, cfg, "rod_link")[:3, 3]
        g = cols["gamma"][k]
        assert crank_pin == pytest.approx([0.2 * math.cos(g), 0.0, SLIDER_HEIGHT + 0.2 * math.sin(g)], abs=1e-9)
        assert pin[0] == pytest.approx(cols["x_piston"][k], abs=1e-12)
        gaps.append(np.linalg.norm(end - pin))
    # the crank swings through bottom dead centre in 1 s: the rows cover a real motion
    assert np.ptp(cols["gamma"]) > 1.0
    assert max(gaps) < 1e-4, f"{variant}: rod end misses the piston pin by {max(gaps):.2e} m"


def _foreground(png):
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    return img, img.sum(axis=2) < 3 * 245  # background is white


def _span(mask):
    ys, xs = np.nonzero(mask)
    return (xs.max() - xs.min() + 1) / mask.shape[1], (ys.max() - ys.min() + 1) / mask.shape[0]


def test_render_frames_small_mechanism(tmp_path):
    """The 0.35 m arm spans most of the frame (it spanned ~15 % of the width before framing)."""
    from bondsim_ros.mechanism.render import render

    csv = tmp_path / "arm.csv"
    csv.write_text("t,q1,q2,q3\n0,-1.3,1.0,0.3\n")
    out = render(ARM, tmp_path / "arm.png", joints_csv=csv, size=(480, 360), progress=False)
    _, fg = _foreground(out)
    wx, wy = _span(fg[40:])  # below the title
    assert max(wx, wy) > 0.6 and wx < 0.98, (wx, wy)


def test_render_pendulum_hangs_down(tmp_path):
    from bondsim_ros.mechanism.render import render

    csv = tmp_path / "p.csv"
    csv.write_text("t,pivot_joint\n0,0.3\n")
    out = render(PENDULUM, tmp_path / "p.png", joints_csv=csv, size=(360, 480), progress=False)
    img, fg = _foreground(out)
    red = (img[:, :, 0] > 180) & (img[:, :, 1] < 80) & (img[:, :, 2] < 80)  # the tip ball
    bar = (img[:, :, 2] > img[:, :, 0] + 40) & (img[:, :, 2] > 100)  # steel-blue bar
    assert red.sum() > 30 and bar.sum() > 100
    red_row = np.nonzero(red)[0].mean()
    bar_top = np.nonzero(bar)[0].min()
    assert red_row > bar_top + 0.3 * img.shape[0], "tip not below the pivot: the picture is upside down"
    assert max(_span(fg[40:])) > 0.6


def test_cli_renders_slider_crank_csv(tmp_path):
    """The documented pipeline: simulate a 003 variant, render one CSV row of it."""
    from bondsim_ros.cli import main

    csv = tmp_path / "s.csv"
    assert main(["simulate", "slider_crank_lagrange", "--t-end", "0.3", "--csv", str(csv), "--quiet"]) == 0
    out = tmp_path / "s.png"
    assert main(["render", str(SLIDER), "--joints", str(csv), "--row", "50", "--size", "400x300", "-q",
                 "-o", str(out)]) == 0
    _, fg = _foreground(out)
    assert max(_span(fg[40:])) > 0.6


def _swing_csv(path, seconds=2.0, rate=50.0):
    """A pendulum swinging for ``seconds`` at ``rate`` rows per second (as simulate writes them)."""
    t = np.arange(0.0, seconds + 0.5 / rate, 1.0 / rate)
    path.write_text("t,pivot_joint\n" + "".join(f"{tk:.6g},{0.5 * math.sin(3 * tk):.6g}\n" for tk in t))
    return path


def _video_seconds(path):
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(path))
    fps = float(next(imageio_ffmpeg.read_frames(str(path)))["fps"])
    return frames, fps, frames / fps


def test_video_plays_in_real_time_with_progress_lines(tmp_path, capsys):
    """2 s of 50 Hz rows at the default 25 fps: a 2 s video (it was 101 frames, 4 s: one frame
    per row), and on a stderr that is no terminal, progress lines with frames done/total and
    the time elapsed (a rich bar draws nothing there)."""
    from bondsim_ros.cli import main

    out = tmp_path / "swing.mp4"
    assert main(["render", str(PENDULUM), "--joints", str(_swing_csv(tmp_path / "s.csv")), "-o", str(out),
                 "--size", "96x72"]) == 0
    frames, fps, seconds = _video_seconds(out)
    assert fps == 25
    assert abs(seconds - 2.0) <= 1.0 / fps + 1e-9, (frames, fps)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("render: ")]
    assert len(lines) >= 5, err  # every 5 % of 51 frames at least every few frames
    assert lines[-1].startswith(f"render: {frames}/{frames} frames (100%)") and "elapsed" in lines[-1]
    assert any("left" in line for line in lines[:-1])


def test_video_speed_option(tmp_path):
    """--speed 4 plays the run four times faster: 2 s in 0.5 s; rows sparser than the frames
    (5 Hz) are held, so the video still lasts the run."""
    from bondsim_ros.mechanism.render import render

    fast = render(PENDULUM, tmp_path / "fast.mp4", joints_csv=_swing_csv(tmp_path / "a.csv"), size=(96, 72),
                  progress=False, speed=4)
    frames, fps, seconds = _video_seconds(fast)
    assert abs(seconds - 0.5) <= 1.0 / fps + 1e-9, frames
    slow_rows = render(PENDULUM, tmp_path / "sparse.mp4", joints_csv=_swing_csv(tmp_path / "b.csv", rate=5.0),
                       size=(96, 72), progress=False)
    frames, fps, seconds = _video_seconds(slow_rows)
    assert abs(seconds - 2.0) <= 1.0 / fps + 1e-9, frames


def test_video_frames_drawn_by_two_processes_are_the_frames_drawn_by_one(tmp_path):
    """--jobs 2 draws the frames in two spawned processes and encodes them here in order: the
    GIF is the same file byte for byte, the demo's scan inset (pickled to the processes)
    included; a worker count below 1 is refused."""
    from bondsim_ros.cli import main
    from bondsim_ros.mechanism.render import render
    from bondsim_ros.ros.demo import ScanInset

    csv = _swing_csv(tmp_path / "s.csv")
    t = np.linspace(0.0, 2.0, 21)
    scans = [np.column_stack([np.cos(np.linspace(0, 3, 30)) * (1 + k / 20), np.sin(np.linspace(0, 3, 30))])
             for k in range(len(t))]
    inset = ScanInset(None, t, np.cos(t), np.sin(t), t, scans, [(0.0, 0.0)] * len(t))
    one, two = (render(PENDULUM, tmp_path / f"{jobs}.gif", joints_csv=csv, size=(96, 72), progress=False,
                       inset=inset, jobs=jobs) for jobs in (1, 2))
    assert Path(one).read_bytes() == Path(two).read_bytes()
    assert main(["render", str(PENDULUM), "--joints", str(csv), "-o", str(tmp_path / "c.gif"), "--size", "96x72",
                 "-q", "--jobs", "2"]) == 0
    assert main(["render", str(PENDULUM), "--joints", str(csv), "-o", str(tmp_path / "d.gif"), "--size", "96x72",
                 "-q", "--jobs", "0"]) == 2
    assert not (tmp_path / "d.gif").exists()


def test_a_script_without_the_main_guard_gets_a_render_error_for_its_worker_processes(tmp_path):
    """A script that calls render(jobs=2) at module level: each spawned process imports it again
    and is refused a pool of its own there. The script ends with a RenderError that says so,
    within seconds, and leaves no video (neither the MP4 nor a GIF in its place)."""
    _swing_csv(tmp_path / "s.csv")  # the joints the script reads
    script = tmp_path / "unguarded.py"
    script.write_text("from bondsim_ros.mechanism.render import render\n"
                      f"render({str(PENDULUM)!r}, 'v.mp4', joints_csv='s.csv', size=(96, 72), "
                      "jobs=2, progress=False)\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 1
    # the error's line (multiprocessing's resource tracker may warn after it about the dead
    # workers' semaphores)
    assert any(line.startswith("bondsim_ros.mechanism.render.RenderError: a process drawing")
               for line in proc.stderr.splitlines()), proc.stderr
    assert 'under `if __name__ == "__main__":`' in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv", "unguarded.py"]


def test_a_frame_that_fails_ends_an_mp4_render_with_its_own_error(tmp_path):
    """A drawing that fails halfway (here the inset, with a RuntimeError) is the render's error:
    not taken for the encoder's, with a GIF of the frames left over written in its place."""
    pytest.importorskip("imageio_ffmpeg")
    from bondsim_ros.mechanism.render import render

    def inset(ax, t):
        if t >= 1.0:
            raise RuntimeError(f"no scan at t = {t:g}")

    csv = _swing_csv(tmp_path / "s.csv")
    with pytest.raises(RuntimeError, match="no scan at t = 1"):
        render(PENDULUM, tmp_path / "v.mp4", joints_csv=csv, size=(96, 72), progress=False, inset=inset)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]


def test_an_encoder_that_dies_midway_is_an_error_not_a_shorter_gif(tmp_path):
    """ffmpeg killed after it took half the frames: the render fails naming the MP4, leaves no
    file, and writes no GIF of the frames that were left (the ones ffmpeg took are gone)."""
    pytest.importorskip("imageio_ffmpeg")
    from bondsim_ros.mechanism.render import RenderError, render

    killed = []

    def inset(ax, t):
        if t >= 1.0 and not killed:
            for pid in children(os.getpid()):
                if b"ffmpeg" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    killed.append(pid)

    csv = _swing_csv(tmp_path / "s.csv")
    with pytest.raises(RenderError, match="v.mp4: cannot write MP4"):
        render(PENDULUM, tmp_path / "v.mp4", joints_csv=csv, size=(96, 72), progress=False, inset=inset)
    assert killed, "no ffmpeg process was found to stop"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]


# ffmpeg stand-ins (through IMAGEIO_FFMPEG_EXE). Encoding (input "-i -"): each takes every frame
# from stdin, then fails while finishing the file; reading a file back: as ffmpeg does.
_DIES_AT_THE_END = f"""#!{sys.executable}
import sys
args = sys.argv[1:]
src = args[args.index("-i") + 1]
if src == "-":
    while sys.stdin.buffer.read(1 << 16):
        pass
    with open(args[-1], "wb") as fh:
        fh.write(bytes([0, 0, 0, 32]) + b"ftypisom")  # the file begun, never finished
    sys.exit(1)
print("[in#0 @ 0x5a1] moov atom not found", file=sys.stderr)
print(f"Error opening input file {{src}}.", file=sys.stderr)
sys.exit(183)
"""
# a finished video of one frame where more were sent, and exit status 0 (read back by the real ffmpeg)
_ONE_FRAME_KEPT = f"""#!{sys.executable}
import os, shutil, sys
args = sys.argv[1:]
if args[args.index("-i") + 1] == "-":
    while sys.stdin.buffer.read(1 << 16):
        pass
    shutil.copyfile(os.environ["ONE_FRAME_MP4"], args[-1])
    sys.exit(0)
os.execv(os.environ["REAL_FFMPEG"], [os.environ["REAL_FFMPEG"], *args])
"""


@pytest.mark.parametrize("stand_in, reason", [
    (_DIES_AT_THE_END, "the video ffmpeg wrote cannot be read back: moov atom not found"),
    (_ONE_FRAME_KEPT, "ffmpeg wrote 1 of the 51 frames"),
])
def test_an_encoder_that_fails_finishing_the_file_is_an_error_not_a_video(tmp_path, capsys, monkeypatch,
                                                                          stand_in, reason):
    """ffmpeg took every frame, then failed while finishing the file (a full disk as the index is
    written, killed): the render fails naming the MP4 and the reason, leaves no file under its name
    or a temporary one, and writes no GIF (ffmpeg has the frames)."""
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    from bondsim_ros.cli import main

    work = tmp_path / "work"
    work.mkdir()
    one_frame = imageio_ffmpeg.write_frames(str(work / "one.mp4"), (96, 72), fps=25, macro_block_size=8)
    one_frame.send(None)
    one_frame.send(np.zeros((72, 96, 3), np.uint8))
    one_frame.close()
    monkeypatch.setenv("ONE_FRAME_MP4", str(work / "one.mp4"))
    monkeypatch.setenv("REAL_FFMPEG", imageio_ffmpeg.get_ffmpeg_exe())
    exe = work / "ffmpeg"
    exe.write_text(stand_in)
    exe.chmod(0o755)
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(exe))
    csv = _swing_csv(work / "s.csv")  # 2 s at 25 fps: 51 frames
    out = tmp_path / "out"
    out.mkdir()
    rc = main(["render", str(PENDULUM), "--joints", str(csv), "-o", str(out / "v.mp4"), "--size", "96x72", "-q"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"{out / 'v.mp4'}: cannot write MP4 ({reason})" in err and "Traceback" not in err, err
    assert list(out.iterdir()) == []


def test_video_refuses_time_going_back(tmp_path, capsys):
    """Frames are picked by t: a CSV whose t goes back is refused, naming the line, before any
    frame is drawn or file written."""
    from bondsim_ros.cli import main

    csv = tmp_path / "j.csv"
    csv.write_text("t,pivot_joint\n0,0\n0.1,0.2\n0.05,0.3\n")
    out = tmp_path / "v.mp4"
    assert main(["render", str(PENDULUM), "--joints", str(csv), "-o", str(out), "--size", "96x72"]) == 2
    assert "j.csv:4: column 't' goes back in time (0.1 -> 0.05)" in capsys.readouterr().err
    assert not out.exists()


def test_render_inset_draws_the_instant_in_the_top_right_corner(tmp_path):
    """``inset`` gets a 2-D axes in the frame's top-right corner and the row's time (the demo
    draws the latest laser scan there)."""
    from matplotlib.patches import Rectangle

    from bondsim_ros.mechanism.render import render

    csv = tmp_path / "arm.csv"
    csv.write_text("t,q1,q2,q3\n0.25,-1.3,1.0,0.3\n")
    seen = []

    def inset(ax, t):
        seen.append(t)
        ax.add_patch(Rectangle((0, 0), 1, 1, color=(0.0, 0.8, 0.0)))

    out = render(ARM, tmp_path / "arm.png", joints_csv=csv, size=(480, 360), progress=False, inset=inset)
    img, _ = _foreground(out)
    green = (img[:, :, 1] > 150) & (img[:, :, 0] < 60) & (img[:, :, 2] < 60)
    ys, xs = np.nonzero(green)
    assert seen == [0.25]
    assert green.sum() > 0.05 * img.shape[0] * img.shape[1]
    assert xs.min() > 0.6 * img.shape[1] and ys.max() < 0.45 * img.shape[0], "inset not in the top-right corner"
