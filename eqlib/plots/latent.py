"""Figures of recovered latent actions and of linear-equivariance errors.

Chapters: *The main theorem* (book/part2/06_main_theorem), *MLPs: tanh, ReLU, GELU*
(book/part2/07_mlps).
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["plot_action_matrices", "plot_layer_errors", "plot_fit_errors"]


def plot_action_matrices(result, elements: Sequence | None = None, layer: int = 1, max_units: int = 40,
                         title: str | None = None):
    """Show k_layer(g) for several g as images (red +1, blue −1, white 0).

    Args:
        result: a :class:`~eqlib.latent.LatentActions` (or any object with ``matrix(layer, g)``
            and ``group``).
        elements: the group elements (default all, at most 8).
        layer: the hidden layer (1..L-1).
        max_units: show the top-left max_units × max_units block of big matrices.

    Returns:
        The matplotlib Figure.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    elements = list(elements) if elements is not None else result.group.elements[:8]
    fig, axes = plt.subplots(1, len(elements), figsize=(2.4 * len(elements), 2.6), squeeze=False)
    for ax, g in zip(axes[0], elements):
        m = result.matrix(layer, g)[:max_units, :max_units].detach().cpu().numpy()
        lim = max(1.0, float(np.abs(m).max()))
        ax.imshow(m, cmap="bwr", vmin=-lim, vmax=lim, interpolation="nearest")
        ax.set_title(f"$k_{{{layer}}}({g.name})$")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title or f"recovered latent action on $V_{{{layer}}}$ (first {max_units} units)")
    fig.tight_layout()
    return fig


def plot_layer_errors(results: dict, title: str = "layer equivariance error under the recovered actions"):
    """Bar chart of max_g layer error per layer for several results ``{label: LatentActions}``.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    fig, ax = plt.subplots(figsize=(6, 3))
    width = 0.8 / max(1, len(results))
    for n, (label, res) in enumerate(results.items()):
        errs = res.layer_errors.max(axis=1)
        ax.bar(np.arange(1, len(errs) + 1) + n * width, np.maximum(errs, 1e-12), width, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("layer i")
    ax.set_ylabel("relative error")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def plot_fit_errors(fits: dict, title: str = "held-out relative error of the linear fit"):
    """Histograms of per-sample lstsq errors ``{label: LinearFit}`` (log x axis).

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    fig, ax = plt.subplots(figsize=(6, 3))
    for label, fit in fits.items():
        e = fit.errors.detach().cpu().numpy().clip(1e-9, None)
        ax.hist(np.log10(e), bins=40, alpha=0.6, label=f"{label} (median {fit.median_error:.2g})")
    ax.set_xlabel("log10 relative error")
    ax.set_ylabel("samples")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig
