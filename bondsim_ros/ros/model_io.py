"""A model's own signals on plain topics: run-time parameters set from std_msgs/Float64 topics
(a YAML model's ``commands: topics:``) and columns published as std_msgs/Float64 every frame
(its ``outputs:``, and dynamics_node's ``outputs`` parameter for any twin with columns).

ROS-free: the node makes the subscriptions and publishers, passes received values to
``receive`` and publishes what ``values`` gives. A received value is checked at once (a
NaN/inf, or a value the model's laws refuse, never reaches the model) and applied at the next
frame, where the model restarts at its present instant, as a cmd_vel command does.
"""
from __future__ import annotations

from bondsim_ros.msgutil import topic_name_error
from bondsim_ros.twin.protocol import CommandError


def parse_outputs(specs) -> dict:
    """``["TOPIC=COLUMN", ...]`` (dynamics_node's ``outputs``; "" entries ignored) -> {topic:
    column}; ValueError naming the entry that is not of that form or repeats a topic."""
    out = {}
    for spec in specs or ():
        if not spec:
            continue
        topic, sep, column = str(spec).partition("=")
        topic, column = topic.strip(), column.strip()
        if not sep or not topic or not column:
            raise ValueError(f"outputs: {spec!r} is not TOPIC=COLUMN")
        why = topic_name_error(topic)
        if why:
            raise ValueError(f"outputs: {topic!r} is not a ROS topic name: {why}")
        if topic in out:
            raise ValueError(f"outputs: topic {topic!r} given twice")
        out[topic] = column
    return out


class ModelIO:
    """Float64 topics -> the twin's run-time parameters; the twin's columns -> Float64 topics."""

    def __init__(self, twin, outputs=()):
        self.twin = twin
        self.inputs = dict(getattr(twin, "param_topics", None) or {})  # topic -> parameter
        self.outputs = dict(getattr(twin, "output_topics", None) or {})  # topic -> column
        extra = parse_outputs(outputs)
        if extra:
            columns = getattr(twin, "columns", None)
            if columns is None or not callable(getattr(twin, "column", None)):
                raise ValueError(f"outputs: {twin.name} has no columns to publish")
            for topic, column in extra.items():
                if column not in columns:
                    raise ValueError(f"outputs: {topic}={column}: {twin.name} has no column {column!r} "
                                     f"(columns: {', '.join(columns)})")
                if topic in self.outputs or topic in self.inputs:
                    raise ValueError(f"outputs: topic {topic!r} is already the model's own "
                                     f"({'commands.topics' if topic in self.inputs else 'outputs'})")
                self.outputs[topic] = column
        self._pending = {}  # parameter -> value, applied at the next frame
        self.accepted = self.refused = 0

    def check_resolved(self, resolve, reserved: dict) -> None:
        """Every topic resolved (``resolve``: the node's name resolution, raising on a bad
        name) is distinct and none is one of the node's own (``reserved``: resolved name ->
        what it is); ValueError naming the topic otherwise."""
        seen = dict(reserved)
        for kind, topics in (("commands.topics", self.inputs), ("outputs", self.outputs)):
            for topic in topics:
                try:
                    full = resolve(topic)
                except Exception as exc:  # noqa: BLE001 - rclpy's name validation: say which topic
                    raise ValueError(f"{kind}: {topic!r} is not a valid topic name ({exc})") from None
                if full in seen:
                    raise ValueError(f"{kind}: topic {topic!r} ({full}) is already {seen[full]}")
                seen[full] = f"{kind} {topic!r}"

    def receive(self, topic: str, value) -> float:
        """Check a value received on ``topic`` now; it is applied at the next frame (the newest
        of a frame wins). CommandError if the model refuses it (nothing changes)."""
        name = self.inputs[topic]
        try:
            checked = self.twin.check_params({**self._pending, name: value})[name]
        except CommandError:
            self.refused += 1
            raise
        self._pending[name] = checked
        self.accepted += 1
        return checked

    def apply(self) -> dict:
        """Set the parameters received since the last frame (one restart for all); returns them."""
        values, self._pending = self._pending, {}
        if values:
            self.twin.set_params(values)
        return values

    def values(self) -> list:
        """(topic, value) of every output at the twin's newest state."""
        return [(topic, self.twin.column(column)) for topic, column in self.outputs.items()]


__all__ = ["ModelIO", "parse_outputs"]
