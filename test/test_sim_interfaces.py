"""dynamics_node's simulation_interfaces services, called through rclpy as a client would, with
their effect checked on /joint_states, /clock and /odom."""
import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy not installed (install the [ros] extra)")
pytest.importorskip("simulation_interfaces", reason="simulation_interfaces missing (tools/setup.sh generates it)")
from geometry_msgs.msg import TwistStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from simulation_interfaces import srv  # noqa: E402
from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402

from bondsim_ros.ros.dynamics_node import DynamicsNode  # noqa: E402

RATE = 33.0
PERIOD_NS = 1e9 / RATE  # 30303030.3 ns: stamps are whole ns, so within 1 ns of a multiple


def ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


class Sim:
    """A dynamics node and a client node on one executor; ``call`` waits for an answer."""

    def __init__(self, **overrides):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = DynamicsNode(overrides={"publish_rate": RATE, **overrides}, context=self.context)
        self.initial = self.node.twin.state()  # the state a reset must bring back
        self.client = rclpy.create_node("sim_client", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.client)
        self.joints, self.clock, self.odom = [], [], []
        self.client.create_subscription(JointState, "/joint_states", self.joints.append, 100)
        self.client.create_subscription(Clock, "/clock", lambda m: self.clock.append(ns(m.clock)), 100)
        self.client.create_subscription(Odometry, "/odom", self.odom.append, 100)
        self.clients = {}

    def spin(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.005)

    def call(self, kind, name, **fields):
        if name not in self.clients:
            self.clients[name] = self.client.create_client(kind, name)
            end = time.monotonic() + 10.0
            while not self.clients[name].service_is_ready() and time.monotonic() < end:
                self.spin(0.05)
        req = kind.Request()
        for k, v in fields.items():
            setattr(req, k, v)
        fut = self.clients[name].call_async(req)
        end = time.monotonic() + 30.0
        while not fut.done() and time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)
        assert fut.done(), f"{name}: no answer"
        return fut.result()

    def set_state(self, state):
        return self.call(srv.SetSimulationState, "/set_simulation_state",
                         state=SimulationState(state=state)).result

    def get_state(self):
        return self.call(srv.GetSimulationState, "/get_simulation_state").state.state

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        self.client.destroy_node()
        rclpy.try_shutdown(context=self.context)


def test_features_list_what_is_served():
    sim = Sim(reference="cmd_vel")
    try:
        feats = set(sim.call(srv.GetSimulatorFeatures, "/get_simulator_features").features.features)
        F = SimulatorFeatures
        # SIMULATION_RESET_TIME / _STATE mean SCOPE_TIME / SCOPE_STATE alone are taken: they are not, so not listed
        assert feats == {F.ENTITY_STATE_GETTING, F.ENTITY_STATE_SETTING, F.SIMULATION_RESET,
                         F.SIMULATION_STATE_GETTING, F.SIMULATION_STATE_SETTING,
                         F.SIMULATION_STATE_PAUSE, F.STEP_SIMULATION_SINGLE, F.STEP_SIMULATION_MULTIPLE}
        Req = srv.ResetSimulation.Request
        for scope, result in ((Req.SCOPE_TIME | Req.SCOPE_STATE, Result.RESULT_OK),
                              (Req.SCOPE_TIME | Req.SCOPE_STATE | Req.SCOPE_SPAWNED, Result.RESULT_OK),
                              (Req.SCOPE_TIME, Result.RESULT_FEATURE_UNSUPPORTED),
                              (Req.SCOPE_STATE, Result.RESULT_FEATURE_UNSUPPORTED),
                              (Req.SCOPE_SPAWNED, Result.RESULT_FEATURE_UNSUPPORTED)):
            assert sim.call(srv.ResetSimulation, "/reset_simulation", scope=scope).result.result == result, scope
        # every scope a listed feature names is taken
        named = {F.SIMULATION_RESET_TIME: Req.SCOPE_TIME, F.SIMULATION_RESET_STATE: Req.SCOPE_STATE,
                 F.SIMULATION_RESET_SPAWNED: Req.SCOPE_SPAWNED}
        for feature, scope in named.items():
            if feature in feats:
                got = sim.call(srv.ResetSimulation, "/reset_simulation", scope=scope).result.result
                assert got == Result.RESULT_OK, (feature, scope)
        served = dict(sim.client.get_service_names_and_types())
        for name in ("get_simulator_features", "get_simulation_state", "set_simulation_state", "step_simulation",
                     "reset_simulation", "get_entities", "get_entities_states", "get_entity_state",
                     "set_entity_state"):
            kind = "".join(w.capitalize() for w in name.split("_"))
            assert served.get(f"/{name}") == [f"simulation_interfaces/srv/{kind}"], name
    finally:
        sim.close()


