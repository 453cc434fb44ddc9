"""Hostile and careless mechanism input: every bad file, option or path is refused by
name with exit status 2 and nothing written, every accepted one gives a URDF check_urdf and xacro
accept, and nothing outside the project's folders is read or copied."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.cli import main
from bondsim_ros.mechanism import MechanismError, load_mechanism, to_urdf
from bondsim_ros.mechanism import loader as mech_loader

CHECK_URDF = shutil.which("check_urdf")
needs_check_urdf = pytest.mark.skipif(CHECK_URDF is None, reason="check_urdf (liburdfdom-tools) not installed")

ROBOT = """<robot id="r" name="{name}">
  <joint name="j1">
    <drive type="revolute_z"/>
    <link id="l1" name="{link}"/>
    <cuboid id="{cid}" lx="{lx}" ly="1" lz="1" mass="1"/>
    <render ref="{cid}" color="red"/>
  </joint>
</robot>
"""


def robot(name="R", link="link1", cid="c1", lx="1"):
    return ROBOT.format(name=name, link=link, cid=cid, lx=lx)


def check_urdf(path) -> None:
    proc = subprocess.run([CHECK_URDF, str(path)], capture_output=True, text=True)
    assert proc.returncode == 0 and "Successfully Parsed XML" in proc.stdout, proc.stdout + proc.stderr


def refused(capsys, argv, *fragments, nothing=None):
    """Run the CLI; assert exit 2, one clean error line naming ``fragments``, no traceback, and
    nothing at ``nothing`` (no such path, or a folder left empty)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith(f"bondsim-ros {argv[0]}: error: "), err
    for f in fragments:
        assert f in err, err
    if nothing is not None:
        nothing = Path(nothing)
        assert not nothing.exists() or nothing.is_dir() and not list(nothing.iterdir())
    return err


# ------------------------------------------------------------------------------------------
# Confinement: references and parts stay inside the project's folders
# ------------------------------------------------------------------------------------------
@pytest.fixture
def outside(tmp_path):
    """A project folder and, beside it, a folder the project must not reach."""
    proj, evil = tmp_path / "proj", tmp_path / "dir"
    proj.mkdir()
    evil.mkdir()
    (evil / "Evil.xml").write_text('<object id="e" name="Evil"><cuboid id="c" lx="1" ly="1" lz="1"/></object>')
    (evil / "secret.stl").write_bytes((Path(__file__).parent / "data" / "mechanism" / "parts" / "tetra.stl")
                                      .read_bytes())
    return proj, evil


@pytest.mark.parametrize("name", ["../dir/Evil", "{evil}/Evil", "..", "sub/Evil", ""])
def test_reference_names_are_plain_file_names(outside, capsys, name):
    proj, evil = outside
    name = name.format(evil=evil)
    src = proj / "P.xml"
    src.write_text(f'<project id="p" name="P">\n  <object name="{name}"/>\n</project>\n')
    out = proj / "out"
    out.mkdir()
    refused(capsys, ["xml2urdf", str(src), "-o", str(out / "p.urdf")], "P.xml:2: <object>:",
            "bad reference name", nothing=out)


def test_symlinked_reference_out_of_the_project_is_refused(outside, capsys):
    proj, evil = outside
    (proj / "objects").mkdir()
    os.symlink(evil / "Evil.xml", proj / "objects" / "Box.xml")
    src = proj / "P.xml"
    src.write_text('<project id="p" name="P">\n  <object name="Box"/>\n</project>\n')
    out = proj / "out"
    out.mkdir()
    refused(capsys, ["xml2urdf", str(src), "-o", str(out / "p.urdf")], "P.xml:2: <object>:",
            "outside the project's folders", nothing=out)
    # the folder holding it is fine once the user names it
    os.unlink(proj / "objects" / "Box.xml")
    (proj / "P.xml").write_text('<project id="p" name="P">\n  <object name="Evil"/>\n</project>\n')
    assert main(["xml2urdf", str(src), "-o", str(out / "p.urdf"), "--search-path", str(evil), "-q"]) == 0


