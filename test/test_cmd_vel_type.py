"""cmd_vel's message type as the node chooses it (cmd_vel_type auto), without rclpy: the type
the publishers present send, kept while a publisher of it remains."""
from bondsim_ros.ros.cmd_vel_type import STAMPED, TWIST, both_published, next_kind, publisher_kinds


def test_publisher_type_names_to_kinds():
    assert publisher_kinds(["geometry_msgs/msg/Twist"]) == {TWIST}
    assert publisher_kinds(["geometry_msgs/msg/TwistStamped", "std_msgs/msg/String"]) == {STAMPED}
    assert publisher_kinds([]) == set()


def test_the_kind_follows_the_publishers_and_is_kept_while_one_of_it_remains():
    assert next_kind(set(), None) is None  # nobody publishes yet: no subscription
    assert next_kind({TWIST}, None) == TWIST
    assert next_kind({TWIST}, TWIST) is None
    assert next_kind({STAMPED}, TWIST) == STAMPED  # the twist publisher went, a stamped one came
    assert next_kind({TWIST, STAMPED}, TWIST) is None  # both: keep the one there is, no flipping
    assert next_kind({TWIST, STAMPED}, None) == STAMPED
    assert next_kind(set(), STAMPED) is None  # publishers gone: keep listening
    assert both_published({TWIST, STAMPED}) and not both_published({TWIST})
