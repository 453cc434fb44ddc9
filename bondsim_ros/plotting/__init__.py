"""The one way every plot in the package is written (size, layout, resolution, closing)."""
from __future__ import annotations


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


def save_figure(fig, path) -> str:
    """Lay out, write at 110 dpi under bondsim_ros.outfiles' rule (whole or not at all; a link
    written through, a pipe or device written to), close (figures are many in long sessions);
    returns the path. The format is the name's suffix (none: PNG)."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    from bondsim_ros.outfiles import output_path

    fig.tight_layout()
    try:
        with output_path(path) as tmp:
            fig.savefig(tmp, dpi=110, format=Path(path).suffix.lstrip(".").lower() or "png")
    finally:
        plt.close(fig)
    return str(path)
