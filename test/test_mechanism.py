"""Mechanism XML -> URDF: the spec's elements, errors, kinematics, and the packaged Robotino."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.mechanism import MechanismError, forward_kinematics, load_mechanism, to_urdf
from bondsim_ros.mechanism.probes import ProbeKinematics
from bondsim_ros.paths import share_file

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "test" / "data" / "mechanism"
ROBOTINO = ROOT / "urdf" / "robotino"
PROJECT = ROBOTINO / "Robotino_project.xml"
ROBOT = ROBOTINO / "robots" / "Robotino.xml"

yourdfpy = pytest.importorskip("yourdfpy")


# ------------------------------------------------------------------------------------------
# An independent reading of the XML: composes the transform chain straight from the elements
# (ElementTree on trusted test files), to check the converter's URDF against.
# ------------------------------------------------------------------------------------------
UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001}


def _rot(axis, deg):
    a = np.array({"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}.get(axis.strip(), None)
                 or [float(v) for v in axis.split()], float)
    a /= np.linalg.norm(a)
    t = math.radians(deg)
    k = np.array(((0, -a[2], a[1]), (a[2], 0, -a[0]), (-a[1], a[0], 0)))
    m = np.eye(4)
    m[:3, :3] = np.eye(3) + math.sin(t) * k + (1 - math.cos(t)) * k @ k
    return m


def _tr(el, unit):
    if el.tag == "translation":
        m = np.eye(4)
        m[:3, 3] = [float(el.get(c, 0)) * unit for c in "xyz"]
        return m
    return _rot(el.get("axis"), float(el.get("angle")))


def _find(name, here: Path):
    for d in (here, here / "robots", here / "objects", here.parent / "robots", here.parent / "objects"):
        if (d / f"{name}.xml").exists():
            return d / f"{name}.xml"
    raise FileNotFoundError(name)


def _drive(kind, q, unit):
    m = np.eye(4)
    if kind.startswith("prismatic"):
        m[:3, 3] = np.array({"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}[kind[-1]]) * q
        return m
    return _rot(kind[-1], math.degrees(q))


def xml_probes(path: Path, q: dict, prefix="", base=np.eye(4)):
    """World transform of each probe, composed directly from the XML; q in SI by joint name."""
    root = ET.parse(path).getroot()
    out = {}
    if root.tag == "project":
        for ref in root:
            b = np.eye(4)
            for el in ref.findall("base/*"):
                b = b @ _tr(el, UNITS[root.get("length_unit", "m")])
            out.update(xml_probes(_find(ref.get("name"), path.parent), q, ref.get("prefix", ""), b))
        return out
    unit = UNITS[root.get("length_unit", "m")]

    def walk(el, frame, pre):
        for child in el:
            if child.tag == "probe":
                t = frame
                for tr in child:
                    t = t @ _tr(tr, unit)
                out[pre + child.get("name")] = t
            elif child.tag == "object":
                b = np.eye(4)
                for tr in child.findall("base/*"):
                    b = b @ _tr(tr, unit)
                sub = ET.parse(_find(child.get("name"), Path(path).parent)).getroot()
                nonlocal_unit = UNITS[sub.get("length_unit", "m")]
                out.update(_object(sub, frame @ b, pre + child.get("prefix", ""), nonlocal_unit))
            elif child.tag == "joint":
                t, seen_drive = frame, False
                name = pre + child.get("name")
                for el2 in child:
                    if el2.tag in ("translation", "rotation"):
                        t = t @ _tr(el2, unit)
                    elif el2.tag == "drive":
                        kind = el2.get("type")
                        if kind == "spherical":
                            for ax in "xyz":
                                t = t @ _rot(ax, math.degrees(q.get(f"{name}_{ax}", 0.0)))
                        elif kind != "fixed":
                            t = t @ _drive(kind, q.get(name, 0.0), unit)
                        seen_drive = True
                    elif el2.tag == "link":
                        break
                assert seen_drive
                walk(child, t, pre)

    def _object(sub, frame, pre, u):
        nonlocal unit
        saved, unit = unit, u
        before = dict(out)
        walk(sub, frame, pre)
        unit = saved
        return {k: v for k, v in out.items() if k not in before or before[k] is not v}

    walk(root, base, prefix)
    return out


def urdf_frames(urdf_path: Path, q: dict):
    robot = yourdfpy.URDF.load(str(urdf_path), build_scene_graph=True, load_meshes=False)
    cfg = [q.get(j, 0.0) for j in robot.actuated_joint_names]
    robot.update_cfg(cfg)
    return robot, {name: robot.get_transform(name) for name in robot.link_map}


def planar(x, y, yaw):
    m = _rot("z", math.degrees(yaw))
    m[:2, 3] = x, y
    return m


def random_joints(mech, rng):
    return {j.name: float(rng.uniform(-1, 1)) * (0.05 if j.type == "prismatic" else 1.0)
            for j in mech.joints if j.type != "fixed"}


# ------------------------------------------------------------------------------------------
# Robotino
# ------------------------------------------------------------------------------------------
def test_robotino_joints_match_dynamics_model():
    from bondsim_ros.robots.robotino.model import JOINT_NAMES

    mech = load_mechanism(ROBOT)
    assert [j.name for j in mech.joints] == list(JOINT_NAMES)
    project = load_mechanism(PROJECT)
    assert [j.name for j in project.joints] == list(JOINT_NAMES)
    joints = {j.name: j for j in mech.joints}
    assert [j.virtual for j in mech.joints[:3]] == [True] * 3 and not any(j.virtual for j in mech.joints[3:])
    assert (joints["base_x"].type, joints["base_x"].axis) == ("prismatic", (1.0, 0.0, 0.0))
    assert (joints["base_y"].type, joints["base_y"].axis) == ("prismatic", (0.0, 1.0, 0.0))
    assert (joints["base_phi"].type, joints["base_phi"].axis) == ("revolute", (0.0, 0.0, 1.0))
    for i in (1, 2, 3):
        assert joints[f"wheel{i}_axle"].axis == (1.0, 0.0, 0.0)
        for j in range(1, 7):
            assert joints[f"wheel{i}_roller{j}"].axis == (0.0, 1.0, 0.0)
    assert [p.name for p in mech.probes] == ["base_center"]


def test_robotino_wheel_frames_follow_the_dynamics_conventions():
    from bondsim_ros.robots.robotino.model import ALPHA, contact_roller

    mech = load_mechanism(PROJECT)
    world = forward_kinematics(mech)
    lift = world["base_link"][2, 3]
    for i, alpha in enumerate(ALPHA, start=1):
        w = world[f"wheel{i}_link"]
        rel = np.linalg.inv(world["base_link"]) @ w
        assert np.allclose(rel[:2, 3], 0.125 * np.array([math.cos(alpha), math.sin(alpha)]), atol=1e-12)
        assert np.allclose(rel[:3, 0], [math.cos(alpha), math.sin(alpha), 0], atol=1e-12)  # x radially outward
        assert w[2, 3] == pytest.approx(0.04)  # axle at wheel-radius height: wheels touch z = 0
        # roller 1 at the bottom at axle angle 0; alternating rows
        r1 = np.linalg.inv(w) @ world[f"wheel{i}_roller1_link"]
        assert np.allclose(r1[1:3, 3], [0, -(0.04 - 0.0125)], atol=1e-12)
        offs = [(np.linalg.inv(w) @ world[f"wheel{i}_roller{j}_link"])[0, 3] for j in range(1, 7)]
        assert offs == pytest.approx([0.008, -0.008] * 3)
        # the lowest roller at axle angle theta is the dynamics model's contact roller
        for theta in (0.0, 0.4, 1.3, 2.5, -0.7, 3.0):
            fk = forward_kinematics(mech, {f"wheel{i}_axle": theta})
            lowest = min(range(6), key=lambda j: fk[f"wheel{i}_roller{j + 1}_link"][2, 3])
            assert lowest == contact_roller(theta)
        # positive axle rotation moves the contact point +y relative to the hub: the hub rolls to -y
        fk = forward_kinematics(mech, {f"wheel{i}_axle": 1e-4})
        contact = fk[f"wheel{i}_link"] @ np.array([0, 0, -0.04, 1])
        local = np.linalg.inv(w) @ contact
        assert local[1] == pytest.approx(0.04 * 1e-4, rel=1e-6)
    assert lift == pytest.approx(0.015)


def test_robotino_urdf_wheels_touch_the_floor_and_mass(tmp_path):
    result = to_urdf(PROJECT, tmp_path / "robotino.urdf")
    assert result.initial_pose == (0.0, 0.0, 0.0)
    robot = yourdfpy.URDF.load(str(tmp_path / "robotino.urdf"))
    mesh = robot.scene.to_geometry()
    assert mesh.bounds[0, 2] == pytest.approx(0.0, abs=2e-4)  # wheels on the ground
    assert mesh.bounds[1, 2] == pytest.approx(0.21, abs=1e-3)  # datasheet height
    assert 2 * max(abs(mesh.bounds[:, :2]).max(axis=0)) == pytest.approx(0.37, abs=2e-3)  # diameter
    total = sum(link.inertial.mass for link in robot.robot.links if link.inertial is not None)
    assert total == pytest.approx(11.0, abs=0.3)  # datasheet: ~11 kg
    scene = yourdfpy.URDF.load(str(tmp_path / "robotino_scene.urdf")).scene.to_geometry()
    assert np.allclose(scene.bounds, [[-3.2, -3.2, -0.02], [3.2, 3.2, 0.3]], atol=1e-9)
    markers = json.loads((tmp_path / "robotino_scene_markers.json").read_text())
    assert markers["frame_id"] == "world" and len(markers["markers"]) == 5
    assert {m["type"] for m in markers["markers"]} == {"cube"}


@pytest.mark.parametrize("keep_virtual", [False, True])
def test_robotino_probe_fk_matches_xml_chain(tmp_path, keep_virtual):
    rng = np.random.default_rng(3)
    mech = load_mechanism(PROJECT)
    out = tmp_path / "r.urdf"
    to_urdf(PROJECT, out, keep_virtual=keep_virtual)
    for _ in range(3):
        q = random_joints(mech, rng)
        expected = xml_probes(PROJECT, q)
        robot, frames = urdf_frames(out, q)
        base = np.eye(4) if keep_virtual else planar(q["base_x"], q["base_y"], q["base_phi"])
        assert np.allclose(base @ frames["probe_base_center"], expected["base_center"], atol=1e-9)
        # every link, not only the probe, agrees with the converter's own forward kinematics
        fk = forward_kinematics(mech, q)
        for name in ("wheel2_roller5_link", "wheel3_link", "base_link"):
            assert np.allclose(base @ frames[name], fk[name], atol=1e-9)
    if not keep_virtual:
        assert robot.base_link == "base_footprint"
        assert "base_x" not in robot.joint_map
    else:
        assert robot.base_link == "world"
        assert robot.actuated_joint_names[:3] == ["base_x", "base_y", "base_phi"]


def test_probe_kinematics_for_the_ros_layer():
    kin = ProbeKinematics.from_file(share_file("urdf", "robotino", "Robotino_project.xml"), prefix="r2/")
    assert kin.probe_names == ["base_center"]
    assert np.allclose(kin.base_offsets()["base_center"], [0, 0, 0.015])
    pose = (1.5, -0.3, 2.0)
    pts = kin.probe_points(pose, {"r2/wheel1_axle": 0.3})
    assert np.allclose(pts["base_center"], [1.5, -0.3, 0.015])
    # probes on moving links: the test robot, against the direct XML chain
    rng = np.random.default_rng(0)
    arm = DATA / "robots" / "Arm.xml"
    mech = load_mechanism(arm)
    kin = ProbeKinematics(mech, prefix="p/")
    assert kin.probe_names == ["foot", "tcp", "tool_finger_tip", "side_point", "bulb"]
    assert set(kin.base_offsets()) == {"foot"}
    for _ in range(3):
        q = random_joints(mech, rng)
        pts = kin.probe_points((0.0, 0.0, 0.0), {"p/" + k: v for k, v in q.items()})
        expected = xml_probes(arm, q)
        for name in kin.probe_names:
            assert np.allclose(pts[name], expected[name][:3, 3], atol=1e-12), name


# ------------------------------------------------------------------------------------------
# Every element and attribute
# ------------------------------------------------------------------------------------------
def test_every_element_converts(tmp_path):
    project = DATA / "full_project.xml"
    result = to_urdf(project, tmp_path / "ws.urdf")
    names = [j.name for j in result.joints]
    per_robot = ["turn", "slide", "wrist_x", "wrist_y", "wrist_z", "clamp", "tool_finger", "side", "side2", "lamp",
                 "lamp_head"]
    assert names == [f"a1_{n}" for n in per_robot] + [f"a2_{n}" for n in per_robot]  # document order
    joints = {j.name: j for j in result.joints}
    turn = joints["a1_turn"]
    assert (turn.type, turn.axis) == ("revolute", (0.0, 0.0, 1.0))
    assert turn.lower == pytest.approx(-math.pi / 2) and turn.upper == pytest.approx(math.pi / 2)
    assert turn.velocity == pytest.approx(math.pi) and turn.effort == 12
    slide = joints["a1_slide"]
    assert (slide.type, slide.lower, slide.upper, slide.velocity) == ("prismatic", 0.0, pytest.approx(0.1),
                                                                      pytest.approx(0.05))
    assert [joints[f"a1_wrist_{a}"].axis for a in "xyz"] == [(1, 0, 0), (0, 1, 0), (0, 0, 1)]
    assert joints["a1_wrist_y"].parent == "a1_wrist_x_link" and joints["a1_wrist_z"].child == "a1_wrist_frame"
    assert joints["a1_clamp"].type == "fixed" and joints["a1_side"].virtual and not joints["a1_side2"].virtual
    assert [(joints[n].type, joints[n].axis) for n in ("a1_side", "a1_side2", "a1_lamp", "a1_lamp_head")] == [
        ("prismatic", (1, 0, 0)), ("prismatic", (0, 1, 0)), ("revolute", (1, 0, 0)), ("revolute", (0, 1, 0))]
    assert [p.frame for p in result.probes][:5] == ["a1_probe_foot", "a1_probe_tcp", "a1_tool_probe_finger_tip",
                                                    "a1_probe_side_point", "a1_probe_bulb"]
    files = {Path(f).name for f in result.files}
    assert {"ws_a1_Arm.urdf", "ws_a2_Arm.urdf", "ws_scene.urdf", "ws_scene_markers.json", "Arm_tip.stl",
            "Arm_knob.stl", "Arm_tetra.stl", "Box_pylon.stl"} == files

    robot = yourdfpy.URDF.load(str(tmp_path / "ws_a1_Arm.urdf"))
    links = robot.link_map
    geoms = {v.name: v for link in links.values() for v in link.visuals}
    assert np.allclose(geoms["pedestal"].geometry.box.size, [0.2, 0.2, 0.05])
    assert geoms["pedestal"].material.color.rgba == pytest.approx([70 / 255, 130 / 255, 180 / 255, 1])  # steelblue
    assert geoms["col"].geometry.cylinder.radius == pytest.approx(0.03)
    assert geoms["col"].geometry.cylinder.length == pytest.approx(0.3)
    assert geoms["col"].material.color.rgba == pytest.approx([0.2, 0.4, 0.6, 1])  # colour of the outer assembly
    assert geoms["tip"].material.color.rgba == pytest.approx([1, 0, 0, 0.5])  # the innermost render wins
    assert geoms["ball"].geometry.sphere.radius == pytest.approx(0.025)
    assert geoms["tetra"].geometry.mesh.scale == pytest.approx([0.002] * 3)  # scale x length unit
    assert geoms["knob"].geometry.mesh.filename == "ws/meshes/Arm_knob.stl"
    # the assembly places the column: rotated 30 deg, raised by 150 mm
    col = geoms["col"].origin
    assert np.allclose(col[:3, 3], [0, 0, 0.15]) and np.allclose(col[:3, :3], _rot("z", 30)[:3, :3])
    assert np.allclose(geoms["tip"].origin[:3, 3], [0, 0, 0.32])  # cone along y: base at the frame
    assert np.allclose(geoms["tip"].origin[:3, 2], [0, 1, 0])
    # collision: every item, rendered or not; inertia from the shapes
    assert len(links["a1_column"].collisions) == 2
    assert links["a1_column"].inertial.mass == pytest.approx(1.6)
    assert links["a1_Arm"].inertial.mass == pytest.approx(2.0)
    ped = links["a1_Arm"].inertial.inertia
    assert ped[0, 0] == pytest.approx(2 / 12 * (0.2 ** 2 + 0.05 ** 2))
    hand = links["a1_hand"].inertial
    assert hand.mass == pytest.approx(0.07)
    assert links["a1_tool_Tool"].visuals[0].material.color.rgba == pytest.approx([0.5, 0.5, 0.5, 1])
    assert links["a1_tool_finger_link"].visuals[0].geometry.cylinder.length == pytest.approx(0.03)  # cm
    assert robot.joint_map["a1_turn"].limit.effort == 12
    assert robot.joint_map["a1_lamp"].type == "continuous"
    assert robot.joint_map["a1_wrist_offset"].type == "fixed"
    # generated meshes load and have the right size
    knob = robot.scene.geometry  # noqa: F841 - loading resolves the relative mesh paths
    import trimesh

    cone = trimesh.load(tmp_path / "ws" / "meshes" / "Arm_tip.stl")
    assert np.allclose(cone.bounds, [[-0.02, -0.02, 0], [0.02, 0.02, 0.04]], atol=1e-9)
    tetra = trimesh.load(tmp_path / "ws" / "meshes" / "Arm_tetra.stl")
    assert np.allclose(tetra.bounds, [[0, 0, 0], [10, 10, 10]])

    scene = yourdfpy.URDF.load(str(tmp_path / "ws_scene.urdf"))
    assert scene.base_link == "world"
    assert np.allclose(scene.get_transform("Box")[:3, 3], [-1, 0, 0])
    markers = json.loads((tmp_path / "ws_scene_markers.json").read_text())["markers"]
    assert [m["type"] for m in markers] == ["cube", "mesh"]
    assert markers[0]["position"] == pytest.approx([-1, 0, 0.15]) and markers[0]["scale"] == [0.5, 0.4, 0.3]
    assert markers[1]["mesh"] == "ws/meshes/Box_pylon.stl" and (tmp_path / markers[1]["mesh"]).exists()


def test_every_probe_frame_matches_the_xml_chain(tmp_path):
    project = DATA / "full_project.xml"
    mech = load_mechanism(project)
    to_urdf(project, tmp_path / "ws.urdf")
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = random_joints(mech, rng)
        expected = xml_probes(project, q)
        for prefix in ("a1_", "a2_"):
            _, frames = urdf_frames(tmp_path / f"ws_{prefix}Arm.urdf", q)
            for p in mech.probes:
                if p.prefix.startswith(prefix):
                    key = p.prefix + p.name
                    assert np.allclose(frames[p.frame], expected[key], atol=1e-9), key
        fk = forward_kinematics(mech, q)
        for p in mech.probes:
            assert np.allclose(fk[p.frame], expected[p.prefix + p.name], atol=1e-9)


def test_planar_base_lift_and_initial_pose(tmp_path):
    (tmp_path / "robots").mkdir()
    shutil.copy(ROBOT, tmp_path / "robots" / "Robotino.xml")
    shutil.copytree(ROBOTINO / "objects", tmp_path / "objects")
    (tmp_path / "p.xml").write_text("""<project id="p" name="P">
  <robot name="Robotino" prefix="r1/"><base><translation x="1" y="2" z="0.015"/><rotation axis="z" angle="90"/>
  </base></robot>
  <robot name="Robotino" prefix="r2/"/>
