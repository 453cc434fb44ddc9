"""A YAML model file bound to a mechanism XML by its ``mechanism:`` section (no Python):

    mechanism:
      file: cart_pole.xml          # relative to the model file
      joints: {cart: x_cart, pole: theta}   # mechanism joint: output column of the model
      base: {x: X, y: Y, yaw: phi} # optional: planar base pose -> odom/TF
                                   # (+ vx:, vy:, wz: its world-frame velocity columns, optional)
    commands:                      # optional: what ROS sets, by run-time parameters
      twist: {vx: vx_cmd, wz: wz_cmd}       # /cmd_vel
      joints: {cart: x_ref}                 # joint commands (positions by joint name), trajectories
      topics: {/heater/voltage: u}          # std_msgs/Float64 topics
    outputs: {/cart/force: F.e}    # optional: columns published as std_msgs/Float64 every frame

Every error names the model file and the line of the offending entry.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from .plugin import Robot, RobotError

BASE_POSE = ("x", "y", "yaw")
BASE_TWIST = ("vx", "vy", "wz")  # optional: the base's velocity in odom (world frame), as columns


def _section(path: Path):
    """The mechanism section as a yaml node tree (for line numbers), or None."""
    try:
        root = yaml.compose(path.read_text())
    except OSError as exc:
        raise RobotError(f"{path}: cannot read model file: {exc.strerror}") from None
    except yaml.MarkedYAMLError as exc:
        raise RobotError(f"{path}:{exc.problem_mark.line + 1 if exc.problem_mark else 0}: YAML syntax error: "
                         f"{exc.problem}") from None
    if not isinstance(root, yaml.MappingNode):
        return None, root
    for k, v in root.value:
        if k.value == "mechanism":
            return v, root
    return None, root


def _top(path: Path, key: str):
    """A top-level section of the model file as a yaml node (for line numbers), or None."""
    _, root = _section(path)
    if not isinstance(root, yaml.MappingNode):
        return None
    return next((v for k, v in root.value if k.value == key), None)


def _names(node, path, what, value_is: str) -> dict:
    """{key: (scalar value, line)} of a mapping whose values are names; a key given twice is
    refused with both lines."""
    out = {}
    for key, value, line in _map(node, path, what):
        if not isinstance(value, yaml.ScalarNode) or not value.value:
            raise RobotError(f"{path}:{line}: {what}.{key}: give {value_is}")
        if key in out:
            raise RobotError(f"{path}:{line}: {what}: {key!r} given twice (first at line {out[key][1]})")
        out[str(key)] = (str(value.value), line)
    return out


def _topics(node, path, what, value_is: str, seen: dict) -> dict:
    """{topic: (name, line)}; a topic that is not a ROS 2 topic name, or that ``seen`` (topic ->
    where) already holds, is refused."""
    from bondsim_ros.msgutil import topic_name_error

    out = _names(node, path, what, value_is)
    for topic, (_, line) in out.items():
        why = topic_name_error(topic)
        if why:
            raise RobotError(f"{path}:{line}: {what}: {topic!r} is not a ROS topic name: {why}")
        if topic in seen:
            raise RobotError(f"{path}:{line}: {what}: topic {topic!r} is already {seen[topic]}")
        seen[topic] = f"in {what} (line {line})"
    return out


def read_commands(path) -> dict | None:
    """The commands: section, or None without one: {"twist": {vx|vy|wz: (parameter, line)},
    "joints": {joint: (parameter, line)}, "topics": {topic: (parameter, line)}}, each None where
    the section lacks it."""
    path = Path(path)
    node = _top(path, "commands")
    if node is None:
        return None
    out = {"twist": None, "joints": None, "topics": None}
    seen = {}
    for key, value, line in _map(node, path, "commands"):
        if key == "twist":
            twist = {}
            for k, par, tl in _map(value, path, "commands.twist"):
                if k not in ("vx", "vy", "wz"):
                    raise RobotError(f"{path}:{tl}: commands.twist: unknown key {k!r} (vx, vy, wz)")
                if not isinstance(par, yaml.ScalarNode) or not par.value:
                    raise RobotError(f"{path}:{tl}: commands.twist.{k}: give a run-time parameter's name")
                twist[k] = (str(par.value), tl)
            if not twist:
                raise RobotError(f"{path}:{line}: commands.twist needs at least one of vx, vy, wz")
            out["twist"] = twist
        elif key == "joints":
            out["joints"] = _names(value, path, "commands.joints", "a run-time parameter's name")
            if not out["joints"]:
                raise RobotError(f"{path}:{line}: commands.joints needs at least one {{joint: parameter}}")
        elif key == "topics":
            out["topics"] = _topics(value, path, "commands.topics", "a run-time parameter's name", seen)
        else:
            raise RobotError(f"{path}:{line}: commands: unknown key {key!r} (twist, joints, topics)")
    return out


def read_outputs(path, commands: dict | None = None) -> dict:
    """The outputs: section, {topic: (column, line)} (empty without one); a topic that
    ``commands.topics`` subscribes to is refused (the twin would hear itself)."""
    path = Path(path)
    node = _top(path, "outputs")
    if node is None:
        return {}
    seen = {t: f"a command topic (commands.topics, line {ln})"
            for t, (_, ln) in ((commands or {}).get("topics") or {}).items()}
    return _topics(node, path, "outputs", "an output column's name", seen)


def _map(node, path, what):
    if not isinstance(node, yaml.MappingNode):
        raise RobotError(f"{path}:{node.start_mark.line + 1}: {what} must be a mapping")
    return [(k.value, v, k.start_mark.line + 1) for k, v in node.value]


def read_binding(path) -> dict:
    """{file, joints: [(joint, column, line)], base: {x|y|yaw[|vx|vy|wz]: (column, line)} or None, line}."""
    path = Path(path)
    node, root = _section(path)
    if node is None:
        from bondsim_ros.bondgraph.yamlmodel import TOP_LEVEL_KEYS

        # a misspelt section (mechansim:) is the likely cause: named where it is
        keys = [k for k, _ in root.value] if isinstance(root, yaml.MappingNode) else []  # (a file of text or a list)
        unknown = [(k.value, k.start_mark.line + 1) for k in keys if k.value not in TOP_LEVEL_KEYS]
        where = f"{path}:{unknown[0][1]}" if unknown else str(path)
        also = f"; unknown top-level key(s): {', '.join(k for k, _ in unknown)}" if unknown else ""
        raise RobotError(f"{where}: no mechanism: section (it binds the model to a mechanism XML: file, joints, "
                         f"optional base){also}")
    out = {"file": None, "joints": [], "base": None, "velocities": {}, "efforts": {}, "line": node.start_mark.line + 1}
    for key, value, line in _map(node, path, "mechanism"):
        if key == "file":
            if not isinstance(value, yaml.ScalarNode) or not value.value:
                raise RobotError(f"{path}:{line}: mechanism.file must be a file name")
            out["file"] = ((path.parent / value.value).resolve(), line)
        elif key == "joints":
            for j, col, jl in _map(value, path, "mechanism.joints"):
                if not isinstance(col, yaml.ScalarNode):
                    raise RobotError(f"{path}:{jl}: mechanism.joints.{j}: give the output column's name")
                first = next((ln for n, _, ln in out["joints"] if n == str(j)), None)
                if first is not None:
                    raise RobotError(f"{path}:{jl}: mechanism.joints: {j!r} bound twice (first at line {first})")
                out["joints"].append((str(j), str(col.value), jl))
        elif key == "base":
            base = {}
            for k, col, bl in _map(value, path, "mechanism.base"):
                if k not in BASE_POSE + BASE_TWIST:
                    raise RobotError(f"{path}:{bl}: mechanism.base: unknown key {k!r} (x, y, yaw; optional vx, vy, wz)")
                if not isinstance(col, yaml.ScalarNode) or not col.value:
                    raise RobotError(f"{path}:{bl}: mechanism.base.{k}: give the output column's name")
                base[k] = (str(col.value), bl)
            where = f"{path}:{value.start_mark.line + 1}: mechanism.base"
            if not set(BASE_POSE) <= set(base):
                raise RobotError(f"{where} needs x, y and yaw "
                                 f"(missing: {', '.join(k for k in BASE_POSE if k not in base)})")
            given = [k for k in BASE_TWIST if k in base]
            if given and len(given) != len(BASE_TWIST):
                raise RobotError(f"{where}: the base's velocity columns go all three or none: vx, vy, wz "
                                 f"(missing: {', '.join(k for k in BASE_TWIST if k not in base)})")
            out["base"] = base
            out["base_line"] = line
        elif key in ("velocities", "efforts"):
            cols = {}
            for j, col, jl in _map(value, path, f"mechanism.{key}"):
                if not isinstance(col, yaml.ScalarNode) or not col.value:
                    raise RobotError(f"{path}:{jl}: mechanism.{key}.{j}: give the output column's name")
                if str(j) in cols:
                    raise RobotError(f"{path}:{jl}: mechanism.{key}: {j!r} given twice (first at line "
                                     f"{cols[str(j)][1]})")
                cols[str(j)] = (str(col.value), jl)
            out[key] = cols
            out[key + "_line"] = line
        else:
            raise RobotError(f"{path}:{line}: mechanism: unknown key {key!r} (file, joints, base, velocities, "
                             f"efforts)")
    if out["file"] is None:
        raise RobotError(f"{path}:{out['line']}: mechanism: needs file: (the mechanism XML, relative to the model)")
    if not out["joints"]:
        raise RobotError(f"{path}:{out['line']}: mechanism: needs joints: {{mechanism joint: output column}}")
    return out


def check_binding(path, spec: dict, columns: list | None, missing: str = "the model has no output column",
                  search_path=()) -> tuple[dict, dict | None]:
    """Joints against the mechanism XML, columns against ``columns`` (the model's, or a CSV's
    header: ``missing`` then says whose; None: not checked); returns (joints, base) in the
    mechanism's document order."""
    from bondsim_ros.mechanism import MechanismError, load_mechanism

    xml, xml_line = spec["file"]
    try:
        mech = load_mechanism(xml, search_path)
    except MechanismError as exc:
        raise RobotError(f"{path}:{xml_line}: mechanism file: {exc}") from None  # (exc names the file)
    except OSError as exc:
        raise RobotError(f"{path}:{xml_line}: mechanism file {xml}: {exc.strerror}") from None
    units = mech.robots or mech.units
    alljoints = {j.name: j for j in units[0].joints}
    seen = {}
    for joint, col, line in spec["joints"]:
        j = alljoints.get(joint)
        if j is None:
            moving = [n for n, i in alljoints.items() if not i.virtual and i.type != "fixed"]
            raise RobotError(f"{path}:{line}: mechanism.joints: {xml.name} has no joint {joint!r} "
                             f"(its joints: {', '.join(moving)})")
        if j.virtual:
            raise RobotError(f"{path}:{line}: mechanism.joints: {joint!r} is a virtual joint of {xml.name} "
                             f"(the planar base goes under base: {{x:, y:, yaw:}})")
        if j.type == "fixed":
            raise RobotError(f"{path}:{line}: mechanism.joints: {joint!r} is a fixed joint of {xml.name}")
        if joint in seen:
            raise RobotError(f"{path}:{line}: mechanism.joints: {joint!r} bound twice (first at line {seen[joint]})")
        seen[joint] = line
        if columns is not None and col not in columns:
            raise RobotError(f"{path}:{line}: mechanism.joints.{joint}: {missing} {col!r} "
                             f"(columns: {', '.join(columns)})")
    base = None
    if spec["base"]:
        if not units[0].planar:
            raise RobotError(f"{path}:{spec['base_line']}: mechanism.base: {xml.name} has no planar base "
                             "(virtual X, Y, yaw joints)")
        for k, (col, line) in spec["base"].items():
            if columns is not None and col not in columns:
                raise RobotError(f"{path}:{line}: mechanism.base.{k}: {missing} {col!r} "
                                 f"(columns: {', '.join(columns)})")
        base = {k: col for k, (col, _) in spec["base"].items()}
    cols = {joint: col for joint, col, _ in spec["joints"]}
    for key, what in (("velocities", "velocity"), ("efforts", "effort")):
        given = spec.get(key) or {}
        for joint, (col, line) in given.items():
            if joint not in cols:
                raise RobotError(f"{path}:{line}: mechanism.{key}: {joint!r} is not bound in mechanism.joints "
                                 f"(bound: {', '.join(cols)})")
            if columns is not None and col not in columns:
                raise RobotError(f"{path}:{line}: mechanism.{key}.{joint}: {missing} {col!r} "
                                 f"(columns: {', '.join(columns)})")
        if given and set(given) != set(cols):
            # /joint_states carries a joint's velocity or effort for every joint or none (sensor_msgs/JointState)
            raise RobotError(f"{path}:{spec[key + '_line']}: mechanism.{key}: give a {what} column for every bound "
                             f"joint or none (missing: {', '.join(j for j in cols if j not in given)})")
    order = [n for n in alljoints if n in cols]  # document order, as /joint_states
    return {n: cols[n] for n in order}, base


