"""``bondsim-ros up``, ``demo`` and ``fleet``: the ROS 2 graph without ``launch``."""
from __future__ import annotations

from bondsim_ros.cliargs import integer, number

import argparse
import sys
from pathlib import Path

from bondsim_ros.robots import DEFAULT_ROBOT

FOXGLOVE_ADDRESS_HELP = ("address --foxglove listens on (default 127.0.0.1: this computer only; 0.0.0.0: every "
                         "network interface, where anyone then reads the robot's data and mesh files: there is "
                         "no authentication)")


def register(sub) -> None:
    up = sub.add_parser("up", help="start dynamics_node and probe_node in one process (no `launch` needed)")
    up.add_argument("--params", metavar="FILE", help="ROS parameter file (default: config/dynamics.yaml)")
    up.add_argument("--model", default=None, metavar="NAME|FILE.yaml",
                    help="robot to run: a registered robot (robotino, dualarm, arm3dof, omni5dpo, "
                         "slider_crank_lagrange, ...) or a YAML model file with a mechanism: section")
    up.add_argument("--reference", choices=["rose", "builtin", "cmd_vel", "waypoints", "joint_trajectory"],
                    help="override the reference source")
    up.add_argument("--rate", type=number, help="publish rate [Hz]")
    up.add_argument("--rtf", type=number, help="real-time factor")
    up.add_argument("--namespace", default="", help="namespace for all nodes (several robots; with --bridge: the "
                                                    "twin's, default twin); their frame ids then carry the prefix "
                                                    "NAMESPACE/ (see --frame-prefix)")
    up.add_argument("--frame-prefix", default=None, metavar="PREFIX",
                    help="prefix of every frame id the nodes publish (default: a non-empty frame_prefix of --params, "
                         "else NAMESPACE/ with --namespace, else none; \"\" for none)")
    up.add_argument("--interface", default=None, metavar="PROFILE",
                    help="stand in for another program's ROS interface, one the robot declares (robotino: driver, "
                         "robocup-logistics/ros2-robotino's rto_node: its node name, topics, services, parameters, "
                         "joint names and, from --namespace, its frame prefix NAMESPACE/; parameters default as "
                         "its launch file sets them); implies --reference cmd_vel, no state_publisher and no "
                         "probe_node (docs/ros.md)")
    up.add_argument("--bridge", action="store_true",
                    help="run the twin beside the real robot's driver, as twin.launch.py: the twin in namespace twin "
                         "(or --namespace), taking cmd_vel, and twin_bridge, which forwards the driver's commands to "
                         "it and compares (config/robotino_bridge.yaml; a twin_bridge section of --params applies "
                         "over it); not with --interface")
    up.add_argument("--sensors", nargs="?", const="", default=None, metavar="MAP.yaml",
                    help="also start sensor_node (laser scan, IR sensors, bumper against a Nav2 map; default "
                         "config/maps/rcll_arena.yaml) and bumper_stop, which passes cmd_vel on to the twin")
    up.add_argument("--discovery", metavar="RANGE", default=None,
                    help="ROS discovery range: localhost | subnet | off | system_default (default: "
                         "$ROS_AUTOMATIC_DISCOVERY_RANGE, else subnet with --bridge to see the robot, else localhost)")
    up.add_argument("--duration", type=number, default=None, help="stop after this many seconds")
    up.add_argument("--foxglove", type=integer, nargs="?", const=8765, default=None, metavar="PORT",
                    help="serve the twin live to Foxglove over WebSocket (default port 8765; needs foxglove-sdk)")
    up.add_argument("--foxglove-address", default=None, metavar="ADDR", help=FOXGLOVE_ADDRESS_HELP)
    up.add_argument("--no-state-publisher", action="store_true",
                    help="do not start state_publisher (a robot_state_publisher runs elsewhere)")
    up.set_defaults(func=cmd_up)

    demo = sub.add_parser("demo", help="the rose-path demo: node graph -> MCAP bag, plots and a video")
    demo.add_argument("--model", default=DEFAULT_ROBOT, metavar="NAME|FILE.yaml",
                      help=f"robot to record (default {DEFAULT_ROBOT}: its built-in path)")
    demo.add_argument("--duration", type=number, default=60.0, help="simulated seconds (default 60)")
    demo.add_argument("--out", default="out/demo", help="output folder (default out/demo)")
    demo.add_argument("--rtf", type=number, default=1.0, help="real-time factor (default 1: as the real robot)")
    demo.add_argument("--no-video", action="store_true", help="skip the rendered video")
    demo.add_argument("--no-sensors", action="store_true",
                      help="a mobile base without its simulated laser scanner, IR sensors and bumper")
    demo.add_argument("--foxglove", type=integer, nargs="?", const=8765, default=None, metavar="PORT",
                      help="also serve the run live to Foxglove over WebSocket (default port 8765)")
    demo.add_argument("--foxglove-address", default=None, metavar="ADDR", help=FOXGLOVE_ADDRESS_HELP)
    demo.add_argument("--quiet", "-q", action="store_true")
    demo.set_defaults(func=cmd_demo)

    fleet = sub.add_parser("fleet", help="N twins over P processes (namespaces robot0..), and whether they "
                                         "held real time")
    fleet.add_argument("robots", type=integer, metavar="N", help="number of twins")
    fleet.add_argument("--processes", "-p", type=integer, default=1, metavar="P",
                       help="processes to spread them over (default 1; at most N)")
    fleet.add_argument("--model", default=DEFAULT_ROBOT, metavar="NAME|FILE.yaml",
                       help=f"robot each twin runs (default {DEFAULT_ROBOT})")
    fleet.add_argument("--reference", choices=["rose", "builtin", "cmd_vel", "waypoints", "joint_trajectory"],
                       help="reference source of every twin (default: the model's, as config/dynamics.yaml)")
    fleet.add_argument("--duration", type=number, default=None,
                       help="measured wall seconds after the warm-up (default: until Ctrl-C)")
    fleet.add_argument("--warmup", type=number, default=2.0, help="seconds run before measuring (default 2)")
    fleet.add_argument("--json", metavar="FILE", help="also write each process's figures to FILE")
    fleet.add_argument("--quiet", "-q", action="store_true")
    fleet.set_defaults(func=cmd_fleet)


