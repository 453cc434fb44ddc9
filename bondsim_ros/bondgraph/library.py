"""Reusable components built from the elements: the parts several systems share.

``DCMotor`` is the drive of the Robotino (Damic & Cohodar Husic Fig. 28), of the dual-arm manipulator's
joints (Qian & Rahmani Fig. 9) and of the DC-motor example.
"""
from __future__ import annotations

from .core import Component, ModelError
from .elements import GY, TF, EffortJunction, I, R


class DCMotor(Component):
    """Armature (R_a, L_a) -> GY(k) -> rotor (J, b) -> TF(ratio) -> shaft.

    Ports: ``supply`` (in: bond it from a voltage source, e.g. ``Se``) and ``shaft`` (out: the
    gear output). Control outputs: ``current`` (armature current) and ``omega_motor``.
    TF convention of the engine: f1 = ratio f2, so the rotor turns ``ratio`` times faster than
    the shaft (a negative ratio reverses it). Every value may be a number, a run-time parameter
    name or an expression of them. ``friction``: an effort law in the rotor speed ``f`` that
    replaces the viscous ``b`` (e.g. ``"b*f + Fc*tanh(f)"``); ``i0``: initial current (with La a
    number).
    """

    def __init__(self, name, Ra, La, K, J, b=0.0, ratio=1.0, friction=None, i0=None):
        super().__init__(name, ports={"supply": "in", "shaft": "out"},
                         controls={"current": "out", "omega_motor": "out"})
        if i0 is not None and (isinstance(La, bool) or not isinstance(La, (int, float))):
            # the start value is a number when the model is built: La i0 of a run-time La cannot be
            raise ModelError(self.path, f"i0 needs La as a number (the initial flux linkage La*i0 is fixed when "
                                        f"the model is built), got La = {La!r}")
        self.values = dict(Ra=Ra, La=La, K=K, J=J, b=b, ratio=ratio)
        self.friction, self.i0 = friction, i0

    def build(self):
        v = self.values
        armature = self.add(EffortJunction("armature", output=True))
        rotor = self.add(EffortJunction("rotor", output=True))
        self.add(R("Ra", v["Ra"]), I("La", v["La"], f0=self.i0), GY("emf", v["K"]), I("Jm", v["J"]))
        self.add(R("friction", effort=self.friction) if self.friction is not None else R("friction", v["b"]))
        self.add(TF("gear", v["ratio"]))
        self.bond(self.supply, armature)
        for a, b in ((armature, "Ra"), (armature, "La"), (armature, "emf.p1"), ("emf.p2", rotor), (rotor, "Jm"),
                     (rotor, "friction"), (rotor, "gear.p1"), ("gear.p2", self.shaft)):
            self.bond(a, b)
        self.connect(armature.out, self.current)
        self.connect(rotor.out, self.omega_motor)


__all__ = ["DCMotor"]
