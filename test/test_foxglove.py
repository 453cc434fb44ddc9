"""`--foxglove`: the twin served live over Foxglove's WebSocket protocol, under both of its
subprotocol names: foxglove.sdk.v1 (foxglove-sdk, current Foxglove) and foxglove.websocket.v1
(@foxglove/ws-protocol's FoxgloveClient, Lichtblick) — the same messages: serverInfo/advertise as
JSON, subscribe, binary MessageData frames, fetchAsset, getParameters. The clients here: a
Python one speaking the protocol over `websockets`, and the official npm client under node
(test/npm/foxglove_client.js; tools/setup.sh installs node and the package)."""
import asyncio
import contextlib
import json
import struct
import threading
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
pytest.importorskip("foxglove", reason="foxglove-sdk not installed (the [foxglove] extra)")
websockets = pytest.importorskip("websockets", reason="websockets not installed (the [test] extra)")

from bondsim_ros.ros.graph import start_graph  # noqa: E402

CHANNELS = {"/joint_states", "/tf", "/tf_static", "/odom", "/probes/base_center", "/robot_description"}


async def _client(port, seconds=3.0, subprotocol="foxglove.sdk.v1", host="127.0.0.1"):
    got = {"frames": {}, "first": {}}
    async with websockets.connect(f"ws://{host}:{port}", subprotocols=[subprotocol], max_size=None) as ws:
        assert ws.subprotocol == subprotocol
        channels = {}
        loop = asyncio.get_running_loop()
        end = loop.time() + 20.0
        while not CHANNELS <= {c["topic"] for c in channels.values()} and loop.time() < end:
            msg = json.loads(await asyncio.wait_for(ws.recv(), timeout=20.0))
            if msg["op"] == "serverInfo":
                got["server_info"] = msg
            elif msg["op"] == "advertise":
                channels.update({c["id"]: c for c in msg["channels"]})
        got["channels"] = {c["topic"]: c for c in channels.values()}
        subs = {k: cid for k, cid in enumerate(channels, start=1)}
        await ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": k, "channelId": c}
                                                                       for k, c in subs.items()]}))
        end = loop.time() + seconds
        asset_asked = False
        while loop.time() < end:
            try:
                frame = await asyncio.wait_for(ws.recv(), timeout=max(0.05, end - loop.time()))
            except asyncio.TimeoutError:
                break
            if isinstance(frame, str):
                msg = json.loads(frame)
                if msg["op"] == "parameterValues":
                    got["parameters"] = msg["parameters"]
                continue
            if frame[0] == 0x01:  # MessageData: sub id (u32), receive time (u64), payload
                sub, _t = struct.unpack_from("<IQ", frame, 1)
                topic = channels[subs[sub]]["topic"]
                got["frames"][topic] = got["frames"].get(topic, 0) + 1
                got["first"].setdefault(topic, bytes(frame[13:]))
                if topic == "/robot_description" and not asset_asked:
                    urdf = json.loads(frame[13:])["data"]
                    uri = urdf.split('filename="', 1)[1].split('"', 1)[0]
                    got["asset_uri"] = uri
                    await ws.send(json.dumps({"op": "fetchAsset", "uri": uri, "requestId": 7}))
                    # the server sets the parameter from the same URDF: ask once it has one (asked
                    # before that, the answer is an empty list)
                    await ws.send(json.dumps({"op": "getParameters", "parameterNames": ["/robot_description"],
                                              "id": "p1"}))
                    asset_asked = True
            elif frame[0] == 0x04:  # FetchAssetResponse: request id (u32), status (u8), error length (u32)
                request, status, err_len = struct.unpack_from("<IBI", frame, 1)
                got["asset"] = (request, status, bytes(frame[10 + err_len:]))
    return got


@contextlib.contextmanager
def served_graph(params, with_probes=False, extra_nodes=None):
    """The in-process graph (dynamics_node with ``params``, state_publisher) and a FoxgloveLive
    server on a free port, spun in a thread while the body talks to it as a client would.
    ``extra_nodes(ctx)``: nodes started before the server (their latched messages are old)."""
    from bondsim_ros.ros.foxglove_live import FoxgloveLive

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    graph = start_graph(params, {}, state_publisher={}, context=ctx)
    for k, node in enumerate(extra_nodes(ctx) if extra_nodes else []):
        graph.nodes[f"extra_{k}"] = node
        graph.executor.add_node(node)
    probes = graph.nodes["dynamics_node"].probes.names if with_probes else None
    live = FoxgloveLive(port=0, context=ctx, **({"probes": probes} if with_probes else {}))  # port 0: a free one
    graph.nodes["foxglove_live"] = live
    graph.executor.add_node(live)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            graph.executor.spin_once(timeout_sec=0.02)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        yield live
    finally:
        stop.set()
        spinner.join(timeout=5)
        graph.shutdown()
        rclpy.try_shutdown(context=ctx)


