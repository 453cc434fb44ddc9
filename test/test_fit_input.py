"""Hostile and careless input to `fit` and `bag2csv`: refused by name with exit status 2
before any work, no traceback, nothing half-written; odd but usable logs handled with a warning."""
from __future__ import annotations

import csv
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.cli import main
from bondsim_ros.fit import read_csv

CMD, JS, ODOM = "/robot/cmd_vel", "/robot/joint_states", "/robot/odom"
WHEELS = "a,b,c"


def refused(capsys, argv, *fragments):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and err.startswith(f"bondsim-ros {argv[0]}: error: "), err
    for f in fragments:
        assert f in err, err
    return err


def write_bag(path, cmds=(), states=(), js_type="sensor_msgs/msg/JointState"):
    """A small MCAP bag: ``cmds`` [(log_ns, vx, vy, wz)] as Twist; ``states`` [(log_ns, stamp_ns,
    (w1, w2, w3))] as JointState of joints a, b, c (or, with another ``js_type``, a Twist)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    T = store.types

    def vec(x=0.0, y=0.0, z=0.0):
        return T["geometry_msgs/msg/Vector3"](x=x, y=y, z=z)

    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as bag:
        c_cmd = bag.add_connection(CMD, "geometry_msgs/msg/Twist", typestore=store)
        c_js = bag.add_connection(JS, js_type, typestore=store)
        for ns, vx, vy, wz in cmds:
            msg = T["geometry_msgs/msg/Twist"](linear=vec(vx, vy), angular=vec(z=wz))
            bag.write(c_cmd, ns, store.serialize_cdr(msg, msg.__msgtype__))
        for ns, stamp, w in states:
            if js_type == "sensor_msgs/msg/JointState":
                header = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
                    sec=stamp // 10**9, nanosec=stamp % 10**9), frame_id="")
                msg = T["sensor_msgs/msg/JointState"](header=header, name=["a", "b", "c"], position=np.zeros(3),
                                                      velocity=np.array(w, float), effort=np.zeros(3))
            else:
                msg = T["geometry_msgs/msg/Twist"](linear=vec(), angular=vec())
            bag.write(c_js, ns, store.serialize_cdr(msg, msg.__msgtype__))
    return path


def bag2csv(bag, out, *extra):
    return ["bag2csv", str(bag), "-o", str(out), "--cmd-vel", CMD, "--joint-states", JS, "--wheel-joints", WHEELS,
            "--no-odom", *extra]


T0 = 1_700_000_000 * 10**9


def test_a_command_topic_without_messages_is_said(tmp_path, capsys):
    """/cmd_vel logged but never published: the columns are zeros, and the run says why."""
    states = [(T0 + k * 10**7, T0 + k * 10**7, (k, 2 * k, 3 * k)) for k in range(5)]
    bag = write_bag(tmp_path / "b", [], states)
    out = tmp_path / "log.csv"
    assert main(bag2csv(bag, out)) == 0
    assert f"warning: {CMD}: no command in the bag: the command columns are 0 throughout" in capsys.readouterr().err
    assert not read_csv(out).column("vx_cmd").any()


def test_equal_stamps_fall_back_to_log_times(tmp_path, capsys):
    """A driver that leaves the header stamp at zero: one row per message on the bag's clock."""
    states = [(T0 + k * 10**7, 0, (k, 2 * k, 3 * k)) for k in range(20)]
    cmds = [(T0 + 5 * 10**7 - 1, 0.5, 0.0, 0.0)]
    bag = write_bag(tmp_path / "b", cmds, states)
    out = tmp_path / "log.csv"
    assert main(bag2csv(bag, out)) == 0
    err = capsys.readouterr().err
    assert "all 20 header stamps are equal; using the bag's log times" in err
    log = read_csv(out)
    assert len(log.data) == 20
    np.testing.assert_allclose(log.column("t"), np.arange(20) * 0.01, atol=1e-12)
    np.testing.assert_array_equal(log.column("vx_cmd"), np.where(np.arange(20) >= 5, 0.5, 0.0))


