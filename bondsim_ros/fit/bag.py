"""A real robot's rosbag2 log -> the CSV that ``bondsim-ros fit robotino_twist`` reads (no ROS).

A drive log of a Robotino (``ros2 bag record`` of the driver's topics) holds the commands
sent (``cmd_vel``: Twist, or TwistStamped) and what the robot measured: wheel speeds in
``joint_states`` and, optionally, ``odom``. The fit needs them on one time axis with the
commands as the model's run-time inputs: one row per joint-state sample, the command *held*
from the last message before it (the robot applies ``cmd_vel`` until the next one arrives),
wheel speeds mapped to the twin's ``w1..w3`` (order and sign as in the twin bridge's
config/robotino_bridge.yaml), the motor currents of ``motor_readings`` (rto_msgs/MotorReadings)
as ``i1..i3`` and odometry, both interpolated to the row times, the pose expressed relative to
the first row's (the model starts at the origin).

Bags are read with ``rosbags`` (MCAP or sqlite3), so this runs without a ROS install.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from bondsim_ros.msgutil import stamp_ns, yaw

from .core import MAX_VALUE, FitError, LogData


def _usable(values) -> bool:
    """Finite and within what ``fit`` reads (read_csv refuses larger magnitudes)."""
    return all(math.isfinite(v) and abs(v) <= MAX_VALUE for v in values)


TOPIC_TYPES = {  # what each topic of a drive log must carry
    "cmd_vel": ("geometry_msgs/msg/Twist", "geometry_msgs/msg/TwistStamped"),
    "joint_states": ("sensor_msgs/msg/JointState",),
    "odom": ("nav_msgs/msg/Odometry",),
    "motor_readings": ("rto_msgs/msg/MotorReadings",),
}

# The driver's own message (ros2-robotino rto_msgs/msg/MotorReadings.msg), in no ROS distribution's
# type store: speeds [rpm], encoder ticks and currents [A] of motors 0, 1, 2
MOTOR_READINGS = ("rto_msgs/msg/MotorReadings",
                  "std_msgs/Header header\nfloat32[] velocities\nint32[] positions\nfloat32[] currents\n")
# MotorArrayROS: motor k turns wheelk_joint
MOTOR_JOINTS = ("wheel0_joint", "wheel1_joint", "wheel2_joint")
# The twin's currents are signed as its motors turn, and its motors turn against its wheel axles
# (robotino_twist: motor speed = -gear x wheel speed); the driver's are signed as its rpm, which
# follow its joints: a twin current is -wheel_sign x the driver's
MOTOR_SIGN = -1.0


def typestore():
    """The ROS 2 Kilted type store with the driver's MotorReadings."""
    from rosbags.typesys import Stores, get_typestore, get_types_from_msg

    store = get_typestore(Stores.ROS2_KILTED)
    name, text = MOTOR_READINGS
    store.register(get_types_from_msg(text, name))
    return store


def read_topics(bag, topics, types=None, optional=()) -> dict:
    """{topic: (msgtype, [(stamp_ns, logged_ns, message)])}: ``stamp_ns`` is the header stamp when
    the message has one, else None. ``types``: {topic: allowed message types}, checked before any
    message is decoded. ``optional``: those of ``topics`` that may be missing from the bag (then
    also from the answer)."""
    from rosbags.rosbag2 import Reader

    bag = Path(bag)
    if not bag.exists():
        raise FitError(f"{bag}: no such bag")
    if bag.is_dir() and not (bag / "metadata.yaml").is_file():  # rosbags says only that the file is missing
        raise FitError(f"{bag}: not a rosbag2 bag (no metadata.yaml in the folder)")
    store = typestore()
    out = {}
    try:
        with Reader(bag) as reader:
            present = {c.topic for c in reader.connections}
            missing = [t for t in topics if t and t not in present and t not in optional]
            if missing:
                raise FitError(f"{bag}: topic(s) {', '.join(missing)} not in the bag "
                               f"(has: {', '.join(sorted(present))})")
            conns = [c for c in reader.connections if c.topic in topics]
            for c in conns:
                allowed = (types or {}).get(c.topic)
                if allowed and c.msgtype not in allowed:
                    raise FitError(f"{bag}: topic {c.topic} carries {c.msgtype}, expected {' or '.join(allowed)}")
            for c in conns:  # every topic the bag holds is answered, messages or none
                out.setdefault(c.topic, (c.msgtype, []))
            for conn, logged, raw in reader.messages(connections=conns):
                msg = store.deserialize_cdr(raw, conn.msgtype)
                t = stamp_ns(msg.header.stamp) if hasattr(msg, "header") else None
                out[conn.topic][1].append((t, logged, msg))
    except FitError:
        raise
    except Exception as exc:  # rosbags raises its own error types for unreadable bags
        raise FitError(f"{bag}: cannot read the bag: {exc}") from None
    return out


