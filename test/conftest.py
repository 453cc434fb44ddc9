"""Shared test set-up: ROS 2 traffic stays on this machine, in a domain of its own."""
import os
import random

# before any rclpy import: local discovery only, and a domain no other test run shares. Domains
# above 101 put DDS's ports (7400 + 250 x domain + ...) in Linux's ephemeral range (32768-60999),
# where any process's outgoing socket can hold one a participant then cannot bind.
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randint(1, 101)))
# pytest -n (pytest-xdist): each worker (gw0, gw1, ...) inherits the domain of the process that
# started it; its graphs would see the other workers' /clock, /tf and joint states. Each worker
# takes the next domains after it instead.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and _WORKER[2:].isdigit() and os.environ["ROS_DOMAIN_ID"].strip().isdigit():
    os.environ["ROS_DOMAIN_ID"] = str(1 + (int(os.environ["ROS_DOMAIN_ID"]) + int(_WORKER[2:])) % 101)

import pytest  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI (BONDSIM_NO_SKIP=1) a skipped test fails: a missing tool (check_urdf, xacro, rclpy)
    must not turn a check into a silent pass there."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("BONDSIM_NO_SKIP") == "1" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (BONDSIM_NO_SKIP=1): {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """The same for a whole test file skipped at import (``pytest.importorskip`` of rclpy or
    launch_ros): it counted as one quiet "skipped" and its tests were never collected."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("BONDSIM_NO_SKIP") == "1" and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"{collector.nodeid} skipped in CI (BONDSIM_NO_SKIP=1): {report.longrepr}"


@pytest.fixture
def context():
    """A private rclpy context for one test (tests that start nodes in-process)."""
    import rclpy

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.try_shutdown(context=ctx)


@pytest.hookimpl(optionalhook=True)  # (pytest-xdist's hook: a run without the plugin still loads this file)
def pytest_xdist_auto_num_workers(config):
    """``pytest -n auto``: a worker per core, at most four. Every worker starts ROS graphs whose
    timing its tests check; the suite is run with two (the project's 2-core machines)."""
    return max(1, min(4, os.cpu_count() or 1))