def check_commands(path, commands: dict, outputs: dict, params: list, columns: list, joints: dict, xml) -> None:
    """Parameters, joints and columns named by commands: and outputs: against the model and its
    mechanism binding; the first that does not fit is refused with its file and line."""
    def param(what, par, line):
        if par not in params:
            raise RobotError(f"{path}:{line}: {what}: the model has no run-time parameter {par!r} "
                             f"(parameters: {', '.join(params) or 'none'})")

    for k, (par, line) in (commands["twist"] or {}).items():
        param(f"commands.twist.{k}", par, line)
    for joint, (par, line) in (commands["joints"] or {}).items():
        if joint not in joints:
            from bondsim_ros.twin.model_twin import mechanism_joints

            moving = [j.name for j in mechanism_joints(xml)]
            if joint in moving:
                raise RobotError(f"{path}:{line}: commands.joints: {joint!r} is not bound in mechanism.joints "
                                 f"(a joint command names a joint /joint_states carries: {', '.join(joints)})")
            raise RobotError(f"{path}:{line}: commands.joints: {xml.name} has no joint {joint!r} "
                             f"(its joints: {', '.join(moving)})")
        param(f"commands.joints.{joint}", par, line)
    for topic, (par, line) in (commands["topics"] or {}).items():
        param(f"commands.topics.{topic}", par, line)
    for topic, (col, line) in outputs.items():
        if col not in columns:
            raise RobotError(f"{path}:{line}: outputs.{topic}: the model has no output column {col!r} "
                             f"(columns: {', '.join(columns)})")


