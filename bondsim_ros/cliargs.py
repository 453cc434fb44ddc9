"""What every sub-command shares with the ``bondsim-ros`` entry point: the user-facing error and
the parsing of repeatable NAME=VALUE options. A bottom-layer module, so that the command modules
beside each layer import it without importing the command line (which loads them)."""
from __future__ import annotations


class CLIError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def assignments(items, what: str, parse=float, form: str = "NAME=VALUE") -> dict:
    """``["a=1", "b=2"]`` -> ``{"a": parse("1"), ...}`` for the repeatable NAME=VALUE options
    (--param, --guess, --bounds, --weight); a malformed item is a CLIError naming it."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            out[name.strip()] = parse(value)
        except ValueError:
            raise CLIError(f"{what} expects {form}, got {item!r}") from None
    return out
