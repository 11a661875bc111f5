"""Conceptual figures drawn as code: a group element travelling through a network.

Chapter: *Introduction* (book/part1/01_introduction).
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import FancyArrowPatch

__all__ = ["signed_permutation_parts", "layer_propagation"]


def signed_permutation_parts(matrix, name: str = "matrix") -> tuple[list[int], list[int]]:
    """Read a signed permutation matrix: ``(targets, signs)`` with ``M e_j = signs[j] e_{targets[j]}``.

    Raises:
        TypeError: if ``matrix`` is not a tensor or array.
        ValueError: if it is not a square matrix with one entry ±1 in every row and column
            and zeros elsewhere.

    Chapter: *Introduction* (the figure of a group element travelling through a network).
    """
    if not isinstance(matrix, (torch.Tensor, np.ndarray)):
        raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(matrix).__name__}")
    m = torch.as_tensor(np.asarray(matrix) if isinstance(matrix, np.ndarray) else matrix).double()
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise ValueError(f"{name} must be a nonempty square matrix, got shape {tuple(m.shape)}")
    values_ok = bool(((m == 0) | (m.abs() == 1)).all())
    monomial = bool(((m != 0).sum(0) == 1).all() and ((m != 0).sum(1) == 1).all())
    if not (values_ok and monomial):
        raise ValueError(f"{name} must be a signed permutation matrix (one entry ±1 in each row and "
                         f"column, zeros elsewhere), got {m.tolist()}")
    targets = [int(m[:, j].abs().argmax()) for j in range(m.shape[1])]
    signs = [int(m[t, j]) for j, t in enumerate(targets)]
    return targets, signs


def layer_propagation(matrices: Sequence, labels: Sequence[str] | None = None,
                      title: str | None = None, element: str = "g"):
    """Draw a network's layers as columns of neurons and how one group element acts on each.

    Column ``i`` shows the neurons of ``V_i``; thin grey lines are the layers' weights
    (all-to-all). An arrow from neuron ``j`` to neuron ``t`` of column ``i`` says that
    ``ρ_i(g)`` sends ``e_j`` to ``±e_t``: blue for ``+``, red for ``−``. A neuron that ``g``
    fixes but negates gets a red ring. This is the picture of layerwise equivariance for
    signed permutation actions: the element ``g`` applied at the input reappears, as a
    permutation with sign flips, at every hidden layer.

    Args:
        matrices: ``[ρ_0(g), ρ_1(g), …, ρ_L(g)]``, signed permutation matrices.
        labels: one column label per layer (default ``V_0 … V_L``).
        title: optional title.
        element: the name of the element, used in the default labels.

    Returns:
        A matplotlib Figure; ``fig.arrows`` holds ``(layer, source, target, sign)`` for each
        arrow drawn and ``fig.rings`` holds ``(layer, neuron)`` for each red ring.

    Raises:
        ValueError: if ``matrices`` is empty, a matrix is not a signed permutation, or
            ``labels`` has the wrong length.

    Chapter: *Introduction* (book/part1/01_introduction).
    """
    mats = list(matrices)
    if not mats:
        raise ValueError("matrices must hold at least one signed permutation matrix, got none")
    parts = [signed_permutation_parts(m, f"matrices[{i}]") for i, m in enumerate(mats)]
    depth = len(mats) - 1
    if labels is None:
        labels = [f"$V_{{{i}}}$: $\\rho_{{{i}}}({element})$" for i in range(len(mats))]
    labels = list(labels)
    if len(labels) != len(mats):
        raise ValueError(f"labels must give one label per layer ({len(mats)}), got {len(labels)}")
    widths = [len(t) for t, _ in parts]
    height = max(widths)
    fig, ax = plt.subplots(figsize=(1.9 * (depth + 1) + 0.8, 0.42 * height + 1.3))
    ax.set_axis_off()
    ys = [np.linspace(-(w - 1) / 2, (w - 1) / 2, w)[::-1] if w > 1 else np.zeros(1) for w in widths]
    xs = [2.0 * i for i in range(len(mats))]
    for i in range(depth):
        for y0 in ys[i]:
            for y1 in ys[i + 1]:
                ax.plot([xs[i], xs[i + 1]], [y0, y1], color="0.88", lw=0.6, zorder=0)
    arrows, rings = [], []
    for i, (targets, signs) in enumerate(parts):
        ax.scatter([xs[i]] * widths[i], ys[i], s=170, c="white", edgecolors="black", zorder=3)
        for j, (t, s) in enumerate(zip(targets, signs)):
            colour = "tab:blue" if s > 0 else "tab:red"
            if t == j:
                if s < 0:
                    ax.scatter([xs[i]], [ys[i][j]], s=330, facecolors="none", edgecolors=colour,
                               linewidths=2, zorder=4)
                    rings.append((i, j))
                continue
            # one curvature for all: the two arrows of a swap bulge to opposite sides
            ax.add_patch(FancyArrowPatch((xs[i], ys[i][j]), (xs[i], ys[i][t]),
                                         connectionstyle="arc3,rad=0.55",
                                         arrowstyle="-|>", mutation_scale=11, lw=1.4,
                                         color=colour, shrinkA=7, shrinkB=7, zorder=5))
            arrows.append((i, j, t, s))
        ax.text(xs[i], (height - 1) / 2 + 0.7, labels[i], ha="center", va="bottom", fontsize=10)
    ax.set_xlim(-1.2, xs[-1] + 1.2)
    ax.set_ylim(-height / 2 - 0.6, height / 2 + 1.3)
    ax.plot([], [], color="tab:blue", label="$e_j \\mapsto +e_t$")
    ax.plot([], [], color="tab:red", label="$e_j \\mapsto -e_t$ (red ring: $e_j \\mapsto -e_j$)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.arrows, fig.rings = arrows, rings
    return fig
