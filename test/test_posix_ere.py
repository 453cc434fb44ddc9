"""POSIX extended regular expressions (bondsim_ros/ros/posix_ere.py): what the standard defines
matches as it says, what it leaves undefined or Perl adds is refused with a message naming it,
where the C library is glibc its regexec(3) agrees on every pattern of up to three tokens that
the module accepts, and a pattern that makes a backtracking matcher run for hours is answered."""
import ctypes
import ctypes.util
import itertools
import locale
import string
import sys

import pytest

from bondsim_ros.ros.posix_ere import CLASSES, NotPosixEre, compile_ere


def matches(pattern, name):
    return compile_ere(pattern).search(name) is not None


# (pattern, names it finds, names it does not)
DEFINED = [
    ("robot[[:alpha:]]+", ["robotino", "xrobotA"], ["robot", "robot2", "robot_"]),
    ("^[[:lower:]]+$", ["robotino"], ["Robotino", "robot_1", "robotino\n", ""]),
    ("[[:upper:]][[:digit:]]", ["arm A1"], ["a1", "AA"]),
    ("^[[:alnum:]]+$", ["Arm3dof"], ["arm3-dof", "arm_3"]),
    ("^[[:xdigit:]]+$", ["00fF9a"], ["0g"]),
    ("[[:space:]]", ["a b", "a\tb", "a\nb", "a\x0bb"], ["ab"]),
    ("[[:blank:]]", ["a b", "a\tb"], ["a\nb"]),
    ("[[:punct:]]", ["a/b", "a_b", "a~b"], ["ab1", "a b"]),
    ("[^[:digit:]]", ["1a1"], ["123", ""]),
    ("[[:alpha:][:digit:]_]+$", ["x_1"], ["x-"]),
    # search, not a whole-name match: found anywhere unless anchored
    ("bot", ["robotino"], ["robo"]),
    ("^bot", ["bot1"], ["robotino"]),
    ("tino$", ["robotino"], ["robotinos", "robotino\n"]),
    ("a^b", [], ["ab", "a^b"]),  # anchors wherever they stand
    # bracket expressions: ] first and - first or last literal, backslash ordinary, collating symbols
    ("[]a]", ["]", "a"], ["b"]),
    ("[^]a]", ["b"], ["]", "a", "]a"]),
    ("x[a-]y", ["xay", "x-y"], ["xby"]),
    ("x[-a]y", ["x-y"], ["xby"]),
    (r"[\d]", ["\\", "d"], ["1"]),
    ("[--/]", ["-", ".", "/"], [",", "0"]),
    ("[[.-.]-0]", ["-", "0", "/"], [","]),
    ("[[.a.]]", ["a"], ["b"]),
    ("[[=a=]]", ["a"], ["b"]),
    ("[[.].]]", ["]"], ["."]),
    ("[a-c]", ["b"], ["d", "B"]),
    ("[[:alpha:]]", ["z"], ["\u00e9", "1"]),  # the POSIX locale's classes: ASCII
    # quoted characters, an unmatched ')' and '}' ']' as ordinary characters
    (r"robot\.1", ["robot.1"], ["robotx1"]),
    (r"\^\.\[\]\$\(\)\|\*\+\?\{\}\\", ["^.[]$()|*+?{}\\"], ["x"]),
    ("a)", ["a)"], ["a"]),
    ("a}]", ["a}]"], ["a"]),
    # the dot takes a newline too
    ("a.b", ["a\nb", "axb"], ["ab"]),
    # repetition, intervals, the minimal-repetition '?' (POSIX.1-2024), alternation, groups
    ("^ro.*?no$", ["robotino"], ["robotin"]),
    ("o{2}", ["foo"], ["fo"]),
    ("^r.{6,}o$", ["robotino"], ["robo"]),
    ("^fo{1,2}$", ["fo", "foo"], ["fooo"]),
    ("^fo{0}x", ["fx"], ["fox"]),
    ("^(arm|robot)[[:digit:]]?$", ["arm", "robot7"], ["arm77", "xarm"]),
    ("(ab)+c", ["ababc"], ["ac"]),
    ("a+?b??c*?$", ["aa"], ["b"]),
]


@pytest.mark.parametrize("pattern,found,missed", DEFINED, ids=[d[0] for d in DEFINED])
def test_what_the_standard_defines_matches_as_it_says(pattern, found, missed):
    for name in found:
        assert matches(pattern, name), (pattern, name)
    for name in missed:
        assert not matches(pattern, name), (pattern, name)