def test_foxglove_client_receives_every_channel(tmp_path):
    with served_graph({"reference": "rose"}) as live:
        got = asyncio.run(_client(live.port))
    assert set(got["channels"]) >= CHANNELS
    assert got["channels"]["/joint_states"]["schemaName"] == "foxglove.JointStates"
    assert got["channels"]["/tf"]["schemaName"] == "foxglove.FrameTransforms"
    for topic in CHANNELS:
        assert got["frames"].get(topic, 0) > 0, f"no {topic} messages (got {got['frames']})"
    assert got["frames"]["/joint_states"] > 30, "joint states at the twin's rate (33 Hz) for 3 s"
    assert b"wheel1_axle" in got["first"]["/joint_states"]
    assert b"base_footprint" in got["first"]["/tf"] or b"base_footprint" in got["first"]["/odom"]
    urdf = json.loads(got["first"]["/robot_description"])["data"]
    assert urdf.lstrip().startswith("<") and "<robot" in urdf
    # the 3-D panel fetches the meshes from this server
    assert got["asset_uri"].startswith("package://bondsim_ros/urdf/")
    request, status, data = got["asset"]
    assert request == 7 and status == 0 and len(data) > 84, "mesh asset not served"
    assert got["parameters"][0]["name"] == "/robot_description" and "<robot" in got["parameters"][0]["value"]


def test_a_client_gets_the_static_transforms_of_every_latched_publisher():
    """sensor_node's /tf_static (the scanner on base_link) beside state_publisher's (the robot):
    at depth 1 the server kept one of the two latched messages, and the client's 3-D panel had no
    base_footprint -> base_link."""
    from geometry_msgs.msg import TransformStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from bondsim_ros.ros.messages import tf_message

    def sensors(ctx):
        node = rclpy.create_node("sensor_stand_in", context=ctx)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
        t = TransformStamped()
        t.header.frame_id, t.child_frame_id = "base_link", "laser_link"
        t.transform.rotation.w = 1.0
        node.create_publisher(tf_message(), "/tf_static", latched).publish(tf_message()(transforms=[t]))
        return [node]

    with served_graph({"reference": "rose"}, extra_nodes=sensors) as live:
        time.sleep(1.0)  # the server's latched subscription has both publishers' messages
        got = asyncio.run(_client(live.port, seconds=2.5))
    static = got["first"]["/tf_static"]
    assert b"laser_link" in static and b"base_footprint" in static, static


def test_foxglove_assets_stay_inside_the_urdf_folder():
    from bondsim_ros.ros.foxglove_live import FoxgloveLive

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    live = FoxgloveLive(port=0, context=ctx)
    try:
        assert live._asset("package://bondsim_ros/urdf/../../../etc/passwd") is None
        assert live._asset("file:///etc/passwd") is None
        assert live._asset("package://bondsim_ros/urdf/robotino.urdf").startswith(b"<")
    finally:
        live.destroy_node()
        rclpy.try_shutdown(context=ctx)


def test_up_foxglove_bad_port_is_a_usage_error(capsys):
    from bondsim_ros.cli import main

    assert main(["up", "--foxglove", "70000", "--duration", "1"]) == 2
    assert "--foxglove: port 70000" in capsys.readouterr().err


def test_up_foxglove_serves_the_running_graph(tmp_path):
    """The command as a user runs it: `bondsim-ros up --foxglove PORT`."""
    import os
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    with socket.socket() as s:  # a free port
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "bondsim_ros.cli", "up", "--foxglove", str(port),
                             "--duration", "40"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end and proc.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        assert proc.poll() is None, proc.stdout.read()
        got = asyncio.run(_client(port, seconds=2.0))
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert got["frames"].get("/joint_states", 0) > 20 and got["frames"].get("/tf", 0) > 20, got["frames"]
    assert f"Foxglove at ws://localhost:{port}" in out


def test_demo_record_serves_foxglove_while_recording(tmp_path):
    """`bondsim-ros demo --foxglove`: the recording run serves the same channels."""
    import socket
    import time

    from bondsim_ros.ros.demo import record

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = {}
    runner = threading.Thread(target=lambda: result.update(record(8.0, tmp_path / "bag", foxglove_port=port)),
                              daemon=True)
    runner.start()
    end = time.monotonic() + 30
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    got = asyncio.run(_client(port, seconds=2.0))
    runner.join(timeout=60)
    assert result.get("frames", 0) > 0, "the recording did not finish"
    assert got["frames"].get("/joint_states", 0) > 20 and got["frames"].get("/probes/base_center", 0) > 20