def _distinct(stamps) -> int:
    return len(set(stamps))


def _on_the_rows_clock(messages, clock: int, offset_ns: int, topic: str, notes: list) -> list:
    """The times of ``messages`` ((stamp_ns or None, logged_ns, message) each) on the clock of the
    rows: their header stamps where the rows use header stamps and these advance, else their log
    times moved by ``offset_ns``, the rows' stamps minus their log times (median): a Twist has no
    stamp, a driver may leave a TwistStamped's at 0, and a robot's clock may run apart from the
    recorder's. Placed by log time against stamped rows, commands lagged or led the wheels by the
    clocks' difference (0.3 s made a fit's mass 124 kg instead of 14)."""
    stamped = [m[0] for m in messages if m[0] is not None]
    if clock == 0 and len(stamped) == len(messages) and _distinct(stamped) >= min(2, len(messages)):
        return [m[0] for m in messages]
    # said where it matters: a Twist (no stamp) logged within 10 ms of its robot's clock is the usual case
    if messages and clock == 0 and (stamped or abs(offset_ns) >= 10_000_000):
        why = "no header stamp" if not stamped else "header stamps that do not advance"
        notes.append(f"{topic}: {why}; placed by the bag's log times on the rows' clock, shifted by "
                     f"{offset_ns * 1e-9:+.4f} s (the joint states' stamps minus their log times)")
    return [m[1] + offset_ns for m in messages]