def test_pause_step_reset_stop_and_play():
    sim = Sim(reference="rose", use_sim_time=True)  # /clock: the simulated time itself
    try:
        sim.spin(1.0)
        assert sim.get_state() == SimulationState.STATE_PLAYING
        assert sim.set_state(SimulationState.STATE_PLAYING).result == 101  # ALREADY_IN_TARGET_STATE
        assert sim.set_state(SimulationState.STATE_PAUSED).result == Result.RESULT_OK
        assert sim.get_state() == SimulationState.STATE_PAUSED
        sim.spin(0.3)  # anything still on its way
        n_joints, n_clock = len(sim.joints), len(sim.clock)
        last_stamp, last_clock = ns(sim.joints[-1].header.stamp), sim.clock[-1]
        sim.spin(1.0)
        assert len(sim.joints) == n_joints and len(sim.clock) == n_clock, "paused, yet frames were published"
        assert sim.node.twin.t * 1e9 == pytest.approx(last_clock, abs=1), "paused: the last frame shown is the state"

        # stepping: exactly that many frames, each one period of simulated time later
        playing = sim.call(srv.StepSimulation, "/step_simulation", steps=5).result
        assert playing.result == Result.RESULT_OK, playing.error_message
        sim.spin(0.5)
        new_clock = sim.clock[n_clock:]
        new_stamps = [ns(m.header.stamp) for m in sim.joints[n_joints:]]
        print(f"5 steps: clock {last_clock} -> {new_clock}")
        assert len(new_clock) == 5 and len(new_stamps) == 5
        assert abs(new_clock[-1] - last_clock - 5 * PERIOD_NS) <= 1
        assert all(abs(b - a - PERIOD_NS) <= 1 for a, b in zip([last_clock] + new_clock, new_clock))
        assert abs(new_stamps[-1] - last_stamp - 5 * PERIOD_NS) <= 1
        assert sim.get_state() == SimulationState.STATE_PAUSED
        bad = sim.call(srv.StepSimulation, "/step_simulation", steps=0).result
        assert bad.result == Result.RESULT_OPERATION_FAILED

        # reset while paused: the initial state, shown at once, still paused
        assert sim.call(srv.ResetSimulation, "/reset_simulation").result.result == Result.RESULT_OK
        sim.spin(0.3)
        assert sim.clock[-1] == 0
        assert list(sim.joints[-1].position) == sim.initial.position.tolist()
        odom = sim.odom[-1].pose.pose
        assert (odom.position.x, odom.position.y) == sim.initial.pose[:2]
        assert 2 * math.atan2(odom.orientation.z, odom.orientation.w) == pytest.approx(sim.initial.pose[2], abs=1e-12)
        assert sim.get_state() == SimulationState.STATE_PAUSED
        unsupported = sim.call(srv.ResetSimulation, "/reset_simulation", scope=1).result  # time alone
        assert unsupported.result == Result.RESULT_FEATURE_UNSUPPORTED

        # play, then step refused, then stop: the initial state again, paused
        assert sim.set_state(SimulationState.STATE_PLAYING).result == Result.RESULT_OK
        sim.spin(1.0)
        assert len(sim.clock) > n_clock + 15 and sim.clock[-1] > 0.5e9
        step_playing = sim.call(srv.StepSimulation, "/step_simulation", steps=1).result
        assert step_playing.result == Result.RESULT_OPERATION_FAILED
        assert sim.set_state(SimulationState.STATE_STOPPED).result == Result.RESULT_OK
        assert sim.get_state() == SimulationState.STATE_STOPPED
        sim.spin(0.3)
        n = len(sim.joints)
        assert sim.clock[-1] == 0 and list(sim.joints[-1].position) == sim.initial.position.tolist()
        sim.spin(0.5)
        assert len(sim.joints) == n
        assert sim.set_state(SimulationState.STATE_STOPPED).result == 101  # ALREADY_IN_TARGET_STATE
        assert sim.set_state(SimulationState.STATE_PAUSED).result == 103  # INCORRECT_TRANSITION
        assert sim.set_state(SimulationState.STATE_QUITTING).result == Result.RESULT_FEATURE_UNSUPPORTED
        assert sim.set_state(SimulationState.STATE_PLAYING).result == Result.RESULT_OK
        sim.spin(1.0)
        assert len(sim.joints) > n + 15 and sim.get_state() == SimulationState.STATE_PLAYING

        # the node's own pause service is the same state
        assert sim.call(SetBool, "/dynamics_node/pause", data=True).success
        assert sim.get_state() == SimulationState.STATE_PAUSED
        assert sim.call(SetBool, "/dynamics_node/pause", data=False).success
        assert sim.get_state() == SimulationState.STATE_PLAYING
    finally:
        sim.close()