async def _fetch_every_mesh(port):
    """A Foxglove client as its 3-D panel loads a URDF: the /robot_description message, then a
    fetchAsset for every mesh URI in it; returns (URDF, {uri: (status, bytes or error)})."""
    import re

    # the name Lichtblick and @foxglove/ws-protocol's client offer (the other tests: foxglove.sdk.v1)
    async with websockets.connect(f"ws://127.0.0.1:{port}", subprotocols=["foxglove.websocket.v1"],
                                  max_size=None) as ws:
        assert ws.subprotocol == "foxglove.websocket.v1"
        loop = asyncio.get_running_loop()
        end = loop.time() + 30.0
        channel, urdf, capabilities = None, None, []
        while urdf is None and loop.time() < end:
            frame = await asyncio.wait_for(ws.recv(), timeout=30.0)
            if isinstance(frame, str):
                msg = json.loads(frame)
                if msg["op"] == "serverInfo":
                    capabilities = msg["capabilities"]
                elif msg["op"] == "advertise" and channel is None:
                    channel = next((c["id"] for c in msg["channels"] if c["topic"] == "/robot_description"), None)
                    if channel is not None:
                        await ws.send(json.dumps({"op": "subscribe",
                                                  "subscriptions": [{"id": 1, "channelId": channel}]}))
            elif frame[0] == 0x01:
                urdf = json.loads(frame[13:])["data"]
        assert urdf, "no /robot_description"
        assert "assets" in capabilities, capabilities  # else Foxglove never asks the server
        uris = sorted(set(re.findall(r'filename="([^"]+)"', urdf)))
        for k, uri in enumerate(uris, start=100):
            await ws.send(json.dumps({"op": "fetchAsset", "uri": uri, "requestId": k}))
        answers = {}
        while len(answers) < len(uris) and loop.time() < end + 30:
            frame = await asyncio.wait_for(ws.recv(), timeout=30.0)
            if isinstance(frame, bytes) and frame[0] == 0x04:
                request, status, err_len = struct.unpack_from("<IBI", frame, 1)
                answers[uris[request - 100]] = (status, bytes(frame[10 + err_len:]) if status == 0
                                                else frame[10:10 + err_len].decode())
    return urdf, answers


def test_foxglove_serves_the_meshes_of_a_generated_urdf():
    """omni5dpo's URDF is made by the mechanism layer, its meshes referenced by file:// URIs that a
    Foxglove app in a browser or on another computer cannot open: the client gets package://
    URIs instead and fetches each mesh from the server, byte for byte the generated STL."""
    import re
    from urllib.parse import unquote, urlparse

    from bondsim_ros.mechanism.urdf import robot_description
    from bondsim_ros.robots import load_robot

    original = robot_description(load_robot("omni5dpo").mechanism)  # what state_publisher publishes
    local = re.findall(r'filename="([^"]+)"', original)
    assert local and all(u.startswith("file://") for u in local)
    with served_graph({"model": "omni5dpo", "reference": "builtin"}, with_probes=True) as live:
        urdf, answers = asyncio.run(_fetch_every_mesh(live.port))
    served = re.findall(r'filename="([^"]+)"', urdf)
    assert len(served) == len(local) and all(u.startswith("package://") for u in served), served[:3]
    for ref, uri in zip(local, served):  # same meshes, same order
        status, data = answers[uri]
        assert status == 0, f"{uri}: {data}"
        expected = open(unquote(urlparse(ref).path), "rb").read()
        assert data == expected, f"{uri}: {len(data)} bytes served, {len(expected)} in {ref}"
        (n,) = struct.unpack_from("<I", data, 80)  # binary STL: header, count, 50 bytes a triangle
        assert n > 0 and len(data) == 84 + 50 * n


def test_foxglove_serves_only_what_the_urdf_references(tmp_path):
    """A client cannot read other files through the generated-mesh URIs."""
    from std_msgs.msg import String

    from bondsim_ros.ros.foxglove_live import FoxgloveLive

    mesh = tmp_path / "part.stl"
    mesh.write_bytes(b"solid x\nendsolid x\n")
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    live = FoxgloveLive(port=0, context=ctx)
    try:
        live._on_description(String(data=f'<robot name="r"><link name="a"><visual><geometry>'
                                         f'<mesh filename="{mesh.as_uri()}"/></geometry></visual></link></robot>'))
        uri = live.description.split('filename="', 1)[1].split('"', 1)[0]
        assert uri.startswith("package://bondsim_ros/files/") and live._asset(uri) == mesh.read_bytes()
        assert live._asset("package://bondsim_ros/files/etc/passwd") is None
        assert live._asset("package://bondsim_ros/files" + str(tmp_path / "other.stl")) is None
        assert live._asset(uri.replace("part.stl", "../part.stl")) is None
    finally:
        live.destroy_node()
        rclpy.try_shutdown(context=ctx)


