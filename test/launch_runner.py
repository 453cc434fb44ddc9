"""Run one launch file with the real launch.LaunchService (what `ros2 launch` runs), watch the
ROS graph it brings up from an rclpy node, then shut it down; writes what it saw as JSON.

    python launch_runner.py LAUNCH_FILE OUT_JSON MAX_SECONDS JOINT_STATES_TOPIC [name:=value ...]

It watches until JOINT_STATES_TOPIC has delivered messages (the real nodes are up: model
build and numba loading take seconds, more on a loaded machine) plus a second, at most
MAX_SECONDS.

Used by test_launch.py in a subprocess: LaunchService installs signal handlers, which only
the main thread of a process may do.
"""
import asyncio
import json
import math
import os
import sys
import threading
import time
from pathlib import Path


OURS = ("dynamics_node", "probe_node", "twin_bridge", "sensor_node", "bumper_stop")
# seconds watched after everything is up (LAUNCH_WATCH_SETTLE): longer where a test measures rates
SETTLE = float(os.environ.get("LAUNCH_WATCH_SETTLE", "1.0"))
# the dynamics_node executable's node name (LAUNCH_WATCH_NODE): another under an interface profile
DYNAMICS = os.environ.get("LAUNCH_WATCH_NODE", "dynamics_node")


