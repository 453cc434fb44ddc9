"""`bondsim-ros fit`: data from known parameters plus noise; the fit must find them inside the
confidence interval it reports, and bad input must give errors that name the culprit."""
import csv
import json
import math
import re
import textwrap

import numpy as np
import pytest

from bondsim_ros.cli import main
from bondsim_ros.fit import FitError, FitProblem, LogData, fit, read_csv
from bondsim_ros.solver import SolverOptions

# the dc_motor example with Ra, K, bL and the source voltage V as run-time parameters
MOTOR_PY = textwrap.dedent('''
    from bondsim_ros.bondgraph import GY, TF, EffortJunction, I, Model, R, Recorder, Se

    def build():
        m = Model("dc_motor_fit", "DC motor with run-time Ra, K, bL, V")
        m.parameter("Ra", 1.2); m.parameter("K", 0.03); m.parameter("bL", 1e-4); m.parameter("V", 24.0)
        elec = m.add(EffortJunction("armature", output=True))
        rotor = m.add(EffortJunction("rotor", output=True))
        load = m.add(EffortJunction("load", output=True))
        m.add(Se("src", "V"), R("Ra", "Ra"), I("La", 0.0012), GY("K", "K"))
        m.add(I("Jm", 1.2e-6), R("bm", 2e-6), TF("gear", 16.0), I("JL", 4e-4), R("bL", "bL"))
        for a, b in (("src", elec), (elec, "Ra"), (elec, "La"), (elec, "K.p1"), ("K.p2", rotor), (rotor, "Jm"),
                     (rotor, "bm"), (rotor, "gear.p1"), ("gear.p2", load), (load, "JL"), (load, "bL")):
            m.bond(a, b)
        m.add(Recorder("rec", ["current", "omega_load"]))
        m.connect(elec.out, "rec.current")
        m.connect(load.out, "rec.omega_load")
        return m
''')
TRUTH = {"Ra": 1.5, "K": 0.028}
SIGMA = {"current": 0.2, "omega_load": 0.1}  # noise added to the logged columns


@pytest.fixture(scope="module")
def motor(tmp_path_factory):
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.models import resolve_model

    path = tmp_path_factory.mktemp("fit") / "motor.py"
    path.write_text(MOTOR_PY)
    model, _ = resolve_model(str(path))
    compiled = compile_model(model)
    t = np.linspace(0.0, 0.5, 201)
    volts = np.where(t < 0.2, 24.0, 12.0)  # logged input: a voltage step down at 0.2 s
    gen = FitProblem(compiled, LogData(["t", "V", "current", "omega_load"], np.column_stack([t, volts, 0 * t, 0 * t])),
                     ["Ra", "K"], ["current", "omega_load"], inputs=["V"],
                     options=SolverOptions(rtol=1e-10, atol=1e-12))
    clean = gen.simulate([TRUTH["Ra"], TRUTH["K"]])
    return path, compiled, t, volts, clean


def _noisy_log(t, volts, clean, seed):
    rng = np.random.default_rng(seed)
    y = clean + rng.normal(0.0, [SIGMA["current"], SIGMA["omega_load"]], clean.shape)
    return LogData(["t", "V", "current", "omega_load"], np.column_stack([t, volts, y]), f"seed {seed}")


def _write(path, log: LogData):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(log.names)
        w.writerows(log.data.tolist())


def test_cli_fit_recovers_parameters_within_reported_interval(motor, tmp_path, capsys):
    path, _, t, volts, clean = motor
    data = tmp_path / "log.csv"
    _write(data, _noisy_log(t, volts, clean, seed=11))
    out = tmp_path / "fit.json"
    rc = main(["fit", str(path), str(data), "--params", "Ra,K", "--outputs", "current,omega_load", "--inputs", "V",
               "--weight", "current=5", "--weight", "omega_load=10", "--json", str(out), "--quiet"])
    assert rc == 0
    res = json.loads(out.read_text())
    for name, true in TRUTH.items():
        p = res["parameters"][name]
        assert p["ci95"][0] <= true <= p["ci95"][1], (name, p)
        assert p["initial"] != pytest.approx(true, rel=0.05)  # it had to move there
        assert p["stderr"] / p["estimate"] < 0.01  # and the interval is informative
    # weighted residuals have unit variance by construction of the weights: s must say so
    assert 0.85 < res["sigma"] < 1.15
    assert abs(res["rms_by_output"]["current"] - SIGMA["current"]) < 0.03
    assert "Ra" in capsys.readouterr().out  # the table is printed even with --quiet


def test_interval_coverage_over_noise_realisations(motor):
    """The reported 95 % intervals must contain the truth in about 95 % of noisy data sets."""
    _, compiled, t, volts, clean = motor
    hits, runs = 0, 0
    for seed in range(20):
        prob = FitProblem(compiled, _noisy_log(t, volts, clean, seed), ["Ra", "K"], ["current", "omega_load"],
                          inputs=["V"], weights={"current": 5.0, "omega_load": 10.0})
        res = fit(prob, bounds={"Ra": (0, math.inf), "K": (0, math.inf)})
        assert res.success
        for name, lo, hi in zip(res.names, res.ci_low, res.ci_high):
            hits += lo <= TRUTH[name] <= hi
            runs += 1
    # binomial(40, 0.95): 32 or fewer hits has probability < 0.1 %
    assert hits >= 33, f"truth inside the 95% interval in only {hits}/{runs} cases"


def test_search_never_steps_onto_a_refused_value(motor):
    """From Ra = 30 the first trust-region step went to Ra = -41.7, which the resistance law
    refuses, and the fit stopped there; 0 is now an implied bound and the truth is found."""
    _, compiled, t, volts, clean = motor
    prob = FitProblem(compiled, _noisy_log(t, volts, clean, 3), ["Ra", "K"], ["current", "omega_load"],
                      inputs=["V"], weights={"current": 5.0, "omega_load": 10.0})
    res = fit(prob, x0=[30.0, 0.001])
    assert res.success
    for name, lo, hi in zip(res.names, res.ci_low, res.ci_high):
        assert lo <= TRUTH[name] <= hi, name


