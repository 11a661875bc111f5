"""Figures of first-layer filters (with their mirror partners) and of attention heads.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..analysis.filters import CATEGORIES, PAIRED
from ..images import mirror_images
from ..validation import check_tensor

__all__ = ["CATEGORY_COLORS", "filter_image", "plot_filters", "plot_filter_partners", "plot_attention_heads"]

#: The colour of each category of ``eqlib.analysis.CATEGORIES``.
CATEGORY_COLORS = ("tab:green", "tab:olive", "tab:blue", "tab:red", "lightgray")


def filter_image(w: torch.Tensor) -> np.ndarray:
    """A filter (3072,) or (3, 32, 32) as an RGB image (32, 32, 3) in [0, 1]; 0.5 is zero weight.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_tensor("w", w, dtype="real", finite=True)  # data (not meta), not complex
    if w.numel() != 3 * 32 * 32:
        raise ValueError(f"w must be a filter (3072,) or (3, 32, 32), got shape {tuple(w.shape)}")
    w = w.detach().float().cpu().reshape(3, 32, 32)
    scale = float(w.abs().max()) or 1.0
    return (w / (2 * scale) + 0.5).permute(1, 2, 0).clamp(0, 1).numpy()


def plot_filters(W1: torch.Tensor, pairing, *, n: int = 64, cols: int = 16, title: str | None = None):
    """The first ``n`` filters of W_1 (d_1, 3072) as images, framed by their mirror category
    (a :class:`~eqlib.analysis.FilterPairing`), with the counts in the legend.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    cats = CATEGORIES
    n = min(n, W1.shape[0])
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 0.7, rows * 0.75 + 0.9))
    axes = np.atleast_2d(axes)
    for k, ax in enumerate(axes.flat):
        ax.set_xticks([]), ax.set_yticks([])
        if k >= n:
            ax.axis("off")
            continue
        ax.imshow(filter_image(W1[k]), interpolation="nearest")
        c = CATEGORY_COLORS[int(pairing.category[k])]
        for spine in ax.spines.values():
            spine.set_edgecolor(c)
            spine.set_linewidth(3)
        if pairing.category[k] in PAIRED:
            ax.set_title(f"{k}→{int(pairing.perm[k])}", fontsize=6, pad=1)
        else:
            ax.set_title(str(k), fontsize=6, pad=1)
    counts = pairing.counts(n)
    fig.legend(handles=[Patch(color=CATEGORY_COLORS[i], label=f"{name}: {counts[name]}") for i, name in enumerate(cats)],
               loc="lower center", ncol=len(cats), fontsize=8, frameon=False)
    fig.suptitle(title or f"first {n} first-layer filters", fontsize=10)
    fig.subplots_adjust(bottom=0.12, top=0.88, wspace=0.1, hspace=0.45)
    return fig


def plot_filter_partners(W1: torch.Tensor, pairing, index: int, axis: str = "horizontal"):
    """Filter ``index``, its mirror image, and its matched partner ±w_{perm[index]}.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib.pyplot as plt


    if not 0 <= index < W1.shape[0]:
        raise ValueError(f"index must be in 0..{W1.shape[0] - 1}, got {index}")
    cats = CATEGORIES
    w = W1[index].detach().reshape(1, -1)
    j, s = int(pairing.perm[index]), float(pairing.signs[index])
    panels = [(w[0], f"filter {index}"), (mirror_images(w, axis)[0], "its mirror image"),
              (s * W1[j].detach(), f"{'−' if s < 0 else '+'}filter {j}")]
    fig, axes = plt.subplots(1, 3, figsize=(6, 2.4))
    for ax, (img, t) in zip(axes, panels):
        ax.imshow(filter_image(img), interpolation="nearest")
        ax.set_title(t, fontsize=9)
        ax.set_xticks([]), ax.set_yticks([])
    fig.suptitle(f"{cats[int(pairing.category[index])]} (|cos| = {pairing.similarity[index]:.2f})", fontsize=10)
    fig.tight_layout()
    return fig


def plot_attention_heads(model, x: torch.Tensor, head_perm: Sequence[int], query: int | None = None):
    """Each head's attention (one query token, as a map over the patch grid) for an image and
    its mirror; the mirror's heads are shown in the order τ(h), so matched heads sit in one column.

    Args:
        model: a :class:`~eqlib.experiments.cifar_mlp.PatchAttentionAutoencoder`.
        x: one normalised image (1, 3, 32, 32).
        head_perm: τ with head τ(h) on the mirror doing what head h does on the image.
        query: the query token (default a token left of centre, so the mirror moves it).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib.pyplot as plt


    layer = model.attention.layers[0]
    g = 32 // model.patch
    H = layer.heads
    q = query if query is not None else (g // 2) * g + g // 4
    qm = (q // g) * g + (g - 1 - q % g)  # the mirrored query position
    with torch.no_grad():
        maps = layer.attention_maps(model.tokens(x))[0]  # (H, n, n)
        maps_m = layer.attention_maps(model.tokens(mirror_images(x)))[0]
    img = x[0].permute(1, 2, 0)
    img = ((img - img.min()) / (img.max() - img.min() + 1e-12)).numpy()
    fig, axes = plt.subplots(2, H + 1, figsize=(1.7 * (H + 1), 3.6))
    for r, (im, mp, qq, label) in enumerate([(img, maps, q, "image"), (img[:, ::-1], maps_m, qm, "mirror")]):
        axes[r, 0].imshow(im)
        axes[r, 0].add_patch(plt.Rectangle(((qq % g) * model.patch - 0.5, (qq // g) * model.patch - 0.5),
                                           model.patch, model.patch, fill=False, color="yellow", lw=2))
        axes[r, 0].set_title(f"{label}, query", fontsize=8)
        for h in range(H):
            hh = h if r == 0 else int(head_perm[h])
            axes[r, h + 1].imshow(mp[hh, qq].reshape(g, g).numpy(), cmap="magma")
            axes[r, h + 1].set_title(f"head {hh}", fontsize=8, color="tab:red" if hh != h else "black")
    for ax in axes.flat:
        ax.set_xticks([]), ax.set_yticks([])
    fig.suptitle("Attention of the query token (yellow square) in each head; bottom row: the mirrored "
                 "image,\nits heads reordered by the matched head permutation τ (red: a head that moved)",
                 fontsize=9)
    fig.tight_layout()
    return fig