def watch(seconds: float, joint_topic: str, out: dict, done, ended=None, started=()) -> None:
    """Watch the launched graph until ``joint_topic`` carries names, dynamics_node is up and
    every node of ours the launch started (``started``: executable names, filled in as the
    launch starts them) has been discovered, then SETTLE seconds more; read their parameters."""
    import rclpy
    from rcl_interfaces.srv import GetParameters, ListParameters
    from rclpy.parameter import parameter_value_to_python
    from sensor_msgs.msg import JointState

    ctx = rclpy.Context()
    rclpy.init(args=sys.argv[:1], context=ctx)  # the launch arguments (name:=value) are no remap rules
    node = rclpy.create_node("launch_test_watcher", context=ctx)
    joint_names = {}
    subscribed = set()
    from nav_msgs.msg import Odometry

    def first_odom(m):  # the twin's start pose in odom (x, y, yaw): it rests until commanded
        if "odom_start" not in out:
            q = m.pose.pose.orientation
            out["odom_start"] = [m.pose.pose.position.x, m.pose.pose.position.y,
                                 math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y ** 2 + q.z ** 2))]
    node.create_subscription(Odometry, "/odom", first_odom, 10)
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    end = time.monotonic() + seconds
    lifecycle = {"next": 0.0, "active": False, "pending": {}}

    def lifecycle_active() -> bool:
        """Every node a lifecycle manager of the graph manages (its ``node_names``: Nav2's
        map_server, amcl, ...) reports active through its get_state service, as a user checks a
        bring-up: a manager configures and activates its nodes some time after they appear,
        longer on a loaded machine, and what its nodes receive is only watched once they are
        active. True at once for a launch without a lifecycle manager."""
        from lifecycle_msgs.msg import State
        from lifecycle_msgs.srv import GetState

        if lifecycle["active"] or time.monotonic() < lifecycle["next"]:
            return lifecycle["active"]
        lifecycle["next"] = time.monotonic() + 0.5
        if "lifecycle_manager" not in started:
            lifecycle["active"] = True
            return True
        managers = [f"{ns.rstrip('/')}/{n}" for n, ns in node.get_node_names_and_namespaces()
                    if n.startswith("lifecycle_manager")]
        expected = lifecycle.setdefault("expected", {})  # manager -> its node_names, once read

        def ask(key, kind, service, request):
            """The answer of ``service`` once it came, else None (asked when the server is there:
            a request sent before DDS matched it would never be answered)."""
            fut = lifecycle["pending"].get(key)
            if fut is not None and fut.done():
                lifecycle["pending"].pop(key)
                return fut.result()
            if fut is None:
                client = lifecycle.get(f"client:{service}")
                if client is None:
                    client = lifecycle[f"client:{service}"] = node.create_client(kind, service)
                if client.service_is_ready():
                    lifecycle["pending"][key] = client.call_async(request)
            return None

        for fqn in managers:
            if fqn not in expected:
                answer = ask(fqn, GetParameters, f"{fqn}/get_parameters", GetParameters.Request(names=["node_names"]))
                if answer is not None and answer.values:
                    expected[fqn] = list(parameter_value_to_python(answer.values[0]) or [])
        if not managers or set(managers) - set(expected):
            return False
        # the managed lifecycle nodes that are up (the tests' stand-ins of most of Nav2's servers
        # are plain nodes or none: no state to wait for). A manager configures all its nodes
        # before it activates any, so one of them active means its siblings were up then.
        services = {n for n, _ in node.get_service_names_and_types()}
        names = sorted({n for names in expected.values() for n in names if f"/{n}/get_state" in services})
        if not names:
            return False
        states = lifecycle.setdefault("states", {})
        for name in names:
            answer = ask(name, GetState, f"/{name}/get_state", GetState.Request())
            if answer is not None:
                states[name] = answer.current_state.id
        lifecycle["active"] = all(states.get(n) == State.PRIMARY_STATE_ACTIVE for n in names)
        return lifecycle["active"]
    try:
        settled = None
        while time.monotonic() < end and not (ended is not None and ended.is_set()):
            up = {n for n, _ in node.get_node_names_and_namespaces()}
            if settled is None and joint_topic in joint_names and DYNAMICS in up and \
                    {DYNAMICS if n == "dynamics_node" else n for n in list(started) if n in OURS} <= up and \
                    lifecycle_active():  # discovery of each can lag the others
                settled = time.monotonic() + SETTLE
            if settled is not None and time.monotonic() > settled:
                break
            for topic, types in node.get_topic_names_and_types():
                if topic.endswith("joint_states") and "sensor_msgs/msg/JointState" in types and topic not in subscribed:
                    subscribed.add(topic)
                    node.create_subscription(JointState, topic,
                                             lambda m, t=topic: joint_names.__setitem__(t, list(m.name)), 10)
            executor.spin_once(timeout_sec=0.1)
        out["joint_names"] = joint_names
        out["settled"] = settled is not None  # False: MAX_SECONDS passed, or the launch ended, before
        out["lifecycle_states"] = dict(lifecycle.get("states", {}))
        out["published_topics"] = sorted(t for t, _ in node.get_topic_names_and_types()
                                         if node.count_publishers(t) > 0)
        out["nodes"] = sorted(f"{ns.rstrip('/')}/{n}" for n, ns in node.get_node_names_and_namespaces())
        params = {}
        for fqn in out["nodes"]:
            if fqn.rsplit("/", 1)[-1] not in OURS + (DYNAMICS,):
                continue
            lister = node.create_client(ListParameters, f"{fqn}/list_parameters")
            getter = node.create_client(GetParameters, f"{fqn}/get_parameters")
            if not (lister.wait_for_service(timeout_sec=5.0) and getter.wait_for_service(timeout_sec=5.0)):
                continue
            fut = lister.call_async(ListParameters.Request())
            executor.spin_until_future_complete(fut, timeout_sec=5.0)
            names = list(fut.result().result.names) if fut.result() else []
            fut = getter.call_async(GetParameters.Request(names=names))
            executor.spin_until_future_complete(fut, timeout_sec=5.0)
            if fut.result():
                params[fqn] = {n: parameter_value_to_python(v) for n, v in zip(names, fut.result().values)}
        out["parameters"] = params
    except Exception as exc:  # reported, not swallowed: the test asserts on it
        out["watch_error"] = repr(exc)
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)
        done()


def main() -> int:
    from launch import LaunchDescription, LaunchService
    from launch.actions import IncludeLaunchDescription, RegisterEventHandler
    from launch.event_handlers import OnProcessStart
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    path, out_path, seconds, joint_topic = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    args = dict(a.split(":=", 1) for a in sys.argv[5:])
    ls = LaunchService(noninteractive=True)
    started = set()  # executables the launch started, as it starts them
    ls.include_launch_description(LaunchDescription([
        RegisterEventHandler(OnProcessStart(on_start=lambda event, _: started.add(Path(event.cmd[0]).name))),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(path), launch_arguments=args.items())]))
    out = {}
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    def stop():
        coro = ls.shutdown()  # a coroutine when the service runs in this loop
        if coro is not None:
            loop.create_task(coro)

    ended = threading.Event()  # the launch ended by itself (e.g. refused its arguments): stop watching
    watcher = threading.Thread(target=watch, args=(seconds, joint_topic, out, lambda: loop.call_soon_threadsafe(stop),
                                                   ended, started), daemon=True)
    watcher.start()
    out["return_code"] = loop.run_until_complete(ls.run_async())
    ended.set()
    watcher.join(timeout=30)
    with open(out_path, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
