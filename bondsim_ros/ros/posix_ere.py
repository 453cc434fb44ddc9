"""POSIX extended regular expressions (ERE, POSIX.1-2024 XBD 9.4), the syntax of
simulation_interfaces' EntityFilters name filter: parsed by the ERE grammar and matched here.

No ROS. Python's ``re`` reads Perl's syntax: it has no ``[[:alpha:]]`` (it reads a set of ``[:alph``
and a literal ``]``) and takes ``\\d``, ``(?i)``, lookaround, which POSIX does not have; and as a
backtracking matcher it takes time exponential or of high polynomial degree in the name's length
on some patterns (``(.*)*(.*)*(.*)*(.*)*x``: 20 s on a 17-character name), while a service must
answer any request. No package fills the gap: ``regex`` reads Perl's syntax and backtracks too;
google-re2 (linear time) is a native dependency without a rosdep key, and its POSIX mode still
reads ``\\`` in a bracket expression as an escape (POSIX: an ordinary character) and matches
nothing for ``[[.a.]]``; pycregex wraps the C library's regcomp (GPL, and glibc's adds ``\\w``,
``\\b``, back-references). So:

* what the standard defines is read: ordinary and quoted characters (``\\`` before one of
  ``^.[]$()|*+?{}\\``), ``.`` (any character, newline too), bracket expressions with character
  classes (``[:alpha:]`` ...; as in the POSIX locale, i.e. ASCII), collating symbols and
  equivalence classes of one character (``[.-.]``, ``[=a=]``), ranges in code point order,
  ``]`` first and ``-`` first or last as literals, ``\\`` literal inside brackets; groups,
  alternation, ``*``, ``+``, ``?``, intervals ``{m}``, ``{m,}``, ``{m,n}`` (up to RE_DUP_MAX,
  255), each optionally followed by the minimal-repetition ``?`` (new in 2024); ``^`` and ``$``
  anchors wherever they stand (``$`` is the end of the name, not before a final newline); an
  unmatched ``)`` is an ordinary character;
* what it leaves undefined, and what Perl adds, is refused with NotPosixEre naming it: a
  backslash before another character (``\\d``, ``\\w``, ``\\b``, ``\\1``), ``(?`` (inline flags,
  non-capturing groups, lookaround), a repetition with nothing before it or after an anchor,
  repetitions in a row beyond the one ``?``, a ``{`` that begins no valid interval, empty
  alternatives or groups, unknown class names, ``[:alpha:]`` alone (POSIX leaves open whether
  it is a class or the list ``:alph``; the list is never what was meant), empty or chained
  ranges, a collating element of several characters (the POSIX locale has none).

The pattern becomes an automaton (Thompson's construction) whose states all advance together
over the name (``Ere.search``): at most the name's length times the automaton's size, which is
capped (MAX_STATES). A match is found anywhere in the name, as regexec(3) finds it, unless anchored.
"""
from __future__ import annotations

import re

RE_DUP_MAX = 255  # the largest interval count (the standard's minimum for RE_DUP_MAX)
MAX_DEPTH = 100  # parentheses nested deeper are refused: the parser and the automaton's builder recurse
MAX_STATES = 20_000  # the automaton's size limit: intervals multiply it ((a{255}){255})

