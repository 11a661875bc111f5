"""The CIFAR-10 MLP experiment of [SMBK26], at two compute budgets.

Four depth-4 MLPs: first nonlinearity Tanh or GELU (later ones GELU), each trained as a
mirror-equivariant autoencoder and as a mirror-invariant classifier, with a soft
equivariance / invariance penalty ramped in during the second half of training. Then:

- the first-layer filters, each classified as mirror-symmetric, mirror-antisymmetric,
  the mirror of another filter, or the negated mirror of another filter
  (:func:`eqlib.analysis.filter_pairing`);
- the table: median relative error of a least-squares linear map A_i with
  A_i f_{≤i}(y) ≈ f_{≤i}(m y), fitted on one half of the probes and scored on the other,
  for i = 1, 2, the horizontal mirror (trained) and the vertical one (control), probed
  with isotropic noise (the paper's protocol), test images, and Gaussian noise with the
  images' covariance (:func:`eqlib.analysis.equivariance_table`);
- an ablation of what makes the first-layer action emerge (:func:`ablation`);
- checkpoints during training (:func:`emergence`);
- a single-layer attention autoencoder on 4×4 patches and its head permutation
  (:func:`attention_experiment`).

The analyses live in :mod:`eqlib.analysis`; this module declares the budgets and the
parts and follows :mod:`eqlib.experiments.protocol`. Command line (writes PNG figures and
``cifar_mlp_<budget>.json``; with ``--seeds 0,1,2`` also ``cifar_mlp_<budget>_seeds.json``)::

    python -m eqlib.experiments.cifar_mlp --budget full --device cuda --out results/

Budgets (:data:`BUDGET_SETTINGS`): ``laptop`` (the default) trains small networks on a 4,000-image subset
for a few epochs (minutes on 2 CPU cores); ``full`` trains widths 512/256/256 on all
50,000 images for 15 epochs and probes with 100,000 noise samples (the whole chapter in
under 30 minutes on 2 CPU cores, minutes on a GPU). ``--set KEY=VALUE`` changes any
:class:`Settings` field, e.g. ``--set epochs=60`` or a larger ablation.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..actions import mirror as mirror_action
from ..analysis import (AXES, CATEGORIES, NETWORKS, PAPER_TABLE, PROBES, FilterPairing,
                        ablation_html, ablation_text, end_to_end_error, equivariance_table,
                        filter_pairing, input_spectrum, mirror_symmetric_spectrum,
                        paired_latents, probe_inputs, table_html, table_lookup, table_text,
                        whitening)
from ..data import CIFAR10, load_cifar10, subset
from ..device import default_device
from ..latent import fit_linear_action, linear_equivariance_error
from ..latent.attention import patch_mirror_action, patchify, recover_attention_action, unpatchify
from ..models import MLP, AttentionNetwork
from ..train import TrainConfig, TrainResult, cached_train, mirror_images, prepare_images
from . import protocol, writable_folder

__all__ = [
    "Settings", "BUDGETS", "BUDGET_SETTINGS", "settings", "parse_setting", "PARTS", "build_mlp",
    "train_config", "load_data", "train_networks", "ablation", "ABLATION_VARIANTS", "load_results",
    "emergence", "PatchAttentionAutoencoder", "attention_experiment", "run", "run_seeds",
    "seed_spread", "SearchSettings", "SEARCH_VARIANTS", "filter_search", "main",
]
# analyses used here live in eqlib.analysis (chapters import them from there); the names
# stay importable from this module for old scripts
_ANALYSIS = (AXES, CATEGORIES, NETWORKS, PAPER_TABLE, PROBES, FilterPairing, ablation_html,
             ablation_text, input_spectrum, probe_inputs, table_html, table_text)

#: the parts of :func:`run` (the command line's ``--parts``)
PARTS = ("table", "filters", "ablation", "emergence", "attention", "search")
#: the parts run when ``--parts`` is not given (the filter search is asked for by name)
DEFAULT_PARTS = PARTS[:-1]


@dataclass(frozen=True)
class Settings:
    """The knobs of one budget (see :data:`BUDGET_SETTINGS`).

    Attributes:
        name: ``"laptop"`` or ``"full"``.
        n_train, n_test: images used (stratified subsets when below 50,000 / 10,000).
        hidden: widths of the three hidden layers (d_1, d_2, d_3).
        epochs, batch_size, lr, weight_decay: training (Adam, or AdamW when decaying).
        schedule: learning-rate schedule (``"constant"`` or ``"warmup_linear"``).
        first_init_scale: multiplies the first layer's initial weights (a departure from
            the paper's setting: the default init leaves a large random component in W_1
            along directions that carry little image variance, which isotropic probes see).
        augment_mirror: random horizontal mirrors during training.
        penalty_weight, penalty_start, penalty_ramp: the soft mirror penalty.
        noise_samples: isotropic-noise probes (half fit, half scored).
        cov_samples: probes with the images' covariance (``image_cov``).
        cov_images: training images whose covariance the ``image_cov`` probes share.
        snapshot_every: epochs between checkpoints kept for :func:`emergence`.
        ablation_n_train, ablation_epochs: the (smaller) scale of :func:`ablation`.
        ablation_variants: names of :data:`ABLATION_VARIANTS` run by default (None: all).
        ablation_networks: the networks of :data:`eqlib.analysis.tables.NETWORKS` the ablation retrains.
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
        return protocol.settings_dict(self)


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