def _config_file(name: str) -> Path:
    from bondsim_ros.paths import share_file

    return share_file("config", name)


# Largest --rtf of `up` and `demo`: each frame steps the twin rtf/publish_rate simulated seconds
# in one frame period of wall time; at 1000 (30 s per frame at 33 Hz) the Robotino twin overran
# every frame and its solver failed (TooManySteps), at 100 it kept up
MAX_RTF = 100.0


def _rtf(value):
    """--rtf: positive, finite and at most MAX_RTF, or a CLIError naming the flag."""
    from bondsim_ros.cliargs import CLIError

    _positive(value, "--rtf", "a positive real-time factor")
    if value is not None and value > MAX_RTF:
        raise CLIError(f"--rtf must be at most {MAX_RTF:g} (each frame steps the twin rtf/publish_rate "
                       f"simulated seconds; faster than that it falls behind), got {value:g}")
    return value


def _check_domain() -> None:
    """ROS_DOMAIN_ID refused by name before anything starts: rcl's own refusal is a traceback,
    and Fast DDS ends the process on a domain beyond its ports with a log line alone."""
    from bondsim_ros.cliargs import CLIError

    from ._env import domain_id_of

    try:
        domain_id_of()
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _positive(value, flag: str, what: str = "a positive number"):
    """A finite value > 0 or a CLIError naming the flag (argparse's float() admits 0, -1, nan, inf)."""
    import math

    from bondsim_ros.cliargs import CLIError

    if value is not None and not (math.isfinite(value) and value > 0):
        raise CLIError(f"{flag} must be {what}, got {value:g}")
    return value


def _bridge_file(dyn: dict) -> Path:
    """The twin_bridge parameter file of the robot that runs (a Robot's ``bridge``)."""
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.robots import RobotError, available, load_robot

    from .dynamics_node import PARAMS

    model = dyn.get("model", PARAMS["model"][0])
    try:
        robot = load_robot(model)
    except RobotError as exc:
        raise CLIError(f"--bridge: {exc}") from None
    if robot.bridge is None:
        with_bridge = []
        for name in sorted(available()):
            try:
                if load_robot(name).bridge is not None:
                    with_bridge.append(name)
            except RobotError:
                continue
        raise CLIError(f"--bridge: {robot.name} has no bridge to a real robot's driver "
                       f"(robots with one: {', '.join(with_bridge) or 'none'})")
    return Path(robot.bridge)


