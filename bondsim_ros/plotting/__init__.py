"""The one way every plot in the package is written (size, layout, resolution, closing)."""
from __future__ import annotations


def figure_path(out_png, tag: str = ""):
    """Where a model's figure ``tag`` goes: ``out.png`` -> ``out_tag.png`` (no suffix: .png)."""
    from pathlib import Path

    out = Path(out_png)
    return out.with_name(f"{out.stem}{'_' + tag if tag else ''}{out.suffix or '.png'}")


def save_figure(fig, path) -> str:
    """Lay out, write at 110 dpi, close (figures are many in long sessions); returns the path."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