</project>""")
    result = to_urdf(tmp_path / "p.xml", tmp_path / "out" / "two.urdf")
    assert result.robots[0]["initial_pose"] == pytest.approx((1, 2, math.pi / 2))
    assert result.robots[1]["initial_pose"] == (0.0, 0.0, 0.0)
    robot = yourdfpy.URDF.load(result.robots[0]["urdf"])
    assert robot.base_link == "r1/base_footprint"
    assert np.allclose(robot.get_transform("r1/base_link")[:3, 3], [0, 0, 0.015])
    assert [j.name for j in result.joints][:3] == ["r1/base_x", "r1/base_y", "r1/base_phi"]


# ------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------
GOOD = """<robot id="r" name="R">
  <joint name="j1">
    <drive type="revolute_z"/>
    <link id="l1" name="link1"/>
    <cuboid id="c1" lx="1" ly="1" lz="1"/>
    <render ref="c1" color="red"/>
  </joint>
</robot>
"""
ERRORS = [  # (replace, by, message fragment, element, line)
    ("<render ref", "<paint ref", "unknown element", "paint", 6),
    ('lz="1"/>', 'lz="1" density="3"/>', "unknown attribute 'density'", "cuboid", 5),
    ('<joint name="j1">', "<joint>", "missing required attribute 'name'", "joint", 2),
    ('<render ref="c1"', '<cuboid id="c1" lx="1" ly="1" lz="1"/><render ref="c1"', "duplicate id 'c1'", "cuboid", 6),
    ('<render ref="c1"', '<render ref="c9"', "unresolved ref 'c9'", "render", 6),
    ('lx="1"', 'lx="1,5"', "bad number '1,5'", "cuboid", 5),
    ('color="red"', 'color="redish"', "unknown colour 'redish'", "render", 6),
    ("revolute_z", "revolut_z", "unknown type 'revolut_z' (expected one of prismatic_x", "drive", 3),
]


@pytest.mark.parametrize("old,new,fragment,element,line", ERRORS)
def test_errors_name_file_line_element_and_write_nothing(tmp_path, old, new, fragment, element, line):
    src = tmp_path / "Bad.xml"
    assert old in GOOD
    src.write_text(GOOD.replace(old, new, 1))
    out = tmp_path / "out"
    with pytest.raises(MechanismError) as err:
        to_urdf(src, out / "bad.urdf")
    exc = err.value
    assert fragment in str(exc)
    assert (exc.file, exc.line, exc.element) == (str(src), line, element)
    assert str(exc).startswith(f"{src}:{line}: <{element}>:")  # the path as given
    assert not out.exists()


def test_good_base_document_converts(tmp_path):
    src = tmp_path / "Good.xml"
    src.write_text(GOOD)
    assert Path(to_urdf(src, tmp_path / "g.urdf").files[0]).exists()


def test_unresolved_file_and_reference_cycle(tmp_path):
    (tmp_path / "P.xml").write_text('<project id="p" name="P">\n  <robot name="Nowhere"/>\n</project>\n')
    with pytest.raises(MechanismError) as err:
        load_mechanism(tmp_path / "P.xml")
    assert (err.value.line, err.value.element) == (2, "robot") and "no file Nowhere.xml" in str(err.value)
    (tmp_path / "A.xml").write_text('<object id="a" name="A">\n<joint name="j"><drive type="fixed"/>'
                                    '<link id="l" name="la"/>\n<object name="B"/></joint></object>\n')
    (tmp_path / "B.xml").write_text('<object id="b" name="B">\n<joint name="k"><drive type="fixed"/>'
                                    '<link id="l" name="lb"/>\n\n<object name="A"/></joint></object>\n')
    with pytest.raises(MechanismError) as err:
        to_urdf(tmp_path / "A.xml", tmp_path / "out" / "a.urdf")
    assert "reference cycle: A.xml -> B.xml -> A.xml" in str(err.value)
    assert (Path(err.value.file).name, err.value.line, err.value.element) == ("B.xml", 4, "object")
    assert not (tmp_path / "out").exists()
    # a part file that does not exist
    (tmp_path / "C.xml").write_text('<object id="c" name="C">\n  <part id="p" file="missing.stl"/>\n</object>\n')
    with pytest.raises(MechanismError, match=r"C.xml:2: <part>: cannot resolve part file"):
        load_mechanism(tmp_path / "C.xml")
    # an assembly cycle
    (tmp_path / "D.xml").write_text('<object id="d" name="D">\n<assembly id="a1"><use ref="a2"/></assembly>\n'
                                    '<assembly id="a2">\n<use ref="a1"/></assembly>\n</object>\n')
    with pytest.raises(MechanismError, match=r"reference cycle: a\d -> a\d -> a\d"):
        load_mechanism(tmp_path / "D.xml")


@pytest.mark.parametrize("doc,line", [
    ('<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n <!ENTITY lol2 "&lol;&lol;&lol;&lol;">\n'
     ' <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;">\n]>\n<robot id="r" name="&lol3;"/>\n', 2),
    ('<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
     '<robot id="r" name="&xxe;"/>\n', 2),
])
def test_entities_are_refused(tmp_path, doc, line):
    src = tmp_path / "Evil.xml"
    src.write_text(doc)
    with pytest.raises(MechanismError, match="DTDs and entities are not allowed") as err:
        to_urdf(src, tmp_path / "out" / "e.urdf")
    assert err.value.line == line
    assert not (tmp_path / "out").exists()


def test_structure_errors(tmp_path):
    cases = [
        ('<robot id="r" name="R"><joint name="j"><link id="l" name="l"/></joint></robot>', "must follow the joint's"),
        ('<robot id="r" name="R"><joint name="j"><drive type="fixed"/></joint></robot>', "missing <link"),
        ('<robot id="r" name="R"><joint name="j"><drive type="fixed"/><link id="l" name="l"/>'
         '<translation x="1"/></joint></robot>', "transforms must come before"),
        ('<robot id="r" name="R" length_unit="inch"/>', "bad length_unit"),
        ('<robot id="r" name="R"><revolution id="v"><point r="1" h="0"/></revolution></robot>', "at least 2"),
        ('<robot id="r" name="R"><rotation axis="q" angle="3"/></robot>', "unknown element in the root"),
        ('<robot id="r" name="R"><sphere id="s" radius="-1"/></robot>', "expected a number > 0"),
        ('<robot id="r" name="R"><joint name="j"><drive type="fixed" virtual="yes"/>'
         '<link id="l" name="l"/></joint></robot>', "expected true or false"),
        ('<robot id="r" name="R"><joint name="j"><drive type="fixed"/><link id="l" name="l"/></joint>'
         '<joint name="j"><drive type="fixed"/><link id="m" name="m"/></joint></robot>', "duplicate joint name"),
        ('<robot id="r" name="R"><joint name="j"><drive type="fixed"/><link id="l" name="l"/></joint>'
         '<cuboid id="c" lx="1" ly="1" lz="1"/></robot>', "before any <joint>"),
        ('<robot id="r" name="R"><render ref="c" color="1 0 2"/><cuboid id="c" lx="1" ly="1" lz="1"/></robot>',
         "unknown colour"),
        ('<robot id="r" name="R">', "malformed XML"),
    ]
    for doc, fragment in cases:
        src = tmp_path / "S.xml"
        src.write_text(doc)
        with pytest.raises(MechanismError) as err:
            load_mechanism(src)
        assert fragment in str(err.value), (doc, str(err.value))
        assert err.value.line is not None and err.value.file == str(src)


# ------------------------------------------------------------------------------------------
# Committed outputs, tools, CLI
# ------------------------------------------------------------------------------------------
def test_committed_urdf_and_xacro_are_up_to_date(tmp_path):
    to_urdf(PROJECT, tmp_path / "robotino.urdf.xacro", xacro=True, mesh_uri="package://bondsim_ros/urdf/")
    assert (tmp_path / "robotino.urdf.xacro").read_bytes() == (ROOT / "urdf" / "robotino.urdf.xacro").read_bytes()
    result = to_urdf(PROJECT, tmp_path / "robotino.urdf")
    for f in result.files:
        rel = Path(f).relative_to(tmp_path)
        assert Path(f).read_bytes() == (ROOT / "urdf" / rel).read_bytes(), rel


def test_xacro_expands_with_prefix(tmp_path):
    xacro = pytest.importorskip("xacro")
    doc = xacro.process_file(str(ROOT / "urdf" / "robotino.urdf.xacro"),
                             mappings={"prefix": "r7/", "mesh_uri": "./"}).toxml()
    out = tmp_path / "x.urdf"
    out.write_text(doc)
    shutil.copytree(ROOT / "urdf" / "robotino" / "meshes", tmp_path / "robotino" / "meshes")
    robot = yourdfpy.URDF.load(str(out))
    assert robot.base_link == "r7/base_footprint"
    assert robot.actuated_joint_names[0] == "r7/wheel1_axle" and len(robot.actuated_joint_names) == 21


@pytest.mark.skipif(shutil.which("check_urdf") is None, reason="check_urdf (liburdfdom-tools) not installed")
def test_check_urdf_accepts_outputs(tmp_path):
    result = to_urdf(DATA / "full_project.xml", tmp_path / "ws.urdf")
    urdfs = [f for f in result.files if f.endswith(".urdf")] + [str(ROOT / "urdf" / "robotino.urdf"),
                                                                str(ROOT / "urdf" / "robotino_scene.urdf")]
    for f in urdfs:
        proc = subprocess.run(["check_urdf", f], capture_output=True, text=True)
        assert proc.returncode == 0 and "Successfully Parsed XML" in proc.stdout, proc.stdout + proc.stderr


def test_cli_xml2urdf(tmp_path, capsys):
    from bondsim_ros.cli import main

    out = tmp_path / "r.urdf"
    assert main(["xml2urdf", str(ROBOT), "-o", str(out), "--keep-virtual"]) == 0
    assert out.exists() and "base_x" in out.read_text()
    bad = tmp_path / "Bad.xml"
    bad.write_text(GOOD.replace("revolute_z", "revolut_z"))
    (tmp_path / "b").mkdir()
    assert main(["xml2urdf", str(bad), "-o", str(tmp_path / "b" / "b.urdf")]) == 2
    err = capsys.readouterr().err
    assert "Bad.xml:3: <drive>: unknown type 'revolut_z'" in err
    assert not list((tmp_path / "b").iterdir())
    # --search-path finds a referenced file elsewhere
    (tmp_path / "lib").mkdir()
    shutil.copy(DATA / "objects" / "Box.xml", tmp_path / "lib" / "Box.xml")
    (tmp_path / "P.xml").write_text('<project id="p" name="P"><object name="Box"/></project>')
    assert main(["xml2urdf", str(tmp_path / "P.xml"), "-o", str(tmp_path / "p.urdf"), "--search-path",
                 str(tmp_path / "lib"), "-q"]) == 0
    assert (tmp_path / "p_scene.urdf").exists()


def test_render_png_and_video(tmp_path):
    from PIL import Image

    from bondsim_ros.cli import main

    csv_path = tmp_path / "r.csv"
    csv_path.write_text("t,x,y,phi,wheel1_axle,wheel1_roller1,w1\n0,0,0,0,0,0,1\n0.1,0.3,0.1,0.5,1,0.2,1\n")
    png = tmp_path / "a.png"
    assert main(["render", str(PROJECT), "-o", str(png), "--size", "240x180", "-q"]) == 0
    still = np.asarray(Image.open(png))
    assert still.shape[:2] == (180, 240) and still.std() > 5  # something was drawn
    moved = tmp_path / "b.png"
    assert main(["render", str(ROOT / "urdf" / "robotino.urdf"), "--joints", str(csv_path), "--row", "1",
                 "-o", str(moved), "--size", "240x180", "-q"]) == 0
    assert np.asarray(Image.open(moved)).shape[:2] == (180, 240)
    gif = tmp_path / "c.gif"
    assert main(["render", str(PROJECT), "--joints", str(csv_path), "-o", str(gif), "--size", "160x120", "-q"]) == 0
    assert Image.open(gif).n_frames == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("t,speed\n0,1\n")
    assert main(["render", str(PROJECT), "--joints", str(bad), "-o", str(tmp_path / "d.png"), "-q"]) == 2