@pytest.mark.parametrize("file,fragment", [
    ("{evil}/secret.stl", "give a path relative to the XML file's folder"),
    ("../dir/secret.stl", "outside the project's folders"),
    ("link.stl", "outside the project's folders"),  # a symlink to the file outside
    ("notes.txt", "is not an STL mesh"),
    ("fake.stl", "is not a readable STL mesh"),
])
def test_part_files_stay_inside_and_are_meshes(outside, capsys, file, fragment):
    proj, evil = outside
    os.symlink(evil / "secret.stl", proj / "link.stl")
    (proj / "notes.txt").write_text("not a mesh\n")
    (proj / "fake.stl").write_bytes(b"\x00" * 300)
    src = proj / "R.xml"
    src.write_text(f'<robot id="r" name="R">\n  <part id="p" file="{file.format(evil=evil)}"/>\n</robot>\n')
    out = proj / "out"
    out.mkdir()
    refused(capsys, ["xml2urdf", str(src), "-o", str(out / "r.urdf")], "R.xml:2: <part>:", fragment, nothing=out)


def test_part_beside_the_robots_folder_is_allowed(tmp_path):
    """The test data's arm keeps its STL in ../parts: the project lies above robots/."""
    data = Path(__file__).parent / "data" / "mechanism"
    res = to_urdf(data / "robots" / "Arm.xml", tmp_path / "arm.urdf")
    assert any(f.endswith("tetra.stl") for f in res.files)


# ------------------------------------------------------------------------------------------
# xacro: names reach robot_description literally
# ------------------------------------------------------------------------------------------
def test_xacro_output_is_not_expanded(tmp_path):
    xacro = pytest.importorskip("xacro")
    name = "R${xacro.load_yaml('/etc/hostname')}"
    link = "l$${x}$$(y)$$z$"
    cid = "c$(env HOME)"
    src = tmp_path / "R.xml"
    src.write_text(robot(name=name, link=link, cid=cid))
    out = tmp_path / "r.urdf.xacro"
    to_urdf(src, out, xacro=True)
    doc = xacro.process_file(str(out), mappings={"prefix": "p/"}).toxml()
    assert f'name="{name}"' in doc
    assert f'<link name="p/{link}">' in doc
    assert f'<visual name="{cid}">' in doc and f'<collision name="{cid}">' in doc
    assert os.environ.get("HOME", "/nonexistent") not in doc
    if CHECK_URDF:
        urdf = tmp_path / "r.urdf"
        urdf.write_text(doc)
        check_urdf(urdf)


@pytest.mark.parametrize("uri", ['package://x/"y/', "package://my pkg/", "file://$(env HOME)/"])
def test_mesh_uri_that_xacro_cannot_carry_is_refused(tmp_path, capsys, uri):
    src = tmp_path / "R.xml"
    src.write_text(robot())
    out = tmp_path / "o"
    out.mkdir()
    refused(capsys, ["xml2urdf", str(src), "-o", str(out / "r.urdf.xacro"), "--xacro", "--mesh-uri", uri],
            "--mesh-uri", "not allowed in a mesh URI", nothing=out)


# ------------------------------------------------------------------------------------------
# Size limits: refused quickly, by name
# ------------------------------------------------------------------------------------------
def _quick_refusal(src, fragment):
    tic = time.perf_counter()
    with pytest.raises(MechanismError) as err:
        to_urdf(src, src.parent / "out" / "x.urdf")
    assert time.perf_counter() - tic < 5.0  # refused before the work, not after it
    assert fragment in str(err.value) and err.value.file is not None
    assert not (src.parent / "out").exists()
    return err.value


def test_doubling_assembly_is_refused(tmp_path):
    levels = 30  # 2**30 instances
    uses = "\n".join(f'  <assembly id="a{k}"><use ref="a{k - 1}"/><use ref="a{k - 1}"/></assembly>'
                     for k in range(1, levels + 1))
    src = tmp_path / "Bomb.xml"
    src.write_text(f'<object id="o" name="O">\n  <cuboid id="a0" lx="1" ly="1" lz="1"/>\n{uses}\n</object>\n')
    exc = _quick_refusal(src, f"above the limit of {mech_loader.MAX_SHAPES} (MAX_SHAPES)")
    assert exc.element == "assembly" and exc.file == str(src)


def test_deep_assembly_chain_is_refused(tmp_path):
    n = 5000
    chain = "\n".join(f'  <assembly id="a{k}"><use ref="a{k - 1}"/></assembly>' for k in range(1, n))
    src = tmp_path / "Deep.xml"
    src.write_text(f'<object id="o" name="O">\n  <cuboid id="a0" lx="1" ly="1" lz="1"/>\n{chain}\n</object>\n')
    _quick_refusal(src, f"nested more than {mech_loader.MAX_ASSEMBLY_DEPTH} deep (size limit MAX_ASSEMBLY_DEPTH)")


