"""The 5DPO three-wheel omnidirectional soccer robot (Magalhães, Moreira, Costa,
ICARSC 2020) as a bond graph with the Robotino's structure.

    Omni5DPO
    ├── chassis      translation (I_X, I_Y: 26.2 kg), rotation (I_z = Izz), pose integrators
    │   └── transform1..3   physics.omni.Transform: wheel frame <-> world, TFs modulated by phi + alpha_i
    ├── drive1..3    slew limit (61.09 rad/s^2) -> PI on motor speed -> dead band -> Se(u)
    │                -> R_i -> GY(K) -> gear TF(-12) -> wheel axle (I_w, Bv, Fc)
    ├── wheel1..3    RotLin TF(-1/r_w) into the contact's rolling direction; free roller sideways
    └── reference    body twist (vx_cmd, vy_cmd, wz_cmd) + a step (v_step, w_step at t_step)

Numbers from the paper: Table I (gear 1:12, R_i = 0.317 ohm, K = 0.0302 N m/A, 256 PPR
encoder), Table II (26.2 kg, wheels 0.660 kg of radius 0.0513 m), section III (wheels 120 deg
apart at d = 19.5 cm), section IV-A (Bv = 0.0324, Fc = 0.036735 N m), section IV-B (PID kp =
0.06472, ki = 0.043796, kd = 0 of eq. 6; I_zz = 1.1 kg m^2 identified, Table II's 0.705 the
starting value), section V (wheel acceleration limited to 61.09 rad/s^2).

Modelling choices the paper leaves open (each is a run-time parameter, so ``fit`` can revise it):

- **Where Bv and Fc act.** Section IV-A measures them on the "motor set" (motor, gearbox and
  wheel) suspended in the air. Applied at the motor shaft, Bv = 0.0324 N m s/rad would hold the
  motor to 64 rad/s at 24 V (wheel 5.3 rad/s, 0.27 m/s), far below the speeds of a soccer
  robot and of the K = 0.0302 motor's no-load speed (~790 rad/s); applied at the wheel axle
  the robot reaches ~3 m/s at 24 V. They act at the wheel axle here.
- **Coulomb friction** Fc·tanh(ω/ω_s) with ω_s = 0.05 rad/s of wheel speed instead of
  Fc·sign(ω): sign() is discontinuous at rest, where the BDF solver's Newton iteration would
  chatter and the step size collapse; tanh is smooth, equals sign() to 1 % above 2.6 ω_s
  (0.13 rad/s of the wheel), and a smooth law also keeps the fit's finite differences meaningful.
- **Dead zone** as a dead band on the controller's voltage, u_m = u − clip(u, −u_dead, u_dead),
  with u_dead = R_i Fc / K = 0.386 V, the zero-speed intercept of the paper's eq. (4). The
  axle's Coulomb term above adds R_i Fc / (12 K) = 0.032 V to it, so the model's intercept is
  0.418 V (8 % above eq. (4)'s) and its steady voltage at a wheel speed some 6 % above eq. (4)
  read at the wheel.
- **PI controller** on the motor-shaft speed (rad/s), the continuous C(s) of eq. (6), output
  limited to the 24 V of section IV-A's voltage range, with back-calculation anti-windup.
- No armature inductance, no rotor inertia and the wheel as a uniform disc: the paper gives
  neither value and its model (eqs. 2-3) has none of them on the motor side.

``omni5dpo_twist`` (``COMMAND_MODELS``) is the same robot driven by the run-time body
twist alone (cmd_vel), with the speed PI retuned for it (``TWIST_GAINS``, docs/examples.md).
"""
from __future__ import annotations

from bondsim_ros.bondgraph import (
    GY, PID, TF, EffortJunction, Function, Input, Integrator, Model, R, Recorder,
)
from bondsim_ros.robots.plugin import ModelEntry
from bondsim_ros.physics.drives import SpeedDrive
from bondsim_ros.physics.omni import ALPHA, OmniWheel, omni_chassis, wheel_frame, wheel_speed_law
from bondsim_ros.physics.rotations import rotate_planar

# Paper values (section / table in the comment) and the modelling choices documented above.
PAPER = dict(
    gear=12.0,            # Table I: reduction gear 1:12
    Ri=0.317,             # Table I: motor resistance [ohm]
    K=0.0302,             # Table I: motor constant [N m/A] = [V s/rad]
    encoder_ppr=256,      # Table I: encoder pulses per revolution (not needed by the continuous model)
    mass=26.2,            # Table II: robot weight [kg]
    wheel_mass=0.660,     # Table II [kg]
    wheel_radius=0.0513,  # Table II [m]
    Izz_start=0.705,      # Table II: starting I_zz [kg m^2]
    d=0.195,              # section III: wheel to centre [m]
    Bv=0.0324,            # section IV-A [N m s/rad]
    Fc=0.036735,          # section IV-A [N m]
    kp=0.06472,           # section IV-B, eq. 6 [V s/rad]
    ki=0.043796,          # section IV-B, eq. 6 [V/rad]
    kd=0.0,               # section IV-B
    Izz=1.1,              # section IV-B: identified I_zz [kg m^2]
    accel_limit=61.09,    # section V: wheel acceleration limit [rad/s^2]
    supply=24.0,          # section IV-A: motor voltage range 0-24 V
)


