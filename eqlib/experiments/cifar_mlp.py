"""The CIFAR-10 MLP experiment of [SMBK26] (THEORY.md §6), at two compute budgets.

Four depth-4 MLPs: first nonlinearity Tanh or GELU (later ones GELU), each trained as a
mirror-equivariant autoencoder and as a mirror-invariant classifier, with a soft
equivariance / invariance penalty ramped in during the second half of training. Then:

- the first-layer filters, each classified as mirror-symmetric, mirror-antisymmetric,
  the mirror of another filter, or the negated mirror of another filter
  (:func:`filter_pairing`, through :func:`eqlib.latent.match_units`);
- the table: median relative error of a least-squares linear map A_i with
  A_i f_{≤i}(y) ≈ f_{≤i}(m y), fitted on one half of the probes and scored on the other,
  for i = 1, 2, the horizontal mirror (trained) and the vertical one (control), probed
  with isotropic noise (the paper's protocol), test images, and Gaussian noise with the
  images' covariance (:func:`equivariance_table`);
- an ablation of what makes the first-layer action emerge (:func:`ablation`);
- checkpoints during training (:func:`emergence`);
- a single-layer attention autoencoder on 4×4 patches and its head permutation
  (:func:`attention_experiment`).

Command line (writes PNG figures and ``cifar_mlp_<budget>.json``)::

    python -m eqlib.experiments.cifar_mlp --budget full --device cuda --out results/

Budgets (:data:`BUDGET_SETTINGS`): ``laptop`` (the default) trains small networks on a 4,000-image subset
for a few epochs (minutes on 2 CPU cores); ``full`` trains widths 512/256/256 on all
50,000 images for 15 epochs and probes with 100,000 noise samples (the whole chapter in
under 30 minutes on 2 CPU cores, minutes on a GPU). ``--set KEY=VALUE`` changes any
:class:`Settings` field, e.g. ``--set epochs=60`` or a larger ablation.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..actions import equivariance_residual, trivial
from ..actions import mirror as mirror_action
from ..budget import budget as _budget
from ..budget import budget_choices
from ..data import CIFAR10, load_cifar10, subset
from ..device import default_device
from ..latent import fit_linear_action, linear_equivariance_error, match_units
from ..models import MLP, AttentionNetwork
from ..train import TrainConfig, TrainResult, cached_train, mirror_images, prepare_images
from . import html_table, writable_folder

__all__ = [
    "Settings", "BUDGET_SETTINGS", "settings", "NETWORKS", "PAPER_TABLE", "PARTS", "build_mlp", "train_config",
    "load_data", "train_networks", "FilterPairing", "filter_pairing", "probe_inputs", "equivariance_table",
    "end_to_end_error", "ablation", "ABLATION_VARIANTS", "parse_setting", "table_text", "ablation_text",
    "table_html", "ablation_html",
    "load_results", "input_spectrum", "emergence", "PatchAttentionAutoencoder",
    "attention_experiment", "run", "main",
]

#: The four networks, as name → (first activation, task).
NETWORKS: dict[str, tuple[str, str]] = {
    "tanh-autoencoder": ("tanh", "autoencode"),
    "gelu-autoencoder": ("gelu", "autoencode"),
    "tanh-classifier": ("tanh", "classify"),
    "gelu-classifier": ("gelu", "classify"),
}

#: the paper's numbers (THEORY.md §6, from a summary; approximate anchors):
#: (task, layers, mirror) → {"tanh": ..., "gelu": ...}; layers 1 = f_1, 2 = f_2∘f_1
PAPER_TABLE: dict[tuple[str, int, str], dict[str, float]] = {
    ("autoencode", 1, "horizontal"): {"tanh": 0.029, "gelu": 0.40},
    ("autoencode", 2, "horizontal"): {"tanh": 0.022, "gelu": 0.11},
    ("autoencode", 1, "vertical"): {"tanh": 0.15, "gelu": 0.49},
    ("classify", 1, "horizontal"): {"tanh": 0.077, "gelu": 0.19},
    ("classify", 2, "horizontal"): {"tanh": 0.054, "gelu": 0.064},
    ("classify", 1, "vertical"): {"tanh": 0.48, "gelu": 0.56},
}

PROBES = ("noise", "images", "image_cov")
AXES = ("horizontal", "vertical")
#: the parts of :func:`run` (the command line's ``--parts``)
PARTS = ("table", "filters", "ablation", "emergence", "attention")


@dataclass(frozen=True)
class Settings:
    """The knobs of one budget (see :data:`BUDGET_SETTINGS`).

    Attributes:
        name: ``"laptop"`` or ``"full"``.
        n_train, n_test: images used (stratified subsets when below 50,000 / 10,000).
        hidden: widths of the three hidden layers (d_1, d_2, d_3).
        epochs, batch_size, lr, weight_decay: training (Adam, or AdamW when decaying).
        schedule: learning-rate schedule (``"constant"`` or ``"warmup_linear"``).
        first_init_scale: multiplies the first layer's initial weights (THEORY.md §6:
            the default init leaves a large random component in W_1 along directions
            that carry no image variance, which isotropic probes see).
        augment_mirror: random horizontal mirrors during training.
        penalty_weight, penalty_start, penalty_ramp: the soft mirror penalty.
        noise_samples: isotropic-noise probes (half fit, half scored).
        cov_samples: probes with the images' covariance (``image_cov``).
        cov_images: training images whose covariance the ``image_cov`` probes share.
        snapshot_every: epochs between checkpoints kept for :func:`emergence`.
        ablation_n_train, ablation_epochs: the (smaller) scale of :func:`ablation`.
        ablation_variants: names of :data:`ABLATION_VARIANTS` run by default (None: all).
        ablation_networks: the networks of :data:`NETWORKS` the ablation retrains.
        attention_epochs, attention_heads, attention_patch: the attention autoencoder.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    name: str
    n_train: int
    n_test: int
    hidden: tuple[int, int, int]
    epochs: int
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    schedule: str = "warmup_linear"
    first_init_scale: float = 0.1
    augment_mirror: bool = True
    penalty_weight: float = 1.0
    penalty_start: float = 0.5
    penalty_ramp: float = 0.2
    noise_samples: int = 10_000
    cov_samples: int = 10_000
    cov_images: int = 2_000
    snapshot_every: int = 1
    ablation_n_train: int = 2_000
    ablation_epochs: int = 6
    ablation_variants: tuple[str, ...] | None = None
    ablation_networks: tuple[str, ...] = ("tanh-autoencoder",)
    attention_epochs: int = 4
    attention_heads: int = 4
    attention_patch: int = 4

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}


