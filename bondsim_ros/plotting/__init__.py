"""The one way every plot in the package is written (size, layout, resolution, closing)."""
from __future__ import annotations

import contextlib


def figure_path(out_png, tag: str = ""):
    """Where a model's figure ``tag`` goes: ``out.png`` -> ``out_tag.png`` (no suffix: .png).
    A tagged figure has no name to take after a device or pipe (``--plot /dev/stdout``): an
    OutputError, rather than a file made beside the device."""
    from pathlib import Path

    from bondsim_ros.outfiles import OutputError, is_stream

    out = Path(out_png)
    if tag and is_stream(out):
        raise OutputError(f"{out}: a device or pipe takes one figure, and this plot has several "
                          f"(such as {out.stem}_{tag}{out.suffix or '.png'}): give a file name")
    return out.with_name(f"{out.stem}{'_' + tag if tag else ''}{out.suffix or '.png'}")


def check_figure_format(path, option: str) -> None:
    """Refuse, before any work, a figure name whose suffix matplotlib writes no format for
    (``--plot fit.txt``); no suffix is PNG, as save_figure writes it."""
    from pathlib import Path

    from matplotlib.backend_bases import FigureCanvasBase

    from bondsim_ros.outfiles import OutputError

    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    formats = FigureCanvasBase.get_supported_filetypes()
    if fmt not in formats:
        raise OutputError(f"{option} {path}: no figure format .{fmt} (formats: {', '.join(sorted(formats))})")


_together: list | None = None  # the figures staged inside figures_together(), in order


@contextlib.contextmanager
def figures_together(taken: dict | None = None):
    """The figures save_figure writes inside the block are put in place together when it ends
    without error, and all removed when it raises (a plot of several figures whose third
    cannot be written, Ctrl-C): no run is left with some of its figures. ``taken``: the other
    files of the command ({path: its option}); a figure named as one of them (a model's
    ``r_errors.png`` for ``--plot r.png --csv r_errors.png``) is an OutputError, and none is
    put in place."""
    import os

    from bondsim_ros.outfiles import OutputError, is_stream

    global _together
    outer, _together = _together, []
    staged = _together
    others = {os.path.realpath(path): option for path, option in (taken or {}).items() if not is_stream(path)}
    try:
        yield
        for out in staged:
            option = others.get(os.path.realpath(out.path))
            if option is not None:
                raise OutputError(f"{out.path} is also the file {option} writes: give them different names")
        while staged:
            staged[0].commit()
            staged.pop(0)
    finally:
        _together = outer
        for out in staged:  # (after an error: the ones not put in place)
            out.discard()


def save_figure(fig, path) -> str:
    """Lay out, write at 110 dpi under bondsim_ros.outfiles' rule (whole or not at all; a link
    written through, a pipe or device written to), close (figures are many in long sessions);
    returns the path. The format is the name's suffix (none: PNG). Inside figures_together()
    the figure is staged, put in place with the block's others."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    from bondsim_ros.outfiles import Output, check_output, output_path

    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    fig.tight_layout()
    try:
        if _together is None:
            with output_path(path) as tmp:
                fig.savefig(tmp, dpi=110, format=fmt)
        else:
            check_output(path, "")  # a target that cannot take it (a folder) before any is put in place
            out = Output(path)
            try:
                fig.savefig(out.stage(), dpi=110, format=fmt)
            except BaseException:
                out.discard()
                raise
            _together.append(out)
    finally:
        plt.close(fig)
    return str(path)


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_columns(result, out_png, cols, title) -> list:
    """One panel per (column, axis label) of ``cols`` against t, one figure."""
    import numpy as np

    plt = pyplot()

    fig, axes = plt.subplots(len(cols), 1, figsize=(7, 2.2 * len(cols)), sharex=True)
    for ax, (col, label) in zip(np.atleast_1d(axes), cols):
        ax.plot(result.t, result[col])
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_title(title)
    np.atleast_1d(axes)[-1].set_xlabel("t [s]")
    return [save_figure(fig, out_png)]