NPM = Path(__file__).resolve().parent / "npm"  # test/npm: package.json, lock file, the client script


def _node() -> str:
    """node, with the npm client installed in test/npm, or a skip (a failure under BONDSIM_NO_SKIP=1)."""
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed (tools/setup.sh installs nodejs and npm)")
    if not (NPM / "node_modules" / "@foxglove" / "ws-protocol").is_dir():
        pytest.skip("@foxglove/ws-protocol not installed in test/npm (run tools/setup.sh)")
    return node


def _node_client(node, port, *extra, timeout=40.0):
    """Run test/npm/foxglove_client.js (the official @foxglove/ws-protocol FoxgloveClient under
    node) against ``port``; returns its JSON summary and exit status."""
    import subprocess

    proc = subprocess.run([node, str(NPM / "foxglove_client.js"), f"ws://127.0.0.1:{port}", "--timeout", "30", *extra],
                          capture_output=True, text=True, timeout=timeout, cwd=NPM)
    assert proc.stdout.strip(), f"node client printed nothing (exit {proc.returncode}): {proc.stderr}"
    assert len(proc.stdout.splitlines()) == 1, proc.stdout[:300]
    return json.loads(proc.stdout), proc.returncode


def test_official_npm_client_gets_every_channel_and_mesh():
    """Foxglove's own client library (@foxglove/ws-protocol 0.8.0, the one Lichtblick and the
    ws-protocol examples use), offering its default subprotocol foxglove.websocket.v1, and the
    same client offering foxglove.sdk.v1: each gets every channel in Foxglove's schemas, the
    URDF as topic and parameter, which it cannot set, and every mesh the URDF names byte for
    byte."""
    import base64
    import hashlib
    import re

    from bondsim_ros.ros.foxglove_live import _urdf_root

    node = _node()
    with served_graph({"reference": "rose"}) as live:
        runs = {name: _node_client(node, live.port, *extra) for name, extra in
                (("foxglove.websocket.v1", ()), ("foxglove.sdk.v1", ("--subprotocol", "foxglove.sdk.v1")))}
    for offered, (got, status) in runs.items():
        assert status == 0 and got["complete"] and not got["errors"], (offered, got["errors"])
        assert got["offered"] == got["subprotocol"] == offered
        assert "assets" in got["serverInfo"]["capabilities"]
        channels = got["channels"]
        assert set(channels) >= CHANNELS, sorted(channels)
        assert channels["/joint_states"]["schemaName"] == "foxglove.JointStates"
        assert channels["/tf"]["schemaName"] == channels["/tf_static"]["schemaName"] == "foxglove.FrameTransforms"
        assert channels["/odom"]["schemaName"] == "foxglove.Odometry"
        assert channels["/probes/base_center"]["schemaName"] == "foxglove.PoseInFrame"
        assert all(c["messages"] > 0 for c in channels.values()), {t: c["messages"] for t, c in channels.items()}
        assert b"wheel1_axle" in base64.b64decode(channels["/joint_states"]["first"])
        urdf = json.loads(base64.b64decode(channels["/robot_description"]["first"]))["data"]
        assert got["parameters"] == [{"name": "/robot_description", "length": len(urdf)}]
        # read-only: a set is answered with the URDF the server still holds (it echoed the "x")
        assert got["setAnswer"] == [{"name": "/robot_description", "length": len(urdf)}]
        uris = set(re.findall(r'filename="([^"]+)"', urdf))
        assert uris and set(got["assets"]) == uris
        for uri, answer in got["assets"].items():
            assert uri.startswith("package://bondsim_ros/urdf/") and answer["status"] == 0, (uri, answer)
            mesh = (_urdf_root() / uri[len("package://bondsim_ros/urdf/"):]).read_bytes()
            assert answer["bytes"] == len(mesh) and answer["sha256"] == hashlib.sha256(mesh).hexdigest(), uri