@pytest.mark.parametrize("option, value", [("--wheel-joints", "a,a,b"), ("--motor-joints", "m0,m1,m0")])
def test_a_joint_named_twice_is_refused(tmp_path, capsys, option, value):
    """Its readings would fill two wheel columns and leave another wheel's none, without a word."""
    bag = write_bag(tmp_path / "b", [(T0, 0.5, 0.0, 0.0)], [(T0 + k * 10**7, T0 + k * 10**7, (k, 2 * k, 3 * k))
                                                            for k in range(5)])
    out = tmp_path / "log.csv"
    argv = bag2csv(bag, out)
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    refused(capsys, argv, f"{option}: '{value.split(',')[0]}' is given twice")
    assert not out.exists()


def test_no_time_axis_at_all_is_refused(tmp_path, capsys):
    bag = write_bag(tmp_path / "b", [], [(T0, 0, (1, 2, 3))] * 5)
    out = tmp_path / "log.csv"
    refused(capsys, bag2csv(bag, out), f"all 5 {JS} messages have the same header stamp and log time")
    assert not out.exists()


def test_non_finite_commands_and_speeds_are_dropped_and_counted(tmp_path, capsys):
    states = [(T0 + k * 10**7, T0 + k * 10**7, (1.0, math.nan if k == 3 else 2.0, 3.0)) for k in range(10)]
    cmds = [(T0 + 1, 0.5, 0.0, 0.0), (T0 + 2 * 10**7, math.inf, 0.0, 0.0), (T0 + 4 * 10**7, 0.1, math.nan, 0.0),
            (T0 + 6 * 10**7, 0.2, 0.0, 1e300)]
    bag = write_bag(tmp_path / "b", cmds, states)
    out = tmp_path / "log.csv"
    assert main(bag2csv(bag, out)) == 0
    err = capsys.readouterr().err
    assert f"{CMD}: dropped 3 of 4 commands with inf/NaN values or beyond +-1e+150" in err
    assert f"{JS}: dropped 1 of 10 messages without finite wheel velocities" in err
    log = read_csv(out)
    assert np.all(np.isfinite(log.data)) and len(log.data) == 9
    assert set(log.column("vx_cmd")) == {0.0, 0.5}  # 0 before the first command; inf, NaN, 1e300 never held


