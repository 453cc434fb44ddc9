"""Closed-form solutions of the worked examples (bondsim_ros/models/examples.py), with the
builders' default parameters: the exact answers test_examples_analytic and the solver
benchmark compare the engine against."""
from __future__ import annotations

import math

import numpy as np


def mass_spring_damper_analytic(t, m=1.0, k=4.0, b=0.4, x0=0.1):
    """Free underdamped response x(t), v(t) from x(0) = x0, v(0) = 0."""
    wn = math.sqrt(k / m)
    zeta = b / (2 * math.sqrt(k * m))
    if not zeta < 1:
        raise ValueError("analytic solution written for the underdamped case")
    wd = wn * math.sqrt(1 - zeta**2)
    a = zeta * wn
    e = np.exp(-a * t)
    x = e * (x0 * np.cos(wd * t) + (a * x0 / wd) * np.sin(wd * t))
    v = -e * x0 * (wn**2 / wd) * np.sin(wd * t)
    return x, v


def series_rlc_analytic(t, V=10.0, Rv=2.0, L=0.5, Cv=0.01):
    """Capacitor charge q(t) and current i(t) for a step from rest (underdamped)."""
    a = Rv / (2 * L)
    w0 = 1 / math.sqrt(L * Cv)
    wd = math.sqrt(w0**2 - a**2)
    qf = Cv * V
    e = np.exp(-a * t)
    q = qf * (1 - e * (np.cos(wd * t) + (a / wd) * np.sin(wd * t)))
    i = qf * e * (w0**2 / wd) * np.sin(wd * t)
    return q, i


def dc_motor_analytic(t, V=24.0, Ra=1.2, La=0.0012, K=0.03, Jm=1.2e-6, bm=2e-6, N=16.0, JL=4e-4, bL=1e-4):
    """Current and motor speed: the linear 2-state system referred to the motor shaft.

    J = Jm + JL/N^2, b = bm + bL/N^2;  La i' = V - Ra i - K w,  J w' = K i - b w.
    Solved by the eigen-decomposition of the 2x2 system matrix (closed form).
    """
    J = Jm + JL / N**2
    b = bm + bL / N**2
    A = np.array([[-Ra / La, -K / La], [K / J, -b / J]])
    B = np.array([V / La, 0.0])
    lam, vec = np.linalg.eig(A)
    xs = -np.linalg.solve(A, B)  # steady state
    c = np.linalg.solve(vec, -xs)  # x(0) = 0
    t = np.asarray(t, dtype=float)
    x = xs[:, None] + (vec * c) @ np.exp(np.outer(lam, t))
    return np.real(x[0]), np.real(x[1])


def pendulum_period(L=1.0, g=9.81, theta0=math.radians(60.0)) -> float:
    """Exact period 4 sqrt(L/g) K(sin^2(theta0/2)) (complete elliptic integral, parameter m)."""
    from scipy.special import ellipk

    return 4.0 * math.sqrt(L / g) * float(ellipk(math.sin(theta0 / 2) ** 2))