#: the protocol's name for :data:`BUDGET_SETTINGS`
BUDGETS = BUDGET_SETTINGS
_FIELDS = tuple(f.name for f in dataclasses.fields(Settings))


def settings(budget: str | None = None, **overrides: Any) -> Settings:
    """The :class:`Settings` of ``budget`` (default ``$EQLIB_BUDGET``, else ``"laptop"``), with
    overrides (:func:`eqlib.experiments.protocol.settings`).

    Raises:
        ValueError: for an unknown budget or an override that is not a :class:`Settings` field.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    return protocol.settings(BUDGETS, budget, **overrides)


def parse_setting(assignment: str, base: Settings | None = None) -> tuple[str, Any]:
    """``"key=value"`` → ``(key, value)`` typed like the field in ``base`` (default the
    ``laptop`` settings), through :func:`eqlib.experiments.protocol.parse_setting`.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    return protocol.parse_setting(assignment, base or BUDGETS["laptop"])


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
    """Train (or load from the cache) the four networks of :data:`eqlib.analysis.tables.NETWORKS`.

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



def load_results(path: str | Path) -> dict[str, Any]:
    """A JSON written by :func:`run` (the command line), checked for the keys the chapter reads
    (:func:`eqlib.experiments.protocol.load_json`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not JSON, or lacks ``settings`` / ``networks``.

    Chapter: *Reproducing the CIFAR-10 experiment* (the recorded full-budget run).
    """
    return protocol.load_json(path, required=("settings", "networks"))



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
        return patchify(x, self.patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
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


# --------------------------------------------------------------------------- filter search

@dataclass(frozen=True)
class SearchSettings:
    """The scale of :func:`filter_search` (small: each run is seconds to a minute on 2 CPU
    cores). Each variant of :data:`SEARCH_VARIANTS` changes some of these fields.

    Attributes:
        n_train, n_test: images (stratified subsets).
        hidden, epochs, batch_size, lr: the Tanh autoencoder and its training (AdamW).
        weight_decay: decoupled weight decay on every layer but the first.
        first_weight_decay: decoupled weight decay on the first layer's weight only.
        first_init_scale: multiplies the first layer's initial weights.
        whiten: ``"none"`` (the networks' usual normalised input) or ``"zca"``: inputs
            x Z with the ZCA whitening of the mirror-symmetrised covariance
            (:func:`eqlib.analysis.whitening`), which commutes with the mirror; the
            autoencoder then reconstructs the whitened image.
        zca_eps: ε added to the eigenvalues before whitening.
        augment_mirror, penalty_weight, penalty_start, penalty_ramp: as in :class:`Settings`.
        probes: isotropic-noise probes in the network's input space (half fit, half scored),
            and as many isotropic in the data subspace (per-pixel variance 1).
        subspace_k: principal directions kept for the filters "in the data subspace".

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    n_train: int = 4_000
    n_test: int = 1_000
    hidden: tuple[int, int, int] = (256, 128, 128)
    epochs: int = 4
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    first_weight_decay: float = 1e-4
    first_init_scale: float = 0.1
    whiten: str = "none"
    zca_eps: float = 0.1
    augment_mirror: bool = True
    penalty_weight: float = 1.0
    penalty_start: float = 0.5
    penalty_ramp: float = 0.2
    probes: int = 4_000
    subspace_k: int = 256


#: variant name → changes to :class:`SearchSettings` (the first is the chapter's setting)
SEARCH_VARIANTS: dict[str, dict[str, Any]] = {
    "chapter's setting (raw input, init ×0.1)": {},
    "raw, init ×0.01": {"first_init_scale": 0.01},
    "raw, first-layer decay 0.5": {"first_weight_decay": 0.5},
    "raw, penalty ×10": {"penalty_weight": 10.0},
    "ZCA": {"whiten": "zca"},
    "ZCA, init ×0.01": {"whiten": "zca", "first_init_scale": 0.01},
    "ZCA, first-layer decay 0.5": {"whiten": "zca", "first_weight_decay": 0.5},
    "ZCA, penalty ×10": {"whiten": "zca", "penalty_weight": 10.0},
    "ZCA, penalty ×10, 3× epochs": {"whiten": "zca", "penalty_weight": 10.0, "epochs": 12},
    "ZCA, no penalty": {"whiten": "zca", "penalty_weight": 0.0},
    "raw, init ×0.01, penalty ×10, 3× epochs": {"first_init_scale": 0.01, "penalty_weight": 10.0,
                                                "epochs": 12},
}


def _search_run(s: SearchSettings, X: torch.Tensor, Xt: torch.Tensor, P: torch.Tensor,
                seed: int) -> dict[str, Any]:
    """Train one Tanh autoencoder on rows of ``X`` (already in its input space) and measure it."""
    torch.manual_seed(seed)
    model = build_mlp("tanh", "autoencode", s.hidden, seed=seed, first_init_scale=s.first_init_scale)
    first = model.layers[0].weight
    rest = [q for q in model.parameters() if q is not first]
    opt = torch.optim.AdamW([{"params": [first], "weight_decay": s.first_weight_decay},
                             {"params": rest, "weight_decay": s.weight_decay}], lr=s.lr)
    gen = torch.Generator().manual_seed(seed)
    steps = s.epochs * math.ceil(len(X) / s.batch_size)
    step, t0, losses = 0, time.perf_counter(), []
    model.train()
    for _ in range(s.epochs):
        for idx in torch.randperm(len(X), generator=gen).split(s.batch_size):
            x = X[idx]
            if s.augment_mirror:
                flip = torch.rand(len(x), generator=gen) < 0.5
                x = torch.where(flip[:, None], mirror_images(x), x)
            fx = model(x)
            loss = ((fx - x) ** 2).mean()
            ramp = (step / steps - s.penalty_start) / max(s.penalty_ramp, 1e-9)
            weight = s.penalty_weight * min(1.0, max(0.0, ramp)) if step >= s.penalty_start * steps else 0.0
            total = loss
            if weight > 0:
                total = loss + weight * ((model(mirror_images(x)) - mirror_images(fx)) ** 2).mean()
            opt.zero_grad()
            total.backward()
            opt.step()
            losses.append(loss.item())
            step += 1
    seconds = time.perf_counter() - t0
    model.eval()
    W1 = model.layers[0].weight.detach()
    raw, sub = filter_pairing(W1), filter_pairing(W1, subspace=P)
    g = torch.Generator().manual_seed(seed + 1)
    errors = {}
    with torch.no_grad():
        z = torch.randn(s.probes, P.shape[1], generator=g) * math.sqrt(X.shape[1] / P.shape[1])
        probes = (("noise", torch.randn(s.probes, X.shape[1], generator=g)),
                  ("subspace_noise", z @ P.T), ("images", Xt))
        for probe, y in probes:
            feats = paired_latents(model, y, (1,), ("horizontal", "vertical"))
            for ax in ("horizontal", "vertical"):
                fit = fit_linear_action(feats[(1, None)], feats[(1, ax)], fit_fraction=0.5)
                errors[f"f1_{ax}_{probe}"] = fit.median_error
        rec = model(Xt)
        test_rel = float(((rec - Xt).norm(dim=1) / Xt.norm(dim=1).clamp_min(1e-12)).mean())
    categorised = lambda p: 64 - p.counts(64)["unmatched"]  # noqa: E731
    return {"seed": seed, "filters_first64": raw.counts(64), "categorised_first64": categorised(raw),
            "subspace_filters_first64": sub.counts(64), "subspace_categorised_first64": categorised(sub),
            "median_best_cos": float(np.median(raw.similarity)),
            "subspace_median_best_cos": float(np.median(sub.similarity)),
            **errors, "test_relative_error": test_rel, "final_task_loss": float(np.mean(losses[-20:])),
            "train_seconds": seconds}


def filter_search(train: CIFAR10, test: CIFAR10, variants: Mapping[str, Mapping[str, Any]] | None = None,
                  base: SearchSettings | None = None, seeds: Sequence[int] = (0,),
                  more_seeds: Sequence[int] = (1, 2), top: int = 3,
                  on_row: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """A small search for a protocol under which the Tanh autoencoder's first-layer filters
    show the signed-permutation picture (issue: the chapter's setting shows none).

    Every variant runs with ``seeds``; the ``top`` variants (by categorised filters among
    the first 64, then by f1's horizontal error on noise) and the first variant (the
    chapter's setting) run again with ``more_seeds``. Goal of a setting: at least 32 of
    the first 64 filters categorised (``|cos|`` ≥ 0.8) and f1's horizontal error on that
    setting's noise probes ≤ 0.1, on every seed (``meets_goal``); the same with filters
    and noise restricted to the top ``subspace_k`` principal directions of the images
    (``meets_goal_in_subspace``).

    Returns:
        ``{"base", "variants", "rows" (one per variant and seed), "summary" (per variant:
        seeds, min/mean/max of the main numbers, ``meets_goal``)}``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    base = base or SearchSettings()
    variants = dict(variants or SEARCH_VARIANTS)
    fields = {f.name for f in dataclasses.fields(SearchSettings)}
    for name, change in variants.items():
        bad = set(change) - fields
        if bad:
            raise ValueError(f"unknown search keys {sorted(bad)} in variant {name!r}")
    tr = subset(train, base.n_train, seed=0) if base.n_train < len(train) else train
    te = subset(test, base.n_test, seed=1) if base.n_test < len(test) else test
    X0 = prepare_images(tr.images).flatten(1)
    Xt0 = prepare_images(te.images).flatten(1)
    evals, evecs = mirror_symmetric_spectrum(tr.images)
    P = evecs[:, -base.subspace_k:]
    inputs: dict[tuple[str, float], tuple[torch.Tensor, torch.Tensor]] = {}

    def data_for(s: SearchSettings):
        key = (s.whiten, s.zca_eps)
        if key not in inputs:
            if s.whiten == "none":
                inputs[key] = (X0, Xt0)
            else:
                Z = whitening(evals, evecs, s.whiten, s.zca_eps)
                inputs[key] = (X0 @ Z, Xt0 @ Z)
        return inputs[key]

    rows = []

    def run_one(name, seed):
        s = dataclasses.replace(base, **variants[name])
        X, Xt = data_for(s)
        row = {"variant": name, **_search_run(s, X, Xt, P, seed)}
        rows.append(row)
        if on_row is not None:
            on_row(row)

    for name in variants:
        for seed in seeds:
            run_one(name, seed)
    ranked = sorted(variants, key=lambda v: (-np.mean([r["categorised_first64"] for r in rows if r["variant"] == v]),
                                             np.mean([r["f1_horizontal_noise"] for r in rows if r["variant"] == v])))
    again = list(dict.fromkeys([next(iter(variants)), *ranked[:top]]))
    for name in again:
        for seed in more_seeds:
            run_one(name, seed)
    summary = {}
    for name in variants:
        rs = [r for r in rows if r["variant"] == name]
        stat = lambda key: {"min": float(min(r[key] for r in rs)),  # noqa: E731
                            "mean": float(np.mean([r[key] for r in rs])), "max": float(max(r[key] for r in rs))}
        summary[name] = {"seeds": [r["seed"] for r in rs],
                         **{k: stat(k) for k in ("categorised_first64", "subspace_categorised_first64",
                                                 "f1_horizontal_noise", "f1_vertical_noise",
                                                 "f1_horizontal_images", "f1_vertical_images",
                                                 "f1_horizontal_subspace_noise",
                                                 "test_relative_error", "median_best_cos")},
                         "meets_goal": len(rs) >= 3 and all(r["categorised_first64"] >= 32
                                                            and r["f1_horizontal_noise"] <= 0.1 for r in rs),
                         "meets_goal_in_subspace": len(rs) >= 3 and all(
                             r["subspace_categorised_first64"] >= 32
                             and r["f1_horizontal_subspace_noise"] <= 0.1 for r in rs)}
    return {"base": protocol.settings_dict(base), "variants": {k: dict(v) for k, v in variants.items()},
            "rows": rows, "summary": summary}


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
        protocol.write_json(out / f"cifar_mlp_{s.name}.json", summary)
    return summary


def seed_spread(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean, standard deviation, min and max over seeds of the numbers the chapter quotes:
    every ``networks`` number (filter counts included) and every ``table`` row's
    ``median_error`` (keyed ``network|f<layers>|mirror|probe``).

    Raises:
        ValueError: for fewer than one summary, or summaries from different settings.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not summaries:
        raise ValueError("seed_spread needs at least one run summary")
    if any(s["settings"] != summaries[0]["settings"] for s in summaries):
        raise ValueError("the runs have different settings; spread over seeds only")

    def stats(values: list[float]) -> dict[str, float]:
        v = np.asarray(values, dtype=float)
        return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
                "min": float(v.min()), "max": float(v.max()), "n": len(v)}

    out: dict[str, Any] = {"networks": {}, "table": {}}
    for name in summaries[0]["networks"]:
        nets = [s["networks"][name] for s in summaries]
        entry = {}
        for key, value in nets[0].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                entry[key] = stats([n[key] for n in nets])
            elif isinstance(value, dict):
                entry[key] = {c: stats([n[key][c] for n in nets]) for c in value}
        out["networks"][name] = entry
    if all("table" in s for s in summaries):
        for r in summaries[0]["table"]:
            key = f"{r['network']}|f{r['layers']}|{r['mirror']}|{r['probe']}"
            out["table"][key] = stats([table_lookup(s["table"], r["network"], r["layers"],
                                                    r["mirror"], r["probe"]) for s in summaries])
    return out


def run_seeds(seeds: Sequence[int], budget: str | None = None, out: str | Path | None = None,
              **kwargs: Any) -> dict[str, Any]:
    """:func:`run` once per seed (each seed its own data subset and initialisation), then
    :func:`seed_spread`; written to ``out/cifar_mlp_<budget>_seeds.json`` when ``out`` is
    given (figures of the first seed only). ``kwargs`` go to :func:`run`.

    Returns:
        ``{"settings", "seeds", "runs": [summary per seed], "spread"}``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"seeds must be distinct integers ≥ 0, got {seeds}")
    if out is not None:
        out = writable_folder(out)
    runs = [run(budget, out=out if k == 0 else None, seed=seed, **kwargs)
            for k, seed in enumerate(seeds)]
    record = {"settings": runs[0]["settings"], "seeds": seeds, "runs": runs,
              "spread": seed_spread(runs), "networks": runs[0]["networks"]}
    if out is not None:
        protocol.write_json(out / f"cifar_mlp_{runs[0]['settings']['name']}_seeds.json", record)
    return record


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line (:func:`eqlib.experiments.protocol.build_parser`, the flags every
    experiment shares): ``python -m eqlib.experiments.cifar_mlp --budget laptop --out results/``;
    ``--seeds 0,1,2`` runs each seed and writes ``cifar_mlp_<budget>_seeds.json``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    p = protocol.build_parser(
        "python -m eqlib.experiments.cifar_mlp",
        "The CIFAR-10 MLP experiment of [SMBK26]: filters, linear-equivariance table, "
        "ablation, emergence, attention heads; --parts search: the filter-protocol search.",
        parts=PARTS, default_parts=DEFAULT_PARTS)
    args = protocol.parse_args(p, argv, BUDGETS)

    def print_row(row: dict[str, Any]) -> None:  # ablation rows as they finish
        print("ablation:", json.dumps({k: v for k, v in row.items() if k != "changes"},
                                      default=float), flush=True)

    if "search" in args.parts:
        tr, te = load_data(settings("full"), args.data, download=args.download)
        found = filter_search(tr, te, seeds=args.seeds[:1], more_seeds=args.seeds[1:] or (1, 2),
                              on_row=lambda row: print("search:", json.dumps(row), flush=True))
        found["command"] = "python -m eqlib.experiments.cifar_mlp " + " ".join(
            sys.argv[1:] if argv is None else argv)
        protocol.write_json(args.out / "cifar_mlp_search.json", found)
        print(f"wrote {args.out / 'cifar_mlp_search.json'}")
        args.parts = tuple(x for x in args.parts if x != "search")
        if not args.parts:
            return found
    common = dict(device=args.device, root=args.data, progress=args.progress, parts=args.parts,
                  overrides=args.overrides, on_ablation_row=print_row, download=args.download)
    if len(args.seeds) > 1:
        record = run_seeds(args.seeds, args.budget, args.out, **common)
        print(json.dumps(record["spread"]["networks"], indent=1, default=float))
        print(f"wrote {args.out / ('cifar_mlp_' + args.budget + '_seeds.json')}")
        return record
    summary = run(args.budget, out=args.out, seed=args.seed, **common)
    print(json.dumps({k: summary[k] for k in ("networks", "seconds", "part_seconds")}, indent=1,
                     default=float))
    print(f"wrote {args.out / ('cifar_mlp_' + summary['settings']['name'] + '.json')}")
    return summary


if __name__ == "__main__":
    main()
