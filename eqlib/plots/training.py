"""Figures of training runs and of the CIFAR-10 experiment's numbers.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["plot_history", "plot_error_table", "plot_ablation", "plot_emergence", "plot_linear_map"]


def plot_history(histories: dict[str, dict], keys: Sequence[str] = ("task_loss", "penalty", "test_accuracy")):
    """Per-epoch curves of several training histories (one panel per key).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3))
    for ax, key in zip(np.atleast_1d(axes), keys):
        for name, h in histories.items():
            vals = np.asarray(h.get(key, []), dtype=float)
            if len(vals) and np.isfinite(vals).any():
                ax.plot(h["epoch"][:len(vals)], vals, marker=".", label=name)
        ax.set_xlabel("epoch")
        ax.set_title(key.replace("_", " "))
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_error_table(rows: Sequence[dict], probe: str = "noise"):
    """Grouped bars of the median linear-equivariance errors (ours vs the paper's where known).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib.pyplot as plt

    sel = [r for r in rows if r["probe"] == probe]
    nets = list(dict.fromkeys(r["network"] for r in sel))
    conds = list(dict.fromkeys((r["layers"], r["mirror"]) for r in sel))
    fig, axes = plt.subplots(1, len(nets), figsize=(3.2 * len(nets), 3.2), sharey=True)
    for ax, net in zip(np.atleast_1d(axes), nets):
        ours = [next(r["median_error"] for r in sel if r["network"] == net and (r["layers"], r["mirror"]) == c)
                for c in conds]
        paper = [next(r["paper"] for r in sel if r["network"] == net and (r["layers"], r["mirror"]) == c)
                 for c in conds]
        xs = np.arange(len(conds))
        ax.bar(xs - 0.2, ours, 0.4, label="ours")
        ax.bar(xs + 0.2, [p if p is not None else 0 for p in paper], 0.4, label="paper", color="tab:gray")
        ax.set_xticks(xs, [f"{_layers(i)}\n{m}" for i, m in conds], fontsize=7)
        ax.set_xlabel("layers composed, mirror", fontsize=8)
        ax.set_title(net, fontsize=9)
    np.atleast_1d(axes)[0].set_ylabel(f"median relative error\n({probe} probes)")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.suptitle("Linear equivariance of the first layers: error of the best linear map A with "
                 "A f(y) ≈ f(mirror y)\n(f: the first layers composed; bars: ours, grey: the paper's "
                 "where reported)", fontsize=9)
    fig.tight_layout()
    return fig


def _layers(i: int) -> str:
    """``"layer 1"``, ``"layers 1–2"``: the layers f_1, …, f_i composed, in words."""
    return "layer 1" if int(i) == 1 else f"layers 1–{int(i)}"


#: the ablation's numbers in words (figure panels)
_ABLATION_LABELS = {
    "f1_horizontal_noise": "layer-1 error, horizontal mirror\n(trained), noise probes",
    "f1_vertical_noise": "layer-1 error, vertical mirror\n(control), noise probes",
    "f1_horizontal_images": "layer-1 error, horizontal mirror\n(trained), image probes",
    "f1_horizontal_image_cov": "layer-1 error, horizontal mirror\n(trained), image-covariance probes",
    "end_to_end": "end-to-end error,\nhorizontal mirror",
}


def plot_ablation(rows: Sequence[dict], keys: Sequence[str] = ("f1_horizontal_noise", "f1_vertical_noise",
                                                                "f1_horizontal_images", "end_to_end")):
    """Horizontal bars of the ablation's numbers, one panel per key.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib.pyplot as plt

    labels = [r["variant"] for r in rows]
    fig, axes = plt.subplots(1, len(keys), figsize=(3.1 * len(keys), 0.35 * len(rows) + 1.2), sharey=True)
    for ax, key in zip(np.atleast_1d(axes), keys):
        ax.barh(np.arange(len(rows)), [r[key] for r in rows], color="tab:blue")
        ax.set_title(_ABLATION_LABELS.get(key, key.replace("_", " ")), fontsize=8)
        ax.set_xlabel("median relative error", fontsize=8)
        ax.invert_yaxis()
    np.atleast_1d(axes)[0].set_yticks(np.arange(len(rows)), labels, fontsize=8)
    np.atleast_1d(axes)[0].set_ylabel("training variant", fontsize=8)
    nets = sorted({str(r["network"]) for r in rows if "network" in r})
    fig.suptitle("Ablation: what makes the first layer's mirror action emerge"
                 + (f" ({', '.join(nets)})" if nets else ""), fontsize=9)
    fig.tight_layout()
    return fig


def plot_emergence(points: Sequence[dict], upto: int | None = None):
    """Linear-equivariance error of f_1, matched filters and end-to-end error over training;
    ``upto`` marks a checkpoint (for the step-through widget) and shows its first filters.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib.pyplot as plt

    from .filters import filter_image

    k = len(points) - 1 if upto is None else int(upto)
    ep = [p["epoch"] for p in points]
    fig = plt.figure(figsize=(10, 3.2))
    ax = fig.add_subplot(1, 2, 1)
    ax.plot(ep, [p["f1_error"] for p in points], marker="o", label="layer-1 linear-equivariance error")
    ax.plot(ep, [p["end_to_end"] for p in points], marker="s", label="end-to-end error")
    ax.plot(ep, [p["matched_filters"] for p in points], marker="^", label="matched filters (share)")
    ax.axvline(ep[k], color="gray", ls="--")
    ax.set_xlabel("epoch")
    ax.set_ylabel("relative error / share of filters")
    ax.set_title("Emergence of the mirror action over training", fontsize=9)
    ax.legend(fontsize=7)
    if "weight" in points[k]:
        W = points[k]["weight"]
        for i in range(min(16, W.shape[0])):
            a = fig.add_subplot(4, 16, 16 * (i // 8) + 9 + i % 8)
            a.imshow(filter_image(W[i]), interpolation="nearest")
            a.set_xticks([]), a.set_yticks([])
        fig.text(0.75, 0.95, f"first filters at epoch {ep[k]}", ha="center", fontsize=9)
    return fig


def plot_linear_map(A, title: str = "", max_units: int = 64):
    """The fitted map A_i (its top-left ``max_units`` block) next to ``|A_i|`` sorted by row maximum,
    which shows how close A_i is to a signed permutation (one ±1 per row).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib.pyplot as plt

    A = A.detach().float().cpu()
    k = min(max_units, A.shape[0])
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
    lim = float(A[:k, :k].abs().max()) or 1.0
    im = axes[0].imshow(A[:k, :k].numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim)
    axes[0].set_title(f"A (first {k} units)", fontsize=9)
    fig.colorbar(im, ax=axes[0], fraction=0.046)
    top = A.abs().max(dim=1).values
    second = A.abs().topk(2, dim=1).values[:, 1]
    order = top.argsort(descending=True)
    axes[1].plot(top[order].numpy(), label="largest |A_jk| in row j")
    axes[1].plot(second[order].numpy(), label="second largest")
    axes[1].axhline(1.0, color="gray", ls=":")
    axes[1].set_xlabel("row (sorted)")
    axes[1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig

