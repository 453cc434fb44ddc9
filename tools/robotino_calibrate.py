"""Calibrate the Robotino's wheel-speed PID gains to the paper's Fig. 34 (Damic & Cohodar Husic).

No datasheet or paper text gives the gains ("common PID controllers", section 3.4). With eq. 24
fed by the reference and integral action on the motor speed, the heading error is
e_phi = -(kappa/ki) phi_ref'(t), kappa = K + R_a b_v / K (docs/robotino.md), so

1. ki = kappa max|phi_ref'| / target_phi;
2. the derivative filter time tf is the largest of ``TF_GRID`` (the softest filter, the
   least high-frequency gain kd/tf) at which some (kp, kd) gives every closed-loop pole of the
   wheel drive loop a damping ratio of at least ``--min-damping``;
3. kp and kd are those of the grids ``KP_GRID``, ``KD_GRID`` that maximise the smallest damping
   ratio at that tf.

The loop: armature L_a i' = u - R_a i - K w, rotor J w' = K i - b_v w (motor side), PID
C(s) = kp + ki/s + kd s/(tf s + 1) on the motor speed. J is the rotor's plus the load's
through the gear: the wheels' equal drives decouple the chassis into its two translation
modes (load per wheel I_w + 2/3 m R_w^2) and its rotation mode (I_w + I_z R_w^2 / (3 R^2)).
Characteristic polynomial:

    s (tf s + 1) [(L_a s + R_a)(J s + b_v) + K^2] + K [(kp s + ki)(tf s + 1) + kd s^2]

(with kd = 0 and no filter it is the PI loop L_a J s^3 + ... + K ki, Routh-stable only for
ki < R_a (K + kp) / L_a when b_v = 0; that bound is printed for comparison.)

    python tools/robotino_calibrate.py              # the gains in config/robotino.yaml
    python tools/robotino_calibrate.py --simulate   # and the Fig. 34 errors of a 50 s paper run
    python tools/robotino_calibrate.py --kp 50 --kd 0.02 --tf 2e-4   # poles of given gains
    python tools/robotino_calibrate.py --sensitivity  # values no source gives vs Fig. 34
"""
from __future__ import annotations

import argparse

import numpy as np

TF_GRID = (1e-4, 2e-4, 3e-4, 5e-4, 1e-3)  # s
KP_GRID = tuple(float(k) for k in range(5, 151, 5))  # V s/rad
KD_GRID = tuple(round(0.002 * k, 3) for k in range(1, 41))  # V s^2/rad


def max_heading_rate(fns: dict) -> float:
    """max |phi_ref'| of the rose over one period of its angle (2 pi / a; a = 0.1 rad/s)."""
    import sympy as sp

    t = np.linspace(0.0, 70.0, 140001)
    wz = sp.lambdify(sp.Symbol("t", real=True), sp.sympify(fns["w"]), "numpy")(t)
    return float(np.max(np.abs(wz)))


def kappa(p: dict) -> float:
    """Motor voltage per motor speed in steady motion: back EMF plus what friction's current draws."""
    K = p["motor.torque_constant"]
    return K + p["motor.armature_resistance"] * p.get("motor.viscous_friction", 0.0) / K


def integral_gain(p: dict, target_phi: float, wz_max: float) -> float:
    return kappa(p) * wz_max / target_phi


def mode_inertias(p: dict) -> dict:
    """Motor-side inertia of one drive in each chassis mode (translation, rotation)."""
    n, rw, rc = p["gear.ratio"], p["wheel.radius"], p["chassis.radius_to_wheel"]
    iw, jm = p["wheel.inertia_axle"], p["motor.rotor_inertia"]
    loads = {"translation": iw + 2.0 / 3.0 * p["chassis.mass"] * rw**2,
             "rotation": iw + p["chassis.inertia_z"] * rw**2 / (3.0 * rc**2)}
    return {mode: jm + load / n**2 for mode, load in loads.items()}


def loop_poles(p: dict, J: float, kp: float, ki: float, kd: float, tf: float) -> np.ndarray:
    """Closed-loop poles of one wheel-speed loop (motor-side inertia J) under the filtered PID."""
    R, L, K, b = (p["motor.armature_resistance"], p["motor.armature_inductance"], p["motor.torque_constant"],
                  p.get("motor.viscous_friction", 0.0))
    plant = np.polyadd(np.polymul([L, R], [J, b]), [K * K])
    if kd:
        lhs = np.polymul(np.polymul([1.0, 0.0], [tf, 1.0]), plant)
        ctrl = K * np.polyadd(np.polymul([kp, ki], [tf, 1.0]), [kd, 0.0, 0.0])
    else:  # PI: the filter state is not there
        lhs, ctrl = np.polymul([1.0, 0.0], plant), K * np.array([kp, ki])
    return np.roots(np.polyadd(lhs, ctrl))


