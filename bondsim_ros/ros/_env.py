"""Keep DDS discovery on this machine unless the user decided otherwise.

The pip environment and CI run ROS 2 on machines whose network is not ours to flood with
multicast; a user who sets the variable keeps full control. A twin beside a real robot needs
the robot's computer: ROS's own default range, SUBNET, which the twin launch file
(`discovery_range:=`) and `bondsim-ros up --bridge` (`--discovery`) select (docs/ros.md).
"""
import contextlib
import faulthandler
import gc
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

DISCOVERY_RANGES = ("OFF", "LOCALHOST", "SUBNET", "SYSTEM_DEFAULT")  # ROS_AUTOMATIC_DISCOVERY_RANGE, Jazzy+


def ensure_local_discovery() -> None:
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # Jazzy, Kilted


def choose_discovery_range(flag: str | None, bridge: bool, environ=os.environ) -> str:
    """The range a process should use: the explicit flag; else what the environment says; else
    SUBNET (ROS's default) when it talks to a real robot, LOCALHOST otherwise. ValueError for a
    flag or a variable that names no range: rcl compares the variable in capitals and takes
    anything else for LOCALHOST (rcl/discovery_options.c, with a warning), which for a twin
    beside a real robot, needing SUBNET, would be a graph that never meets it."""
    if flag:
        value = flag.upper()
        if value not in DISCOVERY_RANGES:
            raise ValueError(f"--discovery: discovery range {flag!r}: one of "
                             f"{', '.join(r.lower() for r in DISCOVERY_RANGES)}")
        return value
    value = environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE")
    if value and value not in DISCOVERY_RANGES:
        raise ValueError(f"ROS_AUTOMATIC_DISCOVERY_RANGE={value!r}: one of {', '.join(DISCOVERY_RANGES)}, in "
                         f"capitals as rcl reads it (it takes anything else for LOCALHOST)")
    return value or ("SUBNET" if bridge else "LOCALHOST")


# the highest domain DDS's port numbers allow (RTPS: port base 7400 + domain gain 250 x domain +
# offsets, below 65536); Fast DDS ends the process (status 1) on a higher one after a log line
MAX_DOMAIN_ID = 232


def domain_id_of(environ=os.environ) -> int | None:
    """ROS_DOMAIN_ID as rcl reads it (rcl/domain_id.c: C's strtoul with base 0, so 0x1f and 017
    are hexadecimal and octal; unset or empty: None, ROS's default domain). ValueError naming the
    value where rcl refuses it (not a number) or the DDS layer cannot open the domain's ports."""
    import re

    text = environ.get("ROS_DOMAIN_ID")
    if not text:
        return None
    m = re.match(r"[ \t\n\r\f\v]*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", text)
    number, rest = 0, text  # strtoul without digits: 0, nothing read
    if m is not None:
        digits = m.group(2)
        number = int(digits, 16 if digits[:2] in ("0x", "0X") else 8 if digits[:1] == "0" else 10)
        rest = text[m.end():]
    if number == 0 and rest:
        raise ValueError(f"ROS_DOMAIN_ID={text!r} is not a number (rcl refuses it)")
    if m is not None and m.group(1) == "-" and number:
        number = 2 ** 64 - number  # strtoul's wrap-around
    if number > MAX_DOMAIN_ID:
        raise ValueError(f"ROS_DOMAIN_ID={text!r}: a domain is 0 to {MAX_DOMAIN_ID} (its DDS port numbers; "
                         f"ROS 2 recommends 0 to 101 on Linux)")
    return number


