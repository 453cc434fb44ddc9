"""The commands: section of a YAML model: /cmd_vel sets the model's own run-time parameters at
the simulated instant it is applied; errors name the file and line."""
import shutil
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.robots import RobotError, load_robot

DATA = Path(__file__).resolve().parent / "data" / "live"
MODEL = """model: pushed_slider
parameters: {k: 4.0, f: 0.0}
components:
  v: {type: EffortJunction, output: true}
  F: {type: Se, effort: f}
  mass: {type: I, inertia: 1.0}
  spring: {type: C, effort: "k*q", q0: 0.1}
  d: {type: R, resistance: 0.4}
bonds: [[F, v], [v, mass], [v, spring], [v, d]]
mechanism:
  file: slider.xml
  joints:
    slide: spring.q
"""


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
    twin = robot.make_twin("twist", hmax=0.02)
    ref = Simulation(compile_model(load_model(path)), rtol=1e-6, atol=1e-8, hmax=0.02)
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