#: ``laptop`` (the default): minutes on 2 CPU cores; ``full``: all 50,000 images, classifiers above 50 % test accuracy.
BUDGET_SETTINGS: dict[str, Settings] = {
    "laptop": Settings(name="laptop", n_train=4_000, n_test=2_000, hidden=(256, 128, 128), epochs=8,
                   noise_samples=6_000, cov_samples=6_000, cov_images=1_000, ablation_n_train=1_500, ablation_epochs=5,
                   ablation_variants=("base", "default first-layer init (×10)", "strong weight decay (0.5)", "no penalty"),
                   attention_epochs=4),
    "full": Settings(name="full", n_train=50_000, n_test=10_000, hidden=(512, 256, 256), epochs=15, batch_size=256,
                     noise_samples=100_000, cov_samples=20_000, cov_images=2_000, snapshot_every=3,
                     ablation_n_train=10_000, ablation_epochs=8, attention_epochs=4,
                     ablation_variants=("base", "default first-layer init (×10)", "smaller first-layer init (×0.1)",
                                        "strong weight decay (0.5)", "no penalty", "penalty weight ×10",
                                        "2× epochs")),
}


_FIELDS = tuple(f.name for f in dataclasses.fields(Settings))


def settings(budget: str | None = None, **overrides: Any) -> Settings:
    """The :class:`Settings` of ``budget`` (default ``$EQLIB_BUDGET``, else ``"laptop"``), with overrides.

    Raises:
        ValueError: for an override that is not a :class:`Settings` field.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    s = BUDGET_SETTINGS[_budget(budget)]
    unknown = set(overrides) - set(_FIELDS)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; fields are {list(_FIELDS)}")
    return dataclasses.replace(s, **overrides) if overrides else s


def parse_setting(assignment: str, base: Settings | None = None) -> tuple[str, Any]:
    """``"key=value"`` → ``(key, value)`` typed like the field in ``base`` (default the ``laptop`` settings):
    numbers, ``true``/``false``, and comma-separated tuples (``hidden=1024,512,512``,
    ``ablation_networks=tanh-autoencoder,tanh-classifier``).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    key, sep, text = assignment.partition("=")
    key, text = key.strip(), text.strip()
    base = base or BUDGET_SETTINGS["laptop"]
    if not sep or not hasattr(base, key) or key == "name":
        raise ValueError(f"expected KEY=VALUE with KEY a setting, got {assignment!r}; "
                         f"settings are {list(_FIELDS[1:])}")
    current = getattr(base, key)
    try:
        if isinstance(current, bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return key, text.lower() in ("true", "1")
        if isinstance(current, tuple) or current is None:
            kind = type(current[0]) if current else str
            return key, tuple(kind(v.strip()) for v in text.split(",") if v.strip())
        return key, type(current)(text)
    except ValueError:
        raise ValueError(f"cannot read {text!r} as the {type(current).__name__} setting {key!r}") from None


# --------------------------------------------------------------------------- networks

def build_mlp(activation: str, task: str, hidden: Sequence[int] = (256, 128, 128), seed: int = 0,
              first_init_scale: float = 0.1) -> MLP:
    """A depth-4 MLP on flattened CIFAR-10 images: first nonlinearity ``activation``, then GELU.

    Widths [3072, d_1, d_2, d_3, 10] (classifier) or [3072, d_1, d_2, d_3, 3072]
    (autoencoder); the last layer is linear.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if activation not in ("tanh", "gelu"):
        raise ValueError(f"first activation must be 'tanh' or 'gelu', got {activation!r}")
    if task not in ("classify", "autoencode"):
        raise ValueError(f"task must be 'classify' or 'autoencode', got {task!r}")
    if len(hidden) != 3:
        raise ValueError(f"a depth-4 MLP has three hidden widths, got {list(hidden)}")
    out = 10 if task == "classify" else 3072
    return MLP([3072, *hidden, out], activations=[activation, "gelu", "gelu"], seed=seed,
               init_scale=[first_init_scale, 1.0, 1.0, 1.0])


def train_config(task: str, s: Settings, seed: int = 0, **overrides: Any) -> TrainConfig:
    """The :class:`~eqlib.train.TrainConfig` of one network under settings ``s``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    cfg = TrainConfig(task=task, epochs=s.epochs, batch_size=s.batch_size, lr=s.lr, optimizer="adam",
                      weight_decay=s.weight_decay, schedule=s.schedule, augment_mirror=s.augment_mirror,
                      penalty="equivariance" if task == "autoencode" else "invariance",
                      penalty_weight=s.penalty_weight, penalty_start=s.penalty_start, penalty_ramp=s.penalty_ramp,
                      snapshot_every=s.snapshot_every, seed=seed)
    return cfg.replace(**overrides) if overrides else cfg


def load_data(s: Settings, root: str | None = None, seed: int = 0,
              download: bool | None = None) -> tuple[CIFAR10, CIFAR10]:
    """(train, test) CIFAR-10 splits, stratified subsets of ``s.n_train`` / ``s.n_test`` images.

    ``download`` is passed to :func:`~eqlib.data.load_cifar10` (None: download CIFAR-10
    when it is not found and ``$EQLIB_DATA`` is unset, unless ``EQLIB_DOWNLOAD=0``).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    tr = load_cifar10("train", root, download=download)
    te = load_cifar10("test", root, download=download)
    if s.n_train < len(tr):
        tr = subset(tr, s.n_train, seed=seed)
    if s.n_test < len(te):
        te = subset(te, s.n_test, seed=seed + 1)
    return tr, te


def _data_spec(data: CIFAR10, s_n: int, seed: int) -> dict[str, Any]:
    return {"dataset": "cifar10", "split": data.split, "n": len(data), "subset_seed": seed,
            "checksum": int(data.images[:, :, ::7, ::7].sum()) + int((data.labels * torch.arange(len(data))).sum())}


def train_networks(s: Settings, train: CIFAR10, test: CIFAR10 | None = None, seed: int = 0,
                   device: str | torch.device | None = None, progress: bool = True,
                   names: Sequence[str] | None = None, **config_overrides: Any) -> dict[str, TrainResult]:
    """Train (or load from the cache) the four networks of :data:`NETWORKS`.

    ``config_overrides`` go to :func:`train_config` (TrainConfig fields); architecture
    changes go through ``s`` (e.g. ``dataclasses.replace(s, first_init_scale=1.0)``).

    Returns:
        ``{name: TrainResult}`` (models on the CPU, eval mode).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    out = {}
    for name in names or NETWORKS:
        act, task = NETWORKS[name]
        cfg = train_config(task, s, seed=seed, **config_overrides)
        first = s.first_init_scale
        build = lambda act=act, task=task: build_mlp(act, task, s.hidden, seed=seed, first_init_scale=first)  # noqa: E731
        eval_data = (test.images, test.labels) if test is not None else None
        out[name] = cached_train(build, cfg, (train.images, train.labels if task == "classify" else None),
                                 data_spec=_data_spec(train, s.n_train, seed),
                                 cache_key_extra={"experiment": "cifar_mlp", "hidden": list(s.hidden),
                                                  "first_init_scale": first},
                                 device=device, progress=progress, eval_data=eval_data)
    return out


# --------------------------------------------------------------------------- filters

CATEGORIES = ("symmetric", "antisymmetric", "mirrored pair", "negated mirrored pair", "unmatched")


@dataclass
class FilterPairing:
    """How the first-layer filters map to each other under the mirror.

    Attributes:
        perm, signs, similarity: from :func:`eqlib.latent.match_units` of the mirrored
            filters against the filters: mirror(w_j) ≈ signs[j] · w_{perm[j]}, with
            ``|cosine|`` ``similarity[j]``.
        category: per filter, an index into ``CATEGORIES``.
        threshold: the ``|cosine|`` below which a filter counts as unmatched.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    perm: np.ndarray
    signs: np.ndarray
    similarity: np.ndarray
    category: np.ndarray
    threshold: float

    def counts(self, first: int | None = None) -> dict[str, int]:
        """Number of filters in each category (among the first ``first`` filters if given)."""
        c = self.category[:first] if first is not None else self.category
        return {name: int((c == k).sum()) for k, name in enumerate(CATEGORIES)}

    @property
    def matched_fraction(self) -> float:
        return float((self.category != CATEGORIES.index("unmatched")).mean())


def filter_pairing(W1: torch.Tensor, axis: str = "horizontal", threshold: float = 0.8) -> FilterPairing:
    """Classify first-layer filters W_1 (d_1, 3072) under the mirror ``axis``.

    Each filter w_j (a 3×32×32 image) is mirrored and matched (signed, one-to-one,
    :func:`eqlib.latent.match_units`) against all filters. A filter whose mirror image is
    ±itself is (anti)symmetric; one whose mirror image is ±another filter has a
    (negated) mirrored partner; a best match with ``|cosine|`` below ``threshold`` is
    unmatched. A signed-permutation latent action makes every filter matched.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if W1.dim() != 2 or W1.shape[1] != 3072:
        raise ValueError(f"W1 must have shape (d_1, 3072), got {tuple(W1.shape)}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold is a |cosine| in (0, 1], got {threshold}")
    W = W1.detach().double().cpu()
    perm, signs, sim = match_units(mirror_images(W, axis), W, signed=True)
    perm, signs, sim = perm.numpy(), signs.numpy(), sim.numpy()
    self_ = perm == np.arange(len(perm))
    cat = np.where(self_, np.where(signs > 0, 0, 1), np.where(signs > 0, 2, 3))
    cat = np.where(sim >= threshold, cat, 4)
    return FilterPairing(perm, signs, sim, cat, threshold)


# --------------------------------------------------------------------------- probes

def probe_inputs(kind: str, n: int, train: CIFAR10, test: CIFAR10, s: Settings, seed: int = 0) -> torch.Tensor:
    """Flat probe inputs (n, 3072) in the networks' (normalised) input space.

    ``kind``: ``"noise"`` (isotropic N(0, 1), the paper's protocol: each normalised pixel
    has unit variance, like the images); ``"images"`` (test images, n ≤ len(test));
    ``"image_cov"`` (Gaussian with the mean and covariance of ``s.cov_images`` training
    images: y = μ + Σ_k z_k (x_k − μ)/√K with z ~ N(0, I)).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    gen = torch.Generator().manual_seed(int(seed))
    if kind == "noise":
        return torch.randn(n, 3072, generator=gen)
    if kind == "images":
        if n > len(test):
            raise ValueError(f"only {len(test)} test images, asked for {n}")
        return prepare_images(test.images[:n]).flatten(1)
    if kind == "image_cov":
        K = min(s.cov_images, len(train))
        X = prepare_images(train.images[:K]).flatten(1).double()
        mu = X.mean(0)
        Xc = (X - mu) / math.sqrt(K)
        mu, Xc = mu.float(), Xc.float()
        return torch.cat([mu + torch.randn(min(8192, n - i), K, generator=gen) @ Xc for i in range(0, n, 8192)])
    raise ValueError(f"probe kind must be one of {PROBES}, got {kind!r}")


@torch.no_grad()
def _paired_latents(model: nn.Module, y: torch.Tensor, layers: Sequence[int], axes: Sequence[str],
                    chunk: int = 4096) -> dict[tuple[int, str | None], torch.Tensor]:
    """f_{≤i}(y) and f_{≤i}(m y) for every layer i and mirror m, one forward pass per chunk."""
    dev = next(model.parameters()).device
    upto = max(layers)
    out: dict[tuple[int, str | None], list[torch.Tensor]] = {}
    for s0 in range(0, len(y), chunk):
        yb = y[s0:s0 + chunk].to(dev)
        batch = torch.cat([yb] + [mirror_images(yb, ax) for ax in axes])
        lat = model.latents(batch, upto=upto)
        for i in layers:
            parts = lat[i - 1].chunk(1 + len(axes))
            for key, part in zip([None, *axes], parts):
                out.setdefault((i, key), []).append(part)
    return {k: torch.cat(v) for k, v in out.items()}


def equivariance_table(models: dict[str, nn.Module], s: Settings, train: CIFAR10, test: CIFAR10,
                       probes: Sequence[str] = PROBES, layers: Sequence[int] = (1, 2), axes: Sequence[str] = AXES,
                       seed: int = 0, device: str | torch.device | None = None) -> list[dict[str, Any]]:
    """Median relative linear-equivariance errors of f_{≤i} for every network, layer, mirror, probe.

    For each probe kind, ``n`` inputs (``s.noise_samples`` noise, ``s.cov_samples``
    covariance samples, all test images) are drawn; A_i is fitted on the first half
    (:func:`eqlib.latent.fit_linear_action`: gelsd on the CPU) and the median of
    ‖f(m y) − A_i f(y)‖/‖f(y)‖ is reported on the second half. (The same numbers as
    :func:`eqlib.latent.linear_equivariance_error`, with each network's features computed
    once for all layers and mirrors.)

    Returns:
        rows ``{"network", "activation", "task", "layers", "mirror", "probe", "n_fit",
        "n_test", "median_error", "fit_median_error", "paper"}`` (``paper`` is the
        reported number when the paper has one for that row, else None).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    dev = default_device(device)
    rows = []
    for probe in probes:
        n = {"images": len(test), "image_cov": s.cov_samples}.get(probe, s.noise_samples)
        y = probe_inputs(probe, n, train, test, s, seed=seed)
        for name, model in models.items():
            act_name, task = NETWORKS[name]
            model = model.to(dev).eval()
            feats = _paired_latents(model, y, layers, axes)
            for i in layers:
                for ax in axes:
                    X, Y = feats[(i, None)], feats[(i, ax)]
                    if X.device.type != "cpu":
                        X, Y = X.double(), Y.double()
                    fit = fit_linear_action(X, Y, fit_fraction=0.5)
                    paper = PAPER_TABLE.get((task, i, ax), {}).get(act_name) if probe == "noise" else None
                    rows.append({"network": name, "activation": act_name, "task": task, "layers": i, "mirror": ax,
                                 "probe": probe, "n_fit": fit.n_fit, "n_test": fit.n_test,
                                 "median_error": fit.median_error, "fit_median_error": fit.fit_median_error,
                                 "paper": paper})
            model.to("cpu")
    return rows


def table_lookup(rows: Sequence[dict], network: str, layers: int, mirror: str, probe: str = "noise") -> float:
    """The ``median_error`` of one row of :func:`equivariance_table`.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    for r in rows:
        if (r["network"], r["layers"], r["mirror"], r["probe"]) == (network, layers, mirror, probe):
            return r["median_error"]
    raise KeyError(f"no row for {network}, f_≤{layers}, {mirror}, {probe}")


def _table_rows(rows: Sequence[dict], probes: Sequence[str]) -> tuple[list[str], list[list]]:
    networks = list(dict.fromkeys(r["network"] for r in rows))
    layers = sorted({r["layers"] for r in rows})
    header = ["network", "layers", "mirror", *probes, "paper"]
    body = []
    for name in networks:
        act, task = NETWORKS[name]
        for i in layers:
            for ax in AXES:
                vals = [table_lookup(rows, name, i, ax, p) for p in probes]
                paper = PAPER_TABLE.get((task, i, ax), {}).get(act)
                prefix = "∘".join(f"f{k}" for k in range(i, 0, -1))
                body.append([name, prefix, ax, *(f"{v:.3f}" for v in vals),
                             f"{paper:.3f}" if paper is not None else "—"])
    return header, body


def table_text(rows: Sequence[dict], probes: Sequence[str] = PROBES) -> str:
    """The rows of :func:`equivariance_table` as a text table: one line per network, prefix
    and mirror, one column per probe kind, and the paper's number where it has one.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    header, body = _table_rows(rows, probes)
    widths = [18, 8, 11] + [10] * len(probes) + [7]
    fmt = lambda r: " ".join(f"{v:{w}s}" if i < 3 else f"{v:>{w}s}"  # noqa: E731
                             for i, (v, w) in enumerate(zip(r, widths)))
    return "\n".join(fmt(r) for r in [header, *body])


def table_html(rows: Sequence[dict], probes: Sequence[str] = PROBES) -> str:
    """:func:`table_text` as an HTML table, which fits the page.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    header, body = _table_rows(rows, probes)
    return html_table(header, body, align_right_from=3)


_ABLATION_COLUMNS = (("f1 H", "f1_horizontal_noise", ".3f"), ("f1 V", "f1_vertical_noise", ".3f"),
                     ("f1 H img", "f1_horizontal_images", ".3f"),
                     ("f1 V img", "f1_vertical_images", ".3f"), ("matched", "matched_filters", ".2f"),
                     ("end-to-end", "end_to_end", ".3f"), ("task loss", "task_loss", ".3f"))


def _ablation_rows(rows: Sequence[dict]) -> tuple[list[str], list[list[str]], int]:
    several = len({r.get("network") for r in rows}) > 1
    first = ["network", "variant"] if several else ["variant"]
    header = first + [name for name, _, _ in _ABLATION_COLUMNS]
    body = [([r.get("network", "")] if several else []) + [r["variant"]]
            + [format(r[key], spec) for _, key, spec in _ABLATION_COLUMNS] for r in rows]
    return header, body, len(first)


def ablation_text(rows: Sequence[dict]) -> str:
    """The rows of :func:`ablation` as a text table (f_1 errors for both mirrors and probe
    kinds, matched filters, end-to-end error, final task loss).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    header, body, n_text = _ablation_rows(rows)
    widths = ([18, 34] if n_text == 2 else [34]) + [7, 7, 9, 9, 8, 10, 9]
    fmt = lambda r: " ".join(f"{v:{w}s}" if i < n_text else f"{v:>{w}s}"  # noqa: E731
                             for i, (v, w) in enumerate(zip(r, widths)))
    return "\n".join(fmt(r) for r in [header, *body])


def ablation_html(rows: Sequence[dict]) -> str:
    """:func:`ablation_text` as an HTML table, which fits the page.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    header, body, n_text = _ablation_rows(rows)
    return html_table(header, body, align_right_from=n_text)


def load_results(path: str | Path) -> dict[str, Any]:
    """A JSON written by :func:`run` (the command line), checked for the keys the chapter reads.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not JSON, or lacks ``settings`` / ``networks``.

    Chapter: *Reproducing the CIFAR-10 experiment* (the recorded full-budget run).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no results file at {path}; write one with "
                                f"`python -m eqlib.experiments.cifar_mlp --out DIR`")
    try:
        results = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not a results JSON ({exc})") from None
    missing = [k for k in ("settings", "networks") if k not in (results if isinstance(results, dict) else {})]
    if missing:
        raise ValueError(f"{path} lacks {missing}: not written by eqlib.experiments.cifar_mlp")
    return results


