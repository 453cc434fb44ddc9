"""The demo's own ROS domain (when the user set none) is one ROS 2 calls safe: 1-101. Above 101
DDS's ports (7400 + 250 x domain + offsets) lie in Linux's ephemeral range, where any process's
outgoing socket can take the port a participant needs, and the graph then never discovers it."""
import pytest

from bondsim_ros.ros.demo import private_domain

EPHEMERAL_LOW = 32768  # Linux's net.ipv4.ip_local_port_range default lower end


def test_a_domain_of_its_own_keeps_out_of_the_ephemeral_ports(monkeypatch):
    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    drawn = {private_domain() for _ in range(2000)}
    assert min(drawn) >= 1 and max(drawn) <= 101, sorted(drawn)
    assert len(drawn) > 50  # still a domain of its own: not one fixed number every run shares
    # the domain's discovery port (RTPS: port base 7400 + domain gain 250 x domain)
    assert all(7400 + 250 * d < EPHEMERAL_LOW for d in drawn)


@pytest.mark.parametrize("env, domain", [("7", 7), (" 42 ", 42), ("0", 0)])
def test_the_users_domain_is_kept(monkeypatch, env, domain):
    monkeypatch.setenv("ROS_DOMAIN_ID", env)
    assert private_domain() == domain
