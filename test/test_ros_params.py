"""The nodes' parameters over real rclpy services: every parameter has a descriptor (type,
description, range, read-only), SetParameters refuses a value that is not allowed with a reason
and the node runs on with the old value, an allowed change of a live parameter changes what the
node does (and is reported on /diagnostics), and the parameter files list every parameter of
the tables with allowed values."""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import Twist  # noqa: E402
from rcl_interfaces.msg import ParameterType  # noqa: E402
from rcl_interfaces.srv import DescribeParameters, GetParameters, SetParameters  # noqa: E402
from rclpy.parameter import Parameter, parameter_value_to_python  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from bondsim_ros.ros import dynamics_node, probe_node, sensor_node, state_publisher, twin_bridge  # noqa: E402
from live_graph import live_graph  # noqa: E402
from rcl_params import rcl_parameters  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TABLES = {"dynamics_node": dynamics_node.PARAMS, "probe_node": probe_node.PARAMS,
          "state_publisher": state_publisher.PARAMS, "twin_bridge": twin_bridge.PARAMS}
FILES = {"dynamics_node": "dynamics.yaml", "probe_node": "dynamics.yaml", "state_publisher": "dynamics.yaml",
         "twin_bridge": "robotino_bridge.yaml"}
NAN, INF = float("nan"), float("inf")


# -- the tables and the parameter files --------------------------------------------------------
@pytest.mark.parametrize("node", list(TABLES))
def test_parameter_file_lists_every_parameter_with_an_allowed_value(node):
    """As rcl itself parses the file for the node (types are rcl's: 3 is an integer)."""
    from bondsim_ros.ros._env import check_value

    values, unset = rcl_parameters(ROOT / "config" / FILES[node], node)
    table = TABLES[node]
    assert not unset, f"config/{FILES[node]}: {node}: unset {sorted(unset)}"
    assert set(values) == set(table), (f"config/{FILES[node]}: {node}: missing {sorted(set(table) - set(values))}, "
                                       f"unknown {sorted(set(values) - set(table))}")
    bad = [e for k, v in values.items() if (e := check_value(k, table[k], v))]
    assert not bad, f"config/{FILES[node]}: {node}: " + "; ".join(bad)


@pytest.mark.parametrize("node", list(TABLES))
def test_parameter_file_gives_every_parameter_its_default_from_the_table(node):
    """The table is the one source of the defaults: the file repeats them, nothing else."""
    values, _ = rcl_parameters(ROOT / "config" / FILES[node], node)
    table = TABLES[node]
    differ = [f"{k}: {values[k]!r} in the file, {spec.default!r} in the table" for k, spec in table.items()
              if k in values and not same(values[k], spec.default)]
    assert not differ, f"config/{FILES[node]}: {node}: " + "; ".join(differ)


def test_the_node_solver_defaults_are_the_twins():
    from bondsim_ros.twin.protocol import TWIN_OPTIONS

    table = dynamics_node.PARAMS
    assert (table["rtol"].default, table["hmax"].default) == (TWIN_OPTIONS.rtol, TWIN_OPTIONS.hmax)


@pytest.mark.parametrize("node", list(TABLES))
def test_every_default_is_allowed_by_its_own_row(node):
    from bondsim_ros.ros._env import check_value

    bad = [e for k, spec in TABLES[node].items() if (e := check_value(k, spec, spec.default))]
    assert not bad, bad


@pytest.mark.parametrize("value, says", [
    (NAN, "publish_rate: must be finite, in [0.1, 1000], got nan"),
    (-5.0, "publish_rate: must be finite, in [0.1, 1000], got -5.0"),
    (True, "publish_rate: expected a floating-point number (write 3.0, not 3), got True"),
    ("fast", "publish_rate: expected a floating-point number"),
])
def test_bad_start_value_stops_the_node_naming_it(value, says):
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(ValueError, match="invalid dynamics_node parameters") as info:
            dynamics_node.DynamicsNode(overrides={"publish_rate": value, "reference": "teleport"}, context=context)
        assert says in str(info.value)
        assert "reference: rose | builtin | cmd_vel | waypoints | joint_trajectory, got 'teleport'" in str(info.value)
    finally:
        rclpy.try_shutdown(context=context)


