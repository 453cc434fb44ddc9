"""The Robotino model against the paper (Damic & Cohodar Husic, section 4) and against physics."""
import math

import numpy as np
import pytest

from bondsim_ros.bondgraph import compile_model, simulate
from bondsim_ros.bondgraph.core import ModelError
from bondsim_ros.robots.robotino import model as rb
from bondsim_ros.robots.robotino.twin import wheel_speeds_for_twist
from bondsim_ros.solver import SolverOptions

PARAMS = rb.load_params()


@pytest.fixture(scope="module")
def paper_run():
    """The paper's case: 50 s, output 0.02 s, hmax 0.02 s, errors 1e-6."""
    compiled = compile_model(rb.robotino())
    res = simulate(compiled, t_end=50.0, dt_out=0.02, options=SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.02))
    return rb.add_roller_columns(res)


def test_csv_has_the_columns_users_need(paper_run):
    need = ["t", "x", "y", "phi", "x_ref", "y_ref", "phi_ref", "w1", "w2", "w3", "w1_ref", "w2_ref", "w3_ref",
            "i1", "i2", "i3"] + rb.JOINT_NAMES
    missing = [n for n in need if n not in paper_run.names]
    assert not missing
    assert paper_run.t[-1] == pytest.approx(50.0)


def test_roller_switches_are_located_not_stepped_into(paper_run):
    """Each roller switch (the rolling arm's kink every pi/3 of wheel angle) is an event the solver
    locates and restarts at, so steps are not rejected into it: at most 10 % of the steps are
    rejected at this tolerance (stepping into the kinks rejected 5,755 of 55,212)."""
    st = paper_run.stats
    print(f"steps {st['steps']}, rejected {st['rejected']}, events {st['events']} "
          f"({st['event_restarts']} restarts)")
    assert st["rejected"] <= 0.10 * st["steps"]
    # three wheels turning hundreds of radians: hundreds of switches, each a restart
    assert st["event_restarts"] > 500


def test_rose_path_is_followed_with_the_papers_accuracy(paper_run):
    r = paper_run
    after = r.t > 5.0  # after the start-up transient (the robot starts at rest, the path at 0.6 m/s)
    ex = np.max(np.abs(r["x"] - r["x_ref"])[after])
    ey = np.max(np.abs(r["y"] - r["y_ref"])[after])
    ephi = np.max(np.abs(r["phi"] - r["phi_ref"])[after])
    print(f"tracking errors after 5 s: x {ex:.2e} m, y {ey:.2e} m, phi {ephi:.2e} rad")
    # paper Fig. 34: several 1e-6 m in X, < 2e-5 m in Y, ~1e-6 rad in phi
    assert ex < 1e-5 and ey < 2e-5 and 0.5e-6 <= ephi <= 2e-6
    # and it really went round the rose: the path reaches the 2 m petal tips
    assert np.max(np.hypot(r["x"], r["y"])) == pytest.approx(2.0, abs=1e-3)


def test_start_at_rtol_1_05e_6_stays_on_the_solution():
    """At rtol 1.05e-6 the paper's run went wrong in its first 20 ms without any failure: after
    the step grew, a new iteration matrix kept the rate measured on the old one (9e-6, then 2e-4)
    and the next steps on it accepted first corrections of up to 2.75 tolerance units in one
    iteration; at t = 0.02 s wz was 0.817 rad/s instead of 0.185 and motor 2's current -2.24 A
    instead of -0.21 (off by up to 2 A at 1516 of the 2500 outputs of the 50 s run;
    docs/solver.md). Against rtol 1e-10."""
    compiled = compile_model(rb.robotino())
    r = simulate(compiled, t_end=0.04, dt_out=0.02, options=SolverOptions(rtol=1.05e-6, atol=1.05e-8, hmax=0.02))
    ref = simulate(compiled, t_end=0.04, dt_out=0.02, options=SolverOptions(rtol=1e-10, atol=1e-12, hmax=0.02))
    print("at 0.02 s: wz", r["wz"][1], "rad/s (", ref["wz"][1], "), i2", r["i2"][1], "A (", ref["i2"][1], ")")
    assert np.max(np.abs(r["wz"] - ref["wz"])) < 1e-5  # 8e-13 rad/s measured
    for k in ("i1", "i2", "i3"):
        # relative to the larger of 1 A and the currents at the outputs: 5e-8 A measured
        assert np.max(np.abs(r[k] - ref[k])) < 1e-4 * max(1.0, np.max(np.abs(ref[k])))


