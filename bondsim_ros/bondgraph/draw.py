"""Draw a bond graph with Graphviz: components as boxes (clusters), bonds as half arrows.

Elements are labelled with their symbol and name (``I: mass``); a bond's half arrow points
in the direction of power, as in the paper's figures; signal lines are thin dashed arrows.
Needs the ``dot`` program (Debian package graphviz) for images; ``.dot`` output needs nothing.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .core import Component, ControlPort, Model, PowerPort


def _q(text: str) -> str:
    return '"' + str(text).replace('"', r"\"") + '"'


def to_dot(model: Model, max_depth: int | None = None) -> str:
    """DOT source of the model; documents deeper than ``max_depth`` are drawn as closed boxes."""
    lines = [
        f"digraph {_q(model.name)} {{",
        "  graph [rankdir=LR, fontname=Helvetica, fontsize=11, compound=true, nodesep=0.3, ranksep=0.5];",
        "  node [fontname=Helvetica, fontsize=10];",
        "  edge [fontname=Helvetica, fontsize=9];",
    ]
    closed: set = set()

    def node_id(port, doc):
        owner = port.owner
        if owner.elementary or id(owner) in closed:
            return _q(owner.path if owner.parent is not None else owner.name)
        return _q(f"{owner.path}:{port.name}")

    def emit(comp: Component, depth: int, indent: str):
        for child in comp.children.values():
            child.ensure_built()
            if child.elementary:
                sym = getattr(child, "symbol", "?")
                is_block = all(isinstance(p, ControlPort) for p in child.ports.values())
                shape = "circle" if sym in ("0", "1") else ("box" if is_block else "plaintext")
                label = sym if sym in ("0", "1") else f"{sym}: {child.name}"
                style = ', style="rounded,dashed"' if shape == "box" else ""
                lines.append(f"{indent}{_q(child.path)} [label={_q(label)}, shape={shape}{style}, "
                             f"width=0.3, height=0.3];")
            elif max_depth is not None and depth >= max_depth:
                closed.add(id(child))
                lines.append(f"{indent}{_q(child.path)} [label={_q(child.name)}, shape=box, style=rounded];")
            else:
                lines.append(f"{indent}subgraph {_q('cluster_' + child.path)} {{")
                lines.append(f"{indent}  label={_q(child.name)}; style=rounded; color=gray40;")
                for port in child.ports.values():
                    shape = "point" if isinstance(port, PowerPort) else "triangle"
                    lines.append(f"{indent}  {_q(child.path + ':' + port.name)} [label={_q(port.name)}, "
                                 f"shape=box, style=filled, fillcolor=gray92, fontsize=8, width=0.2, height=0.2];")
                emit(child, depth + 1, indent + "  ")
                lines.append(f"{indent}}}")
        for bond in comp.bonds:
            a, b = node_id(bond.source, comp), node_id(bond.target, comp)
            lines.append(f"{indent}{a} -> {b} [arrowhead=lnormal, penwidth=1.4];")
        for conn in comp.connections:
            a, b = node_id(conn.source, comp), node_id(conn.target, comp)
            lines.append(f"{indent}{a} -> {b} [style=dashed, color=gray30, arrowsize=0.6];")

    model.ensure_built()
    emit(model, 0, "  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


FORMATS = ("png", "svg", "pdf", "dot")  # the suffixes draw() writes


def draw(model: Model, out_path, max_depth: int | None = None) -> Path:
    """Write the drawing to ``out_path`` (.png, .svg, .pdf or .dot)."""
    out = Path(out_path)
    src = to_dot(model, max_depth)
    fmt = out.suffix.lstrip(".").lower()
    if fmt == "dot":
        out.write_text(src)
        return out
    if fmt not in FORMATS:
        raise ValueError(f"unsupported drawing format {out.suffix!r}: use .png, .svg, .pdf or .dot")
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("Graphviz 'dot' not found: install it (apt-get install graphviz) or write a .dot file")
    proc = subprocess.run([dot, f"-T{fmt}", "-o", str(out)], input=src.encode(), capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"dot failed: {proc.stderr.decode(errors='replace').strip()}")
    return out
