"""The multibody benchmarks' closed forms: the pendulum and the slider crank as ODEs in one coordinate,
solved by SciPy (DOP853, rtol 1e-12), the references the bond-graph variants are checked
against (test_multibody_paper, benchmarks/solver_bench.py)."""
from __future__ import annotations

import math

import numpy as np

from bondsim_ros.robots.multibody.model import G, PENDULUM, SLIDER, _slider_sympy


def pendulum_reference(t, **over):
    """Independent reference: SciPy's solve_ivp (DOP853, rtol 1e-12) on the closed-form ODE."""
    from scipy.integrate import solve_ivp

    p = {**PENDULUM, **over}
    m, L = p["m"], p["L"]
    Jo = p["J"] + m * L**2 / 4

    def rhs(_t, s):
        return [s[1], (-m * G * L / 2 * math.sin(s[0]) - p["B"] * s[1]) / Jo]

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [p["theta0"], 0.0], method="DOP853", t_eval=t, rtol=1e-12, atol=1e-12)
    return sol.y[0], sol.y[1]


def slider_crank_reference(t, **over):
    """Independent reference: solve_ivp on J(gamma) gamma'' = Q - 1/2 J'(gamma) gamma'^2 (numpy)."""
    import sympy as sp
    from scipy.integrate import solve_ivp

    p = {**SLIDER, **over}
    e = _slider_sympy(**over)
    Jf, dJf, Qf, Txf = (sp.lambdify(e["sym"], e[k], "math") for k in ("J", "dJ", "Q", "Tx"))

    def rhs(_t, s):
        g, om = s
        return [om, (Qf(g) - 0.5 * dJf(g) * om**2) / Jf(g)]

    sol = solve_ivp(rhs, (0.0, float(t[-1])), [p["gamma0"], 0.0], method="DOP853", t_eval=t, rtol=1e-12, atol=1e-12)
    v = np.array([Txf(g) for g in sol.y[0]]) * sol.y[1]
    return sol.y[0], sol.y[1], v