def _bridge_args(args) -> argparse.Namespace:
    """``up --bridge``: the graph of twin.launch.py beside the real driver, whose names the twin
    must not take: its nodes in namespace ``twin`` unless --namespace says otherwise (frames
    NAMESPACE/ by default), the reference cmd_vel (the bridge forwards the robot's commands).
    What cannot work is refused: another --reference, and --interface (the twin would then take
    the driver's names beside the driver)."""
    from bondsim_ros.cliargs import CLIError

    if getattr(args, "interface", None):
        raise CLIError(f"--bridge runs the twin beside the real robot's driver, --interface {args.interface} in its "
                       f"place: not both (the twin under the driver's interface publishes the driver's topics and "
                       f"joint names, which twin_bridge compares with the driver's own)")
    if args.reference not in (None, "cmd_vel"):
        raise CLIError(f"--bridge forwards the robot's velocity commands to the twin: --reference must be cmd_vel, "
                       f"not {args.reference}")
    if args.namespace and not args.namespace.strip("/"):
        raise CLIError(f"--bridge runs the twin beside the real robot: --namespace {args.namespace!r} would put it "
                       f"on the driver's own topics (odom, joint_states); give a namespace (default twin)")
    return argparse.Namespace(**{**vars(args), "namespace": args.namespace or "twin", "reference": "cmd_vel"})


def _bridge_params(args, params: dict, dyn: dict) -> dict:
    """twin_bridge's parameters for ``up --bridge``: the robot's bridge file, the twin_bridge
    section of --params (``params``) over it, and the twin's topics as this graph serves them
    (``dyn``: the twin's parameters, read before --sensors puts bumper_stop in front of its
    cmd_vel). A twin_* topic of --params that names another is refused: nothing would serve it."""
    from bondsim_ros.cliargs import CLIError

    from .graph import load_ros_params

    path = _bridge_file(dyn)
    try:
        bridge = load_ros_params(path).node("twin_bridge")
    except Exception as exc:  # noqa: BLE001 - any reading error: name the file
        raise CLIError(f"{path}: {exc}") from None
    given = params.node("twin_bridge", known=lambda: _declared("twin_bridge"))  # in the root namespace
    bridge.update(given)
    ns = "/" + args.namespace.strip("/")
    cmd_vel = dyn.get("cmd_vel_topic", "cmd_vel")
    served = {"twin_cmd_vel": cmd_vel if cmd_vel.startswith("/") else f"{ns}/{cmd_vel}",
              "twin_odom": f"{ns}/odom", "twin_joint_states": f"{ns}/joint_states"}
    for key, topic in served.items():
        # the bridge runs in the root namespace: a relative name there is absolute
        if key in given and "/" + str(given[key]).lstrip("/") != topic:
            raise CLIError(f"--params: twin_bridge {key} {given[key]}, but the twin `up --bridge` starts (namespace "
                           f"{ns}) serves it on {topic}: leave {key} out, up sets it")
        bridge[key] = topic
    return bridge


def _params_file(args):
    """The sections of ``--params`` (default: the packaged config/dynamics.yaml), a
    ``graph.ParamFile``: a node's parameters are those of the sections matching its name."""
    import yaml

    from bondsim_ros.cliargs import CLIError

    from .graph import load_ros_params

    path = args.params or _config_file("dynamics.yaml")
    try:
        return load_ros_params(path)
    except (OSError, ValueError, AttributeError, yaml.YAMLError) as exc:  # AttributeError: not a mapping
        raise CLIError(f"--params {path}: not a readable ROS parameter file: {exc}") from None


def _declared(node: str) -> set:
    """The parameters ``node`` declares (its table and rclpy's use_sim_time): what it takes from
    a section of --params for any node. Asked only for such a section: the node modules import
    rclpy, which a fleet's parent process leaves to its children."""
    import importlib

    module = {"dynamics_node": "dynamics_params"}.get(node, node)
    return set(importlib.import_module(f"bondsim_ros.ros.{module}").PARAMS) | {"use_sim_time"}