@pytest.mark.parametrize("n,fragment,line", [
    (300, f"joints and attached objects are nested more than {mech_loader.MAX_DEPTH} deep (size limit MAX_DEPTH)",
     mech_loader.MAX_DEPTH + 2),
    (3000, "elements nested more than 1000 deep (size limit MAX_XML_DEPTH)", 1000),  # the case
])
def test_deeply_nested_joints_are_refused(tmp_path, n, fragment, line):
    opening = "".join(f'<joint name="j{k}"><drive type="revolute_z"/><link id="l{k}" name="l{k}"/>\n'
                      for k in range(n))
    src = tmp_path / "Snake.xml"
    src.write_text(f'<robot id="r" name="R">\n{opening}{"</joint>" * n}\n</robot>\n')
    exc = _quick_refusal(src, fragment)
    assert exc.line == line


def test_fan_out_through_object_references_is_refused(tmp_path):
    """Each level attaches the next object ten times: 10**8 links if expanded."""
    levels = 8
    for k in range(levels):
        body = ('<cuboid id="c" lx="1" ly="1" lz="1"/>' if k == levels - 1 else
                "".join(f'<joint name="j{i}"><drive type="fixed"/><link id="l{i}" name="l{i}"/>'
                        f'<object name="L{k + 1}" prefix="p{i}_"/></joint>' for i in range(10)))
        (tmp_path / f"L{k}.xml").write_text(f'<object id="o{k}" name="L{k}">{body}</object>\n')
    _quick_refusal(tmp_path / "L0.xml", f"more than {mech_loader.MAX_LINKS} links (size limit MAX_LINKS)")


def test_big_file_is_refused_before_parsing(tmp_path):
    src = tmp_path / "Big.xml"
    src.write_text('<robot id="r" name="R">' + " " * (mech_loader.MAX_FILE_BYTES + 1) + "</robot>")
    _quick_refusal(src, f"above the limit of {mech_loader.MAX_FILE_BYTES} bytes")


# ------------------------------------------------------------------------------------------
# xml2urdf never writes invalid output
# ------------------------------------------------------------------------------------------
@needs_check_urdf
def test_source_name_with_double_dash_gives_valid_urdf(tmp_path):
    src = tmp_path / "a--b-.xml"
    src.write_text(robot())
    res = to_urdf(src, tmp_path / "a.urdf")
    check_urdf(res.files[0])


@pytest.mark.parametrize("field,value,fragment,element", [
    ("lx", "1e308", "magnitude above the limit", "cuboid"),
    # what Python's float reads beyond decimal numbers: 1_0 is 10, the Arabic-Indic digits are 12
    ("lx", "1_0", "bad number '1_0' for attribute 'lx'", "cuboid"),
    ("lx", "\u0661\u0662", "bad number '\u0661\u0662' for attribute 'lx'", "cuboid"),
    ("link", "", "bad name ''", "link"),
    ("link", "a b", "bad name 'a b'", "link"),
    ("name", "", "bad name ''", "robot"),
])
def test_unusable_numbers_and_names_are_refused(tmp_path, capsys, field, value, fragment, element):
    src = tmp_path / "R.xml"
    src.write_text(robot(**{field: value}))
    out = tmp_path / "o"
    out.mkdir()
    refused(capsys, ["xml2urdf", str(src), "-o", str(out / "r.urdf")], "R.xml:", f"<{element}>:", fragment,
            nothing=out)


def test_large_axis_is_normalised_or_refused(tmp_path):
    def doc(axis):
        return (f'<robot id="r" name="R">\n  <joint name="j"><drive type="revolute_z"/><link id="l" name="l"/>\n'
                f'    <cylinder id="c" radius="1" length="1" axis="{axis}" mass="1"/></joint>\n</robot>\n')

    src = tmp_path / "R.xml"
    src.write_text(doc("1e8 1e8 0"))
    mech = load_mechanism(src)
    shape = mech.links()["l"].shapes[0]
    assert np.allclose(shape.origin[:3, 2], [2 ** -0.5, 2 ** -0.5, 0])  # z of the cylinder along the axis
    res = to_urdf(src, tmp_path / "r.urdf")
    if CHECK_URDF:
        check_urdf(res.files[0])
    src.write_text(doc("1e200 1e200 0"))
    with pytest.raises(MechanismError, match=r"R.xml:3: <cylinder>: bad number list '1e200 1e200 0'"):
        load_mechanism(src)


