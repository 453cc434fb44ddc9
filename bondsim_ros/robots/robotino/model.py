"""The Festo Robotino as a bond graph, built as Damic & Cohodar Husic section 3 describes it.

Structure (paper figure in brackets)::

    Robotino
    ├── Chassis            [25]  translation (I_X, I_Y), rotation (I_phi), pose integrators
    │   ├── transform1..3  [19]  wheel frame <-> world, TFs modulated by phi_i = phi + alpha_i
    │   │                        (chassis, transforms, eq. 24: the library bondsim_ros.physics.omni)
    │   └── drive1..3      [28]  PID -> Se(u) -> DCMotor: armature (R, L) -> GY(k_m) -> rotor (J, b) -> TF(-N)
    ├── wheel1..3          [21-24] axle inertia, RotLin TF(-1/R_w), contact roller with
    │                              rolling arm r_roll = r_max - R_w (1 - cos theta_ib)  [eqs. 10-13]
    ├── ground             [30]  zero-velocity flow sources at each contact point (x, y)
    └── reference          [29]  rose path, its velocities, phi_ref = integral of omega_ref [26-31]

Wheel i sits at alpha_i = pi/3, pi, -pi/3 in the chassis frame at radius R; its axle x_i points
outward. Rolling without slip: v_iy = -R_w omega_i [eq. 8]; side rolling: v_ix = r_roll
omega_roll [eq. 14]. The no-slip conditions are the Sf(0) contacts: velocity-level constraints
whose efforts (contact forces) are index-2 unknowns, solved by BDF as in BondSim.

Constraints are imposed in the wheel frame; the paper uses the world axes, which is the same
condition since the frame rotation R_i is orthogonal.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from bondsim_ros.bondgraph import (
    PID, TF, Component, DCMotor, EffortJunction, FlowJunction, Function, I, Input, Integrator, Model, Recorder, Sf,
)
from bondsim_ros.bondgraph.core import ModelError
from bondsim_ros.robots.plugin import ModelEntry
from bondsim_ros.paths import share_file
from bondsim_ros.physics.drives import SpeedDrive
from bondsim_ros.physics.omni import ALPHA, omni_chassis, wheel_frame, wheel_speed_law

N_ROLLERS = 6
JOINT_NAMES = (["base_x", "base_y", "base_phi"]
               + [n for i in (1, 2, 3) for n in [f"wheel{i}_axle"] + [f"wheel{i}_roller{j}" for j in range(1, 7)]])


# --------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------
def config_path() -> Path:
    """config/robotino.yaml: from the source tree, the ROS share folder, or the pip prefix."""
    return share_file("config", "robotino.yaml")


def _value(node):
    return node["value"] if isinstance(node, dict) and "value" in node else node


class Params(dict):
    """The flat parameters, with the file they were read from (``source``) for their errors."""

    source = "config/robotino.yaml"


def load_params(path=None, overrides: dict | None = None) -> dict:
    """Flat SI parameter dict from the YAML (``section.key`` names), with optional overrides. A
    file that cannot be read or is no such YAML: ModelError naming it (and the line)."""
    from_env = not path and bool(os.environ.get("BONDSIM_ROBOTINO_CONFIG"))
    path = Path(path or os.environ.get("BONDSIM_ROBOTINO_CONFIG") or config_path())
    where = f"{path} ($BONDSIM_ROBOTINO_CONFIG)" if from_env else str(path)
    import yaml  # here, not at the top: a warm `simulate` (build record) reads no config

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelError(where, f"cannot read the Robotino parameters: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ModelError(where, "not a text file (UTF-8)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"{path}:{mark.line + 1}" if mark is not None else where
        raise ModelError(line, f"not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise ModelError(where, "expected the Robotino's parameter sections (chassis:, wheel:, motor:, "
                                "controller:, ...)")
    flat = Params()
    flat.source = where
    for section, entries in data.items():
        if not isinstance(entries, dict):
            raise ModelError(_at(path, [section], from_env), f"{section}: expected a section of parameters "
                                                             f"(key: {{value: ..., note: ...}}), got {entries!r:.60}")
        for key, node in entries.items():
            val = _value(node)
            if isinstance(val, dict):
                for k2, v2 in val.items():
                    flat[f"{section}.{key}.{k2}"] = _value(v2)
            else:
                flat[f"{section}.{key}"] = val
    unknown = [k for k in flat if k not in KNOWN]
    if unknown:  # a misspelt key is no parameter: the model would run on the default or fail naming the other
        k = unknown[0]
        raise ModelError(_at(path, k.split("."), from_env), f"unknown parameter {k}{_did_you_mean(k)}")
    for k, v in (overrides or {}).items():
        if k not in KNOWN:
            raise ModelError(where, f"unknown parameter {k!r} among the overrides{_did_you_mean(str(k))}")
        flat[k] = v
    return flat


# Every key of the parameter file (section.key): what the model, the twin and the rose reference read,
# and the ones kept as facts of the robot that no model reads (drawing sizes, k_e = k_t in SI, wheel mass)
KNOWN = frozenset({
    "chassis.mass", "chassis.inertia_z", "chassis.radius_to_wheel", "chassis.diameter", "chassis.height",
    "wheel.radius", "wheel.inertia_axle", "wheel.mass", "wheel.roller_radius_max", "wheel.roller_inertia",
    "motor.armature_resistance", "motor.armature_inductance", "motor.torque_constant", "motor.back_emf_constant",
    "motor.rotor_inertia", "motor.viscous_friction", "motor.coulomb_friction", "motor.supply_voltage",
    "gear.ratio",
    "controller.kp", "controller.ki", "controller.kd", "controller.derivative_filter_time",
    "controller.firmware_kp", "controller.firmware_ki", "controller.voltage_limit",
    "reference.rose.A", "reference.rose.k", "reference.rose.a", "reference.rose.phi0",
})


def _did_you_mean(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(KNOWN), n=1)
    return f" (did you mean {close[0]}?)" if close else f" (known: {', '.join(sorted(KNOWN))})"


def _at(path, keys, from_env) -> str:
    """FILE:LINE of the key path ``keys`` in the parameter file, for its errors."""
    return f"{path}:{_line_of(path, keys)}" + (" ($BONDSIM_ROBOTINO_CONFIG)" if from_env else "")


def _line_of(path, keys) -> int | str:
    """The line of the file at which the mapping key path ``keys`` is written ("?" when not found)."""
    import yaml

    try:
        node = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except Exception:  # noqa: BLE001 - it was read once already: only the line number is lost
        return "?"
    line = "?"
    for key in keys:
        if isinstance(node, yaml.MappingNode) and any(k.value == "value" for k, _ in node.value) \
                and not any(k.value == key for k, _ in node.value):
            node = next(v for k, v in node.value if k.value == "value")  # {value: {...}, note: ...}
        match = [(k, v) for k, v in node.value if k.value == key] if isinstance(node, yaml.MappingNode) else []
        if not match:
            break
        line, node = match[-1][0].start_mark.line + 1, match[-1][1]
    return line


# Physical constants that only a positive value makes a Robotino of (a wheel radius of 0 divides
# by zero in the rolling transformer, a negative mass or gear ratio runs without a word), and
# those that may also be 0 (losses and gains)
POSITIVE = frozenset({
    "chassis.mass", "chassis.inertia_z", "chassis.radius_to_wheel", "wheel.radius", "wheel.inertia_axle",
    "wheel.roller_radius_max", "wheel.roller_inertia", "motor.armature_resistance", "motor.armature_inductance",
    "motor.torque_constant", "motor.rotor_inertia", "motor.supply_voltage", "gear.ratio",
    "controller.derivative_filter_time", "controller.voltage_limit",
})
NOT_NEGATIVE = frozenset({
    "motor.viscous_friction", "motor.coulomb_friction", "controller.kp", "controller.ki", "controller.kd",
    "controller.firmware_kp", "controller.firmware_ki",
})


def param(params, key, default=None):
    """The number at ``key`` of the Robotino parameters (``default`` when it is absent): a
    ModelError naming the parameter file and key when it is missing, not a finite number, or
    out of its physical range (POSITIVE, NOT_NEGATIVE)."""
    source = getattr(params, "source", Params.source)
    if key in params and params[key] is not None:
        value = params[key]
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number):
            raise ModelError(source, f"{key}: expected a finite number, got {value!r}")
        if key in POSITIVE and not number > 0:
            raise ModelError(source, f"{key}: expected a number > 0, got {value!r}")
        if key in NOT_NEGATIVE and number < 0:
            raise ModelError(source, f"{key}: expected a number >= 0, got {value!r}")
        return number
    if default is None:
        raise ModelError(source, f"parameter {key} is missing")
    return float(default)


# Physical constants the cmd_vel model exposes as run-time parameters (``model.parameter``), so
# `bondsim-ros fit robotino_twist` can calibrate them from a real robot's logs and the twin can
# take the calibrated values without a rebuild. Name -> config/robotino.yaml key.
RUNTIME_PARAMS = {
    "chassis_mass": "chassis.mass",
    "chassis_inertia": "chassis.inertia_z",
    "wheel_inertia": "wheel.inertia_axle",
    "motor_R": "motor.armature_resistance",
    "motor_L": "motor.armature_inductance",
    "motor_K": "motor.torque_constant",
    "motor_J": "motor.rotor_inertia",
    "motor_B": "motor.viscous_friction",
    "motor_Fc": "motor.coulomb_friction",
    "pid_kp": "controller.firmware_kp",
    "pid_ki": "controller.firmware_ki",
}
_RUNTIME_KEY = "__runtime__"  # prm entry: yaml key -> parameter name, for the keys made run-time


def _law(params, key, default=None):
    """An element value: the run-time parameter's name if ``key`` was made one, else the number."""
    name = params.get(_RUNTIME_KEY, {}).get(key)
    return name if name is not None else param(params, key, default)


