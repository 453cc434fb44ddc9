"""``bondsim-ros demo``: the paper's rose case through the real node graph, recorded and plotted.

dynamics_node -> /joint_states, /odom, /tf -> state_publisher (/tf, /tf_static,
/robot_description) and probe_node (/probes/base_center) -> back to dynamics_node
(probe_error/*). A BagRecorder in the same process writes every topic to a rosbag2 MCAP bag;
afterwards the bag (not the in-memory model) is read back for the plots and the video, so
what the user sees is what went over the wire.
"""
from __future__ import annotations

from bondsim_ros.msgutil import stamp_ns, yaw
from bondsim_ros.plotting import save_figure

import contextlib
import math
import os
import shutil
import time
from pathlib import Path

import numpy as np

# Fewest frames a demo run must publish for its bag to hold a trajectory: at real-time factor
# rtf a frame (1/publish_rate of wall time) is rtf/publish_rate simulated seconds, so a short
# run at a large factor publishes none (and had no /odom to plot)
MIN_DEMO_FRAMES = 10


class DemoOptionError(ValueError):
    """An option of run_demo out of range (the command line reports it as a usage error)."""


# topics the bag holds (fnmatch patterns; /probes/* picks up every probe the mechanism has)
DEMO_TOPICS = ["/joint_states", "/tf", "/tf_static", "/odom", "/robot_description", "/reference_pose",
               "/probes/*", "/probe_error/*", "/probe_error_untimed/*", "/motor_states", "/diagnostics",
               "/scan", "/irsensor_scan", "/bumper"]


def record(duration: float, bag_dir: Path, rtf: float = 1.0, progress=None, params=None,
           domain_id: int | None = None, foxglove_port: int | None = None,
           foxglove_address: str = "127.0.0.1", sensor_map: str | None = None) -> dict:
    """Run the graph for ``duration`` simulated seconds and record it; returns run statistics.
    ``domain_id``: the ROS domain of the run (None: ROS_DOMAIN_ID, else 0); ``foxglove_port``:
    also serve the run live to Foxglove (foxglove_live.py) on ``foxglove_address``;
    ``sensor_map``: a mobile base also runs sensor_node against this Nav2 map (None: none)."""
    with recording(duration, bag_dir, rtf=rtf, progress=progress, params=params, domain_id=domain_id,
                   foxglove_port=foxglove_port, foxglove_address=foxglove_address, sensor_map=sensor_map) as stats:
        return stats


