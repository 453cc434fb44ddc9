"""The BDF solver's options as one value: ``SolverOptions``, checked when it is made.

Every API that runs the solver (``BDFSolver``, ``Simulation``/``simulate``/``simulate_many``,
the twins, ``FitProblem``, ``sweep``) takes ``options: SolverOptions | None`` (None: the
defaults of its context, e.g. ``twin.protocol.TWIN_OPTIONS``). A frozen dataclass: options are
shared between runs and compared (a fit reuses its solver while its options are equal).

Imports nothing heavy (no numpy), so the command line builds its flags from it at parse time.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass

MAX_ORDER = 5  # the core's highest BDF order (bdf_core.c's MAX_ORDER; test_solver_options checks they agree)
LINEAR_SOLVERS = ("auto", "dense", "sparse")
RTOL_MAX = 0.1  # beyond it the error estimate no longer controls anything useful
# below it the error test asks for digits double precision does not hold: rtol 1e-16 ran 14,000
# steps of a linear problem to an error 900 times the tolerance, the round-off of its steps
RTOL_MIN = 100 * 2.220446049250313e-16


class SolverOptionError(ValueError):
    """A solver option outside its range; ``field`` names the option."""

    def __init__(self, field: str, message: str, allowed: str = ""):
        super().__init__(message)
        self.field = field
        self.allowed = allowed  # the allowed values, in words ("a number in [2.22e-14, 0.1]")


def _real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# the solver core's smallest step (bdf_core.c, hmin_at: 10 eps max(|t|, 1)): a largest step below
# it ends any run at its first step ("step size underflow"), whatever the model
HMAX_MIN = 10 * 2.220446049250313e-16


@dataclass(frozen=True)
class SolverOptions:
    """Options of the variable-step, variable-order BDF solver (docs/solver.md, "Options").

    rtol : relative tolerance, in [2.22e-14, 0.1] (100 eps: no finer relative accuracy can be kept).
    atol : absolute tolerance, > 0 and finite: one number, or one per unknown (a sequence,
        stored as a tuple; its length is checked against the problem by ``BDFSolver``).
    hmax : largest step, > 0 (inf: no limit); also what keeps a step from jumping over a short input.
    h0 : first step, None (from the initial slope, at most 1e-2 and hmax) or > 0.
    max_order : highest BDF order, an integer from 1 to 5.
    suppress_alg : leave the algebraic unknowns out of the error test (index-2 multipliers).
    linear_solver : LU of the iteration matrix: "auto" (sparse for n > 60 and density < 0.2),
        "dense" or "sparse".
    max_steps : steps allowed between two output times before ``TooManySteps`` (IDA's mxstep), a positive integer.
    """

    rtol: float = 1e-6
    atol: float | tuple = 1e-8
    hmax: float = math.inf
    h0: float | None = None
    max_order: int = MAX_ORDER
    suppress_alg: bool = True
    linear_solver: str = "auto"
    max_steps: int = 500_000

    def __post_init__(self):
        def bad(name, allowed):
            raise SolverOptionError(name, f"solver option {name} must be {allowed}, got {getattr(self, name)!r}",
                                    allowed)

        if not (_real(self.rtol) and RTOL_MIN <= self.rtol <= RTOL_MAX):
            bad("rtol", f"a number in [{RTOL_MIN:.3g}, {RTOL_MAX:g}]")
        atol = self.atol
        if _real(atol):
            if not (math.isfinite(atol) and atol > 0):
                bad("atol", "a positive finite number")
            object.__setattr__(self, "atol", float(atol))
        else:
            try:
                values = tuple(atol)
            except TypeError:
                bad("atol", "a positive finite number or a sequence of them (one per unknown)")
            if not values or not all(_real(a) and math.isfinite(a) and a > 0 for a in values):
                bad("atol", "a positive finite number or a non-empty sequence of them (one per unknown)")
            object.__setattr__(self, "atol", tuple(float(a) for a in values))
        if not (_real(self.hmax) and self.hmax >= HMAX_MIN):  # NaN fails too
            bad("hmax", f"a positive number of at least {HMAX_MIN:.3g}, the solver's smallest step (inf: no limit)")
        if self.h0 is not None and not (_real(self.h0) and math.isfinite(self.h0) and self.h0 > 0):
            bad("h0", "None or a positive finite number")
        if not (isinstance(self.max_order, numbers.Integral) and not isinstance(self.max_order, bool)
                and 1 <= self.max_order <= MAX_ORDER):
            bad("max_order", f"an integer from 1 to {MAX_ORDER}")
        if not isinstance(self.suppress_alg, bool):
            bad("suppress_alg", "True or False")
        if self.linear_solver not in LINEAR_SOLVERS:
            bad("linear_solver", ", ".join(map(repr, LINEAR_SOLVERS[:-1])) + f" or {LINEAR_SOLVERS[-1]!r}")
        if not (isinstance(self.max_steps, numbers.Integral) and not isinstance(self.max_steps, bool)
                and self.max_steps > 0):
            bad("max_steps", "a positive integer")
        for name in ("rtol", "hmax"):
            object.__setattr__(self, name, float(getattr(self, name)))
        if self.h0 is not None:
            object.__setattr__(self, "h0", float(self.h0))
        object.__setattr__(self, "max_order", int(self.max_order))
        object.__setattr__(self, "max_steps", int(self.max_steps))

    def replace(self, **changes) -> "SolverOptions":
        """A copy with ``changes`` (field -> value), checked as a new one is."""
        return dataclasses.replace(self, **changes)


__all__ = ["SolverOptions", "SolverOptionError", "MAX_ORDER", "LINEAR_SOLVERS", "HMAX_MIN"]