# --------------------------------------------------------------------------------------
# Components
# --------------------------------------------------------------------------------------
class Drive(SpeedDrive):
    """DC motor, planetary gear and belt, PID wheel-speed controller [Fig. 28, eq. 25].

    The paper's drive: PID with a first-order derivative filter, kd s / (tf s + 1); the
    firmware drive: PI.

    ``limited``: the controller's voltage saturates at ``controller.voltage_limit`` with
    back-calculation anti-windup, as a real drive's supply bounds it; the paper's driver
    (a "common PID controller") has no limit.
    """

    def __init__(self, name, prm, limited=False):
        super().__init__(name, ratio=param(prm, "gear.ratio"))  # omega_m = -N omega_i [section 3.4]
        self.prm, self.limited = prm, limited

    def controller(self):
        p = self.prm
        vmax = param(p, "controller.voltage_limit", param(p, "motor.supply_voltage", 24.0))
        if self.limited:  # the firmware's PI: its own gains (run-time pid_kp, pid_ki), no derivative
            return PID("pid", kp=_law(p, "controller.firmware_kp"), ki=_law(p, "controller.firmware_ki"),
                       umin=-vmax, umax=vmax)
        # the paper's PID with a filtered derivative, calibrated to Fig. 34 (docs/robotino.md)
        return PID("pid", kp=_law(p, "controller.kp"), ki=_law(p, "controller.ki"), kd=param(p, "controller.kd", 0.0),
                   tf=param(p, "controller.derivative_filter_time", 0.002))

    def motor(self):
        p = self.prm
        bv, fc = _law(p, "motor.viscous_friction", 0.0), _law(p, "motor.coulomb_friction", 0.0)
        # Coulomb friction smoothed over 1 rad/s of motor speed: keeps the DAE smooth
        friction = f"{bv}*f + {fc}*tanh(f)" if isinstance(fc, str) or fc > 0 else None  # str(float) == repr
        self.add(DCMotor("motor", Ra=_law(p, "motor.armature_resistance"), La=_law(p, "motor.armature_inductance"),
                         K=_law(p, "motor.torque_constant"), J=_law(p, "motor.rotor_inertia"), b=bv, ratio=-self.ratio,
                         friction=friction))
        self.bond("voltage_source", "motor.supply")
        self.bond("motor.shaft", self.shaft)
        return "motor.omega_motor", "motor.current"


