"""The reduction's own differentiation and substitution (reduce._Differentiator, reduce.
_substitute) give exactly what sympy gives: the Jacobian and the eliminated expressions a
model is compiled from must not depend on those shortcuts (docs/engine.md, step 4)."""
from __future__ import annotations

import numpy as np
import sympy as sp

from bondsim_ros.bondgraph.equations import build_dae
from bondsim_ros.bondgraph.laws import clip
from bondsim_ros.bondgraph.reduce import _Differentiator, _substitute, reduce_dae
from bondsim_ros.models import registry
from bondsim_ros.solver import SolverOptions

x, y, z = sp.symbols("x y z", real=True)

# what model equations are made of: float coefficients, powers, chain-rule functions, the
# PID's clip, Piecewise, and the kinks sympy leaves unevaluated (floor, Mod)
EXPRESSIONS = [
    0.5 * x * y**2 - 3.25 * x * z + sp.Rational(1, 3),
    x / (y**2 + 1.5) + sp.sqrt(x * y + 2),
    sp.sin(x * y) * sp.cos(z) + sp.tanh(2.0 * x / 0.01) * y,
    x**y + sp.exp(-x * z) * sp.log(y**2 + 1),
    sp.atan2(y - 0.5 * x, x + z) * (x - 2 * y) ** 3,
    clip(0.8 * x - 2.0 * y, -12.0, 12.0) * z + clip(y, -1, 1),
    sp.Piecewise((x * y, x > 0.5), (0.25 * y**2, True)) + sp.Abs(x - z) + sp.Min(x, y),
    sp.Mod(x * y, sp.pi / 3) + sp.floor(z / 2) * x,
]


def test_derivatives_are_sympys():
    d = _Differentiator()
    for expr in EXPRESSIONS:
        for v in (x, y, z):
            assert d(expr, v) == sp.diff(expr, v), (expr, v)
            assert d(expr, v) == sp.diff(expr, v)  # from the memo too


def test_derivatives_of_the_robotino_equations_are_sympys():
    """The reduced Robotino with the firmware drive: PID saturation (clip), the rollers' Mod,
    float coefficients; every derivative the Jacobian is made of, before the fix-ups of kinks."""
    red = reduce_dae(build_dae(registry()["robotino_firmware"].build()))
    assert any(eq.has(clip) for eq in red.equations) and any(eq.has(sp.Mod) for eq in red.equations)
    d = _Differentiator()
    for eq in red.equations:
        for s in eq.free_symbols:
            assert d(eq, s) == sp.diff(eq, s), s


def test_substitution_is_xreplace():
    d = _Differentiator()
    rhs = 2.5 * y - clip(z, -1, 1) / 3
    memo: dict = {}
    for expr in EXPRESSIONS:
        assert _substitute(expr, x, rhs, d.free, memo) == expr.xreplace({x: rhs})
    assert _substitute(x, x, rhs, d.free, {}) == rhs
    assert _substitute(y * z, x, rhs, d.free, {}) == y * z


