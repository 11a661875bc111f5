"""Figures of recovered latent actions and of linear-equivariance errors.

Chapters: *The main theorem* (book/part2/06_main_theorem), *MLPs: tanh, ReLU, GELU*
(book/part2/07_mlps).
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["plot_action_matrices", "plot_layer_errors", "plot_fit_errors",
           "plot_latent_arrows"]


def plot_action_matrices(result, elements: Sequence | None = None, *, layer: int = 1, max_units: int = 40,
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


def plot_latent_arrows(h, h_moved, k, *, title: str | None = None,
                       labels: tuple[str, str] = ("$f_1(x)$", "$f_1(g\\cdot x)$"),
                       action: str = "$k_1(g)$"):
    """Hidden activations of x and of g·x side by side, with k(g) drawn as arrows.

    Unit j of the left column shows ``h[j]``, unit i of the right column ``h_moved[i]``
    (colour and number). For every nonzero entry ``k[i, j]`` an arrow runs from left unit
    j to right unit i, labelled with the entry, so a layer equivariant under k
    (``h_moved = k h``) shows each right value as the labelled sum of its arrows.

    Args:
        h, h_moved: (n,) activations of one input x and of g·x.
        k: (n, n) matrix of the latent action (monomial for a signed permutation).
        title: optional title; labels: the two column titles; action: the arrows' name.

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: if the shapes do not fit.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    h = np.asarray(getattr(h, "detach", lambda: h)(), dtype=float).reshape(-1)
    h_moved = np.asarray(getattr(h_moved, "detach", lambda: h_moved)(), dtype=float).reshape(-1)
    k = np.asarray(getattr(k, "detach", lambda: k)(), dtype=float)
    n = len(h)
    if h_moved.shape != (n,) or k.shape != (n, n):
        raise ValueError(f"plot_latent_arrows: h has {n} units, so h_moved must have shape "
                         f"({n},) and k ({n}, {n}); got {h_moved.shape} and {k.shape}")
    fig, ax = plt.subplots(figsize=(4.8, 0.9 + 0.8 * n))
    lim = max(1e-9, float(np.abs(np.concatenate([h, h_moved])).max()))
    cmap = plt.get_cmap("bwr")
    ys = np.arange(n)[::-1].astype(float)
    for x0, values in ((0.0, h), (3.0, h_moved)):
        for y, v in zip(ys, values):
            ax.add_patch(plt.Circle((x0, y), 0.32, color=cmap(0.5 + 0.5 * v / lim), ec="k"))
            ax.text(x0, y, f"{v:+.2f}", ha="center", va="center", fontsize=9,
                    color="white" if abs(v) > 0.6 * lim else "black")
    for i, j in zip(*np.nonzero(np.abs(k) > 1e-9)):
        ax.annotate("", xy=(2.62, ys[i]), xytext=(0.38, ys[j]),
                    arrowprops={"arrowstyle": "->", "color": "0.3", "lw": 1.2})
        tx, ty = 0.38 + 0.3 * 2.24, ys[j] + 0.3 * (ys[i] - ys[j])   # near the tail
        ax.text(tx, ty, f"{k[i, j]:+.3g}", ha="center", va="center", fontsize=9,
                color="tab:green", bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none"})
    for x0, label in ((0.0, labels[0]), (3.0, labels[1])):
        ax.text(x0, n - 0.35, label, ha="center", fontsize=11)
    ax.text(1.5, -0.85, f"arrows: {action}", ha="center", fontsize=10)
    ax.set_xlim(-0.8, 3.8)
    ax.set_ylim(-1.1, n + 0.1)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=11)
    fig.tight_layout()
    return fig