class Wheel(Component):
    """Omni wheel: axle rotation, rolling (RotLin) and side rolling of the contact roller [Figs. 21-24]."""

    def __init__(self, name, prm):
        super().__init__(name, ports={"axle": "in", "hub": "out", "ground": "in"},
                         controls={"theta": "out", "omega": "out", "omega_roller": "out"})
        self.prm = prm

    def build(self):
        p = self.prm
        rw = param(p, "wheel.radius")
        rmax = param(p, "wheel.roller_radius_max")
        drop = rw * (1 - math.cos(math.pi / 6))  # the rolling arm's loss at a roller's end, theta_b = pi/6
        if not rmax > drop:
            raise ModelError(getattr(p, "source", Params.source),
                             f"wheel.roller_radius_max: {rmax!r} leaves no rolling arm at a roller's end "
                             f"(it must exceed wheel.radius (1 - cos 30 deg) = {drop:.4g} m)")
        spin = self.add(EffortJunction("spin", output=True))
        roller = self.add(EffortJunction("roller", output=True))
        cx, cy = self.add(FlowJunction("contact_x")), self.add(FlowJunction("contact_y"))
        self.add(I("inertia", _law(p, "wheel.inertia_axle")),
                 I("roller_inertia", param(p, "wheel.roller_inertia", 2e-6)))
        self.add(TF("rotlin", -1.0 / rw))  # omega_i = -v_iy / R_w  [eqs. 8-9]
        # rolling arm of the contact roller, switching every pi/3 [eqs. 10-13]: theta_ib is
        # mod(theta, pi/3) or that minus pi/3 (paper), written as one Mod whose only wrap is the
        # roller switch at theta = pi/6 + k pi/3; a wheel at rest mid-roller (theta = 0) then sits
        # on no law boundary for round-off to flip
        theta_b = "Mod(th + pi/6, pi/3) - pi/6"
        self.add(TF("side_rolling", f"1/({rmax!r} - {rw!r}*(1 - cos({theta_b})))", inputs=["th"]))
        self.add(Integrator("angle", 0.0))
        self.bond(self.axle, spin)
        self.bond(spin, "inertia")
        self.bond(spin, "rotlin.p1")
        self.bond("rotlin.p2", cy)
        self.bond(roller, "roller_inertia")
        self.bond(roller, "side_rolling.p1")
        self.bond("side_rolling.p2", cx)
        self.bond(self.ground, cx)  # ground is a 2-vector port: contact x, then y
        self.bond(self.ground, cy)
        self.bond(cx, self.hub)
        self.bond(cy, self.hub)
        self.connect(spin.out, "angle.in_", self.omega)
        self.connect("angle.out", "side_rolling.th", self.theta)
        self.connect(roller.out, self.omega_roller)


