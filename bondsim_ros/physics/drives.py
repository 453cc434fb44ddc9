"""DC-motor drives of the robot models.

``SpeedDrive``: a wheel's speed loop, a PID on the motor speed whose output is the supply voltage
(the Robotino's drives, Damic & Cohodar Husic Fig. 28; the 5DPO's, Magalhães et al. section IV).
``VoltageDrive``: a motor under an open-loop voltage law (Qian & Rahmani Fig. 9).
``ServoDrive``: joint position servo on a DC-motor drive, the feedback loop that lets an arm follow a
``trajectory_msgs/JointTrajectory``, in the same shape as the Robotino's wheel-speed
loops: a PID whose output is the motor's supply voltage.

    q_ref, qd_ref (run-time parameters) ──► Σ(q_ref − q) ──► PID ─┐
                     qd_ref ─► K k_r qd_ref (back-emf feedforward) ─┼─► clip(±u_max) ─► Se(u)
                              u_hold (static load at the start pose) ┘      └─► DCMotor ─► shaft

The feedforward terms only relieve the PID (the error stays small while the reference moves);
the PID alone removes any steady error (its integral), so the goal is reached without them too.
"""
from __future__ import annotations

from bondsim_ros.bondgraph import PID, Component, DCMotor, FlowJunction, Function, Gain, Se, Sum


def servo_gains(Ra, K, ratio, J_load, J_motor, wn, integral_slowness=10.0):
    """kp [V/rad], kd [V s/rad], ki [V/(rad s)] placing the PD loop's poles at a double pole -wn.

    Voltage to joint angle of a DC motor with a rigid gear (inductance neglected):
    a q'' + c q' = u, a = J_eff R_a k_r / K, c = K k_r, J_eff = J_m + J_load / k_r^2.
    With u = kp e + kd e' the error obeys a s^2 + (c + kd) s + kp = 0: kp = a wn^2,
    kd = 2 a wn - c (the back-emf already damps; kd >= 0). The integral's zero ki/kp lies
    ``integral_slowness`` times below wn, so it removes static loads (gravity, friction)
    without spoiling the PD poles.
    """
    a = (J_motor + J_load / ratio**2) * Ra * ratio / K
    kp = a * wn**2
    kd = max(2.0 * a * wn - K * ratio, 0.0)
    ki = kp * wn / integral_slowness
    return kp, ki, kd


def wheel_speed_gains(Ra, K, ratio, J_load, J_motor, wn):
    """kp [V s/rad], ki [V/rad] of a wheel's PI speed loop placing a double pole at -wn.

    Voltage to wheel speed (rigid gear, no inductance): a w' + c w = u, a = J_eff R_a k_r / K,
    c = K k_r; with u = kp e + ki int(e): a s^2 + (c + kp) s + ki = 0, so ki = a wn^2 and
    kp = 2 a wn - c (>= 0: the back-emf already damps)."""
    a = (J_motor + J_load / ratio**2) * Ra * ratio / K
    return max(2.0 * a * wn - K * ratio, 0.0), a * wn**2


class ServoDrive(Component):
    """PID on the supply voltage of a DC motor, tracking a joint-angle reference.

    Control inputs: ``q`` (measured joint angle), ``q_ref``, ``qd_ref`` (references).
    Outputs: ``voltage``, ``current``, ``tau`` (joint torque at the gear output).
    Port ``shaft`` (out): the gear output, whose flow is the joint rate.
    ``gains``: (kp, ki, kd) - numbers or run-time parameter names; ``u_max``: supply limit [V];
    ``u_hold``: constant voltage holding the start pose's static load (0: none); ``i0``: the
    matching initial current; ``feedforward``: a weight (number or run-time parameter name) on
    the back-emf feedforward (None: 1).
    """

    def __init__(self, name, motor, gains, u_max, u_hold=0.0, i0=None, tf=0.002, feedforward=None):
        super().__init__(name, ports={"shaft": "out"},
                         controls={"q": "in", "q_ref": "in", "qd_ref": "in", "voltage": "out", "current": "out",
                                   "tau": "out"})
        self.motor, self.gains, self.u_max, self.u_hold, self.i0, self.tf = motor, gains, u_max, u_hold, i0, tf
        self.feedforward = feedforward

    def build(self):
        Ra, La, K, J, b, ratio = self.motor
        kp, ki, kd = self.gains
        umax = float(self.u_max)
        self.add(Sum("error", "+-"))
        # kb: back-calculation gain as a number, so that setting the gains to zero (no
        # controller) stays well defined
        self.add(PID("pid", kp=kp, ki=ki, kd=kd, tf=self.tf, umin=-umax, umax=umax, kb=50.0))
        ff = f"{K * ratio!r}*qd" if self.feedforward is None else f"{self.feedforward}*{K * ratio!r}*qd"
        self.add(Function("supply", f"clip(u + {ff} + {float(self.u_hold)!r}, {-umax!r}, {umax!r})",
                          inputs=["u", "qd"]))
        self.add(Se("source", "u", inputs=["u"]))
        self.add(DCMotor("motor", Ra=Ra, La=La, K=K, J=J, b=b, ratio=ratio, i0=self.i0))
        tau = self.add(FlowJunction("tau", output=True))
        self.connect(self.q_ref, "error.in1")
        self.connect(self.q, "error.in2")
        self.connect("error.out", "pid.in_")
        self.connect("pid.out", "supply.u")
        self.connect(self.qd_ref, "supply.qd")
        self.connect("supply.out", "source.u", self.voltage)
        self.bond("source", "motor.supply")
        self.bond("motor.shaft", tau)
        self.bond(tau, self.shaft)
        self.connect("motor.current", self.current)
        self.connect(tau.out, self.tau)


