"""The running twin, live in Foxglove: a node that serves the graph's topics over Foxglove's
WebSocket protocol (foxglove-sdk), for users without RViz.

    bondsim-ros up --foxglove [PORT] [--foxglove-address ADDR]   (default 8765 on 127.0.0.1)
        ->  Foxglove or Lichtblick: Open connection, ws://localhost:8765

Both names of the protocol are served: ``foxglove.sdk.v1`` (foxglove-sdk, current Foxglove) and
``foxglove.websocket.v1`` (@foxglove/ws-protocol's FoxgloveClient, Lichtblick, older Foxglove).
foxglove-sdk answers only the first (HTTP 400 otherwise, no option to change it); the messages of
the two are the same. So the sdk server listens on a loopback port of its own, and the public
port is a small front (``websockets``) that accepts either name and relays each connection's
frames unchanged to its own sdk connection: channels, schemas, messages, parameters and assets
come from the one sdk server whichever name the client spoke.

Channels (Foxglove's own schemas, so its panels understand them without ROS):

    /joint_states        foxglove.JointStates
    /tf, /tf_static      foxglove.FrameTransforms     (3-D panel: the robot's links move)
    /odom                foxglove.Odometry
    /probes/NAME         foxglove.PoseInFrame
    /robot_description   JSON {"data": URDF}          (schema name std_msgs/msg/String)

The URDF is also the server parameter ``/robot_description``. Its mesh files are served as
assets (Foxglove asks the server for ``package://`` URIs only, fetchAsset; a file:// URI it
would read from the viewer's own disk, which a browser cannot and another computer does not
have): relative mesh paths of the packaged URDF become ``package://bondsim_ros/urdf/...``; the
file:// URIs (or absolute paths) of the URDFs the mechanism layer generates for every other
model (~/.cache/bondsim_ros/urdf) become ``package://bondsim_ros/files/<absolute path>``;
package:// URIs of installed ROS packages stay. The server answers exactly the meshes the URDF
it serves references, plus files below the package's urdf/ folder. Latched data (URDF, static
transforms) is sent again every second: the WebSocket protocol has no latching.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
import socket
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

from geometry_msgs.msg import PointStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

DEFAULT_PORT = 8765
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
# /tf_static has several latched publishers (state_publisher's robot, sensor_node's sensors), each
# holding its last message: at depth 1 a late subscriber kept one of them, and Foxglove's 3-D panel
# lost the robot's base_footprint -> base_link
STATIC = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
MESH = re.compile(r'filename="([^"]+)"')
PACKAGE_URDF = "package://bondsim_ros/urdf/"  # the package's urdf/ folder
PACKAGE_FILES = "package://bondsim_ros/files"  # + the absolute path of a file the URDF references
SDK_SUBPROTOCOL = "foxglove.sdk.v1"  # the only name foxglove-sdk's handshake accepts
# what the public port accepts; a client offering both gets the sdk's own name
SUBPROTOCOLS = (SDK_SUBPROTOCOL, "foxglove.websocket.v1")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")


class FoxgloveServeError(RuntimeError):
    """The public port could not be opened (in use, an address not of this machine, ...)."""


def ws_url(host: str, port: int) -> str:
    """The address a user types into Foxglove for a server on ``host``:``port``."""
    if host in LOOPBACK:
        host = "localhost"
    elif host in WILDCARD:
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    return f"ws://{host}:{port}"


def check_address(host: str, port: int) -> None:
    """Raise FoxgloveServeError when ``host``:``port`` cannot be listened on now (checked before a
    command starts anything; the server's own bind reports the same if the port is taken since)."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _name, addr in infos:
            with socket.socket(family, kind, proto) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
                s.bind(addr)
    except OSError as exc:
        raise FoxgloveServeError(_bind_failure(host, port, exc)) from None


def _bind_failure(host, port, exc: OSError) -> str:
    # os.strerror: asyncio's bind error carries a longer text of its own with the errno
    why = os.strerror(exc.errno) if exc.errno else str(exc)
    if exc.errno == errno.EADDRINUSE:
        why += " (another program serves there: choose another port, --foxglove PORT)"
    elif exc.errno == errno.EADDRNOTAVAIL:
        why += " (not an address of this computer)"
    return f"cannot serve on {host}:{port}: {why}"


RELAYED: dict = {}  # "127.0.0.1:PORT" of a relayed connection, as the sdk sees it -> the client's address


def _address(addr) -> str:
    host, port = addr[0], addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Repeats(logging.Filter):
    """Lets a message through once per ``period`` seconds, counting the copies it held back: a
    client that publishes without the capability makes the sdk log one line per message (20 Hz
    of "Received message for unknown channel: 1")."""

    def __init__(self, period: float = 10.0):
        super().__init__()
        self.period = period
        self.last: dict = {}  # (logger, message) -> when it last went through
        self.held: dict = {}

    def filter(self, record: logging.LogRecord) -> bool:
        import time

        message = original = record.getMessage()
        for relayed, client in list(RELAYED.items()):  # the client's own address, not the relay's
            if relayed in message:
                message = message.replace(relayed, f"{client} (relayed)")
        if message != original:
            record.msg, record.args = message, ()
        key, now = (record.name, message), time.monotonic()
        if key in self.last and now - self.last[key] < self.period:
            self.held[key] = self.held.get(key, 0) + 1
            return False
        held = self.held.pop(key, 0)
        if held:
            record.msg, record.args = f"{key[1]} ({held} more like it in the last {now - self.last[key]:.0f} s)", ()
        self.last[key] = now
        return True


def quiet_repeats(logger_name: str = "foxglove") -> None:
    """The sdk's log records on stderr, each repeated one at most every 10 s. Only where nobody set
    up logging (the records would otherwise reach Python's last-resort handler one line each)."""
    logger = logging.getLogger(logger_name)
    if logging.root.handlers or logger.handlers:
        return
    handler = logging.StreamHandler()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    handler.addFilter(_Repeats())
    logger.addHandler(handler)
    logger.propagate = False


class _Front:
    """The public WebSocket port: accepts both subprotocol names and relays every connection,
    frame by frame and unchanged, to a connection of its own to the sdk server on
    127.0.0.1:``upstream``. Runs an asyncio loop in a thread of its own."""

    def __init__(self, host: str, port: int, upstream: int):
        self.upstream = upstream
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="foxglove_front", daemon=True)
        self.thread.start()
        try:
            self.server = asyncio.run_coroutine_threadsafe(self._serve(host, port), self.loop).result()
        except OSError as exc:
            self._end_loop()
            raise FoxgloveServeError(_bind_failure(host, port, exc)) from None
        except BaseException:
            self._end_loop()
            raise
        self.port = self.server.sockets[0].getsockname()[1]

    async def _serve(self, host, port):
        from websockets.asyncio.server import serve

        # compression off, as the sdk server has it: a client's deflate would cost CPU per frame
        return await serve(self._relay, host, port, subprotocols=list(SUBPROTOCOLS), compression=None,
                           logger=logging.getLogger("bondsim_ros.foxglove"))

    async def _relay(self, client):
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, WebSocketException

        try:
            # proxy=None: the sdk server is on this computer whatever the environment's proxy says
            upstream = await connect(f"ws://127.0.0.1:{self.upstream}", subprotocols=[SDK_SUBPROTOCOL],
                                     compression=None, proxy=None, max_size=None, open_timeout=10)
        except (OSError, TimeoutError, WebSocketException) as exc:
            await client.close(1011, f"Foxglove server unavailable: {exc}"[:120])
            return

        async def pump(source, sink):
            # awaiting send() waits while the sink's buffer is full: a slow client slows the
            # reading of its upstream connection, and the sdk server drops that client's
            # messages as it does for a slow direct client
            try:
                async for frame in source:
                    await sink.send(frame)
            except ConnectionClosed:
                pass
            finally:
                await sink.close()  # ends the other direction too

        # the sdk sees every client as this relay's loopback port: its log names the client by it
        relayed = f"127.0.0.1:{upstream.local_address[1]}"
        RELAYED[relayed] = _address(client.remote_address)
        try:
            async with upstream:
                await asyncio.gather(pump(client, upstream), pump(upstream, client))
        finally:
            RELAYED.pop(relayed, None)

    def stop(self):
        async def close():
            self.server.close()  # the listening socket and every client connection
            await self.server.wait_closed()

        try:
            asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=15)
        finally:
            self._end_loop()

    def _end_loop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


