"""dynamics_node's parameter checks that the table cannot state of one value, without rclpy: bad
topic names, waypoints that are not triples and a missing robot_config, all named at once."""
import pytest

from bondsim_ros.ros.dynamics_params import PARAMS, live_values, validate


def _defaults(**changes):
    return {**{k: spec.default for k, spec in PARAMS.items()}, **changes}


def _resolve(name):
    if " " in name:
        raise ValueError("contains a space")
    return "/" + name


def test_the_defaults_are_valid():
    validate(_defaults(), _resolve)


def test_every_bad_parameter_is_named_in_one_error(tmp_path):
    p = _defaults(cmd_vel_topic="cmd vel", reference="waypoints", waypoints=[0.0, 1.0],
                  robot_config=str(tmp_path / "missing.yaml"))
    with pytest.raises(ValueError) as info:
        validate(p, _resolve)
    text = str(info.value)
    assert text.startswith("invalid dynamics_node parameters: cmd_vel_topic: 'cmd vel' is not a valid topic name "
                           "(contains a space)")
    assert "waypoints: give x, y, phi triples" in text and "robot_config: no such file" in text
    validate(_defaults(reference="waypoints", waypoints=[0.0, 1.0, 0.5]), _resolve)
    validate(_defaults(waypoints=[0.0, 1.0]), _resolve)  # only read with reference waypoints


def test_live_values_are_the_live_rows():
    live = live_values(_defaults())
    assert live == {"publish_rate": 33.0, "real_time_factor": 1.0, "cmd_vel_timeout": 0.5,
                    "max_linear_velocity": 1.0, "max_angular_velocity": 3.0}
