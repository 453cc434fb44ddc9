"""Keep DDS discovery on this machine unless the user decided otherwise.

The pip environment and CI run ROS 2 on machines whose network is not ours to flood with
multicast; a user who sets the variable keeps full control. A twin beside a real robot needs
the robot's computer: ROS's own default range, SUBNET, which the twin launch file
(`discovery_range:=`) and `bondsim-ros up --bridge` (`--discovery`) select (docs/ros.md).
"""
import os
import sys
import time
from pathlib import Path

DISCOVERY_RANGES = ("OFF", "LOCALHOST", "SUBNET", "SYSTEM_DEFAULT")  # ROS_AUTOMATIC_DISCOVERY_RANGE, Jazzy+


def ensure_local_discovery() -> None:
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")  # Jazzy, Kilted


def choose_discovery_range(flag: str | None, bridge: bool, environ=os.environ) -> str:
    """The range a process should use: the explicit flag; else what the environment says; else
    SUBNET (ROS's default) when it talks to a real robot, LOCALHOST otherwise."""
    if flag:
        value = flag.upper()
        if value not in DISCOVERY_RANGES:
            raise ValueError(f"discovery range {flag!r}: one of {', '.join(r.lower() for r in DISCOVERY_RANGES)}")
        return value
    return environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE") or ("SUBNET" if bridge else "LOCALHOST")


def init_rclpy(**kwargs) -> None:
    """rclpy.init without rclpy's own SIGINT/SIGTERM handlers: those shut the context down
    under a spinning executor, whose next timer then publishes through a dead context
    (``RCLError: publisher's context is invalid``). ``spin_until_signal`` stops spinning first
    and shuts down after."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO, **kwargs)


class sigterm_interrupts:
    """While building nodes (seconds: the model is compiled), SIGTERM raises KeyboardInterrupt
    as Ctrl-C does, so both end the process through the same clean-up."""

    def __enter__(self):
        import signal
        import threading

        self.old = None
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGTERM, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        import signal

        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)
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


def run_node(node_class, args=None) -> None:
    """A node executable's whole life: init, spin until Ctrl-C, SIGTERM (launch's way of
    stopping it) or shutdown, then destroy the node before the context goes."""
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    ensure_local_discovery()
    context = rclpy.Context()
    init_rclpy(args=args, context=context)
    node = None
    try:
        try:
            with sigterm_interrupts():
                node = node_class(context=context)
        except ValueError as exc:  # bad parameters / robot_description: say what, no traceback
            import rclpy.logging

            name = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else node_class.__name__
            rclpy.logging.get_logger(name).fatal(str(exc))
            raise SystemExit(2) from None
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        try:
            spin_until_signal(executor, context)
        except ExternalShutdownException:
            pass
        executor.shutdown()
    except KeyboardInterrupt:  # Ctrl-C while the node was still being built
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown(context=context)


def declare_parameters(node, params: dict) -> dict:
    """Declare ``{name: (default, description)}`` on ``node``; returns the values in effect."""
    from rcl_interfaces.msg import ParameterDescriptor

    for key, (default, desc) in params.items():
        node.declare_parameter(key, default, ParameterDescriptor(description=desc))
    return {k: node.get_parameter(k).value for k in params}