def damping(poles: np.ndarray) -> np.ndarray:
    return -poles.real / np.abs(poles)


def worst_damping(p: dict, kp, ki, kd, tf) -> float:
    """Smallest damping ratio over the poles of both chassis modes (below 0: unstable)."""
    return min(float(np.min(damping(loop_poles(p, J, kp, ki, kd, tf)))) for J in mode_inertias(p).values())


def best_kp_kd(p: dict, ki: float, tf: float) -> tuple[float, float, float]:
    """(kp, kd, worst damping) of the grids that maximise the worst damping at this tf."""
    return max(((kp, kd, worst_damping(p, kp, ki, kd, tf)) for kp in KP_GRID for kd in KD_GRID),
               key=lambda r: r[2])


def calibrate(p: dict, target_phi: float = 1e-6, min_damping: float = 0.4, wz_max: float | None = None) -> dict:
    """The gains by the rule of the module docstring: kp, ki, kd, tf and the worst damping."""
    if wz_max is None:
        from bondsim_ros.robots.robotino import model as rb

        wz_max = max_heading_rate(rb.rose_functions()[0])
    ki = float(round(integral_gain(p, target_phi, wz_max)))
    for tf in sorted(TF_GRID, reverse=True):
        kp, kd, zeta = best_kp_kd(p, ki, tf)
        if zeta >= min_damping:
            return dict(kp=kp, ki=ki, kd=kd, tf=tf, damping=zeta, wz_max=wz_max)
    raise SystemExit(f"no tf in {TF_GRID} reaches damping {min_damping} with ki = {ki:.6g}")


def pole_table(p: dict, kp, ki, kd, tf) -> list[str]:
    rows = ["| mode | J (motor side) [kg m^2] | pole [1/s] | magnitude [rad/s] | damping |", "|---|---|---|---|---|"]
    for mode, J in mode_inertias(p).items():
        for s in sorted(loop_poles(p, J, kp, ki, kd, tf), key=lambda z: (abs(z), z.imag)):
            if s.imag < 0:
                continue  # one row per conjugate pair
            pole = f"{s.real:.0f} ± {s.imag:.0f}j" if s.imag > 0 else f"{s.real:.0f}"
            rows.append(f"| {mode} | {J:.4g} | {pole} | {abs(s):.0f} | {-s.real / abs(s):.3f} |")
    return rows


def paper_errors(overrides: dict, rtol: float = 1e-6) -> dict:
    """max |x - x_ref|, |y - y_ref|, |phi - phi_ref| after 5 s of the 50 s paper run, and its counters."""
    from bondsim_ros.bondgraph import compile_model, simulate
    from bondsim_ros.robots.robotino import model as rb
    from bondsim_ros.solver import SolverOptions

    r = simulate(compile_model(rb.robotino(overrides)), t_end=50.0, dt_out=0.02,
                 options=SolverOptions(hmax=0.02, rtol=rtol, atol=rtol * 1e-2))
    after = r.t > 5.0
    out = {k: float(np.max(np.abs(r[k] - r[k + "_ref"])[after])) for k in ("x", "y", "phi")}
    out["stats"] = r.stats
    return out


# Values no source gives, changed one at a time (the chassis' yaw inertia a uniform disc of
# r = 0.185 m of its mass, as the configured one): docs/robotino.md, "Values no source gives".
SENSITIVITY = (
    ("none (m = 11 kg, b_v = 1e-6)", {}),
    ("m = 8 kg, I_z = 0.137 kg m^2", {"chassis.mass": 8.0, "chassis.inertia_z": 0.5 * 8.0 * 0.185**2}),
    ("m = 25 kg, I_z = 0.428 kg m^2", {"chassis.mass": 25.0, "chassis.inertia_z": 0.5 * 25.0 * 0.185**2}),
    ("b_v = 1e-4 N m s/rad", {"motor.viscous_friction": 1e-4}),
    ("b_v = 1e-3 N m s/rad", {"motor.viscous_friction": 1e-3}),
    ("I_w = 3e-4 kg m^2", {"wheel.inertia_axle": 3e-4}),
)