class Ground(Component):
    """Three contacts, each two zero-velocity flow sources [Fig. 30]."""

    def __init__(self, name="ground"):
        super().__init__(name, ports={f"contact{i}": "out" for i in (1, 2, 3)})

    def build(self):
        for i in (1, 2, 3):
            for axis in ("x", "y"):
                self.add(Sf(f"v{axis}{i}", 0.0))
                self.bond(f"v{axis}{i}", self.ports[f"contact{i}"])


class Chassis(Component):
    """Chassis dynamics with the three drive units [Figs. 25-27]."""

    def __init__(self, name, prm, start, limited=False):
        ports = {f"hub{i}": "in" for i in (1, 2, 3)}
        ports.update({f"axle{i}": "out" for i in (1, 2, 3)})
        controls = {f"w{i}_ref": "in" for i in (1, 2, 3)}
        controls.update({k: "out" for k in ("x", "y", "phi", "vx", "vy", "wz")})
        controls.update({f"{k}{i}": "out" for k in ("i", "u", "wm") for i in (1, 2, 3)})
        super().__init__(name, ports=ports, controls=controls)
        self.prm, self.start, self.limited = prm, start, limited

    def build(self):
        p = self.prm
        # the whole robot: wheels translate with the chassis
        jx, jy, jw = omni_chassis(self, _law(p, "chassis.mass"), _law(p, "chassis.inertia_z"), self.start)
        self.connect(jx.out, self.vx)
        self.connect(jy.out, self.vy)
        self.connect(jw.out, self.wz)
        self.connect("pos_x.out", self.x)
        self.connect("pos_y.out", self.y)
        self.connect("heading.out", self.phi)
        radius = param(p, "chassis.radius_to_wheel")
        for i, alpha in zip((1, 2, 3), ALPHA):
            tr = wheel_frame(self, i, alpha, radius, (jx, jy, jw))
            self.bond(self.ports[f"hub{i}"], tr.local)
            drive = self.add(Drive(f"drive{i}", p, self.limited))
            self.bond(drive.shaft, self.ports[f"axle{i}"])
            self.connect(self.ports[f"w{i}_ref"], drive.omega_ref)
            self.connect(drive.current, self.ports[f"i{i}"])
            self.connect(drive.voltage, self.ports[f"u{i}"])
            self.connect(drive.omega_motor, self.ports[f"wm{i}"])


