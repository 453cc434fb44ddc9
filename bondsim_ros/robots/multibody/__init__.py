"""The pendulum and slider-crank benchmarks of Boudon et al. (model.py) bound to
urdf/multibody/Pendulum.xml and SliderCrank.xml; the joint columns come per row from the
same postprocessors ``bondsim-ros simulate`` uses."""
from __future__ import annotations


def _variant(name, xml, derive_name):
    from . import model as m

    from .._xml_robot import xml_robot

    return xml_robot(name, f"{name.replace('_', ' ')} (multibody benchmark, Boudon et al.)", m, getattr(m, name),
                     ("multibody", xml),
                     mobile=False, derive=getattr(m, derive_name))


def SLIDER_CRANK_LAGRANGE():  # noqa: N802 - entry point names the variant
    return _variant("slider_crank_lagrange", "SliderCrank.xml", "add_slider_joint_columns")


def PENDULUM_LAGRANGE():  # noqa: N802
    return _variant("pendulum_lagrange", "Pendulum.xml", "add_pendulum_joint_columns")


# two robots in one plug-in
ROBOT = {"slider_crank_lagrange": SLIDER_CRANK_LAGRANGE, "pendulum_lagrange": PENDULUM_LAGRANGE}


def MODELS():  # noqa: N802 - the plug-in's models (model.py imported only when they are asked for)
    import dataclasses

    from .model import ENTRIES
    from .plots import plot_pendulum, plot_slider  # (matplotlib only when a figure is drawn)

    return [dataclasses.replace(e, plot=plot_pendulum if e.name.startswith("pendulum") else plot_slider)
            for e in ENTRIES]
