"""The URDF writer on inputs at its edges: /robot_description follows every file it is made
from and takes any cache folder, xacro output for robots named like xacro's own elements,
one-sided limits beyond the open bound, several planar bases in one project, and numbers far
below a millimetre."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from bondsim_ros.mechanism import MechanismError, to_urdf
from bondsim_ros.mechanism import urdf as mech_urdf
from bondsim_ros.mechanism.urdf import robot_description
from bondsim_ros.mechanism.urdfcheck import check_urdf_tree
from bondsim_ros.mechanism.xmlreader import parse_xml

ROOT = Path(__file__).resolve().parent.parent
CHECK_URDF = shutil.which("check_urdf")
needs_check_urdf = pytest.mark.skipif(CHECK_URDF is None, reason="check_urdf (liburdfdom-tools) not installed")

ARM = """<robot id="r" name="{name}"{unit}>
  <joint name="j1">
    <translation x="{x}"/>
    <drive type="{drive}"{limits}/>
    <link id="l1" name="l1"/>
    <cuboid id="c" lx="{lx}" ly="1" lz="1" mass="1"/>
    <render ref="c" color="red"/>
  </joint>
</robot>
"""

PLANAR = """<robot id="r" name="{name}">
  <joint name="{name}_x"><drive type="prismatic_x" virtual="true"/><link id="lx" name="{name}_lx"/>
    <joint name="{name}_y"><drive type="prismatic_y" virtual="true"/><link id="ly" name="{name}_ly"/>
      <joint name="{name}_phi"><drive type="revolute_z" virtual="true"/><link id="lb" name="{name}_body"/>
        <cuboid id="c" lx="0.2" ly="0.2" lz="0.1" mass="1"/>
      </joint>
    </joint>
  </joint>
