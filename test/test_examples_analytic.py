"""Worked examples against closed-form answers: the engine + solver end to end."""
import math

import numpy as np
import pytest

from bondsim_ros.bondgraph import compile_model, simulate
from bondsim_ros.models import examples as ex
from oracles.examples import dc_motor_analytic, mass_spring_damper_analytic, pendulum_period, series_rlc_analytic
from bondsim_ros.solver import SolverOptions


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def test_mass_spring_damper_matches_closed_form():
    res = simulate(ex.mass_spring_damper(), t_end=10.0, dt_out=0.01, options=SolverOptions(rtol=1e-10, atol=1e-12))
    x, v = mass_spring_damper_analytic(res.t)
    assert rel_err(res["x"], x) <= 1e-6
    assert rel_err(res["spring.q"], x) <= 1e-6
    assert rel_err(res["v"], v) <= 1e-6


def test_series_rlc_matches_closed_form():
    res = simulate(ex.series_rlc(), t_end=1.0, dt_out=0.001, options=SolverOptions(rtol=1e-10, atol=1e-12))
    q, i = series_rlc_analytic(res.t)
    assert rel_err(res["C.q"], q) <= 1e-6
    assert rel_err(res["i"], i) <= 1e-6


def test_dc_motor_with_gear_speed_and_current():
    res = simulate(ex.dc_motor(), t_end=0.5, dt_out=0.0005, options=SolverOptions(rtol=1e-10, atol=1e-12))
    i, w = dc_motor_analytic(res.t)
    assert rel_err(res["current"], i) <= 1e-6
    assert rel_err(res["omega_motor"], w) <= 1e-6
    # the gear: the load turns N times slower than the rotor (TF f1 = k f2)
    np.testing.assert_allclose(res["omega_load"] * ex.DC_MOTOR["N"], res["omega_motor"], rtol=1e-8, atol=1e-9)


def test_lossless_oscillator_energy_over_100_periods():
    period = 2 * math.pi
    # BDF damps slightly (it is not symplectic): the drift scales with the tolerance
    res = simulate(ex.lossless_oscillator(), t_end=100 * period, dt_out=0.05,
                   options=SolverOptions(rtol=1e-10, atol=1e-13))
    energy = 0.5 * res["mass.p"] ** 2 + 0.5 * res["spring.q"] ** 2
    drift = float(np.max(np.abs(energy - energy[0])) / energy[0])
    print(f"lossless oscillator: relative energy drift over 100 periods = {drift:.2e}")
    assert drift < 1e-5
    # and the phase: q(t) = cos t
    assert float(np.max(np.abs(res["spring.q"] - np.cos(res.t)))) < 1e-4


@pytest.mark.parametrize("L, run_time", [(1.0, False), (2.0, True), (0.5, True)])
def test_pendulum_keeps_its_length_and_period(L, run_time):
    """The rod length is L whether built with it or set at run time (``--param L=2``): the mass
    stays at distance L and swings with the period of a pendulum of length L."""
    theta0 = math.radians(60.0)
    model = ex.pendulum(theta0=theta0) if run_time else ex.pendulum(L=L, theta0=theta0)
    res = simulate(model, t_end=10.0, dt_out=0.001,
                   options=SolverOptions(rtol=1e-9, atol=1e-11), params={"L": L} if run_time else None)
    length = np.hypot(res["x"], res["y"])
    assert float(np.max(np.abs(length - L))) < 1e-6
    # energy conserved (no damping), m = 1
    e = 0.5 * (res["mx.p"] ** 2 + res["my.p"] ** 2) + 9.81 * res["y"]
    assert float(np.max(np.abs(e - e[0]))) < 1e-5
    # period from upward zero crossings of x vs the elliptic-integral period
    x, t = res["x"], res.t
    ups = [t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k]) for k in range(len(x) - 1) if x[k] < 0 <= x[k + 1]]
    period = np.mean(np.diff(ups))
    assert period == pytest.approx(pendulum_period(L=L, theta0=theta0), rel=1e-6)


def _closed_form_errors(name, res):
    """Relative errors of a worked example's outputs against its closed form."""
    if name == "mass_spring_damper":
        x, v = mass_spring_damper_analytic(res.t)
        return rel_err(res["spring.q"], x), rel_err(res["v"], v)
    if name == "series_rlc":
        q, i = series_rlc_analytic(res.t)
        return rel_err(res["C.q"], q), rel_err(res["i"], i)
    if name == "dc_motor":
        i, w = dc_motor_analytic(res.t)
        return rel_err(res["current"], i), rel_err(res["omega_motor"], w)
    return (rel_err(res["spring.q"], np.cos(res.t)),)  # lossless_oscillator: q = cos t