def _yaw(q):
    return 2 * math.atan2(q.z, q.w)


def _x(sim):
    """The base's x in odom, as get_entity_state answers it."""
    got = sim.call(srv.GetEntityState, "/get_entity_state", entity=sim.node.twin.name)
    assert got.result.result == Result.RESULT_OK, got.result.error_message
    return got.state.pose.position.x


def _command(sim, vx, wait=0.0):
    """Publish one cmd_vel (Twist) and spin until the node has it, then ``wait`` s more of wall time."""
    from geometry_msgs.msg import Twist

    if not hasattr(sim, "cmd_vel"):
        sim.cmd_vel = sim.client.create_publisher(Twist, "/cmd_vel", 10)
    cmd = Twist()
    cmd.linear.x = vx
    end = time.monotonic() + 10.0
    sim.cmd_vel.publish(cmd)
    while sim.node.command_queue.next_twist is None and time.monotonic() < end:
        sim.spin(0.02)
    assert sim.node.command_queue.next_twist is not None, "cmd_vel not received"
    sim.spin(wait)


def _step(sim, n):
    res = sim.call(srv.StepSimulation, "/step_simulation", steps=n).result
    assert res.result == Result.RESULT_OK, res.error_message


def test_one_command_drives_a_stepped_base_for_cmd_vel_timeout_simulated_seconds():
    """The cmd_vel watchdog counts simulated time: paused, one vx = 0.5 command, then 300 steps
    (9.1 simulated s) move the base as 0.5 s of that command does, however long the wall clock ran
    between the command and the steps (on the wall clock, 1 s of waiting had dropped it: x = 0;
    with no waiting, four runs ended at x = 3.63 to 6.30 m)."""
    from bondsim_ros.robots import load_robot
    from bondsim_ros.twin.protocol import TWIN_OPTIONS, Limits

    # the node's twin by hand: 0.5 m/s for 0.5 s, then at rest until the 300th frame
    twin = load_robot("robotino").make_twin("twist", TWIN_OPTIONS.replace(rtol=1e-6, hmax=0.02),
                                            limits=Limits(max_linear=1.0, max_angular=3.0))
    twin.set_twist(0.5, 0.0, 0.0)
    twin.step_to(0.5)
    twin.set_twist(0.0, 0.0, 0.0)
    want = twin.step_to(300 / RATE).pose[0]

    sim = Sim(reference="cmd_vel", cmd_vel_type="twist", use_sim_time=True)
    try:
        assert sim.set_state(SimulationState.STATE_PAUSED).result == Result.RESULT_OK
        moved = []
        for wait in (1.0, 0.0, 0.3):
            x0 = _x(sim)
            _command(sim, 0.5, wait)
            _step(sim, 300)
            moved.append(_x(sim) - x0)
        print(f"moved {moved} m, by hand {want} m")
        assert want > 0.2
        assert moved == pytest.approx([want] * 3, abs=1e-5)
    finally:
        sim.close()


def test_a_reset_or_stop_leaves_no_velocity_command_in_force():
    """ResetSimulation is "as if it was closed and launched again", STOPPED "pausing and
    resetting": a twin just launched stands still until told otherwise. A command applied
    before (10 steps of vx = 0.5 under the 0.5 s watchdog, still in force) or received and not
    yet applied is gone: 10 more steps leave the base at the origin (it drove on as before)."""
    sim = Sim(reference="cmd_vel", cmd_vel_type="twist", use_sim_time=True)
    try:
        assert sim.set_state(SimulationState.STATE_PAUSED).result == Result.RESULT_OK

        def reset_simulation():
            assert sim.call(srv.ResetSimulation, "/reset_simulation").result.result == Result.RESULT_OK

        def stop():
            assert sim.set_state(SimulationState.STATE_STOPPED).result == Result.RESULT_OK

        def trigger():
            assert sim.call(Trigger, "/dynamics_node/reset").success

        for name, reset in (("ResetSimulation", reset_simulation), ("STOPPED", stop), ("~/reset", trigger)):
            _command(sim, 0.5)
            _step(sim, 10)
            assert _x(sim) > 0.05, name
            reset()
            assert _x(sim) == 0.0 and sim.node.twin.t == 0.0, name
            _step(sim, 10)
            assert _x(sim) == pytest.approx(0.0, abs=1e-9), f"{name}: the command outlived the reset"
            _command(sim, 0.5)  # received, not applied: a reset drops it too
            reset()
            _step(sim, 10)
            assert _x(sim) == pytest.approx(0.0, abs=1e-9), f"{name}: a command received before the reset applied"
            assert sim.node.twin.twist == (0.0, 0.0, 0.0), name
    finally:
        sim.close()