def rose_functions(A=2.0, k=3.0, a=0.1, phi0=5 * math.pi / 6):
    """Rose path [eqs. 26-30] as strings of t: X, Y, their rates, omega_ref; and phi_ref(0)."""
    import sympy as sp

    t = sp.Symbol("t", real=True)
    vphi = a * t + phi0
    X = A * sp.cos(k * vphi) * sp.cos(vphi)
    Y = A * sp.cos(k * vphi) * sp.sin(vphi)
    vx, vy = sp.diff(X, t), sp.diff(Y, t)
    ax, ay = sp.diff(vx, t), sp.diff(vy, t)
    omega = (vx * ay - vy * ax) / (vx**2 + vy**2)  # d/dt atan2(vy, vx)  [eq. 30]
    phi_start = math.atan2(float(vy.subs(t, 0)), float(vx.subs(t, 0)))
    return {"x": str(X), "y": str(Y), "vx": str(vx), "vy": str(vy), "w": str(omega)}, phi_start


def robotino(params: dict | None = None, reference: str = "rose", start=None, config=None,
             runtime=None, drive: str | None = None) -> Model:
    """Build the Robotino model. ``reference``: "rose" (the paper's case) or "twist" (cmd_vel).

    The wheel-speed references are eq. 24 evaluated on the reference (x_ref, y_ref, phi_ref and
    their rates): no pose feedback, as in the paper [Figs. 25, 29c].
    ``drive``: "paper" (PID without limits, the paper's drivers) or "firmware" (the voltage
    clipped at ``controller.voltage_limit`` with anti-windup, as on the robot); default
    "paper" for the rose, "firmware" for the twist.
    In "twist" mode the body-frame command is the run-time parameters ``vx_cmd, vy_cmd, wz_cmd``
    (m/s, rad/s), so a ROS node can change it between solver steps without rebuilding.
    ``runtime``: names from :data:`RUNTIME_PARAMS` to make run-time parameters too (default: all
    of them in "twist" mode, none in "rose" mode, which stays the paper's fixed case).
    """
    prm = load_params(config, params)
    if reference not in ("rose", "twist"):
        raise ValueError(f"reference must be 'rose' or 'twist', got {reference!r}")
    drive = drive or ("paper" if reference == "rose" else "firmware")
    if drive not in ("paper", "firmware"):
        raise ValueError(f"drive must be 'paper' or 'firmware', got {drive!r}")
    if runtime is None:
        runtime = list(RUNTIME_PARAMS) if reference == "twist" else []
    unknown = [n for n in runtime if n not in RUNTIME_PARAMS]
    if unknown:
        raise ValueError(f"not a Robotino run-time parameter: {', '.join(unknown)} (choose from "
                         f"{', '.join(RUNTIME_PARAMS)})")
    name = "robotino_twist" if reference == "twist" else ("robotino" if drive == "paper" else "robotino_firmware")
    model = Model(name, "Festo Robotino, as Damic & Cohodar Husic (2025) section 3 builds it")
    prm[_RUNTIME_KEY] = {}
    for pname in runtime:
        key = RUNTIME_PARAMS[pname]
        model.parameter(pname, param(prm, key, 0.0 if "friction" in key else None),
                        f"{key} [SI] from {Path(config).name if config else 'config/robotino.yaml'}")
        prm[_RUNTIME_KEY][key] = pname
    radius, rw = param(prm, "chassis.radius_to_wheel"), param(prm, "wheel.radius")
    if reference == "rose":
        fns, phi_start = rose_functions(param(prm, "reference.rose.A", 2.0), param(prm, "reference.rose.k", 3.0),
                                        param(prm, "reference.rose.a", 0.1),
                                        param(prm, "reference.rose.phi0", 5 * math.pi / 6))
        start = start or (0.0, 0.0, phi_start)
    else:
        start = start or (0.0, 0.0, 0.0)
    chassis = model.add(Chassis("chassis", prm, start, limited=drive == "firmware"))
    model.add(Ground("ground"))
    for i in (1, 2, 3):
        model.add(Wheel(f"wheel{i}", prm))
        model.bond(f"ground.contact{i}", f"wheel{i}.ground")
        model.bond(f"wheel{i}.hub", f"chassis.hub{i}")
        model.bond(f"chassis.axle{i}", f"wheel{i}.axle")

    cols = ["x", "y", "phi", "vx", "vy", "wz"] + [f"{k}{i}{s}"
                                                  for k, s in (("w", ""), ("w", "_ref"), ("i", ""), ("u", ""),
                                                               ("wm", ""), ("wr", ""))
                                                  for i in (1, 2, 3)]
    cols += ["base_x", "base_y", "base_phi"] + [f"wheel{i}_axle" for i in (1, 2, 3)]
    if reference == "rose":
        cols += ["x_ref", "y_ref", "phi_ref"]
    model.add(Recorder("rec", cols))
    for k in ("x", "y", "phi"):
        model.connect(chassis.ports[k], f"rec.{k}", f"rec.base_{k}")
    for k in ("vx", "vy", "wz"):
        model.connect(chassis.ports[k], f"rec.{k}")
    for i in (1, 2, 3):
        model.connect(f"wheel{i}.omega", f"rec.w{i}")
        model.connect(f"wheel{i}.theta", f"rec.wheel{i}_axle")
        model.connect(f"wheel{i}.omega_roller", f"rec.wr{i}")
        for k in ("i", "u", "wm"):
            model.connect(chassis.ports[f"{k}{i}"], f"rec.{k}{i}")

    if reference == "rose":
        # reference generator [Fig. 29c]: path, its velocity and the integrated heading [eq. 31]
        for key in ("x", "y", "vx", "vy", "w"):
            model.add(Input(f"ref_{key}", fns[key]))
        model.add(Integrator("ref_phi", start[2]))
        model.connect("ref_w.out", "ref_phi.in_")
        model.connect("ref_x.out", "rec.x_ref")
        model.connect("ref_y.out", "rec.y_ref")
        # eq. 24 on the Reference outputs [eqs. 28, 30, 31]: phi_ref, not the measured phi
        for i, alpha in zip((1, 2, 3), ALPHA):
            model.add(Function(f"ik{i}", wheel_speed_law(alpha, radius, rw), inputs=["vX", "vY", "wz", "phi"]))
            model.connect("ref_vx.out", f"ik{i}.vX")
            model.connect("ref_vy.out", f"ik{i}.vY")
            model.connect("ref_w.out", f"ik{i}.wz")
            model.connect("ref_phi.out", f"ik{i}.phi", *(["rec.phi_ref"] if i == 1 else []))
    else:
        model.parameter("vx_cmd", 0.0, "body-frame forward velocity command [m/s]")
        model.parameter("vy_cmd", 0.0, "body-frame left velocity command [m/s]")
        model.parameter("wz_cmd", 0.0, "yaw rate command [rad/s]")
        for i, alpha in zip((1, 2, 3), ALPHA):
            law = wheel_speed_law(alpha, radius, rw, body_frame=True)
            law = law.replace("wz", "wz_cmd").replace("vx", "vx_cmd").replace("vy", "vy_cmd")
            model.add(Input(f"ik{i}", law))
    for i in (1, 2, 3):
        model.connect(f"ik{i}.out", chassis.ports[f"w{i}_ref"], f"rec.w{i}_ref")
    return model


