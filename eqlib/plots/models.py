"""Figures for models, submodels and parameter symmetries (chapters 3 and 4).

Every function returns a matplotlib Figure (the caller shows or closes it).

Chapters: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels),
*Parameter symmetries* (book/part1/04_parameter_symmetries).
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch

from ..models.mlp import ACTIVATIONS, MLP

__all__ = ["weight_matrices", "same_function", "intertwining", "linear_pair"]


def weight_matrices(models: Sequence[MLP], titles: Sequence[str] | None = None, with_bias: bool = True):
    """Heat maps of every layer's [W_i | b_i], one row of panels per model.

    Each panel shares one symmetric colour scale per layer across models, so a zero row
    (constant neuron), a zero column (dead neuron) and repeated rows (clones) stand out.

    Chapter: *Models, latent spaces and submodels*.
    """
    models = list(models)
    titles = list(titles) if titles is not None else [f"model {m}" for m in range(len(models))]
    L = max(m.depth for m in models)
    fig, axes = plt.subplots(len(models), L, figsize=(3.2 * L, 2.8 * len(models)), squeeze=False)

    def matrix(layer):
        W = layer.weight.detach().cpu()
        if with_bias and layer.bias is not None:
            W = torch.cat([W, layer.bias.detach().cpu()[:, None]], dim=1)
        return W

    vmaxes = [max(float(matrix(m.layers[i]).abs().max()) for m in models if i < m.depth) for i in range(L)]
    for r, (model, title) in enumerate(zip(models, titles)):
        for i, layer in enumerate(model.layers):
            W = matrix(layer)
            vmax = max(vmaxes[i], 1e-12)
            ax = axes[r, i]
            im = ax.imshow(W.numpy(), cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto", interpolation="nearest")
            ax.set_title(f"{title}: $[W_{i + 1} | b_{i + 1}]$ {tuple(layer.weight.shape)}", fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
            fig.colorbar(im, ax=ax, fraction=0.046, pad=0.02)
        for i in range(model.depth, L):
            axes[r, i].axis("off")
    fig.tight_layout()
    return fig


def same_function(model_a: MLP, model_b: MLP, x: torch.Tensor, labels: tuple[str, str] = ("θ", "k·θ")):
    """Left: first-layer weights of two models; right: their outputs against each other.

    Chapter: *Parameter symmetries*.
    """
    with torch.no_grad():
        ya, yb = model_a(x), model_b(x)
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    for ax, m, lab in zip(axes[:2], (model_a, model_b), labels):
        W = m.layers[0].weight.detach().cpu()
        v = float(W.abs().max())
        ax.imshow(W.numpy(), cmap="RdBu_r", vmin=-v, vmax=v, aspect="auto", interpolation="nearest")
        ax.set_title(f"$W_1$ of {lab}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[2].scatter(ya.flatten().cpu(), yb.flatten().cpu(), s=6, alpha=0.6)
    lo, hi = float(ya.min()), float(ya.max())
    axes[2].plot([lo, hi], [lo, hi], "k--", lw=0.8)
    axes[2].set_xlabel(f"f(x; {labels[0]})")
    axes[2].set_ylabel(f"f(x; {labels[1]})")
    axes[2].set_title("outputs: the same function", fontsize=9)
    fig.tight_layout()
    return fig


def intertwining(activation: str, k, z: torch.Tensor, *, title: str | None = None, ax=None):
    """Scatter of σ(k z) against k σ(z), entry by entry: on the diagonal iff k intertwines σ.

    Args:
        activation: a name from ``eqlib.models.ACTIVATIONS``.
        k: a :class:`~eqlib.symmetries.SymmetryElement`.
        z: (N, d) points.
        ax: draw into this matplotlib Axes (default: a new figure).

    Chapter: *Parameter symmetries*.
    """
    sigma = ACTIVATIONS[activation]
    with torch.no_grad():
        lhs, rhs = sigma(k.act(z)).flatten(), k.act(sigma(z)).flatten()
    err = float((lhs - rhs).abs().max())
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.2, 4))
    else:
        fig = ax.figure
    ax.scatter(rhs, lhs, s=5, alpha=0.5)
    lo, hi = float(torch.minimum(lhs.min(), rhs.min())), float(torch.maximum(lhs.max(), rhs.max()))
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set_xlabel(r"$k\,\sigma(z)$")
    ax.set_ylabel(r"$\sigma(k z)$")
    ax.set_title(title or f"σ = {activation}: max |σ(kz) − kσ(z)| = {err:.2g}", fontsize=9)
    fig.tight_layout()
    return fig


def linear_pair(activations: Sequence[str] = ("relu", "gelu", "tanh"), lim: float = 4.0):
    """σ(x) − σ(−x) against x for each activation, with the line y = x.

    A pair of neurons with incoming weights w, −w and outgoing weights +1, −1 computes
    σ(w·x) − σ(−w·x); for ReLU and GELU that is exactly the linear w·x.

    Chapter: *Parameter symmetries*.
    """
    x = torch.linspace(-lim, lim, 401)
    fig, axes = plt.subplots(1, len(activations), figsize=(3.4 * len(activations), 3.1), squeeze=False)
    for ax, act in zip(axes[0], activations):
        s = ACTIVATIONS[act]
        ax.plot(x, s(x) - s(-x), label=r"$\sigma(x)-\sigma(-x)$")
        ax.plot(x, x, "k--", lw=0.8, label="$x$")
        ax.set_title(act, fontsize=10)
        ax.set_xlabel("x")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