@pytest.mark.parametrize("command", [["up", "--duration", "30"], ["demo", "--duration", "5", "--no-video", "-q"]])
def test_busy_port_is_one_clear_error(tmp_path, command):
    """`up`/`demo --foxglove PORT` with PORT taken by another program: one line naming the port,
    exit status 2, no traceback, nothing started or written."""
    import os
    import socket
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "demo"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        extra = ["--out", str(out)] if command[0] == "demo" else []
        proc = subprocess.run([sys.executable, "-m", "bondsim_ros.cli", *command, *extra, "--foxglove", str(port)],
                              env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr
    assert (f"bondsim-ros {command[0]}: error: --foxglove: cannot serve on 127.0.0.1:{port}: "
            f"Address already in use") in proc.stderr, proc.stderr
    assert not out.exists()


def test_foxglove_node_on_a_taken_port_raises_one_error_and_leaves_no_node():
    """The port taken after the command's check (a race): FoxgloveLive raises the error the
    command turns into its message, and the context shuts down cleanly (no half-made node)."""
    import socket

    from bondsim_ros.ros.foxglove_live import FoxgloveLive, FoxgloveServeError

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            port = busy.getsockname()[1]
            with pytest.raises(FoxgloveServeError, match=f"cannot serve on 127.0.0.1:{port}: Address already in use"):
                FoxgloveLive(port=port, context=ctx)
    finally:
        rclpy.try_shutdown(context=ctx)  # raised AttributeError (no .server) on a half-made node


def test_foxglove_address_is_where_it_listens():
    """--foxglove-address: the server listens on that address only (127.0.0.2, another loopback
    address, here), and says so."""
    import socket

    from bondsim_ros.ros.foxglove_live import FoxgloveLive

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    live = FoxgloveLive(host="127.0.0.2", port=0, context=ctx)
    try:
        assert live.url == f"ws://127.0.0.2:{live.port}"

        async def hello(host):
            async with websockets.connect(f"ws://{host}:{live.port}", subprotocols=["foxglove.websocket.v1"]) as ws:
                return json.loads(await asyncio.wait_for(ws.recv(), timeout=10))["op"]

        assert asyncio.run(hello("127.0.0.2")) == "serverInfo"
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", live.port)) != 0, "listening on 127.0.0.1 too"
    finally:
        live.destroy_node()
        rclpy.try_shutdown(context=ctx)


def test_foxglove_address_not_of_this_computer_is_a_usage_error(capsys):
    from bondsim_ros.cli import main

    assert main(["up", "--foxglove", "--foxglove-address", "192.0.2.1", "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert "--foxglove: cannot serve on 192.0.2.1:8765" in err and "not an address of this computer" in err, err
    assert main(["up", "--foxglove-address", "0.0.0.0", "--duration", "1"]) == 2  # without --foxglove
    assert "--foxglove-address needs --foxglove" in capsys.readouterr().err


# as `bondsim-ros up` serves: a process of its own where nobody set up logging, the public
# port's relay in front of the sdk server; a client that publishes without the capability (the
# twin has no clientPublish) and sends a frame that is no JSON
CLIENT_ON_THE_RELAY = """
import sys, time
import foxglove
from websockets.sync.client import connect
from bondsim_ros.ros.foxglove_live import _Front, quiet_repeats

quiet_repeats()
server = foxglove.start_server(name="t", host="127.0.0.1", port=0, context=foxglove.Context())
front = _Front("127.0.0.1", 0, server.port)
with connect(f"ws://127.0.0.1:{front.port}", subprotocols=["foxglove.sdk.v1"], close_timeout=1) as ws:
    ws.recv()  # serverInfo
    for _ in range(40):  # binary MessageData (opcode 1) on client channel 1, never advertised
        ws.send(bytes([0x01, 1, 0, 0, 0]) + b"{}")
    ws.send("not json")
    time.sleep(0.5)
    print(ws.local_address[1])
front.stop()
server.stop()
"""


def test_the_console_is_not_flooded_and_names_a_relayed_client_by_its_own_address():
    """The sdk logs one line per message a client publishes on a channel it may not advertise: at
    Foxglove's teleop rate, 20 lines a second on the twin's console. Each repeated line goes
    through once per 10 s. Clients reach the sdk server through the relay, so its log named
    every one of them by the relay's loopback port ("Invalid message from 127.0.0.1:38766"):
    with --foxglove-address 0.0.0.0 nobody could tell which client sent it. The line names the
    client's own address."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", CLIENT_ON_THE_RELAY], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    own = int(proc.stdout.split()[-1])
    flood = [ln for ln in proc.stderr.splitlines() if "unknown channel" in ln]
    assert len(flood) == 1 and flood[0].startswith("foxglove."), flood
    invalid = [ln for ln in proc.stderr.splitlines() if "Invalid message" in ln]
    assert invalid and all(f"127.0.0.1:{own} (relayed)" in ln for ln in invalid), proc.stderr