def init_rclpy(**kwargs) -> None:
    """rclpy.init without rclpy's own SIGINT/SIGTERM handlers: those shut the context down
    under a spinning executor, whose next timer then publishes through a dead context
    (``RCLError: publisher's context is invalid``). ``spin_until_signal`` stops spinning first
    and shuts down after."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO, **kwargs)


class start_up_signals:
    """SIGINT and SIGTERM over a process's whole start-up (imports, the model build, the nodes'
    construction, up to the spin). Each raises where Python runs next, KeyboardInterrupt for
    SIGINT and Terminated (a KeyboardInterrupt the CLI reports as "terminated", 143) for SIGTERM,
    so a long build ends at once; but not inside an import, where the exception can abort the
    process (an extension module's initialisation ends in std::terminate) or be dropped by the
    import system: there it is raised again once the import is done. And each is remembered:
    Python drops an exception raised in a weakref or gc callback or a finalizer, which start-up's
    collections run by the thousand, and the signal was lost (the twin ran on). ``end()``, the
    last step before the spin, raises a signal that came and was dropped; until then a dropped
    KeyboardInterrupt is not printed ("Exception ignored in ...")."""

    RETRY = 0.02  # s between attempts to raise a signal that came during an import

    def __enter__(self):
        import signal
        import threading

        from bondsim_ros.cliargs import Terminated

        self.Terminated, self.caught, self.handlers, self.hook = Terminated, [], {}, None
        self.retry = None
        if threading.current_thread() is threading.main_thread():
            self.hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.handlers[sig] = signal.signal(sig, self._on_signal)
        return self

    def _exception(self, signum):
        import signal

        return self.Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    def _on_signal(self, signum, frame):
        import threading
        import _thread

        if signum not in self.caught:
            self.caught.append(signum)
        while frame is not None:
            if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
                if self.retry is None or not self.retry.is_alive():  # the handler runs again soon
                    self.retry = threading.Timer(self.RETRY, _thread.interrupt_main, (signum,))
                    self.retry.daemon = True
                    self.retry.start()
                return
            frame = frame.f_back
        raise self._exception(signum)

    def _unraisable(self, unraisable):
        if not (self.caught and issubclass(unraisable.exc_type, KeyboardInterrupt)):
            self.hook(unraisable)

    def _stop(self) -> None:
        if self.retry is not None:
            self.retry.cancel()
        if self.hook is not None:
            sys.unraisablehook, self.hook = self.hook, None

    def end(self) -> None:
        """Start-up is over: raise the first signal that came during it (one whose exception
        Python dropped, or one not raised yet; any other ended start-up already)."""
        self._stop()
        if self.caught:
            raise self._exception(self.caught[0])

    def __exit__(self, *exc):
        import signal

        self._stop()
        for sig, old in self.handlers.items():
            if signal.getsignal(sig) == self._on_signal:  # one installed after it (a run's own) stays
                signal.signal(sig, old)
        return False


def spin_until_signal(executor, context=None, duration: float | None = None, on_tick=None,
                      tick: float = 0.2) -> str:
    """Spin ``executor`` until SIGINT or SIGTERM (or ``duration`` seconds, or the context
    shutting down); returns why it stopped: "SIGINT", "SIGTERM", "duration" or "shutdown".

    spin_once in a loop, not executor.spin(): rclpy's EventsExecutor.spin() neither runs our
    timers nor returns on Ctrl-C. Signals only set a flag, so no callback is cut in
    half and none runs after the loop."""
    import signal
    import threading

    stop = []
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, lambda signum, _frame: stop.append(signal.Signals(signum).name))
    end = None if duration is None else time.monotonic() + duration
    next_tick = time.monotonic()
    try:
        while not stop:
            if context is not None and not context.ok():
                return "shutdown"
            now = time.monotonic()
            if end is not None and now >= end:
                return "duration"
            executor.spin_once(timeout_sec=0.05 if end is None else min(0.05, end - now))
            if on_tick and time.monotonic() >= next_tick:
                on_tick()
                next_tick += tick
        return stop[0]
    finally:
        for sig, old in handlers.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def start_up_heap_frozen():
    """Collect once, then keep every object alive now out of the garbage collector's full
    collections (gc.freeze) until the block ends: for a process about to spin real-time timers.
    Its start-up (rclpy, numpy, the model, the URDF) leaves some 115,000 tracked objects, and
    the first full collection in the run walked them all while holding the GIL: 90-120 ms on
    the 2-core machines, a few seconds into every demo, that the frame timer waited for (three
    frames skipped). Later full collections walk only what the run itself created. Call it
    after the nodes are built and before the spin: the collection here delays only the first
    tick, which the frame clock does not count as late."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# s a node executable's teardown may take once it stopped spinning: launch sends SIGTERM 5 s
# after SIGINT (its sigterm_timeout) and then reports the node as died
TEARDOWN_LIMIT = 3.0


class end_within:
    """Make sure this process ends ``seconds`` from now, with ``status``, whatever holds it;
    ``cancel()`` where the process goes on after the teardown.

    For a node executable that has stopped: what is left is ROS's teardown (destroying the
    node's entities, then the middleware's participant), and Fast DDS has held that past
    launch's 5 s on a loaded machine. The limit cuts only the participant's goodbye (its peers
    drop it when its lease runs out).

    rclpy keeps the GIL in its destroy calls, so a Python timer cannot fire while one is held:
    it serves the teardowns held in Python (a WARN naming where, then the exit). Behind it two
    that need no GIL: faulthandler's watchdog prints every thread's stack shortly after, and a
    POSIX timer whose thread calls libc's ``_exit(status)`` itself ends the process."""

    GRACE = 0.1  # s after the Python timer: the stacks, then as long again the exit

    def __init__(self, seconds: float, name: str, status: int = 0):
        import faulthandler
        import threading

        self.seconds, self.name, self.status = seconds, name, status
        self.deadline = time.monotonic() + seconds
        self.timer = threading.Timer(seconds, self._force)
        self.timer.daemon = True  # a teardown that finishes in time ends the process without waiting
        self.timer.start()
        self.stacks = False
        try:
            faulthandler.dump_traceback_later(seconds + self.GRACE, exit=False, file=sys.__stderr__)
            self.stacks = True
        except (AttributeError, OSError, ValueError, RuntimeError):  # no usable stderr
            pass
        self.delete_exit_timer = _exit_timer(seconds + 2 * self.GRACE, status)

    def _force(self):
        try:
            import threading

            frame = sys._current_frames().get(threading.main_thread().ident)
            where = ""
            if frame is not None:
                where = f" in {frame.f_code.co_name} ({Path(frame.f_code.co_filename).name}:{frame.f_lineno})"
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os.write(2, f"[WARN] [{self.name}]: teardown held{where} for {self.seconds:g} s: exiting without it\n"
                     .encode())
        finally:  # nothing here (a closed stderr) keeps the process
            os._exit(self.status)

    def set_status(self, status: int) -> None:
        """Exit with ``status`` instead when the bound runs out (a second Ctrl-C during the
        teardown: the CLI's 130). The libc timer carries its status, so it is made anew for the
        time that is left."""
        self.status = status
        if self.delete_exit_timer is not None:
            self.delete_exit_timer()
            left = self.deadline + 2 * self.GRACE - time.monotonic()
            self.delete_exit_timer = _exit_timer(max(left, 1e-3), status)

    def cancel(self) -> None:
        import faulthandler

        self.timer.cancel()
        if self.stacks:
            faulthandler.cancel_dump_traceback_later()
        if self.delete_exit_timer is not None:
            self.delete_exit_timer()


def command_status(failed, usage_errors=()) -> int:
    """The status bondsim-ros's main() gives a command that ends with the exception class
    ``failed`` (None: it returned): 0; 143 for SIGTERM, 130 for Ctrl-C; 2 for a usage error (the
    CLI's CLIError, or one of ``usage_errors``, which the command reports as one); 1 for anything
    else. A command's bounded teardown (end_within) exits with it."""
    from bondsim_ros.cliargs import CLIError, Terminated

    if failed is None or issubclass(failed, SystemExit):
        return 0
    if issubclass(failed, Terminated):
        return 143
    if issubclass(failed, KeyboardInterrupt):
        return 130
    return 2 if issubclass(failed, (CLIError, *usage_errors)) else 1


def tear_down(graph, context, bound_as: str | None = None, usage_errors=()) -> None:
    """Destroy a command's node graph (None: none was started), then shut its context down.
    ``bound_as``: the command's name, in a program run only: the teardown is then bounded
    (end_within, TEARDOWN_LIMIT) and exits with the status the CLI would give (command_status of
    the exception on its way out, if any). A teardown cut short (a second Ctrl-C) leaves the
    bound armed, now with the status of an interrupted command (130): what is left of ROS then
    goes with the interpreter's exit, which it also covers."""
    import rclpy

    timer = None
    if bound_as is not None:
        timer = end_within(TEARDOWN_LIMIT, bound_as, command_status(sys.exc_info()[0], usage_errors))
    try:
        if graph is not None:
            graph.shutdown()
        rclpy.try_shutdown(context=context)
    except KeyboardInterrupt as exc:
        if timer is not None:  # the CLI says "interrupted" with 130 (143 for SIGTERM); so does the bound
            timer.set_status(command_status(type(exc)))
        raise
    if timer is not None:
        timer.cancel()


def _exit_timer(seconds: float, status: int):
    """A POSIX timer (Linux's glibc or musl: timer_create with SIGEV_THREAD) that calls libc's
    ``_exit(status)`` from a thread of libc's own, so no Python runs; returns the function that
    deletes it, or None where there is no such timer (the Python timer then stands alone)."""
    import ctypes

    if not sys.platform.startswith("linux") or ctypes.sizeof(ctypes.c_void_p) != 8:
        return None

    class sigevent(ctypes.Structure):  # struct sigevent, SIGEV_THREAD's members, padded to 64 bytes
        _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                    ("function", ctypes.c_void_p), ("attribute", ctypes.c_void_p), ("pad", ctypes.c_byte * 32)]

    class timespec(ctypes.Structure):
        _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]

    class itimerspec(ctypes.Structure):
        _fields_ = [("interval", timespec), ("value", timespec)]

    try:
        libc = ctypes.CDLL(None)
        create, settime, delete = libc.timer_create, libc.timer_settime, libc.timer_delete
        exit_now = ctypes.cast(libc._exit, ctypes.c_void_p).value
    except AttributeError:
        return None
    # the thread gets sigev_value as its one argument, in the register an int argument uses
    event = sigevent(value=status or None, notify=2, function=exit_now)  # SIGEV_THREAD
    timer = ctypes.c_void_p()
    if create(1, ctypes.byref(event), ctypes.byref(timer)) != 0:  # CLOCK_MONOTONIC
        return None
    whole = int(seconds)
    spec = itimerspec(value=timespec(whole, int((seconds - whole) * 1e9)))
    if settime(timer, 0, ctypes.byref(spec), None) != 0:
        delete(timer)
        return None
    return lambda: delete(timer)


