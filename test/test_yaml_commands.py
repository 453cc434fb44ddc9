"""The commands: section of a YAML model: /cmd_vel sets the model's own run-time parameters at
the simulated instant it is applied; errors name the file and line."""
import shutil
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.robots import RobotError, load_robot
from bondsim_ros.twin.protocol import TWIN_OPTIONS

DATA = Path(__file__).resolve().parent / "data" / "live"
MODEL = (DATA / "pushed_slider.yaml").read_text()


def write(tmp_path, commands: str) -> Path:
    shutil.copy(DATA / "slider.xml", tmp_path / "slider.xml")
    path = tmp_path / "m.yaml"
    path.write_text(MODEL + commands)
    return path


def test_twist_sets_a_parameter_at_the_instant_it_is_applied(tmp_path):
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.simulation import Simulation
    from bondsim_ros.bondgraph.yamlmodel import load_model

    path = write(tmp_path, "commands:\n  twist: {vx: f}\n")
    robot = load_robot(str(path))
    assert "twist" in robot.commands
    twin = robot.make_twin("twist", TWIN_OPTIONS)
    ref = Simulation(compile_model(load_model(path)), TWIN_OPTIONS)
    times = np.arange(0.05, 3.0001, 0.05)
    got, want = [], []
    for t in times:
        if abs(t - 1.0) < 1e-9:
            twin.set_twist(0.3, 0.0, 0.0)
            ref.set_params({"f": 0.3}, restart=True)
        got.append(twin.step_to(t).joint_map()["slide"])
        y, yp = ref.step_to(t)
        want.append(ref.outputs_at(t, y, yp)[ref.compiled.output_names.index("spring.q")])
    got = np.array(got)
    # the force moves the block: late positions differ from the unforced run
    assert abs(got[-1] - got[19]) > 0.01
    np.testing.assert_allclose(got, np.array(want), atol=1e-5)


def test_twist_limits_and_refusal(tmp_path):
    from bondsim_ros.twin.protocol import CommandError, Limits
    path = write(tmp_path, "commands:\n  twist: {vx: f}\n")
    twin = load_robot(str(path)).make_twin("twist", limits=Limits())
    with pytest.raises((CommandError, ValueError)):
        twin.set_twist(float("nan"), 0.0, 0.0)


@pytest.mark.parametrize("commands, bad, message", [
    ("commands:\n  twist: {vx: force}\n", "twist:", "no run-time parameter 'force'"),
    ("commands:\n  twist: {vz: f}\n", "twist:", "unknown key 'vz'"),
    ("commands:\n  wrench: {fx: f}\n", "wrench:", "unknown key 'wrench'"),
])
def test_command_errors_name_file_and_line(tmp_path, commands, bad, message):
    path = write(tmp_path, commands)
    line = next(k for k, ln in enumerate(path.read_text().splitlines(), 1) if bad in ln)
    with pytest.raises(RobotError) as err:
        load_robot(str(path)).make_twin("twist")
    assert f"{path}:{line}" in str(err.value) and message in str(err.value), str(err.value)


@pytest.mark.parametrize("section, bad, message", [
    ("commands:\n  topics:\n    /heater/voltage: u_heater\n", "/heater/voltage:", "no run-time parameter 'u_heater'"),
    ("commands:\n  joints: {elbow: f}\n", "{elbow: f}", "slider.xml has no joint 'elbow'"),
    ("commands:\n  joints: {slide: force}\n", "{slide: force}",
     "commands.joints.slide: the model has no run-time parameter 'force'"),
    ("outputs:\n  /slider/x: position\n", "/slider/x:", "outputs./slider/x: the model has no output column 'position'"),
    ("commands:\n  topics:\n    /heater voltage: f\n", "/heater voltage:", "is not a ROS topic name: character ' '"),
    ("outputs:\n  /slider/2x: spring.q\n", "/slider/2x:", "must not start with a digit"),
    ("outputs:\n  /slider//x: spring.q\n", "/slider//x:", "must not contain '//'"),
    ("outputs:\n  /slider/x/: spring.q\n", "/slider/x/:", "must not end with '/'"),
    ("commands:\n  topics: {/slider/f: f}\noutputs:\n  /slider/f: spring.q\n", "  /slider/f: spring.q",
     "topic '/slider/f' is already a command topic (commands.topics, line"),
    ("outputs:\n  /slider/x: spring.q\n  /slider/y: mass.p\n  /slider/x: mass.p\n", "/slider/x: mass.p",
     "'/slider/x' given twice (first at line"),
    ("commands:\n  topics: [f]\n", "topics:", "commands.topics must be a mapping"),
])
def test_topics_joints_and_outputs_errors_name_file_and_line(tmp_path, section, bad, message):
    path = write(tmp_path, section)
    line = next(k for k, ln in enumerate(path.read_text().splitlines(), 1) if bad in ln)
    with pytest.raises(RobotError) as err:
        load_robot(str(path)).make_twin()
    assert f"{path}:{line}:" in str(err.value) and message in str(err.value), str(err.value)


