"""The multibody benchmarks (Boudon et al.): pendulum and slider-crank variants against minimal coordinates.

Bounds reached (rtol 1e-8, atol 1e-10), see docs/examples/multibody.md for the measured numbers:
pendulum rigid variants agree with SciPy's DOP853 on the closed-form ODE to ~3e-8 rad/s, the
parasitic pivot to ~1.5e-4 rad/s; slider crank Lagrange piston velocity to ~2e-5 m/s of the
minimal model, parasitic (k = 1e7 N/m) to ~2.5e-3 m/s, inside the paper's Fig. 31 bound 4e-3.
"""
import re

import numpy as np
import pytest

from bondsim_ros.bondgraph import ModelError, simulate
from bondsim_ros.robots.multibody import model as mb
from oracles.multibody import pendulum_reference, slider_crank_reference
from bondsim_ros.models import registry
from bondsim_ros.solver import SolverOptions

TOL = SolverOptions(rtol=1e-8, atol=1e-10)
PEND = dict(t_end=3.0, dt_out=0.01)
SLIDE = dict(t_end=2.0, dt_out=0.002)

_cache = {}


def run(name, **kw):
    """Simulate a variant once per session (several tests compare the same runs)."""
    key = (name, tuple(sorted(kw.items())))
    if key not in _cache:
        span = PEND if name.startswith("pendulum") else SLIDE
        _cache[key] = simulate(getattr(mb, name)(**kw), **span, options=TOL)
    return _cache[key]


@pytest.fixture(scope="module")
def pend_ref():
    t = run("pendulum_minimal").t
    return t, *pendulum_reference(t)


@pytest.fixture(scope="module")
def slider_ref():
    t = run("slider_crank_minimal").t
    return t, *slider_crank_reference(t)


# ---------------------------------------------------------------------------------- pendulum
@pytest.mark.parametrize("name, bound", [
    ("pendulum_minimal", 1e-6), ("pendulum_zcp", 1e-6), ("pendulum_lagrange", 1e-6),
    ("pendulum_lagrange_scalar", 1e-6),
    # parasitic pivot: a compliant joint, not the rigid one; measured 1.4e-4 rad/s
    ("pendulum_parasitic", 5e-4), ("pendulum_parasitic_scalar", 5e-4),
])
def test_pendulum_against_scipy_and_minimal(name, bound, pend_ref):
    t, th_ref, om_ref = pend_ref
    r = run(name)
    assert np.allclose(r.t, t)
    assert np.max(np.abs(r["omega"] - om_ref)) < bound
    assert np.max(np.abs(r["theta"] - th_ref)) < bound
    assert np.max(np.abs(r["omega"] - run("pendulum_minimal")["omega"])) < bound
    # the release is really a swing: omega reaches a sizeable value (overdamped by B = 10)
    assert np.max(np.abs(om_ref)) > 0.4


def test_pendulum_lagrange_keeps_the_pivot():
    r = run("pendulum_lagrange")
    # velocity-level constraint only: the position drifts by integration error alone
    dist = np.hypot(r["x"], r["y"])
    assert np.max(np.abs(dist - 0.5)) < 1e-6


def test_pendulum_parasitic_pivot_sags_under_load():
    r = run("pendulum_parasitic")
    dist = np.hypot(r["x"], r["y"])
    # the 1e6 N/m pivot stretches by ~ (m g + centripetal)/k ~ 1e-5 m: compliant, not rigid
    assert 1e-7 < np.max(np.abs(dist - 0.5)) < 1e-4


@pytest.mark.parametrize("kind", ["lagrange", "parasitic"])
def test_vector_and_scalar_bonds_give_the_same_solution(kind):
    a, b = run(f"pendulum_{kind}"), run(f"pendulum_{kind}_scalar")
    assert np.max(np.abs(a["omega"] - b["omega"])) < 1e-10