def _project(tmp_path, refs):
    (tmp_path / "objects").mkdir(exist_ok=True)
    (tmp_path / "objects" / "Box.xml").write_text(
        '<object id="b" name="Box"><cuboid id="c" lx="1" ly="1" lz="1"/><render ref="c" color="red"/></object>')
    (tmp_path / "robots").mkdir(exist_ok=True)
    (tmp_path / "robots" / "Bot.xml").write_text(robot(name="Bot"))
    src = tmp_path / "P.xml"
    src.write_text('<project id="p" name="P">\n' + "".join(f"  {r}\n" for r in refs) + "</project>\n")
    return src


@pytest.mark.parametrize("refs,line,fragment", [
    (['<object name="Box"/>', '<object name="Box"/>'], 3, "duplicate link name 'Box'"),
    (['<object name="Box" prefix="a_"/>', '<object name="Box" prefix="a_"/>'], 3, "duplicate link name 'a_Box'"),
    (['<robot name="Bot" prefix="r_"/>', '<robot name="Bot" prefix="r_"/>'], 3, "duplicate"),
])
def test_same_prefix_or_object_twice_is_refused(tmp_path, capsys, refs, line, fragment):
    src = _project(tmp_path, refs)
    out = tmp_path / "o"
    out.mkdir()
    refused(capsys, ["xml2urdf", str(src), "-o", str(out / "p.urdf")], f"P.xml:{line}:", fragment,
            "distinct prefix", nothing=out)


@needs_check_urdf
def test_distinct_prefixes_give_valid_scene_and_robots(tmp_path):
    src = _project(tmp_path, ['<object name="Box" prefix="a_"/>', '<object name="Box" prefix="b_"/>',
                              '<robot name="Bot" prefix="r1_"/>', '<robot name="Bot" prefix="r2_"/>'])
    res = to_urdf(src, tmp_path / "o" / "p.urdf")
    urdfs = [f for f in res.files if f.endswith(".urdf")]
    assert len(urdfs) == 3
    for f in urdfs:
        check_urdf(f)


def test_output_that_is_a_directory_is_refused(tmp_path, capsys):
    src = tmp_path / "R.xml"
    src.write_text(robot())
    (tmp_path / "r.urdf").mkdir()
    refused(capsys, ["xml2urdf", str(src), "-o", str(tmp_path / "r.urdf")], "is a directory")
    assert list((tmp_path / "r.urdf").iterdir()) == []


# ------------------------------------------------------------------------------------------
# render
# ------------------------------------------------------------------------------------------
def test_render_without_render_elements_draws_in_grey(tmp_path):
    from PIL import Image

    src = tmp_path / "R.xml"
    src.write_text(robot().replace('    <render ref="c1" color="red"/>\n', ""))
    png = tmp_path / "r.png"
    assert main(["render", str(src), "-o", str(png), "--size", "160x120", "-q"]) == 0
    img = np.asarray(Image.open(png))[:, :, :3].astype(int)
    grey = (np.ptp(img, axis=2) < 8) & (img[:, :, 0] < 230)  # drawn pixels, no colour
    assert grey.sum() > 100
    empty = tmp_path / "E.xml"
    empty.write_text('<object id="o" name="O"/>')
    assert main(["render", str(empty), "-o", str(tmp_path / "e.png"), "--size", "80x60", "-q"]) == 0


@pytest.mark.parametrize("args,fragment", [
    (["--size", "0x0"], "--size 0x0: width and height must be 1..8192"),
    (["--size", "100000x2"], "width and height must be 1..8192"),
    (["--joints", "{nan}"], "nan.csv:3: column 'j1': 'nan' is not a finite number"),
    (["--joints", "{latin}"], "latin.csv: not UTF-8 text"),
    (["--joints", "{other}"], "other.csv: no column is named like a joint of the mechanism (j1) or the base "
                              "(x, y, phi); its columns: t, mass.p, spring.q"),
])
def test_render_bad_options_are_refused(tmp_path, capsys, args, fragment):
    src = tmp_path / "R.xml"
    src.write_text(robot())
    (tmp_path / "nan.csv").write_text("t,j1\n0,0\n0.1,nan\n")
    (tmp_path / "latin.csv").write_bytes("t,j1\n0,0\n0.1,\xb5\n".encode("latin-1"))
    (tmp_path / "other.csv").write_text("t,mass.p,spring.q\n0,0,0.1\n")  # another model's run
    args = [a.format(nan=tmp_path / "nan.csv", latin=tmp_path / "latin.csv", other=tmp_path / "other.csv")
            for a in args]
    out = tmp_path / "r.png"
    refused(capsys, ["render", str(src), "-o", str(out), "-q", *args], fragment, nothing=out)