def _roller_arm(theta):
    rw, rmax = PARAMS["wheel.radius"], PARAMS["wheel.roller_radius_max"]
    tt = np.mod(theta, math.pi / 3)
    tb = np.where(tt <= math.pi / 6, tt, tt - math.pi / 3)
    return rmax - rw * (1 - np.cos(tb))


def test_no_slip_at_every_contact(paper_run):
    """Contact-point velocity is zero to solver tolerance at every output point; sideways the
    outputs' interpolation error shows (< 1e-3 m/s; 5.8e-6 to 2.6e-5 m/s measured). The roller
    switches are located as events, so no step spans one (see docs/robotino.md). Along the wheel
    the median is 2e-14 m/s and a few isolated output times reach 1.2e-7 m/s (rtol 0.97e-6 to
    1.03e-6 gave a maximum of 1.6e-9 to 1.3e-7: the step sequence moves with round-off), under
    the tolerance of rtol 1e-6 on speeds of 0.1 to 0.5 m/s."""
    r = paper_run
    rw, R = PARAMS["wheel.radius"], PARAMS["chassis.radius_to_wheel"]
    for i, alpha in zip((1, 2, 3), rb.ALPHA):
        phi_i = r["phi"] + alpha
        v_ix = r["vx"] * np.cos(phi_i) + r["vy"] * np.sin(phi_i)
        v_iy = -r["vx"] * np.sin(phi_i) + r["vy"] * np.cos(phi_i) + R * r["wz"]
        slip_y = v_iy + rw * r[f"w{i}"]  # contact point velocity along y_i [eq. 8]
        slip_x = v_ix - _roller_arm(r[f"wheel{i}_axle"]) * r[f"wr{i}"]  # along x_i [eq. 14]
        print(f"wheel {i}: max slip y {np.max(np.abs(slip_y)):.1e} m/s; slip x median "
              f"{np.median(np.abs(slip_x)):.1e}, 99th percentile {np.percentile(np.abs(slip_x), 99):.1e}, "
              f"max {np.max(np.abs(slip_x)):.1e} m/s")
        assert np.max(np.abs(slip_y)) < 3e-7
        assert np.median(np.abs(slip_y)) < 1e-12
        assert np.median(np.abs(slip_x)) < 1e-6
        assert np.max(np.abs(slip_x)) < 1e-3


def test_energy_balance_closes():
    """Motor input = dissipation + change of stored (kinetic + magnetic) energy."""
    compiled = compile_model(rb.robotino())
    r = simulate(compiled, t_end=6.0, dt_out=0.001, options=SolverOptions(rtol=1e-8, atol=1e-10, hmax=0.005))
    p = PARAMS
    m, jz, iw = p["chassis.mass"], p["chassis.inertia_z"], p["wheel.inertia_axle"]
    ir = p.get("wheel.roller_inertia", 2e-6)
    jm, la, ra = p["motor.rotor_inertia"], p["motor.armature_inductance"], p["motor.armature_resistance"]
    bv, fc = p.get("motor.viscous_friction", 0.0) or 0.0, p.get("motor.coulomb_friction", 0.0) or 0.0
    energy = 0.5 * m * (r["vx"] ** 2 + r["vy"] ** 2) + 0.5 * jz * r["wz"] ** 2
    p_in = np.zeros_like(r.t)
    p_diss = np.zeros_like(r.t)
    for i in (1, 2, 3):
        wm = r[f"wm{i}"]
        energy += (0.5 * iw * r[f"w{i}"] ** 2 + 0.5 * ir * r[f"wr{i}"] ** 2 + 0.5 * jm * wm ** 2
                   + 0.5 * la * r[f"i{i}"] ** 2)
        p_in += r[f"u{i}"] * r[f"i{i}"]
        p_diss += ra * r[f"i{i}"] ** 2 + bv * wm ** 2 + fc * np.tanh(wm) * wm
    # from 0.5 s on: the voltage-saturated start has millisecond transients that the trapezoidal
    # quadrature of this check (not the model) would resolve poorly at 1 ms samples
    k0 = int(np.searchsorted(r.t, 0.5))
    t, p_net = r.t[k0:], (p_in - p_diss)[k0:]
    net = np.concatenate([[0.0], np.cumsum(0.5 * (p_net[1:] + p_net[:-1]) * np.diff(t))])
    stored = energy[k0:] - energy[k0]
    scale = float(np.sum(0.5 * (np.abs(p_in[k0 + 1:]) + np.abs(p_in[k0:-1])) * np.diff(t)))
    closure = float(np.max(np.abs(stored - net))) / scale
    print(f"energy balance 0.5..6 s: max |dE - int(P_in - P_diss)| / int|P_in| = {closure:.2e}")
    assert closure < 1e-4