def test_structural_matching_is_maximum_as_scipy_finds_it():
    """reduce._maximum_matching (the structural check's, written to spare a cold build scipy's
    import) matches as many equations as scipy.sparse.csgraph on random bipartite graphs."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    from bondsim_ros.bondgraph.reduce import _maximum_matching

    rng = np.random.default_rng(0)
    for _ in range(500):
        n, m = int(rng.integers(1, 30)), int(rng.integers(1, 30))
        A = rng.random((n, m)) < rng.uniform(0.02, 0.4)
        mine = _maximum_matching([np.flatnonzero(row).tolist() for row in A], m)
        ref = maximum_bipartite_matching(csr_matrix(A.astype(float)), perm_type="column")
        assert sum(c >= 0 for c in mine) == int((ref >= 0).sum())
        taken = [c for c in mine if c >= 0]
        assert len(taken) == len(set(taken)) and all(c < 0 or A[i, c] for i, c in enumerate(mine))


def _ladder_yaml(n: int) -> str:
    """A ladder of ``n`` resistors, every one the run-time parameter ``k``, on alternating 1- and
    0-junctions (series, shunt, series, ...) driven by sin(t), closed by an inertia with p0 = 1
    on the last junction (benchmarks/model_size.py's ``Rp`` chain)."""
    lines = ["model: ladder", "parameters: {k: 1.5}", "components:", '  E: {type: Se, effort: "sin(t)"}']
    bonds = ["  - [E, j0]"]
    for i in range(n):
        lines.append(f"  j{i}: {{type: {'EffortJunction' if i % 2 == 0 else 'FlowJunction'}}}")
        lines.append(f"  x{i}: {{type: R, resistance: k}}")
        bonds.append(f"  - [j{i}, x{i}]")
        if i + 1 < n:
            bonds.append(f"  - [j{i}, j{i + 1}]")
    lines.append("  load: {type: I, inertia: 1.0, p0: 1.0}")
    bonds.append(f"  - [j{n - 1}, load]")
    return "\n".join(lines + ["bonds:"] + bonds) + "\n"


def _ladder_thevenin(n: int, k: float) -> tuple[float, float]:
    """What the load sees, V sin(t) behind R: from the source, a resistor on a 1-junction
    (EffortJunction: its efforts sum) is in series and adds k, one on a 0-junction is a shunt
    that divides the voltage and puts its k in parallel."""
    v, r = 1.0, 0.0
    for i in range(n):
        if i % 2 == 0:
            r += k
        else:
            v, r = v * k / (r + k), r * k / (r + k)
    return v, r


def test_a_long_ladder_of_parametric_resistors_reduces_and_simulates():
    """2000 resistors given as one run-time parameter: the elimination nested the mesh currents'
    expressions a level deeper per mesh (k*((...)/k - ...)), and the ladder did not reduce in
    minutes (10 000 were refused past Python's recursion limit). It reduces, and the load's
    momentum follows p' = V sin(t) - R p of the ladder's equivalent, for the value built with
    and for another one set at run time."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from time_limit import time_bound

    from bondsim_ros.bondgraph import compile_model, simulate
    from bondsim_ros.bondgraph.yamlmodel import loads_model

    n = 2000
    with time_bound(150):
        compiled = compile_model(loads_model(_ladder_yaml(n), "ladder.yaml"))
    for k in (1.5, 0.4):
        r = simulate(compiled, 2.0, 0.05, options=SolverOptions(rtol=1e-9, atol=1e-12), params={"k": k})
        v, b = _ladder_thevenin(n, k)
        t = r["t"]
        exact = np.exp(-b * t) + v * (b * np.sin(t) - np.cos(t) + np.exp(-b * t)) / (1 + b * b)
        assert np.max(np.abs(r["load.p"] - exact)) < 1e-7
        # the equivalent of a long ladder ending on a shunt: R = k (sqrt(5) - 1) / 2
        assert abs(b - k * (5 ** 0.5 - 1) / 2) < 1e-12 * k


def test_derivative_of_a_wrapped_angle_holds_no_process_dependent_dummy():
    """d/dx Mod(x + pi/6, pi/3) is 1 (almost everywhere): the result must be that number, not
    sympy's chain-rule Subs with a Dummy numbered at random per process, which made two builds
    of the Robotino's Jacobian compare unequal (benchmarks/reduce_identity.py)."""
    import sympy as sp
    from bondsim_ros.bondgraph.reduce import _diff

    x = sp.Symbol("x", real=True)
    d = _diff(sp.sin(sp.Mod(x + sp.pi / 6, sp.pi / 3)), x)
    assert not d.has(sp.Subs) and not d.atoms(sp.Dummy)
    assert d == sp.cos(sp.Mod(x + sp.pi / 6, sp.pi / 3))
