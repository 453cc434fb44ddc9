"""The demo's own ROS domain (when the user set none) is one ROS 2 calls safe: 1-101. Above 101
DDS's ports (7400 + 250 x domain + offsets) lie in Linux's ephemeral range, where any process's
outgoing socket can take the port a participant needs, and the graph then never discovers it.
A domain the user sets is read as rcl reads it, and one rcl or DDS cannot use is refused by name."""
import pytest

from bondsim_ros.ros._env import domain_id_of
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


@pytest.mark.parametrize("env, domain", [
    ("", None), ("7", 7), (" 42 ", 42), ("0", 0), ("232", 232),
    # rcl reads it with C's strtoul, base 0 (rcl/domain_id.c): hexadecimal, octal, and digits
    # followed by anything are accepted as their number
    ("0x10", 16), ("010", 8), ("+5", 5), ("5abc", 5),
])
def test_the_domain_is_read_as_rcl_reads_it(env, domain):
    assert domain_id_of({"ROS_DOMAIN_ID": env}) == domain


@pytest.mark.parametrize("env, message", [
    ("abc", "is not a number"), ("  ", "is not a number"), ("0abc", "is not a number"),
    # beyond 232 the DDS ports do not exist: Fast DDS ends the process (status 1)
    ("233", "a domain is 0 to 232"), ("300", "a domain is 0 to 232"), ("-1", "a domain is 0 to 232"),
])
def test_a_domain_rcl_or_dds_cannot_use_is_refused_by_name(env, message):
    with pytest.raises(ValueError, match=f"ROS_DOMAIN_ID={env!r}.*{message}"):
        domain_id_of({"ROS_DOMAIN_ID": env})
