"""The model's probe points against those another program measures (the probe node, from the
published joint states): the paper's named-pipe check, without its one-frame lag.

Each published state is remembered by its stamp; a returned point that carries the stamp of the
state it came from is compared with the model's point at exactly that state (time-aligned), and
every point also with the newest state (untimed, as the paper's pipe). No ROS: the node passes
stamps as integer nanoseconds and points as (x, y, z).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

HISTORY = 600  # states remembered: 18 s at 33 Hz, far more than a probe answer takes


class ProbeCheck:
    """``kinematics``: the mechanism's probe kinematics (``probe_names`` and ``probe_points(pose,
    joints)``, mechanism.probes.ProbeKinematics); ``names``: the probes compared (empty: all)."""

    def __init__(self, kinematics, names=(), history: int = HISTORY):
        available = kinematics.probe_names
        unknown = [n for n in names if n not in available]
        if unknown:
            raise ValueError(f"probes: {unknown} are not probes of the mechanism (available: {sorted(available)})")
        self.kinematics = kinematics
        self.names = list(names) or list(available)
        self.history = OrderedDict()  # stamp (ns) -> state
        self._size = int(history)

    def record(self, stamp_ns: int, state) -> None:
        """``state`` was published with stamp ``stamp_ns``."""
        self.history[stamp_ns] = state
        while len(self.history) > self._size:
            self.history.popitem(last=False)

    def clear(self) -> None:
        """The twin was reset: no earlier state is the one a stamp names any more."""
        self.history.clear()

    def point(self, name: str, state) -> np.ndarray:
        """The model's world point of probe ``name`` at ``state`` (a fixed base at the origin)."""
        return self.kinematics.probe_points(state.pose or (0.0, 0.0, 0.0), state.joint_map())[name]

    def errors(self, name: str, point, stamp_ns: int, latest) -> tuple:
        """(time-aligned error or None when no published state has that stamp, error against the
        ``latest`` state) [m] of the measured ``point`` of probe ``name``."""
        got = np.asarray(point, dtype=float)
        state = self.history.get(stamp_ns)
        timed = None if state is None else float(np.linalg.norm(got - self.point(name, state)))
        return timed, float(np.linalg.norm(got - self.point(name, latest)))