# --------------------------------------------------------------------------------------
# Roller joints (post-processing); the plots: plots.py
# --------------------------------------------------------------------------------------
def contact_roller(theta):
    """Index 0..5 of the roller touching the ground at wheel angle theta (XML convention:
    roller j sits at (j-1)*60 deg from the downward direction when the axle angle is 0)."""
    k = np.floor(np.asarray(theta) / (math.pi / 3) + 0.5).astype(int)
    return (-k) % N_ROLLERS


def roller_angles(t, theta, omega_roller, start=None):
    """Angle of each of the six rollers: the contact roller turns with omega_roller, the others coast
    at their last angle (the paper's model has one contact roller per wheel). ``start``: the six
    angles at the first row (default zeros), so that a table can be taken in blocks."""
    t, theta, w = map(np.asarray, (t, theta, omega_roller))
    # each row's trapezoid increment on its contact roller, summed down the rows in order
    # (np.cumsum adds row after row; the other rollers add +0.0, which changes no sum that
    # starts at +0.0): the Python loop's values bit for bit, in a fraction of a warm run's time
    steps = np.zeros((len(t), N_ROLLERS))
    if len(t) > 1:
        steps[np.arange(1, len(t)), contact_roller(theta)[1:]] = 0.5 * (w[1:] + w[:-1]) * (t[1:] - t[:-1])
    if start is not None:
        steps[0] = start
    return np.cumsum(steps, axis=0)