def _stamp(header_stamp):
    from foxglove.messages import Timestamp

    return Timestamp(sec=header_stamp.sec, nsec=header_stamp.nanosec)


def _ns(header_stamp) -> int:
    return header_stamp.sec * 1_000_000_000 + header_stamp.nanosec


def _urdf_root() -> Path:
    from bondsim_ros.paths import share_file

    return Path(share_file("urdf"))


class FoxgloveLive(Node):
    def __init__(self, port: int = DEFAULT_PORT, host: str = "127.0.0.1", probes=("base_center",),
                 name="foxglove_live", **kwargs):
        try:
            import foxglove
            import websockets  # noqa: F401
        except ImportError as exc:
            raise ImportError("--foxglove needs foxglove-sdk and websockets: pip install foxglove-sdk websockets "
                              "(or the package's [foxglove] extra)") from exc
        from foxglove.channels import FrameTransformsChannel, JointStatesChannel, OdometryChannel, PoseInFrameChannel

        self.description = ""
        self.assets = {}  # served URI -> local file: the meshes the served URDF references
        self.static = {}  # child frame -> TransformStamped: every /tf_static publisher's, merged
        self.sent = {}  # channel topic -> messages logged (for the log line and tests)
        self.fg = foxglove.Context()  # own context: several servers in one process stay apart
        self.ch_joints = JointStatesChannel("/joint_states", context=self.fg)
        self.ch_tf = FrameTransformsChannel("/tf", context=self.fg)
        self.ch_tf_static = FrameTransformsChannel("/tf_static", context=self.fg)
        self.ch_odom = OdometryChannel("/odom", context=self.fg)
        self.ch_probes = {n: PoseInFrameChannel(f"/probes/{n}", context=self.fg) for n in probes if n}
        self.ch_description = foxglove.Channel(
            "/robot_description", context=self.fg, message_encoding="json",
            schema=foxglove.Schema(name="std_msgs/msg/String", encoding="jsonschema",
                                   data=b'{"type":"object","properties":{"data":{"type":"string"}}}'))
        live = self

        class Listener(foxglove.ServerListener):
            def on_get_parameters(self, client, param_names, request_id=None):
                if live.description and (not param_names or "/robot_description" in param_names):
                    return [foxglove.Parameter("/robot_description", value=live.description)]
                return []

            def on_set_parameters(self, client, parameters, request_id=None):
                # read-only: the answer holds the values as they stay (the listener's default echoes
                # the request, and a client then shows a URDF the twin never took)
                names = [p.name for p in parameters]
                return self.on_get_parameters(client, names, request_id) if "/robot_description" in names else []

        quiet_repeats()
        # the servers first, the node after: a port that cannot be opened leaves no node behind
        # (rclpy's context would destroy it at shutdown)
        self.server = foxglove.start_server(name="bondsim_ros twin", host="127.0.0.1", port=0, context=self.fg,
                                            capabilities=[foxglove.Capability.Parameters],
                                            server_listener=Listener(), asset_handler=self._asset)
        try:
            self.front = _Front(host, port, self.server.port)
        except BaseException:
            self.server.stop()
            raise
        self.host, self.port = host, self.front.port
        self.url = ws_url(host, self.port)
        try:
            super().__init__(name, **kwargs)
        except BaseException:
            self._stop_servers()
            raise
        self.create_subscription(JointState, "joint_states", self._on_joints, 50)
        self.create_subscription(Odometry, "odom", self._on_odom, 50)
        from .messages import tf_message

        tf = tf_message()
        self.create_subscription(tf, "/tf", lambda m: self._on_tf(m, self.ch_tf), 100)
        self._tf_message = tf
        self.create_subscription(tf, "/tf_static", self._on_tf_static, STATIC)
        self.create_subscription(String, "robot_description", self._on_description, LATCHED)
        for n in self.ch_probes:
            self.create_subscription(PointStamped, f"probes/{n}", lambda m, n=n: self._on_probe(n, m), 50)
        self.create_timer(1.0, self._resend_latched)
        self.get_logger().info(f"Foxglove: {self.url} (listening on {host}:{self.port})")

    # -- assets: the mesh files of the served URDF ---------------------------------------------
    def _asset(self, uri: str) -> bytes | None:
        """Called by the server's thread for a client's fetchAsset; None answers "not found"."""
        path = self.assets.get(uri)
        if path is None:
            if not uri.startswith(PACKAGE_URDF):
                return None
            root = _urdf_root().resolve()
            path = (root / unquote(uri[len(PACKAGE_URDF):])).resolve()
            if root not in path.parents:  # nothing outside the URDF folder
                return None
        try:
            return path.read_bytes() if path.is_file() else None
        except OSError:
            return None

    def _serve_mesh(self, ref: str, assets: dict) -> str:
        """The URI Foxglove can fetch from this server for the mesh reference ``ref`` of the URDF
        (recorded in ``assets``), or ``ref`` unchanged where neither can resolve it."""
        parsed = urlparse(ref)
        if parsed.scheme == "file" or (not parsed.scheme and ref.startswith("/")):
            path = Path(unquote(parsed.path))
            uri = PACKAGE_FILES + (parsed.path if parsed.scheme else ref)
            assets[uri] = path
            return uri
        if parsed.scheme == "package":
            if not ref.startswith(PACKAGE_URDF):  # another installed package's file: where ROS finds it
                try:
                    from ament_index_python.packages import get_package_share_directory

                    assets[ref] = Path(get_package_share_directory(parsed.netloc)) / unquote(parsed.path).lstrip("/")
                except Exception:  # noqa: BLE001 - not a ROS install or no such package: Foxglove says so
                    pass
            return ref
        if not parsed.scheme:  # relative: the packaged URDF's meshes, below the urdf/ folder
            return PACKAGE_URDF + ref
        return ref  # http(s) and the like: Foxglove fetches those itself

    # -- ROS -> Foxglove ----------------------------------------------------------------------
    def _log(self, channel, msg, log_time=None):
        channel.log(msg, log_time=log_time)
        self.sent[channel.topic()] = self.sent.get(channel.topic(), 0) + 1

    def _on_joints(self, msg: JointState):
        from foxglove.messages import JointState as FJ, JointStates

        n = len(msg.name)
        pos, vel, eff = (list(a) + [0.0] * n for a in (msg.position, msg.velocity, msg.effort))
        joints = [FJ(name=msg.name[k], position=pos[k], velocity=vel[k], effort=eff[k]) for k in range(n)]
        self._log(self.ch_joints, JointStates(timestamp=_stamp(msg.header.stamp), joints=joints), _ns(msg.header.stamp))

    def _on_odom(self, msg: Odometry):
        from foxglove.messages import Odometry as FOdom, Pose, Quaternion, Vector3

        p, q, t = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist
        out = FOdom(timestamp=_stamp(msg.header.stamp), frame_id=msg.header.frame_id, body_frame_id=msg.child_frame_id,
                    pose=Pose(position=Vector3(x=p.x, y=p.y, z=p.z),
                              orientation=Quaternion(x=q.x, y=q.y, z=q.z, w=q.w)),
                    linear_velocity=Vector3(x=t.linear.x, y=t.linear.y, z=t.linear.z),
                    angular_velocity=Vector3(x=t.angular.x, y=t.angular.y, z=t.angular.z))
        self._log(self.ch_odom, out, _ns(msg.header.stamp))

    def _transforms(self, msg):
        from foxglove.messages import FrameTransform, FrameTransforms, Quaternion, Vector3

        out = []
        for t in msg.transforms:
            tr, r = t.transform.translation, t.transform.rotation
            out.append(FrameTransform(timestamp=_stamp(t.header.stamp), parent_frame_id=t.header.frame_id,
                                      child_frame_id=t.child_frame_id, translation=Vector3(x=tr.x, y=tr.y, z=tr.z),
                                      rotation=Quaternion(x=r.x, y=r.y, z=r.z, w=r.w)))
        return FrameTransforms(transforms=out)

    def _on_tf(self, msg, channel):
        if msg.transforms:
            self._log(channel, self._transforms(msg), _ns(msg.transforms[0].header.stamp))

    def _on_tf_static(self, msg):
        for t in msg.transforms:  # as tf2's buffer keeps them: the newest per child frame
            self.static[t.child_frame_id] = t
        self._send_static()

    def _send_static(self):
        if self.static:
            self._on_tf(self._tf_message(transforms=list(self.static.values())), self.ch_tf_static)

    def _on_description(self, msg: String):
        # mesh references -> package:// URIs this server answers
        assets = {}
        description = MESH.sub(lambda m: f'filename="{self._serve_mesh(m.group(1), assets)}"', msg.data)
        self.assets, self.description = assets, description  # the asset thread sees one URDF's table
        self._log(self.ch_description, {"data": self.description})
        self.server.publish_parameter_values([__import__("foxglove").Parameter("/robot_description",
                                                                               value=self.description)])

    def _on_probe(self, name, msg: PointStamped):
        from foxglove.messages import Pose, PoseInFrame, Quaternion, Vector3

        pt = msg.point
        out = PoseInFrame(timestamp=_stamp(msg.header.stamp), frame_id=msg.header.frame_id,
                          pose=Pose(position=Vector3(x=pt.x, y=pt.y, z=pt.z), orientation=Quaternion(w=1.0)))
        self._log(self.ch_probes[name], out, _ns(msg.header.stamp))

    def _resend_latched(self):
        if self.description:
            self._log(self.ch_description, {"data": self.description})
        self._send_static()

    def _stop_servers(self):
        front, server = self.__dict__.pop("front", None), self.__dict__.pop("server", None)
        try:
            if front is not None:
                front.stop()
        finally:
            if server is not None:
                server.stop()

    def destroy_node(self):
        self._stop_servers()
        return super().destroy_node()