def test_the_classes_are_the_posix_locales():
    """Each class, character by character over ASCII and a few beyond, against the definitions
    Python's string module spells out for the C locale."""
    expected = {
        "upper": string.ascii_uppercase, "lower": string.ascii_lowercase, "alpha": string.ascii_letters,
        "digit": string.digits, "alnum": string.ascii_letters + string.digits, "xdigit": string.hexdigits,
        "blank": " \t", "space": string.whitespace, "punct": string.punctuation,
        "cntrl": "".join(map(chr, range(32))) + "\x7f",
        "graph": string.ascii_letters + string.digits + string.punctuation,
        "print": string.ascii_letters + string.digits + string.punctuation + " ",
    }
    assert set(expected) == set(CLASSES)
    for name, members in expected.items():
        found = {chr(c) for c in range(0x200) if matches(f"[[:{name}:]]", chr(c))}
        assert found == set(members), name


# (pattern, what the refusal names)
REFUSED = [
    ("", "an empty pattern"),
    ("(?i)robo", "'(?' at 0"),
    ("a(?=b)", "'(?' at 1"),
    ("(?<=a)b", "'(?' at 0"),
    ("(?:ab)", "'(?' at 0"),
    (r"robot\d", r"'\d' at 5 is not POSIX ERE: a backslash quotes only one of ^.[]$()|*+?{}\; for a digit write "
                 "[[:digit:]]"),
    (r"\w", r"'\w' at 0"),
    (r"a\b", r"'\b' at 1"),
    (r"(a)\1", r"'\1' at 3"),
    ("ab\\", "'\\' at 2 is not POSIX ERE: at the end it quotes nothing"),
    ("*a", "'*' at 0 is not POSIX ERE: nothing before it to repeat"),
    ("a|+b", "'+' at 2"),
    ("(?a)", "'(?' at 0"),
    ("(*a)", "'*' at 1"),
    ("^*a", "'*' at 1 is not POSIX ERE: it repeats the anchor '^'"),
    ("a$?", "'?' at 2"),
    ("a**", "'*' at 2 is not POSIX ERE: it repeats a repetition"),
    ("a+*", "'*' at 2"),
    ("a*??", "'?' at 3"),
    ("a{2}*", "'*' at 4"),
    ("a{2}{3}", "'{' at 4"),
    ("x{,2}", "'{' at 1 is not POSIX ERE: it begins no interval"),
    ("x{2,1}", "'{' at 1"),
    ("x{256}", "'{' at 1"),
    ("x{1", "'{' at 1"),
    ("x{a}", "'{' at 1"),
    ("()", "'()' at 0 is not POSIX ERE: an empty group"),
    ("a|", "'|' at 1 is not POSIX ERE: an empty alternative"),
    ("|a", "'|' at 0"),
    ("a||b", "'|' at 1"),
    ("(a|)", "'|' at 2"),
    ("(ab", "'(' at 0 is not POSIX ERE: it is never closed"),
    ("(", "'(' at 0 is not POSIX ERE: it is never closed"),  # (it named a '|' the pattern does not hold)
    ("a|(", "'(' at 2 is not POSIX ERE: it is never closed"),
    ("((", "'(' at 1 is not POSIX ERE: it is never closed"),
    ("x[ab", "'[' at 1 is not POSIX ERE: it is never closed"),
    ("[:alpha:]", "'[:alpha:]' at 0 is not POSIX ERE: a class, collating symbol or equivalence class goes inside a "
                  "bracket expression: [[:alpha:]]"),
    ("[^:digit:]", "'[^:digit:]' at 0"),
    ("[[:word:]]", "'[:word:]' at 1 is not POSIX ERE: no such character class (the classes: alnum, alpha"),
    ("[[:alpha]]", "'[:' at 1 is not POSIX ERE: it is never closed by ':]'"),
    ("[[.ab.]]", "'[.ab.]' at 1 is not POSIX ERE: it names no collating element"),
    ("[[=ab=]]", "'[=ab=]' at 1"),
    ("[z-a]", "'z-a' at 1 is not POSIX ERE: an empty range"),
    ("[a-m-o]", "'-' at 4 is not POSIX ERE: a range's end cannot begin another range"),
    ("[[:alpha:]-z]", "'[:alpha:]-' at 1 is not POSIX ERE: a range's end point is a character or [.c.]"),
    ("[a-[:alpha:]]", "'[:alpha:]' at 3"),
    ("[[=a=]-z]", "'[=a=]-' at 1"),
]


@pytest.mark.parametrize("pattern,named", REFUSED, ids=[r[0] or "empty" for r in REFUSED])
def test_what_is_not_posix_ere_is_refused_by_name(pattern, named):
    with pytest.raises(NotPosixEre) as refused:
        compile_ere(pattern)
    assert named in str(refused.value)