@contextlib.contextmanager
def recording(duration: float, bag_dir: Path, rtf: float = 1.0, progress=None, params=None,
              domain_id: int | None = None, foxglove_port: int | None = None,
              foxglove_address: str = "127.0.0.1", sensor_map: str | None = None, bound_teardown: bool = False):
    """record() as a context: its statistics once the bag is closed, the graph stopped but not yet
    destroyed; leaving the block destroys it. What the run produced can so be written before the
    middleware's teardown, which Fast DDS has held on a loaded machine; ``bound_teardown`` (a
    program run only: it may end the process) bounds that teardown (_env.tear_down)."""
    import rclpy

    from ._env import ensure_local_discovery, init_rclpy, spin_until_signal, start_up_heap_frozen, tear_down
    from .bag import BagRecorder
    from .graph import start_graph

    dyn, probe, state = params or ({}, {}, {})
    dyn = {**dyn, "reference": "rose", "real_time_factor": float(rtf)}
    ensure_local_discovery()
    context = rclpy.Context()
    # Ctrl-C: KeyboardInterrupt out of the spin loop, then the graph is destroyed before the context
    init_rclpy(context=context, **({} if domain_id is None else {"domain_id": int(domain_id)}))
    graph = None
    try:
        from rclpy.exceptions import NameValidationException, ParameterException

        try:
            graph = start_graph(dyn, probe, state_publisher=state, context=context)
        except (ValueError, TypeError, ParameterException, NameValidationException) as exc:
            # a bad parameter or model file (the nodes name it), before anything is recorded
            raise DemoOptionError(str(exc)) from None
        dn = graph.nodes["dynamics_node"]
        if sensor_map is not None and dn.twin.state().pose is not None:
            from .graph import robot_sensor_layout
            from .sensor_node import SensorNode

            # the robot's own sensor layout; reliable scans: the bag should hold every scan (best
            # effort is for Nav2's costmaps); no bumper_stop: the rose path takes no /cmd_vel to stop
            graph.nodes["sensor_node"] = SensorNode(
                overrides={**(robot_sensor_layout(dn.p["model"]) or {}), "map": sensor_map, "scan_qos": "reliable",
                           "frame_prefix": dn.p["frame_prefix"]},
                context=context)
            graph.executor.add_node(graph.nodes["sensor_node"])
        # the model's own output topics (a YAML model's outputs:, the outputs parameter) too
        outputs = sorted(dn.resolve_topic_name(t) for t in dn.model_io.outputs)
        recorder = BagRecorder(bag_dir, DEMO_TOPICS + outputs, context=context)
        graph.executor.add_node(recorder)
        graph.nodes["bag_recorder"] = recorder
        if foxglove_port is not None:
            from .foxglove_live import FoxgloveLive

            graph.nodes["foxglove_live"] = FoxgloveLive(port=foxglove_port, host=foxglove_address, context=context,
                                                        probes=graph.nodes["dynamics_node"].probes.names)
            graph.executor.add_node(graph.nodes["foxglove_live"])
        # wait until the recorder subscribed to every publishing topic, then start from t = 0
        state = dn.twin.state()
        need = {"/joint_states", "/tf_static", "/robot_description"}
        need |= {f"/probes/{n}" for n in dn.probes.names} | {f"/probe_error/{n}" for n in dn.probes.names}
        if state.pose is not None:
            need |= {"/tf", "/odom"}
        if state.reference is not None:
            need.add("/reference_pose")
        if "sensor_node" in graph.nodes:
            need |= {"/scan", "/bumper"}
        need |= set(outputs)
        if not graph.spin_until(lambda: need <= set(recorder.connections), timeout=10.0):
            missing = sorted(need - set(recorder.connections))
            raise RuntimeError(f"demo: topics never appeared: {', '.join(missing)}")
        with start_up_heap_frozen():
            dn.restart()
            skipped0 = dn.frame_clock.skipped_frames
            wall = duration / rtf
            tic = time.monotonic()
            # a signal only stops the spin: one raised inside the recorder's write would leave the
            # bag unreadable
            why = spin_until_signal(graph.executor, context, duration=wall,
                                    on_tick=(lambda: progress(dn.twin.t, dn)) if progress else None)
        if why in ("SIGINT", "SIGTERM"):  # what was recorded stays, a readable bag
            from bondsim_ros.cliargs import Terminated

            recorder.close()
            stopped = Terminated() if why == "SIGTERM" else KeyboardInterrupt()
            stopped.bag_until = dn.twin.t
            raise stopped
        stats = {"wall_s": time.monotonic() - tic, "frames": dn.frame_clock.frames, "overruns": dn.frame_clock.overruns,
                 "skipped_frames": dn.frame_clock.skipped_frames - skipped0,
                 "max_lag_ms": dn.frame_clock.max_lag * 1e3, "counts": dict(recorder.counts),
                 "name": dn.twin.name, "mechanism": str(dn.twin.mechanism)}
        recorder.close()
        yield stats
    finally:
        from .foxglove_live import FoxgloveServeError

        tear_down(graph, context, bound_as="bondsim-ros demo" if bound_teardown else None,
                  usage_errors=(DemoOptionError, FileExistsError, FoxgloveServeError))