def test_a_reset_keeps_a_builtin_run_on_its_model_file_s_commanded_values(tmp_path):
    """A YAML model's builtin run takes its twist from the file (vx_cmd: 0.5): a reset, clearing
    the commands, starts that run again, which drives the cart as the first one did."""
    import shutil
    from pathlib import Path

    live = Path(__file__).resolve().parent / "data" / "live"
    shutil.copy(live / "cart.xml", tmp_path / "cart.xml")
    model = tmp_path / "cart.yaml"
    model.write_text((live / "cart.yaml").read_text().replace("vx_cmd: 0.0", "vx_cmd: 0.5"))
    sim = Sim(model=str(model), reference="builtin", use_sim_time=True)
    try:
        assert sim.set_state(SimulationState.STATE_PAUSED).result == Result.RESULT_OK
        runs = []
        for _ in range(2):
            assert sim.call(srv.ResetSimulation, "/reset_simulation").result.result == Result.RESULT_OK
            _step(sim, 30)
            runs.append(_x(sim))
        print(f"x after 30 steps: {runs}")
        assert runs[0] > 0.1 and runs[1] == pytest.approx(runs[0], abs=1e-12)
        assert sim.node.twin.twist[0] == 0.5
    finally:
        sim.close()


def test_entities_their_state_and_placing_the_base():
    sim = Sim(reference="cmd_vel", cmd_vel_type="stamped")
    try:
        sim.spin(0.5)
        from simulation_interfaces.msg import EntityCategory, EntityFilters

        got = sim.call(srv.GetEntities, "/get_entities")
        assert got.result.result == Result.RESULT_OK and list(got.entities) == ["robotino"]
        assert list(sim.call(srv.GetEntities, "/get_entities",
                             filters=EntityFilters(filter="^robo")).entities) == ["robotino"]
        assert list(sim.call(srv.GetEntities, "/get_entities", filters=EntityFilters(filter="^arm")).entities) == []
        cats = EntityFilters(categories=[EntityCategory(category=EntityCategory.CATEGORY_ROBOT)])
        assert sim.call(srv.GetEntities, "/get_entities",
                        filters=cats).result.result == Result.RESULT_FEATURE_UNSUPPORTED
        assert sim.call(srv.GetEntityState, "/get_entity_state",
                        entity="nobody").result.result == Result.RESULT_NOT_FOUND

        # place the base: /odom and GetEntityState show the new pose
        from simulation_interfaces.msg import EntityState

        target = EntityState()
        target.header.frame_id = "odom"
        target.pose.position.x, target.pose.position.y = 1.5, -0.5
        target.pose.orientation.z, target.pose.orientation.w = math.sin(0.35), math.cos(0.35)  # yaw 0.7
        res = sim.call(srv.SetEntityState, "/set_entity_state", entity="robotino", state=target).result
        assert res.result == Result.RESULT_OK, res.error_message
        sim.odom.clear()
        sim.spin(0.3)
        pose = sim.odom[0].pose.pose
        assert (pose.position.x, pose.position.y) == pytest.approx((1.5, -0.5), abs=1e-9)
        assert _yaw(pose.orientation) == pytest.approx(0.7, abs=1e-9)
        st = sim.call(srv.GetEntityState, "/get_entity_state", entity="robotino")
        assert st.result.result == Result.RESULT_OK and st.state.header.frame_id == "odom"
        assert (st.state.pose.position.x, st.state.pose.position.y) == pytest.approx((1.5, -0.5), abs=1e-9)

        # it drives on from there: forward in the body frame is along yaw 0.7 in odom
        pub = sim.client.create_publisher(TwistStamped, "/cmd_vel", 10)
        cmd = TwistStamped()
        cmd.twist.linear.x = 0.3
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            pub.publish(cmd)
            sim.spin(0.05)
        st = sim.call(srv.GetEntityState, "/get_entity_state", entity="robotino").state
        vx, vy = st.twist.linear.x, st.twist.linear.y
        print(f"after placing at yaw 0.7 and 1.5 s of vx=0.3: odom twist ({vx:.4f}, {vy:.4f})")
        assert (vx, vy) == pytest.approx((0.3 * math.cos(0.7), 0.3 * math.sin(0.7)), rel=0.03)
        dx, dy = st.pose.position.x - 1.5, st.pose.position.y + 0.5
        assert math.atan2(dy, dx) == pytest.approx(0.7, abs=0.05) and math.hypot(dx, dy) > 0.2

        # what cannot be set is refused, and nothing moves
        before = sim.node.twin.offset
        tilted = EntityState()
        tilted.pose.position.z = 0.1
        tilted.pose.orientation.w = 1.0
        assert sim.call(srv.SetEntityState, "/set_entity_state", entity="robotino",
                        state=tilted).result.result == srv.SetEntityState.Response.INVALID_POSE
        moving = EntityState()
        moving.pose.orientation.w = 1.0
        moving.twist.linear.x = 1.0
        assert sim.call(srv.SetEntityState, "/set_entity_state", entity="robotino",
                        state=moving).result.result == Result.RESULT_FEATURE_UNSUPPORTED
        far = EntityState()
        far.pose.orientation.w = 1.0
        far.pose.position.x = 1e300  # finite, but a frame's motion would be lost to its rounding
        res = sim.call(srv.SetEntityState, "/set_entity_state", entity="robotino", state=far).result
        assert res.result == srv.SetEntityState.Response.INVALID_POSE and (
            "beyond the world's bounds" in res.error_message)
        assert sim.node.twin.offset == before
    finally:
        sim.close()


