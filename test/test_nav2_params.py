"""config/nav2_params.yaml as Nav2's servers get it: parsed by rcl, every parameter a server
cannot configure without is set.

The servers and what they require without a default come from Nav2's sources (jazzy 1.3.13 and
kilted 1.4.2 tags of ros-navigation/navigation2): nav2_bringup/launch/navigation_launch.py's
`lifecycle_nodes` (lifecycle_manager aborts the whole bring-up when one of them fails to
configure); opennav_docking dock_database.cpp (`dock_plugins`, no default); collision_monitor
collision_monitor_node.cpp (`polygons`, `observation_sources`, `<polygon>.type`) and polygon.cpp
(`<polygon>.action_type`); nav2_util::get_plugin_type_param (`<id>.plugin` for each plugin id of
the controller, planner, smoother, behavior, costmap and bt_navigator lists).
"""
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rcl's parameter parser comes with rclpy (the [ros] extra)")
from rcl_params import rcl_parameters  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "config" / "nav2_params.yaml"

LIFECYCLE_NODES = ["controller_server", "smoother_server", "planner_server", "route_server", "behavior_server",
                   "velocity_smoother", "collision_monitor", "bt_navigator", "waypoint_follower", "docking_server"]

# (node, namespace): [(list parameter, its C++ default or None if it has none, keys each member needs)]
REQUIRED = {
    ("controller_server", ""): [("controller_plugins", ["FollowPath"], ["plugin"]),
                                ("progress_checker_plugins", ["progress_checker"], ["plugin"]),
                                ("goal_checker_plugins", ["goal_checker"], ["plugin"])],
    ("planner_server", ""): [("planner_plugins", ["GridBased"], ["plugin"])],
    ("smoother_server", ""): [("smoother_plugins", ["simple_smoother"], ["plugin"])],
    ("behavior_server", ""): [("behavior_plugins", ["spin", "backup", "drive_on_heading", "assisted_teleop", "wait"],
                               ["plugin"])],
    ("bt_navigator", ""): [("navigators", ["navigate_to_pose", "navigate_through_poses"], ["plugin"])],
    ("local_costmap", "/local_costmap"): [("plugins", None, ["plugin"])],
    ("global_costmap", "/global_costmap"): [("plugins", None, ["plugin"])],
    ("collision_monitor", ""): [("polygons", None, ["type", "action_type"]), ("observation_sources", None, [])],
    ("docking_server", ""): [("dock_plugins", None, ["plugin"])],
}


@pytest.mark.parametrize("node,namespace", sorted(REQUIRED), ids=lambda v: v or "root")
def test_every_required_nav2_parameter_is_set_as_rcl_parses_it(node, namespace):
    values, unset = rcl_parameters(PARAMS, node, namespace)
    assert values or unset, f"{PARAMS.name}: no section reaches {namespace}/{node}"
    for name, default, member_keys in REQUIRED[(node, namespace)]:
        assert name not in unset, (f"{PARAMS.name}: {node}.{name} is written but rcl parses it as unset "
                                   f"(an empty list)")
        members = values.get(name, default)
        assert members, f"{PARAMS.name}: {node}.{name} must name at least one entry"
        for member in members:
            for key in member_keys:
                assert values.get(f"{member}.{key}"), f"{PARAMS.name}: {node}.{member}.{key} is not set"


def test_every_lifecycle_node_of_navigation_launch_has_a_section():
    """A server without a section runs on defaults only: for ours that means the wrong frames
    (base_link) for a robot whose base is base_footprint."""
    for node in LIFECYCLE_NODES:
        values, _ = rcl_parameters(PARAMS, node)
        assert values, f"{PARAMS.name}: no parameters for {node}, which navigation_launch.py starts"
        frames = {k: v for k, v in values.items() if k in ("robot_base_frame", "base_frame", "base_frame_id")}
        assert all(v == "base_footprint" for v in frames.values()), f"{node}: {frames}"


def test_rcl_rejects_the_empty_list_this_file_used_to_have(tmp_path):
    """The parser in these tests is rcl's own: `[]` comes back unset, which is what broke docking."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("docking_server:\n  ros__parameters:\n    dock_plugins: []\n")
    values, unset = rcl_parameters(bad, "docking_server")
    assert "dock_plugins" in unset and "dock_plugins" not in values