def run_node(node_class, args=None) -> None:
    """A node executable's whole life: init, spin until Ctrl-C, SIGTERM (launch's way of
    stopping it) or shutdown, then destroy the node before the context goes, within
    TEARDOWN_LIMIT."""
    import rclpy
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    ensure_local_discovery()
    try:
        faulthandler.enable()  # a crash in the middleware or a kernel prints every thread's Python stack
    except (AttributeError, OSError, ValueError, RuntimeError):  # no usable stderr
        pass
    name = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else node_class.__name__
    context = rclpy.Context()
    init_rclpy(args=args, context=context)
    node = None
    status = 0
    try:
        with start_up_signals() as start_up:
            try:
                node = node_class(context=context)
            except (ValueError, InvalidParameterTypeException, InvalidParameterValueException) as exc:
                import rclpy.logging

                # bad parameters / robot_description: say what, no traceback (rclpy's exceptions: its
                # own parameters, use_sim_time of the wrong type, refused by rclpy.Node before the
                # node's table is read)
                rclpy.logging.get_logger(name).fatal(f"invalid parameter: {exc}" if isinstance(
                    exc, (InvalidParameterTypeException, InvalidParameterValueException)) else str(exc))
                status = 2
                raise SystemExit(2) from None
            executor = SingleThreadedExecutor(context=context)
            executor.add_node(node)
            try:
                with start_up_heap_frozen():
                    start_up.end()
                    spin_until_signal(executor, context)
            except ExternalShutdownException:
                pass
            executor.shutdown()
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM while the node was still being built
        pass
    finally:
        failed = sys.exc_info()[0]  # an error on its way out: its traceback, then status 1
        if failed is not None and not issubclass(failed, (KeyboardInterrupt, SystemExit)):
            status = 1
        end_within(TEARDOWN_LIMIT, node.get_name() if node is not None else name, status)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
        if failed is None or issubclass(failed, (KeyboardInterrupt, SystemExit)):
            context.destroy()  # the DDS participant says goodbye now, not at the interpreter's exit
            exit_after_teardown(status)  # (an error on its way out: Python prints its traceback, then 1)