@pytest.mark.parametrize("node_class, overrides, says", [
    (probe_node.ProbeNode, {"use_tf2": "maybe"}, "use_tf2: auto | true | false, got 'maybe'"),
    (twin_bridge.TwinBridge, {"robot_wheel_sign": 0.0}, "robot_wheel_sign: must be finite, in [-1000, 1000], not 0"),
    # a command topic on one of the node's own: rcl refused another type with a traceback, and
    # on the same type the node read its own joint states as joint commands
    (dynamics_node.DynamicsNode, {"reference": "cmd_vel", "cmd_vel_type": "twist", "cmd_vel_topic": "odom"},
     "invalid dynamics_node parameters: cmd_vel_topic: odom is the node's own odom topic"),
    (dynamics_node.DynamicsNode, {"model": "arm3dof", "reference": "joint_trajectory",
                                  "joint_commands_topic": "/joint_states"},
     "joint_commands_topic: /joint_states is the node's own joint_states topic"),
    (dynamics_node.DynamicsNode, {"model": "arm3dof", "reference": "joint_trajectory",
                                  "joint_trajectory_topic": "cmd", "joint_commands_topic": "cmd"},
     "joint_commands_topic: cmd is also its joint_trajectory_topic"),
    # file parameters: the error names the parameter, not only the file
    (dynamics_node.DynamicsNode, {"mechanism": "/nonexistent.xml"},
     "invalid dynamics_node parameters: mechanism: /nonexistent.xml: cannot read file"),
    (probe_node.ProbeNode, {"mechanism": "/nonexistent.xml"},
     "invalid probe_node parameters: mechanism: /nonexistent.xml: cannot read file"),
    (state_publisher.StatePublisher, {"urdf": "/"}, "urdf: /: cannot read: Is a directory"),
    (sensor_node.SensorNode, {"map": "/nonexistent.yaml"},
     "invalid sensor_node parameters: map: /nonexistent.yaml: cannot read the map file"),
    (sensor_node.SensorNode, {"seed": -1}, "invalid sensor_node parameters: seed: must be >= 0, got -1"),
    # billions of beams: the first scan ran out of memory
    (sensor_node.SensorNode, {"angle_increment": 1e-9}, "laser scanner: angle_increment 1e-09 makes 4.71e+09 beams"),
])
def test_bad_start_value_of_the_other_nodes(node_class, overrides, says):
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(ValueError) as info:
            node_class(overrides=overrides, context=context)
        assert says in str(info.value)
    finally:
        rclpy.try_shutdown(context=context)


# -- the running graph -------------------------------------------------------------------------
class Client:
    """Parameter service calls from the listener node, spinning the graph while waiting."""

    def __init__(self, graph, node):
        self.graph, self.node, self.clients = graph, node, {}

    def call(self, srv, target, request):
        key = (srv, target)
        if key not in self.clients:
            name = {SetParameters: "set_parameters", GetParameters: "get_parameters",
                    DescribeParameters: "describe_parameters"}[srv]
            self.clients[key] = self.node.create_client(srv, f"/{target}/{name}")
        client = self.clients[key]
        end = time.monotonic() + 20.0
        while not client.service_is_ready() and time.monotonic() < end:
            self.graph.executor.spin_once(timeout_sec=0.02)
        assert client.service_is_ready(), f"/{target}/{srv.__name__} not available"
        future = client.call_async(request)
        while not future.done() and time.monotonic() < end:
            self.graph.executor.spin_once(timeout_sec=0.02)
        assert future.done(), f"/{target}: {srv.__name__} not answered"
        return future.result()

    def set(self, target, *pairs):
        req = SetParameters.Request(parameters=[Parameter(k, value=v).to_parameter_msg() for k, v in pairs])
        return self.call(SetParameters, target, req).results

    def get(self, target, *names):
        res = self.call(GetParameters, target, GetParameters.Request(names=list(names)))
        return [parameter_value_to_python(v) for v in res.values]

    def describe(self, target, *names):
        return self.call(DescribeParameters, target, DescribeParameters.Request(names=list(names))).descriptors


