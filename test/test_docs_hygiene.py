"""The tracked files (code, tests, docs, config, launch) describe the project as it is: no words
about how it was made (numbered sessions, issues, tasks) and no paths of one
development machine, which mean nothing in a clone. Fails naming file:line for each hit.

The patterns are assembled from pieces so that this file does not match itself.
"""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_SES, _ISS, _WORK, _HELP = "ses" + "sion", "iss" + "ue", "work" + r"\s+item", "hel" + "per"
MAKING = [
    (re.compile(r"\b" + _SES + r"\s+#?\d+", re.I), "a numbered work session"),
    (re.compile(r"\b" + _ISS + r"s?\s+#?\d+", re.I), "a numbered issue"),
    (re.compile(r"\b" + _WORK + r"s?\b", re.I), "a task of the build-up (" + _WORK.replace(chr(92) + "s+", " ") + ")"),
    (re.compile(r"\b" + _HELP + r"\s+" + _SES + r"s?\b", re.I), "a build-up " + _SES + " (" + _HELP + ")"),
    # the source papers were handed over numbered; the project names the systems instead
    (re.compile(r"(?<![A-Za-z])" + "se" + r"ed[ _]?00\d", re.I),
     "a paper's hand-over number instead of the system's name"),
]
MACHINE_PATHS = [
    (re.compile("/" + "work/"), "a path of the development machine"),
    (re.compile("/" + "tmp/" + "fresh"), "a scratch checkout of the development machine"),
    (re.compile("/" + "root/"), "the root user's home"),
    (re.compile("/" + r"home/[A-Za-z_][A-Za-z0-9_.-]*"), "a user's home folder"),
]


def tracked_text_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (the check reads the tracked files)")
    for name in out.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # images, meshes, bags
            continue
        try:
            yield name, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def hits(text: str, patterns) -> list:
    return [(n, why, m.group(0)) for n, line in enumerate(text.splitlines(), 1)
            for rx, why in patterns for m in [rx.search(line)] if m]


def test_patterns_catch_what_they_are_for():
    """The check can fail: each pattern finds the text it is meant to find, and leaves alone the
    words it must not (``helper`` functions, example output paths under /tmp)."""
    bad = [f"fixed in {_SES} 20", f"{_ISS} 14's target", f"{_ISS} #7", f"a {_WORK.replace(chr(92) + 's+', ' ')}",
           f"{_HELP} {_SES}", "see " + "/" + "work/main/README.md", "se" + "ed 003's Table 1", "test_se" + "ed001.py",
           "cd " + "/" + "tmp/fresh-clone", "/" + "root/.cache", "/" + "home/alice/src"]
    for text in bad:
        assert hits(text, MAKING + MACHINE_PATHS), text
    good = ["small shared helpers", "-o /tmp/robotino.urdf", "../shared/wheels", "Boudon et al.'s Table 1",
            "a seed of 7", "the home position", "a session of the node"]
    for text in good:
        assert not hits(text, MAKING + MACHINE_PATHS), text


def test_no_words_about_how_the_project_was_made():
    found = [f"{name}:{n}: {why} ({what!r})" for name, text in tracked_text_files()
             for n, why, what in hits(text, MAKING)]
    assert not found, "text about how the project was made:\n" + "\n".join(found)


def test_no_paths_of_a_development_machine():
    found = [f"{name}:{n}: {why} ({what!r})" for name, text in tracked_text_files()
             for n, why, what in hits(text, MACHINE_PATHS)]
    assert not found, "machine paths in tracked files:\n" + "\n".join(found)