def test_render_output_that_is_a_directory_is_refused(tmp_path, capsys):
    src = tmp_path / "R.xml"
    src.write_text(robot())
    (tmp_path / "r.png").mkdir()
    refused(capsys, ["render", str(src), "-o", str(tmp_path / "r.png"), "-q"], "-o", "is a directory")


def test_render_large_object_alone(tmp_path):
    """The packaged 6.4 m ground drawn on its own (found by fuzzing: subdivision ran out of rounds)."""
    ground = Path(__file__).resolve().parents[1] / "urdf" / "robotino" / "objects" / "Ground.xml"
    assert main(["render", str(ground), "-o", str(tmp_path / "g.png"), "--size", "80x60", "-q"]) == 0
    assert (tmp_path / "g.png").stat().st_size > 0


def test_output_over_the_input_is_refused(tmp_path, capsys):
    src = tmp_path / "R.xml"
    src.write_text(robot())
    before = src.read_bytes()
    refused(capsys, ["xml2urdf", str(src), "-o", str(src)], "refusing to write", "one of the input files")
    assert src.read_bytes() == before


@pytest.mark.parametrize("name", ["1R", "-x", "\u00c4rm", "_",
                                  # xacro's own elements: <xacro:if/> is read as its conditional
                                  "arg", "attribute", "call", "element", "if", "include", "insert_block", "macro",
                                  "property", "unless"])
def test_xacro_macro_name_is_an_xml_name(tmp_path, name):
    """The macro is called as an element <xacro:NAME>: a robot named '1R' gave unparsable xacro,
    and one named 'if' a macro xacro refused."""
    xacro = pytest.importorskip("xacro")
    src = tmp_path / "R.xml"
    src.write_text(robot(name=name))
    out = tmp_path / "r.urdf.xacro"
    to_urdf(src, out, xacro=True)
    doc = xacro.process_file(str(out)).toxml()
    assert f'<robot name="{name}">' in doc
    if CHECK_URDF:
        urdf = tmp_path / "r.urdf"
        urdf.write_text(doc)
        check_urdf(urdf)


def test_prefix_with_white_space_is_refused(tmp_path, capsys):
    src = _project(tmp_path, ['<object name="Box" prefix="a_"/>', '<object name="Box" prefix="b c"/>'])
    (tmp_path / "o").mkdir()
    refused(capsys, ["xml2urdf", str(src), "-o", str(tmp_path / "o" / "p.urdf")], "P.xml:3: <object>:",
            "bad prefix 'b c'", nothing=tmp_path / "o")


@pytest.mark.parametrize("body,fragment", [
    ("<a/>" * 250_000, "more than 200000 elements in one file (size limit MAX_ELEMENTS)"),
    ("<a>" * 5000 + "</a>" * 5000, "nested more than 1000 deep (size limit MAX_XML_DEPTH)"),
])
def test_many_or_deep_elements_are_refused_while_parsing(tmp_path, body, fragment):
    """Within the byte limit, elements cost memory: a million <a/> would take gigabytes as nodes."""
    src = tmp_path / "Many.xml"
    src.write_text(f'<robot id="r" name="R">{body}</robot>')
    _quick_refusal(src, fragment)


def test_render_refuses_over_its_triangle_limit(tmp_path, capsys, monkeypatch):
    from bondsim_ros.mechanism import render as render_mod

    monkeypatch.setattr(render_mod, "MAX_TRIANGLES", 100)  # the limit's path, on a small file
    src = tmp_path / "R.xml"
    src.write_text(robot().replace('    <render ref', '    <sphere id="s" radius="1"/><render ref="s" color="blue"/>\n'
                                   '    <render ref'))
    out = tmp_path / "r.png"
    refused(capsys, ["render", str(src), "-o", str(out), "-q"], "more than 100 triangles to draw",
            "MAX_TRIANGLES", nothing=out)


