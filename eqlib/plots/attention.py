"""Figures for the attention chapter and for *Where the theorem does not apply*.

Chapter: *Attention* (book/part2/08_attention).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["plot_attention_maps", "plot_adjunction_residuals", "plot_conv_filters"]


def plot_attention_maps(maps_x: torch.Tensor, maps_gx: torch.Tensor, head_perm: Sequence[int],
                        token_perm: Sequence[int], *, heads: Sequence[int] | None = None, g_name: str = "g"):
    """Attention maps of x and g·x, one row per head h of x.

    Columns: the map of head h on x; the same map with its tokens moved by g
    (Π A Πᵀ); the map of head τ(h) on g·x. When the layer is equivariant with head
    permutation τ, the last two columns agree.

    Args:
        maps_x, maps_gx: (H, n, n) attention maps of one input and its transform.
        head_perm: τ (H,): head h on x ↔ head τ(h) on g·x.
        token_perm: π (n,): token i moves to π(i).
        heads: which heads to show (default all).
        g_name: name of g for the titles.

    Returns:
        A matplotlib Figure.

    Chapter: *Attention* (book/part2/08_attention).
    """
    import matplotlib.pyplot as plt

    maps_x, maps_gx = torch.as_tensor(maps_x).detach(), torch.as_tensor(maps_gx).detach()
    if maps_x.dim() != 3 or maps_x.shape != maps_gx.shape:
        raise ValueError(f"need two (H, n, n) map tensors, got {tuple(maps_x.shape)} and {tuple(maps_gx.shape)}")
    H, n = maps_x.shape[0], maps_x.shape[-1]
    tau, pi = np.asarray(head_perm), np.asarray(token_perm)
    if tau.shape != (H,) or pi.shape != (n,):
        raise ValueError(f"head_perm must have {H} entries and token_perm {n}")
    heads = list(range(H)) if heads is None else list(heads)
    inv = torch.as_tensor(np.argsort(pi))
    vmax = float(maps_x.max().clamp_min(maps_gx.max()))
    fig, axes = plt.subplots(len(heads), 3, figsize=(7.2, 2.3 * len(heads)), squeeze=False)
    for row, h in enumerate(heads):
        panels = [(maps_x[h], f"head {h} on x"),
                  (maps_x[h][inv][:, inv], f"head {h} on x, tokens moved by {g_name}"),
                  (maps_gx[int(tau[h])], f"head {int(tau[h])} on {g_name}·x")]
        for col, (m, title) in enumerate(panels):
            ax = axes[row, col]
            ax.imshow(m.numpy(), cmap="viridis", vmin=0, vmax=vmax)
            ax.set_title(title, fontsize=8)
            ax.set_xticks([]), ax.set_yticks([])
        axes[row, 0].set_ylabel("query token", fontsize=8)
    fig.tight_layout()
    return fig


def plot_adjunction_residuals(names: Sequence[str], ordinary: Sequence[float], generalized: Sequence[float],
                              moved: Sequence[float]):
    """Bars: for each layer type, the best-fit residual of the ordinary adjunction
    f(g·x; θ) = f(x; θ'), of the generalized one g⁻¹·f(g·x; θ) = f(x; θ'), and how far
    the fitted θ' lies from θ (log scale).

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    import matplotlib.pyplot as plt

    if not (len(names) == len(ordinary) == len(generalized) == len(moved)):
        raise ValueError("names, ordinary, generalized and moved must have equal lengths")
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    floor = 1e-8
    for k, (vals, label) in enumerate([(ordinary, "residual, ordinary adjunction"),
                                        (generalized, "residual, generalized adjunction"),
                                        (moved, "‖θ' − θ‖/‖θ‖ (generalized)")]):
        ax.bar(x + (k - 1) * 0.27, np.maximum(np.asarray(vals, dtype=float), floor), 0.27, label=label)
    ax.set_yscale("log")
    ax.set_xticks(x, names)
    ax.set_ylabel("relative size")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
    fig.tight_layout()
    return fig


def plot_conv_filters(turned: torch.Tensor, weight: torch.Tensor, k: torch.Tensor, g_name: str = "g"):
    """First-layer filters of a conv net and their latent action.

    Top row: the filters turned back by g, rot_g⁻¹ W[c]; bottom row: the filter that
    k(g) assigns to each, sign_c · W[perm[c]] with (k z)_c = sign_c z_{perm[c]}. For a
    layer related by k(g) (``rot_g⁻¹ W = k(g) W``) the rows agree. Filters with several
    input channels show channel 0.

    Args:
        turned: (C, C_in, k, k) filters rot_g⁻¹ W (e.g. from
            :func:`eqlib.latent.conv.transport_conv`).
        weight: (C, C_in, k, k) filters W.
        k: (C, C) signed permutation matrix.
        g_name: name of g for the titles.

    Returns:
        A matplotlib Figure.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    import matplotlib.pyplot as plt

    turned, weight, k = (torch.as_tensor(t).detach() for t in (turned, weight, k))
    C = weight.shape[0]
    if turned.shape != weight.shape or weight.dim() != 4 or k.shape != (C, C):
        raise ValueError(f"need filters of equal shape (C, C_in, k, k) and a (C, C) matrix, got "
                         f"{tuple(turned.shape)}, {tuple(weight.shape)} and {tuple(k.shape)}")
    perm = k.abs().argmax(1)
    signs = k[torch.arange(C), perm]
    matched = signs[:, None, None, None] * weight[perm]
    vmax = float(weight.abs().max())
    fig, axes = plt.subplots(2, C, figsize=(1.1 * C, 2.6), squeeze=False)
    for c in range(C):
        for row, (f, title) in enumerate([(turned[c, 0], f"rot⁻¹ W[{c}]"),
                                          (matched[c, 0], f"{'+' if signs[c] > 0 else '−'}W[{int(perm[c])}]")]):
            ax = axes[row, c]
            ax.imshow(f.numpy(), cmap="RdBu_r", vmin=-vmax, vmax=vmax)
            ax.set_title(title, fontsize=7)
            ax.set_xticks([]), ax.set_yticks([])
    axes[0, 0].set_ylabel(f"turned by {g_name}⁻¹", fontsize=7)
    axes[1, 0].set_ylabel(f"k({g_name}) W", fontsize=7)
    fig.tight_layout()
    return fig
