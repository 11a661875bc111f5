"""What determines a training run (:class:`~eqlib.train.TrainConfig`, whose fields key the cache) and what
it returns (:class:`~eqlib.train.TrainResult`).

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..validation import check_bool, check_choice, check_float, check_int, show

__all__ = ["LR_MAX", "TrainConfig", "TrainResult"]


_TASKS = ("classify", "autoencode")
_OPTIMIZERS = ("adam", "sgd")
_SCHEDULES = ("constant", "warmup_linear", "cosine")
_PENALTIES = ("none", "equivariance", "invariance")


#: fields added after the cache keys were pinned: left out of :meth:`TrainConfig.to_dict` at
#: their default 0, so that older runs keep their keys
_NEW_FIELDS = ("augment_crop", "noise_subspace")

#: the largest learning rate :class:`TrainConfig` accepts (larger ones only diverge)
LR_MAX = 100.0


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (its fields define the cache hash).

    The symmetry the penalty and the augmentation use and the preprocessing of the data
    are arguments of :func:`train` (:func:`image_preset` gives the CIFAR-10 ones), not
    fields.

    Args:
        task: ``"classify"`` (cross-entropy on logits) or ``"autoencode"`` (mean squared
            error between the reconstruction and the preprocessed input).
        epochs: passes over the data.
        batch_size: samples per step.
        lr: peak learning rate.
        optimizer: ``"adam"`` or ``"sgd"`` (with ``momentum``).
        momentum: SGD momentum (ignored by Adam).
        weight_decay: decoupled (AdamW-style) for Adam, L2 for SGD.
        first_weight_decay: None (one parameter group), or the weight decay of the first
            layer's weight (the first parameter with two or more dimensions), which then
            forms a parameter group of its own; Adam becomes AdamW when either decay is > 0.
        schedule: ``"constant"``, ``"warmup_linear"`` (linear warm-up over ``warmup`` of
            training, then linear decay to 0) or ``"cosine"`` (over the first
            ``max(1, ⌊warmup · steps⌋)`` steps the factor (step + 1) / warm-up steps, then
            cosine decay towards 0).
        warmup: fraction of training spent warming up.
        augment_mirror: act on each sample by a uniformly random element of the symmetry's
            group (for images, the mirror with probability 1/2).
        augment_per_batch: draw those elements batch by batch (each batch's before its
            penalty noise), as the filter search did, rather than for the whole epoch after
            its batch order: the same distribution, another random stream (kept so that both
            reproduce their recorded runs).
        augment_crop: translation augmentation of images (N, C, H, W): pad every image
            by this many zero pixels on each side (before ``preprocess``: black for
            uint8 images) and crop a window of the original size, each of its two offsets
            uniform in 0 .. 2·``augment_crop``, drawn per epoch for every sample from the
            seeded generator (0: none, and then absent from :meth:`to_dict`, so the cache
            keys of runs without crops are those from before the field existed).
        penalty: ``"none"``, ``"equivariance"`` (f(ρ_in(g)x) ≈ ρ_out(g)f(x); autoencoders) or
            ``"invariance"`` (f(ρ_in(g)x) ≈ f(x); classifiers).
        penalty_weight: the weight of the penalty on the training batch once fully on.
        penalty_start: fraction of training after which the penalty is on (the paper:
            the second half, 0.5).
        penalty_ramp: fraction of training over which the weights ramp linearly from 0
            (0 switches them on abruptly).
        penalty_noise: the weight of the same penalty on isotropic Gaussian inputs
            ``noise_std · N(0, I)`` of the batch's shape (drawn per batch), with the same ramp.
        noise_std: the standard deviation of those inputs.
        noise_subspace: 0 (the default: isotropic noise), or k ≥ 1: the noise lies in the
            span of the top k principal directions of the preprocessed training samples
            together with their images under every element of the group (a subspace the
            group's action maps to itself), isotropic there and scaled to the same mean
            squared norm as isotropic noise (variance ``noise_std² · d / k`` along each of
            the k directions, d the sample's size); the directions are computed once per
            run from the covariance. Absent from :meth:`to_dict` when 0, so the cache
            keys of runs without it are those from before it existed.
        penalty_samples: 0: the penalty is the mean over every element of G but the
            identity (for the mirror: m); k ≥ 1: over k elements of G drawn uniformly per batch.
        grad_clip: clip the gradient norm to this value (0: no clipping).
        snapshot_every: keep a copy of the weights every this many epochs (0: none);
            epoch 0 (the initialisation) is included.
        after_step: the name of the after-step hook that :func:`train` receives as
            ``hooks["after_step"]`` ("": none). The name is the hook's cache key: give
            another hook another name.
        seed: seed of the batch order, augmentation, penalty noise and nothing else (the
            model's initialisation is the model builder's business).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    task: str = "classify"
    epochs: int = 10
    batch_size: int = 256
    lr: float = 1e-3
    optimizer: str = "adam"
    momentum: float = 0.9
    weight_decay: float = 0.0
    first_weight_decay: float | None = None
    schedule: str = "constant"
    warmup: float = 0.05
    augment_mirror: bool = False
    augment_per_batch: bool = False
    augment_crop: int = 0
    penalty: str = "none"
    penalty_weight: float = 0.0
    penalty_start: float = 0.5
    penalty_ramp: float = 0.1
    penalty_noise: float = 0.0
    noise_std: float = 1.0
    noise_subspace: int = 0
    penalty_samples: int = 0
    grad_clip: float = 0.0
    snapshot_every: int = 0
    after_step: str = ""
    seed: int = 0

    def __post_init__(self):
        """Check every field (NaN, inf, non-integers and unknown options are errors that name
        the field); integral floats such as ``epochs=2.0`` become ints."""
        for name, options in (("task", _TASKS), ("optimizer", _OPTIMIZERS), ("schedule", _SCHEDULES),
                              ("penalty", _PENALTIES)):
            check_choice(f"TrainConfig.{name}", getattr(self, name), options)
        for name, low in (("epochs", 1), ("batch_size", 1), ("snapshot_every", 0), ("seed", 0),
                          ("penalty_samples", 0), ("augment_crop", 0), ("noise_subspace", 0)):
            value = getattr(self, name)
            # torch generators take 64-bit seeds; an epoch count beyond 10^6 would run for ever
            high = {"seed": 2**63 - 1, "epochs": 10**6, "batch_size": 2**31, "penalty_samples": 10**4,
                    "augment_crop": 64, "noise_subspace": 2**31}.get(name)
            if check_int(f"TrainConfig.{name}", value, low, high) != value or type(value) is not int:
                object.__setattr__(self, name, int(value))
        check_float("TrainConfig.lr", self.lr, 0.0, LR_MAX, low_open=True)
        check_float("TrainConfig.momentum", self.momentum, 0.0, 1.0)
        for name in ("weight_decay", "penalty_weight", "grad_clip", "penalty_noise"):
            check_float(f"TrainConfig.{name}", getattr(self, name), 0.0)
        if self.first_weight_decay is not None:
            check_float("TrainConfig.first_weight_decay", self.first_weight_decay, 0.0)
        check_float("TrainConfig.noise_std", self.noise_std, 0.0, low_open=True)
        for name in ("penalty_start", "penalty_ramp", "warmup"):
            check_float(f"TrainConfig.{name}", getattr(self, name), 0.0, 1.0)
        check_bool("TrainConfig.augment_mirror", self.augment_mirror)
        check_bool("TrainConfig.augment_per_batch", self.augment_per_batch)
        if not isinstance(self.after_step, str):
            raise TypeError(f"TrainConfig.after_step must be the hook's name (a str, '' for none), "
                            f"got {show(self.after_step)}")
        if self.penalty == "equivariance" and self.task != "autoencode":
            raise ValueError("the equivariance penalty f(ρ_in(g)x) ≈ ρ_out(g) f(x) needs outputs the group acts on: "
                             "use task='autoencode' (classifiers take penalty='invariance')")
        if self.noise_subspace > 0 and self.penalty_noise == 0:
            raise ValueError(f"TrainConfig.noise_subspace={self.noise_subspace} places the noise penalty in a "
                             "subspace: it needs penalty_noise > 0")
        if self.penalty_noise > 0 and self.penalty == "none":
            raise ValueError("TrainConfig.penalty_noise > 0 weights a penalty: set penalty to 'equivariance' "
                             "or 'invariance'")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the fields (``augment_crop`` and ``noise_subspace``
        only when on, so the cache keys of runs without them are those from before they
        existed)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()
                if not (k in _NEW_FIELDS and v == 0)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TrainConfig":
        if not isinstance(d, Mapping):
            raise TypeError(f"d must be a mapping of TrainConfig fields, got {show(d)}")
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - fields
        if unknown:
            raise ValueError(f"unknown TrainConfig fields {sorted(unknown)}")
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()})

    def replace(self, **changes: Any) -> "TrainConfig":
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes:
        model: the trained model (in eval mode, on the training device).
        history: per-epoch lists ``epoch``, ``loss``, ``task_loss``, ``penalty``,
            ``penalty_weight``, ``accuracy`` (training batches, classifiers),
            ``test_accuracy`` / ``test_loss`` (when eval data is given), ``lr``,
            ``images_per_s``, ``seconds``.
        snapshots: ``[(epoch, state_dict), ...]`` every ``snapshot_every`` epochs (CPU).
        config: the :class:`TrainConfig`.
        from_cache: whether :func:`cached_train` loaded it rather than training.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    model: nn.Module
    history: dict[str, list]
    snapshots: list[tuple[int, dict[str, torch.Tensor]]] = field(default_factory=list)
    config: TrainConfig | None = None
    from_cache: bool = False

    def snapshot_model(self, index: int, build_model: Callable[[], nn.Module]) -> nn.Module:
        """A fresh ``build_model()`` loaded with snapshot ``index`` (eval mode, CPU)."""
        model = build_model()
        model.load_state_dict(self.snapshots[index][1])
        return model.eval()
