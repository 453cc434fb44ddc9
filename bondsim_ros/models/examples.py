"""Small bond-graph models with closed-form answers: the engine's worked examples and tests.

Each builder returns a :class:`~bondsim_ros.bondgraph.Model`; their exact solutions, which the
tests and benchmarks compare against, are in test/oracles/examples.py.
"""
from __future__ import annotations

import math

from bondsim_ros.bondgraph import (
    TF, C, DCMotor, EffortJunction, FlowJunction, Function, I, Integrator, Model, R, Recorder, Se, Sf,
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

    Momenta px, py (I elements); the mass's direction from the pivot (u, w) = (x, y)/L as
    integrators of the velocity over L, so the run-time parameter L (``--param L=2``) is the rod's
    length: a position integrated in metres would start at the build-time length whatever L is
    set to. The rod's axial velocity u vx + w vy is the sum of two modulated transformers' flows
    into a 0-junction, set to zero by Sf. The common effort of that junction is the rod force: an
    index-2 multiplier, the same structure as the Robotino's wheel contacts.
    """
    model = Model("pendulum", "Cartesian pendulum with a velocity-level rod constraint")
    model.parameter("L", L, "rod length [m]")
    jx = model.add(EffortJunction("vx", output=True))
    jy = model.add(EffortJunction("vy", output=True))
    rod = model.add(FlowJunction("rod", output=True))
    model.add(I("mx", m), I("my", m), Se("gravity", -m * g))
    model.add(TF("tx", "u", inputs=["u"]), TF("ty", "w", inputs=["w"]), Sf("axial", 0.0))
    model.add(Function("du", "v/L", inputs=["v"]), Function("dw", "v/L", inputs=["v"]))
    model.add(Integrator("U", math.sin(theta0)), Integrator("W", -math.cos(theta0)))
    model.add(Function("X", "L*u", inputs=["u"]), Function("Y", "L*w", inputs=["w"]))
    model.bond(jx, "mx")
    model.bond(jy, "my")
    model.bond("gravity", jy)
    model.bond("axial", rod)
    model.bond(rod, "tx.p1")
    model.bond("tx.p2", jx)
    model.bond(rod, "ty.p1")
    model.bond("ty.p2", jy)
    model.connect(jx.out, "du.v")
    model.connect(jy.out, "dw.v")
    model.connect("du.out", "U.in_")
    model.connect("dw.out", "W.in_")
    model.connect("U.out", "tx.u")
    model.connect("W.out", "ty.w")
    model.connect("U.out", "X.u")
    model.connect("W.out", "Y.w")
    model.add(Recorder("rec", ["x", "y", "rod_force"]))
    model.connect("X.out", "rec.x")
    model.connect("Y.out", "rec.y")
    model.connect(rod.out, "rec.rod_force")
    return model
