"""The CIFAR-10 MLP experiment of Shahverdi, Marchetti, Bökman & Kohn (ICML 2026), at two budgets.

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
``cifar_mlp_<budget>_seed<N>.json``; with ``--seeds 0,1,2`` one per seed and
``cifar_mlp_<budget>_seeds.json``; ``--help`` gives the measured run times)::

    python -m eqlib.experiments.cifar_mlp --budget full --device cuda --out results/

Budgets (:data:`BUDGET_SETTINGS`): ``laptop`` (the default) trains small networks on a 4,000-image subset
for a few epochs (minutes on 2 CPU cores); ``full`` trains widths 512/256/256 on all
50,000 images for 15 epochs and probes with 100,000 noise samples (the whole chapter
sized for about 30 minutes on 2 CPU cores, not measured; minutes on a GPU).
``--set KEY=VALUE`` changes any :class:`Settings` field, e.g. ``--set epochs=60`` or a
larger ablation.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..analysis import (AXES, CATEGORIES, NETWORKS, PAPER_TABLE, PROBES, FilterPairing,
                        ablation_html, ablation_text, end_to_end_error, equivariance_table,
                        filter_pairing, input_spectrum, mirror_symmetric_spectrum,
                        paired_latents, probe_inputs, table_html, table_lookup, table_text,
                        whitening)
from ..data import CIFAR10, load_cifar10, subset
from ..device import default_device
from ..images import mirror as mirror_action
from ..images import mirror_images, patchify, prepare_images, unpatchify
from ..latent import fit_linear_action, linear_equivariance_error
from ..latent.attention import patch_mirror_action, recover_attention_action
from ..models import MLP, AttentionNetwork
from ..train import TrainConfig, TrainResult, cached_train
from . import protocol, writable_folder

__all__ = [
    "Settings", "BUDGETS", "BUDGET_SETTINGS", "settings", "parse_setting", "PARTS", "build_mlp",
    "train_config", "load_data", "train_networks", "ablation", "ABLATION_VARIANTS", "load_results",
    "emergence", "PatchAttentionAutoencoder", "attention_experiment", "run", "run_seeds",
    "seed_spread", "SearchSettings", "SEARCH_VARIANTS", "SEARCH_KEYS", "filter_search",
    "search_summary", "search_figures", "search_html", "load_search", "main",
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
    """The cache-key description of a training set: every pixel's and every label's bytes
    (:func:`eqlib.io.content_hash`), its size and split. ``s_n`` is the number of images the
    settings ask for; more than the split holds is an error (it used to train on fewer and
    record the number asked for)."""
    from ..io import content_hash  # (kept inside: this function is the one place that hashes data here)

    if int(s_n) > len(data):
        raise ValueError(f"n_train={s_n} asks for more images than the {data.split} split holds ({len(data)}); "
                         f"set n_train <= {len(data)}")
    return {"dataset": "cifar10", "split": data.split, "n": len(data), "subset_seed": seed,
            "images": content_hash(data.images), "labels": content_hash(data.labels)}


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

#: noise probes the ablation scores f_1 on (at most; the table's budget may use more)
ABLATION_PROBES = 10_000
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
    n_probe = probe_samples or min(s.noise_samples, ABLATION_PROBES)
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
    """The scale and protocol of one run of :func:`filter_search` (a Tanh autoencoder of
    the chapter's architecture; about a minute on 2 CPU cores at the defaults). Each
    variant of :data:`SEARCH_VARIANTS` changes some of these fields.

    Attributes:
        n_train, n_test: images (stratified subsets).
        hidden, epochs, batch_size, lr: the Tanh autoencoder and its training (AdamW).
        schedule: ``"cosine"`` (5 % linear warm-up, then cosine decay to 0, so the run
            ends converged at its learning rate) or ``"constant"``.
        weight_decay: decoupled weight decay on every parameter but the first layer's weight.
        first_weight_decay: decoupled weight decay on the first layer's weight only.
        first_init_scale: multiplies the first layer's initial weights.
        whiten: ``"none"`` (the networks' usual normalised input) or ``"zca"``: inputs
            x Z with the ZCA whitening of the mirror-symmetrised covariance
            (:func:`eqlib.analysis.whitening`), which commutes with the mirror; the
            autoencoder then reconstructs the whitened image.
        zca_eps: ε added to the eigenvalues before whitening.
        augment_mirror, penalty_weight, penalty_start, penalty_ramp: as in :class:`Settings`
            (the penalty ‖f(m x) − m f(x)‖² on the training images, a mean over coordinates).
        noise_penalty: weight of the same penalty on isotropic Gaussian inputs
            y ~ N(0, noise_std² I) in the network's input space, with the same ramp (0:
            the paper's protocol, which penalises on images only).
        noise_std: the standard deviation of those inputs.
        first_norm: 0 (off), or the norm every first-layer filter is rescaled to after each
            step (a projected gradient step). On unit isotropic noise a filter of norm c
            gives pre-activations of standard deviation c, so c ≳ 1 keeps Tanh out of its
            linear regime, which the autoencoder otherwise settles in.
        probes: isotropic-noise probes in the network's input space (half fit, half scored),
            and as many isotropic in the data subspace (per-pixel variance 1).
        subspace_k: principal directions kept for the filters "in the data subspace".

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """

    n_train: int = 10_000
    n_test: int = 2_000
    hidden: tuple[int, int, int] = (256, 128, 128)
    epochs: int = 15
    batch_size: int = 128
    lr: float = 1e-3
    schedule: str = "cosine"
    weight_decay: float = 1e-4
    first_weight_decay: float = 1e-4
    first_init_scale: float = 0.1
    whiten: str = "none"
    zca_eps: float = 0.1
    augment_mirror: bool = True
    penalty_weight: float = 1.0
    penalty_start: float = 0.5
    penalty_ramp: float = 0.2
    noise_penalty: float = 0.0
    noise_std: float = 1.0
    first_norm: float = 0.0
    probes: int = 4_000
    subspace_k: int = 256

    def __post_init__(self):
        for name in ("n_train", "n_test", "epochs", "batch_size", "probes", "subspace_k"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if len(self.hidden) != 3 or min(self.hidden) < 1:
            raise ValueError(f"hidden must be three positive widths, got {self.hidden!r}")
        if self.subspace_k > 3072:
            raise ValueError(f"subspace_k must be at most 3072, got {self.subspace_k}")
        for name in ("lr", "noise_std", "first_init_scale", "zca_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("weight_decay", "first_weight_decay", "penalty_weight", "noise_penalty",
                     "penalty_ramp", "first_norm"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be ≥ 0, got {getattr(self, name)!r}")
        if not 0 <= self.penalty_start <= 1:
            raise ValueError(f"penalty_start is a fraction of training in [0, 1], "
                             f"got {self.penalty_start!r}")
        if self.schedule not in ("cosine", "constant"):
            raise ValueError(f"schedule must be 'cosine' or 'constant', got {self.schedule!r}")
        if self.whiten not in ("none", "zca"):
            raise ValueError(f"whiten must be 'none' or 'zca', got {self.whiten!r}")


#: variant name → changes to :class:`SearchSettings` (the first is the chapter's protocol)
SEARCH_VARIANTS: dict[str, dict[str, Any]] = {
    "chapter's protocol": {},
    "init ×1": {"first_init_scale": 1.0},
    "init ×3": {"first_init_scale": 3.0},
    "noise penalty": {"noise_penalty": 1.0},
    "init ×1, noise penalty": {"first_init_scale": 1.0, "noise_penalty": 1.0},
    "init ×3, noise penalty": {"first_init_scale": 3.0, "noise_penalty": 1.0},
    "first-layer decay 5": {"first_weight_decay": 5.0},
    "ZCA input": {"whiten": "zca"},
    "init ×1, both penalties ×10": {"first_init_scale": 1.0, "penalty_weight": 10.0,
                                    "noise_penalty": 10.0},
    "init ×1, noise penalty from the start": {"first_init_scale": 1.0, "noise_penalty": 1.0,
                                              "penalty_start": 0.0, "penalty_ramp": 0.1},
    "filters of norm 1": {"first_norm": 1.0},
    "filters of norm 3": {"first_norm": 3.0},
    "filters of norm 1, both penalties ×10": {"first_norm": 1.0, "penalty_weight": 10.0,
                                              "noise_penalty": 10.0},
    "filters of norm 1, both penalties ×10 from the start": {
        "first_norm": 1.0, "penalty_weight": 10.0, "noise_penalty": 10.0, "penalty_start": 0.0,
        "penalty_ramp": 0.1},
    "first-layer decay 5, penalty ×10": {"first_weight_decay": 5.0, "penalty_weight": 10.0},
    "first-layer decay 5, penalty ×100": {"first_weight_decay": 5.0, "penalty_weight": 100.0},
    "first-layer decay 5, both penalties ×10": {"first_weight_decay": 5.0, "penalty_weight": 10.0,
                                                "noise_penalty": 10.0},
    "first-layer decay 50, penalty ×100": {"first_weight_decay": 50.0, "penalty_weight": 100.0},
    "first-layer decay 5, penalty ×1000": {"first_weight_decay": 5.0, "penalty_weight": 1000.0},
    "first-layer decay 5, both penalties ×100": {"first_weight_decay": 5.0,
                                                 "penalty_weight": 100.0, "noise_penalty": 100.0},
    "first-layer decay 50, penalty ×30": {"first_weight_decay": 50.0, "penalty_weight": 30.0},
    "first-layer decay 50, penalty ×100 from the start": {
        "first_weight_decay": 50.0, "penalty_weight": 100.0, "penalty_start": 0.0,
        "penalty_ramp": 0.1},
    "first-layer decay 50, both penalties ×100": {
        "first_weight_decay": 50.0, "penalty_weight": 100.0, "noise_penalty": 100.0},
    "first-layer decay 5, penalty ×100 from the start": {
        "first_weight_decay": 5.0, "penalty_weight": 100.0, "penalty_start": 0.0,
        "penalty_ramp": 0.1},
    "first-layer decay 20, both penalties ×100": {
        "first_weight_decay": 20.0, "penalty_weight": 100.0, "noise_penalty": 100.0},
    "first-layer decay 30, both penalties ×100": {
        "first_weight_decay": 30.0, "penalty_weight": 100.0, "noise_penalty": 100.0},
}

#: the numbers :func:`filter_search` summarises over seeds (min / mean / max)
SEARCH_KEYS = ("categorised_first64", "symmetric_first64", "pairs_first64",
               "control_categorised_first64", "filter_similarity",
               "subspace_categorised_first64", "f1_horizontal_noise",
               "f1_vertical_noise", "f1_horizontal_subspace_noise", "f1_horizontal_images",
               "f1_vertical_images", "median_best_cos", "subspace_median_best_cos",
               "offdata_energy", "preact_std_noise", "preact_std_images", "end_to_end",
               "test_relative_error", "train_seconds")


def _lr_factor(schedule: str, step: int, steps: int) -> float:
    if schedule == "constant":
        return 1.0
    warm = max(1, steps // 20)
    if step < warm:
        return (step + 1) / warm
    return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm)))


def _filter_similarity(W1: torch.Tensor) -> float:
    """Median ``|cos|`` between two distinct filters: near 1 when the first layer has
    collapsed onto a few directions, so that every filter matches some other one and the
    categories say little."""
    U = W1 / W1.norm(dim=1, keepdim=True).clamp_min(1e-12)
    C = (U @ U.T).abs()
    return float(C[~torch.eye(len(C), dtype=torch.bool)].median())


def _search_run(s: SearchSettings, X: torch.Tensor, Xt: torch.Tensor, P: torch.Tensor,
                seed: int) -> tuple[dict[str, Any], nn.Module]:
    """Train one Tanh autoencoder on rows of ``X`` (already in its input space), measure it;
    return (row, model). Every draw comes from the seeded generators below (and ``build_mlp``'s
    own): the global generators are left alone."""
    model = build_mlp("tanh", "autoencode", s.hidden, seed=seed, first_init_scale=s.first_init_scale)
    first = model.layers[0].weight
    if s.first_norm > 0:
        with torch.no_grad():
            first.mul_(s.first_norm / first.norm(dim=1, keepdim=True).clamp_min(1e-12))
    rest = [q for q in model.parameters() if q is not first]
    opt = torch.optim.AdamW([{"params": [first], "weight_decay": s.first_weight_decay},
                             {"params": rest, "weight_decay": s.weight_decay}], lr=s.lr)
    gen = torch.Generator().manual_seed(seed)
    steps = s.epochs * math.ceil(len(X) / s.batch_size)
    step, t0, losses = 0, time.perf_counter(), []
    model.train()
    for _ in range(s.epochs):
        for idx in torch.randperm(len(X), generator=gen).split(s.batch_size):
            for group in opt.param_groups:
                group["lr"] = s.lr * _lr_factor(s.schedule, step, steps)
            x = X[idx]
            if s.augment_mirror:
                flip = torch.rand(len(x), generator=gen) < 0.5
                x = torch.where(flip[:, None], mirror_images(x), x)
            ramp = (step / steps - s.penalty_start) / max(s.penalty_ramp, 1e-9)
            on = min(1.0, max(0.0, ramp)) if step >= s.penalty_start * steps else 0.0
            if on > 0 and s.noise_penalty > 0:
                y = torch.randn(len(x), X.shape[1], generator=gen) * s.noise_std
                inputs = torch.cat([x, y])
            else:
                inputs = x
            if on > 0 and (s.penalty_weight > 0 or s.noise_penalty > 0):
                out = model(torch.cat([inputs, mirror_images(inputs)]))
                f, fm = out.chunk(2)
                gap = ((fm - mirror_images(f)) ** 2).mean(1)
                penalty = s.penalty_weight * gap[:len(x)].mean()
                if len(inputs) > len(x):
                    penalty = penalty + s.noise_penalty * gap[len(x):].mean()
                fx = f[:len(x)]
            else:
                fx, penalty = model(x), 0.0
            loss = ((fx - x) ** 2).mean()
            opt.zero_grad()
            (loss + on * penalty).backward()
            opt.step()
            if s.first_norm > 0:
                with torch.no_grad():
                    first.mul_(s.first_norm / first.norm(dim=1, keepdim=True).clamp_min(1e-12))
            losses.append(loss.item())
            step += 1
    seconds = time.perf_counter() - t0
    model.eval()
    W1 = model.layers[0].weight.detach().clone()
    raw, sub = filter_pairing(W1), filter_pairing(W1, subspace=P)
    g = torch.Generator().manual_seed(seed + 1)
    errors = {}
    with torch.no_grad():
        z = torch.randn(s.probes, P.shape[1], generator=g) * math.sqrt(X.shape[1] / P.shape[1])
        noise = torch.randn(s.probes, X.shape[1], generator=g)
        for probe, y in (("noise", noise), ("subspace_noise", z @ P.T), ("images", Xt)):
            feats = paired_latents(model, y, (1,), ("horizontal", "vertical"))
            for ax in ("horizontal", "vertical"):
                fit = fit_linear_action(feats[(1, None)], feats[(1, ax)], fit_fraction=0.5)
                errors[f"f1_{ax}_{probe}"] = fit.median_error
        # spread of each unit's pre-activation w_j·x over the test images (bias aside);
        # on unit isotropic noise it is the filter's norm
        spread_images = float((Xt @ W1.T).std(0).median())
        rec = model(Xt)
        test_rel = float(((rec - Xt).norm(dim=1) / Xt.norm(dim=1).clamp_min(1e-12)).mean())
        gap = (model(mirror_images(Xt)) - mirror_images(rec)).norm(dim=1)
        end_to_end = float((gap / rec.norm(dim=1).clamp_min(1e-12)).mean())
        offdata = float(1 - (W1 @ P).pow(2).sum() / W1.pow(2).sum())
    categorised = lambda p: sum(v for k, v in p.counts(64).items() if k != "unmatched")  # noqa: E731
    counts = raw.counts(64)
    row = {"seed": seed, "filters_first64": counts, "categorised_first64": categorised(raw),
           "symmetric_first64": counts["symmetric"],
           "pairs_first64": counts["mirrored pair"] + counts["negated mirrored pair"],
           "control_categorised_first64": categorised(filter_pairing(W1, "vertical")),
           "filter_similarity": _filter_similarity(W1),
           "subspace_filters_first64": sub.counts(64), "subspace_categorised_first64": categorised(sub),
           "median_best_cos": float(np.median(raw.similarity)),
           "subspace_median_best_cos": float(np.median(sub.similarity)),
           **errors, "offdata_energy": offdata,
           "preact_std_noise": float(W1.norm(dim=1).median()), "preact_std_images": spread_images,
           "end_to_end": end_to_end,
           "test_relative_error": test_rel, "final_task_loss": float(np.mean(losses[-20:])),
           "train_seconds": seconds}
    return row, model


def search_summary(rows: Sequence[Mapping[str, Any]], min_seeds: int = 3) -> dict[str, Any]:
    """Per variant of the ``rows`` of :func:`filter_search`: its seeds, min / mean / max of
    every number in :data:`SEARCH_KEYS`, and whether the goal is met on every seed (at
    least ``min_seeds`` of them): ``meets_goal`` (≥ 32 of the first 64 filters in a
    signed-permutation category at ``|cos|`` ≥ 0.8 and f1's horizontal error on isotropic
    noise ≤ 0.1) and ``meets_goal_in_subspace`` (the same for the filters projected on
    the data subspace and noise in that subspace).

    Raises:
        ValueError: for no rows, a row without ``variant`` / ``seed`` or a number, or
            ``min_seeds`` < 1.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    if not rows:
        raise ValueError("search_summary needs at least one row")
    if not isinstance(min_seeds, int) or min_seeds < 1:
        raise ValueError(f"min_seeds must be a positive integer, got {min_seeds!r}")
    for r in rows:
        missing = [k for k in ("variant", "seed", *SEARCH_KEYS) if k not in r]
        if missing:
            raise ValueError(f"row {dict(r).get('variant')!r} lacks {missing}")
    summary = {}
    for name in dict.fromkeys(r["variant"] for r in rows):
        rs = [r for r in rows if r["variant"] == name]
        stat = lambda key: {"min": float(min(r[key] for r in rs)),  # noqa: E731
                            "mean": float(np.mean([r[key] for r in rs])),
                            "max": float(max(r[key] for r in rs))}
        summary[name] = {
            "seeds": [int(r["seed"]) for r in rs], **{k: stat(k) for k in SEARCH_KEYS},
            "meets_goal": len(rs) >= min_seeds and all(
                r["categorised_first64"] >= 32 and r["f1_horizontal_noise"] <= 0.1 for r in rs),
            "meets_goal_in_subspace": len(rs) >= min_seeds and all(
                r["subspace_categorised_first64"] >= 32
                and r["f1_horizontal_subspace_noise"] <= 0.1 for r in rs)}
    return summary


def filter_search(train: CIFAR10, test: CIFAR10, variants: Mapping[str, Mapping[str, Any]] | None = None,
                  base: SearchSettings | None = None, seeds: Sequence[int] = (0,),
                  more_seeds: Sequence[int] = (1, 2), top: int = 3,
                  on_row: Callable[[dict[str, Any]], None] | None = None,
                  weights: dict[tuple[str, int], torch.Tensor] | None = None) -> dict[str, Any]:
    """A search for a protocol under which the Tanh autoencoder's first-layer filters show
    the signed-permutation picture of Shahverdi et al. (2026) (the chapter's protocol shows none).

    Every variant runs with ``seeds``; the ``top`` variants (by categorised filters among
    the first 64, then by f1's horizontal error on noise) and the first variant (the
    chapter's protocol) run again with ``more_seeds``. Each row holds the filter
    categories (raw and projected on the top ``subspace_k`` principal directions of the
    mirror-symmetrised images), f1's linear-equivariance errors (isotropic noise, noise in
    the data subspace, test images; horizontal and vertical mirror), the share of W_1's
    energy outside the data subspace, the median spread of the first-layer pre-activations
    on isotropic noise (the filters' norm) and over the test images, the end-to-end equivariance error and the reconstruction error. The
    goal is judged by :func:`search_summary`. ``weights``, when a dict, receives each
    run's W_1 under ``(variant, seed)``.

    Returns:
        ``{"base", "variants", "rows" (one per variant and seed), "summary"}``.

    Raises:
        ValueError: for an unknown key in a variant, no or repeated seeds, or ``top`` < 0.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    base = base or SearchSettings()
    if not isinstance(base, SearchSettings):
        raise TypeError(f"base must be a SearchSettings, got {type(base).__name__}")
    variants = dict(SEARCH_VARIANTS if variants is None else variants)
    if not variants:
        raise ValueError("variants must name at least one variant")
    fields = {f.name for f in dataclasses.fields(SearchSettings)}
    for name, change in variants.items():
        bad = set(change) - fields
        if bad:
            raise ValueError(f"unknown search keys {sorted(bad)} in variant {name!r}")
    seeds, more_seeds = [int(x) for x in seeds], [int(x) for x in more_seeds]
    if not seeds or len(set(seeds + more_seeds)) != len(seeds) + len(more_seeds):
        raise ValueError(f"seeds must be distinct and non-empty, got {seeds} and {more_seeds}")
    if not isinstance(top, int) or top < 0:
        raise ValueError(f"top must be an integer ≥ 0, got {top!r}")
    settings_of = {name: dataclasses.replace(base, **change) for name, change in variants.items()}
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
        s = settings_of[name]
        X, Xt = data_for(s)
        row, model = _search_run(s, X, Xt, P, seed)
        rows.append({"variant": name, **row})
        if weights is not None:
            weights[(name, seed)] = model.layers[0].weight.detach().clone()
        if on_row is not None:
            on_row(rows[-1])

    for name in variants:
        for seed in seeds:
            run_one(name, seed)

    def score(v):
        rs = [r for r in rows if r["variant"] == v]
        return (-np.mean([r["categorised_first64"] for r in rs]),
                np.mean([r["f1_horizontal_noise"] for r in rs]))

    again = list(dict.fromkeys([next(iter(variants)), *sorted(variants, key=score)[:top]]))
    for name in again:
        for seed in more_seeds:
            run_one(name, seed)
    return {"base": protocol.settings_dict(base), "variants": {k: dict(v) for k, v in variants.items()},
            "rows": rows, "summary": search_summary(rows, min_seeds=len(seeds) + len(more_seeds))}


def load_search(path: str | Path) -> dict[str, Any]:
    """A record written by :func:`filter_search` through the command line
    (``--parts search``), checked for the keys the chapter reads
    (:func:`eqlib.experiments.protocol.load_json`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not JSON, or lacks ``base`` / ``variants`` / ``rows`` /
            ``summary``.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    return protocol.load_json(path, required=("base", "variants", "rows", "summary"))


def search_html(record: Mapping[str, Any]) -> str:
    """The settings and outcomes of a :func:`filter_search` record as an HTML table: per
    variant, its seeds and the min–max over seeds (one value for one seed) of the filters
    in a signed-permutation category among the first 64 (all, symmetric, in pairs, after
    projection on the data subspace, and for the vertical mirror as a control), the
    median ``|cos|`` between two filters (near 1: the categories say little), f1's
    linear-equivariance error on isotropic noise (horizontal and vertical), on noise in
    the data subspace and on test images (horizontal and vertical), the end-to-end
    error, W_1's energy outside the data subspace, the pre-activation spread on images and
    the reconstruction error.

    Raises:
        ValueError: a record without ``summary``.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    from ..analysis import html_table
    if "summary" not in record:
        raise ValueError("record must be a filter_search record with a 'summary'")
    columns = (("categorised_first64", "filters in a category", 0),
               ("symmetric_first64", "symmetric", 0), ("pairs_first64", "in pairs", 0),
               ("subspace_categorised_first64", "in the data subspace", 0),
               ("control_categorised_first64", "control mirror", 0),
               ("filter_similarity", "filter similarity", 2),
               ("f1_horizontal_noise", "f1 noise", 2),
               ("f1_vertical_noise", "f1 noise, control", 2),
               ("f1_horizontal_subspace_noise", "f1 subspace noise", 2),
               ("f1_horizontal_images", "f1 images", 2),
               ("f1_vertical_images", "f1 images, control", 2),
               ("end_to_end", "end-to-end", 2),
               ("offdata_energy", "W1 energy off data", 2),
               ("preact_std_images", "pre-act. spread", 1),
               ("test_relative_error", "reconstr. error", 2))

    def span(stat, digits):
        lo, hi = f"{stat['min']:.{digits}f}", f"{stat['max']:.{digits}f}"
        return lo if lo == hi else f"{lo}–{hi}"

    body = [[name, ",".join(map(str, s["seeds"])),
             *(span(s[key], digits) for key, _, digits in columns)]
            for name, s in record["summary"].items()]
    return html_table(["setting", "seeds", *(label for _, label, _ in columns)], body,
                      align_right_from=1)


def search_figures(weights: Mapping[tuple[str, int], torch.Tensor], names: Sequence[str],
                   seed: int = 0) -> dict[str, Any]:
    """The first 64 first-layer filters of each variant in ``names`` on ``seed``, framed by
    mirror category (:func:`eqlib.plots.filters.plot_filters`), from the ``weights`` that
    :func:`filter_search` filled in.

    Raises:
        KeyError: a (name, seed) without weights.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    from ..plots.filters import plot_filters
    figs = {}
    for name in names:
        if (name, seed) not in weights:
            raise KeyError(f"no weights for variant {name!r} on seed {seed}")
        W1 = weights[(name, seed)]
        figs[name] = plot_filters(W1, filter_pairing(W1), title=f"{name} (seed {seed})")
    return figs


# --------------------------------------------------------------------------- everything

def _accuracy(result: TrainResult) -> float | None:
    acc = [a for a in result.history.get("test_accuracy", []) if a == a]
    return acc[-1] if acc else None


def output_names(budget: str, seed: int, parts: Sequence[str] = PARTS,
                 ablation_networks: Sequence[str] = ("tanh-autoencoder",)) -> dict[str, str]:
    """The files a single-seed :func:`run` writes: ``{"json": name, <figure key>: name}``,
    each carrying the budget and the seed (``cifar_mlp_<budget>_seed<seed>.json``,
    ``cifar_mlp_<budget>_seed<seed>_<figure>.png``), so runs with different seeds never
    overwrite each other.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    keys = []
    if "filters" in parts:
        keys += [f"filters_{name}" for name in NETWORKS]
    if "table" in parts:
        keys.append("table")
    if "ablation" in parts:
        keys += (["ablation"] if len(ablation_networks) == 1
                 else [f"ablation_{net}" for net in ablation_networks])
    keys += [k for k in ("emergence", "attention") if k in parts]
    names = {"json": protocol.output_name("cifar_mlp", budget, seed)}
    names.update({k: protocol.output_name("cifar_mlp", budget, seed, f"_{k}.png") for k in keys})
    return names


def _measure(s: Settings, root: str | None, seed: int, device: str | None, progress: bool,
             parts: Sequence[str], on_ablation_row, download: bool | None, t_start: float
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The experiment itself: ``(summary, figures)`` (figures keyed as in ``output_names``)."""
    from ..plots.filters import plot_attention_heads, plot_filters
    from ..plots.training import plot_ablation, plot_emergence, plot_error_table

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
            figures[f"filters_{name}"] = plot_filters(
                r.model.layers[0].weight, pairing,
                title=f"{name}: first 64 first-layer filters by mirror category (seed {seed})")
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
    return summary, figures


def run(budget: str | None = None, device: str | None = None, out: str | Path | None = None, seed: int = 0,
        root: str | None = None, progress: bool = True, parts: Sequence[str] = PARTS,
        overrides: Mapping[str, Any] | None = None,
        on_ablation_row: Callable[[dict[str, Any]], None] | None = None,
        download: bool | None = None) -> dict[str, Any]:
    """Run the whole experiment; return every number (and write figures + JSON to ``out``).

    ``overrides`` change :class:`Settings` fields of the budget (recorded in the JSON).
    Only ``parts`` are run; the four networks are always trained (or loaded from the cache).
    ``out`` is checked before any work: a writable folder, in which no output name
    (``output_names``: they carry the budget and the seed) is taken by a folder
    (ValueError otherwise). The outputs are written to a temporary folder beside ``out``
    and moved in at once (:func:`eqlib.experiments.protocol.write_outputs`); when that
    fails, :class:`~eqlib.experiments.protocol.OutputsKept` names where they are kept
    (its ``record`` is the returned dict). ``download`` is passed to :func:`load_data`.

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
    import matplotlib.pyplot as plt

    t_start = time.perf_counter()
    unknown_parts = set(parts) - set(PARTS)
    if unknown_parts:
        raise ValueError(f"unknown parts {sorted(unknown_parts)}; choose from {list(PARTS)}")
    s = settings(budget, **dict(overrides or {}))
    names = output_names(s.name, seed, parts, s.ablation_networks)
    if out is not None:
        out = writable_folder(out)
        protocol.check_targets(out, names.values())
    summary, figures = _measure(s, root, seed, device, progress, parts, on_ablation_row, download, t_start)
    if out is None:
        for fig in figures.values():
            plt.close(fig)
        return summary
    try:
        protocol.write_outputs(out, names["json"], summary,
                               {names[k]: fig for k, fig in figures.items() if k in names})
    except protocol.OutputsKept as exc:
        exc.record = summary
        raise
    return summary


def summary_text(record: Mapping[str, Any]) -> str:
    """The few lines a run prints at the end, for people: one row per network (test
    accuracy or loss, end-to-end mirror errors, first-layer filters in mirror pairs, the
    layer-1 linear-equivariance error), then the time. Takes a :func:`run` summary or a
    :func:`run_seeds` record (then mean ± standard deviation over the seeds).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    runs = record.get("runs") or [record]
    seeds = [r.get("seed") for r in runs]

    def cell(values: list, digits: int = 3, scale: float = 1.0) -> str:
        v = [x * scale for x in values if isinstance(x, (int, float)) and not isinstance(x, bool) and x == x]
        if len(v) < len(values) or not v:
            return "–"  # missing, or not a number (NaN) on some seed
        if len(v) == 1:
            return f"{v[0]:.{digits}f}"
        return f"{np.mean(v):.{digits}f} ± {np.std(v, ddof=1):.{digits}f}"

    def f1(r, net, mirror):
        rows = [t for t in r.get("table", ()) if t["network"] == net and t["layers"] == 1
                and t["mirror"] == mirror and t["probe"] == "noise"]
        return rows[0]["median_error"] if rows else None

    header = ["network", "test accuracy (%)", "test loss", "end-to-end error: horiz. / vert.",
              "filters paired (of 64)", "layer-1 error: horiz. / vert."]
    rows = []
    for net in runs[0]["networks"]:
        nets = [r["networks"][net] for r in runs]
        paired = [sum(v for k, v in n["filters_first64"].items() if k != "unmatched") for n in nets]
        e2e = f"{cell([n['end_to_end_horizontal'] for n in nets])} / {cell([n['end_to_end_vertical'] for n in nets])}"
        layer1 = ([f1(r, net, "horizontal") for r in runs], [f1(r, net, "vertical") for r in runs])
        rows.append([net, cell([n["test_accuracy"] for n in nets], 1, 100.0), cell([n["test_loss"] for n in nets]),
                     e2e, cell(paired, 1 if len(runs) > 1 else 0),
                     f"{cell(layer1[0])} / {cell(layer1[1])}" if "table" in runs[0] else None])
    s = record["settings"]
    seeds_text = f"seed {seeds[0]}" if len(runs) == 1 else f"{len(runs)} seeds {seeds} (mean ± std)"
    secs = [r.get("seconds") for r in runs]
    train = [r.get("part_seconds", {}).get("train") for r in runs]
    lines = [f"CIFAR-10 MLP experiment, budget {s['name']}, {seeds_text}, on {runs[0].get('device', '?')}:",
             protocol.text_table(header, rows),
             textwrap.fill(
                 "end-to-end error: mean of |f(m x) - m f(x)| / |f(x)| over test images x, m the "
                 "horizontal mirror (trained) or the vertical one (control); for classifiers "
                 "|f(m x) - f(x)| / |f(x)| (invariance). layer-1 error: median relative error of the "
                 "best linear map A with A f_1(y) ≈ f_1(m y), f_1 the first layer, y noise probes. "
                 "filters paired: of the first 64 first-layer filters, those mirror-symmetric, "
                 "antisymmetric or in a (negated) mirror pair. –: missing or not a number.", 100)]
    if all(isinstance(x, (int, float)) for x in secs):
        lines.append(f"time: {sum(secs):.0f} s in all (training {sum(t or 0 for t in train):.0f} s; "
                     "near 0 when the networks came from the cache)")
    return "\n".join(lines)


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
    :func:`seed_spread`. With ``out``, each seed's JSON and figures are written as that
    seed finishes (their names carry the seed, ``output_names``) and the record to
    ``out/cifar_mlp_<budget>_seeds.json`` at the end, each through a temporary folder
    beside ``out`` (:func:`eqlib.experiments.protocol.write_outputs`). ``kwargs`` go to
    :func:`run`.

    Returns:
        ``{"settings", "seeds", "runs": [summary per seed], "spread"}``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"seeds must be distinct integers ≥ 0, got {seeds}")
    if out is not None:
        out = writable_folder(out)
        s = settings(budget, **dict(kwargs.get("overrides") or {}))
        protocol.check_targets(out, [seeds_name(s.name)] + [
            n for seed in seeds for n in output_names(s.name, seed, kwargs.get("parts", PARTS),
                                                      s.ablation_networks).values()])
    runs = [run(budget, out=out, seed=seed, **kwargs) for seed in seeds]
    record = {"settings": runs[0]["settings"], "seeds": seeds, "runs": runs,
              "spread": seed_spread(runs), "networks": runs[0]["networks"]}
    if out is not None:
        try:
            protocol.write_outputs(out, seeds_name(runs[0]["settings"]["name"]), record)
        except protocol.OutputsKept as exc:
            exc.record = record
            raise
    return record


def seeds_name(budget: str) -> str:
    """The file name of a several-seed record: ``cifar_mlp_<budget>_seeds.json``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    return protocol.output_name("cifar_mlp", budget, suffix="_seeds.json")


#: the measured time of a laptop run with nothing cached (the help states it)
LAPTOP_COLD = "not measured"

#: the paper whose experiment this is (the help names it in full)
PAPER = ("Shahverdi, Marchetti, Bökman & Kohn, \"Identifiable Equivariant Networks are Layerwise "
         "Equivariant\" (ICML 2026)")

#: the command line's help after the flags: budgets with their measured run times, outputs
CLI_EPILOG = """budgets (measured run times; "not measured" where no run backs a figure):
  laptop  4 MLPs (widths {laptop.hidden_text}) on {laptop.n_train:,} images for {laptop.epochs} epochs.
          2 CPU cores: {laptop_cold}; with the trained networks
          already cached, 27-38 s per seed (the recorded three-seed run,
          book/part3/recorded/cifar_mlp_laptop_seeds.json). GPU: not measured.
  full    widths {full.hidden_text} on {full.n_train:,} images for {full.epochs} epochs, {full.noise_samples:,}
          noise probes. One H200 GPU: 79 s, training included (the recorded
          run, book/part3/recorded/cifar_mlp_full.json). 2 CPU cores: not
          measured.
  ci      an old name of laptop, still accepted (older scripts, CI).

outputs in --out (names carry the budget and the seed, so runs never overwrite
each other; all are written to a temporary folder beside --out and moved in at
once, and kept there, with the error naming it, if the move fails):
  cifar_mlp_<budget>_seed<N>.json           every number of one seed's run
  cifar_mlp_<budget>_seed<N>_<figure>.png   its figures
  cifar_mlp_<budget>_seeds.json             with --seeds: the spread over seeds
  cifar_mlp_search.json                     with --parts search
A table of the main numbers is printed at the end."""


class _Described:
    """A budget's settings for the help text (``hidden_text``: ``512/256/256``)."""

    def __init__(self, s: Settings):
        self._s = s
        self.hidden_text = "/".join(map(str, s.hidden))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line (:func:`eqlib.experiments.protocol.build_parser`, the flags every
    experiment shares): ``python -m eqlib.experiments.cifar_mlp --budget laptop --out results/``
    writes ``cifar_mlp_<budget>_seed<N>.json`` and its figures (``output_names``);
    ``--seeds 0,1,2`` runs each seed and also writes ``cifar_mlp_<budget>_seeds.json``.
    Prints a table of the main numbers at the end (``summary_text``). When the outputs
    cannot be moved into ``--out``, prints where they are kept and exits with status 1.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    p = protocol.build_parser(
        "python -m eqlib.experiments.cifar_mlp",
        f"The CIFAR-10 MLP experiment of {PAPER}: first-layer filters, the "
        "linear-equivariance table, an ablation, the emergence over training and an attention "
        "layer's heads; --parts search: the search for a training protocol under which the "
        "filters pair up. Chapter 11 of the course.",
        parts=PARTS, default_parts=DEFAULT_PARTS, epilog=CLI_EPILOG.format(
            laptop_cold=LAPTOP_COLD, laptop=_Described(BUDGETS["laptop"]), full=_Described(BUDGETS["full"])))

    def outputs(args) -> list[str]:  # every name, checked before any work
        names = ["cifar_mlp_search.json"] if "search" in args.parts else []
        if any(part != "search" for part in args.parts):
            for seed in args.seeds:
                names += output_names(args.budget, seed, args.parts, args.settings.ablation_networks).values()
            if len(args.seeds) > 1:
                names.append(seeds_name(args.budget))
        return names

    args = protocol.parse_args(p, argv, BUDGETS, outputs=outputs)

    def print_row(row: dict[str, Any]) -> None:  # ablation rows as they finish
        print("ablation:", json.dumps({k: v for k, v in row.items() if k != "changes"},
                                      default=float), flush=True)

    try:
        if "search" in args.parts:
            import matplotlib
            matplotlib.use("Agg")
            tr, te = load_data(settings("full"), args.data, download=args.download)
            weights: dict[tuple[str, int], torch.Tensor] = {}
            found = filter_search(tr, te, seeds=args.seeds[:1], more_seeds=args.seeds[1:] or (1, 2),
                                  on_row=lambda row: print("search:", json.dumps(row), flush=True),
                                  weights=weights)
            found["command"] = "python -m eqlib.experiments.cifar_mlp " + " ".join(
                sys.argv[1:] if argv is None else argv)
            summary = found["summary"]
            best = max(summary, key=lambda v: (summary[v]["categorised_first64"]["mean"],
                                               -summary[v]["f1_horizontal_noise"]["mean"]))
            shown = list(dict.fromkeys([next(iter(summary)), best]))
            figs = {f"cifar_mlp_search_filters_{k}.png": fig for k, fig in
                    enumerate(search_figures(weights, shown, seed=args.seeds[0]).values())}
            written = protocol.write_outputs(args.out, "cifar_mlp_search.json", found, figs, dpi=80)
            print(f"wrote {written[0]} and {len(written) - 1} figures")
            args.parts = tuple(x for x in args.parts if x != "search")
            if not args.parts:
                return found
        common = dict(device=args.device, root=args.data, progress=args.progress, parts=args.parts,
                      overrides=args.overrides, on_ablation_row=print_row, download=args.download)
        if len(args.seeds) > 1:
            record = run_seeds(args.seeds, args.budget, args.out, **common)
            written = [args.out / seeds_name(args.budget)]
        else:
            record = run(args.budget, out=args.out, seed=args.seed, **common)
            written = [args.out / output_names(args.budget, args.seed, args.parts,
                                               args.settings.ablation_networks)["json"]]
    except protocol.OutputsKept as exc:
        if getattr(exc, "record", None) is not None:
            print(summary_text(exc.record))
        raise SystemExit(f"error: {exc}") from None
    print(summary_text(record))
    print(f"wrote {', '.join(map(str, written))} (and the figures) into {args.out}")
    return record


if __name__ == "__main__":
    main()