class Drive5DPO(SpeedDrive):
    """Wheel-speed reference slew limit, PI on motor speed, dead band, DC motor and gear.

    The Robotino's speed loop (physics.drives.SpeedDrive) with the paper's motor law (no
    inductance) and its gains and friction as run-time parameters, so they can be fitted
    without a rebuild.
    """

    def __init__(self, name, gear):
        super().__init__(name, ratio=gear, extra_controls={"omega_ref_limited": "out"})

    def reference(self):
        # slew limit of the wheel-speed reference: r' = clip((ref - r)/tau, -a, a) [section V]
        self.add(Function("slew", "clip((ref - r)/tau_slew, -accel_limit, accel_limit)", inputs=["ref", "r"]))
        self.add(Integrator("ref_limited", 0.0))
        self.connect(self.omega_ref, "slew.ref")
        self.connect("slew.out", "ref_limited.in_")
        self.connect("ref_limited.out", "slew.r", self.omega_ref_limited)
        return "ref_limited.out"

    def controller(self):
        return PID("pid", kp="kp", ki="ki", umin="-u_supply", umax="u_supply", kb=1.0)

    def voltage_law(self):
        return Function("dead_band", "u - clip(u, -u_dead, u_dead)", inputs=["u"])

    def motor(self):
        n = self.ratio
        arm = self.add(EffortJunction("armature", output=True))
        rotor = self.add(EffortJunction("rotor", output=True))
        axle = self.add(EffortJunction("axle", output=True))
        self.add(R("Ri", "Ri"), GY("emf", "K"), TF("gear", -n))
        # the motor set's friction at the wheel axle, smooth Coulomb term (module docstring)
        self.add(R("friction", effort="Bv*f + Fc*tanh(f/omega_s)"))
        self.bond("voltage_source", arm)
        self.bond(arm, "Ri")
        self.bond(arm, "emf.p1")
        self.bond("emf.p2", rotor)
        self.bond(rotor, "gear.p1")
        self.bond("gear.p2", axle)
        self.bond(axle, "friction")
        self.bond(axle, self.shaft)
        return rotor.out, arm.out