def sensitivity(rtol: float = 1e-6) -> list[str]:
    """The configured gains against each changed value: worst damping and the Fig. 34 errors."""
    from bondsim_ros.robots.robotino import model as rb

    rows = ["| changed value | worst loop damping | e_X [m] | e_Y [m] | e_phi [rad] | (kappa/ki) max|phi_ref'| |",
            "|---|---|---|---|---|---|"]
    wz_max = max_heading_rate(rb.rose_functions()[0])
    for name, over in SENSITIVITY:
        p = rb.load_params(overrides=over)
        gains = (p["controller.kp"], p["controller.ki"], p["controller.kd"], p["controller.derivative_filter_time"])
        e = paper_errors(over, rtol)
        rows.append(f"| {name} | {worst_damping(p, *gains):.3f} | {e['x']:.3g} | {e['y']:.3g} | {e['phi']:.3g} | "
                    f"{kappa(p) / p['controller.ki'] * wz_max:.3g} |")
    return rows


def main(argv=None):
    from bondsim_ros.robots.robotino import model as rb

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target-phi", type=float, default=1e-6, help="heading error to reach [rad] (Fig. 34: 1e-6)")
    ap.add_argument("--min-damping", type=float, default=0.4, help="damping every loop pole must reach")
    ap.add_argument("--kp", type=float, help="evaluate this kp (with --kd, --tf) instead of searching")
    ap.add_argument("--kd", type=float)
    ap.add_argument("--tf", type=float)
    ap.add_argument("--from-config", action="store_true",
                    help="evaluate the gains of config/robotino.yaml (controller.kp, ki, kd, derivative_filter_time)")
    ap.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config/robotino.yaml value, e.g. chassis.mass=25")
    ap.add_argument("--simulate", action="store_true", help="run the 50 s paper case with the gains")
    ap.add_argument("--sensitivity", action="store_true",
                    help="the configured gains with each value no source gives changed: damping and Fig. 34 errors")
    ap.add_argument("--rtol", type=float, default=1e-6)
    a = ap.parse_args(argv)
    if a.sensitivity:
        print("\n".join(sensitivity(a.rtol)))
        return
    over = {}
    for item in a.param:
        key, sep, val = item.partition("=")
        if not sep:
            ap.error(f"--param {item!r}: expected KEY=VALUE")
        over[key] = float(val)
    p = rb.load_params(overrides=over)
    g = calibrate(p, a.target_phi, a.min_damping)
    if a.from_config:
        g.update(kp=p["controller.kp"], ki=p["controller.ki"], kd=p["controller.kd"],
                 tf=p["controller.derivative_filter_time"])
    if a.kp is not None or a.kd is not None or a.tf is not None:
        g.update(kp=a.kp if a.kp is not None else g["kp"], kd=a.kd if a.kd is not None else g["kd"],
                 tf=a.tf if a.tf is not None else g["tf"])
    g["damping"] = worst_damping(p, g["kp"], g["ki"], g["kd"], g["tf"])
    kp, ki, kd, tf = g["kp"], g["ki"], g["kd"], g["tf"]
    R, L, K = p["motor.armature_resistance"], p["motor.armature_inductance"], p["motor.torque_constant"]
    print(f"max |phi_ref'| = {g['wz_max']:.6f} rad/s, kappa = {kappa(p):.6g} V s/rad -> "
          f"ki = {ki:.6g} V/rad for e_phi = {a.target_phi:g} rad")
    print("best worst-damping per filter time: " + ", ".join(
        f"tf {t:g} s: {z:.3f} (kp {k:g}, kd {d:g})" for t in TF_GRID for k, d, z in [best_kp_kd(p, ki, t)]))
    print(f"gains: kp = {kp:g} V s/rad, ki = {ki:.6g} V/rad, kd = {kd:g} V s^2/rad, tf = {tf:g} s; "
          f"worst damping {g['damping']:.3f}")
    print(f"PI Routh bound at this kp (no derivative): ki < R_a (K + kp)/L_a = {R * (K + kp) / L:.6g} V/rad")
    print("\n".join(pole_table(p, kp, ki, kd, tf)))
    if a.simulate:
        e = paper_errors({"controller.kp": kp, "controller.ki": ki, "controller.kd": kd,
                          "controller.derivative_filter_time": tf, **over}, a.rtol)
        print(f"50 s paper run, rtol {a.rtol:g}: max after 5 s |e_x| {e['x']:.3g} m, |e_y| {e['y']:.3g} m, "
              f"|e_phi| {e['phi']:.3g} rad (kappa/ki max|phi_ref'| = {kappa(p) / ki * g['wz_max']:.3g})")
        st = e["stats"]
        print(f"solver: {st['steps']} steps, {st['rejected']} rejected, {st['newton_iters']} Newton, "
              f"{st['lu_factorizations']} LU, {st['events']} events")


if __name__ == "__main__":
    main()