def exit_after_teardown(status: int) -> None:
    """End a node executable whose ROS teardown is done, without the interpreter's own exit.
    What that exit runs after the last node and context are gone (module teardown, atexit
    handlers, C++ static destructors) holds nothing a node needs, and it is where the
    middleware has crashed: Fast DDS's singletons destroyed while its threads still end
    (eProsima/Fast-DDS#3561, ros2/rosbag2#1311), which turned a clean stop into launch's
    "process has died [exit code -11]". Threads that are not daemons are waited for first, as
    the interpreter would (a model's compiler run started in the background finishes)."""
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # closed or absent: nothing to keep
            pass
    os._exit(status)


class Param(NamedTuple):
    """One row of a node's parameter table: the single source of its name (the key), type (the
    default's), default, allowed values, description and whether it can change while running.

    ``low``/``high``: inclusive range of a number (NaN and inf are never allowed); ``nonzero``:
    0 is not; ``choices``: the allowed strings; ``live``: applied while the node runs (else
    read-only: it applies at start only)."""

    default: Any
    description: str
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    live: bool = False
    nonzero: bool = False


def _kind(default) -> str:
    if isinstance(default, bool):
        return "a boolean (true or false)"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, float):
        return "a floating-point number (write 3.0, not 3)"
    if isinstance(default, str):
        return "a string"
    return "a list of strings" if default and isinstance(default[0], str) else "a list of numbers"