def bag_to_log(bag, cmd_vel: str, joint_states: str, wheel_joints, wheel_sign: float = 1.0,
               odom: str | None = None, motor_readings: str | None = None,
               motor_joints=MOTOR_JOINTS, readings_optional: bool = False) -> LogData:
    """Columns: t, vx_cmd, vy_cmd, wz_cmd, w1..w3, with ``motor_readings`` i1..i3 and, with
    ``odom``, x, y, phi. ``readings_optional``: a bag without ``motor_readings`` has no currents
    (else it is refused, as a missing topic is).

    The driver's currents are taken as signed as its motor speeds (motor k of ``motor_joints``
    turns that joint) and turned into the twin's (``MOTOR_SIGN``). Messages with
    a non-finite command, wheel speed, current or pose are dropped (counted in the returned log's
    ``notes``). When the joint states' header stamps do not advance (a driver that leaves them at
    zero), every topic is put on the bag's log times instead."""
    wheel_joints = list(wheel_joints)
    if len(wheel_joints) != 3:
        raise FitError(f"give the three wheel joint names of the driver, got {wheel_joints}")
    motor_joints = list(motor_joints)
    roles = [("--cmd-vel", cmd_vel), ("--joint-states", joint_states)] + ([("--odom", odom)] if odom else []) + \
        ([("--motor-readings", motor_readings)] if motor_readings else [])
    for i, (role, topic) in enumerate(roles):
        for other, same in roles[:i]:
            if topic == same:  # one topic cannot carry two message types
                raise FitError(f"{role} and {other} both name {topic}: each reads its own topic")
    types = {cmd_vel: TOPIC_TYPES["cmd_vel"], joint_states: TOPIC_TYPES["joint_states"]}
    if odom:
        types[odom] = TOPIC_TYPES["odom"]
    if motor_readings:
        types[motor_readings] = TOPIC_TYPES["motor_readings"]
    data = read_topics(bag, list(types), types, optional=[motor_readings] if readings_optional else [])
    if motor_readings not in data:
        motor_readings = None  # (optional, and not in the bag: read_topics answers every topic it has)
    if motor_readings and not set(wheel_joints) <= set(motor_joints):
        raise FitError(f"the wheel joints {wheel_joints} are not all among the motors' joints {motor_joints}")
    notes = []
    js = data.get(joint_states, (None, []))[1]
    if len(js) < 2:
        raise FitError(f"{bag}: fewer than two {joint_states} messages")
    clock = 0  # index of the time used: 0 header stamp, 1 log time
    if None in (m[0] for m in js) or _distinct(m[0] for m in js) < 2:
        if _distinct(m[1] for m in js) < 2:
            raise FitError(f"{bag}: all {len(js)} {joint_states} messages have the same header stamp and log "
                           f"time: no time axis")
        clock = 1
        notes.append(f"{joint_states}: all {len(js)} header stamps are equal; using the bag's log times for "
                     f"every topic")
    first = js[0][2]
    if not set(wheel_joints) <= set(first.name):
        raise FitError(f"{bag}: {joint_states} has joints {list(first.name)}, not all of {wheel_joints} "
                       f"(set the wheel joint names)")
    rows, bad = [], 0
    for m in js:
        names, vel = list(m[2].name), m[2].velocity
        try:
            w = [wheel_sign * float(vel[names.index(n)]) for n in wheel_joints]
        except (ValueError, IndexError):  # a message without those joints or their velocities
            w = [math.nan] * 3
        if _usable(w):
            rows.append((m[clock], w))
        else:
            bad += 1
    # the rows' stamps minus their log times: what puts a message known by its log time alone on
    # the rows' clock (none where the rows are on the log times)
    offset_ns = int(np.median([m[0] - m[1] for m in js])) if clock == 0 else 0
    if bad:
        notes.append(f"{joint_states}: dropped {bad} of {len(js)} messages without finite wheel velocities "
                     f"(within +-{MAX_VALUE:g})")
    rows.sort(key=lambda r: r[0])
    stamps = np.array([t for t, _ in rows], dtype=np.int64)
    keep = np.concatenate([[True], np.diff(stamps) > 0]) if len(rows) else np.array([], bool)
    t_ns = stamps[keep]
    w = np.array([r[1] for r, k in zip(rows, keep) if k]).reshape(-1, 3)
    if len(t_ns) < 2:
        raise FitError(f"{bag}: fewer than two {joint_states} messages with finite wheel velocities at "
                       f"distinct times")

    # commands held from the last message at or before each row (0 before the first one)
    cmds = []
    messages = data.get(cmd_vel, (None, []))[1]
    for when, m in zip(_on_the_rows_clock(messages, clock, offset_ns, cmd_vel, notes), messages):
        tw = m[2].twist if hasattr(m[2], "twist") else m[2]  # TwistStamped or Twist
        v = (float(tw.linear.x), float(tw.linear.y), float(tw.angular.z))
        cmds.append((when, v))
    finite = [c for c in cmds if _usable(c[1])]
    if not cmds:  # (the topic is in the bag: the driver logged it, nobody drove)
        notes.append(f"{cmd_vel}: no command in the bag: the command columns are 0 throughout")
    if len(finite) < len(cmds):
        notes.append(f"{cmd_vel}: dropped {len(cmds) - len(finite)} of {len(cmds)} commands with inf/NaN "
                     f"values or beyond +-{MAX_VALUE:g}")
    cmd_t = np.array([t for t, _ in finite], dtype=np.int64)
    cmd_v = np.zeros((len(finite) + 1, 3))
    if finite:
        cmd_v[1:] = [v for _, v in finite]
    order = np.argsort(cmd_t, kind="stable")
    cmd_t, cmd_v[1:] = cmd_t[order], cmd_v[1:][order]
    held = cmd_v[np.searchsorted(cmd_t, t_ns, side="right")]

    t = (t_ns - t_ns[0]) * 1e-9
    names = ["t", "vx_cmd", "vy_cmd", "wz_cmd", "w1", "w2", "w3"]
    cols = [t, held[:, 0], held[:, 1], held[:, 2], w[:, 0], w[:, 1], w[:, 2]]
    # measured topics besides the joint states: (topic, their times [ns], values), interpolated to the rows
    measured = []
    if motor_readings:
        mr = data.get(motor_readings, (None, []))[1]
        motor = [motor_joints.index(j) for j in wheel_joints]
        currents = []
        for when, m in zip(_on_the_rows_clock(mr, clock, offset_ns, motor_readings, notes), mr):
            c = list(m[2].currents)
            ok = len(c) == len(motor_joints)
            currents.append((when, [MOTOR_SIGN * wheel_sign * float(c[k]) for k in motor] if ok else [math.nan] * 3))
        measured.append((motor_readings, "currents", currents))
    if odom:
        od = data.get(odom, (None, []))[1]
        poses = [(when, (m[2].pose.pose.position.x, m[2].pose.pose.position.y, yaw(m[2].pose.pose.orientation)))
                 for when, m in zip(_on_the_rows_clock(od, clock, offset_ns, odom, notes), od)]
        measured.append((odom, "poses", poses))
    spans = []
    for topic, what, samples in measured:
        good = sorted((p for p in samples if _usable(p[1])), key=lambda p: p[0])
        if len(good) < len(samples):
            every = f": all {len(motor_joints)} motors'" if what == "currents" else ""
            notes.append(f"{topic}: dropped {len(samples) - len(good)} of {len(samples)} messages without "
                         f"finite {what} (within +-{MAX_VALUE:g}{every})")
        if len({s for s, _ in good}) < 2:
            raise FitError(f"{bag}: fewer than two {topic} messages with finite {what} at distinct times")
        spans.append((np.array([s for s, _ in good], dtype=np.int64), np.array([p for _, p in good], float)))
    # rows outside a measured topic's span would hold its first or last value while the wheels
    # turn: left out, and the log starts at the first row kept
    inside = np.ones(len(t), bool)
    for (topic, _, _), (m_ns, _) in zip(measured, spans):
        covered = (t_ns >= m_ns[0]) & (t_ns <= m_ns[-1])
        if not covered.all():
            lo, hi = (m_ns[0] - t_ns[0]) * 1e-9, (m_ns[-1] - t_ns[0]) * 1e-9
            if np.count_nonzero(covered) < 2:
                raise FitError(f"{bag}: the {topic} messages (t = {lo:.3f} to {hi:.3f} s) span fewer than two "
                               f"{joint_states} rows")
            notes.append(f"{topic}: its messages span t = {lo:.3f} to {hi:.3f} s of the rows' 0 to {t[-1]:.3f} s: "
                         f"the {np.count_nonzero(~covered)} rows outside are left out, nothing extrapolated")
        inside &= covered
    if np.count_nonzero(inside) < 2:
        raise FitError(f"{bag}: fewer than two {joint_states} rows lie within the spans of "
                       f"{', '.join(topic for topic, _, _ in measured)} together")
    if not inside.all():
        cols = [col[inside] for col in cols]
        t_ns = t_ns[inside]
        cols[0] = t = (t_ns - t_ns[0]) * 1e-9
    for (topic, what, _), (m_ns, values) in zip(measured, spans):
        mt = (m_ns - t_ns[0]) * 1e-9
        if what == "currents":
            names += ["i1", "i2", "i3"]
            cols += [np.interp(t, mt, values[:, k]) for k in range(3)]
            raw = values * MOTOR_SIGN * wheel_sign  # as logged
            if raw.min() >= 0.0 and raw.max() > 0.0 and min(col.min() for col in cols[4:7]) < 0.0 < max(
                    col.max() for col in cols[4:7]):
                # a motor that brakes or turns backwards draws a negative current: none ever did
                notes.append(f"{topic}: no current is ever negative, though the wheels turn both ways: if the "
                             f"driver logs magnitudes, the currents' sign is wrong whenever a motor brakes or "
                             f"turns backwards (fit with --outputs w1,w2,w3, or --no-currents)")
            continue
        values[:, 2] = np.unwrap(values[:, 2])
        x, y, phi = (np.interp(t, mt, values[:, k]) for k in range(3))
        # relative to the first row, in its frame: the model starts at (0, 0, 0)
        c, s = math.cos(phi[0]), math.sin(phi[0])
        dx, dy = x - x[0], y - y[0]
        names += ["x", "y", "phi"]
        cols += [c * dx + s * dy, -s * dx + c * dy, phi - phi[0]]
    return LogData(names, np.column_stack(cols), str(bag), notes)


def write_log(log: LogData, path, option: str = "") -> Path:
    """Write the log as CSV under bondsim_ros.outfiles' rule (``-``: standard output)."""
    from bondsim_ros.outfiles import output_path

    path = Path(path)
    with output_path(path, option, stdout_ok=True) as tmp, open(tmp, "w") as fh:
        fh.write(",".join(log.names) + "\n")
        for row in log.data:
            fh.write(",".join(repr(float(v)) for v in row) + "\n")
    return path


__all__ = ["MOTOR_JOINTS", "bag_to_log", "read_topics", "typestore", "write_log"]
