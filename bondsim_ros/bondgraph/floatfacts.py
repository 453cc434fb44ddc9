"""One record of facts per kind of sympy Float while a model is built.

sympy answers ``x.is_zero`` and the like from a record of facts kept on each object. A new Float
starts with its class's record; the first question asked of it copies that record and derives
every class fact again (``StdFactKB`` in sympy.core.assumptions) before answering. Substitution
and differentiation make a new Float for nearly every product of two coefficients, and
``Mul.flatten`` asks each whether it is zero: the dual-arm's reduction made 16,000 Floats of
1,239 values, and deriving their records was a quarter of its build.

A Float's facts follow from its kind alone: zero, or a finite non-zero value's sign and whether
it has a fractional part. Float's fact handlers (``_eval_is_*``) read nothing else; infinities
and NaN are other classes. While ``shared_float_facts()`` is active, every new Float gets the one
record of its kind, so each fact is derived once per kind and every answer is the one the
Float's own record would hold. Should sympy give Float a handler beyond those known here, the
records are not shared (the build is slower, its results the same).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from sympy import Float

# the facts Float's own handlers decide (as in sympy 1.12 and 1.14); every other fact follows from these
_KNOWN_HANDLERS = frozenset({"extended_negative", "extended_positive", "finite", "infinite", "integer",
                             "negative", "positive", "zero"})

_PLAIN_NEW = Float.__dict__.get("_new")  # as sympy defines it: a classmethod
_lock = threading.Lock()
_active = 0
_records: dict = {}  # kind -> the record its Floats share


def _kind(mpf):
    """(sign, has no fractional part) of a finite non-zero value, "zero", or None (a special
    value: not shared). mpmath keeps the mantissa odd, so the value is whole when the
    exponent is not negative (as sympy's int_valued reads it)."""
    sign, man, exp, _ = mpf
    if man:
        return sign, exp >= 0
    return "zero" if mpf == (0, 0, 0, 0) else None


def _shared_new(cls, *args, **kwargs):
    obj = _PLAIN_NEW.__func__(cls, *args, **kwargs)
    if type(obj) is Float and obj._assumptions is Float.default_assumptions:
        kind = _kind(obj._mpf_)
        if kind is not None:
            record = _records.get(kind)
            if record is None:
                record = _records[kind] = Float.default_assumptions.copy()
            obj._assumptions = record
    return obj


def supported() -> bool:
    """Whether this sympy's Float is the one the sharing was checked against."""
    handlers = getattr(Float, "_prop_handler", None)
    return (isinstance(_PLAIN_NEW, classmethod) and isinstance(handlers, dict)
            and set(handlers) <= _KNOWN_HANDLERS and hasattr(Float, "default_assumptions"))


@contextmanager
def shared_float_facts():
    """Floats made within share their kind's record of facts (see the module's docstring);
    nested and concurrent uses keep it in place until the last one ends."""
    global _active
    if not supported():
        yield
        return
    with _lock:
        if _active == 0:
            Float._new = classmethod(_shared_new)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                Float._new = _PLAIN_NEW