def allowed(spec: Param) -> str:
    """The allowed values of ``spec`` in words (descriptors' additional_constraints, errors)."""
    if spec.choices:
        return " | ".join(spec.choices)
    parts = []
    if isinstance(spec.default, float) or (isinstance(spec.default, list) and spec.default
                                           and isinstance(spec.default[0], float)):
        parts.append("finite")
    if spec.low is not None or spec.high is not None:
        lo = "-inf" if spec.low is None else f"{spec.low:g}"
        hi = "inf" if spec.high is None else f"{spec.high:g}"
        parts.append(f"in [{lo}, {hi}]")
    if spec.nonzero:
        parts.append("not 0")
    return ", ".join(parts)


def check_value(name: str, spec: Param, value) -> str | None:
    """Why ``value`` is not allowed for parameter ``name`` (naming it and what is allowed), or
    None. Types are strict, as ROS's: 3 is no double, "true" no boolean."""
    import array

    d = spec.default
    if isinstance(d, bool):
        ok = isinstance(value, bool)
    elif isinstance(d, (int, float)):
        ok = isinstance(value, type(d)) and not isinstance(value, bool)
    elif isinstance(d, str):
        ok = isinstance(value, str)
    else:
        item = str if d and isinstance(d[0], str) else float
        ok = isinstance(value, (list, tuple, array.array)) and all(
            isinstance(v, item) and not isinstance(v, bool) for v in value)
    if not ok:
        return f"{name}: expected {_kind(d)}, got {value!r}"
    rule = allowed(spec)
    if isinstance(d, float):
        bad = (not math.isfinite(value) or (spec.low is not None and value < spec.low)
               or (spec.high is not None and value > spec.high) or (spec.nonzero and value == 0))
        if bad:
            return f"{name}: must be {rule}, got {value!r}"
    elif isinstance(d, int) and not isinstance(d, bool):
        if (spec.low is not None and value < spec.low) or (spec.high is not None and value > spec.high):
            return f"{name}: must be {rule}, got {value!r}"
    elif isinstance(d, list) and d and isinstance(d[0], float):
        for i, v in enumerate(value):
            if not math.isfinite(v):
                return f"{name}: every entry must be a finite number, got {v!r} at index {i}"
    if spec.choices and value not in spec.choices:
        return f"{name}: {rule}, got {value!r}"
    return None