def _node_params(args, params=None):
    params = _params_file(args) if params is None else params
    ns = getattr(args, "namespace", "") or ""
    dyn, probe, state = (params.node(name, ns, known=lambda name=name: _declared(name))
                         for name in ("dynamics_node", "probe_node", "state_publisher"))
    if getattr(args, "model", None):
        dyn["model"] = _model_spec(args.model)
    if getattr(args, "reference", None):
        dyn["reference"] = args.reference
    if getattr(args, "rate", None) is not None:
        dyn["publish_rate"] = _positive(args.rate, "--rate", "a positive rate in Hz")
    if getattr(args, "rtf", None) is not None:
        dyn["real_time_factor"] = _rtf(args.rtf)
    if getattr(args, "interface", None):
        dyn.update(_interface_params(args, dyn, params))
    elif hasattr(args, "frame_prefix"):  # up's: every node that names frames takes the same prefix
        prefix = frame_prefix(args.frame_prefix, getattr(args, "namespace", ""),
                              dyn.get("frame_prefix", "") if args.params else "")
        for node in (dyn, probe, state):
            node["frame_prefix"] = prefix
    return dyn, probe, state


def frame_prefix(flag: str | None, namespace: str, from_params: str = "") -> str:
    """The frame prefix of `up`'s nodes: ``flag`` (--frame-prefix, "" included) if given; else a
    non-empty frame_prefix of the user's --params file; else NAMESPACE/ (two twins in their
    namespaces would otherwise both publish odom -> base_footprint on the shared /tf, one tree
    to tf2, as fleet and the driver's launch prefix theirs); else none."""
    if flag is not None:
        return flag
    if from_params:
        return from_params
    ns = (namespace or "").strip("/")
    return f"{ns}/" if ns else ""


def _interface_params(args, dyn: dict, params: dict) -> dict:
    """--interface PROFILE: the node takes the profile's name (its section of --params applies
    too), the frame prefix its launch gives --namespace and the parameter defaults its launch
    gives (a value from --params wins); the reference is cmd_vel."""
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.robots import RobotError, load_robot
    from bondsim_ros.twin.interface_profile import ProfileError, parse_profile

    from .dynamics_node import PARAMS

    model = dyn.get("model", PARAMS["model"][0])
    try:
        robot = load_robot(model)
    except RobotError as exc:
        raise CLIError(f"--interface {args.interface}: {exc}") from None
    if args.interface not in robot.interfaces:
        raise CLIError(f"--interface {args.interface}: {robot.name} has no such interface profile (has: "
                       f"{', '.join(sorted(robot.interfaces)) or 'none'})")
    try:
        profile = parse_profile(args.interface, robot.interfaces[args.interface])
    except ProfileError as exc:
        raise CLIError(f"--interface {args.interface}: {exc}") from None
    if args.reference not in (None, "cmd_vel"):
        raise CLIError(f"--interface {args.interface} takes velocity commands: --reference must be cmd_vel, "
                       f"not {args.reference}")
    out = {"interface": args.interface, "reference": "cmd_vel", "node_name": profile.node_name}
    # a team's parameter file, keyed by the program's nodes: the node's own section, then its other
    # nodes' for what the node lacks; where it has other nodes, the odometry's frame prefix and
    # transform are theirs (the Robotino driver's odometry node takes tf_prefix and publish_odom_tf,
    # RTOOdometryNode.cpp:7-8, 20-30; robotino_node's tf_prefix names imu and IR frames only,
    # RTONode.cpp:56,69)
    ns = getattr(args, "namespace", "") or ""
    own = params.node(profile.node_name, ns)
    odometry = {p.name for p in profile.parameters if p.role in ("frame_prefix", "publish_odom_tf")}
    if profile.merged_node_names:
        own = {k: v for k, v in own.items() if k not in odometry}
    out.update(own)
    for name in profile.merged_node_names:
        out.update({k: v for k, v in params.node(name, ns).items() if k in odometry or k not in own})
    prefix = profile.parameter("frame_prefix")
    if prefix is not None and getattr(args, "frame_prefix", None) is not None:
        out[prefix.name] = args.frame_prefix
    elif prefix is not None and prefix.name not in out:
        out[prefix.name] = profile.frame_prefix_for(getattr(args, "namespace", "") or "")
    for name, default in profile.launch_defaults().items():  # as driver.launch.py starts the node
        if name not in out and name not in dyn:
            out[name] = default
    return out