# the character classes of the POSIX locale, as inclusive code point ranges
_UPPER, _LOWER, _DIGIT = [(0x41, 0x5A)], [(0x61, 0x7A)], [(0x30, 0x39)]
CLASSES = {
    "upper": _UPPER,
    "lower": _LOWER,
    "alpha": _UPPER + _LOWER,
    "digit": _DIGIT,
    "alnum": _DIGIT + _UPPER + _LOWER,
    "xdigit": _DIGIT + [(0x41, 0x46), (0x61, 0x66)],
    "blank": [(0x09, 0x09), (0x20, 0x20)],
    "space": [(0x09, 0x0D), (0x20, 0x20)],
    "cntrl": [(0x00, 0x1F), (0x7F, 0x7F)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "graph": [(0x21, 0x7E)],
    "print": [(0x20, 0x7E)],
}
_QUOTABLE = set("^.[]$()|*+?{}\\")
_REPEAT = set("*+?{")
# what a reader used to Perl most likely meant by an escape POSIX does not have
_PERL_HINTS = {"d": ("[[:digit:]]", "a digit"), "D": ("[^[:digit:]]", "a non-digit"),
               "w": ("[[:alnum:]_]", "a word character"), "W": ("[^[:alnum:]_]", "a non-word character"),
               "s": ("[[:space:]]", "white space"), "S": ("[^[:space:]]", "non-space")}
_INTERVAL = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")


class NotPosixEre(ValueError):
    """A pattern outside the POSIX extended regular expressions (the message says what)."""


def _parse(pattern: str):
    if not pattern:
        raise NotPosixEre("an empty pattern is not POSIX ERE")
    return _Parser(pattern).parse()


def compile_ere(pattern: str) -> "Ere":
    """``pattern`` parsed and made an automaton (``Ere``); NotPosixEre where it is not POSIX ERE."""
    return Ere(pattern, _parse(pattern))


# The parsed pattern, as tuples: ("lit", c), ("set", ranges, negate), ("any",), ("bol",), ("eol",),
# ("group", node), ("cat", [nodes]), ("alt", [nodes]), ("rep", atom, low, high or None, minimal).
class Ere:
    """A compiled pattern: ``search(name)`` is a true value where the pattern matches somewhere in
    ``name`` (regexec's answer), else None."""

    def __init__(self, pattern: str, tree):
        self.pattern = pattern
        self.program = []  # ("char", test), ("split", a, b), ("jmp", a), ("bol",), ("eol",), ("match",)
        self._emit(tree)
        self.program.append(("match",))

    def _add(self, instr) -> int:
        if len(self.program) >= MAX_STATES:
            raise NotPosixEre(f"'{self.pattern[:40]}' makes an automaton of more than {MAX_STATES} states "
                              f"(its intervals repeat too much): not supported")
        self.program.append(instr)
        return len(self.program) - 1

    def _emit(self, node) -> None:
        kind = node[0]
        if kind == "lit":
            c = node[1]
            self._add(("char", lambda x, c=c: x == c))
        elif kind == "set":
            ranges, negate = tuple(node[1]), node[2]
            self._add(("char", lambda x, r=ranges, n=negate: any(lo <= ord(x) <= hi for lo, hi in r) != n))
        elif kind == "any":
            self._add(("char", lambda x: True))
        elif kind in ("bol", "eol"):
            self._add((kind,))
        elif kind == "group":
            self._emit(node[1])
        elif kind == "cat":
            for part in node[1]:
                self._emit(part)
        elif kind == "alt":
            jumps = []
            for k, branch in enumerate(node[1]):
                if k == len(node[1]) - 1:
                    self._emit(branch)
                    break
                split = self._add(None)
                self._emit(branch)
                jumps.append(self._add(None))
                self.program[split] = ("split", split + 1, len(self.program))
            for j in jumps:
                self.program[j] = ("jmp", len(self.program))
        else:  # rep: the atom low times, then (high - low) optional copies or a loop
            _, atom, low, high, _minimal = node  # (which match is taken does not change whether one is)
            for _ in range(low):
                self._emit(atom)
            if high is None:
                split = self._add(None)
                self._emit(atom)
                self._add(("jmp", split))
                self.program[split] = ("split", split + 1, len(self.program))
            else:
                splits = []
                for _ in range(high - low):
                    splits.append(self._add(None))
                    self._emit(atom)
                for sp in splits:
                    self.program[sp] = ("split", sp + 1, len(self.program))

    def _follow(self, states: set, seen: set, pc: int, at: int, end: int) -> bool:
        """Add to ``states`` the character tests reachable from ``pc`` at position ``at`` without
        reading (``seen``: the states this position has reached already); True if the match state
        is reachable."""
        program, stack, matched = self.program, [pc], False
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            instr = program[pc]
            op = instr[0]
            if op == "char":
                states.add(pc)
            elif op == "split":
                stack.extend((instr[2], instr[1]))
            elif op == "jmp":
                stack.append(instr[1])
            elif op == "bol":
                if at == 0:
                    stack.append(pc + 1)
            elif op == "eol":
                if at == end:
                    stack.append(pc + 1)
            else:
                matched = True
        return matched

    def search(self, name: str):
        end = len(name)
        states, seen = set(), set()
        for at in range(end + 1):
            if self._follow(states, seen, 0, at, end):  # a match may start at every position
                return True
            if at == end:
                return None
            c, nxt, nxt_seen = name[at], set(), set()
            for pc in states:
                if self.program[pc][1](c) and self._follow(nxt, nxt_seen, pc + 1, at + 1, end):
                    return True
            states, seen = nxt, nxt_seen
        return None


def _merged(ranges) -> list:
    """Code point ranges, sorted and merged."""
    merged = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [tuple(r) for r in merged]


class _Parser:
    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.p[j] if j < len(self.p) else ""

    def fail(self, token: str, at: int, why: str):
        raise NotPosixEre(f"'{token}' at {at} is not POSIX ERE: {why}")

    def parse(self):
        out = self.alternation(0)
        assert self.i == len(self.p)  # a ')' at depth 0 is an ordinary character, so all is read
        return out

    # ere := branch ('|' branch)*
    def alternation(self, depth: int):
        branches = [self.branch(depth)]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.branch(depth))
        return branches[0] if len(branches) == 1 else ("alt", branches)

    # branch := expression+
    def branch(self, depth: int):
        start, parts = self.i, []
        while self.i < len(self.p) and self.peek() != "|" and not (self.peek() == ")" and depth > 0):
            parts.append(self.expression(depth))
        if not parts:
            if self.peek() == ")" and self.p[start - 1] == "(":
                self.fail("()", start - 1, "an empty group")
            bar = start - 1 if start > 0 and self.p[start - 1] == "|" else start
            self.fail("|", bar, "an empty alternative beside it")
        return parts[0] if len(parts) == 1 else ("cat", parts)

    # expression := anchor | primary [duplication ['?']]
    def expression(self, depth: int):
        c, at = self.peek(), self.i
        if c in _REPEAT:
            self.fail(c, at, "nothing before it to repeat")
        anchor = c in ("^", "$")
        if anchor:
            self.i += 1
            atom = ("bol",) if c == "^" else ("eol",)
        elif c == "(":
            atom = self.group(depth)
        elif c == ")":  # unmatched (depth 0): POSIX makes it an ordinary character
            self.i += 1
            atom = ("lit", ")")
        elif c == ".":
            self.i += 1
            atom = ("any",)
        elif c == "[":
            atom = self.bracket()
        elif c == "\\":
            atom = self.escape()
        else:
            self.i += 1
            atom = ("lit", c)
        if self.peek() not in _REPEAT:
            return atom
        if anchor:
            self.fail(self.peek(), self.i, f"it repeats the anchor '{c}'")
        low, high = self.duplication()
        minimal = self.peek() == "?"  # POSIX.1-2024 minimal repetition: the same names match
        if minimal:
            self.i += 1
        atom = ("rep", atom, low, high, minimal)
        if self.peek() in _REPEAT:
            self.fail(self.peek(), self.i, "it repeats a repetition (an ERE has one '*', '+', '?' or interval, "
                                           "then at most one '?')")
        return atom

    def group(self, depth: int):
        at = self.i
        if depth >= MAX_DEPTH:
            raise NotPosixEre(f"'(' at {at}: parentheses nested more than {MAX_DEPTH} deep are not supported")
        self.i += 1
        if self.peek() == "?":
            self.fail("(?", at, "inline flags, non-capturing groups and lookaround are Perl's")
        if self.i >= len(self.p):  # (its empty inside would be named as an empty alternative)
            self.fail("(", at, "it is never closed")
        inner = self.alternation(depth + 1)
        if self.peek() != ")":
            self.fail("(", at, "it is never closed")
        self.i += 1
        return ("group", inner)

    def duplication(self) -> tuple:
        """(low, high or None) of the repetition at the cursor."""
        c, at = self.peek(), self.i
        if c != "{":
            self.i += 1
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        m = _INTERVAL.match(self.p, at)
        low = int(m.group(1)) if m else 0
        high = (low if m.group(2) is None else int(m.group(3)) if m.group(3) else None) if m else None
        if not m or low > RE_DUP_MAX or (high is not None and not low <= high <= RE_DUP_MAX):
            self.fail("{", at, f"it begins no interval {{m}}, {{m,}} or {{m,n}} with 0 <= m <= n <= {RE_DUP_MAX} "
                               f"(a literal brace is \\{{)")
        self.i = m.end()
        return low, high

    def escape(self):
        at, c = self.i, self.peek(1)
        if not c:
            self.fail("\\", at, "at the end it quotes nothing")
        if c not in _QUOTABLE:
            hint = f"; for {_PERL_HINTS[c][1]} write {_PERL_HINTS[c][0]}" if c in _PERL_HINTS else ""
            self.fail("\\" + c, at, f"a backslash quotes only one of ^.[]$()|*+?{{}}\\{hint}")
        self.i += 2
        return ("lit", c)

    # bracket expression: '[' ['^'] list ']'
    def bracket(self):
        at = self.i
        self.i += 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        body_at, ranges, first = self.i, [], True
        while True:
            if self.i >= len(self.p):
                self.fail("[", at, "it is never closed")
            if self.peek() == "]" and not first:
                break
            term_at = self.i
            kind, value, text = self.bracket_term()
            first = False
            if self.peek() == "-" and self.peek(1) not in ("]", ""):  # a range
                if kind != "char":
                    self.fail(text + "-", term_at, "a range's end point is a character or [.c.]")
                self.i += 1
                end_at = self.i
                end_kind, end, end_text = self.bracket_term()
                if end_kind != "char":
                    self.fail(end_text, end_at, "a range's end point is a character or [.c.]")
                if end < value:
                    self.fail(self.p[term_at:self.i], term_at, "an empty range (its start comes after its end)")
                if self.peek() == "-" and self.peek(1) not in ("]", ""):
                    self.fail("-", self.i, "a range's end cannot begin another range (as in [a-m-o])")
                ranges.append((value, end))
            elif kind == "class":
                ranges.extend(CLASSES[value])
            else:
                ranges.append((value, value))
        body = self.p[body_at:self.i]
        self.i += 1
        if len(body) >= 3 and body[0] == body[-1] and body[0] in ":.=":
            # POSIX leaves open whether [:alpha:] is a class or the list ':alph': the list is never what was meant
            self.fail(self.p[at:self.i], at, f"a class, collating symbol or equivalence class goes inside a "
                                             f"bracket expression: [[{body}]]")
        return ("set", _merged(ranges), negate)

    def bracket_term(self):
        """(kind, value, source text) of the next list member: ('char', code point), ('class',
        name), or ('equiv', code point) for [=c=]; a collating symbol [.c.] is its character
        (the POSIX locale's collating elements are single characters, each its own
        equivalence class)."""
        c, at = self.peek(), self.i
        if c == "[" and self.peek(1) in (":", ".", "="):
            delim = self.peek(1)
            close = self.p.find(delim + "]", at + 2)
            if close < 0:
                self.fail("[" + delim, at, f"it is never closed by '{delim}]'")
            content, text = self.p[at + 2:close], self.p[at:close + 2]
            self.i = close + 2
            if delim == ":":
                if content not in CLASSES:
                    self.fail(text, at, f"no such character class (the classes: {', '.join(sorted(CLASSES))})")
                return "class", content, text
            if len(content) != 1:
                self.fail(text, at, "it names no collating element (the POSIX locale's are single characters)")
            return ("char" if delim == "." else "equiv"), ord(content), text
        self.i += 1
        return "char", ord(c), c
