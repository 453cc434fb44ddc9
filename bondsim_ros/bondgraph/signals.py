"""Control signal blocks (Damic & Cohodar Husic, section 3.1.3, Fig. 15).

Signals carry information, not power: each output port is one scalar variable defined by its
block's relation. Blocks: input generators, summator, gain, function, integrator, derivative,
PID with limits and anti-windup, signal node, and the recorder (BondSim's display) whose
inputs become named columns of the simulation output.
"""
from __future__ import annotations

import math

from .core import ModelError, check_name, float_or_inf, number_shown
from .elements import Element, parse_expression


# Most ports a Sum, Node or Recorder may have (a model file asking for 10^8 is refused by name).
MAX_BLOCK_PORTS = 1000


class Block(Element):
    """A signal block: control ports only."""

    symbol = "blk"

    def __init__(self, name, inputs=(), outputs=("out",)):
        super().__init__(name, inputs=inputs)
        for out in outputs:
            self.add_control_port(out, "out")


def _args(name, shape, **values) -> dict:
    """The arguments of an input shape as law text: numbers as written, expressions (a
    parameter name) in parentheses so that they stay one operand; the law parser checks them."""
    out = {}
    for key, v in values.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if not math.isfinite(float_or_inf(v)):  # repr would put nan into the law, refused as an unknown name
                raise ModelError(name, f"{shape}: {key} must be a finite number, got {number_shown(v)}")
            out[key] = repr(v)
        elif isinstance(v, str):
            out[key] = f"({v})"
        else:
            raise ModelError(name, f"{shape}: {key} must be a number or an expression, got {v!r}")
    return out


class Input(Block):
    """Input generator: ``out = value(t, parameters)``. Use the constructors for the usual shapes."""

    symbol = "In"

    def __init__(self, name, value=0.0, keys=None):
        super().__init__(name)
        if keys is not None and not isinstance(keys, dict):
            raise ModelError(self.path, f"keys must be a mapping key -> value of the shape, got {keys!r}"[:200])
        self.value = value
        # a shape's keys given as laws (``after: V0``), each parsed alone first: an error names
        # the key the user wrote and its line, not the law the shape composes from them
        self.keys = {k: v for k, v in (keys or {}).items() if isinstance(v, str)}

    @classmethod
    def constant(cls, name, value):
        return cls(name, value)

    @classmethod
    def step(cls, name, t0=0.0, before=0.0, after=1.0):
        a = _args(name, "Step", before=before, t0=t0, after=after)
        return cls(name, f"Piecewise(({a['before']}, t < {a['t0']}), ({a['after']}, True))",
                   dict(before=before, t0=t0, after=after))

    @classmethod
    def ramp(cls, name, slope=1.0, t0=0.0, offset=0.0):
        a = _args(name, "Ramp", slope=slope, t0=t0, offset=offset)
        return cls(name, f"{a['offset']} + Piecewise((0, t < {a['t0']}), ({a['slope']}*(t - {a['t0']}), True))",
                   dict(slope=slope, t0=t0, offset=offset))

    @classmethod
    def sine(cls, name, amplitude=1.0, omega=1.0, phase=0.0, offset=0.0):
        a = _args(name, "Sine", amplitude=amplitude, omega=omega, phase=phase, offset=offset)
        return cls(name, f"{a['offset']} + {a['amplitude']}*sin({a['omega']}*t + {a['phase']})",
                   dict(amplitude=amplitude, omega=omega, phase=phase, offset=offset))

    def equations(self, ctx):
        names = ctx.names_for(self)
        for key, text in self.keys.items():  # checked only: the composed law is the one used
            parse_expression(text, names, self.law_where(key))
        ctx.output(self.out, self.law(self.value, ctx, what="value"))


class Sum(Block):
    """Summator: ``out = sum(sign_i * in_i)``; ``signs="+-"`` gives inputs in1 (+) and in2 (-)."""

    symbol = "Σ"

    def __init__(self, name, signs="++"):
        if not isinstance(signs, str) or not signs or set(signs) - {"+", "-"}:
            raise ModelError(name, f"signs must be a string of '+' and '-', got {signs!r}")
        if len(signs) > MAX_BLOCK_PORTS:
            raise ModelError(name, f"{len(signs)} inputs (limit {MAX_BLOCK_PORTS})")
        super().__init__(name, inputs=[f"in{i + 1}" for i in range(len(signs))])
        self.signs_text = signs

    def equations(self, ctx):
        import sympy as sp

        total = sp.Add(*[(1 if s == "+" else -1) * ctx.signal(self.port(f"in{i + 1}"))
                         for i, s in enumerate(self.signs_text)])
        ctx.output(self.out, total)


class Gain(Block):
    """``out = k * in``."""

    symbol = "K"

    def __init__(self, name, k):
        super().__init__(name, inputs=["in_"])
        self.k = k

    def equations(self, ctx):
        ctx.output(self.out, self.law(self.k, ctx, what="gain") * ctx.signal(self.in_))


class Function(Block):
    """Multi-input function generator: ``out = expr(inputs, t)``."""

    symbol = "f"

    def __init__(self, name, expr, inputs=("u",)):
        super().__init__(name, inputs=inputs)
        self.expr = expr

    def equations(self, ctx):
        ctx.output(self.out, self.law(self.expr, ctx, what="function"))


class Integrator(Block):
    """``out = x``, ``x' = in``, ``x(0) = x0``: positions from velocities (bond graphs are velocity based)."""

    symbol = "∫"

    def __init__(self, name, x0=0.0):
        super().__init__(name, inputs=["in_"])
        self.x0 = x0

    def equations(self, ctx):
        x, dx = ctx.state(self, "x", self.x0)
        ctx.equation(self, dx - ctx.signal(self.in_), "x' = in")
        ctx.output(self.out, x)


