"""The one error class of the mechanism layer: every rejection names file, line and element."""
from __future__ import annotations

import os


class MechanismError(ValueError):
    """A mechanism XML document was rejected.

    ``str(exc)`` reads like a compiler message, ``robots/Robotino.xml:12: <drive>: unknown type ...``,
    with the file's path as given, or as the reference search found it, so that an editor opens
    it; the parts are kept in ``file``, ``line`` and ``element`` (tag name) for tools.
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None, element: str | None = None):
        self.file = os.fspath(file) if file is not None else None
        self.line = line
        self.element = element
        self.reason = message
        where = self.file if self.file else "<input>"
        if line is not None:
            where += f":{line}"
        tag = f" <{element}>:" if element else ""
        super().__init__(f"{where}:{tag} {message}")
