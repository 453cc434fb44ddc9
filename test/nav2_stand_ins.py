"""Stand-ins that behave as the real third-party programs where test_launch.py relies on it, run
by the stand-in executables of its install prefix (one process each, rclpy, parameters from the
--params-file arguments launch gives them, as rcl hands them to the real node):

- robot_state_publisher: the URDF's fixed joints on /tf_static (latched), as the real one;
- static_transform_publisher: its --frame-id -> --child-frame-id transform on /tf_static;
- map_server: a lifecycle node named map_server (nothing served);
- amcl: a lifecycle node named amcl (nav2_amcl's amcl_node.cpp): from configure on it subscribes
  to ``scan_topic`` with sensor-data QoS (rmw_qos_profile_sensor_data) and to /tf, /tf_static;
  it counts the scans it gets while active (AMCL drops the others) and whether each scan's frame
  connects to ``base_frame_id`` and ``odom_frame_id`` through the transforms seen; started at
  its initial pose, it broadcasts map -> odom on each scan as AMCL does before any motion;
- lifecycle_manager: configures, then activates every node of ``node_names`` in order, as
  nav2_lifecycle_manager's startup does (it waits for each node's change_state service; a lost
  request is sent again, where the real one reports a failed bring-up);
- controller_server / planner_server: their costmap (local_costmap / global_costmap, parameters
  from the same files) subscribes to every observation source of its ObstacleLayer plugins with
  the layer's QoS (sensor data, depth 50: obstacle_layer.cpp) and checks frames the same way.

What each saw goes into its record (JSON), rewritten every half second and at SIGINT/SIGTERM.
"""
import json
import math
import os
import signal
import sys
import threading
import time
import xml.etree.ElementTree as ET


def _params_files(argv):
    return [argv[i + 1] for i in range(len(argv) - 1) if argv[i] == "--params-file"]


class TfGraph:
    """Frames connected by the transforms seen on /tf and /tf_static (either direction: a
    lookup between two frames needs a path, not an orientation)."""

    def __init__(self, node):
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from tf2_msgs.msg import TFMessage

        self.edges = {}
        self.planar = {}  # (parent, child): latest (x, y, yaw)
        node.create_subscription(TFMessage, "/tf", self._add, 100)
        node.create_subscription(TFMessage, "/tf_static", self._add,
                                 QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                            reliability=ReliabilityPolicy.RELIABLE))

    def _add(self, msg):
        for tf in msg.transforms:
            a, b = tf.header.frame_id.lstrip("/"), tf.child_frame_id.lstrip("/")
            self.edges.setdefault(a, set()).add(b)
            self.edges.setdefault(b, set()).add(a)
            t, q = tf.transform.translation, tf.transform.rotation
            self.planar[(a, b)] = (t.x, t.y, math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y ** 2 + q.z ** 2)))

    def connected(self, a, b) -> bool:
        seen, todo = {a}, [a]
        while todo:
            f = todo.pop()
            if f == b:
                return True
            for g in self.edges.get(f, ()):
                if g not in seen:
                    seen.add(g)
                    todo.append(g)
        return False


class ScanWatch:
    """A LaserScan subscription with the given QoS: arrivals while ``counting()``, frames, QoS
    compatibility with every publisher, frame connectivity to ``frames``."""

    def __init__(self, node, topic, qos, tf, frames, counting=lambda: True, on_scan=None):
        from sensor_msgs.msg import LaserScan

        self.node, self.qos, self.tf, self.frames, self.counting = node, qos, tf, frames, counting
        self.on_scan = on_scan
        self.topic = node.resolve_topic_name(topic)
        self.info = {"topic": self.topic, "reliability": qos.reliability.name, "durability": qos.durability.name,
                     "depth": qos.depth, "arrivals": [], "frames": [], "resolvable": {}, "publishers_compatible": None}
        self.sub = node.create_subscription(LaserScan, topic, self._on_scan, qos)

    def _on_scan(self, msg):
        if not self.counting():
            return
        self.info["arrivals"].append(time.monotonic())
        frame = msg.header.frame_id
        if frame not in self.info["frames"]:
            self.info["frames"].append(frame)
        for target in self.frames:
            self.info["resolvable"][f"{frame}->{target}"] = self.tf.connected(frame, target)
        if self.on_scan:
            self.on_scan(msg)

    def check_publishers(self):
        from rclpy.qos import QoSCompatibility, qos_check_compatible

        pubs = self.node.get_publishers_info_by_topic(self.topic)
        if pubs:
            # WARNING: a policy left at system_default (liveliness, as in rmw_qos_profile_sensor_data),
            # which the middleware resolves; ERROR: no sample would ever arrive
            checks = [qos_check_compatible(p.qos_profile, self.qos) for p in pubs]
            self.info["publishers_compatible"] = all(c != QoSCompatibility.ERROR for c, _ in checks)
            self.info["qos_check"] = [why for _, why in checks]


