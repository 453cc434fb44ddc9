"""Floats sharing one record of facts per kind while a model is built (bondgraph/floatfacts.py):
every answer is the one a Float's own record gives, and the generated code is the same."""
import random

import pytest
import sympy as sp
from sympy.core.assumptions import _assume_defined

from bondsim_ros.bondgraph import codegen
from bondsim_ros.bondgraph.floatfacts import shared_float_facts, supported
from bondsim_ros.models import resolve_model

pytestmark = pytest.mark.skipif(not supported(), reason="this sympy's Float is not the one the sharing knows")

FACTS = sorted(_assume_defined)


def _values():
    """Floats of every kind, made as sympy makes them in arithmetic and from numbers."""
    two = sp.Float(2.0)
    return [
        sp.Float(2.0), sp.Float(-2.0), sp.Float(2.5), sp.Float(-0.25), sp.Float(1e-300), sp.Float(-1e300),
        sp.Float(3.0, 30), two * sp.Float(0.5), two * sp.Float(-0.75), sp.Float(0.1) + sp.Float(0.2),
        sp.Float._new((0, 0, 0, 0), 53, zero=False),  # a Float zero (Float(0.0) is the Integer 0)
        sp.Float(7.0) - sp.Float(7.0),
    ]


def _answers(floats, order):
    return [{fact: getattr(x, f"is_{fact}") for fact in order} for x in floats]


@pytest.mark.parametrize("seed", range(4))
def test_every_fact_of_a_shared_float_is_its_own(seed):
    order = FACTS[:]
    random.Random(seed).shuffle(order)  # the record is filled by whichever Float is asked first
    plain = _answers(_values(), order)
    with shared_float_facts():
        inside = _values()
        shared = _answers(inside, order)
        again = _answers(_values(), order[::-1])
    for x, a, b, c in zip(inside, plain, shared, again):
        assert a == b == c, x


def test_floats_of_one_kind_share_a_record_only_inside():
    with shared_float_facts():
        a, b, c = sp.Float(2.5), sp.Float(4.25), sp.Float(-2.5)
        a.is_zero
        assert a._assumptions is b._assumptions
        assert a._assumptions is not c._assumptions
        with shared_float_facts():  # nested: still shared when the inner one ends
            pass
        d = sp.Float(8.5)
        assert d._assumptions is a._assumptions
    e, f = sp.Float(2.5), sp.Float(4.25)
    e.is_zero
    assert e._assumptions is not f._assumptions
    assert e._assumptions is not a._assumptions


def test_whole_and_fractional_values_are_different_kinds():
    # sympy 1.14 says Float(2.0).is_integer is unknown (None) and Float(2.5).is_integer False;
    # sharing one record, the second asked would get the first's answer
    plain = [sp.Float(v).is_integer for v in (2.0, 2.5, 6.0, 6.5)]
    with shared_float_facts():
        floats = [sp.Float(v) for v in (2.0, 2.5, 6.0, 6.5)]
        assert [x.is_integer for x in floats] == plain
        assert floats[0]._assumptions is floats[2]._assumptions
        assert floats[0]._assumptions is not floats[1]._assumptions


@pytest.mark.parametrize("name", ["robotino_twist", "slider_crank_parasitic"])
def test_a_model_gets_the_same_code_with_shared_records(name):
    model, _ = resolve_model(name)
    plain = codegen._symbolic(model, "key", True, lambda msg: None)
    with shared_float_facts():
        shared = codegen._symbolic(model, "key", True, lambda msg: None)
    assert shared[0] == plain[0]
    assert shared[1] == plain[1]
    assert "double" in shared[1]
