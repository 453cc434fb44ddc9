"""physics.drives.SpeedDrive, the wheel-speed loop the Robotino and the 5DPO robot are built on,
against its closed form: a PI on the motor speed of a DC motor without inductance, turning an
inertia through a gear, answers a step of the wheel-speed reference as a second-order system whose
double pole the gains put at -wn."""
import numpy as np
import pytest

from bondsim_ros.bondgraph import GY, PID, TF, EffortJunction, I, Input, Model, R, Recorder, simulate
from bondsim_ros.physics.drives import SpeedDrive

RA, K, JM, N, J_LOAD = 2.0, 0.05, 1e-5, 12.0, 0.02  # [ohm], [N m/A], [kg m^2], gear, wheel side [kg m^2]
W, WN = 3.0, 40.0  # the wheel-speed step [rad/s] and the loop's double pole [rad/s]


def motor_side_plant():
    """a w_m' + c w_m = u for the motor speed w_m (rigid gear, no inductance): a = J R / K with the
    load's inertia seen at the motor, c = K (the back-emf)."""
    return (JM + J_LOAD / N**2) * RA / K, K


def pi_gains():
    """kp, ki of the motor-speed PI: a s^2 + (c + kp) s + ki = a (s + wn)^2."""
    a, c = motor_side_plant()
    return 2 * a * WN - c, a * WN**2


class TestDrive(SpeedDrive):
    __test__ = False  # a component, not a test class

    def controller(self):
        kp, ki = pi_gains()
        return PID("pid", kp=kp, ki=ki)

    def motor(self):
        arm = self.add(EffortJunction("armature", output=True))
        rotor = self.add(EffortJunction("rotor", output=True))
        self.add(R("Ri", RA), GY("emf", K), I("Jm", JM), TF("gear", -self.ratio))
        self.bond("voltage_source", arm)
        self.bond(arm, "Ri")
        self.bond(arm, "emf.p1")
        self.bond("emf.p2", rotor)
        self.bond(rotor, "Jm")
        self.bond(rotor, "gear.p1")
        self.bond("gear.p2", self.shaft)
        return rotor.out, arm.out


def step_model():
    m = Model("speed_loop")
    drive = m.add(TestDrive("drive", N))
    wheel = m.add(EffortJunction("wheel", output=True))
    m.add(I("load", J_LOAD), Input("ref", W), Recorder("rec", ["w_motor", "voltage", "current"]))
    m.bond(drive.shaft, wheel)
    m.bond(wheel, "load")
    m.connect("ref.out", drive.omega_ref)
    m.connect(drive.omega_motor, "rec.w_motor")
    m.connect(drive.voltage, "rec.voltage")
    m.connect(drive.current, "rec.current")
    return m


def test_a_step_of_the_wheel_speed_reference_follows_the_closed_form():
    """w(t) = W [1 - e^(-wn t) (1 + wn t) + (kp / a) t e^(-wn t)], the wheel turning with the
    reference (the motor against it, through the gear's -N), the voltage and current those of the
    motor's own law."""
    result = simulate(step_model(), t_end=0.3, dt_out=0.001)
    t = np.asarray(result["t"])
    a, c = motor_side_plant()
    kp, _ = pi_gains()
    decay = np.exp(-WN * t)
    w = W * (1 - decay * (1 + WN * t) + kp / a * t * decay)
    w_motor = np.asarray(result["w_motor"])
    np.testing.assert_allclose(-w_motor / N, w, rtol=0, atol=1e-5 * W)
    # the load's momentum is the wheel's speed times its inertia
    np.testing.assert_allclose(np.asarray(result["load.p"]) / J_LOAD, w, rtol=0, atol=1e-5 * W)
    # the motor's law at every row: u = R i + K w_m, the voltage being the PID's output
    np.testing.assert_allclose(result["voltage"], RA * np.asarray(result["current"]) + K * w_motor,
                               rtol=0, atol=1e-6 * max(1.0, float(np.max(np.abs(result["voltage"])))))
    assert -w_motor[-1] / N == pytest.approx(W, rel=1e-3)
    # the loop overshoots by the zero kp/a adds to the double pole: its peak is the closed form's
    peak = float(np.max(w))
    assert float(np.max(-w_motor / N)) == pytest.approx(peak, rel=1e-5)
    assert peak > W