def test_output_that_is_a_directory_leaves_nothing(tmp_path, capsys):
    bag = write_bag(tmp_path / "b", [], [(T0 + k, T0 + k, (1, 2, 3)) for k in range(3)])
    out = tmp_path / "out.csv"
    out.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    refused(capsys, bag2csv(bag, out), f"-o {out}: is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == before and list(out.iterdir()) == []


def test_topic_of_the_wrong_type_is_named(tmp_path, capsys):
    bag = write_bag(tmp_path / "b", [], [(T0 + k, T0 + k, None) for k in range(3)], js_type="geometry_msgs/msg/Twist")
    out = tmp_path / "log.csv"
    refused(capsys, bag2csv(bag, out),
            f"topic {JS} carries geometry_msgs/msg/Twist, expected sensor_msgs/msg/JointState")
    assert not out.exists()


# ------------------------------------------------------------------------------------------
# fit
# ------------------------------------------------------------------------------------------
def _data(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", "V", "current"])
        w.writerows(rows)
    return path


FIT = ["--params", "Ra", "--outputs", "current", "--inputs", "V", "-q"]


def test_huge_data_values_are_refused_by_cell(tmp_path, capsys):
    data = _data(tmp_path / "d.csv", [[0.0, 24.0, 0.0], [0.1, 24.0, 1e300]])
    refused(capsys, ["fit", "dc_motor", str(data), *FIT], "d.csv:3: column 'current': '1e+300' is beyond")


def test_non_utf8_data_is_refused(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_bytes("t,V,current\n0,24,0\n0.1,24,\xb5\n".encode("latin-1"))
    refused(capsys, ["fit", "dc_motor", str(data), *FIT], "d.csv: not UTF-8 text")


@pytest.mark.parametrize("bounds, says", [
    (["C=a:1"], "--bounds expects NAME=LO:HI, got 'C=a:1'"),
    (["C=1"], "--bounds expects NAME=LO:HI, got 'C=1'"),
    (["C=0:1", "C=0:2"], "--bounds C: given twice"),
])
def test_malformed_bounds_are_refused_in_their_own_form(tmp_path, capsys, bounds, says):
    data = _data(tmp_path / "d.csv", [[0.0, 24.0, 0.0], [0.1, 24.0, 1.0]])
    argv = ["fit", "dc_motor", str(data), *FIT]
    for b in bounds:
        argv += ["--bounds", b]
    err = refused(capsys, argv)
    assert err.strip() == f"bondsim-ros fit: error: {says}"


def test_max_evals_below_one_is_refused(tmp_path, capsys):
    data = _data(tmp_path / "d.csv", [[0.0, 24.0, 0.0], [0.1, 24.0, 1.0]])
    refused(capsys, ["fit", "dc_motor", str(data), *FIT, "--max-evals", "0"],
            "--max-evals 0: give at least 1 evaluation of the residuals")


def test_the_max_evals_help_says_what_it_counts(capsys):
    """It is least_squares' max_nfev: --max-evals 2 with one parameter runs 7 simulations."""
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("--max-evals N stop the search after N evaluations of the residuals (least_squares' max_nfev, >= 1); "
            "a check of the start, the Jacobian's simulations (one per fitted parameter and iteration) and those "
            "for the standard errors at the end come on top") in text


@pytest.mark.parametrize("option", ["--json", "--csv", "--plot", "--config-out"])
@pytest.mark.parametrize("kind", ["missing folder", "directory", "folder is a file"])
def test_output_paths_are_checked_before_the_work(tmp_path, capsys, option, kind):
    data = _data(tmp_path / "d.csv", [[0.0, 24.0, 0.0], [0.1, 24.0, 1.0]])
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    target = {"missing folder": tmp_path / "nope" / "o.txt", "directory": tmp_path / "adir",
              "folder is a file": tmp_path / "afile" / "o.txt"}[kind]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    tic = time.perf_counter()
    err = refused(capsys, ["fit", "no_such_model_is_read", str(data), *FIT, option, str(target)], option,
                  str(target))
    assert time.perf_counter() - tic < 2.0  # no model was built
    assert {"missing folder": "does not exist", "directory": "is a directory",
            "folder is a file": "is not a folder"}[kind] in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_same_output_file_twice_is_refused(tmp_path, capsys):
    data = _data(tmp_path / "d.csv", [[0.0, 24.0, 0.0], [0.1, 24.0, 1.0]])
    out = tmp_path / "o.json"
    refused(capsys, ["fit", "dc_motor", str(data), *FIT, "--json", str(out), "--csv", str(out)], "name the same file")


@pytest.fixture(scope="module")
def motor_model(tmp_path_factory):
    from test_fit import MOTOR_PY

    path = tmp_path_factory.mktemp("fitin") / "motor.py"
    path.write_text(MOTOR_PY)
    return path


def test_overflowing_sums_are_not_convergence(motor_model, tmp_path, capsys):
    """Finite data whose weighted squares overflow: refused at the start, never 'converged'
    with sigma = inf."""
    t = np.linspace(0, 0.1, 11)
    data = _data(tmp_path / "d.csv", [[tk, 24.0, 1e140] for tk in t])
    out = tmp_path / "fit.json"
    refused(capsys, ["fit", str(motor_model), str(data), *FIT, "--weight", "current=1e100", "--json", str(out)],
            "overflows at the initial parameters")
    assert not out.exists()


def test_outputs_over_the_inputs_are_refused(tmp_path, capsys):
    data = _data(tmp_path / "d.csv", [[0.0, 24.0, 0.0], [0.1, 24.0, 1.0]])
    before = data.read_bytes()
    refused(capsys, ["fit", "dc_motor", str(data), *FIT, "--csv", str(data)],
            f"--csv {data}: refusing to overwrite {data}, an input of this command")
    assert data.read_bytes() == before
    bag = write_bag(tmp_path / "b", [], [(T0 + k, T0 + k, (1, 2, 3)) for k in range(3)])
    mcap = next(bag.glob("*.mcap"))
    size = mcap.stat().st_size
    refused(capsys, ["bag2csv", str(mcap), "-o", str(mcap), "--no-odom"], f"refusing to overwrite {mcap}")
    assert mcap.stat().st_size == size
    # nor a file of a bag folder (its metadata), nor the bridge configuration read
    meta = bag / "metadata.yaml"
    kept = meta.read_bytes() if meta.exists() else None
    refused(capsys, ["bag2csv", str(bag), "-o", str(meta), "--no-odom"], f"refusing to write inside {bag}")
    assert (meta.read_bytes() if meta.exists() else None) == kept
    cfg = tmp_path / "bridge.yaml"
    cfg.write_text("odom_topic: /odom\n")
    refused(capsys, ["bag2csv", str(bag), "-o", str(cfg), "--bridge-config", str(cfg), "--no-odom"],
            f"refusing to overwrite {cfg}")
    assert cfg.read_text() == "odom_topic: /odom\n"
    model = tmp_path / "rc_step.yaml"
    model.write_text((Path(__file__).parent / "data" / "models" / "rc_step.yaml").read_text())
    text = model.read_text()
    for argv in (["fit", str(model), str(data), "--params", "C", "--outputs", "uc=current", "--json", str(model)],
                 ["simulate", str(model), "--t-end", "0.5", "--dt-out", "0.1", "--csv", str(model)],
                 ["draw", str(model), "-o", str(model)]):
        refused(capsys, argv, f"refusing to overwrite {model}, an input of this command")
        assert model.read_text() == text, argv
    refused(capsys, bag2csv(bag, tmp_path / "o.csv", "--wheel-sign", "nan"), "--wheel-sign nan")


def test_unwritable_output_folder_is_refused(tmp_path, capsys):
    import os

    data = _data(tmp_path / "d.csv", [[0.0, 24.0, 0.0], [0.1, 24.0, 1.0]])
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if os.access(ro, os.W_OK):  # root ignores the mode; /proc/sys refuses writes even to root
        ro = Path("/proc/sys")
    if os.access(ro, os.W_OK):
        pytest.skip("no unwritable folder available")
    target = ro / "fit.json"
    refused(capsys, ["fit", "dc_motor", str(data), *FIT, "--json", str(target)], f"the folder {ro} is not writable")
    assert not target.exists()


def test_an_output_folder_that_takes_no_file_is_refused_before_the_fit_and_nothing_is_left(tmp_path, capsys):
    """/proc looks writable to root (os.access) but takes no new file: the fit used to run, write
    --json, then fail on --csv; the outputs are now staged before the fit, and put in place
    together or not at all."""
    import os

    if not os.access("/proc", os.W_OK):
        pytest.skip("/proc is refused by the first check here (not root)")
    model, data = _rc_step_run(tmp_path)
    err = refused(capsys, ["fit", str(model), str(data), "--params", "C", "--guess", "C=0.4", "--outputs", "uc",
                           "-q", "--json", str(tmp_path / "f.json"), "--csv", "/proc/fit.csv"],
                  "--csv /proc/fit.csv: cannot write")
    assert "C =" not in err and list(tmp_path.iterdir()) == [data]


def test_a_search_stepping_onto_a_refused_value_says_so_and_exits_1(tmp_path, capsys):
    """--bounds C=: opens the side the model refuses; the search's step there is a run of the
    fit that cannot be done (exit 1, as on the workers), named as the search's, not refused
    input (2) that reads as if the user had given C = 0."""
    model, data = _rc_step_run(tmp_path)
    rc = main(["fit", str(model), str(data), "--params", "C", "--guess", "C=2", "--bounds", "C=:", "--outputs", "uc",
               "-q"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert re.search(r"error: the search stepped to \{'C': [-0-9.e]+\}, which the model refuses: rc_step: parameter "
                     r"value\(s\) C = [-0-9.e]+ refused .* keep it away with --bounds$", err.strip()), err
    assert "Traceback" not in err


def _rc_step_run(tmp_path):
    """test/data/models/rc_step.yaml and a CSV of its own run (uc(t) of R = 2, C = 0.5)."""
    model = Path(__file__).parent / "data" / "models" / "rc_step.yaml"
    data = tmp_path / "d.csv"
    assert main(["simulate", str(model), "--t-end", "3", "--dt-out", "0.05", "-q", "--csv", str(data)]) == 0
    return model, data


def test_an_output_that_fails_last_leaves_none_of_the_others(tmp_path, capsys, monkeypatch):
    from bondsim_ros.fit import commands

    def failing_plot(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(commands, "plot_fit", failing_plot)
    model, data = _rc_step_run(tmp_path)
    refused(capsys, ["fit", str(model), str(data), "--params", "C", "--guess", "C=0.4", "--outputs", "uc",
                     "-q", "--json", str(tmp_path / "f.json"), "--csv", str(tmp_path / "f.csv"),
                     "--plot", str(tmp_path / "f.png")],
            f"--plot {tmp_path / 'f.png'}: cannot write: No space left on device")
    assert list(tmp_path.iterdir()) == [data]


@pytest.mark.parametrize("bad,fragment", [
    ("robot_wheel_joints: 5", "robot_wheel_joints is 5, expected a list of joint names"),
    ("robot_wheel_sign: abc", "robot_wheel_sign is 'abc', expected a finite, non-zero number"),
    ("robot_cmd_vel: [1, 2]", "robot_cmd_vel is [1, 2], expected a topic name"),
    ("robot_odom: 3", "robot_odom is 3, expected a topic name"),
])
def test_bad_bridge_config_values_are_named(tmp_path, capsys, bad, fragment):
    import yaml

    from bondsim_ros.paths import share_file

    doc = yaml.safe_load(share_file("config", "robotino_bridge.yaml").read_text())
    key, value = bad.split(": ")
    doc["twin_bridge"]["ros__parameters"][key] = yaml.safe_load(value)
    cfg = tmp_path / "bridge.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    bag = write_bag(tmp_path / "b", [], [(T0 + k, T0 + k, (1, 2, 3)) for k in range(3)])
    out = tmp_path / "o.csv"
    refused(capsys, ["bag2csv", str(bag), "-o", str(out), "--bridge-config", str(cfg)], "bridge.yaml: ", fragment)
    assert not out.exists()


def test_a_bridge_config_that_is_no_yaml_is_one_line_naming_its_line(tmp_path, capsys):
    """PyYAML's own message spans several lines, with a caret under the text."""
    cfg = tmp_path / "bridge.yaml"
    cfg.write_text("twin_bridge:\n  ros__parameters: [\n")
    bag = write_bag(tmp_path / "b", [], [(T0 + k, T0 + k, (1, 2, 3)) for k in range(3)])
    out = tmp_path / "o.csv"
    err = refused(capsys, ["bag2csv", str(bag), "-o", str(out), "--bridge-config", str(cfg)],
                  f"{cfg}:3: not valid YAML: ")
    assert len(err.strip().splitlines()) == 1, err


def test_outputs_are_written_whole_and_nothing_else(motor_model, tmp_path, capsys):
    """--json, --csv and --plot land under their names, complete, with no temporary file left."""
    import json

    from PIL import Image

    t = np.linspace(0, 0.05, 11)
    data = _data(tmp_path / "d.csv", [[tk, 24.0, 10.0 * (1 - math.exp(-tk / 0.001))] for tk in t])
    out = tmp_path / "out"
    out.mkdir()
    rc = main(["fit", str(motor_model), str(data), *FIT, "--max-evals", "3", "--json", str(out / "f.json"),
               "--csv", str(out / "f.csv"), "--plot", str(out / "f.png")])
    assert rc in (0, 1), capsys.readouterr().err  # 3 evaluations may stop short of convergence
    assert sorted(p.name for p in out.iterdir()) == ["f.csv", "f.json", "f.png"]
    doc = json.loads((out / "f.json").read_text())  # strict JSON: null, not NaN, where undetermined
    assert set(doc["parameters"]) == {"Ra"}
    assert read_csv(out / "f.csv").names == ["t", "current", "current_fit"]
    assert Image.open(out / "f.png").size[0] > 100


def test_fuzz_csv_readers(tmp_path):
    """Random byte mutations of a valid log through fit's and render's CSV readers: a table or a
    named error (FitError / RenderError), never another exception. Seeded, bounded."""
    import os
    import random

    from bondsim_ros.fit import FitError
    from bondsim_ros.mechanism.render import RenderError, read_joint_csv

    rng = random.Random(int(os.environ.get("BONDSIM_FUZZ_SEED", "15")))
    base = b"t,V,current,j1\n0,24,0,0.1\n0.1,24,1.5,0.2\n0.2,12,2.5,-0.3\n"
    junk = [b",", b"\n", b"\r", b'"', b"\x00", b"\xff", b"nan", b"inf", b"1e400", b"-", b"\xef\xbb\xbf", b" ", b"e"]
    path = tmp_path / "log.csv"
    for case in range(int(os.environ.get("BONDSIM_FUZZ_CASES", "25")) * 20):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(data) + 1)
            op = rng.random()
            if op < 0.4:
                data[k:k] = rng.choice(junk)
            elif op < 0.7 and data:
                del data[k:k + rng.randint(1, 5)]
            elif data:
                data[min(k, len(data) - 1)] = rng.randrange(256)
        path.write_bytes(bytes(data))
        for reader, ok in ((read_csv, FitError), (read_joint_csv, RenderError)):
            try:
                reader(path)
            except ok as exc:
                assert str(exc), (case, bytes(data))
            except Exception as exc:  # noqa: BLE001 - the finding
                pytest.fail(f"case {case}: {reader.__name__}({bytes(data)!r}): {type(exc).__name__}: {exc}")


def test_a_plot_format_no_writer_has_is_refused_before_the_fit(tmp_path, capsys):
    """`fit --plot fit.txt` used to fit, write --json, then end in matplotlib's traceback."""
    data = _data(tmp_path / "d.csv", [[0.0, 24.0, 0.0], [0.1, 24.0, 1.0], [0.2, 24.0, 1.5]])
    out = tmp_path / "fit.json"
    refused(capsys, ["fit", "dc_motor", str(data), *FIT, "--json", str(out), "--plot", str(tmp_path / "fit.txt")],
            f"--plot {tmp_path / 'fit.txt'}: no figure format .txt")
    assert not out.exists()


def test_a_t_end_leaving_too_few_rows_and_a_byte_order_mark_are_handled(motor_model, tmp_path, capsys):
    """--t-end that keeps one row used to be reported as an unsorted time column, nan as "no
    data rows with t <= nan"; a spreadsheet's UTF-8 byte-order mark hid the first column's name
    ("no column 't' (columns: \\ufefft, ...)")."""
    rows = [[0.0, 24.0, 0.0], [0.1, 24.0, 1.0], [0.2, 24.0, 1.5]]
    data = _data(tmp_path / "d.csv", rows)
    refused(capsys, ["fit", str(motor_model), str(data), *FIT, "--t-end", "0.05"],
            f"{data}: 1 data row(s) with t <= 0.05 (t_end, --t-end): a fit needs at least two")
    refused(capsys, ["fit", str(motor_model), str(data), *FIT, "--t-end", "nan"],
            "t_end (--t-end) must be a finite time")
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + data.read_bytes())
    assert read_csv(bom).names == read_csv(data).names and read_csv(bom).names[0] == "t"
    refused(capsys, ["fit", str(motor_model), str(data), *FIT, "--param", "Ra=1", "--param", "Ra=2"],
            "--param Ra: given twice")
    refused(capsys, ["simulate", str(motor_model), "--t-end", "0.1", "--dt-out", "0.05", "--param", "Ra=1",
                     "--param", "Ra=2"], "--param Ra: given twice")


MSD_K = """\
model: msd_k
parameters: {k: 4.0}
components:
  v: {type: EffortJunction}
  mass: {type: I, inertia: 1.0}
  spring: {type: C, effort: "k*q", q0: 0.1}
bonds: [[v, mass], [v, spring]]
"""


def _api_problem(tmp_path, **kw):
    from bondsim_ros.fit import FitProblem

    model = tmp_path / "msd_k.yaml"
    model.write_text(MSD_K)
    data = tmp_path / "d.csv"
    data.write_text("t,x\n" + "".join(f"{0.1 * i:g},{0.1 * math.cos(2 * 0.1 * i):.9f}\n" for i in range(11)))
    return FitProblem(str(model), read_csv(data), **{"params": ["k"], "outputs": ["spring.q=x"], **kw})


@pytest.mark.parametrize("kw, says", [
    ({"x0": [2.0, 1.0]}, "x0: expected 1 value(s), one per fitted parameter (k), got 2"),  # was a numpy ValueError
    ({"x0": ["a"]}, "x0: expected one number per fitted parameter (k), got ['a']"),
    ({"max_nfev": 0}, "max_nfev: expected a whole number of simulations >= 1 (None: no limit), got 0"),
    ({"diff_step": -1}, "diff_step: expected a relative step between 0 and 1"),  # blamed the bounds
])
def test_the_fit_api_refuses_bad_arguments_by_name(tmp_path, kw, says):
    from bondsim_ros.fit import FitError, fit

    with pytest.raises(FitError, match=re.escape(says)):
        fit(_api_problem(tmp_path), **kw)


@pytest.mark.parametrize("kw, says", [
    ({"params": "k"}, "params: expected a list of names, got the string 'k'"),  # 'k,c' was the names k , c
    ({"outputs": "spring.q=x"}, "outputs: expected a list of names, got the string 'spring.q=x'"),
    ({"weights": {"x": "100"}}, "weight of 'x' must be a positive number, got '100'"),  # a TypeError
])
def test_a_fit_problem_refuses_strings_for_lists_and_numbers(tmp_path, kw, says):
    from bondsim_ros.fit import FitError

    with pytest.raises(FitError, match=re.escape(says)):
        _api_problem(tmp_path, **kw)


@pytest.mark.parametrize("option", ["--config-out", "--json", "--csv"])
def test_an_output_over_the_robotino_config_is_refused(tmp_path, capsys, monkeypatch, option):
    """`fit robotino_twist ... --config-out robotino.yaml`, with $BONDSIM_ROBOTINO_CONFIG naming
    that file, rewrote the parameter file the fit's model was built from."""
    config = tmp_path / "robotino.yaml"
    text = (Path(__file__).resolve().parents[1] / "config" / "robotino.yaml").read_text()
    config.write_text(text)
    monkeypatch.setenv("BONDSIM_ROBOTINO_CONFIG", str(config))
    # a log the fit converges on: the twin's own wheel speed after a 0.6 m/s step
    sim = tmp_path / "sim.csv"
    assert main(["simulate", "robotino_twist", "--param", "vx_cmd=0.6", "--t-end", "0.5", "--dt-out", "0.01",
                 "--csv", str(sim), "-q"]) == 0
    run = np.genfromtxt(sim, delimiter=",", names=True)
    data = tmp_path / "d.csv"
    with open(data, "w", newline="") as fh:
        csv.writer(fh).writerows([["t", "vx_cmd", "vy_cmd", "wz_cmd", "w1"]]
                                 + [[t, 0.6, 0.0, 0.0, w] for t, w in zip(run["t"], run["w1"])])
    sim.unlink()
    before = sorted(p.name for p in tmp_path.iterdir())
    refused(capsys, ["fit", "robotino_twist", str(data), "--params", "chassis_mass", "--guess", "chassis_mass=12",
                     "--inputs", "vx_cmd,vy_cmd,wz_cmd", "--outputs", "w1", "-q", option, str(config)],
            f"{option} {config}: refusing to overwrite {config}, a file the model is built from")
    assert config.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nor a staged file left


def test_an_output_over_a_module_the_model_file_imports_is_refused(tmp_path, capsys):
    from test_fit import MOTOR_PY

    model = tmp_path / "motor.py"
    model.write_text("import gains\n" + MOTOR_PY)
    (tmp_path / "gains.py").write_text("K = 0.03\n")
    data = _data(tmp_path / "d.csv", [[0.0, 24.0, 0.0], [0.1, 24.0, 1.0]])
    refused(capsys, ["fit", str(model), str(data), *FIT, "--csv", str(tmp_path / "gains.py")],
            "refusing to overwrite", "a file the model is built from")
    assert (tmp_path / "gains.py").read_text() == "K = 0.03\n"


@pytest.mark.parametrize("extra, said", [
    (["--odom", "/nonexistent_topic"], "--odom and --no-odom: give one of them"),
    (["--no-currents", "--motor-readings", "/robot/motor_readings"],
     "--motor-readings and --no-currents: give one of them"),
], ids=["odom", "currents"])
def test_a_topic_with_its_columns_left_out_is_refused(tmp_path, capsys, extra, said):
    """`bag2csv ... --odom TOPIC --no-odom` wrote the CSV without odometry and dropped --odom
    silently; --motor-readings with --no-currents was refused already."""
    bag = write_bag(tmp_path / "b", [(T0, 0.1, 0.0, 0.0)], [(T0 + k, T0 + k, (1, 2, 3)) for k in range(3)])
    out = tmp_path / "o.csv"
    err = refused(capsys, bag2csv(bag, out, *extra), said)
    assert err.strip().splitlines() == [f"bondsim-ros bag2csv: error: {said}"]
    assert not out.exists()
