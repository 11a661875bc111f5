"""Figures for finite groups and their actions on images.

Chapters: *Introduction* (book/part1/01_introduction) and *Groups and actions*
(book/part1/02_groups_and_actions).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from ..actions import Action
from ..groups import FiniteGroup, GroupElement

__all__ = ["cayley_table", "image_grid", "orbit", "action_on_image", "layer_errors"]


def _as_hwc(img: torch.Tensor) -> np.ndarray:
    """(C, H, W) uint8 or float in [0, 1] → (H, W, C) or (H, W) for imshow."""
    if img.ndim != 3:
        raise ValueError(f"an image must be (C, H, W), got shape {tuple(img.shape)}")
    x = img.detach().cpu()
    x = x.float() / 255.0 if x.dtype == torch.uint8 else x.float().clamp(0, 1)
    x = x.permute(1, 2, 0).numpy()
    return x[..., 0] if x.shape[-1] == 1 else x


def cayley_table(group: FiniteGroup, ax: plt.Axes | None = None, cmap: str = "tab20") -> Figure:
    """The Cayley table of ``group``: cell (a, b) shows the name of a @ b, coloured by it.

    Chapter: *Groups and actions*.
    """
    n = group.order
    if ax is None:
        fig, ax = plt.subplots(figsize=(0.5 * n + 1.5, 0.5 * n + 1.2))
    else:
        fig = ax.figure
    ax.imshow(group.table, cmap=cmap, vmin=0, vmax=max(n - 1, 1))
    for a in range(n):
        for b in range(n):
            ax.text(b, a, group.names[group.table[a, b]], ha="center", va="center", fontsize=8)
    ax.set_xticks(range(n), group.names, fontsize=8)
    ax.set_yticks(range(n), group.names, fontsize=8)
    ax.set_xlabel("b")
    ax.set_ylabel("a")
    ax.set_title(f"Cayley table of {group.name}: a @ b")
    fig.tight_layout()
    return fig


def image_grid(images: torch.Tensor, titles: Sequence[str] | None = None, *, ncols: int | None = None,
               scale: float = 1.4, suptitle: str | None = None) -> Figure:
    """Show images (N, C, H, W) (uint8, or float in [0, 1]) in a grid with optional titles.

    Chapter: *Groups and actions*.
    """
    if images.ndim != 4:
        raise ValueError(f"images must be (N, C, H, W), got shape {tuple(images.shape)}")
    n = images.shape[0]
    ncols = ncols or n
    nrows = -(-n // ncols)
    # Room for each row's titles and the suptitle; constrained layout keeps them apart.
    row_height = scale + (0.3 if titles is not None else 0.0)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(scale * ncols, row_height * nrows + (0.4 if suptitle else 0)))
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i < n:
            ax.imshow(_as_hwc(images[i]), cmap="gray" if images.shape[1] == 1 else None, interpolation="nearest")
            if titles is not None:
                ax.set_title(titles[i], fontsize=9)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def orbit(rho: Action, image: torch.Tensor, title: str | None = None) -> Figure:
    """The orbit {ρ(g)·image : g ∈ G} of one image (C, H, W), one panel per element.

    Chapter: *Groups and actions*.
    """
    x = image.unsqueeze(0)
    acted = torch.cat([rho.act(g, x) for g in rho.group])
    return image_grid(acted, [g.name for g in rho.group], ncols=min(rho.group.order, 4),
                      suptitle=title or f"orbit of an image under {rho.group.name}")


def action_on_image(rho: Action, g: GroupElement, image: torch.Tensor, label: str = "") -> Figure:
    """Two panels: an image (C, H, W) and ρ(g) applied to it.

    Chapter: *Groups and actions* (the widget's figure).
    """
    y = rho.act(g, image.unsqueeze(0))[0]
    return image_grid(torch.stack([image, y]), [f"x {label}".strip(), f"ρ({g.name}) x"], scale=2.2)


def layer_errors(errors: Mapping[str, Sequence[float]], ax: plt.Axes | None = None,
                 *, title: str = "per-layer equivariance error", log: bool = False, floor: float = 1e-10,
                 labels: Sequence[str] | None = None) -> Figure:
    """Bar chart of relative equivariance errors per layer, one group of bars per network.

    Args:
        errors: ``{network name: [error of f_1, error of f_2, ...]}``.
        labels: x tick labels (default ``"layer 1"``, ``"layer 2"``, ...).
        log: logarithmic y axis (errors below ``floor`` are drawn at ``floor``).

    Chapter: *Introduction* (book/part1/01_introduction).
    """
    names = list(errors)
    if not names:
        raise ValueError("need at least one network's errors")
    depth = max(len(v) for v in errors.values())
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.2 * depth * len(names) + 2, 3))
    else:
        fig = ax.figure
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        vals = [max(float(v), floor) if log else float(v) for v in errors[name]]
        ax.bar(np.arange(len(vals)) + k * width, vals, width, label=name)
    ax.set_xticks(np.arange(depth) + 0.4 - width / 2, labels or [f"layer {i + 1}" for i in range(depth)])
    ax.set_ylabel("relative error")
    if log:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