def add_roller_columns(result):
    """Append wheel{i}_roller{j} joint columns to a SimulationResult (document order kept in names)."""
    rows = RollerRows(result.names)
    return result.with_columns(rows.names, rows(result.data).T)


class RollerRows:
    """``add_roller_columns``'s columns, computed for successive blocks of rows (``simulate
    --csv`` formats them while the solve runs): each block's increments use the row before it,
    and the sums go on from the last row's angles, added row after row as np.cumsum adds them,
    so the values are those of the whole table's, bit for bit."""

    def __init__(self, names):
        names = list(names)
        self._cols = [(names.index("t"), names.index(f"wheel{i}_axle"), names.index(f"wr{i}")) for i in (1, 2, 3)]
        self.names = [f"wheel{i}_roller{j + 1}" for i in (1, 2, 3) for j in range(N_ROLLERS)]
        self._last = None  # the previous block's last row
        self._angles = None  # (3, N_ROLLERS): the angles at that row

    def __call__(self, rows):
        rows = np.asarray(rows, dtype=float)
        ext = rows if self._last is None else np.concatenate([self._last, rows])
        out = []
        for k, (it, ith, iw) in enumerate(self._cols):
            start = None if self._last is None else self._angles[k]  # its own step is in them
            out.append(roller_angles(ext[:, it], ext[:, ith], ext[:, iw], start)[len(ext) - len(rows):])
        self._last, self._angles = rows[-1:].copy(), [a[-1].copy() for a in out]
        return np.concatenate(out, axis=1)


def write_config(estimates: dict, out_path, notes: dict | None = None, source=None) -> Path:
    """Write a copy of the Robotino parameter YAML (``source``, default the one in use) with the
    fitted run-time parameters substituted, each noted with where its value came from. The twin
    takes it as ``robot_config`` (dynamics_node) or ``BONDSIM_ROBOTINO_CONFIG``."""
    not_physical = [n for n in estimates if n not in RUNTIME_PARAMS]
    if not_physical:
        raise ValueError(f"not Robotino configuration parameters: {', '.join(not_physical)} "
                         f"(configurable: {', '.join(RUNTIME_PARAMS)})")
    src = Path(source or os.environ.get("BONDSIM_ROBOTINO_CONFIG") or config_path())
    import yaml

    data = yaml.safe_load(src.read_text())
    for name, value in estimates.items():
        section, key = RUNTIME_PARAMS[name].split(".")
        data[section][key] = {"value": float(value), "note": (notes or {}).get(name, "fitted by bondsim-ros fit")}
    out = Path(out_path)
    text = (f"# Robotino parameters (SI): {src.name} with {', '.join(estimates)} fitted by bondsim-ros fit.\n"
            + yaml.safe_dump(data, sort_keys=False, width=120))
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text)  # whole file or nothing
    tmp.replace(out)
    return out


def _build_rose():
    return robotino(reference="rose")


def _build_firmware():
    return robotino(reference="rose", drive="firmware")


def _build_twist():
    return robotino(reference="twist")


ENTRIES = [
    ModelEntry("robotino", _build_rose, "Festo Robotino on the rose path of Damic & Cohodar Husic (2025)",
               defaults=dict(t_end=50.0, dt_out=0.02), postprocess=add_roller_columns, postprocess_rows=RollerRows),
    ModelEntry("robotino_firmware", _build_firmware,
               "Festo Robotino on the rose path, drive voltage clipped at the supply with anti-windup",
               defaults=dict(t_end=50.0, dt_out=0.02), postprocess=add_roller_columns, postprocess_rows=RollerRows),
    ModelEntry("robotino_twist", _build_twist, "Festo Robotino driven by a body twist (vx_cmd, vy_cmd, wz_cmd)",
               defaults=dict(t_end=5.0, dt_out=0.02), postprocess=add_roller_columns, postprocess_rows=RollerRows,
               write_config=write_config),
]