def test_nesting_beyond_the_limit_is_refused_not_a_crash():
    from bondsim_ros.ros.posix_ere import MAX_DEPTH

    assert matches("(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH, "a")
    with pytest.raises(NotPosixEre, match="nested more than"):
        compile_ere("(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1))


def test_set_members_cannot_read_as_set_syntax():
    """Members Python's re would read as syntax in a set ('[:', '&&', '--', '~~', '||')."""
    for pattern, name in [("[:[]", "["), ("[&&]", "&"), ("[~~]", "~"), ("[||]", "|"), ("[[[]", "[")]:
        assert matches(pattern, name) and not matches(pattern, "x"), pattern


# --- glibc's regcomp/regexec as a second reading ---------------------------------------------
TOKENS = ["a", "b", ".", "[ab]", "[^a]", "[[:upper:]]", "(", ")", "|", "*", "+", "?", "{2}", "{0,1}", "^", "$",
          "\\.", "]"]
REPEATS = {"*", "+", "?", "{2}", "{0,1}"}
SUBJECTS = ["".join(s) for n in range(3) for s in itertools.product("abA.", repeat=n)] + [
    "a\n", "\n", "aab", "aba", "bab", "aaa", "Aa.", "b)", "a)", "]", "a]"]


def _glibc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it
    except (OSError, AttributeError):
        return None
    return libc


@pytest.mark.skipif(_glibc() is None, reason="glibc's regex is the second reading")
def test_glibc_regexec_agrees_on_every_short_pattern_the_translation_accepts():
    libc = _glibc()
    REG_EXTENDED, REG_NOSUB = 1, 8  # glibc's <regex.h>
    regex_t = ctypes.create_string_buffer(1024)  # glibc's regex_t is 64 bytes on 64-bit machines
    previous = locale.setlocale(locale.LC_ALL)
    locale.setlocale(locale.LC_ALL, "C")  # the POSIX locale: classes and ranges as in the translation
    compared = refused = 0
    try:
        for n in (1, 2, 3):
            for tokens in itertools.product(TOKENS, repeat=n):
                pattern = "".join(tokens)
                if any(a in REPEATS and b == "?" for a, b in zip(tokens, tokens[1:])):
                    continue  # glibc reads 'a+?' as '(a+)?', as before POSIX.1-2024 made that '?' minimal repetition
                glibc_ok = libc.regcomp(regex_t, pattern.encode(), REG_EXTENDED | REG_NOSUB) == 0
                try:
                    ours = compile_ere(pattern)
                except NotPosixEre:
                    refused += 1
                    if glibc_ok:
                        libc.regfree(regex_t)
                    continue
                assert glibc_ok, f"{pattern!r}: glibc refuses what the translation accepts"
                # glibc takes a '^' after and a '$' before a newline of the name as anchors, REG_NEWLINE or
                # not (POSIX: without it, only the name's ends); names with a newline are left out there
                inner_anchor = "^" in pattern[1:] or "$" in pattern[:-1]
                try:
                    for subject in SUBJECTS:
                        if inner_anchor and "\n" in subject:
                            continue
                        theirs = libc.regexec(regex_t, subject.encode(), 0, None, 0) == 0
                        assert (ours.search(subject) is not None) == theirs, (pattern, subject)
                finally:
                    libc.regfree(regex_t)
                compared += 1
    finally:
        locale.setlocale(locale.LC_ALL, previous)
    print(f"{compared} patterns compared on {len(SUBJECTS)} names each; {refused} refused")
    assert compared > 1000


@pytest.mark.parametrize("pattern", ["(.*)*(.*)*(.*)*(.*)*(.*)*(.*)*x", ".*" * 40 + "x", "((a*)*)*((b*)*)*c"])
def test_a_pattern_a_backtracking_matcher_takes_hours_on_is_answered(pattern):
    """Python's re took 20 s for (.*)*(.*)*(.*)*(.*)*x on a 17-character name, and grows
    exponentially: a get_entities filter froze the node's executor. The automaton answers in
    the name's length times its size."""
    from time_limit import time_bound

    name = "robot0/robotino_" * 4
    with time_bound(10):
        assert compile_ere(pattern).search(name) is None
        assert compile_ere(pattern[:-1] + "o").search(name)


def test_an_automaton_beyond_its_size_limit_is_refused_by_name():
    from bondsim_ros.ros.posix_ere import MAX_STATES

    with pytest.raises(NotPosixEre, match=f"more than {MAX_STATES} states"):
        compile_ere("((a{255}){255}){255}")
