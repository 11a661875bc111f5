"""The GCNN barrier's settings: the budgets, the networks and their training configurations.

A budget (:class:`~eqlib.experiments.barrier_settings.BarrierBudget`) nests the
:class:`eqlib.train.TrainConfig` its networks train with (``train``); each variant changes
only what makes it that variant (:func:`~eqlib.experiments.barrier_settings.train_config`).
:mod:`eqlib.experiments.gcnn_barrier` re-exports every name.

Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..models.cnn import VGG, MirrorGCNN
from ..train import TrainConfig
from . import protocol

__all__ = ["VARIANTS", "BarrierBudget", "CropBudget", "MEDIUM_EPOCHS", "MEDIUM_INVARIANCE_EPOCHS", "BUDGETS",
           "network_seeds", "build_network", "train_config", "apply_overrides", "settings"]

#: The training variants (plain, mirror augmentation, augmentation + invariance loss, mirror-GCNN).
VARIANTS = ("plain", "mirror", "invariance", "gcnn")

#: the training of the ``laptop`` budget (Adam, 3 epochs); ``penalty_*``: the invariance loss
#: of the ``"invariance"`` variant (the other variants train without it)
LAPTOP_TRAIN = TrainConfig(task="classify", epochs=3, batch_size=128, lr=2e-3, optimizer="adam", momentum=0.9,
                           weight_decay=0.0, schedule="constant", penalty="invariance", penalty_weight=10.0,
                           penalty_start=0.5)

#: the penalty fields a variant without the invariance loss leaves at ``TrainConfig``'s defaults
_PENALTY = {f.name: f.default for f in dataclasses.fields(TrainConfig)
            if f.name in ("penalty", "penalty_weight", "penalty_start", "penalty_ramp")}


@dataclass(frozen=True)
class BarrierBudget:
    """Sizes of one run of the experiment.

    Attributes:
        config: VGG configuration (see :class:`eqlib.models.cnn.VGG`).
        widths: width multipliers measured (the first is the main one).
        variants: training variants at the main width; the other widths train
            ``extra_variants``.
        extra_variants: variants trained at the other widths.
        networks: independently trained networks per (variant, width); every pair is merged.
        n_train, n_match, n_test: training images, matching/BN-reset images (before adding
            their mirrors), test images.
        train: the networks' :class:`eqlib.train.TrainConfig` (epochs, batch size, optimiser,
            schedule, crops; ``penalty_*`` the invariance loss of the ``"invariance"``
            variant); :func:`~eqlib.experiments.barrier_settings.train_config` sets the
            variant's augmentation and penalty and the network's seed (``--set train.lr=0.01``).
        fixed_fraction: channels fixed by π in the GCNN (symmetric filters in layer 1).
        alphas: points of the interpolation curves.
        seeds: the networks' seeds (empty: ``0 .. networks − 1``); the CLI's ``--seeds``.
        amp: ``"bf16"`` trains and evaluates under bfloat16 autocast (GPU speed), ``"none"`` not.
        channels_last: train in the channels-last memory format (faster convolutions on GPUs).
        batchnorm: BatchNorm after every convolution (``False``: the VGGs of REPAIR's base
            setting, without normalisation layers; a BN reset then changes nothing and
            REPAIR is the correction; ``--set batchnorm=false``).
        invariance_epochs: epochs of the ``"invariance"`` variant's networks (0: ``train.epochs``,
            as every other variant); its extra loss slows the fit, and more epochs let its
            networks reach an accuracy target (``--set invariance_epochs=25``).

    Chapter: *ReLU CNNs and GCNNs*.
    """

    #: fields added after records were made, with the value every older record was made with
    #: (:func:`eqlib.experiments.protocol.check_recorded` reads a record without them so)
    ADDED_FIELDS: ClassVar[dict[str, Any]] = {"batchnorm": True, "invariance_epochs": 0}

    config: tuple = (8, "M", 16, "M", 32, "M", 64, "M")
    widths: tuple[float, ...] = (1.0, 0.5)
    variants: tuple[str, ...] = VARIANTS
    extra_variants: tuple[str, ...] = ("plain", "invariance")
    networks: int = 3
    n_train: int = 2500
    n_match: int = 250
    n_test: int = 1000
    train: TrainConfig = field(default=LAPTOP_TRAIN)
    fixed_fraction: float = 0.25
    alphas: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    seeds: tuple[int, ...] = ()
    amp: str = "none"
    channels_last: bool = False
    batchnorm: bool = True
    invariance_epochs: int = 0

    def __post_init__(self):
        protocol.check_nested(self, "train", TrainConfig)
        if (isinstance(self.invariance_epochs, bool) or not isinstance(self.invariance_epochs, int)
                or self.invariance_epochs < 0):
            raise ValueError(f"BarrierBudget.invariance_epochs must be an int >= 0 (0: train.epochs), "
                             f"got {self.invariance_epochs!r}")
        if not isinstance(self.batchnorm, bool):
            raise TypeError(f"BarrierBudget.batchnorm must be a bool, got {self.batchnorm!r}")
        if self.amp not in ("none", "bf16"):
            raise ValueError(f"BarrierBudget.amp must be 'none' or 'bf16', got {self.amp!r}")
        if not isinstance(self.channels_last, bool):
            raise TypeError(f"BarrierBudget.channels_last must be a bool, got {self.channels_last!r}")
        if isinstance(self.networks, bool) or not isinstance(self.networks, int) or self.networks < 1:
            raise ValueError(f"BarrierBudget.networks must be an int >= 1, got {self.networks!r}")
        seeds = tuple(self.seeds)
        if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in seeds) or len(set(seeds)) != len(seeds):
            raise ValueError(f"BarrierBudget.seeds must be distinct ints >= 0, got {self.seeds!r}")
        object.__setattr__(self, "seeds", seeds)
        unknown = [v for v in tuple(self.variants) + tuple(self.extra_variants) if v not in VARIANTS]
        if unknown:
            raise ValueError(f"BarrierBudget: unknown variants {unknown}; choose from {VARIANTS}")
        if not 0 <= self.train.augment_crop <= 16:
            raise ValueError(f"BarrierBudget.train.augment_crop must be in 0..16, got {self.train.augment_crop!r}")


#: epochs of the ``medium`` budget (its ``invariance`` networks: ``MEDIUM_INVARIANCE_EPOCHS``)
MEDIUM_EPOCHS = 15
#: epochs of the ``medium`` budget's ``invariance`` networks
MEDIUM_INVARIANCE_EPOCHS = 25


@dataclass(frozen=True)
class CropBudget(BarrierBudget):
    """The type of the ``medium`` budget: a :class:`BarrierBudget` whose networks all train
    with translation augmentation (``train.augment_crop``: pad every training image by
    that many black pixels and crop a random 32×32 window, for every variant; 4 by default).

    Chapter: *ReLU CNNs and GCNNs*.
    """

    train: TrainConfig = field(default=LAPTOP_TRAIN.replace(augment_crop=4))


def network_seeds(b: BarrierBudget) -> tuple[int, ...]:
    """The seeds of the networks of every cell: ``b.seeds``, or ``0 .. b.networks − 1`` when empty.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    return b.seeds if b.seeds else tuple(range(b.networks))


