"""A Robotino digital twin that steps in (scaled) real time: commands in, joint states out.

ROS-free: the dynamics node wraps it, the benchmarks and tests drive it directly. Data flows one
way: command -> model parameters -> BDF solver -> outputs -> joint states and pose.

Roller joints: the paper's model has one contact roller per wheel; the angle of each of the six
rollers is advanced only while it is the one touching the ground (others coast), integrated
between frames with the trapezoidal rule on the contact roller's speed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bondsim_ros.paths import share_file
from bondsim_ros.twin.protocol import OK, CommandError, Diagnostic, Limits, TwinState, body_twist, limit_twist

from .model import N_ROLLERS, contact_roller, load_params, robotino

__all__ = ["RobotinoTwin", "RobotinoState", "Limits", "CommandError", "wheel_speeds_for_twist"]


@dataclass
class RobotinoState(TwinState):
    """TwinState with the Robotino's motors (three of them: its own business, not the node's)."""

    currents: np.ndarray = field(default_factory=lambda: np.zeros(3))
    voltages: np.ndarray = field(default_factory=lambda: np.zeros(3))
    wheel_speeds: np.ndarray = field(default_factory=lambda: np.zeros(3))


class RobotinoTwin:
    """The Robotino's plug-in implementation of the Twin protocol (bondsim_ros.twin.protocol):
    its own class because the roller joints are integrated here, between frames."""

    name = "robotino"

    def __init__(self, reference: str = "twist", rtol: float = 1e-6, atol: float = 1e-8, hmax: float = 0.02,
                 limits: Limits | None = None, config=None, log=None):
        from bondsim_ros.bondgraph.codegen import compile_model
        from bondsim_ros.bondgraph.simulation import Simulation

        if reference not in ("twist", "rose"):
            raise ValueError(f"reference must be 'twist' (cmd_vel) or 'rose', got {reference!r}")
        self.reference = reference
        self.commands = frozenset({"twist"}) if reference == "twist" else frozenset()
        self.mechanism = share_file("urdf", "robotino", "Robotino_project.xml")
        self._kinematics = None
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
        self.sim.restart()
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
        return limit_twist(self.limits, vx, vy, wz)

    # the Twin protocol's names
    set_twist = set_command
    limit_twist = limit_command

    @property
    def twist(self) -> tuple:
        """The body twist applied now (after the limits)."""
        return self.command

    def set_joint_trajectory(self, trajectory) -> None:
        raise CommandError("the Robotino has no joint trajectory command (it takes cmd_vel)")

    # the driven wheels, for wheel-speed commands (ros2_control's velocity interfaces)
    wheel_joints = ("wheel1_axle", "wheel2_axle", "wheel3_axle")

    def twist_for_wheel_speeds(self, speeds) -> tuple:
        """The body twist (vx, vy, wz) whose kinematic wheel speeds [rad/s] are ``speeds``
        (wheel1..3): eq. 24 inverted, three wheels for three unknowns."""
        m = np.column_stack([wheel_speeds_for_twist(*e, self.params) for e in np.eye(3)])
        return tuple(float(v) for v in np.linalg.solve(m, np.asarray(speeds, dtype=float)))

    def set_params(self, values: dict) -> None:
        try:
            self.sim.set_params(values, restart=True)  # checks every value before setting any
        except (KeyError, ValueError) as exc:  # an unknown name, or the engine's ModelError
            raise CommandError(f"parameter value(s) refused: {exc}") from None

    @property
    def columns(self) -> list:
        """The model's output columns, as `bondsim-ros simulate robotino_twist` writes them."""
        return list(self._col)

    def column(self, name: str) -> float:
        """The value of a column at the newest state."""
        return float(self._last[self._col[name]])

    def probe_points(self, state) -> dict:
        if self._kinematics is None:
            from bondsim_ros.mechanism.probes import ProbeKinematics

            self._kinematics = ProbeKinematics.from_file(self.mechanism)
        return self._kinematics.probe_points(state.pose, state.joint_map())

    def diagnostics(self, state) -> list:
        """Per motor: current, voltage, wheel speed."""
        return [Diagnostic(f"robotino/motor{k + 1}", OK, "ok",
                           {"current [A]": f"{state.currents[k]:.4f}", "voltage [V]": f"{state.voltages[k]:.3f}",
                            "wheel speed [rad/s]": f"{state.wheel_speeds[k]:.4f}"}) for k in range(3)]

    def motor_states(self, state):
        """motor_states: voltage [V] as position, motor speed as velocity, current [A] as effort."""
        return (["motor1", "motor2", "motor3"], state.voltages, -self.gear * state.wheel_speeds, state.currents)

    # -- time --------------------------------------------------------------------------
    def step_to(self, t: float) -> TwinState:
        """Advance the model to time ``t`` and return the state there; any ``t`` at or before
        the last output time returns the last state.

        The solver ends a step at ``t`` (Simulation.step_to): the state returned is a converged
        step point, which a command arriving next can restart from (interpolated states broke
        the wheels' rolling constraints and underflowed the step size)."""
        if not t > self.t:
            return self.state()
        y, yp = self.sim.step_to(t)
        row = np.concatenate([[t], self.sim.outputs_at(t, y, yp)])
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
        ref = None
        if "x_ref" in c:
            ref = (row[c["x_ref"]], row[c["y_ref"]], row[c["phi_ref"]])
        return RobotinoState(
            t=self.t, pose=(x, y, phi), twist_world=(vx, vy, wz),
            twist_body=body_twist(phi, vx, vy, wz),
            joint_names=self.joint_names, position=np.array(pos), velocity=np.array(vel), effort=np.array(eff),
            currents=np.array([row[c[f"i{i}"]] for i in (1, 2, 3)]),
            voltages=np.array([row[c[f"u{i}"]] for i in (1, 2, 3)]),
            wheel_speeds=np.array([row[c[f"w{i}"]] for i in (1, 2, 3)]),
            reference=ref,
        )


def wheel_speeds_for_twist(vx, vy, wz, params) -> np.ndarray:
    """Kinematically expected wheel speeds for a body twist [eq. 24 in the robot frame]."""
    from bondsim_ros.physics.omni import ALPHA, wheel_speeds

    return wheel_speeds(vx, vy, wz, ALPHA, float(params["chassis.radius_to_wheel"]), float(params["wheel.radius"]))
