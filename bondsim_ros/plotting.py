"""The one way every plot in the package is written (size, layout, resolution, closing)."""
from __future__ import annotations


def save_figure(fig, path) -> str:
    """Lay out, write at 110 dpi, close (figures are many in long sessions); returns the path."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