def _model_spec(spec: str) -> str:
    """A registered robot's name or a YAML model path (absolute), else a usage error naming both."""
    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.robots import available

    if spec.endswith((".yaml", ".yml")):
        if not Path(spec).is_file():
            raise CLIError(f"--model {spec}: no such model file")
        return str(Path(spec).resolve())
    if spec not in available():
        raise CLIError(f"--model {spec!r}: not a registered robot ({', '.join(sorted(available()))}) "
                       f"nor a .yaml model file")
    return spec


def _graph_errors():
    """Exceptions that mean a bad parameter (value, type, name), not a bug: the nodes' own
    ValueErrors name the parameter; rclpy's name the parameter or topic."""
    from rclpy.exceptions import NameValidationException, ParameterException

    return (ValueError, TypeError, ParameterException, NameValidationException)


def cmd_up(args) -> int:
    from ._env import start_up_signals

    # from here to the spin a signal ends the command, even one landing where Python drops the
    # exception it raises (start_up_signals)
    with start_up_signals() as start_up:
        return _up(args, start_up)


def _up(args, start_up) -> int:
    import os

    import rclpy

    from bondsim_ros.cliargs import CLIError

    from ._env import choose_discovery_range, init_rclpy, spin_until_signal, start_up_heap_frozen, tear_down
    from .graph import start_graph

    _positive(args.duration, "--duration", "a positive number of seconds")
    _check_domain()
    params = _params_file(args)
    if args.bridge:
        args = _bridge_args(args)
    dyn, probe, state = _node_params(args, params)
    bridge = None
    if args.bridge:
        dyn["cmd_vel_type"] = "twist"  # the bridge's, as twin.launch.py sets it
        bridge = _bridge_params(args, params, dyn)
    sensors = _sensor_params(args.sensors, dyn, interface=bool(args.interface), given=params, namespace=args.namespace)
    node_name = dyn.pop("node_name", "dynamics_node")
    try:
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = choose_discovery_range(args.discovery, args.bridge)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    foxglove_address = _check_foxglove(args.foxglove, args.foxglove_address)
    context = rclpy.Context()
    init_rclpy(context=context)
    graph = None
    try:
        try:
            # an interface profile's program runs without the twin's URDF and probes (its own
            # robot_state_publisher names other links and joints)
            graph = start_graph(dyn, probe, bridge=bridge, namespace=args.namespace, context=context,
                                state_publisher=None if args.no_state_publisher or args.interface else state,
                                sensors=sensors, with_probe=not args.interface, dynamics_name=node_name)
        except _graph_errors() as exc:
            raise CLIError(str(exc)) from None
        if args.foxglove is not None:
            from .foxglove_live import FoxgloveLive, FoxgloveServeError

            kw = {"namespace": args.namespace} if args.namespace else {}
            try:
                live = FoxgloveLive(port=args.foxglove, host=foxglove_address, context=context,
                                    probes=graph.nodes["dynamics_node"].probes.names, **kw)
            except FoxgloveServeError as exc:
                raise CLIError(f"--foxglove: {exc}") from None
            graph.nodes["foxglove_live"] = live
            graph.executor.add_node(live)
            print(f"bondsim-ros up: Foxglove at {live.url}", file=sys.stderr)
        names = [node.get_name() if hasattr(node, "get_name") else key for key, node in graph.nodes.items()]
        with start_up_heap_frozen():  # (start-up ends here: then it says it is running)
            start_up.end()
            print(f"bondsim-ros up: {', '.join(names)} running, discovery range "
                  f"{os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE']} (Ctrl-C to stop)", file=sys.stderr)
            why = spin_until_signal(graph.executor, context, duration=args.duration)
        dn = graph.nodes["dynamics_node"]
        print(f"bondsim-ros up: stopped ({why}): {dn.frame_clock.frames} frames, {dn.frame_clock.overruns} overruns, "
              f"max lag {dn.frame_clock.max_lag * 1e3:.1f} ms, {dn.failures.count} solver failures, "
              f"{dn.frame_clock.skipped_frames} frames skipped", file=sys.stderr)
    finally:
        # in a program run bounded as a node executable's (a held middleware teardown); a caller
        # of the CLI's main(argv) keeps its process: no forced exit there
        tear_down(graph, context, bound_as="bondsim-ros up" if getattr(args, "program_run", False) else None)
    return 0