def spin(graph, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        graph.executor.spin_once(timeout_sec=0.005)


BAD = {
    "dynamics_node": [("publish_rate", v) for v in (NAN, INF, -INF, -1e300, 0.0, 1e6, "fast", True, 33)]
    + [("real_time_factor", v) for v in (NAN, INF, -1e300, 0.0, "x", False)]
    + [("cmd_vel_timeout", NAN), ("cmd_vel_timeout", -1.0), ("max_linear_velocity", -1e300),
       ("max_linear_velocity", NAN), ("max_angular_velocity", INF), ("max_angular_velocity", 0.0),
       ("reference", "teleport"), ("reference", "cmd_vel"), ("model", "dc_motor"), ("rtol", NAN),
       ("hmax", 1.0), ("waypoints", [NAN, 0.0, 0.0]), ("publish_clock", False), ("probes", ["nope"]),
       ("use_sim_time", True)],  # read at start: taken live, its stamps left /clock by 1.8e9 s
    "probe_node": [("use_tf2", 42), ("use_tf2", "bogus"), ("use_tf2", True), ("frame_prefix", "x/"),
                   ("mechanism", "/no/such.xml")],
    "state_publisher": [("frame_prefix", "x/"), ("urdf", 1.5), ("robot_description", "<robot")],
    "twin_bridge": [("robot_wheel_sign", 0.0), ("robot_wheel_sign", NAN), ("robot_cmd_vel", "bad topic"),
                    ("twin_wheel_joints", ["a"])],
}


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return list(a) == list(b) if isinstance(a, (list, tuple)) or hasattr(a, "tolist") else a == b


def test_bad_values_are_refused_with_a_reason_and_the_nodes_run_on():
    with live_graph({"reference": "cmd_vel", "cmd_vel_type": "twist"}, "param_client", state_publisher={},
                    bridge={}) as (graph, node):
        client = Client(graph, node)
        joints = []
        node.create_subscription(JointState, "/joint_states", lambda m: joints.append(time.monotonic()), 100)
        spin(graph, 0.5)
        refused = []
        for target, pairs in BAD.items():
            names = sorted({k for k, _ in pairs})
            before = dict(zip(names, client.get(target, *names)))
            results = client.set(target, *pairs)
            assert len(results) == len(pairs)
            for (name, value), res in zip(pairs, results):
                assert not res.successful, f"{target}: {name} = {value!r} was accepted"
                assert res.reason, f"{target}: {name} = {value!r} refused without a reason"
                refused.append((target, name, value, res.reason))
            after = dict(zip(names, client.get(target, *names)))
            for name in names:
                assert same(after[name], before[name]), f"{target}: {name} is {after[name]!r} after refused sets"
                local = graph.nodes[target].get_parameter(name).value
                assert same(local, before[name])
        dyn = graph.nodes["dynamics_node"]
        assert not dyn.get_clock().ros_time_is_active  # rclpy's own callback did not take it either
        assert dyn.period == pytest.approx(1 / 33.0) and dyn.p["real_time_factor"] == 1.0
        assert dyn.limits.max_linear == 1.0 and dyn.p["cmd_vel_timeout"] == 0.5
        n = len(joints)
        spin(graph, 1.0)
        assert len(joints) > n + 10, "the twin stopped publishing after the refused sets"
    reasons = {(t, k, repr(v)): r for t, k, v, r in refused}
    # what the user reads: the parameter and the allowed values (or why it cannot change)
    assert "publish_rate" in reasons[("dynamics_node", "publish_rate", "nan")]
    assert "1000" in reasons[("dynamics_node", "publish_rate", "nan")]
    assert "publish_rate" in reasons[("dynamics_node", "publish_rate", "-1e+300")]
    assert "Wrong parameter type" in reasons[("dynamics_node", "publish_rate", "'fast'")]
    assert "read-only" in reasons[("dynamics_node", "reference", "'cmd_vel'")]
    assert "read-only" in reasons[("probe_node", "use_tf2", "'bogus'")]
    assert "use_sim_time: applies at start only" in reasons[("dynamics_node", "use_sim_time", "True")]
    print(f"{len(refused)} bad sets refused")


def test_descriptors_say_type_range_description_and_read_only():
    with live_graph({}, "param_client", state_publisher={}, bridge={}) as (graph, node):
        client = Client(graph, node)
        for target, table in TABLES.items():
            names = list(table)
            for name, d in zip(names, client.describe(target, *names)):
                spec = table[name]
                assert d.name == name and d.description == spec.description
                assert d.read_only == (not spec.live), name
                assert d.type != ParameterType.PARAMETER_NOT_SET and not d.dynamic_typing
                if isinstance(spec.default, float) and spec.low is not None:
                    r = d.floating_point_range[0]
                    assert (r.from_value, r.to_value, r.step) == (spec.low, spec.high, 0.0), name
                if spec.choices:
                    assert d.additional_constraints == " | ".join(spec.choices)


def test_publish_rate_change_changes_the_joint_state_rate_and_is_reported():
    with live_graph({"publish_rate": 33.0}, "param_client", with_probe=False) as (graph, node):
        client = Client(graph, node)
        got, diag = [], []
        node.create_subscription(JointState, "/joint_states", lambda m: got.append(
            (time.monotonic(), m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec)), 200)
        node.create_subscription(DiagnosticArray, "/diagnostics", diag.append, 50)
        spin(graph, 1.0)
        assert client.set("dynamics_node", ("publish_rate", 10.0))[0].successful
        assert client.get("dynamics_node", "publish_rate") == [10.0]
        spin(graph, 0.3)
        got.clear()
        spin(graph, 3.0)
        wall = np.array([w for w, _ in got])
        stamps = np.array([s for _, s in got])
        assert client.set("dynamics_node", ("publish_rate", 33.0))[0].successful
        got.clear()
        spin(graph, 2.0)
        fast = len(got)
    # 10 Hz over 3 s: 30 frames; a loaded machine drops some, never adds any
    print(f"{len(wall)} joint states in 3 s at 10 Hz, median stamp step {np.median(np.diff(stamps)) * 1e3:.1f} ms; "
          f"{fast} in 2 s back at 33 Hz")
    assert 12 <= len(wall) <= 34
    assert np.median(np.diff(stamps)) == pytest.approx(0.1, rel=0.05)  # stamps: one simulated frame apart
    assert fast > 30  # 66 nominal; 10 Hz would give 20
    texts = [s.message for a in diag for s in a.status if s.name.endswith("/parameters")]
    assert any("publish_rate 33 -> 10" in t for t in texts), texts


def test_velocity_limit_change_clamps_the_command_in_force_and_the_next():
    with live_graph({"reference": "cmd_vel", "cmd_vel_type": "twist", "cmd_vel_timeout": 5.0}, "param_client",
                    with_probe=False) as (graph, node):
        client = Client(graph, node)
        twin = graph.nodes["dynamics_node"].twin
        pub = node.create_publisher(Twist, "/cmd_vel", 10)

        def command(vx):
            m = Twist()
            m.linear.x = vx
            return m

        def until(pred, timeout, vx=None):
            end = time.monotonic() + timeout
            while time.monotonic() < end and not pred():
                if vx is not None:
                    pub.publish(command(vx))
                spin(graph, 0.05)
            return pred()

        assert until(lambda: twin.twist == pytest.approx((0.8, 0.0, 0.0)), 10.0, vx=0.8)
        assert client.set("dynamics_node", ("max_linear_velocity", 0.3))[0].successful
        assert until(lambda: twin.twist == pytest.approx((0.3, 0.0, 0.0)), 3.0), twin.twist  # in force
        pub.publish(command(0.9))
        assert until(lambda: twin.twist == pytest.approx((0.3, 0.0, 0.0)), 3.0)
        # cmd_vel_timeout 5 s: the command is still in force after 1.5 s (the default 0.5 s would stop it)
        spin(graph, 1.5)
        assert twin.twist == pytest.approx((0.3, 0.0, 0.0))
        assert client.set("dynamics_node", ("cmd_vel_timeout", 0.2))[0].successful
        assert until(lambda: twin.twist == pytest.approx((0.0, 0.0, 0.0)), 3.0), twin.twist


def test_real_time_factor_change_changes_the_pace_and_stamps_keep_increasing():
    with live_graph({"real_time_factor": 1.0}, "param_client", with_probe=False) as (graph, node):
        client = Client(graph, node)
        dyn = graph.nodes["dynamics_node"]
        stamps = []
        node.create_subscription(JointState, "/joint_states", lambda m: stamps.append(
            m.header.stamp.sec * 10**9 + m.header.stamp.nanosec), 200)
        spin(graph, 1.0)
        assert client.set("dynamics_node", ("real_time_factor", 2.0))[0].successful
        spin(graph, 0.3)
        t0, w0 = dyn.twin.t, time.monotonic()
        spin(graph, 2.0)
        pace = (dyn.twin.t - t0) / (time.monotonic() - w0)
    print(f"simulated {pace:.2f} s per wall-clock second at real_time_factor 2")
    assert 1.5 < pace < 2.3
    assert np.all(np.diff(stamps) > 0)


def test_a_fleet_twin_refuses_its_own_rate_but_takes_the_rest(monkeypatch):
    """Twins of a fleet (`bondsim-ros fleet`) run on one shared frame clock: a rate of one's own
    would desynchronise its frames from the clock, so it is refused by name; the other live
    parameters apply."""
    from bondsim_ros.ros.graph import start_fleet

    context = rclpy.Context()
    rclpy.init(context=context)
    graph = start_fleet(1, {}, context=context)
    try:
        node = rclpy.create_node("param_client", context=context)
        graph.executor.add_node(node)
        client = Client(graph, node)
        res = client.set("robot0/dynamics_node", ("publish_rate", 10.0), ("max_angular_velocity", 1.0))
        assert not res[0].successful and "shared frame clock" in res[0].reason
        assert res[1].successful
        assert client.get("robot0/dynamics_node", "publish_rate", "max_angular_velocity") == [33.0, 1.0]
        assert graph.nodes["robot0"].limits.max_angular == 1.0
    finally:
        graph.shutdown()
        rclpy.try_shutdown(context=context)
