"""A real robot's rosbag2 log -> the CSV that ``bondsim-ros fit robotino_twist`` reads (no ROS).

A drive log of a Robotino (``ros2 bag record`` of the driver's topics) holds the commands
sent (``cmd_vel``: Twist, or TwistStamped) and what the robot measured: wheel speeds in
``joint_states`` and, optionally, ``odom``. The fit needs them on one time axis with the
commands as the model's run-time inputs: one row per joint-state sample, the command *held*
from the last message before it (the robot applies ``cmd_vel`` until the next one arrives),
wheel speeds mapped to the twin's ``w1..w3`` (order and sign as in the twin bridge's
config/robotino_bridge.yaml), odometry interpolated to the row times and expressed relative
to the first row's pose (the model starts at the origin).

Bags are read with ``rosbags`` (MCAP or sqlite3), so this runs without a ROS install.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from bondsim_ros.msgutil import stamp_ns, yaw

from .core import FitError, LogData


def read_topics(bag, topics) -> dict:
    """{topic: (msgtype, [(time_ns, message)])}; time is the header stamp when there is one,
    else the time the message was logged."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    bag = Path(bag)
    if not bag.exists():
        raise FitError(f"{bag}: no such bag")
    store = get_typestore(Stores.ROS2_KILTED)
    out = {}
    try:
        with Reader(bag) as reader:
            present = {c.topic for c in reader.connections}
            missing = [t for t in topics if t and t not in present]
            if missing:
                raise FitError(f"{bag}: topic(s) {', '.join(missing)} not in the bag (has: {', '.join(sorted(present))})")
            conns = [c for c in reader.connections if c.topic in topics]
            for conn, logged, raw in reader.messages(connections=conns):
                msg = store.deserialize_cdr(raw, conn.msgtype)
                t = stamp_ns(msg.header.stamp) if hasattr(msg, "header") else logged
                out.setdefault(conn.topic, (conn.msgtype, []))[1].append((t, msg))
    except FitError:
        raise
    except Exception as exc:  # rosbags raises its own error types for unreadable bags
        raise FitError(f"{bag}: cannot read the bag: {exc}") from None
    return out


def bag_to_log(bag, cmd_vel: str, joint_states: str, wheel_joints, wheel_sign: float = 1.0,
               odom: str | None = None) -> LogData:
    """Columns: t, vx_cmd, vy_cmd, wz_cmd, w1..w3 and, with ``odom``, x, y, phi."""
    wheel_joints = list(wheel_joints)
    if len(wheel_joints) != 3:
        raise FitError(f"give the three wheel joint names of the driver, got {wheel_joints}")
    data = read_topics(bag, [cmd_vel, joint_states] + ([odom] if odom else []))
    js = data.get(joint_states, (None, []))[1]
    if len(js) < 2:
        raise FitError(f"{bag}: fewer than two {joint_states} messages")
    first = js[0][1]
    try:
        idx = [list(first.name).index(n) for n in wheel_joints]
    except ValueError:
        raise FitError(f"{bag}: {joint_states} has joints {list(first.name)}, not all of {wheel_joints} "
                       f"(set the wheel joint names)") from None
    js.sort(key=lambda tm: tm[0])
    stamps = np.array([t for t, _ in js], dtype=np.int64)
    keep = np.concatenate([[True], np.diff(stamps) > 0])  # repeated stamps add nothing
    js = [m for m, k in zip(js, keep) if k]
    t_ns = stamps[keep]
    w = np.array([[wheel_sign * float(m.velocity[i]) for i in idx] for _, m in js])
    if w.size == 0 or not np.all(np.isfinite(w)):
        raise FitError(f"{bag}: {joint_states} carries no finite wheel velocities")

    # commands held from the last message at or before each row (0 before the first one)
    cmds = data.get(cmd_vel, (None, []))[1]
    cmd_t = np.array([t for t, _ in cmds], dtype=np.int64)
    cmd_v = np.zeros((len(cmds) + 1, 3))
    for k, (_, m) in enumerate(cmds, start=1):
        tw = m.twist if hasattr(m, "twist") else m  # TwistStamped or Twist
        cmd_v[k] = (tw.linear.x, tw.linear.y, tw.angular.z)
    order = np.argsort(cmd_t, kind="stable")
    cmd_t, cmd_v[1:] = cmd_t[order], cmd_v[1:][order]
    held = cmd_v[np.searchsorted(cmd_t, t_ns, side="right")]

    t = (t_ns - t_ns[0]) * 1e-9
    names = ["t", "vx_cmd", "vy_cmd", "wz_cmd", "w1", "w2", "w3"]
    cols = [t, held[:, 0], held[:, 1], held[:, 2], w[:, 0], w[:, 1], w[:, 2]]
    if odom:
        od = data.get(odom, (None, []))[1]
        if len(od) < 2:
            raise FitError(f"{bag}: fewer than two {odom} messages")
        ot = (np.array([s for s, _ in od], dtype=np.int64) - t_ns[0]) * 1e-9
        pose = np.array([(m.pose.pose.position.x, m.pose.pose.position.y, yaw(m.pose.pose.orientation))
                         for _, m in od])
        pose[:, 2] = np.unwrap(pose[:, 2])
        x, y, phi = (np.interp(t, ot, pose[:, k]) for k in range(3))
        # relative to the first row, in its frame: the model starts at (0, 0, 0)
        c, s = math.cos(phi[0]), math.sin(phi[0])
        dx, dy = x - x[0], y - y[0]
        names += ["x", "y", "phi"]
        cols += [c * dx + s * dy, -s * dx + c * dy, phi - phi[0]]
    return LogData(names, np.column_stack(cols), str(bag))


def write_log(log: LogData, path) -> Path:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(",".join(log.names) + "\n")
        for row in log.data:
            fh.write(",".join(repr(float(v)) for v in row) + "\n")
    tmp.replace(path)
    return path


__all__ = ["bag_to_log", "read_topics", "write_log"]