#: VGG11's layers (REPAIR's networks)
_VGG11 = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")
#: REPAIR's SGD recipe (without its translation augmentation, 10 epochs)
_SGD = LAPTOP_TRAIN.replace(epochs=10, batch_size=500, lr=0.08, optimizer="sgd", momentum=0.9, weight_decay=5e-4,
                            schedule="warmup_linear", penalty_weight=10.0)
_ALPHAS = tuple(np.round(np.linspace(0, 1, 11), 2).tolist())

#: ``laptop`` (the default): a narrow VGG on a CIFAR-10 subset, minutes on 2 CPU cores; ``full``: VGG11 (REPAIR's recipe,
#: without the translation augmentation, 10 epochs) on the full training set, for a GPU; ``medium``: VGG11's layers
#: at 1/8 width on the full training set with crop augmentation, for a CPU over hours (resumable).
BUDGETS: dict[str, BarrierBudget] = {
    "laptop": BarrierBudget(),
    # sized so the whole benchmarks/gpu_check.sh fits in 8 minutes on one H200: 4 variants x 3
    # networks of VGG11 at width 1, 10 epochs each, bf16 autocast and channels-last
    "full": BarrierBudget(config=_VGG11, widths=(1.0,), extra_variants=(), networks=3, n_train=50000, n_match=2500,
                          n_test=10000, train=_SGD, alphas=_ALPHAS, amp="bf16", channels_last=True),
    # VGG11's layers at 1/8 width (8,M,16,M,32,32,M,64,64,M,64,64,M) on all 50,000 images with
    # 4-pixel crops (and the variants' flips), SGD with warm-up and linear decay: the CPU record
    # (benchmarks/record_medium.sh), every network resumable through the model cache. The invariance
    # loss weighs 1 here: at 10 (the laptop's and full's weight) its networks reached 69.6-71.1 % test accuracy
    # (seeds 0-2) against 75.6-75.9 % for plain training; at 1 and 15 epochs they reached 75.7, 74.9 and
    # 74.2 %, still climbing (training accuracy 75.1-75.5 % against plain's 78 %), so they train
    # MEDIUM_INVARIANCE_EPOCHS epochs (77.3-77.6 %). After 15 epochs seed 0's relative invariance
    # error was 0.158 at weight 1 (gcnn_barrier_medium_15.json) against 0.066 at weight 10 (the
    # unrecorded trial run)
    "medium": CropBudget(config=_VGG11, widths=(0.125,), extra_variants=(), networks=3, n_train=50000, n_match=2500,
                         n_test=10000, train=_SGD.replace(epochs=MEDIUM_EPOCHS, augment_crop=4, penalty_weight=1.0),
                         alphas=_ALPHAS, invariance_epochs=MEDIUM_INVARIANCE_EPOCHS),
}


