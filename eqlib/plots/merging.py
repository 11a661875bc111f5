"""Figures of the GCNN-barrier experiment: barriers, interpolation curves, matched filter pairs.

Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..validation import check_tensor

__all__ = ["barrier_table_figure", "interpolation_figure", "filter_pairs_figure", "filter_image"]


#: the barrier columns in words (figure labels)
_BARRIER_LABELS = {"barrier": "barrier, interpolated BN statistics",
                  "barrier_reset": "barrier after BN reset",
                  "barrier_repair": "barrier after REPAIR"}


def barrier_table_figure(results: Mapping[str, Any], key: str = "barrier_reset"):
    """Barriers (percentage points) per cell "variant@width": self-flip vs two-network, every value shown.

    Bars are means; dots are the individual networks (self-flip) and pairs (two-network).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    import matplotlib.pyplot as plt

    cells = list(results["cells"].items())
    fig, ax = plt.subplots(figsize=(1.4 * len(cells) + 2.5, 3.4))
    xs = np.arange(len(cells))
    for off, kind, color, label in ((-0.18, "self_flip", "C0", "self-flip (θ vs its flipped copy)"),
                                    (0.18, "two_network", "C3", "two networks")):
        means, pts = [], []
        for x, (_, cell) in zip(xs, cells):
            vals = [r[key] for r in cell[kind]]
            means.append(np.mean(vals) if vals else np.nan)
            ax.scatter(np.full(len(vals), x + off), vals, color="k", s=10, zorder=3)
        ax.bar(xs + off, means, width=0.34, color=color, alpha=0.75, label=label)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xticks(xs, [k for k, _ in cells], rotation=20)
    ax.set_xlabel("cell: variant @ width multiplier")
    ax.set_ylabel(f"{_BARRIER_LABELS.get(key, key.replace('_', ' '))}\n(percentage points)")
    ax.legend(fontsize=8)
    ax.set_title("Accuracy barrier at the midpoint (dots: individual networks / pairs)")
    fig.tight_layout()
    return fig


def interpolation_figure(self_flip: Mapping[str, Any], pair: Mapping[str, Any] | None = None, title: str = "",
                         alpha: float | None = None):
    """Test accuracy along (1 − α) θ_A + α θ_B after BN reset, for a self-flip merge and a two-network merge.

    ``alpha`` marks a point on the path (for the slider widget).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    ax.plot(self_flip["alphas"], self_flip["curve_reset"], "o-", color="C0", label="self-flip merge")
    if pair is not None and "curve_reset" in pair:
        ax.plot(pair["alphas"], pair["curve_reset"], "s-", color="C3", label="two-network merge")
    if alpha is not None:
        ax.axvline(alpha, color="gray", ls="--", lw=1)
        y = np.interp(alpha, self_flip["alphas"], self_flip["curve_reset"])
        ax.annotate(f"{y:.1f} %", (alpha, y), textcoords="offset points", xytext=(5, 5), color="C0")
    ax.set_xlabel("t: weight of the partner θ_B in (1 − t) θ_A + t θ_B")
    ax.set_ylabel("test accuracy (%) after BN reset")
    ax.set_title(title or "Interpolation paths")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def filter_image(w: torch.Tensor) -> np.ndarray:
    """A (3, k, k) RGB filter as a (k, k, 3) image in [0, 1] (min–max scaled)."""
    check_tensor("w", w, ndim=3, dtype="real", finite=True, nonempty=True)  # data (not meta), not complex
    if w.shape[0] != 3:
        raise ValueError(f"w must be an RGB filter (3, k, k), got shape {tuple(w.shape)}")
    w = w.detach().float().cpu()
    w = (w - w.min()) / (w.max() - w.min()).clamp_min(1e-12)
    return w.permute(1, 2, 0).numpy()


def filter_pairs_figure(weight: torch.Tensor, perm: Sequence[int], correlations: Sequence[float] | None = None,
                        *, channels: Sequence[int] | None = None, max_pairs: int = 8):
    """Filters next to their matched partners in the flipped network.

    Args:
        weight: conv weight (C_out, C_in, k, k) of the network θ.
        perm: the matched permutation π (channel c of θ is matched to channel π[c] of flip θ).
        correlations: per-channel correlation of the match (shown in titles).
        channels: which channels to show (default the first ``max_pairs``).

    Top row: filter c; bottom row: the flipped filter of its partner π(c), i.e.
    ``weight[π[c]].flip(-1)``; for an exact GCNN the two rows agree. First-layer
    filters are drawn as RGB images; deeper ones show the input-channel-averaged kernel.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    import matplotlib.pyplot as plt

    perm = list(perm)
    channels = list(channels) if channels is not None else list(range(min(max_pairs, weight.shape[0])))
    fig, axes = plt.subplots(2, len(channels), figsize=(1.2 * len(channels) + 0.8, 2.9), squeeze=False)
    rgb = weight.shape[1] == 3
    for j, c in enumerate(channels):
        top, bottom = weight[c], weight[perm[c]].flip(-1)
        for row, w in ((0, top), (1, bottom)):
            ax = axes[row, j]
            if rgb:
                ax.imshow(filter_image(w))
            else:
                ax.imshow(w.detach().float().mean(0).cpu().numpy(), cmap="RdBu_r")
            ax.set_xticks([]), ax.set_yticks([])
        t = f"c={c}" + (f"\nρ={correlations[c]:.2f}" if correlations is not None else "")
        axes[0, j].set_title(t, fontsize=8)
        axes[1, j].set_title(f"flip of π(c)={perm[c]}", fontsize=7)
    fig.suptitle("filters (top) and their matched flipped partners (bottom)", fontsize=9)
    fig.tight_layout()
    return fig