def test_placing_a_stopped_base_leaves_it_paused_and_stopped_resets_it_again():
    """STOPPED is "pausing and resetting" (SimulationState.msg): once SetEntityState moved the base
    away from its initial pose, the simulation is paused, and STOPPED resets it again."""
    from simulation_interfaces.msg import EntityState

    sim = Sim(reference="cmd_vel")
    try:
        sim.spin(0.5)
        assert sim.set_state(SimulationState.STATE_STOPPED).result == Result.RESULT_OK
        target = EntityState()
        target.header.frame_id = "odom"
        target.pose.position.x, target.pose.position.y = 2.0, 1.0
        target.pose.orientation.w = 1.0
        res = sim.call(srv.SetEntityState, "/set_entity_state", entity="robotino", state=target).result
        assert res.result == Result.RESULT_OK, res.error_message
        assert _x(sim) == pytest.approx(2.0, abs=1e-9)
        assert sim.get_state() == SimulationState.STATE_PAUSED
        assert sim.set_state(SimulationState.STATE_PAUSED).result == 101  # ALREADY_IN_TARGET_STATE
        assert sim.set_state(SimulationState.STATE_STOPPED).result == Result.RESULT_OK
        assert sim.get_state() == SimulationState.STATE_STOPPED
        assert _x(sim) == pytest.approx(sim.initial.pose[0], abs=1e-9)
    finally:
        sim.close()


def test_a_twist_or_acceleration_that_is_not_finite_is_refused_and_nothing_is_placed():
    """NaN is neither zero nor non-zero: a state carrying one was taken as a pose alone (RESULT_OK).
    Not finite is refused, as in the pose, and the base stays where it is."""
    from simulation_interfaces.msg import EntityState

    sim = Sim(reference="cmd_vel")
    try:
        assert sim.set_state(SimulationState.STATE_PAUSED).result == Result.RESULT_OK
        before = _x(sim), sim.node.twin.offset
        for field, component, value in (("twist", "linear", math.nan), ("twist", "angular", math.inf),
                                        ("acceleration", "linear", -math.inf), ("acceleration", "angular", math.nan)):
            st = EntityState()
            st.pose.position.x = 1.0
            st.pose.orientation.w = 1.0
            setattr(getattr(getattr(st, field), component), "z" if component == "angular" else "x", value)
            res = sim.call(srv.SetEntityState, "/set_entity_state", entity="robotino", state=st).result
            assert res.result == Result.RESULT_OPERATION_FAILED, (field, component, value)
            assert f"{field} not finite" in res.error_message, res.error_message
            assert (_x(sim), sim.node.twin.offset) == before
    finally:
        sim.close()