def test_constant_twist_gives_the_kinematic_wheel_speeds():
    compiled = compile_model(rb.robotino(reference="twist"))
    cmd = {"vx_cmd": 0.3, "vy_cmd": -0.1, "wz_cmd": 0.5}
    r = simulate(compiled, t_end=2.0, dt_out=0.01, options=SolverOptions(rtol=1e-7, atol=1e-9, hmax=0.01), params=cmd)
    expected = wheel_speeds_for_twist(0.3, -0.1, 0.5, PARAMS)
    late = r.t > 1.0
    for i in (1, 2, 3):
        assert np.allclose(r[f"w{i}"][late], expected[i - 1], rtol=1e-3, atol=1e-4)
    # and the body moves at the commanded twist (body frame)
    c, s = np.cos(r["phi"]), np.sin(r["phi"])
    bvx = c * r["vx"] + s * r["vy"]
    bvy = -s * r["vx"] + c * r["vy"]
    assert np.allclose(bvx[late], 0.3, atol=1e-3)
    assert np.allclose(bvy[late], -0.1, atol=1e-3)
    assert np.allclose(r["wz"][late], 0.5, atol=1e-3)


def test_roller_switches_from_a_start_at_rest_without_the_pose_loop():
    """The paper's case (no pose loop, no voltage limit): at
    t = 0 the wheels are at rest on a roller switch and the solver picks each roller's side from
    round-off in the wheel speeds; wheel 1 then turned the other way, its switching function
    left zero to the side its mode excludes (no sign change, so nothing was located) and the
    rolling arm ran past the roller's edge: the roller angle reached -1.16 rad, the contact
    slipped sideways at up to 43 m/s and the step size underflowed. Every step point must have
    each roller's angle (as the solver's modes make it) within +-pi/6."""
    from bondsim_ros.bondgraph.simulation import Simulation

    c = compile_model(rb.robotino())  # the paper's drive: no pose loop, no voltage limit
    sim = Simulation(c, options=SolverOptions(rtol=1e-6, atol=1e-8, hmax=0.02))
    solver = sim.solver
    wheels = [c.var_names.index(f"wheel{i}.angle.x") for i in (1, 2, 3)]
    # each wheel's floor mode K: the contact roller's index, floor((theta + pi/6) / (pi/3)); the
    # arm's angle is theta - K pi/3. Found as the mode that changes across theta = pi/6.
    modes = lambda y: (solver.problem.modes(0.0, y, np.zeros(c.n), solver.pm, m) or m.copy())  # noqa: E731
    m = np.zeros(c.n_modes)
    K = []
    for w in wheels:
        y = np.zeros(c.n)
        a, b = (modes(np.where(np.arange(c.n) == w, th, y)) for th in (0.4, 0.6))
        K.append(int(np.flatnonzero(a != b)[0]))
    worst, t_out = 0.0, np.arange(0.005, 3.0 + 1e-9, 0.005)
    rows = []
    for t in t_out:
        rows.append(sim.advance([t])[0])
        th = solver.y_step[wheels]  # the step the integrator stands on (at or past t)
        mk = solver.pm[solver.n_par + np.array(K)]
        arm_angle = th - math.pi / 3 * mk
        worst = max(worst, float(np.max(np.abs(arm_angle))))
    print(f"largest roller angle {worst:.6f} rad; {solver.stats}")
    assert sim.t == pytest.approx(3.0)
    assert worst <= math.pi / 6 + 1e-6
    # and the sideways rolling constraint holds with the law's arm at every output
    r = dict(zip(sim.output_names, np.array(rows).T))
    for i, alpha in zip((1, 2, 3), rb.ALPHA):
        phi_i = r["phi"] + alpha
        v_ix = r["vx"] * np.cos(phi_i) + r["vy"] * np.sin(phi_i)
        slip_x = np.max(np.abs(v_ix - _roller_arm(r[f"wheel{i}_axle"]) * r[f"wr{i}"]))
        print(f"wheel {i}: max slip x {slip_x:.1e} m/s")
        assert slip_x < 1e-3


def test_roller_angles_integrate_the_contact_roller_row_by_row():
    """Each row adds the trapezoid 0.5 (w_k + w_k-1)(t_k - t_k-1) to the roller in contact at
    row k, the others keep their angle: the row-by-row sum bit for bit, on wheel angles that
    cross several roller boundaries and back."""
    rng = np.random.default_rng(5)
    t = np.cumsum(rng.uniform(0.001, 0.05, 400))
    theta = np.cumsum(rng.normal(0.0, 0.3, 400))
    w = rng.normal(0.0, 2.0, 400)
    expected = np.zeros((400, rb.N_ROLLERS))
    idx = rb.contact_roller(theta)
    for k in range(1, 400):
        expected[k] = expected[k - 1]
        expected[k, idx[k]] += 0.5 * (w[k] + w[k - 1]) * (t[k] - t[k - 1])
    got = rb.roller_angles(t, theta, w)
    assert len(set(idx.tolist())) == rb.N_ROLLERS  # every roller took its turn
    assert got.tobytes() == expected.tobytes()
    assert rb.roller_angles(t[:1], theta[:1], w[:1]).tolist() == [[0.0] * rb.N_ROLLERS]