def _sensor_params(map_yaml, dyn: dict, interface: bool = False, given=None, namespace: str = "") -> dict | None:
    """sensor_node's and bumper_stop's parameters for ``--sensors [MAP.yaml]`` (None without it):
    their sections of the ``--params`` file (``given``), the map of ``--sensors`` in place of the
    file's; the twin then listens to bumper_stop's output instead of its own cmd_vel topic. With an
    interface profile the node's own bumper stop (the profile's) takes sensor_node's bumper
    instead: no bumper_stop; the sensors ride on the node's ~/ground_truth, since the profile's
    odometry may be reset while the robot stays where it is; and the scan is reliable, as the
    program's (the section's scan_qos wins)."""
    from bondsim_ros.cliargs import CLIError

    from .dynamics_node import PARAMS
    from .graph import SENSOR_LAYOUT, robot_sensor_layout

    if map_yaml is None:
        return None
    own = given.node("sensor_node", namespace, known=lambda: _declared("sensor_node")) if given is not None else {}
    model = dyn.get("model", PARAMS["model"][0])
    layout = robot_sensor_layout(model)
    if layout is None and not any(key in own for key in SENSOR_LAYOUT):
        if str(model).endswith((".yaml", ".yml")):
            whose = f"model file {model!r} declares no sensor layout"
        else:
            whose = f"robot {model!r} declares no sensor layout (Robot.sensors)"
        from .sensor_node import PARAMS as DEFAULTS  # (the Robotino's)

        print(f"bondsim-ros up: warning: --sensors: {whose}, so sensor_node places the Robotino's: the laser "
              f"{DEFAULTS['laser_pose'][0][0]:g} m ahead, the IR sensors and the bumper on a "
              f"{DEFAULTS['footprint_radius'][0]:g} m radius. Give this base's in a sensor_node section of --params "
              f"({', '.join(SENSOR_LAYOUT)})", file=sys.stderr)
    sensor = {**(layout or {}), **own}  # the user's section over the robot's layout
    if map_yaml:
        if not Path(map_yaml).is_file():
            raise CLIError(f"--sensors {map_yaml}: no such map file")
        sensor["map"] = str(Path(map_yaml).resolve())
    if interface:
        # the driver's laser node publishes scan reliable, depth 10 (LaserRangeFinderROS): a team's
        # reliable subscriber would get nothing from a best-effort one
        sensor.setdefault("scan_qos", "reliable")
        return {"sensor_node": {**sensor, "pose_topic": f"{dyn['node_name']}/ground_truth"}}
    bumper = given.node("bumper_stop", namespace, known=lambda: _declared("bumper_stop")) if given is not None else {}
    bumper.setdefault("cmd_vel_in", dyn.get("cmd_vel_topic", "cmd_vel"))
    bumper.setdefault("cmd_vel_out", "cmd_vel_bumper")
    bumper.setdefault("cmd_vel_type", dyn.get("cmd_vel_type", "auto"))  # what comes in, as the twin took it
    # the twin takes bumper_stop's one output type from its start: no command lost to discovery
    bumper.setdefault("cmd_vel_out_type", "stamped")
    dyn["cmd_vel_topic"], dyn["cmd_vel_type"] = bumper["cmd_vel_out"], bumper["cmd_vel_out_type"]
    return {"sensor_node": sensor, "bumper_stop": bumper}


