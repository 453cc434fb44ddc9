"""Safe XML reading that keeps the line number of every element.

Why defusedxml's ``DefusedXMLParser`` with our own target instead of ``defusedxml.ElementTree.parse``:
its handlers refuse DTDs, entity declarations and external references (billion laughs, XXE) at the
expat level, and a custom target lets us read ``CurrentLineNumber`` as each element starts, which the
C ElementTree does not record. lxml would also work but is not needed for documents this small.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree.ElementTree import ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

from .errors import MechanismError

MAX_ELEMENTS = 200_000  # elements of one file: a Node costs far more memory than its few bytes of XML
MAX_XML_DEPTH = 1000  # element nesting of one file


class _TooBig(Exception):
    pass


@dataclass
class Node:
    """One XML element: tag, attributes (document order), children, and where it was written."""

    tag: str
    attrs: dict
    line: int
    file: str
    children: list = field(default_factory=list)
    text: str = ""  # all text directly inside, the tails of children included
    text_line: int | None = None  # where the first non-blank text is
    text_after: Node | None = None  # the child that text follows, if any

    def error(self, message: str) -> MechanismError:
        return MechanismError(message, self.file, self.line, self.tag)

    def text_error(self) -> MechanismError:
        """Text in an element, at its own line: after a child, it is named after that child."""
        text = repr(self.text.strip()[:30])
        where = f"after <{self.text_after.tag}>" if self.text_after else f"inside <{self.tag}>"
        return MechanismError(f"unexpected text {text} {where} (elements carry their data in attributes)",
                              self.file, self.text_line, (self.text_after or self).tag)


class _Builder:
    """ElementTree parser target building Nodes; the parser is attached after construction."""

    def __init__(self, file: str):
        self.file = file
        self.parser = None
        self.stack: list[Node] = []
        self.root: Node | None = None
        self.count = 0

    def start(self, tag, attrs):
        self.count += 1
        if self.count > MAX_ELEMENTS:
            raise _TooBig(f"more than {MAX_ELEMENTS} elements in one file (size limit MAX_ELEMENTS)")
        if len(self.stack) >= MAX_XML_DEPTH:
            raise _TooBig(f"elements nested more than {MAX_XML_DEPTH} deep (size limit MAX_XML_DEPTH)")
        node = Node(tag, dict(attrs), self.parser.parser.CurrentLineNumber, self.file)
        if self.stack:
            self.stack[-1].children.append(node)
        else:
            self.root = node
        self.stack.append(node)

    def end(self, tag):
        self.stack.pop()

    def data(self, text):
        if self.stack:
            node = self.stack[-1]
            if node.text_line is None and text.strip():
                # buffer_text: the text arrives whole at the next markup, so the parser's line is its end
                end = self.parser.parser.CurrentLineNumber
                node.text_line = end - text.count("\n") + text[:len(text) - len(text.lstrip())].count("\n")
                node.text_after = node.children[-1] if node.children else None
            node.text += text

    def close(self):
        return self.root


def parse_xml(data: bytes, file: str) -> Node:
    """Parse ``data`` (the contents of ``file``); any DTD, entity or malformation is a MechanismError."""
    builder = _Builder(file)
    # forbid_dtd: a mechanism document never needs one, and refusing the DTD stops entity tricks early
    parser = DefusedXMLParser(target=builder, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    builder.parser = parser
    parser.parser.buffer_text = True  # (ElementTree's default) one data call per run of text: see _Builder.data
    try:
        parser.feed(data)
        root = parser.close()
    except DefusedXmlException as exc:
        line = parser.parser.CurrentLineNumber
        raise MechanismError(f"DTDs and entities are not allowed in mechanism XML ({type(exc).__name__})",
                             file, line) from None
    except _TooBig as exc:
        raise MechanismError(str(exc), file, parser.parser.CurrentLineNumber) from None
    except ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        raise MechanismError(f"malformed XML: {exc}", file, line) from None
    if root is None:
        raise MechanismError("empty document", file, 1)
    return root