def omni5dpo(v_step=0.0, w_step=3.0, t_step=0.2, start=(0.0, 0.0, 0.0), kp=PAPER["kp"], ki=PAPER["ki"]) -> Model:
    """The 5DPO robot; reference body twist = (vx_cmd, vy_cmd, wz_cmd) + steps at ``t_step``.

    The default is the paper's identification experiment (section IV-B, Fig. 4): a pure angular
    velocity step. Fitting with logged commands sets v_step = w_step = 0 and drives vx_cmd,
    vy_cmd, wz_cmd from the log (``bondsim-ros fit --inputs``).
    """
    P = PAPER
    model = Model("omni5dpo", "5DPO three-wheel omnidirectional robot (Magalhães et al.)")
    prm = {
        "Izz": (P["Izz"], "yaw inertia [kg m^2] (section IV-B, identified)"),
        "kp": (kp, "PI proportional gain on motor speed [V s/rad] (eq. 6)"),
        "ki": (ki, "PI integral gain [V/rad] (eq. 6)"),
        "Bv": (P["Bv"], "viscous friction of the motor set [N m s/rad] (section IV-A)"),
        "Fc": (P["Fc"], "Coulomb friction of the motor set [N m] (section IV-A)"),
        "omega_s": (0.05, "speed scale of the smooth Coulomb law [rad/s] (choice here)"),
        "u_dead": (P["Ri"] * P["Fc"] / P["K"], "voltage dead band [V]: R_i Fc / K, eq. (4) intercept"),
        "u_supply": (P["supply"], "controller voltage limit [V]"),
        "Ri": (P["Ri"], "armature resistance [ohm] (Table I)"),
        "K": (P["K"], "motor constant [N m/A] (Table I)"),
        "accel_limit": (P["accel_limit"], "wheel acceleration limit [rad/s^2] (section V)"),
        "tau_slew": (0.002, "time constant of the slew limiter's tracking [s] (choice here)"),
        "vx_cmd": (0.0, "body-frame forward velocity command [m/s]"),
        "vy_cmd": (0.0, "body-frame left velocity command [m/s]"),
        "wz_cmd": (0.0, "yaw rate command [rad/s]"),
        "v_step": (v_step, "forward velocity step added at t_step [m/s]"),
        "w_step": (w_step, "yaw rate step added at t_step [rad/s]"),
        "t_step": (t_step, "time of the step [s]"),
    }
    for name, (value, doc) in prm.items():
        model.parameter(name, value, doc)

    # chassis: the whole robot translates (26.2 kg); yaw inertia Izz
    jx, jy, jw = omni_chassis(model, P["mass"], "Izz", start)
    # body-frame velocity for output: rotate the world velocity by -phi
    body_vx, body_vy = rotate_planar("-phi", "vX", "vY")
    model.add(Function("body_vx", body_vx, inputs=["phi", "vX", "vY"]),
              Function("body_vy", body_vy, inputs=["phi", "vX", "vY"]))
    for f in ("body_vx", "body_vy"):
        model.connect("heading.out", f"{f}.phi")
        model.connect(jx.out, f"{f}.vX")
        model.connect(jy.out, f"{f}.vY")

    rw, d = P["wheel_radius"], P["d"]
    wheel_inertia = 0.5 * P["wheel_mass"] * rw**2  # uniform disc (Table II mass and radius)
    step = "Piecewise((1.0, t >= t_step), (0.0, True))"
    cols = ["x", "y", "phi", "vx", "vy", "wz", "vx_ref", "vy_ref", "wz_ref"]
    cols += [f"{k}{i}" for k in ("w", "w_ref", "w_lim", "i", "u", "wm") for i in (1, 2, 3)]
    # wheel axle angles, named like the joints of urdf/omni5dpo (``bondsim-ros render --joints``);
    # the same sign as w_i: positive about the radially outward axle (physics.omni.wheel_speed_law)
    cols += [f"wheel{i}_axle" for i in (1, 2, 3)]
    model.add(Recorder("rec", cols))
    model.add(Input("ref_vx", f"vx_cmd + v_step*{step}"), Input("ref_vy", "vy_cmd"),
              Input("ref_wz", f"wz_cmd + w_step*{step}"))
    model.connect("ref_vx.out", "rec.vx_ref")
    model.connect("ref_vy.out", "rec.vy_ref")
    model.connect("ref_wz.out", "rec.wz_ref")
    for i, alpha in zip((1, 2, 3), ALPHA):
        tr = wheel_frame(model, i, alpha, d, (jx, jy, jw))
        wheel = model.add(OmniWheel(f"wheel{i}", rw, wheel_inertia))
        drive = model.add(Drive5DPO(f"drive{i}", P["gear"]))
        model.bond(drive.shaft, wheel.axle)
        model.bond(wheel.hub, tr.local)
        # inverse kinematics of the Robotino's layout (paper eq. 1 up to wheel numbering/signs)
        model.add(Function(f"ik{i}", wheel_speed_law(alpha, d, rw, body_frame=True), inputs=["vx", "vy", "wz"]))
        model.connect("ref_vx.out", f"ik{i}.vx")
        model.connect("ref_vy.out", f"ik{i}.vy")
        model.connect("ref_wz.out", f"ik{i}.wz")
        model.connect(f"ik{i}.out", drive.omega_ref, f"rec.w_ref{i}")
        model.connect(drive.omega_ref_limited, f"rec.w_lim{i}")
        model.connect(wheel.omega, f"rec.w{i}")
        model.connect(wheel.theta, f"rec.wheel{i}_axle")
        model.connect(drive.current, f"rec.i{i}")
        model.connect(drive.voltage, f"rec.u{i}")
        model.connect(drive.omega_motor, f"rec.wm{i}")
    model.connect("pos_x.out", "rec.x")
    model.connect("pos_y.out", "rec.y")
    model.connect("heading.out", "rec.phi")
    model.connect("body_vx.out", "rec.vx")
    model.connect("body_vy.out", "rec.vy")
    model.connect(jw.out, "rec.wz")
    return model


def omni5dpo_twist() -> Model:
    """The 5DPO robot driven only by the run-time body twist (vx_cmd, vy_cmd, wz_cmd): no step.

    The twist goes through the wheel inverse kinematics to the three drives' wheel-speed
    references; the paper's slew limit and PI speed loops (section IV-B, V) follow them, with
    the loop retuned (TWIST_GAINS): the paper's identified kp, ki leave a wheel-speed error that
    its integral removes with a time constant kp/ki = 1.5 s (the back-emf, friction and dead band
    need ~2.4 V at 0.3 m/s), too slow for cmd_vel; kp = 0.3 V s/rad, ki = 3 V/rad settle a
    0.3 m/s step to 0.1 % in 0.5 s within the 24 V supply."""
    return omni5dpo(v_step=0.0, w_step=0.0, kp=TWIST_GAINS[0], ki=TWIST_GAINS[1])


TWIST_GAINS = (0.3, 3.0)  # (kp [V s/rad], ki [V/rad]) of the motor-speed PI for cmd_vel


# Command interfaces for a live twin: kind -> (builder, parameter names).
COMMAND_MODELS = {"twist": (omni5dpo_twist, {"vx": "vx_cmd", "vy": "vy_cmd", "wz": "wz_cmd"})}


ENTRIES = [
    ModelEntry("omni5dpo", omni5dpo, "5DPO omni robot (Magalhães et al.): yaw-rate step, paper's motor/PID values",
               defaults=dict(t_end=6.0, dt_out=0.01)),
]

__all__ = ["omni5dpo", "omni5dpo_twist", "COMMAND_MODELS", "TWIST_GAINS", "PAPER", "Drive5DPO", "ENTRIES"]