</robot>
"""


def arm(name="Arm", x="0.5", drive="revolute_z", limits="", lx="1", unit=""):
    return ARM.format(name=name, x=x, drive=drive, limits=limits, lx=lx, unit=unit)


def check_urdf(path) -> None:
    proc = subprocess.run([CHECK_URDF, str(path)], capture_output=True, text=True)
    assert proc.returncode == 0 and "Successfully Parsed XML" in proc.stdout, proc.stdout + proc.stderr


def joint_origin(text: str, joint: str) -> str:
    return ET.fromstring(text).find(f"joint[@name='{joint}']/origin").get("xyz")


def mesh_files(text: str) -> list:
    return sorted({m.get("filename") for m in ET.fromstring(text).iter("mesh")})  # visual and collision


def write_stl(path: Path, size: float) -> None:
    trimesh = pytest.importorskip("trimesh")
    trimesh.creation.box(extents=(size, size, size)).export(str(path), file_type="stl")


@pytest.fixture
def project(tmp_path):
    """A project referencing robots/Arm.xml, whose link carries a part robots/p.stl."""
    (tmp_path / "robots").mkdir()
    robot = arm().replace('<render ref="c" color="red"/>',
                          '<render ref="c" color="red"/>\n    <part id="p" file="p.stl"/>\n'
                          '    <render ref="p" color="blue"/>')
    (tmp_path / "robots" / "Arm.xml").write_text(robot)
    write_stl(tmp_path / "robots" / "p.stl", 0.1)
    (tmp_path / "P.xml").write_text('<project id="p" name="P">\n  <robot name="Arm"/>\n</project>\n')
    return tmp_path


# -- /robot_description: the cache ----------------------------------------------------------
def test_robot_description_follows_an_edit_of_a_referenced_robot_file(project):
    cache = project / "cache"
    assert joint_origin(robot_description(project / "P.xml", cache), "j1") == "0.5 0 0"
    arm_file = project / "robots" / "Arm.xml"
    st = arm_file.stat()
    arm_file.write_text(arm_file.read_text().replace('x="0.5"', 'x="0.7"'))  # same size
    os.utime(arm_file, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same time: the content counts
    text = robot_description(project / "P.xml", cache)
    assert joint_origin(text, "j1") == "0.7 0 0"
    out = project / "out"
    out.mkdir()
    to_urdf(project / "P.xml", out / "p.urdf")
    assert joint_origin((out / "p.urdf").read_text(), "j1") == joint_origin(text, "j1")


def test_robot_description_follows_an_edited_part_and_a_file_found_first(project):
    cache = project / "cache"
    robot_description(project / "P.xml", cache)
    write_stl(project / "robots" / "p.stl", 0.3)
    text = robot_description(project / "P.xml", cache)
    [uri] = mesh_files(text)
    assert Path(unquote(urlparse(uri).path)).read_bytes() == (project / "robots" / "p.stl").read_bytes()
    # the reference search looks in the project's own folder before robots/: a file made there wins
    shutil.copy(project / "robots" / "p.stl", project / "p.stl")
    (project / "Arm.xml").write_text((project / "robots" / "Arm.xml").read_text().replace('x="0.5"', 'x="2"'))
    assert joint_origin(robot_description(project / "P.xml", cache), "j1") == "2 0 0"


def test_robot_description_unchanged_files_convert_nothing(project, monkeypatch):
    cache = project / "cache"
    first = robot_description(project / "P.xml", cache)

    def no_loading(*args, **kwargs):
        raise AssertionError("converted again although no file changed")

    monkeypatch.setattr(mech_urdf, "load_mechanism", no_loading)
    assert robot_description(project / "P.xml", cache) == first


@needs_check_urdf
def test_robot_description_in_a_cache_path_with_a_space(project):
    cache = project / "my cache"
    text = robot_description(project / "P.xml", cache)
    [uri] = mesh_files(text)
    assert uri.startswith("file://") and " " not in uri and "%20" in uri
    path = Path(unquote(urlparse(uri).path))  # as resource_retriever (RViz) and the Foxglove bridge read it
    assert path.is_file() and path.read_bytes() == (project / "robots" / "p.stl").read_bytes()
    urdf = project / "d.urdf"
    urdf.write_text(text)
    check_urdf(urdf)


def test_foxglove_serves_the_meshes_of_a_description_cached_under_a_space(project):
    """The Foxglove bridge turns the file:// URIs into package:// ones it serves: the mesh it
    answers is the part, though the cache path holds a space."""
    rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
    pytest.importorskip("foxglove", reason="foxglove-sdk not installed (the [foxglove] extra)")
    from std_msgs.msg import String

    from bondsim_ros.ros.foxglove_live import FoxgloveLive

    text = robot_description(project / "P.xml", project / "my cache")
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    live = FoxgloveLive(port=0, context=ctx)
    try:
        live._on_description(String(data=text))
        [uri] = mesh_files(live.description)
        assert uri.startswith("package://") and live._asset(uri) == (project / "robots" / "p.stl").read_bytes()
    finally:
        live.destroy_node()
        rclpy.try_shutdown(context=ctx)


# -- limits -----------------------------------------------------------------------------------
@pytest.mark.parametrize("drive, limits, given", [
    ("prismatic_x", 'lower="2000000"', ("lower", 2e6)),
    ("prismatic_x", 'upper="-2000000"', ("upper", -2e6)),
    ("revolute_z", 'lower="1e8"', ("lower", 1e8 * 3.141592653589793 / 180)),
    ("revolute_z", 'upper="-1e8"', ("upper", -1e8 * 3.141592653589793 / 180)),
])
def test_one_sided_limit_beyond_the_open_bound_is_ordered(tmp_path, drive, limits, given):
    src = tmp_path / "R.xml"
    src.write_text(arm(drive=drive, limits=" " + limits))
    out = tmp_path / "r.urdf"
    to_urdf(src, out)
    limit = ET.fromstring(out.read_text()).find("joint[@name='j1']/limit")
    lower, upper = float(limit.get("lower")), float(limit.get("upper"))
    assert lower <= upper
    assert float(limit.get(given[0])) == pytest.approx(given[1], rel=1e-9)
    check_urdf_tree(parse_xml(out.read_bytes(), str(out)))  # bondsim-ros render's check of a URDF
    if CHECK_URDF:
        check_urdf(out)


# -- planar bases -----------------------------------------------------------------------------
def _planar_project(tmp_path, refs):
    (tmp_path / "robots").mkdir()
    for name in ("A", "B"):
        (tmp_path / "robots" / f"{name}.xml").write_text(PLANAR.format(name=name))
    src = tmp_path / "P.xml"
    src.write_text('<project id="p" name="P">\n' + "".join(f"  {r}\n" for r in refs) + "</project>\n")
    (tmp_path / "out").mkdir()
    return src


def test_two_planar_robots_without_prefixes_are_refused(tmp_path):
    src = _planar_project(tmp_path, ['<robot name="A"/>', '<robot name="B"/>'])
    with pytest.raises(MechanismError) as err:
        to_urdf(src, tmp_path / "out" / "p.urdf")
    e = err.value
    assert (e.file, e.line, e.element) == (str(src), 3, "robot")
    assert "'A'" in e.reason and "'B'" in e.reason and "base_footprint" in e.reason and "prefix" in e.reason
    assert not list((tmp_path / "out").iterdir())


def test_two_planar_robots_with_prefixes_have_their_own_base_footprint(tmp_path):
    src = _planar_project(tmp_path, ['<robot name="A" prefix="a/"/>', '<robot name="B" prefix="b/"/>'])
    result = to_urdf(src, tmp_path / "out" / "p.urdf")
    assert [r["root"] for r in result.robots] == ["a/base_footprint", "b/base_footprint"]
    if CHECK_URDF:
        for r in result.robots:
            check_urdf(r["urdf"])


def test_planar_base_footprint_taken_by_another_robot_is_refused(tmp_path):
    src = _planar_project(tmp_path, ['<robot name="A"/>', '<robot name="C"/>'])
    (tmp_path / "robots" / "C.xml").write_text(arm(name="base_footprint"))  # its root link: base_footprint
    with pytest.raises(MechanismError) as err:
        to_urdf(src, tmp_path / "out" / "p.urdf")
    assert err.value.line == 2 and "base_footprint" in err.value.reason and "prefix" in err.value.reason


# -- numbers ----------------------------------------------------------------------------------
def test_tiny_lengths_and_limits_are_written_not_zeroed(tmp_path):
    src = tmp_path / "R.xml"
    src.write_text(arm(unit=' length_unit="mm"', lx="1e-10", x="1e-10", drive="prismatic_x",
                       limits=' lower="-1e-10" upper="1e-10"'))
    out = tmp_path / "r.urdf"
    to_urdf(src, out)
    root = ET.fromstring(out.read_text())
    assert root.find("link[@name='l1']/collision/geometry/box").get("size") == "1e-13 0.001 0.001"
    assert joint_origin(out.read_text(), "j1") == "1e-13 0 0"
    limit = root.find("joint[@name='j1']/limit")
    assert (limit.get("lower"), limit.get("upper")) == ("-1e-13", "1e-13")
    check_urdf_tree(parse_xml(out.read_bytes(), str(out)))
    if CHECK_URDF:
        check_urdf(out)


def test_tiny_scene_object_keeps_its_marker_position(tmp_path):
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "Grain.xml").write_text(
        '<object id="g" name="Grain" length_unit="mm">\n'
        '  <sphere id="s" radius="1e-9"/>\n  <render ref="s" color="gray"/>\n</object>\n')
    src = tmp_path / "P.xml"
    src.write_text('<project id="p" name="P" length_unit="mm">\n  <object name="Grain">\n'
                   '    <base><translation x="3e-10"/></base>\n  </object>\n</project>\n')
    to_urdf(src, tmp_path / "p.urdf")
    [marker] = json.loads((tmp_path / "p_scene_markers.json").read_text())["markers"]
    assert marker["position"] == [3e-13, 0.0, 0.0] and marker["scale"] == pytest.approx([2e-12] * 3, rel=1e-12)
    scene = (tmp_path / "p_scene.urdf").read_text()
    assert joint_origin(scene, "Grain_base") == "3e-13 0 0"
    assert ET.fromstring(scene).find("link[@name='Grain']/visual/geometry/sphere").get("radius") == "1e-12"