def yaml_robot(path) -> Robot:
    """A Robot from a model file with a mechanism: section; the model's built-in signals drive it."""
    from bondsim_ros.bondgraph.core import ModelError
    from bondsim_ros.bondgraph.yamlmodel import load_model

    path = Path(path)
    if not path.is_file():
        raise RobotError(f"{path}: no such model file")
    spec = read_binding(path)
    commands = read_commands(path) or {"twist": None, "joints": None, "topics": None}
    outputs = read_outputs(path, commands)
    kinds = tuple(k for k, key in (("trajectory", "joints"), ("twist", "twist")) if commands[key])
    try:
        model = load_model(path)
    except ModelError as exc:
        raise RobotError(str(exc)) from None
    name = path.stem
    xml = spec["file"][0]
    state = {}

    def make_twin(command: str = "builtin", options=None, limits=None, log=None, config=None):
        from bondsim_ros.bondgraph.codegen import compile_model
        from bondsim_ros.twin.model_twin import Binding, ModelTwin

        if command != "builtin" and command not in kinds:
            raise RobotError(f"{path}: the model declares no {command} command (commands: twist: {{vx:, vy:, wz:}} "
                             f"binds /cmd_vel, commands: joints: {{joint: parameter}} joint commands and "
                             f"trajectories to its parameters)")
        if config:
            raise RobotError(f"{path}: robot_config is a Robotino parameter file")
        compiled = compile_model(model, log=log)
        joints, base = check_binding(path, spec, ["t"] + list(compiled.output_names))
        state["joints"] = joints
        columns = ["t"] + list(compiled.output_names)
        check_commands(path, commands, outputs, list(compiled.param_names), columns, joints, xml)
        twist = None
        if commands["twist"]:
            twist = {k: commands["twist"].get(k, (None, 0))[0] for k in ("vx", "vy", "wz")}
        # a joint command sets its parameter; no velocity reference (None)
        trajectory = {j: (par, None) for j, (par, _) in commands["joints"].items()} if commands["joints"] else None
        binding = Binding(mechanism=xml, joints=joints, base=base, twist=twist, trajectory=trajectory,
                          velocities={j: c for j, (c, _) in spec["velocities"].items()},
                          efforts={j: c for j, (c, _) in spec["efforts"].items()},
                          hold=False, source=str(path),
                          param_topics={t: par for t, (par, _) in (commands["topics"] or {}).items()},
                          output_topics={t: col for t, (col, _) in outputs.items()})
        return ModelTwin(name, compiled, binding, options, limits=limits, command=command, log=log)

    return Robot(name, f"{path.name} bound to {xml.name}", xml, make_twin, kinds, model=str(path))
