"""The Robotino's digital twin: the generic ModelTwin over the Robotino model, plus what is the
Robotino's own (roller joints derived from the wheel angles, motor states, the base's inverse
kinematics for wheel-speed commands).

ROS-free: the dynamics node wraps it, the benchmarks and tests drive it directly. Data flows one
way: command -> model parameters -> BDF solver -> outputs -> joint states and pose.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bondsim_ros.paths import share_file
from bondsim_ros.solver.options import SolverOptions
from bondsim_ros.twin.model_twin import Binding, ModelTwin
from bondsim_ros.twin.protocol import BUILTIN, OK, TWIST, CommandError, Diagnostic, Limits, TwinState

from .model import N_ROLLERS, contact_roller, load_params, param, robotino

__all__ = ["RobotinoTwin", "RobotinoState", "Limits", "CommandError", "wheel_speeds_for_twist"]

AXLES = ("wheel1_axle", "wheel2_axle", "wheel3_axle")


@dataclass
class RobotinoState(TwinState):
    """TwinState with the Robotino's motors (three of them: its own business, not the node's)."""

    currents: np.ndarray = field(default_factory=lambda: np.zeros(3))
    voltages: np.ndarray = field(default_factory=lambda: np.zeros(3))
    wheel_speeds: np.ndarray = field(default_factory=lambda: np.zeros(3))


def binding(command: str) -> Binding:
    """The Robotino model's columns bound to its mechanism: wheel angles and base pose; the
    twist command's parameters where ``command`` is TWIST. The rollers are no columns (the
    twin integrates them)."""
    return Binding(mechanism=share_file("urdf", "robotino", "Robotino_project.xml"),
                   joints={a: a for a in AXLES},
                   base={"x": "x", "y": "y", "yaw": "phi", "vx": "vx", "vy": "vy", "wz": "wz"},
                   twist={"vx": "vx_cmd", "vy": "vy_cmd", "wz": "wz_cmd"} if command == TWIST else None,
                   source="robotino")


class RobotinoTwin(ModelTwin):
    """The Robotino's twin: a ModelTwin whose joints are the three wheel axles and, per wheel, six
    rollers derived from the wheel angles (the hooks ``_restarted``, ``_advanced``,
    ``_joint_arrays``), whose state carries the motors' currents, voltages and wheel speeds,
    reported on motor_states and in the diagnostics."""

    motor_names = ("motor1", "motor2", "motor3")
    wheel_joints = AXLES  # the driven wheels, for wheel-speed commands (ros2_control's velocity interfaces)

    def __init__(self, command: str = TWIST, options: SolverOptions | None = None, limits: Limits | None = None,
                 config=None, log=None):
        if command not in (TWIST, BUILTIN):
            raise ValueError(f"command must be {TWIST!r} (cmd_vel) or {BUILTIN!r} (the rose path), got {command!r}")
        self.params = load_params(config)
        self.gear = param(self.params, "gear.ratio")
        self.torque_constant = param(self.params, "motor.torque_constant")
        model = robotino(reference="twist" if command == TWIST else "rose", config=config)
        super().__init__("robotino", model, binding(command), options, limits=limits, command=command, log=log)
        self.joint_names = [f"wheel{i}_axle" if j == 0 else f"wheel{i}_roller{j}"
                            for i in (1, 2, 3) for j in range(0, N_ROLLERS + 1)]

    # -- the rollers: the paper's model has one contact roller per wheel; the angle of each of
    # the six rollers is advanced only while it is the one touching the ground (others coast),
    # integrated between frames with the trapezoidal rule on the contact roller's speed --------
    def _restarted(self) -> None:
        self._rollers = np.zeros((3, N_ROLLERS))

    def _advanced(self, previous: dict, dt: float) -> None:
        r = self._row
        for i in (1, 2, 3):
            k = int(contact_roller(r[f"wheel{i}_axle"]))
            self._rollers[i - 1, k] += 0.5 * (r[f"wr{i}"] + previous[f"wr{i}"]) * dt

    def _joint_arrays(self) -> tuple:
        r = self._row
        pos, vel, eff = [], [], []
        for i in (1, 2, 3):
            theta = r[f"wheel{i}_axle"]
            contact = int(contact_roller(theta))
            pos.append(theta)
            vel.append(r[f"w{i}"])
            # wheel torque through the gear: tau_i = -N k_m i  (TF e2 = k e1 with k = -N)
            eff.append(-self.gear * self.torque_constant * r[f"i{i}"])
            for j in range(N_ROLLERS):
                pos.append(self._rollers[i - 1, j])
                vel.append(r[f"wr{i}"] if j == contact else 0.0)
                eff.append(0.0)
        return np.array(pos), np.array(vel), np.array(eff)

    def _make_state(self, **fields) -> RobotinoState:
        r = self._row
        return RobotinoState(**fields, currents=np.array([r[f"i{i}"] for i in (1, 2, 3)]),
                             voltages=np.array([r[f"u{i}"] for i in (1, 2, 3)]),
                             wheel_speeds=np.array([r[f"w{i}"] for i in (1, 2, 3)]))

    # -- the motors and the base's inverse kinematics --------------------------------------------
    def motor_states(self, state):
        """motor_states: voltage [V] as position, motor speed as velocity, current [A] as effort."""
        return (list(self.motor_names), state.voltages, -self.gear * state.wheel_speeds, state.currents)

    def diagnostics(self, state) -> list:
        """Per motor: current, voltage, wheel speed."""
        return [Diagnostic(f"robotino/motor{k + 1}", OK, "ok",
                           {"current [A]": f"{state.currents[k]:.4f}", "voltage [V]": f"{state.voltages[k]:.3f}",
                            "wheel speed [rad/s]": f"{state.wheel_speeds[k]:.4f}"}) for k in range(3)]

    def twist_for_wheel_speeds(self, speeds) -> tuple:
        """The body twist (vx, vy, wz) whose kinematic wheel speeds [rad/s] are ``speeds``
        (wheel1..3): eq. 24 inverted, three wheels for three unknowns."""
        m = np.column_stack([wheel_speeds_for_twist(*e, self.params) for e in np.eye(3)])
        return tuple(float(v) for v in np.linalg.solve(m, np.asarray(speeds, dtype=float)))


def wheel_speeds_for_twist(vx, vy, wz, params) -> np.ndarray:
    """Kinematically expected wheel speeds for a body twist [eq. 24 in the robot frame]."""
    from bondsim_ros.physics.omni import ALPHA, wheel_speeds

    return wheel_speeds(vx, vy, wz, ALPHA, param(params, "chassis.radius_to_wheel"), param(params, "wheel.radius"))