def _check_foxglove(port, address) -> str | None:
    """--foxglove's port, address and libraries, checked before anything starts (usage errors:
    exit 2): a port in use ends the command here, before a graph or a recording exists.
    Returns the address to listen on (None without --foxglove)."""
    from bondsim_ros.cliargs import CLIError

    if port is None:
        if address is not None:
            raise CLIError("--foxglove-address needs --foxglove [PORT]")
        return None
    address = "127.0.0.1" if address is None else address
    if not 0 <= port <= 65535:
        raise CLIError(f"--foxglove: port {port} is not in 0..65535")
    try:
        import foxglove  # noqa: F401
        import websockets  # noqa: F401
    except ImportError:
        raise CLIError("--foxglove needs foxglove-sdk and websockets: pip install foxglove-sdk websockets") from None
    from .foxglove_live import FoxgloveServeError, check_address

    try:
        check_address(address, port)
    except FoxgloveServeError as exc:
        raise CLIError(f"--foxglove: {exc}") from None
    return address


def cmd_demo(args) -> int:
    from bondsim_ros.cliargs import CLIError

    from .demo import DemoOptionError, run_demo

    _positive(args.duration, "--duration", "a positive, finite number of simulated seconds")
    _rtf(args.rtf)
    _check_domain()
    foxglove_address = _check_foxglove(args.foxglove, args.foxglove_address)
    # the packaged parameter file with this --model; the demo has no --params/--reference/--rate,
    # and its --rtf goes to run_demo
    params = _node_params(argparse.Namespace(params=None, model=args.model, reference=None, rate=None, rtf=None))
    out = Path(args.out)
    from .foxglove_live import FoxgloveServeError

    try:
        # the summary is said before the node graph's teardown, which a program run bounds
        run_demo(duration=args.duration, out_dir=out, rtf=args.rtf, video=not args.no_video,
                 quiet=args.quiet, foxglove_port=args.foxglove, params=params,
                 foxglove_address=foxglove_address or "127.0.0.1", sensors=not args.no_sensors,
                 say=None if args.quiet else (lambda line: print(f"[demo] {line}", file=sys.stderr)),
                 bound_teardown=getattr(args, "program_run", False))
    except (FileExistsError, DemoOptionError) as exc:
        raise CLIError(str(exc)) from None
    except FoxgloveServeError as exc:  # the port taken between the check and the server's start
        raise CLIError(f"--foxglove: {exc}") from None
    return 0


def cmd_fleet(args) -> int:
    """Exit 0 when every process held real time over the run, 1 when one did not."""
    import json
    import math

    from bondsim_ros.cliargs import CLIError
    from bondsim_ros.outfiles import Output, check_output

    from .fleet import check_counts, held, run_fleet, summary

    try:
        check_counts(args.robots, args.processes)  # before anything starts: ROS, the processes
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    _positive(args.duration, "--duration", "a positive number of seconds")
    if not (math.isfinite(args.warmup) and args.warmup >= 0):
        raise CLIError(f"--warmup must be a finite number of seconds >= 0, got {args.warmup}")
    _check_domain()
    ns = argparse.Namespace(params=None, model=args.model, reference=args.reference, rate=None, rtf=None)
    dyn, _, _ = _node_params(ns)
    dyn["probes"] = []  # no probe_node in a fleet: nothing would read them
    if args.json:
        check_output(args.json, "--json")  # before the run: a bad path costs no measuring
    say = None if args.quiet else (lambda line: print(f"[fleet] {line}", file=sys.stderr))

    def report(stats):
        for line in summary(stats):  # said first: a --json that cannot be written loses nothing of it
            print(f"[fleet] {line}", file=sys.stderr)
        if args.json:
            out = Output(args.json, "--json")
            try:
                out.write(lambda tmp: tmp.write_text(json.dumps(stats, indent=1) + "\n"))
                out.commit()
            finally:
                out.discard()  # (nothing once committed) no temporary file left beside it

    try:
        stats = run_fleet(args.robots, args.processes, dyn, duration=args.duration, warmup=args.warmup,
                          progress=say)
    except (ValueError, RuntimeError) as exc:
        raise CLIError(str(exc)) from None
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM: what the processes measured, then 130 / 143
        if getattr(exc, "stats", None) is not None:
            report(exc.stats)
        raise
    report(stats)
    return 0 if stats and all(not s.get("error") and held(s) for s in stats) else 1


__all__ = ["register"]
