"""A Robotino digital twin that steps in (scaled) real time: commands in, joint states out.

ROS-free: the dynamics node wraps it, the benchmarks and tests drive it directly. Data flows one
way: command -> model parameters -> BDF solver -> outputs -> joint states and pose.

Roller joints: the paper's model has one contact roller per wheel; the angle of each of the six
rollers is advanced only while it is the one touching the ground (others coast), integrated
between frames with the trapezoidal rule on the contact roller's speed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .robotino import N_ROLLERS, contact_roller, load_params, robotino


@dataclass
class Limits:
    max_linear: float = 1.0  # m/s (Robotino: about 10 km/h top speed; conservative default)
    max_angular: float = 3.0  # rad/s
    huge: float = 1e3  # commands above this are refused outright rather than clamped


@dataclass
class TwinState:
    t: float
    pose: tuple  # x, y, phi (world / odom frame)
    twist_world: tuple  # vx, vy, wz
    twist_body: tuple  # vx, vy, wz in the robot frame
    joint_names: list
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    currents: np.ndarray
    voltages: np.ndarray
    wheel_speeds: np.ndarray
    wheel_speed_refs: np.ndarray
    reference: tuple | None = None  # x_ref, y_ref, phi_ref in rose mode
    extra: dict = field(default_factory=dict)


class CommandError(ValueError):
    """A velocity command that cannot be applied (not finite, or absurdly large)."""


class RobotinoTwin:
    """Step the Robotino model to wall-clock (or scaled) times; accept body-twist commands."""

    def __init__(self, reference: str = "twist", rtol: float = 1e-6, atol: float = 1e-8, hmax: float = 0.02,
                 limits: Limits | None = None, config=None, log=None):
        from bondsim_ros.bondgraph.codegen import compile_model
        from bondsim_ros.bondgraph.simulation import Simulation

        if reference not in ("twist", "rose"):
            raise ValueError(f"reference must be 'twist' (cmd_vel) or 'rose', got {reference!r}")
        self.reference = reference
        self.limits = limits or Limits()
        self.params = load_params(config)
        self.compiled = compile_model(robotino(reference=reference, config=config), log=log)
        self._sim_args = dict(rtol=rtol, atol=atol, hmax=hmax)
        self._Simulation = Simulation
        self.joint_names = [f"wheel{i}_axle" if j == 0 else f"wheel{i}_roller{j}"
                            for i in (1, 2, 3) for j in range(0, N_ROLLERS + 1)]
        self.gear = float(self.params["gear.ratio"])
        self.torque_constant = float(self.params["motor.torque_constant"])
        names = ["t"] + list(self.compiled.output_names)
        self._col = {n: k for k, n in enumerate(names)}
        self.command = (0.0, 0.0, 0.0)
        self.reset()

    # -- lifecycle -------------------------------------------------------------------
    def reset(self) -> None:
        self.sim = self._Simulation(self.compiled, **self._sim_args)
        self.t = 0.0
        self._rollers = np.zeros((3, N_ROLLERS))
        first = np.concatenate([[0.0], self.sim.outputs_at(0.0, self.sim.solver.y, self.sim.solver.yp)])
        self._last = first
        if self.reference == "twist":
            self.set_command(*self.command)

    def recover(self) -> str:
        """After a failed ``step_to``: restart the integration from the last state returned
        (the solver keeps it; the failed stretch after it is dropped), so the twin holds its
        pose and goes on. Returns what was done."""
        solver = self.sim.solver
        solver.set_params(solver.p, restart=True)
        return f"restarted from the last state at t={self.t:.3f} s"

    # -- commands --------------------------------------------------------------------
    def set_command(self, vx: float, vy: float, wz: float) -> tuple:
        """Apply a body-frame twist; returns the command actually applied (clamped to limits)."""
        applied = self.limit_command(vx, vy, wz)
        if applied != self.command:
            self.sim.set_params(dict(zip(("vx_cmd", "vy_cmd", "wz_cmd"), applied)), restart=True)
            self.command = applied
        return applied

    def limit_command(self, vx: float, vy: float, wz: float) -> tuple:
        """The command ``set_command`` would apply (clamped to the limits), without applying
        it; CommandError if it would be refused."""
        if self.reference != "twist":
            raise CommandError("this twin follows the rose reference; build it with reference='twist' for cmd_vel")
        vals = (float(vx), float(vy), float(wz))
        if not all(math.isfinite(v) for v in vals):
            raise CommandError(f"command not finite: {vals}")
        if any(abs(v) > self.limits.huge for v in vals):
            raise CommandError(f"command absurdly large (> {self.limits.huge:g}): {vals}")
        lin = math.hypot(vals[0], vals[1])
        scale = min(1.0, self.limits.max_linear / lin) if lin > 0 else 1.0
        return (vals[0] * scale, vals[1] * scale, max(-self.limits.max_angular, min(self.limits.max_angular, vals[2])))

    # -- time --------------------------------------------------------------------------
    def step_to(self, t: float) -> TwinState:
        """Advance the model to time ``t`` and return the state there; any ``t`` at or before
        the last output time returns the last state.

        The solver ends a step (to within a few ulps) at ``t``: the state returned is a
        converged step point, not an interpolation between steps. A command that arrives next
        restarts the integration from this state, and an interpolated state violates the
        wheels' rolling constraints by up to 1e-2 (interpolation across order-5 steps of the
        index-2 momenta), which the restart cannot repair: the first step then has to jump and
        the step size underflows (issue 15: random in-limit commands at 100 Hz, ~15 s)."""
        if not t > self.t:
            return self.state()
        solver = self.sim.solver
        land = t + 64 * np.finfo(float).eps * max(1.0, abs(t))  # > hmin: never a sub-hmin last step
        Y, YP = solver.advance([t], tstop=land)
        y, yp = Y[0], YP[0]
        row = np.concatenate([[t], self.sim.outputs_at(t, y, yp)])
        self.sim.t, self.sim.last_y, self.sim.last_yp = t, y.copy(), yp.copy()
        dt = t - self.t
        c = self._col
        for i in (1, 2, 3):
            theta = row[c[f"wheel{i}_axle"]]
            k = int(contact_roller(theta))
            self._rollers[i - 1, k] += 0.5 * (row[c[f"wr{i}"]] + self._last[c[f"wr{i}"]]) * dt
        self._last = row
        self.t = t
        return self.state()

    def state(self) -> TwinState:
        row, c = self._last, self._col
        pos, vel, eff = [], [], []
        for i in (1, 2, 3):
            theta = row[c[f"wheel{i}_axle"]]
            contact = int(contact_roller(theta))
            pos.append(theta)
            vel.append(row[c[f"w{i}"]])
            # wheel torque through the gear: tau_i = -N k_m i  (TF e2 = k e1 with k = -N)
            eff.append(-self.gear * self.torque_constant * row[c[f"i{i}"]])
            for j in range(N_ROLLERS):
                pos.append(self._rollers[i - 1, j])
                vel.append(row[c[f"wr{i}"]] if j == contact else 0.0)
                eff.append(0.0)
        x, y, phi = row[c["x"]], row[c["y"]], row[c["phi"]]
        vx, vy, wz = row[c["vx"]], row[c["vy"]], row[c["wz"]]
        cph, sph = math.cos(phi), math.sin(phi)
        ref = None
        if "x_ref" in c:
            ref = (row[c["x_ref"]], row[c["y_ref"]], row[c["phi_ref"]])
        return TwinState(
            t=self.t, pose=(x, y, phi), twist_world=(vx, vy, wz),
            twist_body=(cph * vx + sph * vy, -sph * vx + cph * vy, wz),
            joint_names=self.joint_names, position=np.array(pos), velocity=np.array(vel), effort=np.array(eff),
            currents=np.array([row[c[f"i{i}"]] for i in (1, 2, 3)]),
            voltages=np.array([row[c[f"u{i}"]] for i in (1, 2, 3)]),
            wheel_speeds=np.array([row[c[f"w{i}"]] for i in (1, 2, 3)]),
            wheel_speed_refs=np.array([row[c[f"w{i}_ref"]] for i in (1, 2, 3)]),
            reference=ref,
        )


def wheel_speeds_for_twist(vx, vy, wz, params) -> np.ndarray:
    """Kinematically expected wheel speeds for a body twist [eq. 24 in the robot frame]."""
    from .robotino import ALPHA

    r, rw = float(params["chassis.radius_to_wheel"]), float(params["wheel.radius"])
    return np.array([-(r * wz - vx * math.sin(a) + vy * math.cos(a)) / rw for a in ALPHA])
