"""Fuzzing the mechanism XML path: random mutations of the packaged mechanism files
(urdf/**/*.xml) go through xml2urdf in-process (and, for a sample, render). Every case must end
in a written URDF that check_urdf accepts (through xacro for the xacro ones) or a
MechanismError -- never another exception, never a hang.

Bounded and seeded: BONDSIM_FUZZ_CASES cases (default 25, a few seconds) from seed
BONDSIM_FUZZ_SEED (default 15); a failure names the case's seed and mutations to replay it.
Longer runs on demand: BONDSIM_FUZZ_CASES=2000 pytest test/test_mechanism_fuzz.py
"""
from __future__ import annotations

import copy
import os
import random
import shutil
import signal
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bondsim_ros.mechanism import MechanismError, to_urdf
from bondsim_ros.mechanism.render import RenderError, render

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "urdf").glob("**/*.xml"))
CASES = int(os.environ.get("BONDSIM_FUZZ_CASES", "25"))
SEED = int(os.environ.get("BONDSIM_FUZZ_SEED", "15"))
# per case: CPU time (a hang spins; the machine's load does not count) and, as a backstop,
# wall time. A packaged file converts in about 1 s and renders in 1-2 s.
CASE_CPU_SECONDS = 30
CASE_WALL_SECONDS = 600
CHECK_URDF = shutil.which("check_urdf")

VALUES = ["", " ", "0", "-1", "1e308", "-1e308", "1e-320", "nan", "inf", "-inf", "1e200 1e200 0", "0 0 0", "x",
          "1,2", "1 2", "1 2 3 4", "NaN NaN NaN", "$(env HOME)", "${1/0}", "$${x}", "../../etc/passwd",
          "/etc/hostname", "../robots/Robotino", "a--b", "true", "maybe", "revolute_q", "spherical", "fixed",
          "prismatic_x", "mm", "km", "red", "0.5 0.5 0.5 2", "\u00e9\u202e", "a" * 3000, "\t", "-0", "1e9",
          "1e10", "360", "-90 90", "x y", "z"]
# valid-looking values, so that mutated files also reach the writer
PLAUSIBLE = ["0.1", "2", "-3.5", "45", "1e-3", "z", "y", "0 1 0", "1 1 1", "0.2 0.3 0.4", "false", "revolute_x",
             "prismatic_z", "spherical", "fixed", "cm", "silver", "q1", "_", "1R", "r/"]
TAGS = ["joint", "drive", "link", "cuboid", "cylinder", "sphere", "cone", "revolution", "point", "part", "assembly",
        "use", "render", "probe", "object", "robot", "base", "translation", "rotation", "project", "bogus"]
ATTRS = ["id", "name", "ref", "type", "lower", "upper", "velocity", "effort", "virtual", "axis", "angle", "x", "y", "z",
         "lx", "ly", "lz", "radius", "length", "mass", "r", "h", "file", "scale", "color", "prefix", "length_unit"]


class CaseTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise CaseTimeout()


def _arm():
    signal.setitimer(signal.ITIMER_PROF, CASE_CPU_SECONDS)
    signal.alarm(CASE_WALL_SECONDS)


def _disarm():
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.alarm(0)


def mutate_tree(root: ET.Element, rng: random.Random) -> str:
    """One structural or attribute mutation in place; returns what it did."""
    elements = list(root.iter())
    parents = {c: p for p in elements for c in p}
    el = rng.choice(elements)
    words = [v for e in elements for v in e.attrib.values()]  # existing ids/names: duplicates, refs
    op = rng.choice(["value", "value", "value", "delattr", "addattr", "delete", "duplicate", "move", "retag", "nest"])
    if op == "value" and el.attrib:
        key = rng.choice(sorted(el.attrib))
        el.set(key, rng.choice(VALUES + PLAUSIBLE + words))
        return f"{el.tag}@{key}={el.get(key)[:40]!r}"
    if op == "delattr" and el.attrib:
        key = rng.choice(sorted(el.attrib))
        del el.attrib[key]
        return f"{el.tag}: -@{key}"
    if op == "addattr":
        key = rng.choice(ATTRS)
        el.set(key, rng.choice(VALUES + PLAUSIBLE + words))
        return f"{el.tag}: +@{key}={el.get(key)[:40]!r}"
    if el is root:
        root.set("name", rng.choice(VALUES + PLAUSIBLE))
        return f"root@name={root.get('name')[:40]!r}"
    parent = parents[el]
    if op == "delete":
        parent.remove(el)
        return f"-<{el.tag}>"
    if op == "duplicate":
        parent.insert(list(parent).index(el), copy.deepcopy(el))
        return f"2x<{el.tag}>"
    if op == "move":
        target = rng.choice(elements)
        if target is el or el in target.iter() or target is root and rng.random() < 0.5:
            return "move (skipped)"
        parent.remove(el)
        target.insert(rng.randint(0, len(target)), el)
        return f"<{el.tag}> into <{target.tag}>"
    if op == "retag":
        old, el.tag = el.tag, rng.choice(TAGS)
        return f"<{old}> -> <{el.tag}>"
    # nest: the element inside a copy of itself, deepening joints and assemblies
    twin = copy.deepcopy(el)
    twin.append(el)
    parent.insert(list(parent).index(el), twin)
    parent.remove(el)
    return f"<{el.tag}> nested in a copy of itself"


def mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    op = rng.choice(["truncate", "insert", "flip"])
    k = rng.randrange(len(data))
    if op == "truncate":
        return data[:k], f"truncated at {k}"
    if op == "insert":
        junk = rng.choice([b"<", b">", b"&", b"\x00", b"\xff\xfe", b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"]]>", b"--"])
        return data[:k] + junk + data[k:], f"inserted {junk!r} at {k}"
    return data[:k] + bytes([data[k] ^ (1 << rng.randrange(8))]) + data[k + 1:], f"flipped a bit at {k}"


def check_output(files, xacro_mode, tmp: Path) -> None:
    for f in files:
        path = Path(f)
        if xacro_mode and f.endswith(".urdf.xacro"):
            import xacro

            doc = xacro.process_file(f, mappings={"prefix": "p/"}).toxml()
            path = tmp / "expanded.urdf"
            path.write_text(doc)
        elif not f.endswith(".urdf"):
            continue
        proc = subprocess.run([CHECK_URDF, str(path)], capture_output=True, text=True)
        assert proc.returncode == 0 and "Successfully Parsed XML" in proc.stdout, (f, proc.stdout + proc.stderr)


def test_fuzz_mechanism_xml_to_urdf(tmp_path):
    assert SOURCES, "no packaged mechanism XML found"
    master = random.Random(SEED)
    outcomes = {"ok": 0, "refused": 0}
    old = signal.signal(signal.SIGALRM, _on_alarm), signal.signal(signal.SIGPROF, _on_alarm)
    try:
        for case in range(CASES):
            seed = master.randrange(2**32)
            rng = random.Random(seed)
            src = rng.choice(SOURCES)
            project = src.parent.parent if src.parent.name in ("robots", "objects") else src.parent
            work = tmp_path / f"case{case}"
            shutil.copytree(project, work / project.name, ignore=shutil.ignore_patterns("meshes"))
            target = work / project.name / src.relative_to(project)
            tree = ET.parse(target)
            done = [mutate_tree(tree.getroot(), rng) for _ in range(rng.randint(1, 3))]
            data = ET.tostring(tree.getroot())
            if rng.random() < 0.2:
                data, what = mutate_bytes(data, rng)
                done.append(what)
            target.write_bytes(data)
            entry = target
            if rng.random() < 0.3:  # convert the project that references the mutated file
                projects = sorted((work / project.name).glob("*.xml"))
                entry = rng.choice(projects) if projects else target
            xacro_mode = rng.random() < 0.3
            out = work / "out" / ("x.urdf.xacro" if xacro_mode else "x.urdf")
            label = f"case {case} (BONDSIM_FUZZ_SEED={SEED}, case seed {seed}): {entry.name} after {'; '.join(done)}"
            _arm()
            try:
                result = to_urdf(entry, out, xacro=xacro_mode)
            except MechanismError as exc:
                assert str(exc), label
                assert not (work / "out").exists(), f"{label}: refused but wrote output"
                outcomes["refused"] += 1
                continue
            except CaseTimeout:
                pytest.fail(f"{label}: no result within {CASE_CPU_SECONDS} s of CPU time")
            except Exception as exc:  # noqa: BLE001 - the finding: anything but a MechanismError
                pytest.fail(f"{label}: {type(exc).__name__}: {exc}")
            finally:
                _disarm()
            outcomes["ok"] += 1
            if CHECK_URDF:
                check_output(result.files, xacro_mode, work)
            if outcomes["ok"] % 3 == 1:  # and render's loader and framing, small
                _arm()
                try:
                    render(entry, work / "r.png", size=(64, 48), progress=False)
                except (MechanismError, RenderError):
                    pass
                except CaseTimeout:
                    pytest.fail(f"{label}: render: no result within {CASE_CPU_SECONDS} s of CPU time")
                except Exception as exc:  # noqa: BLE001
                    pytest.fail(f"{label}: render: {type(exc).__name__}: {exc}")
                finally:
                    _disarm()
            shutil.rmtree(work)
    finally:
        signal.signal(signal.SIGALRM, old[0])
        signal.signal(signal.SIGPROF, old[1])
    assert sum(outcomes.values()) == CASES
    print(f"fuzz: {outcomes}")