@pytest.mark.parametrize("text, message", [
    ("chassis: [\n", "{path}:2: not valid YAML"),
    ("", "{path} ($BONDSIM_ROBOTINO_CONFIG): expected the Robotino's parameter sections"),
    ("chassis: {mass: {value: heavy}}\n", "{path} ($BONDSIM_ROBOTINO_CONFIG): chassis.mass: expected a finite number, "
                                          "got 'heavy'"),
    (None, "{path} ($BONDSIM_ROBOTINO_CONFIG): parameter chassis.inertia_z is missing"),
    ("missing", "{path} ($BONDSIM_ROBOTINO_CONFIG): cannot read the Robotino parameters: No such file"),
    # out of the physical range: a zero wheel radius divided by zero in the model's build
    (("radius: {value: 0.04,", "radius: {value: 0,"), "{path} ($BONDSIM_ROBOTINO_CONFIG): wheel.radius: expected a "
                                                      "number > 0, got 0"),
    (("ratio: {value: 16.0,", "ratio: {value: -16,"), "{path} ($BONDSIM_ROBOTINO_CONFIG): gear.ratio: expected a "
                                                      "number > 0, got -16"),
    (("viscous_friction: {value: 1.0e-6,", "viscous_friction: {value: -1.0e-6,"),
     "{path} ($BONDSIM_ROBOTINO_CONFIG): motor.viscous_friction: expected a number >= 0, got -1e-06"),
    # a misspelt key: the model ran on the default filter time (2 ms, ten times the calibrated one)
    (("derivative_filter_time:", "derivative_filter_tme:"), "{path}:{line}: unknown parameter "
                                                            "controller.derivative_filter_tme (did you mean "
                                                            "controller.derivative_filter_time?)"),
    (("rose: {value: {A: 2.0,", "rose: {value: {amplitude: 2.0,"),
     "{path}:{line}: unknown parameter reference.rose.amplitude"),
    ("chassis: {mass: {value: 11.0}}\ngears: 16\n", "{path}:2 ($BONDSIM_ROBOTINO_CONFIG): gears: expected a section"),
    (("roller_radius_max: {value: 0.0125,", "roller_radius_max: {value: 0.005,"),
     "{path} ($BONDSIM_ROBOTINO_CONFIG): wheel.roller_radius_max: 0.005 leaves no rolling arm at a roller's end"),
])
def test_a_broken_parameter_file_is_named_not_a_traceback(tmp_path, capsys, monkeypatch, text, message):
    """$BONDSIM_ROBOTINO_CONFIG (the documented way to run the Robotino on other parameters) that
    is no YAML, no sections, a value no number or out of its physical range, or a parameter
    missing: one line naming the file (and line), exit status 2, not a Python traceback."""
    from bondsim_ros.cli import main

    path = tmp_path / "robotino.yaml"
    if text is None:
        text = "".join(line for line in rb.config_path().read_text().splitlines(keepends=True)
                       if "inertia_z" not in line)
    elif isinstance(text, tuple):  # the shipped file with one value changed
        shipped = rb.config_path().read_text()
        assert shipped.count(text[0]) == 1
        changed = text[1]
        text = shipped.replace(*text)
    if text != "missing":
        path.write_text(text)
    monkeypatch.setenv("BONDSIM_ROBOTINO_CONFIG", str(path))
    rc = main(["simulate", "robotino_twist", "--t-end", "0.1", "--dt-out", "0.05", "-q", "--no-cache"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    if "{line}" in message:  # the line the changed key is written on
        line = next(i for i, row in enumerate(text.splitlines(), 1) if changed in row)
        message = message.replace("{line}", f"{line} ($BONDSIM_ROBOTINO_CONFIG)")
    assert err.startswith("bondsim-ros simulate: error: " + message.format(path=path)), err


def test_an_override_of_no_parameter_is_refused_by_name():
    """``robotino(params)`` overrides by key: a misspelt one was added beside the real one, unread."""
    with pytest.raises(ModelError, match=r"unknown parameter 'controller\.kpp' among the overrides \(did you mean "
                                         r"controller\.kp\?\)"):
        rb.robotino({"controller.kpp": 3.0})