def input_spectrum(images: torch.Tensor, max_images: int = 10_000) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues (ascending) and eigenvectors (columns) of the covariance of the first
    ``max_images`` uint8 ``images``, normalised and flattened as the networks see them.

    Directions with tiny eigenvalues carry almost no image variance: training hardly moves
    the first layer along them, while isotropic noise probes excite them fully.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    X = prepare_images(images[:max_images]).flatten(1).double()
    X = X - X.mean(0)
    evals, evecs = torch.linalg.eigh(X.T @ X / max(1, len(X) - 1))
    return evals.float(), evecs.float()


@torch.no_grad()
def end_to_end_error(model: nn.Module, images: torch.Tensor, task: str, axis: str = "horizontal") -> float:
    """Mean over images of ‖f(m x) − m f(x)‖/‖f(x)‖ (autoencoders) or ‖f(m x) − f(x)‖/‖f(x)‖
    (classifier logits), for uint8 ``images`` (N, 3, 32, 32).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if task not in ("classify", "autoencode"):
        raise ValueError(f"task must be 'classify' or 'autoencode', got {task!r}")
    model.eval()
    dev = next(model.parameters()).device
    x = prepare_images(images).to(dev)
    fx, rho = model(x), mirror_action(tuple(x.shape[1:]), axis)
    rho_out = rho if task == "autoencode" else trivial(rho.group, fx.shape[-1])
    diff = equivariance_residual(model, rho, rho_out, x, rho.group["m"], fx)
    return float((diff.reshape(len(x), -1).norm(dim=1)
                  / fx.reshape(len(x), -1).norm(dim=1).clamp_min(1e-12)).mean())


# --------------------------------------------------------------------------- ablation

#: variant name → changes relative to the ablation's base (Tanh autoencoder)
ABLATION_VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "default first-layer init (×10)": {"first_init_scale": 1.0},
    "no weight decay": {"weight_decay": 0.0},
    "strong weight decay (0.5)": {"weight_decay": 0.5},
    "no penalty": {"penalty_weight": 0.0},
    "abrupt penalty (no ramp)": {"penalty_ramp": 0.0},
    "penalty weight ×10": {"penalty_weight": 10.0},
    "2× epochs": {"epochs_factor": 2},
    "2× width": {"width_factor": 2},
    "smaller first-layer init (×0.1)": {"first_init_scale": 0.01},
    "5× epochs": {"epochs_factor": 5},
}


def ablation(s: Settings, train: CIFAR10, test: CIFAR10, variants: dict[str, dict[str, Any]] | None = None,
             network: str = "tanh-autoencoder", seed: int = 0, device: str | torch.device | None = None,
             progress: bool = True, probe_samples: int | None = None,
             on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """What makes the first-layer action emerge: retrain one network with one change at a time.

    Runs at the ablation scale (``s.ablation_n_train`` images, ``s.ablation_epochs``
    epochs). Each variant's keys are :class:`Settings` fields or ``epochs_factor`` /
    ``width_factor``. For each variant: f_1 errors (horizontal and vertical, isotropic
    noise and test images), f_2∘f_1 horizontal error on noise, the share of matched
    first-layer filters, the end-to-end equivariance error on test images and the final
    task loss. ``on_row`` is called with each row as soon as it is done (the command
    line prints it, so a long run that is stopped keeps what it finished).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if variants is None:
        names = s.ablation_variants or tuple(ABLATION_VARIANTS)
        unknown = [k for k in names if k not in ABLATION_VARIANTS]
        if unknown:
            raise ValueError(f"unknown ablation variants {unknown}; choose from {list(ABLATION_VARIANTS)}")
        variants = {k: ABLATION_VARIANTS[k] for k in names}
    if network not in NETWORKS:
        raise ValueError(f"unknown network {network!r}; choose from {list(NETWORKS)}")
    act, task = NETWORKS[network]
    tr = subset(train, s.ablation_n_train, seed=seed) if s.ablation_n_train < len(train) else train
    n_probe = probe_samples or min(s.noise_samples, 10_000)
    rows = []
    for label, change in variants.items():
        change = dict(change)
        ef, wf = change.pop("epochs_factor", 1), change.pop("width_factor", 1)
        bad = set(change) - set(_FIELDS)
        if bad:
            raise ValueError(f"unknown ablation keys {sorted(bad)} in variant {label!r}")
        sv = dataclasses.replace(s, n_train=len(tr), epochs=s.ablation_epochs * ef, snapshot_every=0,
                                 hidden=tuple(int(h * wf) for h in s.hidden), **change)
        t0 = time.perf_counter()
        res = train_networks(sv, tr, None, seed=seed, device=device, progress=progress, names=[network])[network]
        seconds = time.perf_counter() - t0
        model = res.model
        errs = equivariance_table({network: model}, dataclasses.replace(sv, noise_samples=n_probe), tr, test,
                                  probes=("noise", "images"), layers=(1, 2), seed=seed, device=device)
        pairing = filter_pairing(model.layers[0].weight)
        rows.append({
            "network": network, "variant": label, "changes": {**change, **({"epochs_factor": ef} if ef != 1 else {}),
                                          **({"width_factor": wf} if wf != 1 else {})},
            "f1_horizontal_noise": table_lookup(errs, network, 1, "horizontal", "noise"),
            "f1_vertical_noise": table_lookup(errs, network, 1, "vertical", "noise"),
            "f1_horizontal_images": table_lookup(errs, network, 1, "horizontal", "images"),
            "f1_vertical_images": table_lookup(errs, network, 1, "vertical", "images"),
            "f12_horizontal_noise": table_lookup(errs, network, 2, "horizontal", "noise"),
            "matched_filters": pairing.matched_fraction,
            "end_to_end": end_to_end_error(model, test.images[:1000], task),
            "task_loss": res.history["task_loss"][-1], "train_seconds": seconds if not res.from_cache else None,
        })
        if on_row is not None:
            on_row(rows[-1])
    return rows


