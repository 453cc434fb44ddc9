"""The mechanism: section of a YAML model file: errors name the file and line of the entry that
is wrong; `bondsim-ros up --model` refuses them with exit status 2."""
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