def _entities(sim, service=srv.GetEntities, **filters):
    """The answer of get_entities (or get_entities_states) for EntityFilters(**filters)."""
    from simulation_interfaces.msg import EntityFilters

    name = "/get_entities" if service is srv.GetEntities else "/get_entities_states"
    return sim.call(service, name, filters=EntityFilters(**filters))


def test_the_name_filter_is_a_posix_extended_regular_expression():
    """EntityFilters.msg: "The regular expression syntax is POSIX Extended". Its bracket classes
    find the robot; Perl's syntax, which POSIX does not have, is refused naming what it is."""
    sim = Sim(reference="cmd_vel")
    try:
        sim.spin(0.3)
        for pattern, expected in [("robot[[:alpha:]]+", ["robotino"]), ("^[[:lower:]]+$", ["robotino"]),
                                  ("^robo(tino|t)$", ["robotino"]), ("bot", ["robotino"]),  # found anywhere
                                  ("^ROBOTINO$", []), ("^[[:upper:]]", []), ("robotino[[:digit:]]", [])]:
            for service in (srv.GetEntities, srv.GetEntitiesStates):
                got = _entities(sim, service, filter=pattern)
                assert got.result.result == Result.RESULT_OK, (pattern, got.result.error_message)
                assert list(got.entities) == expected, (pattern, service)
        states = _entities(sim, srv.GetEntitiesStates, filter="robot[[:alpha:]]+").states
        assert len(states) == 1 and states[0].header.frame_id == "odom"
        for pattern, named in [("(?i)ROBOTINO", "'(?' at 0 is not POSIX ERE"),
                               (r"robo\w+", r"'\w' at 4 is not POSIX ERE"),
                               ("robot(?=ino)", "'(?' at 5 is not POSIX ERE"),
                               ("[:alpha:]", "'[:alpha:]' at 0 is not POSIX ERE"),
                               ("robo{,2}", "'{' at 4 is not POSIX ERE"),
                               ("robo**", "'*' at 5 is not POSIX ERE")]:
            for service in (srv.GetEntities, srv.GetEntitiesStates):
                got = _entities(sim, service, filter=pattern)
                assert got.result.result == Result.RESULT_OPERATION_FAILED, (pattern, service)
                assert named in got.result.error_message and pattern in got.result.error_message, pattern
                assert list(got.entities) == []
    finally:
        sim.close()


def _sphere(centre, radius, points=None):
    from geometry_msgs.msg import Vector3
    from simulation_interfaces.msg import Bounds

    pts = points if points is not None else [Vector3(x=float(centre[0]), y=float(centre[1]), z=float(centre[2])),
                                             Vector3(x=float(radius), y=9.0, z=9.0)]  # y, z of the radius: ignored
    return Bounds(type=Bounds.TYPE_SPHERE, points=pts)