class Derivative(Block):
    """``out = d(in)/dt`` exactly, through a hidden variable that follows the input."""

    symbol = "d/dt"

    def __init__(self, name):
        super().__init__(name, inputs=["in_"])

    def equations(self, ctx):
        # 0.0 is only a first guess: x' enters no residual row (only the output), so the solver
        # treats x as algebraic and its consistent start solves x = in at t0
        x, dx = ctx.state(self, "x", 0.0)
        ctx.equation(self, x - ctx.signal(self.in_), "x = in")
        ctx.output(self.out, dx)


class PID(Block):
    """PID on the error input ``in_``: filtered derivative, output limits, back-calculation anti-windup.

    u = kp e + xi + kd (e - xf)/tf,  xi' = ki e + kb (sat(u) - u),  xf' = (e - xf)/tf,  out = sat(u).
    ``kb`` (back-calculation gain) defaults to 10 ki/kp, i.e. a tracking time of Ti/10.
    """

    symbol = "PID"

    def __init__(self, name, kp=1.0, ki=0.0, kd=0.0, tf=0.01, umin=None, umax=None, kb=None):
        super().__init__(name, inputs=["in_"])

        def number(x):
            return isinstance(x, (int, float)) and not isinstance(x, bool)

        if number(umin) and number(umax) and not umin < umax:
            raise ModelError(name, f"PID limits need umin < umax, got {umin}, {umax}")
        if kd and number(tf) and not tf > 0:
            raise ModelError(name, "PID derivative filter time tf must be positive")
        self.kp, self.ki, self.kd, self.tf = kp, ki, kd, tf
        self.umin, self.umax, self.kb = umin, umax, kb

    def equations(self, ctx):
        e = ctx.signal(self.in_)
        kp, ki, kd = (self.law(v, ctx, what=w) for v, w in ((self.kp, "kp"), (self.ki, "ki"), (self.kd, "kd")))
        u = kp * e
        if self.kd:
            xf, dxf = ctx.state(self, "xf", 0.0)
            tf = self.law(self.tf, ctx, what="tf")
            # a run-time parameter too: a negative tf makes the filter unstable, and the run
            # grew to 1e238 without a word
            ctx.require(self, tf, "positive", "tf")
            ctx.equation(self, dxf - (e - xf) / tf, "derivative filter")
            u += kd * (e - xf) / tf
        if self.ki:
            xi, dxi = ctx.state(self, "xi", 0.0)
            u += xi
        sat = u
        if self.umin is not None or self.umax is not None:
            import sympy as sp

            from .laws import clip

            lo = self.law(self.umin, ctx, what="umin") if self.umin is not None else -sp.oo
            hi = self.law(self.umax, ctx, what="umax") if self.umax is not None else sp.oo
            if self.umin is not None and self.umax is not None:
                if lo.free_symbols or hi.free_symbols:
                    ctx.require(self, hi - lo, "positive", "umax - umin")  # numbers: refused in __init__
                elif not float(lo) < float(hi):  # constant laws ("2", "2*pi") as numbers are in __init__
                    raise ModelError(self.path, f"PID limits need umin < umax, got {float(lo):g}, {float(hi):g}")
            sat = clip(u, lo, hi)
        if self.ki:
            # back-calculation: while saturated, bleed the integral toward the limit (no windup)
            if self.kb is not None:
                kb = self.law(self.kb, ctx, what="kb")
            else:  # kp may be a run-time parameter: then it must not be 0 (10 ki/kp)
                kb = 10.0 * (ki / kp if kp != 0 else 1.0)
                if getattr(kp, "free_symbols", None) and kp.free_symbols <= set(ctx.param_symbols.values()):
                    ctx.param_checks.append((kp, f"{self.path} (kp = {str(kp).replace('param:', '')}) must not be "
                                                 f"zero: the default back-calculation gain is 10 ki/kp (give kb)",
                                             "nonzero"))
            ctx.equation(self, dxi - ki * e - kb * (sat - u), "integral with back-calculation")
        ctx.output(self.out, sat)


class Node(Block):
    """Signal node: one input branched to ``n`` equal outputs (out1..outn)."""

    symbol = "•"

    def __init__(self, name, n=2):
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_BLOCK_PORTS:
            raise ModelError(name, f"n must be a whole number of outputs from 1 to {MAX_BLOCK_PORTS}, got {n!r}")
        super().__init__(name, inputs=["in_"], outputs=[f"out{i + 1}" for i in range(n)])
        self.n = n

    def equations(self, ctx):
        value = ctx.signal(self.in_)
        for i in range(self.n):
            ctx.output(self.port(f"out{i + 1}"), value)


class Recorder(Block):
    """BondSim's display: each input becomes a named output column (``columns=["x", "x_ref"]``)."""

    symbol = "rec"
    reserved_inputs = frozenset({"t"})  # columns are no law names; "t" is the time column

    def __init__(self, name, columns):
        if isinstance(columns, str):
            columns = [columns]
        if not isinstance(columns, (list, tuple)) or len(columns) > MAX_BLOCK_PORTS:
            raise ModelError(name, f"columns must be a list of at most {MAX_BLOCK_PORTS} names, got {columns!r}"[:200])
        for c in columns:
            check_name(c, name)
        super().__init__(name, inputs=list(columns), outputs=())
        self.columns = list(columns)

    def equations(self, ctx):
        for c in self.columns:
            ctx.record(self, c, ctx.signal(self.port(c)))


SIGNALS = {"Input": Input, "Sum": Sum, "Gain": Gain, "Function": Function, "Integrator": Integrator,
           "Derivative": Derivative, "PID": PID, "Node": Node, "Recorder": Recorder}