def bag_to_series(bag_dir: Path, rtf: float = 1.0) -> dict:
    """The recorded topics as arrays on one simulated-time axis (from the message stamps)."""
    from .bag import read_bag

    msgs = read_bag(bag_dir)
    odom = msgs.get("/odom", [])
    js = msgs.get("/joint_states", [])
    if not odom and not js:
        raise RuntimeError(f"{bag_dir}: no /odom or /joint_states messages recorded")
    t0 = stamp_ns((odom or js)[0][1].header.stamp)  # a fixed-base robot has no /odom

    def t_of(header):
        return (stamp_ns(header.stamp) - t0) * 1e-9 * rtf

    out = {"odom_t": np.array([t_of(m.header) for _, m in odom]),
           "x": np.array([m.pose.pose.position.x for _, m in odom]),
           "y": np.array([m.pose.pose.position.y for _, m in odom]),
           "phi": np.unwrap([yaw(m.pose.pose.orientation) for _, m in odom])}
    ref = {stamp_ns(m.header.stamp): m for _, m in msgs.get("/reference_pose", [])}
    keep = [k for k, (_, m) in enumerate(odom) if stamp_ns(m.header.stamp) in ref]  # pair by equal stamps
    if keep:
        r = [ref[stamp_ns(odom[k][1].header.stamp)] for k in keep]
        out["ref_t"] = out["odom_t"][keep]
        out["x_ref"] = np.array([m.pose.position.x for m in r])
        out["y_ref"] = np.array([m.pose.position.y for m in r])
        out["phi_ref"] = np.unwrap([yaw(m.pose.orientation) for m in r])
        out["ref_idx"] = np.array(keep)
    out["joint_names"] = list(js[0][1].name) if js else []
    out["joint_t"] = np.array([t_of(m.header) for _, m in js])
    out["joint_pos"] = np.array([m.position for _, m in js]) if js else np.zeros((0, 0))
    out["joint_vel"] = np.array([m.velocity for _, m in js]) if js else np.zeros((0, 0))
    motors = msgs.get("/motor_states", [])
    out["motor_t"] = np.array([t_of(m.header) for _, m in motors])
    out["currents"] = np.array([m.effort for _, m in motors]) if motors else np.zeros((0, 0))
    for kind in ("probe_error", "probe_error_untimed"):
        for topic, items in msgs.items():
            if topic.startswith(f"/{kind}/"):
                out[f"{kind}:{topic.rsplit('/', 1)[1]}"] = np.array([m.data for _, m in items])
    out.update(_scan_series(msgs, odom, t_of))
    out["log_times"] = {topic: np.array([ns for ns, _ in items]) for topic, items in msgs.items()}
    return out


def _laser_mount(msgs: dict, frame: str) -> tuple:
    """(x, y, yaw) of ``frame`` in its parent, from the recorded /tf_static."""
    for _, m in msgs.get("/tf_static", []):
        for tf in m.transforms:
            if tf.child_frame_id == frame:
                t = tf.transform
                return t.translation.x, t.translation.y, yaw(t.rotation)
    return None


def _scan_series(msgs: dict, odom: list, t_of) -> dict:
    """The recorded /scan as hit points in the odom frame: each scan carries the stamp of the
    /odom pose it was cast from, and the scanner's mount comes from /tf_static, so the points are
    rebuilt from the wire alone. Beams without a return (range_max or inf) are left out."""
    scans = msgs.get("/scan", [])
    if not scans or not odom:
        return {}
    mount = _laser_mount(msgs, scans[0][1].header.frame_id)
    if mount is None:
        return {}
    poses = {stamp_ns(m.header.stamp): m.pose.pose for _, m in odom}
    t, points, origins = [], [], []
    for _, m in scans:
        pose = poses.get(stamp_ns(m.header.stamp))
        if pose is None:
            continue
        r = np.asarray(m.ranges, float)
        a = m.angle_min + m.angle_increment * np.arange(len(r))
        hit = np.isfinite(r) & (r < m.range_max) & (r >= m.range_min)
        bx, by, bphi = pose.position.x, pose.position.y, yaw(pose.orientation)
        lx = bx + math.cos(bphi) * mount[0] - math.sin(bphi) * mount[1]
        ly = by + math.sin(bphi) * mount[0] + math.cos(bphi) * mount[1]
        heading = bphi + mount[2] + a[hit]
        points.append(np.column_stack([lx + r[hit] * np.cos(heading), ly + r[hit] * np.sin(heading)]))
        origins.append((lx, ly))
        t.append(t_of(m.header))
    if not t:
        return {}
    bumper = msgs.get("/bumper", [])
    return {"scan_t": np.array(t), "scan_points": points, "scan_origin": np.array(origins),
            "scan_beams": len(scans[0][1].ranges), "bumper_contacts": sum(bool(m.data) for _, m in bumper)}