@pytest.mark.parametrize("suffix", [".gif", ".mp4", ".png"])
def test_render_failing_midway_leaves_no_file(tmp_path, monkeypatch, suffix):
    """Interrupted while drawing (here: the second frame fails): no partial video or image, and no
    temporary file, is left in the output folder."""
    from bondsim_ros.mechanism import render as render_mod

    src = tmp_path / "R.xml"
    src.write_text(robot())
    csv_path = tmp_path / "j.csv"
    csv_path.write_text("t,j1\n0,0\n0.1,0.5\n0.2,1\n")
    real_draw, calls = render_mod.Renderer.draw, []

    def draw(self, *a, **k):
        calls.append(1)
        if len(calls) == 2 or suffix == ".png":
            raise KeyboardInterrupt
        return real_draw(self, *a, **k)

    monkeypatch.setattr(render_mod.Renderer, "draw", draw)
    outdir = tmp_path / "out"
    outdir.mkdir()
    with pytest.raises(KeyboardInterrupt):
        render_mod.render(src, outdir / f"r{suffix}", joints_csv=csv_path, size=(80, 60), quiet=True)
    assert list(outdir.iterdir()) == []


def test_render_urdf_reads_no_mesh_outside_its_folder(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    secret = elsewhere / "secret.stl"
    secret.write_bytes((Path(__file__).parent / "data" / "mechanism" / "parts" / "tetra.stl").read_bytes())
    folder = tmp_path / "shared"
    folder.mkdir()
    urdf = folder / "e.urdf"
    urdf.write_text(f'<robot name="e"><link name="a">\n'
                    f'<visual><geometry><mesh filename="{secret}"/></geometry></visual>\n'
                    f'<visual><geometry><mesh filename="../elsewhere/secret.stl"/></geometry></visual>\n'
                    f'<visual><geometry><box size="1 1 1"/></geometry></visual>\n</link></robot>\n')
    assert main(["render", str(urdf), "-o", str(tmp_path / "e.png"), "--size", "80x60", "-q"]) == 0
    err = capsys.readouterr().err
    assert err.count("skipped (not a file of at most") == 2 and "secret.stl" in err


def test_render_urdf_with_entities_is_refused(tmp_path, capsys):
    urdf = tmp_path / "x.urdf"
    urdf.write_text('<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/hostname">]>\n'
                    '<robot name="&x;"><link name="a"/></robot>\n')
    out = tmp_path / "x.png"
    refused(capsys, ["render", str(urdf), "-o", str(out), "-q"], "x.urdf:1:", "DTDs and entities are not allowed",
            nothing=out)


URDF_JOINT = '<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/></joint>'


@pytest.mark.parametrize("text, message, urdfdom_refuses", [
    ('<html/>', "<html>: a URDF's top element is <robot>", True),
    ('<robot><link name="a"/></robot>', "<robot>: a <robot> needs a name", True),
    ('<robot name="r"><link/></robot>', "<link>: a <link> needs a name", False),  # (urdfdom: logged)
    ('<robot name="r"><link name="a"/>\n<link name="a"/></robot>',
     ":2: <link>: link 'a' is defined twice (line 1)", True),
    ('<robot name="r"><link name="a"/>\n' + URDF_JOINT.format(n="j", t="fixed", p="a", c="zz") + '</robot>',
     ":2: <child>: joint 'j': child link 'zz' is not a <link> of the robot", True),
    ('<robot name="r"><link name="a"/><link name="b"/>\n' + URDF_JOINT.format(n="j", t="hinge", p="a", c="b")
     + '</robot>', ":2: <joint>: joint 'j': type='hinge': expected one of revolute", True),
    ('<robot name="r"><link name="a"/><link name="b"/>\n' + URDF_JOINT.format(n="j", t="revolute", p="a", c="b")
     + '</robot>', ":2: <joint>: joint 'j': a revolute joint needs <limit>", True),
    ('<robot name="r"><link name="a"/><link name="b"/></robot>',
     "<robot>: more than one root link (a link no joint has as child): a, b", True),
    ('<robot name="r"><link name="a"/><link name="b"/>' + URDF_JOINT.format(n="j", t="fixed", p="a", c="b")
     + '\n' + URDF_JOINT.format(n="k", t="fixed", p="b", c="a") + '</robot>',
     "<robot>: no root link: the joints make a closed loop", True),
    ('<robot name="r"><link name="a"/><link name="b"/>'
     '<link name="c"/>' + URDF_JOINT.format(n="j", t="fixed", p="b", c="c")
     + '\n' + URDF_JOINT.format(n="k", t="fixed", p="c", c="b") + '</robot>',
     ":2: <joint>: joint 'k' closes a loop of links", False),  # (urdfdom: a tree from a, and the loop beside it)
    ('<robot name="r"><link name="a"><visual><geometry>\n<box size="abc"/></geometry></visual></link></robot>',
     ":2: <box>: size='abc': expected 3 numbers", False),
    ('<robot name="r"><link name="a"><visual><geometry>\n<box size="1 1"/></geometry></visual></link></robot>',
     ":2: <box>: size='1 1': expected 3 numbers, got 2", False),
    ('<robot name="r"><link name="a"><visual><geometry>\n<cylinder radius="1"/></geometry></visual></link></robot>',
     ":2: <cylinder>: link 'a': a <cylinder> needs length=", False),
])
def test_render_urdf_that_is_not_a_valid_tree_is_refused_by_line(tmp_path, capsys, text, message, urdfdom_refuses):
    """These ended in yourdfpy's own words (KeyError: 'name', list.remove(x): x not in list), in
    a traceback (IndexError, "Extents must be (3,)!"), or were drawn (a loop, two roots). ROS's
    parser (check_urdf) refuses the same structures; a visual it cannot read and a link with no
    name it logs and goes on, and a loop of links beside the tree it does not look for: render
    refuses those too."""
    urdf = tmp_path / "t.urdf"
    urdf.write_text(text + "\n")
    out = tmp_path / "t.png"
    refused(capsys, ["render", str(urdf), "-o", str(out), "-q"], f"t.urdf{message}" if message.startswith(":")
            else f"t.urdf:1: {message}", nothing=out)
    if shutil.which("check_urdf"):
        proc = subprocess.run(["check_urdf", str(urdf)], capture_output=True, text=True)
        assert (proc.returncode != 0) == urdfdom_refuses, proc.stdout + proc.stderr


@pytest.mark.parametrize("body, message", [
    ('<link name="a"><visual><geometry><box size="nan 1 1"/></geometry></visual></link>',
     "1: <box>: size='nan 1 1': expected finite numbers >= 0"),
    ('<link name="a"><visual><geometry><sphere radius="inf"/></geometry></visual></link>',
     "1: <sphere>: radius='inf': expected finite numbers >= 0"),
    ('<link name="a"><visual><geometry><box size="1 -1 1"/></geometry></visual></link>',
     "1: <box>: size='1 -1 1': expected finite numbers >= 0"),
    ('<link name="a"/><link name="b"/><joint name="j" type="fixed"><parent link="a"/><child link="b"/>'
     '<origin xyz="nan 0 0"/></joint>', "1: <origin>: xyz='nan 0 0': expected finite numbers"),
    ('<link name="a"/><link name="b"/><joint name="j" type="continuous"><parent link="a"/><child link="b"/>'
     '<axis xyz="0 0 0"/></joint>', "1: <axis>: joint 'j': axis xyz='0 0 0' has no direction"),
    ('<link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
     '<limit lower="nan" upper="1" effort="1" velocity="1"/></joint>', "1: <limit>: lower='nan': expected finite"),
    ('<link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
     '<limit lower="1" upper="-1" effort="1" velocity="1"/></joint>',
     "1: <limit>: joint 'j': lower=1 is above upper=-1"),
])
def test_render_urdf_with_a_size_or_placement_not_finite_names_it(tmp_path, capsys, body, message):
    """It used to end in matplotlib's traceback (axis limits cannot be NaN), draw a picture, or
    warn in numpy's words (a zero axis); refused at its line, as the other URDF faults are."""
    urdf = tmp_path / "r.urdf"
    urdf.write_text(f'<robot name="r">{body}</robot>\n')
    out = tmp_path / "s.png"
    refused(capsys, ["render", str(urdf), "-o", str(out), "-q"], f"{urdf}:{message}")
    assert not out.exists()


def test_a_robot_named_scene_keeps_its_urdf_beside_the_projects_scene(tmp_path):
    """A project writes STEM_scene.urdf for its static objects; a robot named 'scene' (file
    STEM_scene.urdf by the robots' rule) took that name and its URDF was overwritten."""
    (tmp_path / "robots").mkdir()
    (tmp_path / "objects").mkdir()
    (tmp_path / "robots" / "scene.xml").write_text(robot(name="scene"))
    (tmp_path / "objects" / "Floor.xml").write_text(
        '<object id="f" name="Floor"><cuboid id="c" lx="2" ly="2" lz="0.1"/><render ref="c" color="gray"/></object>\n')
    (tmp_path / "P.xml").write_text('<project id="p" name="P">\n  <robot name="scene"/>\n'
                                    '  <robot name="scene" prefix="b_"/>\n  <object name="Floor"/>\n</project>\n')
    out = tmp_path / "o"
    out.mkdir()
    res = to_urdf(tmp_path / "P.xml", out / "P.urdf")
    robots = [r["urdf"] for r in res.robots]
    assert len(set(robots)) == 2 and str(out / "P_scene.urdf") not in robots
    for urdf in robots:
        assert "link1" in Path(urdf).read_text()  # each robot's own links
    assert "Floor" in (out / "P_scene.urdf").read_text() and "link1" not in (out / "P_scene.urdf").read_text()
    if CHECK_URDF:
        for urdf in robots + [str(out / "P_scene.urdf")]:
            check_urdf(urdf)


def test_a_urdf_given_to_xml2urdf_is_named_as_one(tmp_path, capsys):
    """A URDF's <robot name=...><link .../> was refused as "missing required attribute 'id'",
    which sent the user looking for an id the format does not have."""
    src = tmp_path / "R.xml"
    src.write_text(robot())
    urdf = to_urdf(src, tmp_path / "r.urdf").files[0]
    out = tmp_path / "o"
    out.mkdir()
    refused(capsys, ["xml2urdf", str(urdf), "-o", str(out / "again.urdf")], "r.urdf:",
            "<robot>: a URDF, not mechanism XML", nothing=out)


@pytest.mark.parametrize("extra, fragment", [
    (["--search-path", "/nonexistent-folder"], "--search-path /nonexistent-folder: no such folder"),
    (["--row", "2", "-o", "{out}/a.gif"], "--row 2: the row of a still image (.png); a video draws every row"),
    (["--size", "201x150", "-o", "{out}/a.mp4"], "image size 201x150: an MP4 needs an even width and height"),
    (["--joints", "{dup}", "-o", "{out}/a.png"], "column 'j1' appears more than once in the header"),
])
def test_render_options_that_would_be_ignored_are_refused(tmp_path, capsys, extra, fragment):
    """A folder that is none, a row of a video, an odd MP4 side (which ffmpeg's writer resized
    without a word) and a joint given twice in the CSV: refused, nothing written."""
    src = tmp_path / "R.xml"
    src.write_text(robot())
    (tmp_path / "dup.csv").write_text("t,j1,j1\n0,0,1\n")
    out = tmp_path / "o"
    out.mkdir()
    argv = ["render", str(src)] + [a.format(out=out, dup=tmp_path / "dup.csv") for a in extra]
    if "-o" not in argv:
        argv += ["-o", str(out / "a.png")]
    refused(capsys, argv + ["-q"], fragment, nothing=out)


def test_xml2urdf_refuses_a_search_path_that_is_no_folder(tmp_path, capsys):
    src = tmp_path / "R.xml"
    src.write_text(robot())
    out = tmp_path / "o"
    out.mkdir()
    refused(capsys, ["xml2urdf", str(src), "-o", str(out / "r.urdf"), "--search-path", str(src)],
            f"--search-path {src}: not a folder", nothing=out)


def test_an_mp4_has_the_size_asked_for(tmp_path):
    """200x150 came out 200x152 (ffmpeg's writer rounded to blocks of 8) with a warning."""
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    src = tmp_path / "R.xml"
    src.write_text(robot())
    (tmp_path / "j.csv").write_text("t,j1\n0,0\n0.1,0.5\n0.2,1\n")
    out = tmp_path / "a.mp4"
    assert main(["render", str(src), "--joints", str(tmp_path / "j.csv"), "-o", str(out), "--size", "200x150",
                 "-q"]) == 0
    probe = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-i", str(out)], capture_output=True, text=True)
    assert " 200x150" in probe.stderr, probe.stderr


def test_render_of_the_folder_it_runs_in_says_the_input_is_a_folder(tmp_path, capsys, monkeypatch):
    """`render . -o x.png` was refused as writing inside an input, not for the input a folder."""
    monkeypatch.chdir(tmp_path)
    refused(capsys, ["render", ".", "-o", "x.png", "-q"], ".: cannot read file: Is a directory")
    assert list(tmp_path.iterdir()) == []