def _quaternion(roll, pitch, yaw):
    cr, sr, cp, sp, cy, sy = (math.cos(roll / 2), math.sin(roll / 2), math.cos(pitch / 2), math.sin(pitch / 2),
                              math.cos(yaw / 2), math.sin(yaw / 2))
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


def robot_state_publisher(node, rec):
    from geometry_msgs.msg import TransformStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from tf2_msgs.msg import TFMessage

    urdf = ET.fromstring(node.get_parameter("robot_description").value)
    prefix = node.get_parameter("frame_prefix").value if node.has_parameter("frame_prefix") else ""
    msg = TFMessage()
    for joint in urdf.iter("joint"):
        if joint.get("type") != "fixed":
            continue
        origin = joint.find("origin")
        xyz = [float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]
        rpy = [float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]
        tf = TransformStamped()
        tf.header.stamp = node.get_clock().now().to_msg()
        tf.header.frame_id = prefix + joint.find("parent").get("link")
        tf.child_frame_id = prefix + joint.find("child").get("link")
        tf.transform.translation.x, tf.transform.translation.y, tf.transform.translation.z = xyz
        q = tf.transform.rotation
        q.x, q.y, q.z, q.w = _quaternion(*rpy)
        msg.transforms.append(tf)
    pub = node.create_publisher(TFMessage, "/tf_static", QoSProfile(
        depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE))
    pub.publish(msg)
    rec["static_transforms"] = [[t.header.frame_id, t.child_frame_id] for t in msg.transforms]
    node._keep = pub
    return []


def _lifecycle_node(name, args, rec, on_configure=None):
    from rclpy.lifecycle import Node as LifecycleNode
    from rclpy.lifecycle import TransitionCallbackReturn

    class Stand(LifecycleNode):
        def on_configure(self, state):
            rec["states"].append("inactive")
            if on_configure:
                on_configure(self)
            return TransitionCallbackReturn.SUCCESS

        def on_activate(self, state):
            rec["states"].append("active")
            rec["active"] = True
            return super().on_activate(state)

        def on_deactivate(self, state):
            rec["active"] = False
            return super().on_deactivate(state)

    rec["states"], rec["active"] = [], False
    return Stand(name, automatically_declare_parameters_from_overrides=True)


def amcl(node, rec):
    """With set_initial_pose, AMCL's estimate before any motion is the initial pose; on each scan
    it broadcasts global_frame_id -> odom_frame_id = estimate * (odom -> base)^-1, post-dated by
    transform_tolerance (tf_broadcast)."""
    from geometry_msgs.msg import TransformStamped
    from rclpy.qos import qos_profile_sensor_data
    from tf2_msgs.msg import TFMessage

    watches = []

    def configure(n):
        p = {k: n.get_parameter(k).value for k in ("scan_topic", "base_frame_id", "odom_frame_id")}
        rec["configured_with"] = dict(p)
        g = {k: n.get_parameter(k).value for k in ("global_frame_id", "set_initial_pose", "initial_pose.x",
                                                   "initial_pose.y", "initial_pose.yaw", "tf_broadcast",
                                                   "transform_tolerance")}
        tf = TfGraph(n)
        pub = n.create_publisher(TFMessage, "/tf", 100)

        def broadcast(scan):
            odom_base = tf.planar.get((p["odom_frame_id"], p["base_frame_id"]))
            if not (g["set_initial_pose"] and g["tf_broadcast"]) or odom_base is None:
                return
            x, y, yaw = g["initial_pose.x"], g["initial_pose.y"], g["initial_pose.yaw"]
            ox, oy, oyaw = odom_base
            myaw = yaw - oyaw
            out = TransformStamped()
            ns = scan.header.stamp.sec * 10 ** 9 + scan.header.stamp.nanosec + int(g["transform_tolerance"] * 1e9)
            out.header.stamp.sec, out.header.stamp.nanosec = divmod(ns, 10 ** 9)
            out.header.frame_id, out.child_frame_id = g["global_frame_id"], p["odom_frame_id"]
            out.transform.translation.x = x - (math.cos(myaw) * ox - math.sin(myaw) * oy)
            out.transform.translation.y = y - (math.sin(myaw) * ox + math.cos(myaw) * oy)
            out.transform.rotation.z, out.transform.rotation.w = math.sin(myaw / 2), math.cos(myaw / 2)
            pub.publish(TFMessage(transforms=[out]))
        watches.append(ScanWatch(n, p["scan_topic"], qos_profile_sensor_data, tf,
                                 [p["base_frame_id"], p["odom_frame_id"]], counting=lambda: rec["active"],
                                 on_scan=broadcast))
        rec["scan"] = watches[0].info
    return configure, watches