def test_a_sphere_keeps_the_entities_whose_position_is_in_it():
    """Bounds TYPE_SPHERE ("at least TYPE_SPHERE needs to be supported"): the base, placed at
    (1.5, -0.5) in odom, is kept where the position get_entity_state reports is within the radius
    of the centre (in 3-D: the centre's z counts), and follows the base when it is placed again;
    the other bounds types are unsupported, malformed spheres refused."""
    from geometry_msgs.msg import Vector3
    from simulation_interfaces.msg import Bounds, EntityState

    sim = Sim(reference="cmd_vel")
    try:
        sim.spin(0.3)
        assert sim.set_state(SimulationState.STATE_PAUSED).result == Result.RESULT_OK  # the base holds still

        def place(x, y):
            target = EntityState()
            target.pose.position.x, target.pose.position.y = x, y
            target.pose.orientation.w = 1.0
            res = sim.call(srv.SetEntityState, "/set_entity_state", entity="robotino", state=target).result
            assert res.result == Result.RESULT_OK, res.error_message
            st = sim.call(srv.GetEntityState, "/get_entity_state", entity="robotino").state.pose.position
            return st.x, st.y, st.z

        x, y, z = place(1.5, -0.5)
        assert (x, y, z) == pytest.approx((1.5, -0.5, 0.0), abs=1e-9)
        centre = (x - 0.3, y + 0.4, z)  # 0.5 m away
        for service in (srv.GetEntities, srv.GetEntitiesStates):
            inside = _entities(sim, service, bounds=_sphere(centre, 0.5 + 1e-9))
            assert inside.result.result == Result.RESULT_OK, inside.result.error_message
            assert list(inside.entities) == ["robotino"]
            outside = _entities(sim, service, bounds=_sphere(centre, 0.5 - 1e-6))
            assert outside.result.result == Result.RESULT_OK and list(outside.entities) == []
        state = _entities(sim, srv.GetEntitiesStates, bounds=_sphere(centre, 0.6)).states[0]
        assert (state.pose.position.x, state.pose.position.y) == (x, y)
        above = (x, y, 0.5)  # straight above the base: the height counts
        assert list(_entities(sim, bounds=_sphere(above, 0.49)).entities) == []
        assert list(_entities(sim, bounds=_sphere(above, 0.51)).entities) == ["robotino"]
        # with the name filter: both apply
        assert list(_entities(sim, bounds=_sphere(centre, 0.6), filter="^robo").entities) == ["robotino"]
        assert list(_entities(sim, bounds=_sphere(centre, 0.6), filter="^arm").entities) == []
        # placed elsewhere, the base leaves the sphere
        place(4.0, 4.0)
        assert list(_entities(sim, bounds=_sphere(centre, 0.6)).entities) == []
        assert list(_entities(sim, bounds=_sphere((4.0, 4.1, 0.0), 0.2)).entities) == ["robotino"]

        for kind, name in [(Bounds.TYPE_BOX, "TYPE_BOX"), (Bounds.TYPE_CONVEX_HULL, "TYPE_CONVEX_HULL")]:
            corners = [Vector3(x=-10.0, y=-10.0, z=-10.0), Vector3(x=10.0, y=10.0, z=10.0), Vector3(x=10.0)]
            for service in (srv.GetEntities, srv.GetEntitiesStates):
                got = _entities(sim, service, bounds=Bounds(type=kind, points=corners))
                assert got.result.result == Result.RESULT_FEATURE_UNSUPPORTED, name
                assert name in got.result.error_message and list(got.entities) == []
        for bounds, named in [(_sphere(None, None, points=[Vector3(x=4.0, y=4.0)]), "2 points"),
                              (_sphere((4.0, 4.0, 0.0), -1.0), "radius -1"),
                              (_sphere((4.0, 4.0, 0.0), 0.0), "radius 0"),
                              (_sphere((4.0, 4.0, 0.0), math.inf), "radius inf"),
                              (_sphere((math.nan, 4.0, 0.0), 1.0), "centre not finite"),
                              (Bounds(type=Bounds.TYPE_EMPTY, points=[Vector3(), Vector3(x=1.0)]), "TYPE_EMPTY"),
                              (Bounds(type=7, points=[Vector3(), Vector3(x=1.0)]), "no bounds type 7")]:
            got = _entities(sim, bounds=bounds)
            assert got.result.result == Result.RESULT_OPERATION_FAILED and named in got.result.error_message, named
    finally:
        sim.close()


def test_a_fixed_base_stands_at_the_origin_for_a_sphere_its_surface_included():
    sim = Sim(model="arm3dof", reference="joint_trajectory")
    try:
        position = sim.call(srv.GetEntityState, "/get_entity_state", entity="arm3dof").state.pose.position
        assert (position.x, position.y, position.z) == (0.0, 0.0, 0.0)
        assert list(_entities(sim, bounds=_sphere((0.0, 0.3, 0.4), 0.5)).entities) == ["arm3dof"]
        assert list(_entities(sim, bounds=_sphere((0.0, 0.3, 0.4), 0.4999)).entities) == []
        got = _entities(sim, srv.GetEntitiesStates, bounds=_sphere((0.0, 0.0, -1.0), 1.0))
        assert list(got.entities) == ["arm3dof"] and got.states[0].pose.orientation.w == 1.0
    finally:
        sim.close()


def test_a_step_count_beyond_the_limit_is_refused_and_the_node_keeps_answering():
    """StepSimulation's frames run in its callback: 2**63 of them froze the node (no service
    answered, SIGINT ignored) until killed. Above MAX_STEPS the call is refused at once."""
    from bondsim_ros.ros.sim_interfaces import MAX_STEPS

    sim = Sim(reference="cmd_vel")
    try:
        sim.spin(0.3)
        assert sim.set_state(SimulationState.STATE_PAUSED).result == Result.RESULT_OK
        t = sim.node.twin.t
        tic = time.monotonic()
        res = sim.call(srv.StepSimulation, "/step_simulation", steps=2**63).result
        assert res.result == Result.RESULT_OPERATION_FAILED and f"at most {MAX_STEPS} per call" in res.error_message
        assert time.monotonic() - tic < 5.0 and sim.node.twin.t == t
        assert sim.get_state() == SimulationState.STATE_PAUSED
        ok = sim.call(srv.StepSimulation, "/step_simulation", steps=3).result
        assert ok.result == Result.RESULT_OK and sim.node.twin.t == pytest.approx(t + 3 / RATE, abs=1e-9)
    finally:
        sim.close()


