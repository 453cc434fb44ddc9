"""ModelTwin: any compiled bond-graph model bound to a mechanism XML, stepped in (scaled) real time.

The binding is the paper's IPC block (Damic & Cohodar Husic section 3.8): mechanism joint -> output column of
the model, and optionally the planar base pose {x, y, yaw} -> columns (and its velocity {vx, vy, wz}, world
frame; without those, the twist is the pose's motion over the last frame). Probe points come back
from the mechanism's own kinematics at the same state, so they can be compared at equal stamps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .protocol import TWIN_OPTIONS
from .protocol import (BUILTIN, OK, TRAJECTORY, TWIST, CommandError, Diagnostic, JointTrajectory, Limits, TwinState,
                       body_twist, limit_twist)
from .protocol import frame_twist, world_twist
from .trajectory import TrajectorySampler
from bondsim_ros.solver.options import SolverOptions

TRAJECTORY_STEP = 0.01  # s: longest hold of a joint reference along a trajectory
TWIST_KEYS = ("vx", "vy", "wz")  # a twist's components, as a binding names their parameters


@dataclass
class Binding:
    """Mechanism joint -> model column; columns are the model's outputs (as in the CSV header of
    ``bondsim-ros simulate``) or columns ``derive`` adds from one row (the model's postprocessor)."""

    mechanism: Path
    joints: dict  # URDF joint name -> column, mechanism document order
    # {"x": col, "y": col, "yaw": col}, optionally with the base's velocity in odom {"vx", "vy", "wz": col}
    base: dict | None = None
    # {"vx", "vy", "wz": col}: the base's velocity in its own frame, where the model records it (a built-in
    # robot's columns; a variant without them reports the pose's motion over the frame)
    body_velocity: dict | None = None
    velocities: dict = field(default_factory=dict)  # joint -> velocity column (optional, all or none)
    efforts: dict = field(default_factory=dict)  # joint -> effort column (optional, all or none)
    derive: Callable | None = None  # derive(result) -> result with more columns (SimulationResult API)
    twist: dict | None = None  # {"vx": param, "vy": param or None, "wz": param}
    trajectory: dict | None = None  # joint -> (q_ref param, qd_ref param or None)
    hold: bool = True  # at reset, q_ref := the joints' positions (False: the model's own values)
    param_topics: dict = field(default_factory=dict)  # std_msgs/Float64 topic -> run-time parameter
    output_topics: dict = field(default_factory=dict)  # topic -> column, published each frame
    source: str = ""  # where the binding was declared, for messages


def mechanism_joints(path) -> list:
    """Non-virtual, moving joints of the (first robot of the) mechanism XML, document order: the
    joints robot_state_publisher and /joint_states carry."""
    from bondsim_ros.mechanism import load_mechanism

    mech = load_mechanism(path)
    units = mech.robots or mech.units
    return [j for j in units[0].joints if not j.virtual and j.type != "fixed"]


class ModelTwin:
    """Step a compiled model to given simulated times; joint states, base pose and probes out."""

    def __init__(self, name: str, model, binding: Binding, options: SolverOptions | None = None,
                 limits: Limits | None = None, command: str = BUILTIN, log=None):
        from bondsim_ros.bondgraph.codegen import CompiledModel, compile_model
        from bondsim_ros.bondgraph.simulation import Simulation, SimulationResult
        from bondsim_ros.mechanism.probes import ProbeKinematics
        from bondsim_ros.mechanism import load_mechanism

        self.name = name
        self.binding = binding
        self.mechanism = Path(binding.mechanism)
        self.limits = limits or Limits()
        self.compiled = model if isinstance(model, CompiledModel) else compile_model(model, log=log)
        self._Simulation, self._Result = Simulation, SimulationResult
        self.options = TWIN_OPTIONS if options is None else options
        # a model variant may take both (the dual-arm platform: base twist and arm joints)
        self.commands = frozenset(k for k in (TWIST, TRAJECTORY) if getattr(binding, k))
        if command != BUILTIN and command not in self.commands:
            raise ValueError(f"{name}: command {command!r} not available (has: {', '.join(sorted(self.commands))})")
        self.command = command
        self.joint_names = list(binding.joints)
        self._names = ["t"] + list(self.compiled.output_names)
        mech = load_mechanism(self.mechanism)
        self.kinematics = ProbeKinematics(mech)
        # a joint the mechanism lacks: /joint_states named it and robot_state_publisher never moved
        # the one meant (a YAML binding is checked on load, with its line; a Python one here)
        units = mech.robots or mech.units
        moving = [j.name for j in units[0].joints if not j.virtual and j.type != "fixed"]
        for joints, what in ((binding.joints, "joints"), (binding.velocities, "velocities"),
                             (binding.efforts, "efforts")):
            unknown = [j for j in joints if j not in moving]
            if unknown:
                raise ValueError(f"{binding.source or name}: {what}: {self.mechanism.name} has no moving joint "
                                 f"{', '.join(map(repr, unknown))} (its joints: {', '.join(moving) or 'none'})")
        self.twist = (0.0, 0.0, 0.0)
        self._traj = None
        self.reset()
        missing = [c for c in self._bound_columns() if c not in self._row_names]
        if missing:
            raise ValueError(f"{binding.source or name}: the model has no column(s) {', '.join(missing)} "
                             f"(columns: {', '.join(self._row_names)})")

    @property
    def unread_commands(self) -> list:
        """What a command bound to a run-time parameter that no law of the model reads would
        change: nothing. One line each ("commands.topics /x: parameter V"), for the node to say at
        start-up, as `simulate --param` says it (a command that moves nothing looks broken)."""
        b = self.binding
        bound = [(f"commands.twist.{k}", par) for k, par in (b.twist or {}).items() if par]
        for joint, (q_ref, qd_ref) in (b.trajectory or {}).items():
            bound += [(f"commands.joints.{joint}", par) for par in (q_ref, qd_ref) if par]
        bound += [(f"commands.topics.{topic}", par) for topic, par in b.param_topics.items()]
        unread = set(self.compiled.read_by_no_law([par for _, par in bound]))
        return [f"{what}: no law of model {self.compiled.name!r} reads parameter {par!r}, so the command "
                f"changes nothing" for what, par in bound if par in unread]

    def _bound_columns(self):
        b = self.binding
        cols = list(b.joints.values()) + list(b.velocities.values()) + list(b.efforts.values())
        return cols + (list(b.base.values()) if b.base else [])

    # -- lifecycle -------------------------------------------------------------------------
    def reset(self) -> None:
        # commanded by twist: the run starts at rest, as the twin was built (a reset is a fresh
        # start: no command in force), consistent with that zero twist from t = 0; otherwise the
        # model's own values run (a file's vx_cmd: 0.5 drives the base) and are the twist a later
        # command is compared with
        params = None
        if self.command == TWIST:
            self.twist = (0.0, 0.0, 0.0)
            params = self._twist_params(self.twist)
        self.sim = self._Simulation(self.compiled, self.options, params=params)
        if TWIST in self.commands and self.command != TWIST:
            names = [self.binding.twist.get(k) for k in TWIST_KEYS]
            self.twist = tuple(self.sim.param(name) if name else 0.0 for name in names)
        self.t = 0.0
        self._traj = None
        solver = self.sim.solver
        self._set_row(0.0, self.sim.outputs_at(0.0, solver.y, solver.yp))
        self._frame_twist = (0.0, 0.0, 0.0)  # no previous pose: the reset pose is a jump, not a motion
        self._restarted()
        if TRAJECTORY in self.commands and self.binding.hold:
            self._hold(self.state())

    def recover(self) -> str:
        self.sim.restart()
        return f"restarted from the last state at t={self.t:.3f} s"

    def _set_row(self, t, outputs):
        result = self._Result(names=self._names, data=np.concatenate([[t], outputs])[None, :])
        if self.binding.derive is not None:
            result = self.binding.derive(result)
        self._row_names = list(result.names)
        self._row = dict(zip(result.names, result.data[0]))

    # -- commands --------------------------------------------------------------------------
    def limit_twist(self, vx, vy, wz) -> tuple:
        if TWIST not in self.commands:
            raise CommandError(f"{self.name} takes no twist command here (command: {self.command})")
        vx, vy, wz = limit_twist(self.limits, vx, vy, wz)
        if self.binding.twist.get("vy") is None:
            vy = 0.0  # a differential drive cannot move sideways
        return (vx, vy, wz)

    def set_twist(self, vx, vy, wz) -> tuple:
        applied = self.limit_twist(vx, vy, wz)
        if applied != self.twist:
            self._apply_twist(applied, restart=True)
        return applied

    def _twist_params(self, cmd) -> dict:
        """The model's parameters a twist (vx, vy, wz) sets, with their values."""
        p = self.binding.twist
        return {p[k]: v for k, v in zip(TWIST_KEYS, cmd) if p.get(k)}

    def _apply_twist(self, cmd, restart):
        self.sim.set_params(self._twist_params(cmd), restart=restart)
        self.twist = tuple(cmd)

    @property
    def unknowns(self) -> int:
        return self.compiled.n

    motor_names = ()  # a model bound by joints reports no motors

    def motor_states(self, state: TwinState) -> tuple:
        return ([], np.zeros(0), np.zeros(0), np.zeros(0))

    @property
    def trajectory_joints(self) -> list:
        """The joints a joint trajectory (or a position command) drives."""
        return list(self.binding.trajectory or ())

    @property
    def velocity_reference_joints(self) -> list:
        """The trajectory joints that also take a velocity reference (a qd_ref parameter)."""
        return [j for j, (_, qdp) in (self.binding.trajectory or {}).items() if qdp]

    def set_joint_trajectory(self, traj: JointTrajectory) -> None:
        """Follow ``traj`` from now on: its points at their true times (a trajectory started in the
        past is joined where it is now), from the joints' state now to its first point."""
        if TRAJECTORY not in self.commands:
            raise CommandError(f"{self.name} takes no joint trajectory here (command: {self.command})")
        unknown = [n for n in traj.joint_names if n not in self.binding.trajectory]
        if unknown:
            raise CommandError(f"trajectory names joints {unknown} that {self.name} does not drive "
                               f"(driven: {sorted(self.binding.trajectory)})")
        state = self.state()
        qd_now = dict(zip(state.joint_names, map(float, state.velocity))) if len(state.velocity) else None
        start = self.t if traj.start is None else float(traj.start)
        self._traj = TrajectorySampler(traj, start, self.t, state.joint_map(), qd_now)

    def _hold(self, state):
        """References = where the joints are: a trajectory-commanded model at rest until told."""
        q = state.joint_map()
        values = {}
        for j, (qp, qdp) in self.binding.trajectory.items():
            values[qp] = q.get(j, 0.0)
            if qdp:
                values[qdp] = 0.0
        self.sim.set_params(values, restart=False)

    def _trajectory_params(self, t):
        q, qd = self._traj.sample(t)
        values = {}
        for k, j in enumerate(self._traj.names):
            qp, qdp = self.binding.trajectory[j]
            values[qp] = float(q[k])
            if qdp:
                values[qdp] = float(qd[k])
        # joints the trajectory omits hold their position reference, at rest (JTC's fill_partial_goal)
        named = set(self._traj.names)
        for j, (_, qdp) in self.binding.trajectory.items():
            if qdp and j not in named:
                values[qdp] = 0.0
        return values

    @property
    def param_topics(self) -> dict:
        return dict(self.binding.param_topics)

    @property
    def output_topics(self) -> dict:
        return dict(self.binding.output_topics)

    def check_params(self, values: dict) -> dict:
        """``values`` as floats if the model takes them, else CommandError naming the parameter:
        a parameter it lacks, a value that is not a finite number, or one its laws refuse (a
        negative resistance...). Nothing is set."""
        out = {}
        for name, value in values.items():
            if name not in self.compiled.param_names:
                raise CommandError(f"{self.name} has no run-time parameter {name!r}")
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise CommandError(f"parameter {name}: not a number: {value!r}") from None
            if not math.isfinite(v):
                raise CommandError(f"parameter {name}: value not finite: {v}")
            out[name] = v
        p = self.sim.problem.params.copy()
        for name, v in out.items():
            p[self.compiled.param_index(name)] = v
        try:
            self.compiled.check_params(p)
        except ValueError as exc:  # the engine's ParameterRefused: "model: parameter value(s) k = -1 refused (...)"
            raise CommandError(str(exc)) from None
        return out

    def set_params(self, values: dict) -> None:
        """Set run-time parameters now (at ``t``), the integration restarting there;
        CommandError (nothing set) as check_params says."""
        self.sim.set_params(self.check_params(values), restart=True)

    @property
    def columns(self) -> list:
        """The columns ``column`` reads (the model's outputs and the derived ones)."""
        return list(self._row_names)

    # -- time ------------------------------------------------------------------------------
    def step_to(self, t: float) -> TwinState:
        """Advance to ``t``; any ``t`` at or before the last output returns the last state. The
        solver ends a step at ``t`` (Simulation.step_to): a command restarting the
        integration there starts from a converged step point."""
        if not t > self.t:
            return self.state()
        if self._traj is None:
            y, yp = self.sim.step_to(t)
        else:
            # along a trajectory the references change every TRAJECTORY_STEP at most, each held
            # over its sub-step at its midpoint value: the motion does not depend on how long
            # the frames are (a loaded machine makes them long). The first sub-step that starts
            # at or after the last point sets it, held to t and beyond (the trajectory is done).
            t0 = self.sim.t
            while True:
                done = t0 >= self._traj.end
                # a sub-step a rounding error short of t would leave a sliver of a step behind
                t1 = t if done or t - t0 <= TRAJECTORY_STEP * (1 + 1e-9) else t0 + TRAJECTORY_STEP
                self.sim.set_params(self._trajectory_params(0.5 * (t0 + t1)), restart=True)
                y, yp = self.sim.step_to(t1)
                t0 = t1
                if done:
                    self._traj = None
                if done or t1 >= t:
                    break
        previous = self._row
        self._set_row(t, self.sim.outputs_at(t, y, yp))
        if self.binding.base:
            self._frame_twist = frame_twist(self._pose(previous), self._pose(self._row), t - self.t)
        self._advanced(previous, t - self.t)
        self.t = t
        return self.state()

    # -- hooks of a robot whose joints are not all model columns (the Robotino's rollers) ------
    def _restarted(self) -> None:
        """Called once the model is at its initial state (construction and ``reset``)."""

    def _advanced(self, previous: dict, dt: float) -> None:
        """Called after each step of ``dt`` > 0 s with the row before it (``self._row``: after)."""

    def _joint_arrays(self) -> tuple:
        """(position, velocity, effort) of ``joint_names`` at the newest row (velocity and
        effort empty where the binding gives none)."""
        r, b = self._row, self.binding
        pos = np.array([r[c] for c in b.joints.values()])
        vel = np.array([r[b.velocities[j]] for j in b.joints]) if b.velocities else np.zeros(0)
        eff = np.array([r[b.efforts[j]] for j in b.joints]) if b.efforts else np.zeros(0)
        return pos, vel, eff

    def _make_state(self, **fields) -> TwinState:
        """The state object (a robot's subclass of TwinState may carry more)."""
        return TwinState(**fields)

    def _pose(self, row) -> tuple:
        b = self.binding.base
        return (float(row[b["x"]]), float(row[b["y"]]), float(row[b["yaw"]]))

    def state(self) -> TwinState:
        r, b = self._row, self.binding
        pos, vel, eff = self._joint_arrays()
        pose = twist_body = twist_world = None
        if b.base:
            pose = self._pose(r)
            if b.body_velocity and all(c in r for c in b.body_velocity.values()):
                v = b.body_velocity
                twist_body = (float(r[v["vx"]]), float(r[v["vy"]]), float(r[v["wz"]]))
                twist_world = world_twist(pose[2], *twist_body)
            elif "vx" in b.base:
                twist_world = (float(r[b.base["vx"]]), float(r[b.base["vy"]]), float(r[b.base["wz"]]))
                twist_body = body_twist(pose[2], *twist_world)
            else:
                twist_body = self._frame_twist
                twist_world = world_twist(pose[2], *twist_body)
        ref = None
        if all(k in r for k in ("x_ref", "y_ref", "phi_ref")):
            ref = (float(r["x_ref"]), float(r["y_ref"]), float(r["phi_ref"]))
        return self._make_state(t=self.t, joint_names=self.joint_names, position=pos, velocity=vel, effort=eff,
                                pose=pose, twist_body=twist_body, twist_world=twist_world, reference=ref)

    def column(self, name: str) -> float:
        """The value of output column ``name`` at the current state (a model's outputs: topics)."""
        return float(self._row[name])

    def probe_points(self, state: TwinState) -> dict:
        return self.kinematics.probe_points(state.pose or (0.0, 0.0, 0.0), state.joint_map())

    def diagnostics(self, state: TwinState) -> list:
        values = {"sim time [s]": f"{state.t:.3f}", "command": self.command}
        if TWIST in self.commands:
            values["twist (vx, vy, wz)"] = ", ".join(f"{v:.3f}" for v in self.twist)
        return [Diagnostic(f"{self.name}/model", OK, "running", values)]