@pytest.mark.parametrize("name, t_end, dt_out", [("mass_spring_damper", 10.0, 0.01), ("series_rlc", 1.0, 0.001),
                                                 ("dc_motor", 0.5, 0.0005),
                                                 ("lossless_oscillator", 4 * math.pi, 0.05)])
def test_error_keeps_falling_as_rtol_falls_to_1e_12(name, t_end, dt_out):
    """Tightening the tolerance buys accuracy all the way down (no stall at round-off,
    no step-size underflow), and rtol 1e-12 is within 1e-9 of the closed form (the DC motor's
    rigid gear is index 2)."""
    compiled = compile_model(getattr(ex, name)())
    errors = []
    for rtol in (1e-6, 1e-8, 1e-10, 1e-12):
        res = simulate(compiled, t_end=t_end, dt_out=dt_out, options=SolverOptions(rtol=rtol, atol=rtol / 100))
        assert res.t[-1] == pytest.approx(t_end)
        errors.append(max(_closed_form_errors(name, res)))
    print(f"{name}: max relative error at rtol 1e-6, 1e-8, 1e-10, 1e-12:", ", ".join(f"{e:.1e}" for e in errors))
    assert all(a > 5 * b for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 1e-9, errors


def test_second_compile_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path))
    first = compile_model(ex.series_rlc(Rv=3.0))
    second = compile_model(ex.series_rlc(Rv=3.0))
    other = compile_model(ex.series_rlc(Rv=4.0))
    assert not first.from_cache and second.from_cache and not other.from_cache
    assert first.key == second.key != other.key
    out1, out2 = np.zeros(2), np.zeros(2)
    y, yp = np.array([0.1, 0.2]), np.array([0.3, 0.4])
    first.residual(0.0, y, yp, first.params, out1)
    second.residual(0.0, y, yp, second.params, out2)
    assert np.array_equal(out1, out2)


SPRING_YAML = """
model: msd_param
parameters: {k: 4.0}
components:
  v: {type: EffortJunction, output: true}
  mass: {type: I, inertia: 1.0}
  spring: {type: C, effort: "k*q", q0: 0.1}
  damper: {type: R, resistance: 0.4}
bonds: [[v, mass], [v, spring], [v, damper]]
"""


@pytest.mark.parametrize("k", [4.0, 9.0])
def test_runtime_parameter_changes_the_run_without_rebuilding(k):
    from bondsim_ros.bondgraph.yamlmodel import loads_model

    compiled = compile_model(loads_model(SPRING_YAML))
    res = simulate(compiled, t_end=5.0, dt_out=0.01, options=SolverOptions(rtol=1e-10, atol=1e-12), params={"k": k})
    x, _ = mass_spring_damper_analytic(res.t, k=k)
    assert rel_err(res["spring.q"], x) <= 1e-6


def test_result_csv_is_what_savetxt_writes(tmp_path):
    """SimulationResult.to_csv: the header, then the rows as np.savetxt(fmt="%.17g",
    delimiter=",") writes them, byte for byte: signed zeros, NaN, infinities, subnormals and
    more rows than one formatting block; a table without rows is the header alone."""
    import csv
    import io

    from bondsim_ros.bondgraph.simulation import SimulationResult, _CSV_BLOCK

    rng = np.random.default_rng(11)
    data = rng.standard_normal((2 * _CSV_BLOCK + 7, 5)) * 10.0 ** rng.integers(-300, 300, (2 * _CSV_BLOCK + 7, 5))
    data[3] = [0.0, -0.0, np.nan, np.inf, -np.inf]
    data[4] = [5e-324, 1.7976931348623157e308, -1e-5, 0.1, 123456789012345678.0]
    for table in (data, data[:0], data[:1]):
        res = SimulationResult(names=["t", "a", "b", "c", "d"], data=table)
        res.to_csv(tmp_path / "r.csv")
        expected = io.StringIO(newline="")
        csv.writer(expected).writerow(res.names)
        np.savetxt(expected, table, fmt="%.17g", delimiter=",")
        assert (tmp_path / "r.csv").read_bytes() == expected.getvalue().encode()