def test_bad_parameter_name_is_named(motor, tmp_path, capsys):
    path, _, t, volts, clean = motor
    data = tmp_path / "log.csv"
    _write(data, _noisy_log(t, volts, clean, seed=1))
    rc = main(["fit", str(path), str(data), "--params", "Ra,Rx", "--outputs", "current", "--inputs", "V", "-q"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "'Rx'" in err and "has: Ra, K, bL, V" in err and "Traceback" not in err


def test_bad_columns_and_data_are_named(motor, tmp_path, capsys):
    path, compiled, t, volts, clean = motor
    data = tmp_path / "log.csv"
    log = _noisy_log(t, volts, clean, seed=2)
    _write(data, log)
    assert main(["fit", str(path), str(data), "--params", "Ra", "--outputs", "torque", "-q"]) == 2
    assert "no output column 'torque'" in capsys.readouterr().err
    assert main(["fit", str(path), str(data), "--params", "Ra", "--outputs", "current=amps", "-q"]) == 2
    assert "no column 'amps'" in capsys.readouterr().err
    # the time is no output: `--outputs t` used to fit the model's last column against the data's time
    assert main(["fit", str(path), str(data), "--params", "Ra", "--outputs", "t", "-q"]) == 2
    assert "no output column 't'" in capsys.readouterr().err
    assert main(["fit", str(path), str(data), "--params", "Ra", "--outputs", "current=t", "-q"]) == 2
    assert "--outputs current=t: 't' is the data's time column" in capsys.readouterr().err
    assert main(["fit", str(path), str(data), "--params", "Ra", "--outputs", "current,current", "-q"]) == 2
    assert "--outputs: output listed twice: current" in capsys.readouterr().err
    assert main(["fit", str(path), str(data), "--params", "Ra", "--outputs", "current", "--inputs", "Volts", "-q"]) == 2
    assert "input 'Volts' is not a run-time parameter" in capsys.readouterr().err
    log.data[57, 2] = np.nan
    _write(data, log)
    assert main(["fit", str(path), str(data), "--params", "Ra", "--outputs", "current", "--inputs", "V", "-q"]) == 2
    # named by its file line (the header is line 1), as a cell that is no number is
    assert re.search(r"log.csv:59: column 'current': nan is not a finite number \(t = [0-9.e-]+\); remove or fill",
                     capsys.readouterr().err)
    data.write_text("t,current\n0,1\n0.1,abc\n")
    with pytest.raises(FitError, match=r"log.csv:3: column 'current': 'abc' is not a number"):
        read_csv(data)
    for cell in ("1_0", "\u0661\u0662"):  # Python's float reads 10 and 12
        data.write_text(f"t,current\n0,1\n0.1,{cell}\n")
        with pytest.raises(FitError, match=f"log.csv:3: column 'current': '{cell}' is not a number"):
            read_csv(data)
    data.write_text("t,current\n\n0,1\n\n0.1,nan\n0.2,1\n")  # blank lines counted too
    with pytest.raises(FitError, match=r"log.csv:5: column 'current': nan is not a finite number \(t = 0.1\)"):
        FitProblem(compiled, read_csv(data), ["Ra"], ["current"])
    data.write_text("t,current\n0,1\n0.1,2\n0.1,3\n")
    with pytest.raises(FitError, match=r"log.csv:4: column 't' must be strictly increasing: t = 0.1 does not come "
                                       r"after t = 0.1 on line 3$"):
        FitProblem(compiled, read_csv(data), ["Ra"], ["current"])
    log.data[57, 2] = 0.0
    log.data[10, 0] = log.data[9, 0]  # repeated time stamp: named by its row, data in memory having no lines
    with pytest.raises(FitError, match=r"data row 11: column 't' must be strictly increasing: t = [0-9.e-]+ does not "
                                       r"come after t = [0-9.e-]+ on data row 10$"):
        FitProblem(compiled, log, ["Ra"], ["current"], inputs=["V"])
    with pytest.raises(FitError, match="both a fitted parameter and a logged input"):
        FitProblem(compiled, log, ["V"], ["current"], inputs=["V"])
    # a value given twice would lose one of them without a word
    with pytest.raises(FitError, match="'V' is both a logged input and a fixed value"):
        FitProblem(compiled, log, ["Ra"], ["current"], inputs=["V"], fixed={"V": 3.0})
    with pytest.raises(FitError, match="'Ra' is both a fitted parameter and a fixed value"):
        FitProblem(compiled, log, ["Ra"], ["current"], inputs=["V"], fixed={"Ra": 3.0})


def test_omni5dpo_recovers_yaw_inertia_and_gains():
    """The paper's second identification (section IV-B): PI gains and I_zz from a pure-rotation
    excitation, here on synthetic data from the paper's values, starting from Table II's I_zz."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.robots.omni5dpo.model import PAPER, omni5dpo

    compiled = compile_model(omni5dpo(w_step=0.0))
    t = np.arange(0.0, 8.0001, 0.02)
    wz = np.select([t < 0.2, t < 2.2, t < 4.2, t < 6.2], [0.0, 3.0, -2.0, 4.0], 1.0)  # yaw-rate steps
    cols = ["t", "wz_cmd", "wz", "w1", "w2", "w3"]
    names = ["Izz", "kp", "ki"]
    truth = np.array([PAPER["Izz"], PAPER["kp"], PAPER["ki"]])
    gen = FitProblem(compiled, LogData(cols, np.column_stack([t, wz] + [0 * t] * 4)), names, cols[2:],
                     inputs=["wz_cmd"], options=SolverOptions(rtol=1e-9, atol=1e-11))
    sig = np.array([0.05, 0.2, 0.2, 0.2])  # gyro [rad/s], wheel encoders [rad/s]
    y = gen.simulate(truth) + np.random.default_rng(3).normal(0.0, sig, (len(t), 4))
    prob = FitProblem(compiled, LogData(cols, np.column_stack([t, wz, y])), names, cols[2:], inputs=["wz_cmd"],
                      weights=dict(zip(cols[2:], 1.0 / sig)))
    res = fit(prob, x0=[PAPER["Izz_start"], 0.05, 0.06], bounds={n: (0, math.inf) for n in names})
    assert res.success
    for name, true, lo, hi, se, est in zip(names, truth, res.ci_low, res.ci_high, res.stderr, res.estimate):
        assert lo <= true <= hi, (name, est, se)
        assert se / est < 0.05, (name, est, se)


ROBOTINO_TRUTH = {"chassis_mass": 13.5, "chassis_inertia": 0.26, "motor_K": 0.028}  # config: 11, 0.19, 0.0296
ROBOTINO_SIGMA = {"w": 0.05, "i": 0.02}  # encoder speed [rad/s] and current [A] noise


def _robotino_log(tmp_path):
    """A logged cmd_vel sequence (steps in vx, vy, wz at 100 Hz) and the wheel speeds and motor
    currents a Robotino heavier than the packaged config would give, plus noise."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.models import resolve_model

    t = np.round(np.arange(0.0, 3.0 + 1e-9, 0.01), 10)
    cmd = [np.where((t >= 0.2) & (t < 1.6), 0.6, 0.0), np.where((t >= 1.0) & (t < 2.2), -0.4, 0.0),
           np.where(t >= 1.8, 2.0, 0.0)]
    outs = ["w1", "w2", "w3", "i1", "i2", "i3"]
    names = ["t", "vx_cmd", "vy_cmd", "wz_cmd"] + outs
    compiled = compile_model(resolve_model("robotino_twist")[0])
    gen = FitProblem(compiled, LogData(names, np.column_stack([t, *cmd] + [0 * t] * 6)), list(ROBOTINO_TRUTH), outs,
                     inputs=["vx_cmd", "vy_cmd", "wz_cmd"], options=SolverOptions(rtol=1e-9, atol=1e-11))
    clean = gen.simulate(list(ROBOTINO_TRUTH.values()))
    sigma = np.array([ROBOTINO_SIGMA[c[0]] for c in outs])
    noisy = clean + np.random.default_rng(11).normal(0.0, sigma, clean.shape)
    path = tmp_path / "robotino_log.csv"
    _write(path, LogData(names, np.column_stack([t, *cmd, noisy])))
    return path, outs, sigma


def test_fit_calibrates_robotino_twin_from_a_log(tmp_path, capsys):
    """The twin is calibrated from a log as a real Robotino's would be: mass, yaw inertia and
    motor constant (physical run-time parameters of robotino_twist) are recovered within the
    95 % intervals the fit reports, and --config-out writes a parameter file the twin runs with."""
    import yaml

    from bondsim_ros.robots.robotino.model import load_params
    from bondsim_ros.robots.robotino.twin import RobotinoTwin

    data, outs, sigma = _robotino_log(tmp_path)
    out, cfg = tmp_path / "fit.json", tmp_path / "robotino_calibrated.yaml"
    weights = [f"--weight={c}={1.0 / s:g}" for c, s in zip(outs, sigma)]
    rc = main(["fit", "robotino_twist", str(data), "--params", ",".join(ROBOTINO_TRUTH), "--inputs",
               "vx_cmd,vy_cmd,wz_cmd", "--outputs", ",".join(outs), *weights, "--json", str(out),
               "--config-out", str(cfg), "-q"])
    assert rc == 0, capsys.readouterr().err
    fitted = json.loads(out.read_text())["parameters"]
    for name, true in ROBOTINO_TRUTH.items():
        p = fitted[name]
        assert p["ci95"][0] <= true <= p["ci95"][1], (name, p)
        assert p["stderr"] / p["estimate"] < 0.02, (name, p)
    # the calibrated file is the packaged one with the three values replaced
    cal = load_params(cfg)
    assert cal["chassis.mass"] == pytest.approx(fitted["chassis_mass"]["estimate"])
    assert cal["motor.torque_constant"] == pytest.approx(fitted["motor_K"]["estimate"])
    assert cal["gear.ratio"] == load_params()["gear.ratio"]
    assert "95% CI" in yaml.safe_load(cfg.read_text())["chassis"]["mass"]["note"]
    # ... and the twin runs with it: a 0.6 m/s step reaches the speed with the heavier robot
    twin = RobotinoTwin(config=cfg)
    assert twin.sim.param("chassis_mass") == pytest.approx(fitted["chassis_mass"]["estimate"])
    twin.set_twist(0.6, 0.0, 0.0)
    assert twin.step_to(1.0).twist_body[0] == pytest.approx(0.6, abs=1e-3)


def test_config_out_refuses_command_parameters(tmp_path, capsys):
    data, outs, _ = _robotino_log(tmp_path)
    rc = main(["fit", "robotino_twist", str(data), "--params", "vx_cmd", "--outputs", "w1", "--t-end", "0.5",
               "--config-out", str(tmp_path / "c.yaml"), "-q"])
    assert rc == 2 and "not Robotino configuration parameters: vx_cmd" in capsys.readouterr().err
    assert not (tmp_path / "c.yaml").exists()


def _robot_bag(tmp_path, truth, odom_from=0, clock_offset=0.0, stamped_zero=False, motor_readings=False):
    """A rosbag2 MCAP drive log as the rto_node driver (started with namespace:=robotinobase1)
    would record it, from a robot whose
    ``truth`` differs from the configuration: cmd_vel (Twist, no stamp) at 50 Hz, joint_states
    at 100 Hz under the driver's joint names (config/robotino_bridge.yaml) with the opposite
    wheel sign, odom at 100 Hz starting from a pose away from the origin (from row ``odom_from``).
    ``clock_offset`` [s]: the robot's clock (its header stamps) ahead of the recorder's;
    ``stamped_zero``: cmd_vel as TwistStamped whose stamps a sender left at 0; ``motor_readings``:
    also rto_msgs/MotorReadings at 100 Hz, stamped as the joint states (MotorArrayROS publishes
    both together), motors 0, 1, 2 of wheel0..2_joint, speeds in rpm and currents signed as they
    are (``"magnitudes"``: their magnitudes), with noise on the currents."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    from bondsim_ros.fit.bag import typestore

    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.models import resolve_model

    t = np.round(np.arange(0.0, 2.5 + 1e-9, 0.01), 10)
    cmd = np.column_stack([np.where((t >= 0.2) & (t < 1.4), 0.5, 0.0), np.where(t >= 1.0, 0.3, 0.0),
                           np.where(t >= 1.6, -1.5, 0.0)])
    outs = ["w1", "w2", "w3", "x", "y", "phi", "i1", "i2", "i3"]
    names = ["t", "vx_cmd", "vy_cmd", "wz_cmd"] + outs
    compiled = compile_model(resolve_model("robotino_twist")[0])
    gen = FitProblem(compiled, LogData(names, np.column_stack([t, cmd] + [0 * t] * 9)), list(truth), outs,
                     inputs=["vx_cmd", "vy_cmd", "wz_cmd"], options=SolverOptions(rtol=1e-9, atol=1e-11))
    sim = gen.simulate(list(truth.values()))
    rng = np.random.default_rng(3)
    w = sim[:, :3] + rng.normal(0.0, ROBOTINO_SIGMA["w"], (len(t), 3))
    currents = sim[:, 6:] + rng.normal(0.0, ROBOTINO_SIGMA["i"], (len(t), 3))

    store = typestore()
    T = store.types
    t0_ns = 1_700_000_000 * 10**9

    def header(ns, frame):
        return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9),
                                        frame_id=frame)

    def vec(x=0.0, y=0.0, z=0.0):
        return T["geometry_msgs/msg/Vector3"](x=x, y=y, z=z)

    x0, y0, th0 = 2.0, -1.0, 0.7  # where the robot's odometry starts
    path = tmp_path / "drive_log"
    ahead = int(round(clock_offset * 1e9))
    cmd_type = "geometry_msgs/msg/TwistStamped" if stamped_zero else "geometry_msgs/msg/Twist"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as bag:
        c_cmd = bag.add_connection("/robotinobase1/cmd_vel", cmd_type, typestore=store)
        c_js = bag.add_connection("/robotinobase1/joint_states", "sensor_msgs/msg/JointState", typestore=store)
        c_od = bag.add_connection("/robotinobase1/odom", "nav_msgs/msg/Odometry", typestore=store)
        if motor_readings:
            c_mr = bag.add_connection("/robotinobase1/motor_readings", "rto_msgs/msg/MotorReadings", typestore=store)
        for k, tk in enumerate(t):
            ns = t0_ns + int(round(tk * 1e9))
            if k % 2 == 0:  # 50 Hz commands, logged 1 ms after they were sent
                msg = T["geometry_msgs/msg/Twist"](linear=vec(cmd[k, 0], cmd[k, 1]), angular=vec(z=cmd[k, 2]))
                if stamped_zero:
                    msg = T["geometry_msgs/msg/TwistStamped"](header=header(0, ""), twist=msg)
                bag.write(c_cmd, ns - 1_000_000, store.serialize_cdr(msg, msg.__msgtype__))
            js = T["sensor_msgs/msg/JointState"](header=header(ns + ahead, ""),
                                                 name=["wheel0_joint", "wheel1_joint", "wheel2_joint"],
                                                 position=np.zeros(3), velocity=-w[k], effort=np.zeros(3))
            bag.write(c_js, ns + 2_000_000, store.serialize_cdr(js, js.__msgtype__))
            if motor_readings:
                # the driver's motor speed is its joint's (-w) through the gear; the twin's motors
                # turn against its wheels, so its currents are signed as the driver's rpm already
                mr = T["rto_msgs/msg/MotorReadings"](header=header(ns + ahead, ""),
                                                     velocities=np.float32(-w[k] * 16 * 60 / (2 * np.pi)),
                                                     positions=np.zeros(3, np.int32),
                                                     currents=np.float32(currents[k] if motor_readings is True
                                                                         else np.abs(currents[k])))
                bag.write(c_mr, ns + 2_000_000, store.serialize_cdr(mr, mr.__msgtype__))
            x, y, ph = sim[k, 3:6]
            c, s = np.cos(th0), np.sin(th0)
            q = T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=np.sin((ph + th0) / 2), w=np.cos((ph + th0) / 2))
            pose = T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](x=x0 + c * x - s * y,
                                                                                     y=y0 + s * x + c * y, z=0.0),
                                               orientation=q)
            od = T["nav_msgs/msg/Odometry"](
                header=header(ns + ahead, "odom"), child_frame_id="base_link",
                pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=np.zeros(36)),
                twist=T["geometry_msgs/msg/TwistWithCovariance"](
                    twist=T["geometry_msgs/msg/Twist"](linear=vec(), angular=vec()), covariance=np.zeros(36)))
            if k >= odom_from:
                bag.write(c_od, ns + 2_000_000, store.serialize_cdr(od, od.__msgtype__))
    return path, t, cmd, sim


NS_TOPICS = ["--cmd-vel", "/robotinobase1/cmd_vel", "--joint-states", "/robotinobase1/joint_states",
             "--odom", "/robotinobase1/odom"]  # the bag's driver ran in namespace robotinobase1


def test_bag2csv_then_fit_calibrates_from_a_driver_bag(tmp_path, capsys):
    """From a driver's bag to a calibrated parameter: bag2csv holds each command until the next,
    maps the driver's wheel joints and sign onto w1..w3 and puts odometry in the start frame;
    fit then recovers the robot's mass from the wheel speeds within its 95 % interval."""
    truth = {"chassis_mass": 14.0}
    bag, t, cmd, sim = _robot_bag(tmp_path, truth)
    csv_path = tmp_path / "log.csv"
    assert main(["bag2csv", str(bag), "-o", str(csv_path), "--wheel-sign", "-1", *NS_TOPICS]) == 0, \
        capsys.readouterr().err
    log = read_csv(csv_path)
    assert log.names == ["t", "vx_cmd", "vy_cmd", "wz_cmd", "w1", "w2", "w3", "x", "y", "phi"]
    np.testing.assert_allclose(log.column("t"), t, atol=1e-9)
    np.testing.assert_array_equal(np.column_stack([log.column(c) for c in ("vx_cmd", "vy_cmd", "wz_cmd")]), cmd)
    np.testing.assert_allclose(np.column_stack([log.column(c) for c in ("x", "y", "phi")]), sim[:, 3:6], atol=1e-9)
    assert np.corrcoef(log.column("w1"), sim[:, 0])[0, 1] > 0.99  # sign -1 undone
    out = tmp_path / "fit.json"
    rc = main(["fit", "robotino_twist", str(csv_path), "--params", "chassis_mass", "--inputs", "vx_cmd,vy_cmd,wz_cmd",
               "--outputs", "w1,w2,w3", "--json", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    p = json.loads(out.read_text())["parameters"]["chassis_mass"]
    assert p["ci95"][0] <= truth["chassis_mass"] <= p["ci95"][1], p
    assert p["stderr"] < 0.5, p


def test_bag2csv_reads_the_motor_currents_and_fit_finds_the_motor_constant(tmp_path, capsys):
    """The driver's motor_readings beside its joint states become i1..i3, each the current of the
    motor that turns w1..w3's wheel, in the twin's sign; fit then recovers the motor constant
    from them, which the wheel speeds alone hardly show."""
    truth = {"motor_K": 0.06}  # the configuration's: 0.0514
    bag, t, cmd, sim = _robot_bag(tmp_path, truth, motor_readings=True)
    csv_path = tmp_path / "log.csv"
    rc = main(["bag2csv", str(bag), "-o", str(csv_path), "--wheel-sign", "-1", *NS_TOPICS])
    err = capsys.readouterr().err
    assert rc == 0 and "warning" not in err, err
    log = read_csv(csv_path)
    assert log.names == ["t", "vx_cmd", "vy_cmd", "wz_cmd", "w1", "w2", "w3", "i1", "i2", "i3", "x", "y", "phi"]
    currents = np.column_stack([log.column(c) for c in ("i1", "i2", "i3")])
    assert np.abs(currents - sim[:, 6:]).max() < 5 * ROBOTINO_SIGMA["i"]  # the noise only
    assert np.abs(sim[:, 6:]).max() > 1.0  # (the steps draw amperes)
    out = tmp_path / "fit.json"
    rc = main(["fit", "robotino_twist", str(csv_path), "--params", "motor_K", "--inputs", "vx_cmd,vy_cmd,wz_cmd",
               "--outputs", "w1,w2,w3,i1,i2,i3", "--weight", "i1=50", "--weight", "i2=50", "--weight", "i3=50",
               "--weight", "w1=20", "--weight", "w2=20", "--weight", "w3=20", "--json", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    p = json.loads(out.read_text())["parameters"]["motor_K"]
    assert p["ci95"][0] <= truth["motor_K"] <= p["ci95"][1] and p["stderr"] < 0.002, p
    # --no-currents leaves them out; a bag without motor readings has none, and says nothing of it
    assert main(["bag2csv", str(bag), "-o", str(csv_path), "--wheel-sign", "-1", "--no-currents", *NS_TOPICS]) == 0
    assert "i1" not in read_csv(csv_path).names
    plain, *_ = _robot_bag(tmp_path / "plain", truth)
    assert main(["bag2csv", str(plain), "-o", str(csv_path), "--wheel-sign", "-1", *NS_TOPICS]) == 0
    assert "i1" not in read_csv(csv_path).names
    capsys.readouterr()
    # named but not in the bag: refused, naming it
    assert main(["bag2csv", str(plain), "-o", str(tmp_path / "x.csv"), *NS_TOPICS,
                 "--motor-readings", "/robotinobase1/motor_readings"]) == 2
    assert "/robotinobase1/motor_readings not in the bag" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()
    # a driver that logged magnitudes: said, since braking motors' currents then have the wrong sign
    unsigned, *_ = _robot_bag(tmp_path / "unsigned", truth, motor_readings="magnitudes")
    assert main(["bag2csv", str(unsigned), "-o", str(csv_path), "--wheel-sign", "-1", *NS_TOPICS]) == 0
    assert "no current is ever negative, though the wheels turn both ways" in capsys.readouterr().err


@pytest.mark.parametrize("clock_offset, stamped_zero, says", [
    (0.3, False, "/robotinobase1/cmd_vel: no header stamp; placed by the bag's log times on the rows' clock, "
                 "shifted by +0.2980 s"),  # (the joint states are logged 2 ms after their stamps)
    (0.0, True, "/robotinobase1/cmd_vel: header stamps that do not advance; placed by the bag's log times"),
])
def test_bag2csv_puts_commands_known_by_log_time_on_the_rows_clock(tmp_path, capsys, clock_offset, stamped_zero,
                                                                   says):
    """The rows are the joint states' header stamps. A Twist has no stamp and a sender may leave a
    TwistStamped's at 0: such commands are placed by their log times moved onto the rows' clock,
    and each row holds the command sent before it. Placed by log time against the robot's clock
    0.3 s ahead, every command column was shifted against the wheels (a fit's mass then 124 kg
    instead of 14); with zero stamps every row held the last command."""
    bag, t, cmd, sim = _robot_bag(tmp_path, {"chassis_mass": 14.0}, clock_offset=clock_offset,
                                  stamped_zero=stamped_zero)
    csv_path = tmp_path / "log.csv"
    assert main(["bag2csv", str(bag), "-o", str(csv_path), "--wheel-sign", "-1", *NS_TOPICS]) == 0
    err = capsys.readouterr().err
    assert says in err, err
    log = read_csv(csv_path)
    np.testing.assert_allclose(log.column("t"), t, atol=1e-9)
    np.testing.assert_array_equal(np.column_stack([log.column(c) for c in ("vx_cmd", "vy_cmd", "wz_cmd")]), cmd)
    np.testing.assert_allclose(np.column_stack([log.column(c) for c in ("x", "y", "phi")]), sim[:, 3:6], atol=1e-9)


def test_bag2csv_names_what_is_missing(tmp_path, capsys):
    bag, *_ = _robot_bag(tmp_path, {"chassis_mass": 11.0})
    assert main(["bag2csv", str(bag), "-o", str(tmp_path / "a.csv"), "--cmd-vel", "/cmd_vel", *NS_TOPICS[2:]]) == 2
    assert "/cmd_vel not in the bag" in capsys.readouterr().err
    assert main(["bag2csv", str(bag), "-o", str(tmp_path / "b.csv"), *NS_TOPICS, "--wheel-joints", "a,b,c"]) == 2
    assert "not all of ['a', 'b', 'c']" in capsys.readouterr().err
    assert main(["bag2csv", str(tmp_path / "nope"), "-o", str(tmp_path / "c.csv")]) == 2
    assert "no such bag" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["bag2csv", str(tmp_path / "empty"), "-o", str(tmp_path / "d.csv")]) == 2
    assert capsys.readouterr().err == (f"bondsim-ros bag2csv: error: {tmp_path / 'empty'}: not a rosbag2 bag "
                                       f"(no metadata.yaml in the folder)\n")
    assert not any((tmp_path / n).exists() for n in ("a.csv", "b.csv", "c.csv", "d.csv"))


# --------------------------------------------------------------------------------------
# The README's recipe, and fits the data do not determine
# --------------------------------------------------------------------------------------
def _readme_commands(prefix):
    """The `bondsim-ros ...` lines of the README's "Using it" block that start with ``prefix``."""
    import shlex
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = text.split("## Using it", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.startswith(prefix)]


def _recording_fit(monkeypatch):
    """Keep each FitResult the CLI computes, so a command run as written can be checked by value."""
    import bondsim_ros.fit.core as core

    results, real = [], core.fit

    def recorded(*args, **kwargs):
        results.append(real(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(core, "fit", recorded)
    return results


def test_readme_fit_recipe_runs_as_written(tmp_path, monkeypatch, capsys):
    """The README's two lines (log a 5DPO yaw step, then fit Izz, kp, ki to it) through the CLI
    entry point exactly as written: the fit converges and finds the values the log was made with,
    Izz from Table II's 0.705 back to 1.1."""
    from bondsim_ros.robots.omni5dpo.model import PAPER

    (sim,) = _readme_commands("bondsim-ros simulate omni5dpo")
    (fit_cmd,) = _readme_commands("bondsim-ros fit omni5dpo")
    assert sim[0] == fit_cmd[0] == "bondsim-ros"
    assert sim[sim.index("--csv") + 1] == fit_cmd[3]  # the fit reads the log the first line writes
    monkeypatch.chdir(tmp_path)
    results = _recording_fit(monkeypatch)
    assert main(sim[1:]) == 0, capsys.readouterr().err
    rc = main(fit_cmd[1:])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "converged" in out and "warning" not in err and "not identifiable" not in err
    (res,) = results
    assert res.initial[res.names.index("Izz")] == 0.705
    for name, est in zip(res.names, res.estimate):
        assert est == pytest.approx(PAPER[name], rel=1e-4), name


PRODUCT_PY = textwrap.dedent('''
    from bondsim_ros.bondgraph import EffortJunction, I, Model, R, Recorder, Se

    def build():
        m = Model("damping_product", "a mass pushed by V against a damper of coefficient a*b")
        m.parameter("a", 2.0); m.parameter("b", 0.5); m.parameter("mass", 1.0); m.parameter("V", 1.0)
        v = m.add(EffortJunction("v", output=True))
        m.add(Se("F", "V"), I("m", "mass"), R("damper", effort="a*b*f"))
        m.bond("F", v); m.bond(v, "m"); m.bond(v, "damper")
        m.add(Recorder("rec", ["vel"]))
        m.connect(v.out, "rec.vel")
        return m
''')


@pytest.fixture(scope="module")
def product_log(tmp_path_factory):
    """A noisy velocity log of the damping-product model (a = 2, b = 0.5, mass = 1) under a
    force step, written as CSV."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.models import resolve_model

    folder = tmp_path_factory.mktemp("product")
    model_path = folder / "damping.py"
    model_path.write_text(PRODUCT_PY)
    compiled = compile_model(resolve_model(str(model_path))[0])
    t = np.linspace(0.0, 5.0, 101)
    force = np.where(t < 1.0, 1.0, 2.0)
    gen = FitProblem(compiled, LogData(["t", "V", "vel"], np.column_stack([t, force, 0 * t])), ["a"], ["vel"],
                     inputs=["V"], options=SolverOptions(rtol=1e-10, atol=1e-12))
    vel = gen.simulate([2.0])[:, 0] + np.random.default_rng(5).normal(0.0, 0.01, len(t))
    data = folder / "log.csv"
    _write(data, LogData(["t", "V", "vel"], np.column_stack([t, force, vel])))
    return model_path, data


@pytest.mark.parametrize("params", ["a,b", "a,b,mass"])
def test_parameters_seen_only_as_a_product_are_named_not_identifiable(product_log, tmp_path, capsys, params):
    """a and b enter the model only as a*b: the fit must say so by name, report their standard
    errors as undetermined (not a number of 1e10 %), not claim convergence, and exit 1; mass,
    fitted beside them, stays determined."""
    model_path, data = product_log
    out = tmp_path / "fit.json"
    cfg = tmp_path / "never.yaml"
    rc = main(["fit", str(model_path), str(data), "--params", params, "--guess", "a=1.5", "--guess", "b=0.8",
               "--inputs", "V", "--outputs", "vel", "--json", str(out)])
    stdout, err = capsys.readouterr()
    assert rc == 1, err
    assert "not identifiable from these data: a, b" in err
    assert "only a*b is determined, not a and b separately" in err
    assert "converged" not in stdout and "undetermined" in stdout
    doc = json.loads(out.read_text())
    assert doc["identifiable"] is False and doc["usable"] is False
    assert doc["not_identifiable"] == ["a", "b"]
    (direction,) = doc["undetermined_directions"]
    assert direction["components"]["a"] == pytest.approx(-direction["components"]["b"], abs=0.01)
    for name in ("a", "b"):
        assert doc["parameters"][name]["stderr"] is None  # undetermined, written as null
    # what is determined is still right: the product, and the mass beside it
    a, b = doc["parameters"]["a"]["estimate"], doc["parameters"]["b"]["estimate"]
    assert a * b == pytest.approx(1.0, rel=0.01)
    if "mass" in params:
        m = doc["parameters"]["mass"]
        assert m["ci95"][0] <= 1.0 <= m["ci95"][1] and m["stderr"] < 0.01
    assert not cfg.exists()


def test_identifiable_pair_from_the_same_log_converges(product_log, tmp_path, capsys):
    """The same log determines a (with b fixed) and the mass: truth inside the intervals, no warning."""
    model_path, data = product_log
    out = tmp_path / "fit.json"
    rc = main(["fit", str(model_path), str(data), "--params", "a,mass", "--guess", "a=1.5", "--guess", "mass=0.8",
               "--inputs", "V", "--outputs", "vel", "--json", str(out)])
    stdout, err = capsys.readouterr()
    assert rc == 0, err
    assert "converged" in stdout and "warning" not in err
    doc = json.loads(out.read_text())
    assert doc["identifiable"] is True and doc["usable"] is True
    for name, true in (("a", 2.0), ("mass", 1.0)):
        p = doc["parameters"][name]
        assert p["ci95"][0] <= true <= p["ci95"][1], (name, p)


def test_input_the_model_adds_to_is_reported_not_converged(tmp_path, capsys):
    """`simulate omni5dpo` logs wz_ref = its 3 rad/s step; fitting with that column as the input
    wz_cmd while the model's own step (w_step = 3) stays on doubles the command, and Izz collapsed
    to ~1e-9 with "converged" and a relative SE of 1e10 %. The fit must name the cause (the
    model's wz_ref is not the logged one), flag the collapse, show Izz as undetermined and exit 1."""
    data = tmp_path / "log.csv"
    assert main(["simulate", "omni5dpo", "--csv", str(data)]) == 0
    capsys.readouterr()
    out = tmp_path / "fit.json"
    rc = main(["fit", "omni5dpo", str(data), "--params", "Izz,kp,ki", "--inputs", "wz_cmd=wz_ref",
               "--outputs", "wz,w1,w2,w3", "--json", str(out)])
    stdout, err = capsys.readouterr()
    assert rc == 1
    assert "converged" not in stdout
    assert "input wz_cmd=wz_ref: the model's own column 'wz_ref'" in err and "is 6 at t = 0.2" in err
    doc = json.loads(out.read_text())
    izz = doc["parameters"]["Izz"]
    # the collapse: named, and no standard error pretending to mean something
    assert izz["estimate"] < 1e-6 and izz["stderr"] is None and "Izz" in doc["not_identifiable"]
    assert any(w.startswith("Izz moved from 1.1 to") for w in doc["warnings"])
    assert "is at its lower bound 0" in err
    # and with the model's step off, the same log gives back the values it was made with
    rc = main(["fit", "omni5dpo", str(data), "--params", "Izz,kp,ki", "--inputs", "wz_cmd=wz_ref",
               "--param", "w_step=0", "--outputs", "wz,w1,w2,w3", "--json", str(out)])
    assert rc == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["parameters"]["Izz"]["estimate"] == pytest.approx(1.1, rel=1e-4)


def test_estimate_at_a_bound_or_far_from_its_start_is_warned(product_log, tmp_path, capsys):
    """a (truth 2) bounded to [2.5, 10] ends on its bound: its interval assumes an interior
    optimum, so the fit warns and does not say "converged". Started at 1e-3, a is found at 2 but
    has moved 3 orders of magnitude: warned too. The estimates are still reported (exit 0)."""
    model_path, data = product_log
    out = tmp_path / "fit.json"
    rc = main(["fit", str(model_path), str(data), "--params", "a,mass", "--bounds", "a=2.5:10", "--guess", "a=3",
               "--inputs", "V", "--outputs", "vel", "--json", str(out)])
    stdout, err = capsys.readouterr()
    assert rc == 0, err
    assert "warning: a = 2.5 is at its lower bound 2.5 (started at 3)" in err
    assert "converged" not in stdout and "with the warnings above" in err
    doc = json.loads(out.read_text())
    assert doc["usable"] is True and len(doc["warnings"]) == 1
    rc = main(["fit", str(model_path), str(data), "--params", "a", "--guess", "a=1e-3", "--inputs", "V",
               "--outputs", "vel", "--json", str(out)])
    stdout, err = capsys.readouterr()
    assert rc == 0, err
    assert "warning: a moved from 0.001 to 2.003 (3 orders of magnitude)" in err
    assert "converged" not in stdout
    assert json.loads(out.read_text())["parameters"]["a"]["estimate"] == pytest.approx(2.0, rel=0.005)


def test_data_that_start_later_than_zero_warn_when_the_model_reads_t(tmp_path, capsys):
    """rc_step's Step at t0 = 0.1 s is in model time: data logged from t = 5 s are fitted with the
    step long past (residual 0.35 V against 3e-6), which used to pass without a word."""
    from pathlib import Path

    model = Path(__file__).parent / "data" / "models" / "rc_step.yaml"
    data = tmp_path / "rc.csv"
    assert main(["simulate", str(model), "--t-end", "1", "--dt-out", "0.05", "--csv", str(data), "-q"]) == 0
    rows = list(csv.reader(data.open()))
    shifted = tmp_path / "rc_late.csv"
    with shifted.open("w", newline="") as fh:
        csv.writer(fh).writerows([rows[0]] + [[repr(float(r[0]) + 5.0)] + r[1:] for r in rows[1:]])
    capsys.readouterr()
    for path, late in ((data, False), (shifted, True)):
        main(["fit", str(model), str(path), "--params", "R", "--outputs", "uc", "-q"])
        err = capsys.readouterr().err
        assert ("warning: the data start at t = 5, and so does the model's clock" in err) == late, err


def test_a_simulation_the_solver_cannot_finish_ends_the_fit_with_status_1(tmp_path, capsys):
    """F = 1/(a - t) from the guess a = 0.5 blows up inside the logged second: valid input, a
    run the solver cannot finish, so exit 1 as `simulate` gives it (not 2, a refused input),
    naming the parameters it failed at; a start the model refuses (the pendulum at L = 0,
    whose laws divide by zero at t0) stays a refused input, 2."""
    model = tmp_path / "blow.yaml"
    model.write_text(textwrap.dedent("""
        model: blow
        parameters: {a: 0.5}
        components:
          F: {type: Se, effort: "1/(a-t)"}
          m: {type: I, inertia: 1.0}
        bonds: [[F, m]]
        """))
    log = tmp_path / "log.csv"  # the momentum of a = 2: -log(1 - t/2)
    log.write_text("t,m.p\n" + "".join(f"{k / 10:g},{-math.log(1 - k / 20):.9g}\n" for k in range(11)))
    rc = main(["fit", str(model), str(log), "--params", "a", "--outputs", "m.p", "-q"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "simulation failed at {'a': 0.5}: step size underflow at t=0.5" in err, err
    pend = tmp_path / "pend.csv"
    pend.write_text("t,x\n0,0\n0.1,0\n")
    rc = main(["fit", "pendulum", str(pend), "--params", "L", "--outputs", "x", "--guess", "L=0", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "simulation failed at {'L': 0.0}" in err, err


def test_a_logged_input_that_steps_gives_the_model_output_of_the_new_input_at_its_row(tmp_path, capsys):
    """An RC loop driven by a logged voltage u stepping 0 -> 10 -> -5: the capacitor voltage is
    continuous across each step, the row where u changes pairs it with the new u. Read with the
    old y' (u - R i from the left), each such row was off by the jump of u: from exact data the
    fit then 'converged' to R = 1.85 with a residual sigma of 2.3. Now it finds R = 2 to the
    solver's accuracy."""
    model = tmp_path / "rcu.yaml"
    model.write_text(textwrap.dedent("""
        model: rcu
        parameters: {R: 2.0, C: 0.5, u: 0.0}
        components:
          V: {type: Se, effort: u}
          loop: {type: EffortJunction}
          r: {type: R, resistance: R}
          c: {type: FlowJunction, output: true}
          cap: {type: C, capacitance: C}
          rec: {type: Recorder, columns: [uc]}
        bonds: [[V, loop], [loop, r], [loop, c], [c, cap]]
        signals: [[c.out, rec.uc]]
        """))
    t = np.round(np.arange(0.0, 6.0001, 0.1), 10)
    u = np.select([t < 1.0, t < 3.0], [0.0, 10.0], -5.0)
    uc3 = 10.0 * (1.0 - math.exp(-2.0))  # RC = 1 s
    uc = np.select([t < 1.0, t < 3.0], [0.0, 10.0 * (1.0 - np.exp(-(t - 1.0)))],
                   -5.0 + (uc3 + 5.0) * np.exp(-(t - 3.0)))
    log = tmp_path / "log.csv"
    log.write_text("t,u,uc\n" + "".join(f"{a:.10g},{b:.10g},{c:.17g}\n" for a, b, c in zip(t, u, uc)))
    out = tmp_path / "fit.json"
    rc = main(["fit", str(model), str(log), "--params", "R", "--guess", "R=1.5", "--inputs", "u",
               "--outputs", "uc", "--rtol", "1e-9", "--atol", "1e-11", "--json", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["parameters"]["R"]["estimate"] == pytest.approx(2.0, rel=1e-5), result
    assert result["sigma"] < 1e-4, result


def test_bag2csv_leaves_out_rows_before_the_odometry_starts(tmp_path, capsys):
    """Odometry that starts 0.11 s after the joint states: those first rows had the first pose
    held backwards while the wheels turned. They are left out, said so, and the log starts at
    the first row with a pose (t = 0, the pose relative to it)."""
    bag, t, cmd, sim = _robot_bag(tmp_path, {"chassis_mass": 11.0}, odom_from=11)
    out = tmp_path / "log.csv"
    assert main(["bag2csv", str(bag), "-o", str(out), "--wheel-sign", "-1", *NS_TOPICS]) == 0
    assert "the 11 rows outside are left out, nothing extrapolated" in capsys.readouterr().err
    log = read_csv(out)
    np.testing.assert_allclose(log.column("t"), t[11:] - t[11], atol=1e-9)
    np.testing.assert_array_equal(np.column_stack([log.column(c) for c in ("vx_cmd", "vy_cmd", "wz_cmd")]), cmd[11:])
    x, y, phi = sim[11:, 3], sim[11:, 4], sim[11:, 5]
    c, s = np.cos(phi[0]), np.sin(phi[0])
    expected = np.column_stack([c * (x - x[0]) + s * (y - y[0]), -s * (x - x[0]) + c * (y - y[0]), phi - phi[0]])
    np.testing.assert_allclose(np.column_stack([log.column(k) for k in ("x", "y", "phi")]), expected, atol=1e-9)


def test_bag2csv_refuses_one_topic_for_two_roles(tmp_path, capsys):
    bag, *_ = _robot_bag(tmp_path, {"chassis_mass": 11.0})
    out = tmp_path / "log.csv"
    topics = NS_TOPICS[:1] + ["/robotinobase1/odom"] + NS_TOPICS[2:]
    assert main(["bag2csv", str(bag), "-o", str(out), *topics]) == 2
    err = capsys.readouterr().err
    assert "--odom and --cmd-vel both name /robotinobase1/odom" in err and "Traceback" not in err, err
    assert not out.exists()


@pytest.mark.parametrize("law, params, guess", [
    ("kb/ka", ["ka", "kb"], {"ka": 5.0, "kb": 3.0}),  # only the ratio shows
    ("1/(ka + kb)", ["ka", "kb"], {"ka": 5.0, "kb": 1.0}),  # only the sum shows
])
def test_parameters_only_a_ratio_or_sum_of_shows_in_are_not_identifiable(law, params, guess):
    """A spring of stiffness ka/kb (or ka + kb) fitted for both: the outputs do not change along
    one direction, and the fit says so (exit 1 in the CLI). Its forward-difference Jacobian at the
    estimate measured a singular value of 0.018 there, its own truncation error, and reported
    ka = 25.3 +- 0.4, kb = 3.17 +- 0.05 against 16 and 2 as identified."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.yamlmodel import loads_model

    text = (f"model: msd\nparameters: {{m: 2.0, ka: 16.0, kb: 2.0, c: 0.5}}\n"
            f"components:\n  v: {{type: EffortJunction, output: true}}\n  F: {{type: Se, effort: 1.0}}\n"
            f"  mass: {{type: I, inertia: m}}\n  spring: {{type: C, capacitance: \"{law}\", q0: 0.1}}\n"
            f"  d: {{type: R, resistance: c}}\n  rec: {{type: Recorder, columns: [v]}}\n"
            f"bonds: [[F, v], [v, mass], [v, spring], [v, d]]\nsignals: [[v.out, rec.v]]\n")
    compiled = compile_model(loads_model(text))
    t = np.arange(0.0, 10.0001, 0.02)
    gen = FitProblem(compiled, LogData(["t", "spring.q", "v"], np.column_stack([t, 0 * t, 0 * t])), params,
                     ["spring.q", "v"], options=SolverOptions(rtol=1e-9, atol=1e-11))
    truth = [16.0, 2.0]
    y = gen.simulate(truth) + np.random.default_rng(5).normal(0.0, [0.002, 0.005], (len(t), 2))
    prob = FitProblem(compiled, LogData(["t", "spring.q", "v"], np.column_stack([t, y])), params, ["spring.q", "v"],
                      weights={"spring.q": 500.0, "v": 200.0})
    res = fit(prob, x0=[guess[p] for p in params], bounds={p: (0, math.inf) for p in params})
    # (the sum: the direction is mostly the smaller kb's, relative to its size)
    assert not res.identifiable and "kb" in res.rank_deficient, (res.estimate, res.stderr)
    # the same model fitted for one of them is determined, and right
    one = FitProblem(compiled, LogData(["t", "spring.q", "v"], np.column_stack([t, y])), ["ka"], ["spring.q", "v"],
                     weights={"spring.q": 500.0, "v": 200.0})
    res = fit(one, x0=[guess["ka"]], bounds={"ka": (0, math.inf)})
    assert res.identifiable and abs(res.estimate[0] - 16.0) < 3 * res.stderr[0], (res.estimate, res.stderr)


def test_a_fit_whose_residuals_are_many_times_the_noise_says_so():
    """Every output weighted as 1/noise: a residual sigma near 1 is a model that explains the data,
    one many times larger is not, whatever the optimiser's convergence tests say (a log whose
    outputs lag its inputs by 0.3 s converged at sigma 57 with exit 0 and no word)."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.yamlmodel import loads_model

    text = ("model: msd\nparameters: {m: 2.0, k: 8.0, c: 0.5, F0: 1.0}\n"
            "components:\n  v: {type: EffortJunction, output: true}\n"
            "  F: {type: Step, t0: 0.5, before: 0.0, after: F0}\n  Fs: {type: Se, effort: u, inputs: [u]}\n"
            "  mass: {type: I, inertia: m}\n  spring: {type: C, capacitance: 1/k}\n  d: {type: R, resistance: c}\n"
            "  rec: {type: Recorder, columns: [v]}\n"
            "bonds: [[Fs, v], [v, mass], [v, spring], [v, d]]\nsignals: [[F.out, Fs.u], [v.out, rec.v]]\n")
    compiled = compile_model(loads_model(text))
    t = np.arange(0.0, 10.0001, 0.02)
    cols = ["t", "spring.q", "v"]
    gen = FitProblem(compiled, LogData(cols, np.column_stack([t, 0 * t, 0 * t])), ["m"], cols[1:],
                     options=SolverOptions(rtol=1e-9, atol=1e-11))
    clean = gen.simulate([2.0])
    noise = np.random.default_rng(7).normal(0.0, [0.002, 0.005], clean.shape)
    weights = {"spring.q": 500.0, "v": 200.0}
    for lag, warned in ((0, False), (15, True)):  # outputs 0.3 s late against the model's clock
        y = np.vstack([np.repeat(clean[:1], lag, axis=0), clean[:len(t) - lag]]) + noise
        prob = FitProblem(compiled, LogData(cols, np.column_stack([t, y])), ["m", "k", "c"], cols[1:],
                          weights=weights)
        res = fit(prob, x0=[1.5, 6.0, 0.7], bounds={n: (0, math.inf) for n in ("m", "k", "c")})
        said = any("residual sigma" in w for w in res.warnings)
        assert said == warned, (lag, res.sigma, res.warnings)
        assert (res.sigma > 3) == warned, res.sigma


def test_an_interval_that_reaches_past_a_bound_is_named():
    """A damper fitted from a log in which it hardly shows: b = 0.030 +- 0.026, its 95 % interval
    -0.021 .. 0.082 reaching below 0, which no resistance can take. The estimate is no nonsense
    (the truth, 0.05, is inside), but the interval below 0 is: said, where before it was printed
    as it was with no word. The same log with other noise, an interval inside the bound: nothing."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.yamlmodel import loads_model

    text = ("model: drag\nparameters: {m: 1.0, b: 0.05}\n"
            "components:\n  v: {type: EffortJunction, output: true}\n  F: {type: Se, effort: 1.0}\n"
            "  mass: {type: I, inertia: m}\n  d: {type: R, resistance: b}\n"
            "bonds: [[F, v], [v, mass], [v, d]]\n")
    compiled = compile_model(loads_model(text))
    t = np.arange(0.0, 1.0001, 0.01)
    gen = FitProblem(compiled, LogData(["t", "mass.p"], np.column_stack([t, 0 * t])), ["b"], ["mass.p"],
                     options=SolverOptions(rtol=1e-10, atol=1e-12))
    clean = gen.simulate([0.05])
    for seed, past in ((0, True), (1, False)):
        y = clean + np.random.default_rng(seed).normal(0.0, 0.06, clean.shape)
        res = fit(FitProblem(compiled, LogData(["t", "mass.p"], np.column_stack([t, y])), ["b"], ["mass.p"]), x0=[0.1])
        assert res.identifiable and res.ci_low[0] <= 0.05 <= res.ci_high[0], (res.estimate, res.stderr)
        assert (res.ci_low[0] < 0) == past, (res.ci_low, res.ci_high)
        said = [w for w in res.warnings if "reaches past its lower bound 0" in w]
        assert bool(said) == past, res.warnings


MSD_YAML = """model: msd
parameters: {k: 4.0, m: 1.0, c: 0.4}
components:
  v: {type: EffortJunction}
  mass: {type: I, inertia: m}
  spring: {type: C, effort: "k*q", q0: 0.1}
  d: {type: R, resistance: c}
bonds: [[v, mass], [v, spring], [v, d]]
"""


def test_a_log_that_begins_mid_motion_is_warned_of(tmp_path, capsys):
    """A log from t = 1 of a run that started at rest at t = 0, fitted by a model that starts at
    rest at the log's first time: the fit bent k to 13.9 (true 3) and said "converged". The
    same log from t = 0 fits without a warning."""
    model = tmp_path / "msd.yaml"
    model.write_text(MSD_YAML)
    t = np.round(np.arange(0.0, 10.0 + 1e-9, 0.05), 10)
    gen = FitProblem(str(model), LogData(["t", "mass.p", "spring.q"], np.column_stack([t, 0 * t, 0 * t])),
                     ["k", "c"], ["mass.p", "spring.q"], options=SolverOptions(rtol=1e-10, atol=1e-12))
    clean = gen.simulate([3.0, 0.4])
    y = clean + np.random.default_rng(5).normal(0.0, 0.002, clean.shape)
    whole, late = tmp_path / "whole.csv", tmp_path / "late.csv"
    _write(whole, LogData(["t", "mass.p", "spring.q"], np.column_stack([t, y])))
    _write(late, LogData(["t", "mass.p", "spring.q"], np.column_stack([t, y])[t >= 1.0]))
    fit_args = ["--params", "k,c", "--outputs", "mass.p,spring.q"]

    assert main(["fit", str(model), str(whole), *fit_args]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err and "converged:" in captured.out, captured

    assert main(["fit", str(model), str(late), *fit_args]) in (0, 1)  # (converged or not, k far from 3)
    captured = capsys.readouterr()
    assert "converged:" not in captured.out, captured.out
    err = " ".join(captured.err.split())
    assert "warning: the data's first row (t = 1) is far from the model's start: mass.p = " in err, err
    assert "start the log where the model's initial state holds (e.g. at rest), or give the model the logged state " \
           "as its initial values" in err, err


def test_a_constant_noise_free_column_is_no_start_mismatch():
    """A column that is constant in the log (no noise, no range) and off by a rounding error at
    the first row is not a log that begins mid-motion."""
    from types import SimpleNamespace

    from bondsim_ros.fit.core import _start_mismatch

    t = np.linspace(0.0, 1.0, 50)
    y = np.column_stack([np.sin(3 * t), np.zeros_like(t)])
    resid = np.zeros_like(y)
    resid[0, 1] = 1e-15
    problem = SimpleNamespace(t=t, y=y, output_map=[("sin", "y_sin"), ("lat", "y_lat")], time_col="t")
    assert _start_mismatch(problem, resid) == ""
    resid[0, 1] = 0.5  # a real offset at the start of a constant column is still said
    assert "y_lat" in _start_mismatch(problem, resid)
