"""The ROS 2 simulation interfaces standard (ros-simulation/simulation_interfaces) on the
dynamics node: simulator features, simulation state (playing, paused, stopped), stepping, reset
and the robot's base as the one entity (its state read and its pose set; entity queries filtered
by name, a POSIX extended regular expression, and by sphere bounds).

Service names are the standard's interface names in snake case (`get_simulator_features`,
`set_simulation_state`, ...), relative to the node's namespace, as Gazebo and Isaac Sim name
theirs. Every answer carries a simulation_interfaces/Result; what the twin cannot do is answered
RESULT_FEATURE_UNSUPPORTED with the reason, and left out of GetSimulatorFeatures.
"""
from __future__ import annotations

import math

from bondsim_ros.twin.placement import WORLD_BOUND, check_bound
from bondsim_ros.twin.protocol import CommandError

from .messages import stamp_msg
from .posix_ere import NotPosixEre, compile_ere

PLANAR_TOLERANCE = 1e-6  # z [m], roll and pitch [rad] a planar base accepts as 0
# StepSimulation's frames per call: they run in the service's callback, during which the node
# answers nothing (the Robotino steps some 3,000 frames a second: 10,000 are about 3 s)
MAX_STEPS = 10_000


def available() -> bool:
    try:
        import simulation_interfaces.srv  # noqa: F401
    except ImportError:
        return False
    return True


def offer(node):
    """The standard's services on ``node`` (a DynamicsNode), or None, said in its log, where the
    simulation_interfaces package is missing."""
    if available():
        return SimulationInterfaces(node)
    node.get_logger().warning("simulation_interfaces is missing: its services are not offered (on a ROS install: "
                              "apt install ros-$ROS_DISTRO-simulation-interfaces; in the pip environment: "
                              "tools/setup.sh generates it)")
    return None


class _Refused(Exception):
    """An entity query the twin answers with ``args``: (Result code, reason)."""


def yaw_of_quaternion(x, y, z, w):
    """(yaw, roll, pitch, norm) of a quaternion (ZYX Euler angles, REP-103)."""
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if norm > 0:
        x, y, z, w = x / norm, y / norm, z / norm, w / norm
    roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = math.asin(max(-1.0, min(1.0, 2 * (w * y - z * x))))
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return yaw, roll, pitch, norm