class SpeedDrive(Component):
    """A wheel's speed loop: the wheel-speed reference taken through the gear to the motor
    (omega_m = -N omega_wheel), a PID on the motor-speed error, its output the supply voltage
    (Se) of the motor, which turns port ``shaft`` (out).

        omega_ref ─► [reference] ─► Gain(-N) ─► Σ(+ −) ─► PID ─► [voltage law] ─► Se ─► motor ─► shaft
                                        omega_motor ┘

    Control inputs: ``omega_ref``; outputs: ``omega_motor``, ``current``, ``voltage`` and
    ``extra_controls``. A robot's drive gives its parts by overriding ``controller`` (the PID,
    named "pid") and ``motor`` (the chain from the source "voltage_source" to the shaft), and
    where it has them ``reference`` (a slew limit before the gear) and ``voltage_law`` (a dead
    band between the PID and the source). The elements are added, bonded and connected in one
    order for every robot, so a model's equations do not depend on which drive wrote them.
    """

    def __init__(self, name, ratio, extra_controls=None):
        super().__init__(name, ports={"shaft": "out"},
                         controls={"omega_ref": "in", "current": "out", "omega_motor": "out", "voltage": "out",
                                   **(extra_controls or {})})
        self.ratio = ratio

    def reference(self):
        """The wheel-speed reference the gear scales (a signal); elements that shape it are added
        and connected here. Default: the ``omega_ref`` input as it is."""
        return self.omega_ref

    def controller(self) -> PID:
        raise NotImplementedError(f"{type(self).__name__} gives no controller")

    def voltage_law(self):
        """A Function of ``u`` (the PID's output) whose output drives the source, or None (the
        PID drives it directly)."""
        return None

    def motor(self):
        """Add the motor from "voltage_source" to port ``shaft``; return the signals of its speed
        (the PID's feedback) and of its armature current."""
        raise NotImplementedError(f"{type(self).__name__} gives no motor")

    def build(self):
        ref = self.reference()
        self.add(Gain("ref_scale", -self.ratio), Sum("error", "+-"))
        self.add(self.controller())
        law = self.voltage_law()
        if law is not None:
            self.add(law)
        self.add(Se("voltage_source", "u", inputs=["u"]))
        omega_motor, current = self.motor()
        self.connect(ref, "ref_scale.in_")
        self.connect("ref_scale.out", "error.in1")
        self.connect(omega_motor, "error.in2", self.omega_motor)
        self.connect("error.out", "pid.in_")
        if law is None:
            self.connect("pid.out", "voltage_source.u", self.voltage)
        else:
            self.connect("pid.out", f"{law.name}.u")
            self.connect(f"{law.name}.out", "voltage_source.u", self.voltage)
        self.connect(current, self.current)


class VoltageDrive(Component):
    """A DC-motor joint drive under an open-loop voltage law (Qian & Rahmani Fig. 9): Se(U(t)) ->
    DCMotor (R_a, L_a, GY(k_t), I_a, B_m, TF(k_r)) -> 0(tau) -> shaft.

    The 0-junction after the gear has the joint torque as its common effort (output ``tau``);
    i0: initial current (consistent with the initial load torque)."""

    def __init__(self, name, params, voltage_law, i0):
        super().__init__(name, ports={"shaft": "out"}, controls={"th": "in", "current": "out", "tau": "out",
                                                                 "voltage": "out"})
        self.params, self.voltage_law, self.i0 = params, voltage_law, i0

    def build(self):
        Ra, La, kt, Ia, Bm, kr = self.params
        tau = self.add(FlowJunction("tau", output=True))
        self.add(Se("U", "u", inputs=["u"]), DCMotor("motor", Ra=Ra, La=La, K=kt, J=Ia, b=Bm, ratio=kr, i0=self.i0))
        self.add(Function("volt", self.voltage_law, inputs=["th"]))
        self.connect(self.th, "volt.th")
        self.connect("volt.out", "U.u", self.voltage)
        self.bond("U", "motor.supply")
        self.bond("motor.shaft", tau)  # w_m = k_r q', tau = k_r tau_m
        self.bond(tau, self.shaft)
        self.connect("motor.current", self.current)
        self.connect(tau.out, self.tau)


__all__ = ["ServoDrive", "SpeedDrive", "VoltageDrive", "servo_gains", "wheel_speed_gains"]