def static_transform_publisher(node, rec):
    """tf2_ros's: --frame-id/--child-frame-id with --x/--y/--z/--yaw (0 when not given) on /tf_static."""
    from geometry_msgs.msg import TransformStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from tf2_msgs.msg import TFMessage

    a = rec["argv"]
    get = lambda flag, default: a[a.index(flag) + 1] if flag in a else default  # noqa: E731
    tf = TransformStamped()
    tf.header.stamp = node.get_clock().now().to_msg()
    tf.header.frame_id, tf.child_frame_id = get("--frame-id", ""), get("--child-frame-id", "")
    tf.transform.translation.x, tf.transform.translation.y, tf.transform.translation.z = (
        float(get(f, 0.0)) for f in ("--x", "--y", "--z"))
    yaw = float(get("--yaw", 0.0))
    tf.transform.rotation.z, tf.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    pub = node.create_publisher(TFMessage, "/tf_static", QoSProfile(
        depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE))
    pub.publish(TFMessage(transforms=[tf]))
    node._keep = pub


def costmaps(node, rec, args):
    """The costmap node(s) the server hosts, named and namespaced as Nav2's Costmap2DROS does."""
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, qos_profile_sensor_data

    name = {"controller_server": "local_costmap", "planner_server": "global_costmap"}[rec["executable"]]
    files = []
    for f in _params_files(args):
        files += ["--params-file", f]
    cm = Node(name, namespace=f"/{name}", context=node.context, use_global_arguments=False,
              cli_args=["--ros-args"] + files, automatically_declare_parameters_from_overrides=True)
    p = lambda key, default=None: cm.get_parameter(key).value if cm.has_parameter(key) else default  # noqa: E731
    tf = TfGraph(cm)
    qos = QoSProfile(**{k: getattr(qos_profile_sensor_data, k) for k in ("reliability", "durability", "history")},
                     depth=50)
    watches, sources = [], {}
    for plugin in p("plugins", []) or []:
        if p(f"{plugin}.plugin") != "nav2_costmap_2d::ObstacleLayer":
            continue
        for source in (p(f"{plugin}.observation_sources", "") or "").split():
            topic = p(f"{plugin}.{source}.topic", source)
            sources[f"{plugin}.{source}"] = {"topic": topic,
                                             "data_type": p(f"{plugin}.{source}.data_type", "LaserScan")}
            if sources[f"{plugin}.{source}"]["data_type"] == "LaserScan":
                w = ScanWatch(cm, topic, qos, tf, [p("robot_base_frame"), p("global_frame")])
                watches.append(w)
                sources[f"{plugin}.{source}"]["watch"] = w.info
    rec["costmap"] = {"node": f"/{name}/{name}", "sources": sources}
    return cm, watches


ANSWER_SECONDS = 10.0  # a lifecycle request unanswered this long is asked again (lifecycle_manager)


def _answer(client, request):
    """The service's answer, or None after ANSWER_SECONDS."""
    done = threading.Event()
    future = client.call_async(request)
    future.add_done_callback(lambda f: done.set())
    if not done.wait(ANSWER_SECONDS):
        client.remove_pending_request(future)
        return None
    return future.result()