class SimulationInterfaces:
    """The standard's services for one DynamicsNode (``node``): it keeps the state, this class
    answers in the standard's terms."""

    def __init__(self, node):
        from simulation_interfaces import srv
        from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures

        self.node = node
        self.Result, self.State, self.Features = Result, SimulationState, SimulatorFeatures
        for name, kind, handler in (
                ("get_simulator_features", srv.GetSimulatorFeatures, self._features),
                ("get_simulation_state", srv.GetSimulationState, self._get_state),
                ("set_simulation_state", srv.SetSimulationState, self._set_state),
                ("step_simulation", srv.StepSimulation, self._step),
                ("reset_simulation", srv.ResetSimulation, self._reset),
                ("get_entities", srv.GetEntities, self._entities),
                ("get_entities_states", srv.GetEntitiesStates, self._entities_states),
                ("get_entity_state", srv.GetEntityState, self._entity_state),
                ("set_entity_state", srv.SetEntityState, self._set_entity_state)):
            node.create_service(kind, name, handler)

    # -- helpers -----------------------------------------------------------------------------
    def _result(self, response, code, message=""):
        response.result.result = code
        response.result.error_message = message
        return response

    @property
    def entity(self) -> str:
        """The one entity: the robot, named as the twin (after frame_prefix, several robots)."""
        return self.node.p["frame_prefix"] + self.node.twin.name

    def _fill_state(self, msg, state=None):
        """simulation_interfaces/EntityState of the base (now, or at ``state``): pose and twist in
        the twin's world (odom, or under an interface profile the empty frame: its odometry may be
        reset), stamped with the simulated instant; a fixed base is at the origin, at rest."""
        node = self.node
        state = node.twin.state() if state is None else state
        msg.header.stamp = stamp_msg(node.frame_clock.stamp_ns(state.t))
        if state.pose is None:
            msg.header.frame_id = ""  # the standard's default: the world the fixed base stands in
            msg.pose.orientation.w = 1.0
            return msg
        msg.header.frame_id = node.topics.world_frame
        x, y, yaw = state.pose
        msg.pose.position.x, msg.pose.position.y = float(x), float(y)
        msg.pose.orientation.z, msg.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        vx, vy, wz = state.twist_world or (0.0, 0.0, 0.0)  # "observed in the frame of header.frame_id"
        msg.twist.linear.x, msg.twist.linear.y, msg.twist.angular.z = float(vx), float(vy), float(wz)
        return msg

    def _position(self, state) -> tuple:
        """The base's position in the world at ``state``: the one get_entity_state reports."""
        from simulation_interfaces.msg import EntityState

        p = self._fill_state(EntityState(), state).pose.position
        return p.x, p.y, p.z

    def _sphere(self, bounds):
        """(centre, radius) of a bounds filter, or (None, None) for none; _Refused for bounds the
        twin cannot apply."""
        R, B = self.Result, type(bounds)
        if bounds.type == B.TYPE_EMPTY:
            if bounds.points:
                raise _Refused(R.RESULT_OPERATION_FAILED, f"bounds TYPE_EMPTY with {len(bounds.points)} points: "
                                                          f"empty bounds have none (Bounds.msg)")
            return None, None
        if bounds.type in (B.TYPE_BOX, B.TYPE_CONVEX_HULL):
            kind = "TYPE_BOX" if bounds.type == B.TYPE_BOX else "TYPE_CONVEX_HULL"
            raise _Refused(R.RESULT_FEATURE_UNSUPPORTED, f"bounds {kind} are not supported: the twin filters "
                                                         f"entities by TYPE_SPHERE bounds only")
        if bounds.type != B.TYPE_SPHERE:
            raise _Refused(R.RESULT_OPERATION_FAILED, f"no bounds type {bounds.type} (TYPE_EMPTY 0, TYPE_BOX 1, "
                                                      f"TYPE_CONVEX_HULL 2, TYPE_SPHERE 3)")
        if len(bounds.points) != 2:
            raise _Refused(R.RESULT_OPERATION_FAILED, f"TYPE_SPHERE bounds have 2 points (the centre; the radius "
                                                      f"in x), not {len(bounds.points)}")
        c, radius = bounds.points[0], bounds.points[1].x
        centre = (c.x, c.y, c.z)
        if not all(math.isfinite(v) for v in centre):
            raise _Refused(R.RESULT_OPERATION_FAILED, f"sphere centre not finite: {centre}")
        if not (math.isfinite(radius) and radius > 0):
            raise _Refused(R.RESULT_OPERATION_FAILED, f"sphere radius {radius:g}: it must be positive and finite")
        return centre, radius

    def _select(self, filters):
        """(names, state): the entities ``filters`` keep, and the state they were judged at;
        _Refused for filters the twin cannot apply."""
        R = self.Result
        if filters.categories or filters.tags.tags:
            raise _Refused(R.RESULT_FEATURE_UNSUPPORTED, "entity categories and tags are not supported")
        centre, radius = self._sphere(filters.bounds)
        name_re = None
        if filters.filter:  # empty: every entity
            try:
                name_re = compile_ere(filters.filter)
            except NotPosixEre as exc:
                raise _Refused(R.RESULT_OPERATION_FAILED, f"filter '{filters.filter}': {exc}") from None
        state = self.node.twin.state()
        # the twin has no entity geometry (no GetEntityBounds): an entity overlaps the sphere where
        # its position does, the surface included
        inside = centre is None or math.dist(self._position(state), centre) <= radius
        names = [e for e in (self.entity,) if inside and (name_re is None or name_re.search(e))]
        return names, state

    # -- simulator and simulation state --------------------------------------------------------
    def _features(self, request, response):
        f = self.Features
        # SIMULATION_RESET_TIME and _STATE say SCOPE_TIME, SCOPE_STATE are taken each alone (SimulatorFeatures.msg);
        # _reset takes them together only, so neither is listed
        features = [f.ENTITY_STATE_GETTING, f.SIMULATION_RESET,
                    f.SIMULATION_STATE_GETTING, f.SIMULATION_STATE_SETTING, f.SIMULATION_STATE_PAUSE,
                    f.STEP_SIMULATION_SINGLE, f.STEP_SIMULATION_MULTIPLE]
        if self.node.twin.placeable:
            features.append(f.ENTITY_STATE_SETTING)
        response.features.features = sorted(features)
        response.features.spawn_formats = []
        world = self.node.topics.world_frame or "the world frame ''"
        response.features.custom_info = (
            f"bondsim_ros dynamics_node: one entity, {self.entity!r} (the robot; its base pose "
            f"{'in ' + world if self.node.twin.placeable else 'fixed'}); a step is one frame, "
            f"1/publish_rate x real_time_factor simulated seconds; ResetSimulation resets time and state "
            f"together (SCOPE_TIME alone or SCOPE_STATE alone is unsupported); SetEntityState sets the pose only")
        return response

    def _get_state(self, request, response):
        response.state.state = self._state_now()
        return self._result(response, self.Result.RESULT_OK)

    def _state_now(self) -> int:
        node = self.node
        if node.stopped:
            return self.State.STATE_STOPPED
        return self.State.STATE_PAUSED if node.paused else self.State.STATE_PLAYING

    def _set_state(self, request, response):
        S, R, node = self.State, self.Result, self.node
        target, now = request.state.state, self._state_now()
        names = {S.STATE_STOPPED: "stopped", S.STATE_PLAYING: "playing", S.STATE_PAUSED: "paused"}
        if target in (S.STATE_QUITTING, S.STATE_NO_WORLD, S.STATE_LOADING_WORLD):
            return self._result(response, R.RESULT_FEATURE_UNSUPPORTED,
                                "the twin sets playing, paused and stopped only (it ends with its process: "
                                "SIGINT or SIGTERM)")
        if target not in names:
            return self._result(response, R.RESULT_OPERATION_FAILED, f"no simulation state {target}")
        if target == now:
            return self._result(response, response.ALREADY_IN_TARGET_STATE, f"already {names[target]}")
        if target == S.STATE_PAUSED and now == S.STATE_STOPPED:
            return self._result(response, response.INCORRECT_TRANSITION,
                                "stopped is paused at the initial state already: play it, or step it")
        try:
            if target == S.STATE_PLAYING:
                node.resume()
            elif target == S.STATE_PAUSED:
                node.pause()
            else:
                node.stop()
        except Exception as exc:  # noqa: BLE001 - a service call must never take the node down
            node.solver_failed(exc, f"setting the simulation {names[target]}")
            return self._result(response, response.STATE_TRANSITION_ERROR, f"{type(exc).__name__}: {exc}")
        return self._result(response, R.RESULT_OK)

    def _step(self, request, response):
        R, node = self.Result, self.node
        if not node.paused:
            return self._result(response, R.RESULT_OPERATION_FAILED,
                                "the simulation is playing: pause it first (SetSimulationState STATE_PAUSED)")
        if request.steps < 1:
            return self._result(response, R.RESULT_OPERATION_FAILED, "steps must be at least 1")
        if request.steps > MAX_STEPS:
            return self._result(response, R.RESULT_OPERATION_FAILED,
                                f"steps {request.steps}: at most {MAX_STEPS} per call (the node answers nothing "
                                f"else while it steps); call again for more")
        failures = node.failures.count
        node.step_frames(int(request.steps))
        if node.failures.count > failures:
            return self._result(response, R.RESULT_OPERATION_FAILED, f"the model failed: {node.failures.last}")
        return self._result(response, R.RESULT_OK)

    def _reset(self, request, response):
        R, Req = self.Result, type(request)
        scope = request.scope
        both = Req.SCOPE_TIME | Req.SCOPE_STATE
        if scope not in (Req.SCOPE_DEFAULT, Req.SCOPE_ALL) and (scope & both) != both:
            return self._result(response, R.RESULT_FEATURE_UNSUPPORTED,
                                "the twin resets time and state together (SCOPE_DEFAULT, SCOPE_ALL or "
                                "SCOPE_TIME | SCOPE_STATE); nothing is ever spawned")
        try:
            self.node.restart()
        except Exception as exc:  # noqa: BLE001
            self.node.solver_failed(exc, "reset")
            return self._result(response, R.RESULT_OPERATION_FAILED, f"reset failed: {type(exc).__name__}: {exc}")
        return self._result(response, R.RESULT_OK)

    # -- entities ----------------------------------------------------------------------------
    def _entities(self, request, response):
        try:
            response.entities, _ = self._select(request.filters)
        except _Refused as refused:
            return self._result(response, *refused.args)
        return self._result(response, self.Result.RESULT_OK)

    def _entities_states(self, request, response):
        from simulation_interfaces.msg import EntityState

        try:
            response.entities, state = self._select(request.filters)
        except _Refused as refused:
            return self._result(response, *refused.args)
        response.states = [self._fill_state(EntityState(), state) for _ in response.entities]
        return self._result(response, self.Result.RESULT_OK)

    def _entity_state(self, request, response):
        if request.entity != self.entity:
            return self._result(response, self.Result.RESULT_NOT_FOUND,
                                f"no entity {request.entity!r} (the one entity is {self.entity!r})")
        self._fill_state(response.state)
        return self._result(response, self.Result.RESULT_OK)

    def _set_entity_state(self, request, response):
        R, node, st = self.Result, self.node, request.state
        if request.entity != self.entity:
            return self._result(response, R.RESULT_NOT_FOUND,
                                f"no entity {request.entity!r} (the one entity is {self.entity!r})")
        if not node.twin.placeable:
            return self._result(response, R.RESULT_FEATURE_UNSUPPORTED,
                                f"{self.entity} has a fixed base: it cannot be placed")
        # the flags exist from interface version 2.1 on; before, pose and twist are always set
        set_pose = getattr(request, "set_pose", True)
        set_twist = getattr(request, "set_twist", None)
        set_accel = getattr(request, "set_acceleration", None)
        tw, acc = st.twist, st.acceleration
        components = lambda v: (v.linear.x, v.linear.y, v.linear.z, v.angular.x, v.angular.y, v.angular.z)  # noqa: E731
        # a NaN is neither zero nor non-zero: garbage in the twist is not trusted for the pose either
        for what, v in (("twist", tw), ("acceleration", acc)):
            if not all(math.isfinite(c) for c in components(v)):
                return self._result(response, R.RESULT_OPERATION_FAILED, f"{what} not finite: {components(v)}")
        nonzero = lambda v: any(c != 0 for c in components(v))  # noqa: E731
        if set_twist or set_accel or (set_twist is None and (nonzero(tw) or nonzero(acc))):
            return self._result(response, R.RESULT_FEATURE_UNSUPPORTED,
                                "only the pose can be set: the twist is the model's own (its drives, its "
                                "masses); command it through cmd_vel or joint commands")
        if not set_pose:
            return self._result(response, R.RESULT_OK)
        topics = node.topics
        if st.header.frame_id not in ("", topics.world_frame, topics.odom_frame):
            return self._result(response, response.INVALID_POSE,
                                f"pose in frame {st.header.frame_id!r}: give it in {topics.odom_frame!r} (or '')")
        p, q = st.pose.position, st.pose.orientation
        values = (p.x, p.y, p.z, q.x, q.y, q.z, q.w)
        if not all(math.isfinite(v) for v in values):
            return self._result(response, response.INVALID_POSE, f"pose not finite: {values}")
        if max(abs(p.x), abs(p.y)) > WORLD_BOUND:
            return self._result(response, response.INVALID_POSE,
                                f"position ({p.x:g}, {p.y:g}) is beyond the world's bounds (|x|, |y| <= "
                                f"{WORLD_BOUND:g} m: farther, the motion of a step is lost to rounding)")
        yaw, roll, pitch, norm = yaw_of_quaternion(q.x, q.y, q.z, q.w)
        if abs(norm - 1.0) > 1e-3:
            return self._result(response, response.INVALID_POSE,
                                f"orientation is not a unit quaternion (norm {norm:g})")
        if max(abs(p.z), abs(roll), abs(pitch)) > PLANAR_TOLERANCE:
            return self._result(response, response.INVALID_POSE,
                                f"{self.entity} is a planar base: z, roll and pitch must be 0 "
                                f"(got z={p.z:g}, roll={roll:g}, pitch={pitch:g})")
        x, y, yaw = p.x, p.y, yaw
        if st.header.frame_id == topics.odom_frame != topics.world_frame:  # odom, moved by an odometry reset
            x, y, yaw = topics.odometry.to_world((x, y, yaw))
            try:  # odom may lie far out in the world: the bound holds for the world pose
                check_bound(f"position ({p.x:g}, {p.y:g}) in {topics.odom_frame!r}, in the world", x, y)
            except CommandError as exc:
                return self._result(response, response.INVALID_POSE, str(exc))
        node.place(x, y, yaw)
        # stopped is paused at the initial state: moved away from it, the simulation is paused, so
        # STOPPED resets it again
        node.stopped = False
        return self._result(response, R.RESULT_OK)