def test_a_commanded_joint_must_be_one_the_model_moves(tmp_path):
    shutil.copy(DATA / "arm2.xml", tmp_path / "arm2.xml")
    text = (DATA / "arm2.yaml").read_text().replace("joints: {shoulder: q1, elbow: q2}", "joints: {shoulder: q1}")
    path = tmp_path / "arm.yaml"
    path.write_text(text)
    line = next(k for k, ln in enumerate(text.splitlines(), 1) if "q2_ref}" in ln)
    with pytest.raises(RobotError, match=rf"{path}:{line}: commands.joints: 'elbow' is not bound in mechanism.joints"):
        load_robot(str(path)).make_twin()


def test_joints_bind_joint_commands_and_trajectories(tmp_path):
    """commands: joints: makes the trajectory interface: a position set point sets the bound
    parameter at the instant it is applied, the others keep the model's own values."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.simulation import Simulation
    from bondsim_ros.bondgraph.yamlmodel import load_model
    from bondsim_ros.twin.protocol import JointTrajectory

    robot = load_robot(str(DATA / "arm2.yaml"))
    assert robot.commands == ("trajectory",)
    twin = robot.make_twin("trajectory")
    assert twin.trajectory_joints == ["shoulder", "elbow"] and twin.sim.param("q1_ref") == 0.0
    ref = Simulation(compile_model(load_model(DATA / "arm2.yaml")), TWIN_OPTIONS)
    got, want = [], []
    for t in np.arange(0.05, 2.0001, 0.05):
        if abs(t - 0.5) < 1e-9:
            twin.set_joint_trajectory(JointTrajectory(["elbow"], np.zeros(1), np.array([[0.4]])))
            ref.set_params({"q2_ref": 0.4}, restart=True)
        got.append(twin.step_to(t).position)
        y, yp = ref.step_to(t)
        out = ref.outputs_at(t, y, yp)
        want.append([out[ref.compiled.output_names.index(c)] for c in ("q1", "q2")])
    np.testing.assert_allclose(np.array(got), np.array(want), atol=1e-5)
    assert got[-1][1] > 0.3


def test_set_params_refuses_what_the_model_cannot_take(tmp_path):
    from bondsim_ros.twin.protocol import CommandError

    twin = load_robot(str(write(tmp_path, "commands:\n  topics: {/f: f}\n"))).make_twin()
    assert twin.param_topics == {"/f": "f"}
    for bad, message in (({"f": float("nan")}, "not finite"), ({"f": float("inf")}, "not finite"),
                         ({"k": -1.0}, "refused"), ({"force": 1.0}, "no run-time parameter 'force'")):
        with pytest.raises(CommandError, match=message):
            twin.set_params(bad)
    assert twin.sim.param("f") == 0.0 and twin.sim.param("k") == 4.0
    twin.set_params({"f": 0.5})
    assert twin.sim.param("f") == 0.5


def test_topic_names_follow_the_ros_rules():
    """The model file's topic check agrees with rclpy's, as a node applies it: the name, then
    its expansion in the node's namespace."""
    pytest.importorskip("rclpy", reason="rclpy not installed")
    from rclpy.expand_topic_name import expand_topic_name
    from rclpy.validate_full_topic_name import validate_full_topic_name
    from rclpy.validate_topic_name import validate_topic_name

    from bondsim_ros.msgutil import topic_name_error

    names = ["/heater/voltage", "heater/voltage", "~/voltage", "~", "/a_b/c1", "_x", "/", "", "a/", "//a", "/a//b",
             "/1a", "a/1b", "a b", "a-b", "a.b", "/~/a", "a~", "ä", "/heater/u2", "A/B_c"]
    for name in names:
        try:
            validate_topic_name(name)
            validate_full_topic_name(expand_topic_name(name, "dynamics_node", "/robot"))
            ros_ok = True
        except Exception:  # noqa: BLE001 - rclpy's InvalidTopicNameException
            ros_ok = False
        assert (topic_name_error(name) is None) == ros_ok, (name, topic_name_error(name))
    # stricter than rcl in one case: rcl expands "~a" to "/robot/dynamics_nodea"
    assert topic_name_error("~a") == "'~' must be followed by '/'"