def lifecycle_manager(node, rec):
    """Configures, then activates, each node of ``node_names`` in order. Where nav2_util's
    LifecycleServiceClient gives up on a transition unanswered within its timeout, this asks the
    node's state and sends the transition again (at most three times): on a loaded machine a
    request sent just after wait_for_service can be lost while DDS is still matching the
    service's endpoints, and the test then only saw a bring-up that never finished."""
    from lifecycle_msgs.msg import State, Transition
    from lifecycle_msgs.srv import ChangeState, GetState

    names = list(node.get_parameter("node_names").value)
    rec["managed"] = {n: [] for n in names}
    reached = {"inactive": State.PRIMARY_STATE_INACTIVE, "active": State.PRIMARY_STATE_ACTIVE}

    def startup():
        # get_state clients only where a request went unanswered: a client alone puts its service
        # in the graph (ros2 service list), where a watcher would then wait for its answer
        clients = {n: node.create_client(ChangeState, f"/{n}/change_state") for n in names}
        getters = {}
        for transition, label in ((Transition.TRANSITION_CONFIGURE, "inactive"),
                                  (Transition.TRANSITION_ACTIVATE, "active")):
            for n in names:
                change = clients[n]
                if not change.wait_for_service(timeout_sec=60.0):
                    rec["failed"] = f"{n}: no change_state service"
                    return
                for _ in range(3):
                    result = _answer(change, ChangeState.Request(transition=Transition(id=transition)))
                    if result is not None:
                        break
                    if n not in getters:
                        getters[n] = node.create_client(GetState, f"/{n}/get_state")
                    get = getters[n]
                    state = _answer(get, GetState.Request()) if get.wait_for_service(timeout_sec=5.0) else None
                    if state is not None and state.current_state.id == reached[label]:
                        break  # the request came through, its answer did not
                    rec.setdefault("retried", []).append(f"{n}: {label}")
                else:
                    rec["failed"] = f"{n}: {label}: no answer in 3 x {ANSWER_SECONDS:g} s"
                    return
                if result is not None and not result.success:
                    rec["failed"] = f"{n}: {label} refused"
                    return
                rec["managed"][n].append(label)
    threading.Thread(target=startup, daemon=True).start()
    return []


def main(rec, record_path):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    args = rec["argv"]
    rclpy.init(args=[sys.argv[0]] + args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *a: stop.set())
    exe = rec["executable"]
    watches, extra = [], []
    if exe in ("map_server", "amcl"):
        configure, watches = amcl(None, rec) if exe == "amcl" else (None, [])
        node = _lifecycle_node(exe, args, rec, configure)
    else:
        node = rclpy.create_node(exe, automatically_declare_parameters_from_overrides=True)
        if exe == "robot_state_publisher":
            robot_state_publisher(node, rec)
        elif exe == "static_transform_publisher":
            static_transform_publisher(node, rec)
        elif exe == "lifecycle_manager":
            lifecycle_manager(node, rec)
        elif exe in ("controller_server", "planner_server"):
            cm, watches = costmaps(node, rec, args)
            extra.append(cm)
    # one thread, as the real programs spin (rclcpp::spin): a lifecycle node's services under a
    # multi-threaded executor are where Fast DDS's wait races (rmw_fastrtps#728, rclcpp#2677)
    executor = SingleThreadedExecutor()
    for n in [node] + extra:
        executor.add_node(n)

    def spin():
        try:
            executor.spin()
        except Exception:
            # executor.shutdown() below races the spinning thread (a guard condition or wait set
            # torn down mid-wait raises in spin); the real Nav2 node exits cleanly on SIGINT
            if not stop.is_set():
                raise

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()

    def write():
        for w in watches:
            w.check_publishers()
        part = f"{record_path}.part"
        text = json.dumps(rec)  # one shot: the C encoder copies each dict's items, which the node's threads grow
        with open(part, "w") as f:
            f.write(text)
        os.replace(part, record_path)  # whole or not at all, whenever the process ends
    code = 0
    try:
        while not stop.wait(0.5):
            write()
    except BaseException:
        # said and counted as the death it is: os._exit below would otherwise end the process as
        # "finished cleanly", without a word, where the real node keeps running
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        # out within 3 s of SIGINT whatever holds the teardown below, as the real programs exit:
        # launch sends SIGTERM 5 s after SIGINT, and its "process has died" error fails the test;
        # the node executables' bound, which holds where a C call keeps the GIL too
        from bondsim_ros.ros._env import end_within

        end_within(3.0, exe)
        write()
        executor.shutdown(timeout_sec=1.0)
        # out at once: a thread still in rcl (a service wait) would abort the interpreter's exit
        os._exit(code)
