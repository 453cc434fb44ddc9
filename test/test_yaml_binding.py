"""The mechanism: section of a YAML model file: errors name the file and line of the entry that
is wrong; `bondsim-ros up --model` refuses them with exit status 2; `bondsim-ros render` draws the
mechanism it binds from the model's own columns."""
import math
import shutil
from pathlib import Path

import pytest

from bondsim_ros.robots import RobotError, load_robot

DATA = Path(__file__).resolve().parent / "data" / "live"
MODEL = (DATA / "slider_msd.yaml").read_text().split("mechanism:")[0]


def write(tmp_path, section: str) -> Path:
    shutil.copy(DATA / "slider.xml", tmp_path / "slider.xml")
    path = tmp_path / "m.yaml"
    path.write_text(MODEL + section)
    return path


def line_of(path: Path, text: str) -> int:
    return next(k for k, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("section, bad, message", [
    ("mechanism:\n  file: slider.xml\n  joints:\n    slide: spring.q\n    elbow: spring.q\n", "elbow:",
     "slider.xml has no joint 'elbow'"),
    ("mechanism:\n  file: slider.xml\n  joints:\n    slide: position\n", "slide:",
     "the model has no output column 'position'"),
    ("mechanism:\n  file: slider.xml\n  joints:\n    slide: spring.q\n  base: {x: mass.p, y: v, yaw: v}\n", "base:",
     "has no planar base"),
    ("mechanism:\n  file: nowhere.xml\n  joints:\n    slide: spring.q\n", "file:", "nowhere.xml"),
    ("mechanism:\n  file: slider.xml\n  joints:\n    slide: spring.q\n  gears: 3\n", "gears:", "unknown key 'gears'"),
    ("mechanism:\n  file: slider.xml\n  joints:\n    slide: spring.q\n  velocities:\n    slide: speed\n",
     "slide: speed",
     "mechanism.velocities.slide: the model has no output column 'speed'"),
    ("mechanism:\n  file: slider.xml\n  joints:\n    slide: spring.q\n  efforts:\n    elbow: v\n", "elbow: v",
     "mechanism.efforts: 'elbow' is not bound in mechanism.joints"),
])
def test_binding_errors_name_file_and_line(tmp_path, section, bad, message):
    path = write(tmp_path, section)
    with pytest.raises(RobotError) as err:
        load_robot(str(path)).make_twin()
    text = str(err.value)
    assert f"{path}:{line_of(path, bad)}" in text, text
    assert message in text
    assert text.count(".xml") <= 1, text  # the mechanism file named once (its path was repeated)


def test_a_virtual_joint_and_a_joint_bound_twice(tmp_path):
    from bondsim_ros.robots.yaml_binding import check_binding, read_binding

    omni = Path(__file__).resolve().parents[1] / "urdf" / "omni5dpo" / "Omni5DPO_project.xml"
    path = tmp_path / "m.yaml"
    path.write_text(MODEL + f"mechanism:\n  file: {omni}\n  joints:\n    base_x: spring.q\n")
    with pytest.raises(RobotError, match=rf"{path}:{line_of(path, 'base_x:')}: .*'base_x' is a virtual joint"):
        check_binding(path, read_binding(path), ["spring.q"])
    shutil.copy(DATA / "slider.xml", tmp_path / "slider.xml")
    path.write_text(MODEL + "mechanism:\n  file: slider.xml\n  joints:\n    slide: spring.q\n    slide: v\n")
    second = len(path.read_text().splitlines())
    with pytest.raises(RobotError, match=rf"{path}:{second}: mechanism.joints: 'slide' bound twice \(first at line "
                                         rf"{second - 1}\)"):
        load_robot(str(path)).make_twin()


def test_up_refuses_a_bad_binding_and_an_unknown_robot(tmp_path, capfd):
    from bondsim_ros.cli import main

    path = write(tmp_path, "mechanism:\n  file: slider.xml\n  joints:\n    slide: position\n")
    assert main(["up", "--model", str(path), "--duration", "0.2"]) == 2
    err = capfd.readouterr().err
    assert f"{path}:{line_of(path, 'slide:')}" in err and "no output column 'position'" in err
    assert main(["up", "--model", "no_such_robot", "--duration", "0.2"]) == 2
    assert "not a registered robot" in capfd.readouterr().err
    assert main(["demo", "--model", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()


def image(path: Path):
    import numpy as np
    from PIL import Image, ImageSequence

    return np.stack([np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(Image.open(path))])


def renamed_csv(src: Path, dst: Path, names: dict) -> Path:
    import csv

    with open(src, newline="") as fh:
        rows = list(csv.reader(fh))
    rows[0] = [names.get(h, h) for h in rows[0]]
    with open(dst, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return dst


def test_render_a_model_file_moves_its_mechanism_by_the_simulated_columns(tmp_path):
    """simulate MODEL.yaml --csv, then render MODEL.yaml --joints: the bound column drives its
    joint, as rendering the XML from the same CSV with the column named like the joint."""
    from bondsim_ros.cli import main

    for name in ("slider_msd.yaml", "slider.xml"):
        shutil.copy(DATA / name, tmp_path / name)
    model, out = tmp_path / "slider_msd.yaml", tmp_path / "msd.csv"
    assert main(["simulate", str(model), "--t-end", "1", "--dt-out", "0.1", "--csv", str(out)]) == 0
    renamed = renamed_csv(out, tmp_path / "by_joint.csv", {"spring.q": "slide"})
    size = ["--size", "160x120", "-q"]
    assert main(["render", str(model), "--joints", str(out), "--row", "3", "-o", str(tmp_path / "m.png")] + size) == 0
    assert main(["render", str(tmp_path / "slider.xml"), "--joints", str(renamed), "--row", "3",
                 "-o", str(tmp_path / "x.png")] + size) == 0
    assert main(["render", str(tmp_path / "slider.xml"), "-o", str(tmp_path / "zero.png")] + size) == 0
    assert (image(tmp_path / "m.png") == image(tmp_path / "x.png")).all()
    assert (image(tmp_path / "m.png") != image(tmp_path / "zero.png")).any()  # the block moved off zero


def test_render_a_model_file_drives_the_base_by_its_base_columns_only(tmp_path):
    """mechanism.base: {x: X, y: Y, yaw: phi} poses the planar base from X, Y, phi; the CSV's own
    x and y (not bound) move nothing. A GIF along the rows, frame for frame as the XML's."""
    from bondsim_ros.cli import main

    for name in ("cart.yaml", "cart.xml"):
        shutil.copy(DATA / name, tmp_path / name)
    rows = [(0.0, 0.0, 0.0, 0.0, 0.0), (0.1, 0.3, 0.1, 0.5, 2.0), (0.2, 0.6, 0.3, 1.0, 4.0)]
    model_csv = tmp_path / "cart.csv"
    model_csv.write_text("t,X,Y,phi,wheel,x,y\n" + "".join(f"{t},{x},{y},{p},{w},-2,3\n" for t, x, y, p, w in rows))
    xml_csv = tmp_path / "by_joint.csv"
    xml_csv.write_text("t,x,y,phi,wheel\n" + "".join(f"{t},{x},{y},{p},{w}\n" for t, x, y, p, w in rows))
    size = ["--size", "160x120", "-q", "--fps", "10"]
    assert main(["render", str(tmp_path / "cart.yaml"), "--joints", str(model_csv), "-o", str(tmp_path / "m.gif")]
                + size) == 0
    assert main(["render", str(tmp_path / "cart.xml"), "--joints", str(xml_csv), "-o", str(tmp_path / "x.gif")]
                + size) == 0
    m, x = image(tmp_path / "m.gif"), image(tmp_path / "x.gif")
    assert len(m) == 3 and m.shape == x.shape and (m == x).all()
    assert (m[0] != m[2]).any()  # the cart moved


@pytest.mark.parametrize("section, csv_header, bad, message", [
    ("", "t,spring.q", None, "no mechanism: section"),
    # a misspelt section: named at its line
    ("mechansim:\n  file: slider.xml\n  joints:\n    slide: spring.q\n", "t,spring.q", "mechansim:",
     "no mechanism: section (it binds the model to a mechanism XML: file, joints, optional base); unknown top-level "
     "key(s): mechansim"),
    ("mechanism:\n  file: slider.xml\n  joints:\n    slide: position\n", "t,spring.q", "slide:",
     "c.csv has no column 'position' (columns: t, spring.q)"),
    ("mechanism:\n  file: slider.xml\n  joints:\n    elbow: spring.q\n", "t,spring.q", "elbow:",
     "slider.xml has no joint 'elbow'"),
    ("mechanism:\n  file: slider.xml\n  joints:\n    slide: spring.q\n  base: {x: v, y: v, yaw: v}\n", "t,spring.q,v",
     "base:", "has no planar base"),
])
def test_render_refuses_a_model_file_it_cannot_draw(tmp_path, capfd, section, csv_header, bad, message):
    from bondsim_ros.cli import main

    path = write(tmp_path, section)
    (tmp_path / "c.csv").write_text(csv_header + "\n" + ",".join("0" * len(csv_header.split(","))) + "\n")
    out = tmp_path / "o.png"
    assert main(["render", str(path), "--joints", str(tmp_path / "c.csv"), "-o", str(out), "-q"]) == 2
    err = capfd.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    where = f"{path}:{line_of(path, bad)}: " if bad else f"{path}: "
    assert f"error: {where}" in err and message in err, err
    assert not out.exists()


def _cart(tmp_path, base: str) -> Path:
    """cart.yaml (and its XML) with its mechanism.base line replaced by ``base``."""
    shutil.copy(DATA / "cart.xml", tmp_path / "cart.xml")
    path = tmp_path / "cart.yaml"
    path.write_text((DATA / "cart.yaml").read_text().replace("  base: {x: X, y: Y, yaw: phi}\n", base))
    return path


@pytest.mark.parametrize("base, message", [
    ("  base: {x: X, y: Y, yaw: phi, vx: mass.p}\n", "all three or none: vx, vy, wz (missing: vy, wz)"),
    ("  base: {x: X, y: Y, yaw: phi, vx: mass.p, vy: Y, wz: speed}\n", "mechanism.base.wz: the model has no output "
     "column 'speed'"),
])
def test_base_velocity_columns_are_checked_with_file_and_line(tmp_path, base, message):
    path = _cart(tmp_path, base)
    with pytest.raises(RobotError) as err:
        load_robot(str(path)).make_twin("twist")
    assert f"{path}:{line_of(path, 'base:')}: " in str(err.value) and message in str(err.value), str(err.value)


def test_base_velocity_columns_are_the_twist_in_odom(tmp_path):
    """base: {vx:, vy:, wz:} name the base's velocity in odom: the state's world twist is theirs,
    its body twist that turned into the base's frame."""
    path = _cart(tmp_path, "  base: {x: X, y: Y, yaw: phi, vx: mass.p, vy: Y, wz: yaw_inertia.p}\n")
    twin = load_robot(str(path)).make_twin("twist")
    twin.set_twist(0.4, 0.0, 0.5)
    s = twin.step_to(1.0)
    world = (twin.column("mass.p"), twin.column("Y"), twin.column("yaw_inertia.p"))
    assert s.twist_world == pytest.approx(world, abs=1e-12)
    c, si = math.cos(s.pose[2]), math.sin(s.pose[2])
    assert s.twist_body == pytest.approx((c * world[0] + si * world[1], -si * world[0] + c * world[1], world[2]),
                                         abs=1e-12)


def test_a_base_without_velocity_columns_reports_its_motion_over_the_frame():
    """cart.yaml binds only the pose: the twist is the pose's motion over the last frame, in the
    body frame. The model's own speeds (momentum over mass and inertia) are the truth: frame by
    frame within what the speed changes over a frame, at the steady twist to 1e-6."""
    twin = load_robot(str(DATA / "cart.yaml")).make_twin("twist")
    assert twin.state().twist_body == (0.0, 0.0, 0.0)  # nothing moved yet
    twin.set_twist(0.4, 0.0, 0.5)
    dt, worst = 1.0 / 33.0, 0.0
    for k in range(1, 200):
        s = twin.step_to(k * dt)
        v, w = twin.column("mass.p") / 2.0, twin.column("yaw_inertia.p") / 0.5
        worst = max(worst, abs(s.twist_body[0] - v), abs(s.twist_body[1]), abs(s.twist_body[2] - w))
        c, si = math.cos(s.pose[2]), math.sin(s.pose[2])
        bx, by, bw = s.twist_body
        assert s.twist_world == pytest.approx((c * bx - si * by, si * bx + c * by, bw), abs=1e-12)
    # the frame's average lags its end by about half of what a speed changes over a frame (yaw rate: <= 0.06)
    assert worst < 0.035
    assert s.twist_body == pytest.approx((v, 0.0, w), abs=1e-6) and v == pytest.approx(0.4, abs=1e-5)


def test_placing_or_resetting_the_base_is_no_motion():
    """A placement (set_entity_state) or a reset moves the pose at once: the twist after the next
    frame is the motion from there, not the jump."""
    from bondsim_ros.twin.placement import PlacedTwin

    twin = PlacedTwin(load_robot(str(DATA / "cart.yaml")).make_twin("twist"))
    twin.set_twist(0.4, 0.0, 0.0)
    dt = 1.0 / 33.0
    for k in range(1, 100):
        s = twin.step_to(k * dt)
    twin.set_pose(5.0, -3.0, 2.0)
    placed = twin.step_to(100 * dt)
    assert placed.twist_body == pytest.approx(s.twist_body, abs=1e-4)
    assert placed.twist_body[0] == pytest.approx(0.4, rel=0.01)
    assert placed.twist_world[:2] == pytest.approx((0.4 * math.cos(2.0), 0.4 * math.sin(2.0)), rel=0.01)
    twin.reset()
    assert twin.state().twist_body == (0.0, 0.0, 0.0) and twin.twist == (0.0, 0.0, 0.0)  # at rest, as built
    twin.set_twist(0.4, 0.0, 0.0)
    after = twin.step_to(dt)
    assert 0.0 < after.twist_body[0] < 0.05  # from rest, one frame of the push


def test_render_row_without_joints_says_the_row_needs_a_csv(tmp_path, capfd):
    """--row picks a row of --joints; without one there is no CSV to be outside of."""
    from bondsim_ros.cli import main

    shutil.copy(DATA / "slider.xml", tmp_path / "slider.xml")
    out = tmp_path / "o.png"
    assert main(["render", str(tmp_path / "slider.xml"), "--row", "3", "-o", str(out), "-q"]) == 2
    err = capfd.readouterr().err
    assert "--row 3: a row of the --joints CSV, and no --joints was given" in err and "outside" not in err, err
    assert not out.exists()


@pytest.mark.parametrize("text", ["just text\n", "- a\n- b\n"])
def test_render_a_model_file_that_is_no_mapping_says_it_has_no_mechanism_section(tmp_path, capfd, text):
    from bondsim_ros.cli import main

    path = tmp_path / "m.yaml"
    path.write_text(text)
    out = tmp_path / "o.png"
    assert main(["render", str(path), "-o", str(out), "-q"]) == 2
    err = capfd.readouterr().err
    assert "Traceback" not in err and f"{path}: no mechanism: section" in err, err
    assert not out.exists()


def test_velocity_and_effort_columns_go_into_the_joint_states(tmp_path):
    """velocities: and efforts: bind a column to each bound joint: the twin's joint states carry
    them (/joint_states' velocity and effort); without them both are empty."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.simulation import Simulation
    from bondsim_ros.bondgraph.yamlmodel import load_model
    from bondsim_ros.twin.protocol import TWIN_OPTIONS

    path = write(tmp_path, "mechanism:\n  file: slider.xml\n  joints:\n    slide: spring.q\n"
                           "  velocities:\n    slide: v\n  efforts:\n    slide: mass.p\n")
    twin = load_robot(str(path)).make_twin("builtin", TWIN_OPTIONS)
    ref = Simulation(compile_model(load_model(path)), TWIN_OPTIONS)
    names = ref.compiled.output_names
    for t in (0.5, 1.0, 1.5):
        state = twin.step_to(t)
        y, yp = ref.step_to(t)
        row = ref.outputs_at(t, y, yp)
        assert list(state.velocity) == pytest.approx([row[names.index("v")]], abs=1e-9)
        assert list(state.effort) == pytest.approx([row[names.index("mass.p")]], abs=1e-9)
    assert abs(state.velocity[0]) > 1e-3  # (the block moves)
    plain = load_robot(str(write(tmp_path, "mechanism:\n  file: slider.xml\n  joints:\n    slide: spring.q\n")))
    state = plain.make_twin("builtin", TWIN_OPTIONS).step_to(0.5)
    assert len(state.velocity) == len(state.effort) == 0
