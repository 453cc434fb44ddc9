"""``bondsim-ros up`` and ``bondsim-ros demo``: the ROS 2 graph without ``launch``."""
from __future__ import annotations

import sys
from pathlib import Path


def register(sub) -> None:
    up = sub.add_parser("up", help="start dynamics_node and probe_node in one process (no `launch` needed)")
    up.add_argument("--params", metavar="FILE", help="ROS parameter file (default: config/dynamics.yaml)")
    up.add_argument("--reference", choices=["rose", "cmd_vel", "waypoints"], help="override the reference source")
    up.add_argument("--rate", type=float, help="publish rate [Hz]")
    up.add_argument("--rtf", type=float, help="real-time factor")
    up.add_argument("--namespace", default="", help="namespace for all nodes (several robots)")
    up.add_argument("--bridge", action="store_true", help="also start twin_bridge (config/robotino_bridge.yaml)")
    up.add_argument("--discovery", metavar="RANGE", default=None,
                    help="ROS discovery range: localhost | subnet | off | system_default (default: "
                         "$ROS_AUTOMATIC_DISCOVERY_RANGE, else subnet with --bridge to see the robot, else localhost)")
    up.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    up.add_argument("--foxglove", type=int, nargs="?", const=8765, default=None, metavar="PORT",
                    help="serve the twin live to Foxglove over WebSocket (default port 8765; needs foxglove-sdk)")
    up.add_argument("--no-state-publisher", action="store_true",
                    help="do not start state_publisher (a robot_state_publisher runs elsewhere)")
    up.set_defaults(func=cmd_up)

    demo = sub.add_parser("demo", help="the rose-path demo: node graph -> MCAP bag, plots and a video")
    demo.add_argument("--duration", type=float, default=60.0, help="simulated seconds (default 60)")
    demo.add_argument("--out", default="out/demo", help="output folder (default out/demo)")
    demo.add_argument("--rtf", type=float, default=1.0, help="real-time factor (default 1: as the real robot)")
    demo.add_argument("--no-video", action="store_true", help="skip the rendered video")
    demo.add_argument("--foxglove", type=int, nargs="?", const=8765, default=None, metavar="PORT",
                      help="also serve the run live to Foxglove over WebSocket (default port 8765)")
    demo.add_argument("--quiet", "-q", action="store_true")
    demo.set_defaults(func=cmd_demo)


def _config_file(name: str) -> Path:
    from bondsim_ros.paths import share_file

    return share_file("config", name)


def _node_params(args):
    from .graph import load_ros_params

    params = load_ros_params(args.params or _config_file("dynamics.yaml"))
    dyn = dict(params.get("dynamics_node", {}))
    probe = dict(params.get("probe_node", {}))
    state = dict(params.get("state_publisher", {}))
    if getattr(args, "reference", None):
        dyn["reference"] = args.reference
    if getattr(args, "rate", None):
        dyn["publish_rate"] = args.rate
    if getattr(args, "rtf", None):
        dyn["real_time_factor"] = args.rtf
    return dyn, probe, state


def cmd_up(args) -> int:
    import rclpy

    import os

    from bondsim_ros.cli import CLIError

    from ._env import choose_discovery_range
    from .graph import load_ros_params, start_graph

    dyn, probe, state = _node_params(args)
    bridge = load_ros_params(_config_file("robotino_bridge.yaml")).get("twin_bridge", {}) if args.bridge else None
    try:
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = choose_discovery_range(args.discovery, args.bridge)
    except ValueError as exc:
        raise CLIError(f"--discovery: {exc}") from None
    rclpy.init()
    _check_foxglove(args.foxglove)
    graph = start_graph(dyn, probe, bridge=bridge, namespace=args.namespace,
                        state_publisher=None if args.no_state_publisher else state)
    if args.foxglove is not None:
        from .foxglove_live import FoxgloveLive

        kw = {"namespace": args.namespace} if args.namespace else {}
        graph.nodes["foxglove_live"] = FoxgloveLive(port=args.foxglove, **kw)
        graph.executor.add_node(graph.nodes["foxglove_live"])
        print(f"bondsim-ros up: Foxglove at ws://localhost:{graph.nodes['foxglove_live'].port}", file=sys.stderr)
    print(f"bondsim-ros up: {', '.join(graph.nodes)} running, discovery range "
          f"{os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE']} (Ctrl-C to stop)", file=sys.stderr)
    try:
        if args.duration is not None:
            graph.spin_for(args.duration)
        else:
            graph.executor.spin()
    except KeyboardInterrupt:
        pass
    finally:
        dn = graph.nodes["dynamics_node"]
        print(f"bondsim-ros up: {dn.frames} frames, {dn.overruns} overruns, max lag {dn.max_lag * 1e3:.1f} ms",
              file=sys.stderr)
        graph.shutdown()
        rclpy.try_shutdown()
    return 0


def _check_foxglove(port) -> None:
    """--foxglove's port and library, checked before anything starts (usage errors: exit 2)."""
    if port is None:
        return
    from bondsim_ros.cli import CLIError

    if not 0 <= port <= 65535:
        raise CLIError(f"--foxglove: port {port} is not in 0..65535")
    try:
        import foxglove  # noqa: F401
    except ImportError:
        raise CLIError("--foxglove needs foxglove-sdk: pip install foxglove-sdk") from None


def cmd_demo(args) -> int:
    from .demo import run_demo

    _check_foxglove(args.foxglove)
    out = Path(args.out)
    summary = run_demo(duration=args.duration, out_dir=out, rtf=args.rtf, video=not args.no_video,
                       quiet=args.quiet, foxglove_port=args.foxglove)
    if not args.quiet:
        for line in summary:
            print(f"[demo] {line}", file=sys.stderr)
    return 0


__all__ = ["register"]
