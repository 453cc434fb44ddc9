"""Parameter sweeps: independent simulations of one model over a parameter grid, on every core
of this machine (a process pool) or on a Dask cluster.

``bondsim-ros sweep MODEL --param k=1:10:100 -o results.csv`` on the command line
(:mod:`bondsim_ros.sweep.commands`); :func:`sweep` from Python.
"""
__all__ = ["sweep", "SweepResult", "SweepError", "SweepInterrupted", "SweepAborted", "grid", "parse_param",
           "parse_values", "load_model", "MAX_RUNS"]


def __getattr__(name):
    # on first use: registering the command (bondsim-ros --help) imports this package, not numpy
    if name in __all__:
        from . import core

        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