def settings(budget: str | None = None, **overrides: object) -> BarrierBudget:
    """The :class:`BarrierBudget` of ``budget`` (default ``$EQLIB_BUDGET``, else ``"laptop"``)
    with ``overrides``; the training's fields by dotted keys
    (``settings("laptop", **{"train.epochs": 1})``, :func:`eqlib.experiments.protocol.settings`).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    return protocol.settings(BUDGETS, budget, **overrides)


def build_network(variant: str, width: float, seed: int, b: BarrierBudget) -> VGG:
    """A fresh network of ``variant`` (a :class:`~eqlib.models.MirrorGCNN` for ``"gcnn"``, else a VGG),
    with BatchNorm unless ``b.batchnorm`` is False.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
    if variant == "gcnn":
        return MirrorGCNN(list(b.config), width=width, seed=seed, fixed_fraction=b.fixed_fraction,
                          batchnorm=b.batchnorm)
    return VGG(list(b.config), width=width, seed=seed, batchnorm=b.batchnorm)


def train_config(variant: str, seed: int, b: BarrierBudget) -> TrainConfig:
    """The :class:`eqlib.train.TrainConfig` of a variant: the budget's ``train`` with the
    network's ``seed``; ``plain`` and ``gcnn`` without mirror augmentation and without the
    penalty, ``mirror`` with mirror augmentation, ``invariance`` with augmentation plus the
    budget's invariance loss (and ``b.invariance_epochs`` epochs where not 0); every variant
    with the budget's crops. (Flipping a GCNN's inputs would change nothing: it is
    mirror-invariant.)

    Chapter: *ReLU CNNs and GCNNs*.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
    penalty = {"penalty": "invariance"} if variant == "invariance" else _PENALTY
    if variant == "invariance" and b.invariance_epochs:
        penalty = {**penalty, "epochs": b.invariance_epochs}
    return b.train.replace(seed=seed, augment_mirror=variant in ("mirror", "invariance"), **penalty)


def apply_overrides(b: BarrierBudget, settings: Sequence[str]) -> BarrierBudget:
    """``b`` with ``--set`` overrides ``"key=value"`` applied, typed like the field
    (:func:`eqlib.experiments.protocol.parse_setting`; tuples comma-separated, e.g.
    ``widths=0.0625``, ``variants=plain,gcnn``, ``seeds=3,4,5``; the training's fields by
    dotted keys, ``train.epochs=1``).

    Raises:
        ValueError: naming the setting, for an unknown key, a value of the wrong type or
            an unknown variant.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    return protocol.replace_settings(b, protocol.parse_settings(settings, b))