# ------------------------------------------------------------------------------ slider crank
def test_slider_minimal_against_scipy(slider_ref):
    t, g_ref, om_ref, v_ref = slider_ref
    r = run("slider_crank_minimal")
    assert np.max(np.abs(r["v_piston"] - v_ref)) < 1e-4
    assert np.max(np.abs(r["gamma"] - g_ref)) < 1e-4
    # the crank swings through bottom dead centre to the far side (-5 pi/4) and back
    assert g_ref.min() < -3.8 and np.max(np.abs(v_ref)) > 1.5


@pytest.mark.parametrize("name, bound", [
    ("slider_crank_lagrange", 1e-4), ("slider_crank_lagrange_scalar", 1e-4),
    ("slider_crank_isostatic3d_lagrange", 1e-4),
    # Fig. 31: R/C and Lagrange within 4e-3 m/s of minimal coordinates
    ("slider_crank_parasitic", 4e-3), ("slider_crank_parasitic_scalar", 4e-3),
    ("slider_crank_hyperstatic_parasitic", 4e-3),
])
def test_slider_piston_velocity_against_minimal(name, bound, slider_ref):
    vmin = run("slider_crank_minimal")["v_piston"]
    r = run(name)
    err = np.max(np.abs(r["v_piston"] - vmin))
    assert err < bound, f"{name}: piston velocity error {err:.3g} m/s"
    assert np.max(np.abs(r["v_piston"] - slider_ref[3])) < bound


def test_slider_lagrange_error_keeps_falling_to_rtol_1e12():
    """The planar Lagrange slider crank (an index-2 joint force) against the closed form over
    5 s as the tolerance falls. At rtol 1e-12 its Newton correction stalls at round-off x cj,
    and without the weight's round-off floor (bdf_core.c, ROUNDOFF_FLOOR) the step underflows
    at t = 1.34 s. Measured: 2.8e-6 m/s at rtol 1e-10, 1.9e-8 at 1e-12."""
    errors = {}
    for rtol in (1e-10, 1e-12):
        r = simulate(mb.slider_crank_lagrange(), t_end=5.0, dt_out=0.002,
                     options=SolverOptions(rtol=rtol, atol=rtol / 100))
        assert r.t[-1] == pytest.approx(5.0)
        errors[rtol] = float(np.max(np.abs(r["v_piston"] - slider_crank_reference(r.t)[2])))
    assert errors[1e-12] < min(errors[1e-10] / 10, 1e-7), errors


def test_slider_parasitic_is_compliant_not_rigid():
    # the parasitic joints do deform: the error is not zero, it is the joint compliance
    vmin = run("slider_crank_minimal")["v_piston"]
    assert np.max(np.abs(run("slider_crank_parasitic")["v_piston"] - vmin)) > 1e-4


def test_hyperstatic_lagrange_reports_redundant_constraints():
    model = mb.slider_crank_hyperstatic_lagrange()
    with pytest.raises(ModelError) as err:
        simulate(model, t_end=0.01, dt_out=0.01)
    msg = str(err.value)
    assert "over-constrained" in msg
    over = re.search(r"over-constrained\): (.*)$", msg).group(1).split("; ")
    # 3 revolute (5 constraints each in 3-D) + 1 prismatic (5) on 3 bodies: 20 - 18 + 1 = 3
    # redundant constraints, each named after its joint channel
    assert len(over) == 3
    assert all(re.match(r"j[OABP]\.ch\d+: ", eq) for eq in over), over


def test_registry_lists_every_variant():
    reg = registry()
    names = [e.name for e in mb.ENTRIES]
    for n in ("pendulum_minimal", "pendulum_lagrange", "pendulum_parasitic", "slider_crank_minimal",
              "slider_crank_lagrange", "slider_crank_parasitic", "slider_crank_hyperstatic_lagrange"):
        assert n in names and n in reg
        assert reg[n].defaults["t_end"] > 0 and reg[n].defaults["dt_out"] > 0
