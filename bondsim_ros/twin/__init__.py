"""Live twins: the Twin protocol (protocol.py), the generic ModelTwin over any compiled model and
its mechanism binding (model_twin.py), joint-trajectory interpolation (trajectory.py), the waypoint
follower of a holonomic base (waypoints.py)."""
from .protocol import (ERROR, OK, WARN, CommandError, Diagnostic, JointTrajectory, Limits, Twin, TwinState,
                       limit_twist)

__all__ = ["Twin", "TwinState", "Diagnostic", "JointTrajectory", "Limits", "CommandError", "limit_twist",
           "OK", "WARN", "ERROR"]
