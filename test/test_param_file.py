"""`bondsim-ros up --params` reads a ROS 2 parameter file as a real node started with
--params-file gets it: the oracle is rcl's own parse and rclpy's matching of sections to the
node's fully qualified name (rcl_params.py), not a copy of the rules."""
from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from bondsim_ros.cli import main  # noqa: E402
from bondsim_ros.ros.graph import load_ros_params  # noqa: E402
from rcl_params import rcl_parameters  # noqa: E402

# wildcards of both kinds, a nested namespace, a section naming one node exactly, and values
# given by several sections (the later one wins)
FILE = """\
/twin/dyn:
  ros__parameters:
    p: 3.0
    exact: 1
/**/dyn:
  ros__parameters:
    p: 1.0
    q: 1.0
/**:
  ros__parameters:
    p: 2.0
    r: 2.0
/twin/*:
  ros__parameters:
    r: 4.0
    one_level: true
twin:
  dyn:
    ros__parameters:
      nested: "yes"
/*/*:
  ros__parameters:
    two_parts: 7
/a/**:
  ros__parameters:
    under_a: 5
/**/b/dyn:
  ros__parameters:
    b_then_dyn: 6
dyn:
  ros__parameters:
    root_only: 8
"""


@pytest.mark.parametrize("name, namespace", [("dyn", ""), ("dyn", "twin"), ("other", "twin"), ("dyn", "a/b"),
                                             ("dyn", "/a"), ("dyn", "x/y/z"), ("other", "")])
def test_a_node_gets_what_rclpy_gives_it(tmp_path, name, namespace):
    f = tmp_path / "params.yaml"
    f.write_text(FILE)
    values, unset = rcl_parameters(f, name, namespace)
    assert not unset
    assert load_ros_params(f).node(name, namespace) == values


def _up(capfd, *argv):
    code = main(["up", "--duration", "0.3", *argv])
    return code, capfd.readouterr().err


@pytest.mark.parametrize("section, namespace, applies", [
    ("/**", "", True),  # was ignored: sections were keyed by the name's last part
    ("/**/dynamics_node", "robot1", True),
    ("robot1:\n  dynamics_node", "robot1", True),  # nested namespaces: was refused
    ("/robot1/dynamics_node", "", False),  # another namespace's node: was applied
    ("/robot2/dynamics_node", "robot1", False),
])
def test_up_applies_the_sections_that_match_each_node(tmp_path, capfd, section, namespace, applies):
    f = tmp_path / "params.yaml"
    indent = "  " * section.count("\n")
    f.write_text(f"{section}:\n{indent}  ros__parameters:\n{indent}    publish_rate: -5.0\n")
    argv = ["--params", str(f)] + (["--namespace", namespace] if namespace else [])
    code, err = _up(capfd, *argv)
    if applies:
        assert code == 2 and "publish_rate: must be finite, in [0.1, 1000], got -5.0" in err, err
    else:
        assert code == 0 and "publish_rate" not in err, err


def test_a_wildcard_section_gives_each_node_the_parameters_it_declares(tmp_path, capfd):
    """As rclpy: /** holds parameters of several nodes; each takes its own. A section naming
    one node still refuses a parameter that node does not have (a misspelt name)."""
    f = tmp_path / "params.yaml"
    f.write_text("/**:\n  ros__parameters:\n    use_tf2: 'false'\n    publish_rate: 20.0\n")
    code, err = _up(capfd, "--params", str(f))
    assert code == 0, err
    f.write_text("/**/dynamics_node:\n  ros__parameters:\n    use_tf2: 'false'\n")
    code, err = _up(capfd, "--params", str(f))
    assert code == 2 and "unknown parameter 'use_tf2'" in err, err
