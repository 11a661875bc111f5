"""Conceptual diagrams drawn as code: commutative squares and chains of spaces.

A diagram is a set of labelled nodes placed on a grid and labelled arrows between them;
labels are matplotlib mathtext (``r"$V_i$"``). :func:`commutative_square` is the common
case. Every function returns a matplotlib Figure (the caller shows or closes it).

Chapters: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels),
*Building equivariant layers* (book/part1/05_equivariant_layers) and *The main theorem*
(book/part2/06_main_theorem).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt

__all__ = ["diagram", "commutative_square"]

Arrow = tuple  # (source, target, label) or (source, target, label, options)


def diagram(
    nodes: Mapping[str, tuple[float, float, str]],
    arrows: Sequence[Arrow],
    title: str | None = None,
    size: tuple[float, float] | None = None,
):
    """Draw labelled nodes and labelled arrows.

    Args:
        nodes: name -> (x, y, label); x grows to the right, y upwards, one unit per
            grid step.
        arrows: ``(source, target, label)`` or ``(source, target, label, options)``
            where options is a dict with ``"side"`` (``"left"``/``"right"`` of the
            arrow's direction, default ``"left"``), ``"dashed"`` (bool), ``"bend"``
            (curvature, default 0) and ``"color"``.
        title: optional title above the diagram.
        size: figure size in inches (default: from the grid's extent).

    Chapters: *Models, latent spaces and submodels*, *Building equivariant layers*,
    *The main theorem*.
    """
    if not nodes:
        raise ValueError("diagram: nodes is empty; expected at least one node")
    for arrow in arrows:
        if len(arrow) not in (3, 4):
            raise ValueError(f"diagram: arrow {arrow!r} must be (source, target, label[, options])")
        for end in arrow[:2]:
            if end not in nodes:
                raise ValueError(f"diagram: arrow {arrow!r} names {end!r}, not one of {sorted(nodes)}")
    xs = [x for x, _, _ in nodes.values()]
    ys = [y for _, y, _ in nodes.values()]
    width, height = max(xs) - min(xs), max(ys) - min(ys)
    fig, ax = plt.subplots(figsize=size or (1.6 + 1.7 * width, 1.0 + 1.3 * height))
    ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
    ax.set_ylim(min(ys) - 0.45, max(ys) + 0.45)
    ax.set_axis_off()
    boxes = {
        name: ax.text(x, y, label, ha="center", va="center", fontsize=15,
                      bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="none"))
        for name, (x, y, label) in nodes.items()
    }
    for arrow in arrows:
        src, dst, label = arrow[:3]
        opts = dict(arrow[3]) if len(arrow) == 4 else {}
        color = opts.get("color", "black")
        bend = float(opts.get("bend", 0.0))
        ax.annotate(
            "", xy=nodes[dst][:2], xytext=nodes[src][:2],
            arrowprops=dict(
                arrowstyle="-|>", color=color, lw=1.4, shrinkA=16, shrinkB=16,
                linestyle="--" if opts.get("dashed") else "-",
                connectionstyle=f"arc3,rad={bend}", patchA=boxes[src], patchB=boxes[dst],
            ),
        )
        (x0, y0), (x1, y1) = nodes[src][:2], nodes[dst][:2]
        dx, dy = x1 - x0, y1 - y0
        norm = max((dx * dx + dy * dy) ** 0.5, 1e-9)
        side = 1.0 if opts.get("side", "left") == "left" else -1.0
        off = 0.16 + 0.5 * abs(bend)
        mx, my = (x0 + x1) / 2 - side * off * dy / norm, (y0 + y1) / 2 + side * off * dx / norm
        ax.text(mx, my, label, ha="center", va="center", fontsize=13, color=color)
    if title:
        ax.set_title(title, fontsize=12)
    fig.tight_layout()
    return fig


def commutative_square(
    corners: Sequence[str],
    edges: Sequence[str],
    title: str | None = None,
    dashed: Sequence[str] = (),
):
    """A commutative square.

    Args:
        corners: labels of the four corners: top left, top right, bottom left,
            bottom right.
        edges: labels of the four arrows: top (left → right), bottom (left → right),
            left (top → bottom), right (top → bottom).
        title: optional title, e.g. the equation the square states.
        dashed: names among ``"top"``, ``"bottom"``, ``"left"``, ``"right"`` to draw
            dashed (maps whose existence is the statement).

    Chapters: *Models, latent spaces and submodels*, *Building equivariant layers*,
    *The main theorem*.
    """
    if len(corners) != 4 or len(edges) != 4:
        raise ValueError(
            f"commutative_square: corners and edges must have 4 labels each, got "
            f"{len(corners)} and {len(edges)}"
        )
    names = ("top", "bottom", "left", "right")
    unknown = set(dashed) - set(names)
    if unknown:
        raise ValueError(f"commutative_square: dashed has {sorted(unknown)}; expected some of {names}")
    tl, tr, bl, br = corners
    nodes = {"tl": (0, 1, tl), "tr": (2, 1, tr), "bl": (0, 0, bl), "br": (2, 0, br)}
    ends = {"top": ("tl", "tr", "left"), "bottom": ("bl", "br", "right"),
            "left": ("tl", "bl", "right"), "right": ("tr", "br", "left")}
    arrows = [
        (ends[n][0], ends[n][1], label, {"side": ends[n][2], "dashed": n in dashed})
        for n, label in zip(names, edges)
    ]
    return diagram(nodes, arrows, title=title, size=(4.4, 2.9))
