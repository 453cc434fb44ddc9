"""The probe check without rclpy: a returned probe point compared with the model's at the state
published with the same stamp, and with the newest state; unknown probes refused by name."""
from types import SimpleNamespace

import numpy as np
import pytest

from bondsim_ros.twin.probe_check import ProbeCheck


class Kinematics:
    """Probe "tip" at (x + q, y, 0) of base pose (x, y, phi) and joint q; "base" at (x, y, 0)."""

    probe_names = ["tip", "base"]

    def probe_points(self, pose, joints):
        x, y, _ = pose
        return {"tip": np.array([x + joints["q"], y, 0.0]), "base": np.array([x, y, 0.0])}


def state(q, pose=(0.0, 0.0, 0.0)):
    return SimpleNamespace(pose=pose, joint_map=lambda: {"q": q})


def test_a_point_is_compared_at_the_state_of_its_stamp_and_at_the_newest():
    check = ProbeCheck(Kinematics())
    assert check.names == ["tip", "base"]  # none given: all of the mechanism's
    check.record(1_000, state(0.1))
    check.record(2_000, state(0.2))
    timed, untimed = check.errors("tip", (0.1, 0.0, 0.0), 1_000, latest=state(0.3))
    assert timed == pytest.approx(0.0) and untimed == pytest.approx(0.2)
    timed, untimed = check.errors("tip", (0.2, 0.0, 0.0), 3_000, latest=state(0.2))
    assert timed is None and untimed == pytest.approx(0.0)  # no state has that stamp


def test_a_fixed_base_is_at_the_origin_and_the_history_is_bounded_and_cleared():
    check = ProbeCheck(Kinematics(), ["base"], history=3)
    assert check.names == ["base"]
    assert check.point("base", state(0.0, pose=None)).tolist() == [0.0, 0.0, 0.0]
    for k in range(5):
        check.record(k, state(0.0, pose=(float(k), 0.0, 0.0)))
    assert list(check.history) == [2, 3, 4]  # the oldest forgotten first
    assert check.errors("base", (3.0, 0.0, 0.0), 3, latest=state(0.0))[0] == pytest.approx(0.0)
    check.clear()
    assert check.errors("base", (3.0, 0.0, 0.0), 3, latest=state(0.0))[0] is None


def test_unknown_probes_are_refused_naming_the_available_ones():
    with pytest.raises(ValueError, match=r"probes: \['elbow'\] are not probes of the mechanism "
                                         r"\(available: \['base', 'tip'\]\)"):
        ProbeCheck(Kinematics(), ["tip", "elbow"])


def test_the_packaged_robotinos_probes_match_its_own_points():
    from bondsim_ros.mechanism.probes import ProbeKinematics
    from bondsim_ros.paths import share_file

    kin = ProbeKinematics.from_file(share_file("urdf", "robotino", "Robotino_project.xml"))
    check = ProbeCheck(kin)
    assert check.names and set(check.names) == set(kin.probe_names)
    s = SimpleNamespace(pose=(1.0, -0.5, 0.3), joint_map=lambda: {})
    name = check.names[0]
    check.record(7, s)
    point = kin.probe_points((1.0, -0.5, 0.3), {})[name]
    assert check.errors(name, point, 7, latest=s) == (pytest.approx(0.0), pytest.approx(0.0))
    moved = np.asarray(point) + [0.0, 0.0, 0.01]
    assert check.errors(name, moved, 7, latest=s)[0] == pytest.approx(0.01)
