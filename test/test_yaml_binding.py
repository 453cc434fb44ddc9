"""The mechanism: section of a YAML model file: errors name the file and line of the entry that
is wrong; `bondsim-ros up --model` refuses them with exit status 2; `bondsim-ros render` draws the
mechanism it binds from the model's own columns."""
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
])
def test_binding_errors_name_file_and_line(tmp_path, section, bad, message):
    path = write(tmp_path, section)
    with pytest.raises(RobotError) as err:
        load_robot(str(path)).make_twin()
    text = str(err.value)
    assert f"{path}:{line_of(path, bad)}" in text, text
    assert message in text


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