def test_up_and_demo_refuse_a_bad_commands_section_with_exit_2(tmp_path, capfd):
    from bondsim_ros.cli import main

    path = write(tmp_path, "outputs:\n  /slider/x: position\n")
    assert main(["up", "--model", str(path), "--duration", "0.2"]) == 2
    err = capfd.readouterr().err
    assert f"{path}:{len(path.read_text().splitlines())}: outputs./slider/x: the model has no output column" in err
    assert "Traceback" not in err
    out = tmp_path / "demo_out"
    assert main(["demo", "--model", str(path), "--out", str(out), "--no-video", "--duration", "1", "-q"]) == 2
    err = capfd.readouterr().err
    assert f"{path}:{len(path.read_text().splitlines())}: outputs./slider/x" in err and "Traceback" not in err, err
    assert not out.exists()


def test_the_robotino_twin_refuses_parameters_it_cannot_take():
    """A ModelTwin: the parameter and what is wrong with it named, nothing set."""
    from bondsim_ros.twin.protocol import CommandError

    twin = load_robot("robotino").make_twin("twist")
    name = twin.compiled.param_names[0]
    before = twin.sim.param(name)
    for bad, why in (({name: float("nan")}, "not finite"), ({"no_such_parameter": 1.0}, "no run-time parameter")):
        with pytest.raises(CommandError, match=why):
            twin.set_params(bad)
    assert twin.sim.param(name) == before
    assert "i1" in twin.columns and twin.column("i1") == 0.0


def test_the_builtin_run_keeps_the_file_s_values_and_a_twist_run_starts_standing(tmp_path):
    """A file whose commanded parameter has a value (f: 0.5): the builtin run (`up` without
    --reference, `demo`) is the file's run, as `simulate` gives it; it ran with f = 0 (every
    reset applied a zero twist), the model standing where the file drives it. Commanded by
    cmd_vel, the run starts with f = 0 until a command comes. A reset keeps each."""
    from bondsim_ros.bondgraph.codegen import compile_model
    from bondsim_ros.bondgraph.simulation import Simulation
    from bondsim_ros.bondgraph.yamlmodel import load_model

    shutil.copy(DATA / "slider.xml", tmp_path / "slider.xml")
    path = tmp_path / "m.yaml"
    path.write_text(MODEL.replace("f: 0.0", "f: 0.5") + "commands:\n  twist: {vx: f}\n")
    robot = load_robot(str(path))
    compiled = compile_model(load_model(path))
    times = np.arange(0.25, 6.0001, 0.25)
    last = {}
    for command, f in (("builtin", 0.5), ("twist", 0.0)):
        twin = robot.make_twin(command, TWIN_OPTIONS)
        for _ in range(2):  # the first run, then after a reset
            ref = Simulation(compiled, TWIN_OPTIONS, params={"f": f})
            got, want = [], []
            for t in times:
                got.append(twin.step_to(t).joint_map()["slide"])
                y, yp = ref.step_to(t)
                want.append(ref.outputs_at(t, y, yp)[ref.compiled.output_names.index("spring.q")])
            np.testing.assert_allclose(got, want, atol=1e-9, err_msg=command)
            twin.reset()
        assert twin.twist[0] == f
        last[command] = got[-1]
    # the file's force holds the slider near f/k = 0.125; unforced it swings about 0
    assert last["builtin"] - last["twist"] > 0.05, last
