"""Mechanism input the converter must refuse by name and line rather than turn into a wrong
URDF or a traceback: names the converter makes itself, reserved names, outlines that cross
themselves, meshes too small or inside out, shapes too small to draw."""
from __future__ import annotations

from pathlib import Path

import pytest

from bondsim_ros.cli import main


@pytest.fixture
def here(tmp_path, monkeypatch):
    """tmp_path as the current directory: files are given by their relative names; the output
    folders out, out2 and out3 exist (a command makes none)."""
    monkeypatch.chdir(tmp_path)
    for name in ("out", "out2", "out3"):
        (tmp_path / name).mkdir()
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def refused(capsys, argv, *fragments, nothing=None) -> str:
    """Run the CLI: exit 2, one clean error line holding every fragment, no traceback, and
    nothing written at ``nothing`` (no such path, or a folder left empty)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Warning" not in err, err
    assert err.startswith(f"bondsim-ros {argv[0]}: error: "), err
    assert err.count("\n") == 1, err
    for f in fragments:
        assert f in err, err
    if nothing is not None:
        nothing = Path(nothing)
        assert not nothing.exists() or nothing.is_dir() and not list(nothing.iterdir())
    return err


# ------------------------------------------------------------------------------------------
# Names the converter makes count as taken
# ------------------------------------------------------------------------------------------
CLASHES = [  # (body of the robot, line, element, fragments)
    ('  <joint name="elbow">\n    <drive type="revolute_z"/>\n    <translation x="1"/>\n'
     '    <link id="l" name="elbow_frame"/>\n  </joint>\n', 5, "link", ("'elbow_frame'", "joint 'elbow'")),
    ('  <joint name="elbow">\n    <drive type="revolute_z"/>\n    <translation x="1"/>\n'
     '    <link id="l" name="forearm"/>\n  </joint>\n'
     '  <joint name="elbow_offset"><drive type="revolute_x"/><link id="m" name="hand"/></joint>\n',
     7, "joint", ("'elbow_offset'", "joint 'elbow'")),
    ('  <joint name="wrist"><drive type="spherical"/><link id="l" name="hand"/>\n'
     '    <joint name="k"><drive type="fixed"/><link id="m" name="wrist_y_link"/></joint>\n  </joint>\n',
     3, "link", ("'wrist_y_link'", "spherical joint 'wrist'")),
    ('  <joint name="wrist_z"><drive type="revolute_x"/><link id="m" name="hand"/></joint>\n'
     '  <joint name="wrist"><drive type="spherical"/><link id="l" name="palm"/></joint>\n',
     2, "joint", ("'wrist_z'", "spherical joint 'wrist'")),
]


@pytest.mark.parametrize("body,line,element,fragments", CLASHES)
def test_names_the_converter_makes_are_taken(here, capsys, body, line, element, fragments):
    write(here / "arm.xml", f'<robot id="r" name="Arm">\n{body}</robot>\n')
    refused(capsys, ["xml2urdf", "arm.xml", "-o", "out/arm.urdf"], f"arm.xml:{line}: <{element}>: duplicate",
            "the converter's", *fragments, nothing="out")


# ------------------------------------------------------------------------------------------
# Names reserved for a planar base
# ------------------------------------------------------------------------------------------
PLANAR = """<robot id="r" name="R">
  <joint name="base_x"><drive type="prismatic_x" virtual="true"/><link id="a" name="ax"/>
  <joint name="base_y"><drive type="prismatic_y" virtual="true"/><link id="b" name="ay"/>
  <joint name="base_phi"><drive type="revolute_z" virtual="true"/><link id="c" name="base_link"/>
    <sphere id="s" radius="0.1"/>
    <joint name="{joint}"><drive type="revolute_z"/><link id="d" name="{link}"/></joint>
  </joint></joint></joint>
