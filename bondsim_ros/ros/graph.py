"""The node graph of the launch files, started in one process without ``launch``.

``ros2 launch bondsim_ros robotino_rviz.launch.py`` needs a ROS install; ``bondsim-ros up`` and
``bondsim-ros demo`` start the same dynamics and probe nodes (and optionally the bridge) with
an rclpy executor, reading the same config/*.yaml parameter files.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml


class ParamFile:
    """A ROS 2 parameter file as rcl reads it: sections in file order, each a node name pattern
    (nested namespaces flattened, ``/`` put in front) and its ``ros__parameters``. A node takes
    every section whose pattern matches its fully qualified name, a later section's value over
    an earlier one's; in a pattern ``*`` stands for one name part and ``**`` for any number
    (``/**``: every node, ``/**/dynamics_node``: that node in any namespace), as rclpy's nodes
    match them."""

    def __init__(self, sections: list):
        self.sections = sections  # [(pattern parts, {param: value})]

    def node(self, name: str, namespace: str = "", known=None) -> dict:
        """The parameters of node ``name`` in ``namespace``. ``known``: the parameters the node
        declares (or a function giving them, called only where a section needs them); a section
        for any node (``/**``, ``/ns/*``) gives it those only (the others are other nodes';
        rclpy ignores them there too), while a section naming the node (``/**/dynamics_node``
        too) keeps every entry, so that a misspelt one is refused."""
        fqn = [part for part in f"{namespace.strip('/')}/{name}".split("/") if part]
        out = {}
        for pattern, params in self.sections:
            if not _matches(pattern, fqn):
                continue
            if known is not None and (not pattern or "*" in pattern[-1]):
                known = known() if callable(known) else known
                params = {k: v for k, v in params.items() if k in known}
            out.update(params)
        return out

    def names(self) -> list:
        return ["/" + "/".join(pattern) for pattern, _ in self.sections]


def _matches(pattern: list, fqn: list) -> bool:
    if not pattern:
        return not fqn
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_matches(rest, fqn[i:]) for i in range(len(fqn) + 1))
    return bool(fqn) and (head == "*" or head == fqn[0]) and _matches(rest, fqn[1:])


def load_ros_params(path) -> ParamFile:
    """The sections of a ROS 2 parameter file (``/ns/node: ros__parameters: ...``, or nested
    ``ns: node: ros__parameters: ...``); ValueError naming a section without parameters."""
    data = yaml.safe_load(Path(path).read_text()) or {}
    sections = []

    def walk(prefix: list, body, key: str):
        if not isinstance(body, dict):
            raise ValueError(f"{path}: section {key!r} has no ros__parameters")
        for sub, value in body.items():
            if sub == "ros__parameters":
                sections.append((prefix, dict(value or {})))
            else:
                walk(prefix + [p for p in str(sub).split("/") if p], value, f"{key}/{sub}")
        if not body:
            raise ValueError(f"{path}: section {key!r} has no ros__parameters")

    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a ROS parameter file (node: ros__parameters: ...)")
    for node, body in data.items():
        walk([p for p in str(node).split("/") if p], body, str(node))
    return ParamFile(sections)


# sensor_node's parameters that place the sensors on a robot (the others say what they are)
SENSOR_LAYOUT = ("laser_pose", "ir_radius", "ir_frame_z", "footprint_radius")


def robot_sensor_layout(model: str) -> dict | None:
    """sensor_node's parameters for the sensors of the robot ``model`` runs (its Robot's
    ``sensors`` file, the sensor_node section), or None where it declares none: a YAML model, a
    robot without one, on which sensor_node's defaults would place the Robotino's."""
    from bondsim_ros.robots import available, load_robot

    if model not in available():
        return None
    robot = load_robot(model)
    if robot.sensors is None:
        return None
    return load_ros_params(robot.sensors).node("sensor_node")


@dataclass
class Graph:
    executor: object
    nodes: dict = field(default_factory=dict)
    context: object = None

    def spin_for(self, seconds: float, on_tick=None, tick=0.2) -> None:
        end = time.monotonic() + seconds
        next_tick = time.monotonic()
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=min(0.05, max(0.0, end - time.monotonic())))
            if on_tick and time.monotonic() >= next_tick:
                on_tick()
                next_tick += tick

    def spin_until(self, predicate, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            self.executor.spin_once(timeout_sec=0.02)
        return predicate()

    def shutdown(self) -> None:
        for node in self.nodes.values():
            self.executor.remove_node(node)
            node.destroy_node()
        self.executor.shutdown()


def make_executor(context=None):
    """rclpy's EventsExecutor where available (several times less overhead per callback than
    SingleThreadedExecutor: 10 vs 5 robots at 33 Hz within 2 ms p99 jitter here), else the
    single-threaded one."""
    kw = {"context": context} if context is not None else {}
    try:
        from rclpy.experimental import EventsExecutor

        return EventsExecutor(**kw)
    except ImportError:
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor(**kw)


class FleetClock:
    """One timer for many twins. Each tick: every robot's /joint_states first, then every
    robot's odometry with all odom -> base transforms in one /tf message, then every robot
    computes its next frame. The joint states so never queue behind other robots' odometry or
    solver work, and /tf costs one publication per frame instead of one per robot.

    It keeps what says whether the fleet held real time: the wall time of every tick (all the
    robots' work of one frame) and the tick start times, from which the frames the timer never
    ran (the process held up longer than a period) are counted."""

    def __init__(self, node, twins, rate):
        from .messages import tf_message

        self.twins = twins
        self.period = 1.0 / rate
        self.TFMessage = tf_message()
        self.pub_tf = node.create_publisher(self.TFMessage, "/tf", 100)
        self.timer = node.create_timer(self.period, self._tick)
        self.tick_seconds: list = []  # wall time of each tick's work
        self.tick_starts: list = []  # time.monotonic() at each tick's start

    def _tick(self):
        tic = time.monotonic()
        for t in self.twins:
            t.start_clock()
        for t in self.twins:
            t.publish_pending_joints()
        tf_batch = []
        for t in self.twins:
            t.publish_pending_rest(tf_batch)
        if tf_batch:
            self.pub_tf.publish(self.TFMessage(transforms=tf_batch))
        for t in self.twins:
            t.compute_next()
            t.warn_other_clocks()  # (robot0's: the fleet's one /clock)
        self.tick_starts.append(tic)
        self.tick_seconds.append(time.monotonic() - tic)

    def reset_stats(self) -> None:
        """Forget the ticks so far (a warm-up) and the twins' overrun counts."""
        self.tick_seconds.clear()
        self.tick_starts.clear()
        for t in self.twins:
            t.frame_clock.overruns, t.frame_clock.max_lag = 0, 0.0

    def stats(self) -> dict:
        """Ticks, the frames the timer skipped, tick wall time p50/p99/max [s], and the twins'
        overruns (a frame whose robot was computed after its instant had passed)."""
        import numpy as np

        ticks = np.asarray(self.tick_seconds)
        starts = np.asarray(self.tick_starts)
        skipped = (int(max(0, round((starts[-1] - starts[0]) / self.period) - (len(starts) - 1)))
                   if len(starts) > 1 else 0)
        pct = (lambda q: float(np.percentile(ticks, q))) if len(ticks) else (lambda q: float("nan"))
        return {"robots": len(self.twins), "ticks": int(len(ticks)), "skipped": skipped,
                "tick_p50_s": pct(50), "tick_p99_s": pct(99),
                "tick_max_s": float(ticks.max()) if len(ticks) else float("nan"),
                "overruns": int(sum(t.frame_clock.overruns for t in self.twins)), "period_s": self.period}


def start_fleet(n: int, dynamics: dict | None = None, context=None, first: int = 0,
                clock_name: str = "fleet_clock") -> Graph:
    """``n`` twins in namespaces robot{first}..robot{first+n-1}, driven by one FleetClock (node
    ``clock_name``: each process of a fleet spread over processes has its own). Each robot's frame
    ids carry its namespace (``frame_prefix`` robotK/, as the Robotino driver's launch sets
    tf_prefix): the robots share /tf, where equal frame names would be one robot to tf2. A
    ``frame_prefix`` in ``dynamics`` goes before it (the parameter file's empty one: nothing)."""
    import rclpy

    from .dynamics_node import DynamicsNode

    kw = {"context": context} if context is not None else {}
    executor = make_executor(context)
    nodes = {}
    for k in range(first, first + n):
        overrides = dict(dynamics or {})
        overrides["frame_prefix"] = f"{overrides.get('frame_prefix') or ''}robot{k}/"
        # one /clock for the fleet, robot0's: a node on simulated time takes every Clock message
        # as the time, and twins whose clocks started milliseconds apart made it jump back and forth
        overrides["publish_clock"] = bool(overrides.get("publish_clock", True)) and k == 0
        node = DynamicsNode(overrides=overrides, own_timer=False, namespace=f"robot{k}", **kw)
        nodes[f"robot{k}"] = node
        executor.add_node(node)
    clock_node = rclpy.create_node(clock_name, **kw)
    rate = next(iter(nodes.values())).p["publish_rate"] if nodes else 33.0
    clock_node.fleet = FleetClock(clock_node, list(nodes.values()), rate)
    nodes["fleet_clock"] = clock_node
    executor.add_node(clock_node)
    return Graph(executor=executor, nodes=nodes, context=context)


def start_graph(dynamics: dict | None = None, probe: dict | None = None, bridge: dict | None = None,
                namespace: str = "", context=None, with_probe: bool = True,
                state_publisher: dict | None = None, sensors: dict | None = None,
                dynamics_name: str = "dynamics_node") -> Graph:
    """Create the nodes of robotino_rviz.launch.py (rclpy must be initialised) on one executor:
    dynamics_node, probe_node, and state_publisher in place of robot_state_publisher (pass
    ``state_publisher=None`` where a real robot_state_publisher runs); twin_bridge if
    ``bridge`` parameters are given, in the root namespace as twin.launch.py runs it (the
    robot's and the twin's topics it names are absolute); sensor_node and bumper_stop if ``sensors`` is given
    ({"sensor_node": {...}, "bumper_stop": {...}}: their parameters; the robot must have a
    planar base)."""
    from rclpy.validate_namespace import validate_namespace

    from .dynamics_node import DynamicsNode
    from .probe_node import ProbeNode

    if namespace:
        # checked before any node exists: rcl refuses a bad one half-way through creating the
        # node and rclpy then warns "Failed to fini rosout publisher" on top of the error
        validate_namespace(namespace if namespace.startswith("/") else "/" + namespace)
    kw = {"namespace": namespace} if namespace else {}
    if context is not None:
        kw["context"] = context
    executor = make_executor(context)
    # dynamics_name: an interface profile's node name (e.g. the driver's robotino_node)
    nodes = {"dynamics_node": DynamicsNode(name=dynamics_name, overrides=dynamics or {}, **kw)}
    robot = nodes["dynamics_node"].robot
    if state_publisher is not None:
        from .state_publisher import StatePublisher, robot_description_params

        state_publisher = dict(state_publisher)
        if not state_publisher.get("urdf") and not state_publisher.get("robot_description"):
            state_publisher.update(robot_description_params(robot))
        nodes["state_publisher"] = StatePublisher(overrides=state_publisher, **kw)
    if with_probe:
        probe = dict(probe or {})
        if not probe.get("mechanism"):  # the probes of the robot that runs
            probe["mechanism"] = str(nodes["dynamics_node"].twin.mechanism)
        nodes["probe_node"] = ProbeNode(overrides=probe, **kw)
    if sensors is not None:
        from .bumper_stop import BumperStop
        from .sensor_node import SensorNode

        if nodes["dynamics_node"].twin.state().pose is None:
            for node in nodes.values():
                node.destroy_node()
            raise ValueError(f"--sensors: model {nodes['dynamics_node'].p['model']!r} has no planar base: the "
                             f"sensors ride on a mobile base's odometry")
        sensor_params = dict(sensors.get("sensor_node", {}))
        sensor_params.setdefault("frame_prefix", nodes["dynamics_node"].p["frame_prefix"])
        nodes["sensor_node"] = SensorNode(overrides=sensor_params, **kw)
        if "bumper_stop" in sensors:  # absent: the dynamics node's interface profile stops at a contact
            nodes["bumper_stop"] = BumperStop(overrides=sensors["bumper_stop"], **kw)
    if bridge is not None:
        from .twin_bridge import TwinBridge

        nodes["twin_bridge"] = TwinBridge(overrides=bridge, **{k: v for k, v in kw.items() if k != "namespace"})
    for node in nodes.values():
        executor.add_node(node)
    return Graph(executor=executor, nodes=nodes, context=context)
