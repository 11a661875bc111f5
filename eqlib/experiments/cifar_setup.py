"""The CIFAR-10 MLP experiment's settings, networks, data and training.

The budgets (:data:`~eqlib.experiments.cifar_setup.BUDGET_SETTINGS`, the knobs of
:class:`~eqlib.experiments.cifar_setup.Settings`), the depth-4 MLPs
(:func:`~eqlib.experiments.cifar_setup.build_mlp`) and their training configuration
(:func:`~eqlib.experiments.cifar_setup.train_config`), the CIFAR-10
subsets (:func:`~eqlib.experiments.cifar_setup.load_data`) and the cached training of the four
networks
(:func:`~eqlib.experiments.cifar_setup.train_networks`). :mod:`eqlib.experiments.cifar_mlp`
runs the experiment on them
and re-exports every name.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..analysis import NETWORKS
from ..data import CIFAR10, load_cifar10, subset
from ..models import MLP
from ..train import TrainConfig, TrainResult, cached_train, image_preset
from . import protocol

__all__ = ["Settings", "BUDGETS", "BUDGET_SETTINGS", "settings", "parse_setting", "build_mlp",
           "train_config", "load_data", "train_networks", "load_results"]


#: the training every network of the experiment starts from (AdamW-style decoupled weight
#: decay, warm-up and linear decay, random mirrors, the soft mirror penalty ramped in from half-way)
CIFAR_TRAIN = TrainConfig(task="classify", epochs=8, batch_size=128, lr=1e-3, optimizer="adam", weight_decay=1e-4,
                          schedule="warmup_linear", augment_mirror=True, penalty="invariance", penalty_weight=1.0,
                          penalty_start=0.5, penalty_ramp=0.2, snapshot_every=1)


@dataclass(frozen=True)
class Settings:
    """The knobs of one budget (see :data:`~eqlib.experiments.cifar_setup.BUDGET_SETTINGS`).

    Attributes:
        name: ``"laptop"`` or ``"full"``.
        n_train, n_test: images used (stratified subsets when below 50,000 / 10,000).
        hidden: widths of the three hidden layers (d_1, d_2, d_3).
        train: the networks' :class:`eqlib.train.TrainConfig` (epochs, batch size, Adam
            with decoupled weight decay, schedule, random mirrors, the soft mirror penalty,
            ``snapshot_every`` epochs between checkpoints kept for
            :func:`~eqlib.experiments.cifar_parts.emergence`);
            :func:`~eqlib.experiments.cifar_setup.train_config` sets each network's task,
            penalty kind and seed (``--set train.epochs=40``).
        first_init_scale: multiplies the first layer's initial weights (a departure from
            the paper's setting: the default init leaves a large random component in W_1
            along directions that carry little image variance, which isotropic probes see).
        noise_samples: isotropic-noise probes (half fit, half scored).
        cov_samples: probes with the images' covariance (``image_cov``).
        cov_images: training images whose covariance the ``image_cov`` probes share.
        ablation_n_train, ablation_epochs: the (smaller) scale of
        :func:`~eqlib.experiments.cifar_parts.ablation`.
        ablation_variants: names of :data:`~eqlib.experiments.cifar_parts.ABLATION_VARIANTS`
        run by default (None: all).
        ablation_networks: the networks of :data:`eqlib.analysis.tables.NETWORKS` the ablation retrains.
        attention_epochs, attention_heads, attention_patch: the attention autoencoder.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    name: str
    n_train: int
    n_test: int
    hidden: tuple[int, int, int]
    train: TrainConfig = CIFAR_TRAIN
    first_init_scale: float = 0.1
    noise_samples: int = 10_000
    cov_samples: int = 10_000
    cov_images: int = 2_000
    ablation_n_train: int = 2_000
    ablation_epochs: int = 6
    ablation_variants: tuple[str, ...] | None = None
    ablation_networks: tuple[str, ...] = ("tanh-autoencoder",)
    attention_epochs: int = 4
    attention_heads: int = 4
    attention_patch: int = 4

    def __post_init__(self):
        protocol.check_nested(self, "train", TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return protocol.settings_dict(self)


#: ``laptop`` (the default): minutes on 2 CPU cores; ``full``: all 50,000 images, classifiers above 50 % test accuracy.
BUDGET_SETTINGS: dict[str, Settings] = {
    "laptop": Settings(name="laptop", n_train=4_000, n_test=2_000, hidden=(256, 128, 128), train=CIFAR_TRAIN,
                   noise_samples=6_000, cov_samples=6_000, cov_images=1_000, ablation_n_train=1_500, ablation_epochs=5,
                   ablation_variants=("base", "default first-layer init (×10)", "strong weight decay (0.5)", "no penalty"),
                   attention_epochs=4),
    "full": Settings(name="full", n_train=50_000, n_test=10_000, hidden=(512, 256, 256),
                     train=CIFAR_TRAIN.replace(epochs=15, batch_size=256, snapshot_every=3),
                     noise_samples=100_000, cov_samples=20_000, cov_images=2_000,
                     ablation_n_train=10_000, ablation_epochs=8, attention_epochs=4,
                     ablation_variants=("base", "default first-layer init (×10)", "smaller first-layer init (×0.1)",
                                        "strong weight decay (0.5)", "no penalty", "penalty weight ×10",
                                        "2× epochs")),
}


#: the protocol's name for :data:`~eqlib.experiments.cifar_setup.BUDGET_SETTINGS`
BUDGETS = BUDGET_SETTINGS


def settings(budget: str | None = None, **overrides: Any) -> Settings:
    """The :class:`~eqlib.experiments.cifar_setup.Settings` of ``budget`` (default
    ``$EQLIB_BUDGET``, else ``"laptop"``), with
    overrides (:func:`eqlib.experiments.protocol.settings`).

    Raises:
        ValueError: for an unknown budget or an override that is not a
        :class:`~eqlib.experiments.cifar_setup.Settings` field.

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

def build_mlp(activation: str, task: str, hidden: Sequence[int] = (256, 128, 128), *, seed: int = 0,
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
    """The :class:`~eqlib.train.TrainConfig` of one network under settings ``s``: ``s.train``
    with the network's ``task``, its penalty (equivariance for an autoencoder, invariance
    for a classifier) and ``seed``, then ``overrides``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    penalty = "equivariance" if task == "autoencode" else "invariance"
    return s.train.replace(task=task, penalty=penalty, seed=seed, **overrides)


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


def train_networks(s: Settings, train: CIFAR10, test: CIFAR10 | None = None, *, seed: int = 0,
                   device: str | torch.device | None = None, progress: bool = True,
                   names: Sequence[str] | None = None, **config_overrides: Any) -> dict[str, TrainResult]:
    """Train (or load from the cache) the four networks of :data:`eqlib.analysis.tables.NETWORKS`.

    ``config_overrides`` go to :func:`~eqlib.experiments.cifar_setup.train_config` (TrainConfig
    fields); architecture
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
                                 device=device, progress=progress, eval_data=eval_data,
                                 **image_preset(tuple(train.images.shape[1:])))
    return out



def load_results(path: str | Path) -> dict[str, Any]:
    """A JSON written by :func:`~eqlib.experiments.cifar_mlp.run` (the command line), checked
    for the keys the chapter reads
    (:func:`eqlib.experiments.protocol.load_json`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not JSON, or lacks ``settings`` / ``networks``.

    Chapter: *Reproducing the CIFAR-10 experiment* (the recorded full-budget run).
    """
    return protocol.load_json(path, required=("settings", "networks"))
