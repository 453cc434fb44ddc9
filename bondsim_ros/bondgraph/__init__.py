"""The bond-graph engine: elements, components, ports and signals -> DAE -> compiled kernels.

Python API, reading like the diagram::

    from bondsim_ros.bondgraph import Model, I, C, R, Se, EffortJunction, simulate

    m = Model("msd")
    j = m.add(EffortJunction("v", output=True))
    m.add(Se("F", 1.0), I("mass", 1.0), C("spring", 1 / 4.0), R("damper", 0.5))
    m.bond("F", j); m.bond(j, "mass"); m.bond(j, "spring"); m.bond(j, "damper")
    result = simulate(m, t_end=10, dt_out=0.01)

No ROS here.
"""
from .core import Component, ControlPort, Model, ModelError, PowerPort
from .elements import C, GY, I, R, TF, EffortJunction, FlowJunction, Se, Sf
from .library import DCMotor
from .signals import PID, Derivative, Function, Gain, Input, Integrator, Node, Recorder, Sum

__all__ = [
    "Component", "Model", "ModelError", "PowerPort", "ControlPort",
    "I", "C", "R", "TF", "GY", "Se", "Sf", "EffortJunction", "FlowJunction",
    "Input", "Sum", "Gain", "Function", "Integrator", "Derivative", "PID", "Node", "Recorder", "DCMotor",
    "compile_model", "simulate", "simulate_many", "Simulation", "SimulationResult",
]


def __getattr__(name):
    # numeric parts load numba/scipy: import them only when used
    if name == "compile_model":
        from .codegen import compile_model

        return compile_model
    if name in ("simulate", "simulate_many", "Simulation", "SimulationResult"):
        from . import simulation

        return getattr(simulation, name)
    raise AttributeError(name)