def test_a_fixed_base_is_an_entity_that_cannot_be_placed():
    sim = Sim(model="arm3dof", reference="joint_trajectory")
    try:
        feats = set(sim.call(srv.GetSimulatorFeatures, "/get_simulator_features").features.features)
        assert SimulatorFeatures.ENTITY_STATE_SETTING not in feats
        assert list(sim.call(srv.GetEntities, "/get_entities").entities) == ["arm3dof"]
        from simulation_interfaces.msg import EntityState

        st = EntityState()
        st.pose.orientation.w = 1.0
        res = sim.call(srv.SetEntityState, "/set_entity_state", entity="arm3dof", state=st).result
        assert res.result == Result.RESULT_FEATURE_UNSUPPORTED and "fixed base" in res.error_message
        state = sim.call(srv.GetEntityState, "/get_entity_state", entity="arm3dof")
        assert state.result.result == Result.RESULT_OK and state.state.pose.orientation.w == 1.0
    finally:
        sim.close()


def test_placement_keeps_the_model_and_moves_what_it_reports():
    """ROS-free: the placed pose is exactly the one asked for, the body twist is the model's, the
    world twist turns with the placement, and a reset drops it."""
    from bondsim_ros.robots import load_robot
    from bondsim_ros.twin.placement import PlacedTwin

    twin = PlacedTwin(load_robot("robotino").make_twin("twist"))
    twin.set_twist(0.2, 0.0, 0.0)
    s0 = twin.step_to(0.5)
    placed = twin.set_pose(2.0, 1.0, math.pi / 2)
    assert placed.pose == pytest.approx((2.0, 1.0, math.pi / 2), abs=1e-12)
    assert placed.twist_body == s0.twist_body
    assert np.allclose(placed.position, s0.position)
    s1 = twin.step_to(1.0)
    assert s1.twist_world[0] == pytest.approx(0.0, abs=1e-3) and s1.twist_world[1] == pytest.approx(0.2, rel=0.02)
    assert s1.pose[1] - 1.0 == pytest.approx(0.1, rel=0.05) and s1.pose[0] == pytest.approx(2.0, abs=1e-3)
    twin.reset()
    assert twin.state().pose == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)


def _documented():
    """The first column of docs/ros.md's table "Interfaces of `dynamics_node`": every name in
    backticks."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "ros.md").read_text()
    table = text.split("### Interfaces of `dynamics_node`", 1)[1].split("\n\n", 2)[2]
    names = set()
    for line in table.splitlines()[2:]:  # after the header and its rule
        if not line.startswith("| `"):
            break
        names.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return names


def test_the_docs_table_lists_every_topic_service_and_parameter():
    from bondsim_ros.ros.dynamics_node import PARAMS

    sim = Sim(reference="cmd_vel", cmd_vel_type="twist")
    try:
        sim.spin(0.3)
        documented = _documented()

        def doc_name(full):
            if full.startswith("/dynamics_node/"):
                return "~/" + full.split("/", 2)[2]
            for wild in ("probe_error_untimed", "probe_error", "probes"):
                if full.startswith(f"/{wild}/"):
                    return f"{wild}/NAME"
            return full if full in ("/tf", "/clock", "/diagnostics") else full.lstrip("/")

        rclpy_own = {"/rosout", "/parameter_events"}
        n = sim.node
        pubs = {doc_name(t) for t, _ in n.get_publisher_names_and_types_by_node("dynamics_node", "/")
                if t not in rclpy_own}
        subs = {doc_name(t) for t, _ in n.get_subscriber_names_and_types_by_node("dynamics_node", "/")
                if t not in rclpy_own}
        parameter_services = ("describe_parameters", "get_parameter_types", "get_parameters", "list_parameters",
                              "set_parameters", "set_parameters_atomically", "get_type_description")
        srvs = {doc_name(t) for t, _ in n.get_service_names_and_types_by_node("dynamics_node", "/")
                if t.rsplit("/", 1)[1] not in parameter_services}
        params = set(PARAMS) | {"use_sim_time"}
        print(sorted(pubs), sorted(subs), sorted(srvs))
        assert "joint_commands" in subs and "set_entity_state" in srvs and "/clock" in pubs
        missing = (pubs | subs | srvs | params) - documented
        assert not missing, f"docs/ros.md's interface table lacks {sorted(missing)}"
    finally:
        sim.close()