def map_image(map_yaml) -> tuple:
    """(image, extent) of a Nav2 map for imshow: occupied black, free white, unknown grey."""
    from bondsim_ros.sensors import load_map

    grid = load_map(map_yaml)
    shade = np.where(grid.data < 0, 0.75, 1.0 - np.clip(grid.data, 0, 100) / 100.0)
    x0, y0, _ = grid.origin  # a map's yaw is drawn unrotated, as Nav2's costmaps read it
    extent = (x0, x0 + grid.width * grid.resolution, y0, y0 + grid.height * grid.resolution)
    return shade, extent


def plot_series(s: dict, out_dir: Path, map_yaml=None) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []

    def save(fig, name):
        written.append(Path(save_figure(fig, out_dir / name)))

    if len(s["x"]):  # a mobile base
        fig, ax = plt.subplots(figsize=(6, 6))
        if "x_ref" in s:
            ax.plot(s["x_ref"], s["y_ref"], "k--", lw=1, label="rose reference")
        ax.plot(s["x"], s["y"], lw=1.6, label="twin (/odom)")
        ax.set_aspect("equal")
        ax.set(xlabel="X [m]", ylabel="Y [m]", title="twin: path from the recorded /odom")
        ax.legend(loc="upper right")
        ax.grid(alpha=0.3)
        save(fig, "path.png")

    if "x_ref" in s:
        t = s["ref_t"]
        late = t >= min(2.0, t[-1] / 2)  # after the start-up transient, as the paper's Fig. 34
        fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
        for a, (k, unit) in zip(axes, (("x", "m"), ("y", "m"), ("phi", "rad"))):
            err = s[k][s["ref_idx"]] - s[f"{k}_ref"]
            a.plot(t[late], err[late], lw=1)
            a.set_ylabel(f"{k} - {k}_ref [{unit}]")
            a.grid(alpha=0.3)
            a.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        axes[-1].set_xlabel("t [s]")
        axes[0].set_title("Tracking errors from the recorded topics (cf. Damic & Cohodar Husic 2025, Fig. 34)")
        save(fig, "tracking_errors.png")

    if "scan_t" in s:
        fig, ax = plt.subplots(figsize=(6.4, 6))
        if map_yaml is not None:
            image, extent = map_image(map_yaml)
            ax.imshow(image, cmap="gray", vmin=0, vmax=1, origin="lower", extent=extent, alpha=0.35)
        every = max(1, len(s["scan_t"]) // 150)
        cloud = np.concatenate(s["scan_points"][::every])
        ax.plot(cloud[:, 0], cloud[:, 1], ",", color="0.45")
        ax.plot(s["x"], s["y"], lw=1, color="tab:red", label="path (/odom)")
        picks = np.linspace(0, len(s["scan_t"]) - 1, 4).astype(int)
        for k, color in zip(picks, ("tab:blue", "tab:green", "tab:orange", "tab:purple")):
            pts, (ox, oy) = s["scan_points"][k], s["scan_origin"][k]
            ax.plot(pts[:, 0], pts[:, 1], ".", ms=2, color=color, label=f"scan at t = {s['scan_t'][k]:.1f} s")
            ax.plot([ox], [oy], "o", ms=5, color=color)
        ax.set_aspect("equal")
        ax.set(xlabel="X [m]", ylabel="Y [m]",
               title=f"/scan from the bag: {len(s['scan_t'])} scans of {s['scan_beams']} beams")
        ax.legend(loc="upper right", fontsize=7)
        save(fig, "scan.png")

    names = s["joint_names"]
    wheels = [f"wheel{i}_axle" for i in (1, 2, 3) if f"wheel{i}_axle" in names]
    if names and not wheels:  # any other robot: its joints as published
        fig, ax = plt.subplots(figsize=(8, 4))
        for k, n in enumerate(names):
            ax.plot(s["joint_t"], s["joint_pos"][:, k], lw=1, label=n)
        ax.set(xlabel="t [s]", ylabel="joint position [rad or m]", title="Joint states from the recorded topics")
        ax.legend(loc="upper right", fontsize=7, ncol=max(1, len(names) // 10))
        ax.grid(alpha=0.3)
        save(fig, "joints.png")
    if wheels:
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        for i in (1, 2, 3):
            col = names.index(f"wheel{i}_axle") if f"wheel{i}_axle" in names else None
            if col is not None:
                a1.plot(s["joint_t"], s["joint_vel"][:, col], lw=1, label=f"wheel {i}")
        a1.set_ylabel("wheel speed [rad/s]")
        a1.legend(loc="upper right", fontsize=8)
        a1.grid(alpha=0.3)
        for k in range(s["currents"].shape[1] if s["currents"].size else 0):
            a2.plot(s["motor_t"], s["currents"][:, k], lw=1, label=f"motor {k + 1}")
        a2.set(xlabel="t [s]", ylabel="armature current [A]")
        a2.legend(loc="upper right", fontsize=8)
        a2.grid(alpha=0.3)
        save(fig, "wheels.png")

    probes = [k.split(":", 1)[1] for k in s if k.startswith("probe_error:")]
    if probes:
        fig, ax = plt.subplots(figsize=(8, 3.6))
        for name in probes:
            for kind, style in (("probe_error_untimed", "-"), ("probe_error", "-")):
                v = s.get(f"{kind}:{name}")
                if v is not None and len(v):
                    label = "latest model state (the paper's pipe)" if kind.endswith("untimed") else "equal stamps"
                    if not np.any(v):
                        label += " (exactly 0, drawn at 1e-16)"
                    ax.semilogy(np.arange(len(v)), np.maximum(v, 1e-16), style, lw=1, label=f"{name}: {label}")
        ax.set(xlabel="probe message (one per joint-state frame)", ylabel="|probe - model| [m]",
               title="Probe points returned through TF vs the model's own position")
        ax.legend(loc="center right", fontsize=8)
        ax.grid(alpha=0.3, which="both")
        save(fig, "probe_error.png")
    return written


def scan_inset(s: dict, map_yaml=None) -> ScanInset:
    """The video's inset: the map, the path so far and the latest recorded scan at time t."""
    return ScanInset(map_image(map_yaml) if map_yaml is not None else None, s["odom_t"], s["x"], s["y"],
                     s["scan_t"], s["scan_points"], s["scan_origin"])


class ScanInset:
    """``inset(ax, t)`` for render(): arrays only, so that the processes drawing the frames get
    it pickled."""

    def __init__(self, image, odom_t, x, y, scan_t, scan_points, scan_origin):
        self.image, self.odom_t, self.x, self.y = image, odom_t, x, y
        self.scan_t, self.scan_points, self.scan_origin = scan_t, scan_points, scan_origin

    def __call__(self, ax, t):
        image = self.image
        if image is not None:
            ax.imshow(image[0], cmap="gray", vmin=0, vmax=1, origin="lower", extent=image[1], alpha=0.5)
        done = self.odom_t <= t + 1e-9
        ax.plot(self.x[done], self.y[done], lw=0.8, color="tab:red")
        k = int(np.searchsorted(self.scan_t, t + 1e-9)) - 1
        if k >= 0:
            pts, (ox, oy) = self.scan_points[k], self.scan_origin[k]
            # the area the beams swept (hits are in beam order), then the hits themselves
            ax.fill(np.r_[ox, pts[:, 0]], np.r_[oy, pts[:, 1]], color="tab:blue", alpha=0.2, lw=0)
            ax.plot(pts[:, 0], pts[:, 1], ".", ms=1.5, color="tab:blue")
            ax.plot([ox], [oy], "o", ms=3, color="tab:blue")
        if image is not None:
            ax.set_xlim(image[1][:2])
            ax.set_ylim(image[1][2:])
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title("/scan", fontsize=9)


def joints_csv(s: dict, path: Path) -> Path:
    """Joint trajectory in the CSV layout of ``bondsim-ros simulate`` (t, x, y, phi, joints...);
    joint states and odometry carry equal stamps, so the pose is looked up by time."""
    if not len(s["odom_t"]):  # a fixed base: t and the joints
        header = ",".join(["t"] + s["joint_names"])
        np.savetxt(path, np.column_stack([s["joint_t"], s["joint_pos"]]), delimiter=",", header=header,
                   comments="", fmt="%.9g")
        return path
    k = np.searchsorted(s["odom_t"], s["joint_t"] - 1e-9).clip(0, len(s["odom_t"]) - 1)
    rows = np.column_stack([s["joint_t"], s["x"][k], s["y"][k], s["phi"][k], s["joint_pos"]])
    header = ",".join(["t", "x", "y", "phi"] + s["joint_names"])
    np.savetxt(path, rows, delimiter=",", header=header, comments="", fmt="%.9g")
    return path


def private_domain() -> int:
    """ROS_DOMAIN_ID if the user set one, else a random domain of this run's own, so no other
    ROS 2 traffic on the machine (another twin, a test run) mixes into the recording: one of 1-101,
    the domains ROS 2's documentation calls safe (About Domain ID: above 101 DDS's ports fall in
    Linux's ephemeral range, where another process's socket can take one), 0 being everyone's."""
    import random

    from ._env import domain_id_of

    domain = domain_id_of()  # (as rcl reads it; ValueError for one it refuses)
    return random.randint(1, 101) if domain is None else domain


def run_demo(duration: float = 60.0, out_dir: Path = Path("out/demo"), rtf: float = 1.0, video: bool = True,
             quiet: bool = False, domain_id: int | None = None, foxglove_port: int | None = None,
             params: tuple | None = None, foxglove_address: str = "127.0.0.1", sensors: bool = True,
             say=None, bound_teardown: bool = False) -> list:
    """Record, plot, render; returns summary lines, each also handed to ``say`` (when given) before
    the node graph is destroyed; ``bound_teardown``: see recording(). ``params``: the (dynamics_node, probe_node,
    state_publisher) parameters of the graph, as record() takes them (``bondsim-ros demo`` reads
    config/dynamics.yaml and sets its --model); None: the nodes' defaults. ``sensors``: a mobile
    base also carries the simulated laser scanner, IR sensors and bumper (sensor_node) in the
    world its robot declares (``Robot.world``: the scene its mechanism draws), recorded, plotted
    and shown in the video."""
    if not (duration > 0 and math.isfinite(duration)):
        raise DemoOptionError(f"--duration must be a positive number of seconds, got {duration}")
    if not (rtf > 0 and math.isfinite(rtf)):
        raise DemoOptionError(f"--rtf must be positive, got {rtf}")
    if params is not None and "publish_rate" in params[0]:
        rate = float(params[0]["publish_rate"])
    else:
        from .dynamics_node import PARAMS

        rate = float(PARAMS["publish_rate"][0])
    frames = duration * rate / rtf
    if frames < MIN_DEMO_FRAMES:
        raise DemoOptionError(f"--rtf {rtf:g} with --duration {duration:g}: the run would publish {frames:.3g} frames "
                              f"(one per {rtf / rate:.3g} simulated seconds at {rate:g} Hz), the demo needs at least "
                              f"{MIN_DEMO_FRAMES}: use --rtf {duration * rate / MIN_DEMO_FRAMES:.3g} or less, or a "
                              "longer --duration")
    out_dir = Path(out_dir)
    created = _out_folder(out_dir)
    bag_dir = new_bag_dir(out_dir)
    sensor_map = demo_world(params) if sensors else None
    try:
        return _record_and_report(duration, out_dir, bag_dir, rtf, video, quiet, domain_id, params, foxglove_port,
                                  foxglove_address, sensor_map, say=say, bound_teardown=bound_teardown)
    except DemoOptionError:
        if created and not any(out_dir.iterdir()):
            out_dir.rmdir()  # refused before anything was written: leave no empty folder behind
        raise


def _out_folder(out_dir: Path) -> bool:
    """Make ``out_dir`` (if missing) and check that it takes files and folders, before any node
    starts: a place that takes none (under a file, /proc, read-only) would otherwise fail in
    mkdir, or in the recorder once the graph runs. Returns whether it was made here."""
    import tempfile

    try:
        taken = out_dir.exists() and not out_dir.is_dir()
        created = not taken and not out_dir.exists()
        if created:
            out_dir.mkdir(parents=True)
    except OSError as exc:
        raise DemoOptionError(f"--out {out_dir}: cannot make this folder ({exc.strerror or exc})") from None
    if taken:
        raise FileExistsError(f"--out {out_dir}: exists and is not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".bondsim-check-", dir=out_dir))  # as the recording's folder is made
    except OSError as exc:
        if created:
            with contextlib.suppress(OSError):
                out_dir.rmdir()
        raise DemoOptionError(f"--out {out_dir}: cannot write in this folder ({exc.strerror or exc})") from None
    return created


def demo_world(params) -> str | None:
    """The map of the world the demo's robot declares (a registered robot's ``world``), or None
    (a YAML model, or a robot without one: no sensors)."""
    from bondsim_ros.robots import DEFAULT_ROBOT, available, load_robot

    model = (params[0] if params else {}).get("model") or DEFAULT_ROBOT
    if model not in available():
        return None
    world = load_robot(model).world
    return None if world is None else str(world)


def new_bag_dir(out_dir: Path) -> Path:
    """``OUT/bag``, or ``OUT/bag-2``, ``-3``, ... if taken: a recording already there (the user's
    own, or an earlier demo's) is never overwritten or deleted."""
    bag_dir, k = out_dir / "bag", 1
    while bag_dir.exists() or bag_dir.is_symlink():
        k += 1
        bag_dir = out_dir / f"bag-{k}"
    return bag_dir


def _record_and_report(duration, out_dir, bag_dir, rtf, video, quiet, domain_id, params, foxglove_port=None,
                       foxglove_address="127.0.0.1", sensor_map=None, say=None, bound_teardown=False) -> list:
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    # the node graph lives on (stopped) until the report is written and said: a held teardown
    # then costs no output
    with contextlib.ExitStack() as graph:
        with Progress(TextColumn("[bold]demo[/] {task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                      TimeRemainingColumn(), disable=quiet, transient=False) as bar:
            task = bar.add_task("simulating", total=duration, info="")

            def progress(t_sim, dn):
                bar.update(task, completed=min(t_sim, duration),
                           info=(f"t = {t_sim:5.1f} s, {dn.frame_clock.frames} frames, "
                                 f"{dn.frame_clock.overruns} overruns"))

            domain_id = private_domain() if domain_id is None else domain_id
            try:
                stats = graph.enter_context(recording(
                    duration, bag_dir, rtf=rtf, progress=progress, params=params, domain_id=domain_id,
                    foxglove_port=foxglove_port, foxglove_address=foxglove_address, sensor_map=sensor_map,
                    bound_teardown=bound_teardown))
            except KeyboardInterrupt as exc:
                if getattr(exc, "bag_until", None) is None:  # stopped before the recording ran
                    shutil.rmtree(bag_dir, ignore_errors=True)
                elif say is not None:
                    say(f"{'terminated' if type(exc) is not KeyboardInterrupt else 'interrupted'}: the bag holds "
                        f"t = 0..{exc.bag_until:.1f} s: {bag_dir} (no plots, joint trajectory or video)")
                raise
            except BaseException:
                shutil.rmtree(bag_dir, ignore_errors=True)  # this run's own, unfinished recording only
                raise
            bar.update(task, completed=duration)
        lines = _report(stats, out_dir, bag_dir, rtf, video, quiet, domain_id, sensor_map)
        if say is not None:
            for line in lines:
                say(line)
    return lines


def topic_line(topic: str, count: int, wall_s: float) -> str:
    """A topic's line of the summary: its messages and their mean rate over the recording. A
    topic published once (``/robot_description``, latched) has no rate, and one published a few
    times (``/tf_static``) fewer than one every ten seconds: "0.0 Hz" would read as a topic that
    stopped."""
    if count == 1:
        return f"  {topic:32s} {count:6d} msg   once"
    rate = count / wall_s
    return f"  {topic:32s} {count:6d} msgs  " + (f"{rate:6.1f} Hz" if rate >= 0.05 else "  <0.1 Hz")


def _report(stats, out_dir, bag_dir, rtf, video, quiet, domain_id, sensor_map) -> list:
    """The bag read back: plots, the joint trajectory, the video; the summary lines."""
    series = bag_to_series(bag_dir, rtf=rtf)
    plots = plot_series(series, out_dir, map_yaml=sensor_map)
    lines = [f"ROS domain {domain_id} (set ROS_DOMAIN_ID to choose it)",
             f"bag: {bag_dir} ({sum(stats['counts'].values())} messages on {len(stats['counts'])} topics)"]
    for topic in sorted(stats["counts"]):
        lines.append(topic_line(topic, stats["counts"][topic], stats["wall_s"]))
    lines.append(f"frames {stats['frames']}, overruns {stats['overruns']}, skipped {stats['skipped_frames']}, "
                 f"max lag {stats['max_lag_ms']:.1f} ms")
    if "x_ref" in series:
        late = series["ref_t"] >= 5.0
        if late.any():
            errs = [np.max(np.abs(series[k][series["ref_idx"]][late] - series[f"{k}_ref"][late]))
                    for k in ("x", "y", "phi")]
            lines.append(f"tracking error after 5 s: x {errs[0]:.2e} m, y {errs[1]:.2e} m, phi {errs[2]:.2e} rad")
    for key in sorted(k for k in series if k.startswith("probe_error")):
        v = series[key]
        if len(v):
            lines.append(f"{key}: max {np.max(v):.2e} m over {len(v)} points")
    if "scan_t" in series:
        ranges = np.concatenate([np.hypot(*(p - o).T) for p, o in zip(series["scan_points"], series["scan_origin"])])
        lines.append(f"scan: {len(series['scan_t'])} scans of {series['scan_beams']} beams, hits "
                     f"{ranges.min():.2f}..{ranges.max():.2f} m; bumper contacts {series['bumper_contacts']}")
    csv = joints_csv(series, out_dir / "joints.csv")
    lines.append(f"joint trajectory: {csv}")
    if video:
        from bondsim_ros.mechanism.render import mp4_unavailable, render

        # render() refuses an MP4 without ffmpeg: the demo, which names its own outputs, asks for a GIF
        no_mp4 = mp4_unavailable()
        target = out_dir / f"{stats['name']}.{'gif' if no_mp4 else 'mp4'}"
        if no_mp4:
            lines.append(f"no MP4: {no_mp4}; the video is a GIF")
        try:
            # every third 33 Hz frame at 11 fps: real-time playback, a third of the drawing work
            inset = scan_inset(series, sensor_map) if "scan_t" in series else None
            written = render(stats.get("mechanism"), target, joints_csv=csv, fps=11, every=3, size=(960, 720),
                             view="follow", quiet=quiet, inset=inset, jobs=max(1, min(4, os.cpu_count() or 1)))
            lines.append(f"video: {written}")
        except Exception as exc:  # noqa: BLE001 - the bag and plots stand without the video
            lines.append(f"video not written: {exc}")
    lines += [f"plot: {p}" for p in plots]
    return lines
