"""Small bond-graph models with closed-form answers: the engine's worked examples and tests.

Each builder returns a :class:`~bondsim_ros.bondgraph.Model`; ``analytic`` functions next to
them give the exact solution the tests and benchmarks compare against.
"""
from __future__ import annotations

import math

import numpy as np

from bondsim_ros.bondgraph import (
    TF, C, DCMotor, EffortJunction, FlowJunction, I, Integrator, Model, R, Recorder, Se, Sf,
)


# --------------------------------------------------------------------------------------
# Mass-spring-damper, released from a displacement
# --------------------------------------------------------------------------------------
def mass_spring_damper(m=1.0, k=4.0, b=0.4, x0=0.1, force=0.0) -> Model:
    """m x'' + b x' + k x = F; the spring's q is the displacement x, the mass's p = m v."""
    model = Model("mass_spring_damper", "1-junction with Se, I (mass), C (spring 1/k), R (damper)")
    v = model.add(EffortJunction("v", output=True))
    model.add(Se("F", force), I("mass", m), C("spring", 1.0 / k, q0=x0), R("damper", b))
    model.add(Recorder("rec", ["x", "v"]))
    model.bond("F", v)
    for name in ("mass", "spring", "damper"):
        model.bond(v, name)
    model.connect(v.out, "rec.v")
    model.add(Integrator("pos", x0))
    model.connect(v.out, "pos.in_")
    model.connect("pos.out", "rec.x")
    return model


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


# --------------------------------------------------------------------------------------
# Series RLC driven by a voltage step
# --------------------------------------------------------------------------------------
def series_rlc(V=10.0, Rv=2.0, L=0.5, Cv=0.01) -> Model:
    """Se (step V at t = 0) -> 1-junction (common current) -> R, I (inductor), C (capacitor)."""
    model = Model("series_rlc", "voltage step into a series R-L-C loop")
    i = model.add(EffortJunction("loop", output=True))
    model.add(Se("V", V), R("R", Rv), I("L", L), C("C", Cv))
    model.bond("V", i)
    for name in ("R", "L", "C"):
        model.bond(i, name)
    model.add(Recorder("rec", ["i"]))
    model.connect(i.out, "rec.i")
    return model


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


# --------------------------------------------------------------------------------------
# DC motor with gear and load, driven by a voltage step
# --------------------------------------------------------------------------------------
DC_MOTOR = dict(V=24.0, Ra=1.2, La=0.0012, K=0.03, Jm=1.2e-6, bm=2e-6, N=16.0, JL=4e-4, bL=1e-4)


def dc_motor(V=24.0, Ra=1.2, La=0.0012, K=0.03, Jm=1.2e-6, bm=2e-6, N=16.0, JL=4e-4, bL=1e-4) -> Model:
    """Armature (R, L) -> GY (K) -> rotor (J, b) -> TF (gear N) -> load (J, b).

    The rotor and the load inertias are rigidly joined through the gear: the DAE has a
    dependent inertia (derivative causality in classical terms) that the BDF solver takes as is.
    TF convention of the paper: f1 = k f2, so with k = N the rotor turns N times faster.
    """
    model = Model("dc_motor", "DC motor with gear and inertial load, voltage step")
    load = model.add(EffortJunction("load", output=True))
    model.add(Se("V", V), DCMotor("motor", Ra=Ra, La=La, K=K, J=Jm, b=bm, ratio=N), I("JL", JL), R("bL", bL))
    model.bond("V", "motor.supply")
    model.bond("motor.shaft", load)
    model.bond(load, "JL")
    model.bond(load, "bL")
    model.add(Recorder("rec", ["current", "omega_motor", "omega_load"]))
    model.connect("motor.current", "rec.current")
    model.connect("motor.omega_motor", "rec.omega_motor")
    model.connect(load.out, "rec.omega_load")
    return model


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


# --------------------------------------------------------------------------------------
# Lossless oscillator (energy must be conserved)
# --------------------------------------------------------------------------------------
def lossless_oscillator(m=1.0, k=1.0, x0=1.0) -> Model:
    """I and C on a 0-junction: a frictionless mass on a spring, period 2 pi sqrt(m/k)."""
    model = Model("lossless_oscillator", "I and C exchanging energy through a 0-junction")
    j = model.add(FlowJunction("node", output=True))
    model.add(I("mass", m), C("spring", 1.0 / k, q0=x0))
    model.bond(j, "mass")
    model.bond(j, "spring")
    model.add(Recorder("rec", ["force"]))
    model.connect(j.out, "rec.force")
    return model


# --------------------------------------------------------------------------------------
# Planar pendulum written with a velocity constraint
# --------------------------------------------------------------------------------------
def pendulum(m=1.0, L=1.0, g=9.81, theta0=math.radians(60.0)) -> Model:
    """Point mass in Cartesian coordinates held on a rod by a zero-velocity source.

    Momenta px, py (I elements) and positions x, y (integrators); the rod's axial velocity
    (x vx + y vy)/L is the sum of two modulated transformers' flows into a 0-junction, set to
    zero by Sf. The common effort of that junction is the rod force: an index-2 multiplier, the
    same structure as the Robotino's wheel contacts.
    """
    model = Model("pendulum", "Cartesian pendulum with a velocity-level rod constraint")
    model.parameter("L", L, "rod length [m]")
    jx = model.add(EffortJunction("vx", output=True))
    jy = model.add(EffortJunction("vy", output=True))
    rod = model.add(FlowJunction("rod", output=True))
    model.add(I("mx", m), I("my", m), Se("gravity", -m * g))
    model.add(TF("tx", "x/L", inputs=["x"]), TF("ty", "y/L", inputs=["y"]), Sf("axial", 0.0))
    model.add(Integrator("X", L * math.sin(theta0)), Integrator("Y", -L * math.cos(theta0)))
    model.bond(jx, "mx")
    model.bond(jy, "my")
    model.bond("gravity", jy)
    model.bond("axial", rod)
    model.bond(rod, "tx.p1")
    model.bond("tx.p2", jx)
    model.bond(rod, "ty.p1")
    model.bond("ty.p2", jy)
    model.connect(jx.out, "X.in_")
    model.connect(jy.out, "Y.in_")
    model.connect("X.out", "tx.x")
    model.connect("Y.out", "ty.y")
    model.add(Recorder("rec", ["x", "y", "rod_force"]))
    model.connect("X.out", "rec.x")
    model.connect("Y.out", "rec.y")
    model.connect(rod.out, "rec.rod_force")
    return model


def pendulum_period(L=1.0, g=9.81, theta0=math.radians(60.0)) -> float:
    """Exact period 4 sqrt(L/g) K(sin^2(theta0/2)) (complete elliptic integral, parameter m)."""
    from scipy.special import ellipk

    return 4.0 * math.sqrt(L / g) * float(ellipk(math.sin(theta0 / 2) ** 2))


BUILTIN = {
    "mass_spring_damper": mass_spring_damper,
    "series_rlc": series_rlc,
    "dc_motor": dc_motor,
    "lossless_oscillator": lossless_oscillator,
    "pendulum": pendulum,
}
