"""Calibrate the Robotino's wheel-speed PI gains to the paper's Fig. 34 (Damic & Cohodar Husic).

No datasheet or paper text gives the gains. With eq. 24 fed by the reference and PI speed
loops, the heading error is e_phi = -(kappa/ki) phi_ref'(t) with kappa = K + R_a b_v / K
(docs/robotino.md), so ki follows from the target heading error; kp then follows from the
Routh bound of the PI loop around the motor, ki < R_a (K + kp) / L_a, kept at ``--margin``.
The script prints the gains, the bound, and the errors of a 50 s paper run with them.

    python tools/robotino_calibrate.py --target-phi 4e-6 --margin 0.78
"""
from __future__ import annotations

import argparse

import numpy as np


def gains(params: dict, target_phi: float, margin: float, wz_max: float) -> tuple[float, float]:
    """(kp, ki): ki for e_phi = target_phi at |phi_ref'| = wz_max, kp so that ki = margin * bound."""
    K, R, L = params["motor.torque_constant"], params["motor.armature_resistance"], params["motor.armature_inductance"]
    kappa = K + R * params.get("motor.viscous_friction", 0.0) / K
    ki = kappa * wz_max / target_phi
    kp = ki * L / (R * margin) - K
    return kp, ki


def main(argv=None):
    from bondsim_ros.bondgraph import compile_model, simulate
    from bondsim_ros.robots.robotino import model as rb
    from bondsim_ros.solver import SolverOptions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target-phi", type=float, default=4e-6, help="heading error to reach [rad]")
    ap.add_argument("--margin", type=float, default=0.78, help="ki as a fraction of the Routh bound")
    a = ap.parse_args(argv)
    prm = rb.load_params()
    fns, _ = rb.rose_functions()
    import sympy as sp

    t = np.linspace(0.0, 50.0, 20001)
    wz = sp.lambdify(sp.Symbol("t", real=True), sp.sympify(fns["w"]), "numpy")(t)
    kp, ki = gains(prm, a.target_phi, a.margin, float(np.max(np.abs(wz))))
    K, R, L = prm["motor.torque_constant"], prm["motor.armature_resistance"], prm["motor.armature_inductance"]
    print(f"max |phi_ref'| = {np.max(np.abs(wz)):.4f} rad/s; kp = {kp:.4g} V s/rad, ki = {ki:.4g} V/rad "
          f"(Routh bound {R * (K + kp) / L:.4g})")
    r = simulate(compile_model(rb.robotino({"controller.kp": kp, "controller.ki": ki})),
                 t_end=50.0, dt_out=0.02, options=SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.02))
    after = r.t > 5.0
    for k, unit in (("x", "m"), ("y", "m"), ("phi", "rad")):
        print(f"max |{k} - {k}_ref| after 5 s: {np.max(np.abs(r[k] - r[k + '_ref'])[after]):.3g} {unit}")


if __name__ == "__main__":
    main()