# --------------------------------------------------------------------------- emergence

def emergence(result: TrainResult, build, test: CIFAR10, probe: str = "images", samples: int = 2000,
              axis: str = "horizontal", seed: int = 0) -> list[dict[str, Any]]:
    """f_1's linear-equivariance error, matched filters and end-to-end error at every snapshot.

    Args:
        result: a :class:`~eqlib.train.TrainResult` with snapshots (``snapshot_every``).
        build: the model builder (to load snapshots into).
        probe: ``"images"`` (test images) or ``"noise"``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not result.snapshots:
        raise ValueError("this result has no snapshots; train with snapshot_every > 0")
    task = result.config.task if result.config is not None else "autoencode"
    act = mirror_action((3, 32, 32), axis)
    if probe == "images":
        y = prepare_images(test.images[:samples]).flatten(1)
    elif probe == "noise":
        y = torch.randn(samples, 3072, generator=torch.Generator().manual_seed(seed))
    else:
        raise ValueError(f"probe must be 'images' or 'noise', got {probe!r}")
    out = []
    for k, (epoch, _) in enumerate(result.snapshots):
        model = result.snapshot_model(k, build)
        fit = linear_equivariance_error(model.prefix(1), act, act.group["m"], samples=y)
        out.append({"epoch": epoch, "f1_error": fit.median_error,
                    "matched_filters": filter_pairing(model.layers[0].weight, axis).matched_fraction,
                    "end_to_end": end_to_end_error(model, test.images[:500], task, axis),
                    "weight": model.layers[0].weight.detach().clone()})
    return out


# --------------------------------------------------------------------------- attention

class PatchAttentionAutoencoder(nn.Module):
    """Images → p×p patch tokens → one multi-head attention layer (with learned positional
    encodings) → tokens → images. ``attention`` is the :class:`~eqlib.models.AttentionNetwork`.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    def __init__(self, patch: int = 4, heads: int = 4, seed: int = 0):
        super().__init__()
        if 32 % patch:
            raise ValueError(f"patch must divide 32, got {patch}")
        self.patch = patch
        d = 3 * patch * patch
        self.attention = AttentionNetwork((32 // patch) ** 2, [d, d], heads=heads, positional=True, seed=seed)

    def tokens(self, x: torch.Tensor) -> torch.Tensor:
        from ..latent.attention import patchify
        return patchify(x, self.patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from ..latent.attention import unpatchify
        return unpatchify(self.attention(self.tokens(x)), (3, 32, 32), self.patch)


def attention_experiment(s: Settings, train: CIFAR10, test: CIFAR10, seed: int = 0,
                         device: str | torch.device | None = None, progress: bool = True) -> dict[str, Any]:
    """Train the attention autoencoder (mirror-equivariance penalty in the second half) and
    recover its latent action under the horizontal mirror with
    :func:`eqlib.latent.attention.recover_attention_action`.

    Returns:
        dict with ``model``, ``result`` (:class:`~eqlib.train.TrainResult`), ``latent``
        (the :class:`~eqlib.latent.attention.AttentionLatentAction`), ``head_perm``
        (τ from the parameters), ``head_perm_maps`` (τ from the attention maps),
        ``swapped_heads`` (heads with τ(h) ≠ h), ``maps_residual``, ``output_residual``,
        ``positional_residual``, ``end_to_end``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    from ..latent.attention import patch_mirror_action, recover_attention_action

    cfg = TrainConfig(task="autoencode", epochs=s.attention_epochs, batch_size=s.batch_size, lr=3e-3,
                      schedule="warmup_linear", augment_mirror=s.augment_mirror, penalty="equivariance",
                      penalty_weight=s.penalty_weight, penalty_start=s.penalty_start, penalty_ramp=s.penalty_ramp,
                      seed=seed)
    build = lambda: PatchAttentionAutoencoder(s.attention_patch, s.attention_heads, seed=seed)  # noqa: E731
    res = cached_train(build, cfg, (train.images, None), data_spec=_data_spec(train, len(train), seed),
                       cache_key_extra={"experiment": "cifar_mlp/attention"}, device=device, progress=progress)
    model = res.model.eval()
    action = patch_mirror_action((3, 32, 32), s.attention_patch)
    x = model.tokens(prepare_images(test.images[:256]))
    latent = recover_attention_action(model.attention, action, x)
    tau = latent.head_perm["m"]
    return {"model": model, "result": res, "latent": latent, "action": action,
            "head_perm": tau.tolist(), "head_perm_maps": latent.head_perm_maps["m"].tolist(),
            "swapped_heads": [int(h) for h in np.nonzero(tau != np.arange(len(tau)))[0]],
            "maps_residual": latent.maps_residual["m"], "output_residual": latent.output_residual["m"],
            "positional_residual": latent.positional_residual["m"],
            "end_to_end": end_to_end_error(model, test.images[:1000], "autoencode"),
            "task_loss": res.history["task_loss"][-1]}


# --------------------------------------------------------------------------- everything

def _accuracy(result: TrainResult) -> float | None:
    acc = [a for a in result.history.get("test_accuracy", []) if a == a]
    return acc[-1] if acc else None


def run(budget: str | None = None, device: str | None = None, out: str | Path | None = None, seed: int = 0,
        root: str | None = None, progress: bool = True, parts: Sequence[str] = PARTS,
        overrides: Mapping[str, Any] | None = None,
        on_ablation_row: Callable[[dict[str, Any]], None] | None = None,
        download: bool | None = None) -> dict[str, Any]:
    """Run the whole experiment; return every number (and write figures + JSON to ``out``).

    ``overrides`` change :class:`Settings` fields of the budget (recorded in the JSON).
    Only ``parts`` are run; the four networks are always trained (or loaded from the cache).
    ``out`` is checked to be a writable folder before any work (ValueError otherwise);
    ``download`` is passed to :func:`load_data`.

    Returns:
        JSON-serialisable dict: ``settings``, ``networks`` (test accuracy / loss,
        end-to-end errors, filter counts), ``table``, ``ablation``, ``emergence``,
        ``attention``, ``seconds`` and ``part_seconds`` (wall time of each part; the
        training time is near zero when the networks came from the cache).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib
    if out is not None:
        matplotlib.use("Agg")
    from ..plots.filters import plot_attention_heads, plot_filters
    from ..plots.training import plot_ablation, plot_emergence, plot_error_table

    t_start = time.perf_counter()
    unknown_parts = set(parts) - set(PARTS)
    if unknown_parts:
        raise ValueError(f"unknown parts {sorted(unknown_parts)}; choose from {list(PARTS)}")
    s = settings(budget, **dict(overrides or {}))
    if out is not None:
        out = writable_folder(out)
    tr, te = load_data(s, root, seed=seed, download=download)
    timings = {"data": time.perf_counter() - t_start}

    @contextmanager
    def timed(part: str):
        t = time.perf_counter()
        yield
        timings[part] = time.perf_counter() - t

    with timed("train"):
        results = train_networks(s, tr, te, seed=seed, device=device, progress=progress)
    models = {k: r.model for k, r in results.items()}
    dev = default_device(device)
    summary: dict[str, Any] = {"settings": s.to_dict(), "seed": seed, "device": str(dev),
                               "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                               "torch": torch.__version__, "networks": {}}
    figures = {}
    for name, r in results.items():
        act, task = NETWORKS[name]
        pairing = filter_pairing(r.model.layers[0].weight)
        summary["networks"][name] = {
            "test_accuracy": _accuracy(r), "final_task_loss": r.history["task_loss"][-1],
            "test_loss": (r.history["test_loss"][-1] if r.history["test_loss"] else None),
            "end_to_end_horizontal": end_to_end_error(r.model, te.images[:1000], task, "horizontal"),
            "end_to_end_vertical": end_to_end_error(r.model, te.images[:1000], task, "vertical"),
            "filters_first64": pairing.counts(64), "filters_all": pairing.counts(),
            "matched_fraction": pairing.matched_fraction,
            "epoch_seconds": float(np.mean(r.history["seconds"])) if r.history["seconds"] else None,
        }
        if "filters" in parts:
            figures[f"filters_{name}"] = plot_filters(r.model.layers[0].weight, pairing, title=name)
    if "table" in parts:
        with timed("table"):
            summary["table"] = equivariance_table(models, s, tr, te, seed=seed, device=device)
            figures["table"] = plot_error_table(summary["table"])
    if "ablation" in parts:
        with timed("ablation"):
            summary["ablation"] = [row for net in s.ablation_networks
                                   for row in ablation(s, tr, te, network=net, seed=seed, device=device,
                                                       progress=progress, on_row=on_ablation_row)]
            for net in s.ablation_networks:
                key = "ablation" if len(s.ablation_networks) == 1 else f"ablation_{net}"
                figures[key] = plot_ablation([r for r in summary["ablation"] if r["network"] == net])
    if "emergence" in parts:
        with timed("emergence"):
            name = "tanh-autoencoder"
            build = lambda: build_mlp("tanh", "autoencode", s.hidden, seed=seed,  # noqa: E731
                                      first_init_scale=s.first_init_scale)
            em = emergence(results[name], build, te)
            summary["emergence"] = [{k: v for k, v in e.items() if k != "weight"} for e in em]
            figures["emergence"] = plot_emergence(em)
    if "attention" in parts:
        with timed("attention"):
            att = attention_experiment(s, tr, te, seed=seed, device=device, progress=progress)
            summary["attention"] = {k: att[k] for k in ("head_perm", "head_perm_maps", "swapped_heads",
                                                        "maps_residual", "output_residual", "positional_residual",
                                                        "end_to_end", "task_loss")}
            figures["attention"] = plot_attention_heads(att["model"], prepare_images(te.images[:1]),
                                                        att["head_perm"])
    summary["seconds"] = time.perf_counter() - t_start
    summary["part_seconds"] = timings
    if out is not None:
        import matplotlib.pyplot as plt
        for key, fig in figures.items():
            fig.savefig(out / f"cifar_mlp_{s.name}_{key}.png", dpi=110, bbox_inches="tight")
            plt.close(fig)
        (out / f"cifar_mlp_{s.name}.json").write_text(json.dumps(summary, indent=1, default=float))
    return summary


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m eqlib.experiments.cifar_mlp --budget laptop --out results/``."""
    p = argparse.ArgumentParser(prog="python -m eqlib.experiments.cifar_mlp",
                                description="The CIFAR-10 MLP experiment of [SMBK26]: filters, linear-equivariance "
                                            "table, ablation, emergence, attention heads.")
    p.add_argument("--budget", choices=budget_choices(), default=None,
                   help="compute budget (default $EQLIB_BUDGET, else laptop)")
    p.add_argument("--device", default=None, help="cpu or cuda (default $EQLIB_DEVICE, else cuda when available)")
    p.add_argument("--out", default="results", help="folder for the PNG figures and the JSON of numbers")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=None, help="CIFAR-10 folder or archive (default $EQLIB_DATA)")
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting of the budget, e.g. --set epochs=40 --set ablation_n_train=50000 "
                        "--set ablation_networks=tanh-autoencoder,tanh-classifier (repeatable)")
    p.add_argument("--no-download", action="store_true",
                   help="never download CIFAR-10 (default: download it into the cache when it "
                        "is not found and $EQLIB_DATA is unset)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    try:  # before any work: a bad --out must not fail after the training
        writable_folder(args.out)
    except ValueError as exc:
        p.error(str(exc))
    parts = tuple(x.strip() for x in args.parts.split(",") if x.strip())
    if set(parts) - set(PARTS):
        p.error(f"unknown parts {sorted(set(parts) - set(PARTS))}; choose from {','.join(PARTS)}")
    try:
        overrides = dict(parse_setting(a, BUDGET_SETTINGS[_budget(args.budget)]) for a in args.set)
    except ValueError as exc:
        p.error(str(exc))

    def print_row(row: dict[str, Any]) -> None:  # ablation rows as they finish
        print("ablation:", json.dumps({k: v for k, v in row.items() if k != "changes"}, default=float), flush=True)

    summary = run(args.budget, args.device, args.out, args.seed, args.data, not args.no_progress, parts,
                  overrides=overrides, on_ablation_row=print_row,
                  download=False if args.no_download else None)
    print(json.dumps({k: summary[k] for k in ("networks", "seconds", "part_seconds")}, indent=1, default=float))
    print(f"wrote {Path(args.out) / ('cifar_mlp_' + summary['settings']['name'] + '.json')}")
    return summary


if __name__ == "__main__":
    main()