</robot>
"""


def test_joint_named_base_footprint_joint_is_reserved_on_a_planar_base(here, capsys):
    write(here / "R.xml", PLANAR.format(joint="base_footprint_joint", link="arm"))
    refused(capsys, ["xml2urdf", "R.xml", "-o", "out/r.urdf"],
            "R.xml:6: <joint>: joint name 'base_footprint_joint' is reserved for the planar base", nothing="out")
    # with a prefix, the prefixed name is the reserved one
    write(here / "P.xml", '<project id="p" name="P">\n  <robot name="R" prefix="r1_"/>\n</project>\n')
    write(here / "R.xml", PLANAR.format(joint="r1_base_footprint_joint", link="arm"))
    assert main(["xml2urdf", "P.xml", "-o", "out/p.urdf", "-q"]) == 0  # 'r1_r1_base_footprint_joint'
    write(here / "R.xml", PLANAR.format(joint="base_footprint_joint", link="arm"))
    refused(capsys, ["xml2urdf", "P.xml", "-o", "out2/p.urdf"], "R.xml:6: <joint>:",
            "'r1_base_footprint_joint' is reserved", nothing="out2")
    # kept virtual joints leave base_footprint out: the name is free
    assert main(["xml2urdf", "R.xml", "-o", "out3/r.urdf", "--keep-virtual", "-q"]) == 0
    assert 'joint name="base_footprint_joint"' in (here / "out3" / "r.urdf").read_text()


# ------------------------------------------------------------------------------------------
# A <revolution> outline that crosses itself
# ------------------------------------------------------------------------------------------
def revolution(points, mass="1", ident="a", unit="mm") -> str:
    pts = "".join(f'<point r="{r}" h="{h}"/>' for r, h in points)
    return (f'<robot id="r" name="B" length_unit="{unit}">\n'
            f'  <revolution id="{ident}" mass="{mass}">{pts}</revolution>\n  <render ref="{ident}" color="red"/>\n'
            f'</robot>\n')


@pytest.mark.parametrize("points,edges", [
    ([(0, 0), (50, 100), (50, 0), (0, 100)], ("edge 1-2 crosses edge 3-4",)),  # a bow tie: its lobes cancel
    ([(10, 0), (10, 10), (5, -5)], ("the cap from point 1 to the axis crosses edge 2-3",)),
    ([(10, 0), (20, 10), (20, 0), (10, 10), (10, 0)], ("edge 1-2 crosses edge 3-4",)),  # a closed ring
])
def test_revolution_outline_that_crosses_itself_is_refused(here, capsys, points, edges):
    write(here / "B.xml", revolution(points))
    refused(capsys, ["xml2urdf", "B.xml", "-o", "out/b.urdf"], "B.xml:2: <revolution>: the outline crosses itself",
            *edges, nothing="out")


def test_revolution_outline_drawn_either_way_or_along_the_axis_is_accepted(here):
    for points in ([(0, 0), (50, 0), (50, 100), (0, 100)], [(0, 100), (50, 100), (50, 0), (0, 0)],
                   [(0, 0), (0, 50), (50, 100), (0, 100)], [(0, 0), (50, 0), (50, 0), (50, 100), (0, 100)],
                   [(40, 0), (40, 100), (50, 100), (50, 0), (40, 0)]):
        write(here / "B.xml", revolution(points))
        assert main(["xml2urdf", "B.xml", "-o", "out/b.urdf", "-q"]) == 0, points


# ------------------------------------------------------------------------------------------
# Mass properties of small meshes
# ------------------------------------------------------------------------------------------
def urdf_inertial(path: Path) -> tuple:
    """(mass, com, diagonal of the inertia) of the first link with an <inertial>."""
    import xml.etree.ElementTree as ET

    inertial = ET.parse(path).getroot().find("link/inertial")
    com = [float(v) for v in inertial.find("origin").get("xyz").split()]
    i = inertial.find("inertia")
    return float(inertial.find("mass").get("value")), com, [float(i.get(k)) for k in ("ixx", "iyy", "izz")]


def test_small_body_of_revolution_has_the_inertia_of_its_cylinder(here):
    # a pin 0.6 mm across and 2 mm long: trimesh's mesh of it in metres was not watertight
    write(here / "B.xml", revolution([(0, 0), (0.3, 0), (0.3, 2), (0, 2)], mass="0.001", ident="pin"))
    assert main(["xml2urdf", "B.xml", "-o", "out/b.urdf", "-q"]) == 0
    mass, com, diag = urdf_inertial(here / "out" / "b.urdf")
    r, h, m = 0.3e-3, 2e-3, 0.001
    ixx = m * (3 * r * r + h * h) / 12
    assert mass == m and com == pytest.approx([0, 0, h / 2], abs=1e-12)
    assert diag == pytest.approx([ixx, ixx, m * r * r / 2], rel=0.01)  # 48 sections: 0.3 % below the circle


def test_small_cone_has_the_inertia_of_a_cone(here):
    write(here / "B.xml", '<robot id="r" name="B" length_unit="mm">\n'
          '  <cone id="c" radius="0.2" length="0.3" mass="0.002"/>\n</robot>\n')
    assert main(["xml2urdf", "B.xml", "-o", "out/b.urdf", "-q"]) == 0
    mass, com, diag = urdf_inertial(here / "out" / "b.urdf")
    r, h, m = 0.2e-3, 0.3e-3, 0.002
    ixx = 3 * m * r * r / 20 + 3 * m * h * h / 80  # about the centre of mass, h/4 above the base
    assert com == pytest.approx([0, 0, h / 4], abs=1e-12)
    assert diag == pytest.approx([ixx, ixx, 3 * m * r * r / 10], rel=0.01)


def test_part_drawn_tiny_in_its_file_has_the_inertia_of_its_box(here):
    import trimesh

    from bondsim_ros.mechanism.geometry import stl_bytes

    box = trimesh.creation.box(extents=(2.0, 3.0, 4.0))
    box.vertices = box.vertices * 1e-9  # a box a few nanometres across in the file's numbers
    (here / "tiny.stl").write_bytes(stl_bytes(box))
    write(here / "B.xml", '<robot id="r" name="B">\n'
          '  <part id="p" file="tiny.stl" scale="1e6" mass="3"/>\n</robot>\n')  # 2 x 3 x 4 mm
    assert main(["xml2urdf", "B.xml", "-o", "out/b.urdf", "-q"]) == 0
    mass, com, diag = urdf_inertial(here / "out" / "b.urdf")
    a, b, c = 2e-3, 3e-3, 4e-3
    assert diag == pytest.approx([3 / 12 * (b * b + c * c), 3 / 12 * (a * a + c * c), 3 / 12 * (a * a + b * b)],
                                 rel=1e-5)


# ------------------------------------------------------------------------------------------
# render: shapes too small to draw, small mechanisms
# ------------------------------------------------------------------------------------------
def one_shape(shape: str, joint: str = "") -> str:
    body = f'  {shape}\n  <render ref="c" color="red"/>\n'
    if joint:
        body = f'  <joint name="j">{joint}<drive type="prismatic_x"/><link id="l" name="L"/>\n{body}  </joint>\n'
    return f'<robot id="r" name="B">\n{body}</robot>\n'


@pytest.mark.parametrize("shape,joint,line", [
    ('<sphere id="c" radius="1e-20"/>', "", 2),
    ('<cone id="c" radius="1e-200" length="1e-200"/>', "", 2),
    ('<sphere id="c" radius="1e-9"/>', '<translation x="1e9"/>', 3),  # far out, and tiny
])
def test_render_refuses_a_shape_too_small_to_draw(here, capsys, shape, joint, line):
    import warnings

    write(here / "B.xml", one_shape(shape, joint))
    kind = shape.split()[0][1:]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing divides by zero on the way
        refused(capsys, ["render", "B.xml", "-o", "b.png"], f"B.xml:{line}: <{kind}> 'c' is ", "too small to draw",
                nothing="b.png")


def red_pixels(png) -> int:
    from PIL import Image
    import numpy as np

    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    return int(((img[:, :, 0] > 150) & (img[:, :, 1] < 90) & (img[:, :, 2] < 90)).sum())


def test_render_draws_a_small_mechanism_as_large_as_a_large_one(here):
    import warnings

    counts = []
    for radius in ("0.05", "1e-3", "1e-6"):
        write(here / "B.xml", one_shape(f'<sphere id="c" radius="{radius}"/>'))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert main(["render", "B.xml", "-o", f"b{radius}.png", "--size", "320x240", "-q"]) == 0
        counts.append(red_pixels(here / f"b{radius}.png"))
    assert counts[0] > 5000 and counts[1] == pytest.approx(counts[0], rel=0.05), counts  # not a dot
    assert counts[2] == pytest.approx(counts[0], rel=0.05), counts


# ------------------------------------------------------------------------------------------
# Parts: inside out, open; the location said once
# ------------------------------------------------------------------------------------------
def box_stl(path: Path, *, inverted=False, open_=False) -> None:
    import trimesh

    from bondsim_ros.mechanism.geometry import stl_bytes

    box = trimesh.creation.box(extents=(20.0, 30.0, 40.0))  # mm
    if inverted:
        box.invert()
    if open_:
        box = trimesh.Trimesh(box.vertices, box.faces[:-1], process=False)
    path.write_bytes(stl_bytes(box))


def test_part_wound_inside_out_is_the_same_solid(here):
    box_stl(here / "inv.stl", inverted=True)
    write(here / "B.xml", '<robot id="r" name="B" length_unit="mm">\n  <part id="p" file="inv.stl" mass="3"/>\n'
          '</robot>\n')
    assert main(["xml2urdf", "B.xml", "-o", "out/b.urdf", "-q"]) == 0
    _, _, diag = urdf_inertial(here / "out" / "b.urdf")
    a, b, c = 0.02, 0.03, 0.04
    assert diag == pytest.approx([3 / 12 * (b * b + c * c), 3 / 12 * (a * a + c * c), 3 / 12 * (a * a + b * b)],
                                 rel=1e-5)


def test_open_part_with_a_mass_is_refused_with_its_location_once(here, capsys):
    box_stl(here / "open.stl", open_=True)
    write(here / "B.xml", '<robot id="r" name="B" length_unit="mm">\n  <part id="p" file="open.stl" mass="3"/>\n'
          '</robot>\n')
    err = refused(capsys, ["xml2urdf", "B.xml", "-o", "out/b.urdf"],
                  "error: B.xml:2: <part>: 'p' has a mass but its mesh encloses no volume (it is not closed",
                  nothing="out")
    assert err.count("B.xml") == 1, err


# ------------------------------------------------------------------------------------------
# Errors stand at the offending element's own line
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,where", [
    ('<robot id="r" name="B">\n<joint name="B_base"><drive type="revolute_z"/><link id="l" name="L"/></joint>\n'
     '</robot>\n', "B.xml:2: <joint>: joint name 'B_base' is reserved"),
    ('<robot id="r" name="B">\n<joint name="j"><drive type="revolute_z"/>\n<link id="l" name="world"/></joint>\n'
     '</robot>\n', "B.xml:3: <link>: link name 'world' is reserved (the converter's world frame)"),
    ('<robot id="r" name="B">\n  <sphere id="s" radius="0.1"/> stray text\n'
     '  <joint name="j"><drive type="revolute_z"/><link id="l" name="L"/></joint>\n</robot>\n',
     "B.xml:2: <sphere>: unexpected text 'stray text' after <sphere>"),
    ('<robot id="r" name="B">\n  <sphere id="s" radius="0.1">\n\n    hello</sphere>\n</robot>\n',
     "B.xml:4: <sphere>: unexpected text 'hello' inside <sphere>"),
    (PLANAR.format(joint="j", link="base_footprint"),
     "B.xml:6: <link>: link name 'base_footprint' is reserved for the planar base"),
])
def test_errors_name_the_offending_elements_own_line(here, capsys, text, where):
    write(here / "B.xml", text)
    err = refused(capsys, ["xml2urdf", "B.xml", "-o", "out/b.urdf"], where, nothing="out")
    assert "prefix" not in err  # advice for references, which a single file has none of


# ------------------------------------------------------------------------------------------
# Errors in referenced files name them by a path an editor opens
# ------------------------------------------------------------------------------------------
WHEEL_BAD = '<object id="w" name="Wheel">\n\n  <sphere id="s" radius="-1"/>\n</object>\n'
CART = ('<robot id="c" name="Cart">\n  <joint name="axle"><drive type="revolute_y"/><link id="l" name="hub"/>\n'
        '    <object name="Wheel"/>\n  </joint>\n</robot>\n')


def test_error_in_a_referenced_file_names_its_path_from_the_current_folder(here, capsys):
    write(here / "proj" / "P.xml", '<project id="p" name="P">\n  <robot name="Cart"/>\n</project>\n')
    write(here / "proj" / "robots" / "Cart.xml", CART)
    write(here / "proj" / "objects" / "Wheel.xml", WHEEL_BAD)
    wheel = Path("proj", "objects", "Wheel.xml")
    refused(capsys, ["xml2urdf", "proj/P.xml", "-o", "out/p.urdf"], f"error: {wheel}:3: <sphere>: bad number",
            nothing="out")
    # the top file as given (absolute here); the referenced one still from the current folder
    refused(capsys, ["xml2urdf", str(here / "proj" / "robots" / "Cart.xml"), "-o", "out/c.urdf"],
            f"error: {wheel}:3: <sphere>", nothing="out")
    write(here / "proj" / "robots" / "Cart.xml", CART.replace('name="hub"', 'name="hub" bad="1"'))
    refused(capsys, ["xml2urdf", str(here / "proj" / "P.xml"), "-o", "out/p.urdf"],
            f"error: {Path('proj', 'robots', 'Cart.xml')}:2: <link>: unknown attribute 'bad'", nothing="out")
    write(here / "proj" / "P.xml", '<project id="p" name="P">\n  <robot name="Cart" bad="1"/>\n</project>\n')
    refused(capsys, ["xml2urdf", str(here / "proj" / "P.xml"), "-o", "out/p.urdf"],
            f"error: {here / 'proj' / 'P.xml'}:2: <robot>: unknown attribute 'bad'", nothing="out")


def test_error_in_a_referenced_file_outside_the_current_folder_names_its_absolute_path(here, capsys, monkeypatch):
    write(here / "proj" / "P.xml", '<project id="p" name="P">\n  <robot name="Cart"/>\n</project>\n')
    write(here / "proj" / "robots" / "Cart.xml", CART)
    write(here / "proj" / "objects" / "Wheel.xml", WHEEL_BAD)
    (here / "elsewhere" / "out").mkdir(parents=True)
    monkeypatch.chdir(here / "elsewhere")
    refused(capsys, ["xml2urdf", "../proj/P.xml", "-o", "out/p.urdf"],
            f"error: {here / 'proj' / 'objects' / 'Wheel.xml'}:3: <sphere>", nothing="out")


# ------------------------------------------------------------------------------------------
# A project's name is a name like the others
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["My World", "tab\tname", ""])
def test_project_name_with_white_space_is_refused(here, capsys, name):
    write(here / "robots" / "Cart.xml", '<robot id="c" name="Cart"/>\n')
    write(here / "P.xml", f'<project id="p"\n  name="{name}">\n  <robot name="Cart"/>\n</project>\n')
    refused(capsys, ["xml2urdf", "P.xml", "-o", "out/p.urdf"], "P.xml:1: <project>: bad name",
            "(a name must be non-empty and contain no white space)", nothing="out")


@pytest.mark.parametrize("where, given", [("proj/robots", "Cart.xml"), ("proj/robots/sub", "../Cart.xml")])
def test_a_file_given_from_its_own_folder_finds_the_objects_beside_it(here, capsys, monkeypatch, where, given):
    """The search looks in ../objects beside the referencing file's folder: given as Cart.xml from
    proj/robots (or as ../Cart.xml from below it), that folder is "." or "..", whose parent
    pathlib takes to be ".", so proj/objects/Wheel.xml was not found."""
    write(here / "proj" / "robots" / "Cart.xml", CART)
    write(here / "proj" / "objects" / "Wheel.xml", WHEEL_BAD.replace("-1", "0.05"))
    (here / where).mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(here / where)
    assert main(["xml2urdf", given, "-o", "c.urdf", "-q"]) == 0, capsys.readouterr().err
    assert "hub" in (here / where / "c.urdf").read_text()


def test_a_tiny_part_keeps_its_mass_and_inertia_in_the_urdf(here, capsys):
    """A 0.1 mm ball of 1 mg: I = 2/5 m r^2 = 4e-15 kg m^2, which the URDF wrote as 0 (every
    number below 1e-12 was taken for round-off), an inertia a simulator refuses or divides by."""
    write(here / "B.xml", '<robot id="r" name="B" length_unit="mm">\n'
                          '  <sphere id="s" radius="0.1" mass="1e-6"/>\n</robot>\n')
    assert main(["xml2urdf", "B.xml", "-o", "b.urdf", "-q"]) == 0, capsys.readouterr().err
    import xml.etree.ElementTree as ET

    inertial = ET.parse(here / "b.urdf").find(".//inertial")
    assert float(inertial.find("mass").get("value")) == pytest.approx(1e-6)
    inertia = inertial.find("inertia")
    for k in ("ixx", "iyy", "izz"):
        assert float(inertia.get(k)) == pytest.approx(0.4 * 1e-6 * 1e-4 ** 2, rel=1e-6)
    assert all(float(inertia.get(k)) == 0 for k in ("ixy", "ixz", "iyz"))