def descriptor(name: str, spec: Param):
    """The rcl_interfaces ParameterDescriptor of a table row: type, description, range,
    read_only."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType

    d = spec.default
    if isinstance(d, bool):
        ptype = ParameterType.PARAMETER_BOOL
    elif isinstance(d, int):
        ptype = ParameterType.PARAMETER_INTEGER
    elif isinstance(d, float):
        ptype = ParameterType.PARAMETER_DOUBLE
    elif isinstance(d, str):
        ptype = ParameterType.PARAMETER_STRING
    elif d and isinstance(d[0], str):
        ptype = ParameterType.PARAMETER_STRING_ARRAY
    else:
        ptype = ParameterType.PARAMETER_DOUBLE_ARRAY
    desc = ParameterDescriptor(name=name, type=ptype, description=spec.description,
                               additional_constraints=allowed(spec), read_only=not spec.live)
    if spec.low is not None and spec.high is not None:
        if ptype == ParameterType.PARAMETER_DOUBLE:
            desc.floating_point_range = [FloatingPointRange(from_value=float(spec.low), to_value=float(spec.high),
                                                            step=0.0)]
        elif ptype == ParameterType.PARAMETER_INTEGER:
            desc.integer_range = [IntegerRange(from_value=int(spec.low), to_value=int(spec.high), step=0)]
    return desc


def overrides_to_parameters(defaults: dict, overrides: dict) -> list:
    """rclpy Parameters for programmatic starts (bondsim-ros up, tests); ints given for float
    parameters are converted, since ROS parameters are strictly typed."""
    from rclpy.parameter import Parameter

    out = []
    for key, value in (overrides or {}).items():
        if key == "use_sim_time":  # every node has it (rclpy declares it)
            out.append(Parameter(key, value=bool(value)))
            continue
        if key not in defaults:
            raise ValueError(f"unknown parameter {key!r}")
        default = defaults[key][0]
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(default, list) and default:
            kind = type(default[0])
            # ROS cannot type an empty array: [""] stands for "none" in string lists
            value = [kind(v) for v in value] or [kind()]
        out.append(Parameter(key, value=value))
    return out


def _empty_list_hint(spec) -> str:
    if isinstance(spec.default, list) and spec.default and isinstance(spec.default[0], str):
        return 'give [""] (the default) instead' if spec.default == [""] else "give at least one name"
    return f"give its values (default {spec.default})"


def declare_parameters(node, params: dict, on_change=None, start_only=()) -> dict:
    """Declare every row of ``params`` ({name: Param}) on ``node`` with its descriptor; returns
    the values in effect. A start value that is not allowed is a ValueError naming every bad
    parameter. Afterwards every SetParameters request is checked against the table (refused
    with the reason) and the accepted changes of live parameters are passed, as {name: value},
    to ``on_change``, which applies them (a ValueError from it refuses the change).
    ``start_only``: rclpy's own parameters (use_sim_time) the node reads once, at start: a
    change is refused, before rclpy's own callback would take it."""
    from rclpy.exceptions import ParameterException, ParameterUninitializedException

    errors, values = [], {}
    for key, spec in params.items():
        try:
            node.declare_parameter(key, spec.default, descriptor(key, spec))
        except ParameterException as exc:  # rclpy's type or range check of the start value
            given = node._parameter_overrides.get(key)  # rcl's parse of --ros-args, files, overrides
            errors.append((given is not None and check_value(key, spec, given.value)) or f"{key}: {exc}")
            continue
        try:
            values[key] = node.get_parameter(key).value
        except ParameterUninitializedException:  # rcl reads `[]` as no value: an empty list has no type
            errors.append(f"{key}: an empty list ([]) has no type in ROS; " + _empty_list_hint(spec))
            continue
        if error := check_value(key, spec, values[key]):
            errors.append(error)
    if errors:
        raise ValueError(f"invalid {node.get_name()} parameters: " + "; ".join(errors))
    # (added after rclpy's TimeSource callback, so run before it: a refusal here stops it)
    node.add_on_set_parameters_callback(lambda changed: _on_set(params, changed, on_change, start_only))
    return values


def _on_set(params: dict, changed, on_change, start_only=()):
    from rcl_interfaces.msg import SetParametersResult

    changes = {}
    for param in changed:
        spec = params.get(param.name)
        if spec is None and param.name in start_only:
            return SetParametersResult(successful=False, reason=f"{param.name}: applies at start only (this node's "
                                                                f"stamps keep the clock it started with)")
        if spec is None:  # rclpy's own (use_sim_time)
            continue
        if not spec.live:  # rclpy refuses read-only ones first; kept for a table edited alone
            return SetParametersResult(successful=False, reason=f"{param.name}: applies at start only (read-only)")
        reason = check_value(param.name, spec, param.value)
        if reason:
            return SetParametersResult(successful=False, reason=reason)
        changes[param.name] = param.value
    if changes and on_change is not None:
        try:
            on_change(changes)
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
    return SetParametersResult(successful=True)
