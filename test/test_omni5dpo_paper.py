"""The 5DPO omni robot (Magalhães et al.): the model obeys the paper's kinematics (eq. 1), its steady-state
motor law (eq. 4 with the friction at the wheel axle, plus the dead band) and the wheel
acceleration limit of section V."""
import math

import numpy as np
import pytest

from bondsim_ros.bondgraph.simulation import simulate
from bondsim_ros.robots.omni5dpo.model import PAPER, omni5dpo
from bondsim_ros.solver import SolverOptions


@pytest.fixture(scope="module")
def forward():
    # 1 m/s forward step at 0.2 s, long enough for the PI integral to settle (time constant ~2 s)
    return simulate(omni5dpo(v_step=1.0, w_step=0.0), t_end=25.0, dt_out=0.01,
                    options=SolverOptions(rtol=1e-8, atol=1e-10))


def test_kinematics_eq1(forward):
    r = forward
    # eq. (1): a forward speed v turns the two front wheels at +-sin(pi/3) v / r_w, the third not at all
    w = math.sin(math.pi / 3) * r["vx"][-1] / PAPER["wheel_radius"]
    assert r["w1"][-1] == pytest.approx(w, rel=1e-6)
    assert r["w3"][-1] == pytest.approx(-w, rel=1e-6)
    assert abs(r["w2"][-1]) < 1e-9 and abs(r["wz"][-1]) < 1e-9 and abs(r["vy"][-1]) < 1e-9
    assert r["vx"][-1] == pytest.approx(1.0, abs=2e-3)  # the PI integral removes the error


def test_steady_state_motor_law(forward):
    r = forward
    P = PAPER
    w = abs(r["w1"][-1])
    nk = P["gear"] * P["K"]
    # motor voltage (after the dead band): u = N K w + R_i (Bv w + Fc tanh(w/w_s)) / (N K),
    # eq. (4) with the motor set's friction at the wheel axle
    u = nk * w + P["Ri"] * (P["Bv"] * w + P["Fc"] * math.tanh(w / 0.05)) / nk
    assert abs(r["u1"][-1]) == pytest.approx(u, rel=1e-4)


def test_dead_band_holds_small_commands():
    # P action only, 2 mm/s: kp e = 0.03 V stays inside the 0.386 V dead band, so nothing moves
    r = simulate(omni5dpo(v_step=0.002, w_step=0.0), t_end=1.0, dt_out=0.01, params={"ki": 0.0})
    assert np.max(np.abs(r["u1"])) == 0.0 and np.max(np.abs(r["vx"])) == 0.0
    # 60 mm/s: kp e = 0.79 V, twice the dead band, does move it
    r = simulate(omni5dpo(v_step=0.06, w_step=0.0), t_end=1.0, dt_out=0.01, params={"ki": 0.0})
    assert r["vx"][-1] > 1e-3


def test_wheel_acceleration_limit(forward):
    r = forward
    dt = np.diff(r.t)
    for i in (1, 2, 3):
        assert np.max(np.abs(np.diff(r[f"w_lim{i}"]) / dt)) <= PAPER["accel_limit"] * (1 + 1e-6)
        assert np.max(np.abs(np.diff(r[f"w{i}"]) / dt)) <= PAPER["accel_limit"] * 1.01
