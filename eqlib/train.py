"""The trainer: one training loop over actions, and a cache of trained models.

:func:`train` trains any module on ``(samples, labels)``. The samples are moved to the
device once, preprocessed there block by block (``preprocess``; :class:`Normalize` for
images), taken in a seeded order and, when ``TrainConfig.augment_mirror``, acted on by a
random element of the group per sample. The penalty, for ``symmetry = (rho_in, rho_out)``
(actions of one finite group G), is a mean over coordinates and over the elements g ≠ e
(or over ``penalty_samples`` elements drawn per batch):

.. math::
    P_{\\mathrm{equi}} = \\operatorname{mean}\\,\\big(f(\\rho_{\\mathrm{in}}(g) x)
    - \\rho_{\\mathrm{out}}(g) f(x)\\big)^2, \\qquad
    P_{\\mathrm{inv}} = \\operatorname{mean}\\,\\big(f(\\rho_{\\mathrm{in}}(g) x) - f(x)\\big)^2,

switched on after ``penalty_start`` of training and ramped up linearly over
``penalty_ramp`` (an abrupt switch blew up Adam on large autoencoders). Images are a
preset, not a mode: :func:`image_preset` gives the mirror as the symmetry and
:class:`Normalize`. :func:`cached_train` keys trained models on disk by content and an
interrupted run resumes from its last checkpoint with the weights of an uninterrupted one.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .actions import Action, PermutationAction, equivariance_residual
from .images import CIFAR10_MEAN, CIFAR10_STD, check_unit_range, mirror_images, prepare_images
from .images import mirror as mirror_action
from .device import default_device
from .io import (CACHE_WRITE_ERRORS, CorruptFileError, cache_dir, config_hash, content_hash, load_torch, save_torch,
                 warn_once)
from .seeds import torch_generator
from .validation import check_bool, check_choice, check_finite, check_float, check_int, check_tensor, show

__all__ = ["TrainConfig", "TrainResult", "train", "cached_train", "image_preset", "Normalize",
           "penalty_term", "penalty_weight_at", "learning_rate_at", "evaluate_accuracy"]


_TASKS = ("classify", "autoencode")
_OPTIMIZERS = ("adam", "sgd")
_SCHEDULES = ("constant", "warmup_linear", "cosine")
_PENALTIES = ("none", "equivariance", "invariance")
_HOOKS = ("after_step", "after_epoch")


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
                          ("penalty_samples", 0), ("augment_crop", 0)):
            value = getattr(self, name)
            # torch generators take 64-bit seeds; an epoch count beyond 10^6 would run for ever
            high = {"seed": 2**63 - 1, "epochs": 10**6, "batch_size": 2**31, "penalty_samples": 10**4,
                    "augment_crop": 64}.get(name)
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
        if self.penalty_noise > 0 and self.penalty == "none":
            raise ValueError("TrainConfig.penalty_noise > 0 weights a penalty: set penalty to 'equivariance' "
                             "or 'invariance'")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the fields (``augment_crop`` only when on, so the
        cache keys of runs without it are those from before it existed)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()
                if not (k == "augment_crop" and v == 0)}

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


class Normalize:
    """The images' preprocessing for :func:`train`: uint8 images (N, C, H, W) in 0..255 (or
    float images in [0, 1]) become ``(x / 255 − mean) / std`` per channel, in float32,
    computed as one fused multiply-subtract on the device. ``key`` (its mean and std) is
    its cache key; ``check`` refuses what :func:`eqlib.images.prepare_images` refuses, and every
    call runs it first (for uint8 images it reads only the shape and dtype).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    def __init__(self, mean=CIFAR10_MEAN, std=CIFAR10_STD):
        for name, values in (("mean", mean), ("std", std)):
            if isinstance(values, (str, bytes, set, frozenset, Mapping)) or not hasattr(values, "__len__") \
                    or len(values) < 1:
                raise ValueError(f"{name} must hold one number per channel, got {show(values)}")
            for i, v in enumerate(values):
                check_float(f"{name}[{i}]", v, 0.0 if name == "std" else None, low_open=True)
        if len(mean) != len(std):
            raise ValueError(f"mean and std must hold one number per channel each, got {len(mean)} and {len(std)}")
        self.mean, self.std = tuple(float(v) for v in mean), tuple(float(v) for v in std)
        self.key = {"normalize": {"mean": list(self.mean), "std": list(self.std)}}

    def check(self, images: torch.Tensor, name: str = "images") -> None:
        """Images (N, C, H, W), C the number of channels, uint8 or float in [0, 1], non-empty."""
        _check_images(images, name, len(self.mean))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.check(x, "x")  # shape and dtype; floats in [0, 1] (0..255 floats are refused)
        c = len(self.mean)
        scale = 255.0 if x.dtype == torch.uint8 else 1.0
        std = torch.tensor(self.std, device=x.device)
        # (x / scale - mean) / std  ==  x * mul - sub, fused in place on a float32 copy
        mul = (1.0 / (scale * std)).view(1, c, 1, 1)
        sub = (torch.tensor(self.mean, device=x.device) / std).view(1, c, 1, 1)
        return x.to(torch.float32, copy=True).mul_(mul).sub_(sub)

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean}, std={self.std})"


def image_preset(shape: tuple[int, int, int] = (3, 32, 32), axis: str = "horizontal", mean=CIFAR10_MEAN,
                 std=CIFAR10_STD) -> dict[str, Any]:
    """The keyword arguments of :func:`train` and :func:`cached_train` for images of
    ``shape`` (C, H, W): ``symmetry`` = (ρ, ρ) with ρ the mirror along ``axis`` acting on
    the images, or on their flattening (MLP outputs), and ``preprocess`` =
    :class:`Normalize` with the CIFAR-10 statistics by default.

    Example: ``train(model, (images, labels), config, **image_preset())``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    shape = tuple(int(v) for v in shape)
    rho = _mirror_of(shape, axis)
    return {"symmetry": (rho, rho), "preprocess": Normalize(mean, std)}


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


# --------------------------------------------------------------------------- pieces

@functools.lru_cache(maxsize=32)
def _mirror_of(shape: tuple[int, ...], axis: str) -> PermutationAction:
    return mirror_action(shape, axis)


@functools.lru_cache(maxsize=32)
def _fixed(group, shape: tuple[int, ...]) -> PermutationAction:
    """The trivial action of ``group`` on tensors of ``shape`` (invariance: ρ_out(g) = I)."""
    d = int(torch.Size(shape).numel())
    return PermutationAction(group, torch.arange(d).repeat(group.order, 1).numpy(), shape=shape)


def penalty_term(model: nn.Module, x: torch.Tensor, kind: str, axis: str = "horizontal",
                 out: torch.Tensor | None = None, symmetry: tuple[Action, Action] | None = None,
                 elements: list | None = None) -> torch.Tensor:
    """The equivariance penalty of ``model`` on a batch ``x``, as a mean over coordinates.

    Without ``symmetry`` (the mirror penalties; x images (N, C, H, W)):
    ``kind="equivariance"``: mean of (f(m x) − m f(x))² (outputs are images or flattened
    images); ``kind="invariance"``: mean of (f(m x) − f(x))².

    With ``symmetry=(rho_in, rho_out)``: the mean over ``elements`` (default: all of G) of
    mean (f(ρ_in(g)x) − ρ_out(g)f(x))², with ρ_out replaced by the identity for
    ``kind="invariance"``. Both go through :func:`eqlib.actions.equivariance_residual`.

    ``out`` = f(x) if already computed. Zero for an exactly equivariant / invariant model.

    Chapter: *Reproducing the CIFAR-10 experiment*; *Building equivariant layers*.
    """
    if kind not in ("equivariance", "invariance"):
        raise ValueError(f"kind must be 'equivariance' or 'invariance', got {kind!r}")
    fx = model(x) if out is None else out
    if symmetry is None:
        check_tensor("x", x, ndim=4)
        rho_in = _mirror_of(tuple(x.shape[1:]), axis)
        elements = [rho_in.group["m"]]
        rho_out = rho_in
    else:
        rho_in, rho_out = _check_symmetry(symmetry)
        elements = list(rho_in.group) if elements is None else list(elements)
    if kind == "invariance":
        rho_out = _fixed(rho_in.group, tuple(fx.shape[1:]))
    terms = [equivariance_residual(model, rho_in, rho_out, x, g, fx).pow(2).mean() for g in elements]
    return terms[0] if len(terms) == 1 else torch.stack(terms).mean()


def _check_symmetry(symmetry: object) -> tuple[Action, Action]:
    if not isinstance(symmetry, (tuple, list)) or len(symmetry) != 2:
        raise TypeError(f"symmetry must be a pair (rho_in, rho_out) of actions, got {show(symmetry)}")
    for name, rho in zip(("rho_in", "rho_out"), symmetry):
        if not isinstance(rho, Action):
            raise TypeError(f"symmetry's {name} must be an Action, got {show(rho)}")
    if symmetry[0].group != symmetry[1].group:
        raise ValueError("symmetry's rho_in and rho_out must be actions of one group")
    return symmetry[0], symmetry[1]


def _action_spec(rho: Action) -> dict[str, Any]:
    """A cache-key description of an action: its type, group, shape, and the content hash
    of what each group element does to a fixed (seeded) probe."""
    probe = torch.randn(2, *rho.shape, generator=torch.Generator().manual_seed(12345))
    acts = [content_hash(rho.act(g, probe).double()) for g in rho.group.elements]
    return {"type": type(rho).__name__, "group": repr(rho.group), "shape": list(rho.shape),
            "probe": config_hash({"acts": acts}, length=64)}


def _act_each(rho: Action, index: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """ρ(g_n) x_n for every sample n, with g_n = the group's element number ``index[n]``
    (a selection per element of G, without a device sync)."""
    out = x
    for g in rho.group:
        if g != rho.group.identity:
            mask = (index == g.index).view(-1, *([1] * (x.dim() - 1)))
            out = torch.where(mask, rho.act(g, x), out)
    return out


def _draw_elements(group, k: int, gen: torch.Generator, dev: torch.device) -> torch.Tensor:
    """Numbers of ``k`` elements of ``group`` drawn uniformly: for a group of two elements a
    fair coin per sample (``rand < 1/2`` picks the non-identity element, as the mirror
    augmentation always drew), otherwise ``randint(|G|)``."""
    if group.order == 2:
        coin = (torch.rand(k, generator=gen, device=dev) < 0.5).long()
        e = group.identity.index
        return coin if e == 0 else 1 - coin
    return torch.randint(group.order, (k,), generator=gen, device=dev)


def _random_crops(x: torch.Tensor, offsets: torch.Tensor, pad: int) -> torch.Tensor:
    """Window ``x[n, :, dy:dy+H, dx:dx+W]`` of each image zero-padded by ``pad`` pixels, with
    ``(dy, dx) = offsets[n]`` in 0 .. 2·pad: one gather on the batch, no loop over samples."""
    n, c, h, w = x.shape
    wp = w + 2 * pad
    xp = F.pad(x, (pad, pad, pad, pad)).view(n, c, -1)
    ar_h, ar_w = torch.arange(h, device=x.device), torch.arange(w, device=x.device)
    index = (offsets[:, 0, None, None] + ar_h.view(1, h, 1)) * wp + offsets[:, 1, None, None] + ar_w.view(1, 1, w)
    return xp.gather(2, index.view(n, 1, h * w).expand(n, c, h * w)).view(n, c, h, w)


def penalty_weight_at(config: TrainConfig, progress: float, *, noise: bool = False) -> float:
    """The penalty weight after fraction ``progress`` ∈ [0, 1] of training (0 before ``penalty_start``,
    then a linear ramp over ``penalty_ramp``, then ``penalty_weight``, or ``penalty_noise``
    with ``noise=True``).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_float("progress", progress, 0.0, 1.0)
    weight = config.penalty_noise if noise else config.penalty_weight
    if config.penalty == "none" or weight == 0:
        return 0.0
    if progress < config.penalty_start:
        return 0.0
    if config.penalty_ramp <= 0:
        return float(weight)
    return float(weight) * min(1.0, (progress - config.penalty_start) / config.penalty_ramp)


def learning_rate_at(config: TrainConfig, progress: float, *, steps: int | None = None) -> float:
    """The learning rate after fraction ``progress`` of training under ``config.schedule``;
    the ``"cosine"`` schedule counts steps, so it needs ``steps`` (the run's number of
    steps; ``progress · steps`` is the step).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_float("progress", progress, 0.0, 1.0)
    if config.schedule == "cosine":
        if steps is None:
            raise ValueError("the cosine schedule counts steps: pass steps (the run's number of steps)")
        steps = check_int("steps", steps, 1)
        return _lr_at(config, min(steps - 1, round(progress * steps)), steps)
    if config.schedule == "constant":
        return float(config.lr)
    if config.warmup > 0 and progress < config.warmup:
        return float(config.lr) * progress / config.warmup
    return float(config.lr) * max(0.0, (1.0 - progress) / max(1e-12, 1.0 - config.warmup))


def _lr_at(config: TrainConfig, step: int, steps: int) -> float:
    """The learning rate at step ``step`` (from 0) of ``steps``."""
    if config.schedule != "cosine":
        return learning_rate_at(config, step / steps)
    warm = max(1, int(steps * config.warmup))
    if step < warm:
        return float(config.lr) * ((step + 1) / warm)
    return float(config.lr) * (0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm))))


def _task_loss(out: torch.Tensor, x: torch.Tensor, y: torch.Tensor | None, task: str) -> torch.Tensor:
    if task == "classify":
        return F.cross_entropy(out, y)
    return F.mse_loss(out, x.reshape(out.shape))


@torch.no_grad()
def evaluate_accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, batch_size: int = 1000,
                      mean=CIFAR10_MEAN, std=CIFAR10_STD, device: str | torch.device | None = None) -> float:
    """Classification accuracy of ``model`` on uint8 images ``(N, 3, 32, 32)`` with int labels ``(N,)``
    (any integer dtype; a label the model cannot output — at or above its number of
    outputs — is refused).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    batch_size = check_int("batch_size", batch_size, 1)
    _check_data(images, labels, "classify")
    dev = default_device(device) if device is not None else next(model.parameters()).device
    was_training = model.training
    model.eval()
    imgs, labs = images.detach().to(dev), labels.detach().to(dev, torch.long)
    label_max = int(labs.max())
    correct = 0
    try:
        for i in range(0, len(imgs), batch_size):
            out = model(prepare_images(imgs[i:i + batch_size], mean, std))
            if i == 0 and (out.dim() != 2 or label_max >= out.shape[1]):
                raise ValueError(f"labels must be class indices below the model's {tuple(out.shape[1:])} outputs, "
                                 f"got a label {label_max}")
            correct += int((out.argmax(1) == labs[i:i + batch_size]).sum())
    finally:
        model.train(was_training)
    return correct / max(1, len(imgs))


def _check_labels(labels: torch.Tensor | None, n: int, task: str, name: str) -> None:
    """For classification: ``n`` integer class indices >= 0 (``name`` is the samples' name)."""
    if task != "classify":
        return
    label_name = "labels" if name == "images" else "eval labels"
    if labels is None:
        raise ValueError("task='classify' needs labels")
    check_tensor(label_name, labels, ndim=1, dtypes="integer")
    if labels.shape != (n,):
        raise ValueError(f"{label_name} must have shape ({n},), got {tuple(labels.shape)}")
    if int(labels.min()) < 0:
        raise ValueError(f"{label_name} must be class indices >= 0, got minimum {int(labels.min())}")


def _check_images(images: torch.Tensor, name: str, channels: int) -> None:
    """Images (N, C, H, W) with ``channels`` channels, uint8 (0..255) or float in [0, 1], finite, non-empty."""
    check_tensor(name, images, ndim=4, nonempty=True)
    if images.shape[1] != channels:
        raise ValueError(f"{name} must have shape (N, {channels}, H, W), got {tuple(images.shape)}")
    if images.dtype != torch.uint8:
        if not images.is_floating_point():
            raise TypeError(f"{name} must be uint8 (0..255) or float (in [0, 1]), got {images.dtype}")
        check_unit_range(name, images.detach())


def _check_data(images: torch.Tensor, labels: torch.Tensor | None, task: str, name: str = "images") -> None:
    """CIFAR-style images (N, 3, H, W), uint8 or float in [0, 1]; labels integers >= 0."""
    _check_images(images, name, 3)
    _check_labels(labels, images.shape[0], task, name)


def _check_samples(x: torch.Tensor, labels: torch.Tensor | None, task: str, rho_in: Action | None,
                   preprocess: Callable | None, name: str = "images") -> None:
    """The data :func:`train` takes: ``preprocess.check`` when the preprocess has one, else
    float samples; of shape (N, *rho_in.shape) or (N, rho_in.dim) under a symmetry; labels as
    ``_check_labels`` wants."""
    if preprocess is not None and callable(getattr(preprocess, "check", None)):
        preprocess.check(x, name)
    else:
        check_tensor(name, x, nonempty=True, dtypes="float" if preprocess is None else None, finite=True)
    if rho_in is not None and tuple(x.shape[1:]) not in (tuple(rho_in.shape), (rho_in.dim,)):
        raise ValueError(f"{name} must have shape (N, {', '.join(map(str, rho_in.shape))}) or (N, {rho_in.dim}) "
                         f"for the symmetry's rho_in, got {tuple(x.shape)}")
    _check_labels(labels, x.shape[0], task, name)


def _check_hooks(hooks: object, config: TrainConfig) -> dict[str, Callable]:
    """``hooks`` as a dict of callables named in ``_HOOKS``; an after-step hook needs its name in
    ``config.after_step`` (its cache key) and a name needs its hook."""
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, Mapping):
        raise TypeError(f"hooks must be a mapping {{'after_step': f, 'after_epoch': g}}, got {show(hooks)}")
    unknown = set(hooks) - set(_HOOKS)
    if unknown:
        raise ValueError(f"hooks: unknown keys {sorted(map(str, unknown))}; choose from {list(_HOOKS)}")
    for name, fn in hooks.items():
        if not callable(fn):
            raise TypeError(f"hooks[{name!r}] must be callable, got {show(fn)}")
    if ("after_step" in hooks) != bool(config.after_step):
        raise ValueError("an after-step hook and TrainConfig.after_step (its name, the cache key) go together: "
                         f"got hooks {sorted(hooks)} and after_step={config.after_step!r}")
    return dict(hooks)


def _preprocess_key(preprocess: Callable | None) -> Any:
    """The cache key of a preprocess: None, or its ``key`` attribute (plain JSON), never its repr."""
    if preprocess is None:
        return None
    key = getattr(preprocess, "key", None)
    if key is None:
        raise TypeError("a cached or checkpointed run needs a stable name for preprocess: give it a `key` "
                        "attribute (plain JSON), as eqlib.train.Normalize has")
    return key


def _check_device(dev: torch.device) -> torch.device:
    """A device that exists: ``cpu`` (index 0 at most), or a CUDA device below the count."""
    if dev.type == "meta":
        raise ValueError("device 'meta' holds no data: train on 'cpu' or 'cuda'")
    if dev.type == "cpu" and dev.index not in (None, 0):
        raise ValueError(f"device {str(dev)!r} does not exist: the CPU is 'cpu' (or 'cpu:0')")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"device {str(dev)!r} does not exist: {torch.cuda.device_count()} CUDA device(s) here")
    return dev


def _check_model(model: nn.Module) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {show(model)}")
    for pname, param in model.named_parameters():
        check_finite(f"the model's parameter {pname!r}", param.detach())
    for bname, buf in model.named_buffers():
        check_finite(f"the model's buffer {bname!r}", buf)


def _first_weight(model: nn.Module) -> nn.Parameter:
    """The first layer's weight: the first trainable parameter with two or more dimensions."""
    for p in model.parameters():
        if p.requires_grad and p.dim() >= 2:
            return p
    raise ValueError("TrainConfig.first_weight_decay needs a parameter with two or more dimensions (a layer's weight)")


def _make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    params: list | list[dict] = [p for p in model.parameters() if p.requires_grad]
    decays = [config.weight_decay]
    if config.first_weight_decay is not None:  # the first layer's weight in a group of its own
        first = _first_weight(model)
        params = [{"params": [first], "weight_decay": config.first_weight_decay},
                  {"params": [p for p in params if p is not first], "weight_decay": config.weight_decay}]
        decays.append(config.first_weight_decay)
    if config.optimizer == "adam":
        if max(decays) > 0:
            return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
        return torch.optim.Adam(params, lr=config.lr)
    return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)


#: an epoch's mean loss above this is divergence even when finite (losses of normalised data
#: start near 1; 1e15 is no training)
_DIVERGED = 1e15
#: images normalised per block in the training loop: on a GPU, large blocks mean few kernel launches;
#: on a CPU, blocks that stay in cache are faster (8,192 images at once took 4x longer than 1,024)
_PREP_IMAGES_CPU = 1024
_PREP_IMAGES_GPU = 8192
#: least time between progress-bar redraws: a long run in a notebook sends few messages (a test
#: harness such as nbval reads them only after the cell ends, and a flood of them is dropped)
_PROGRESS_SECONDS = 2.0


def _epoch_means(task_losses: list[torch.Tensor], terms: list[tuple[list[float], list[torch.Tensor]]],
                 correct: torch.Tensor | None, n: int, batch_size: int) -> list[float]:
    """[loss, task loss, penalty on the batches, penalty on noise, accuracy] averaged over the
    epoch's ``n`` samples, from the per-batch values; ``terms`` holds, per penalty, the
    weight of each batch and the values of the batches with weight > 0. One device sync."""
    k = torch.full((len(task_losses),), float(batch_size), dtype=torch.float64)
    k[-1] = n - batch_size * (len(task_losses) - 1)  # the last batch may be smaller
    task = torch.stack(task_losses).double().cpu()
    loss, pens = task, []
    for weights, values in terms:
        pen = torch.zeros_like(task)
        if values:
            pen[torch.tensor([w > 0 for w in weights])] = torch.stack(values).double().cpu()
        loss = loss + torch.tensor(weights, dtype=torch.float64) * pen
        pens.append(pen)
    means = [float((v * k).sum() / n) for v in (loss, task, *pens)]
    return [*means, float(correct) / n if correct is not None else float("nan")]


def _cpu_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _empty_history() -> dict[str, list]:
    keys = ("epoch", "loss", "task_loss", "penalty", "noise_penalty", "penalty_weight", "accuracy",
            "test_accuracy", "test_loss", "lr", "images_per_s", "seconds")
    return {k: [] for k in keys}


# --------------------------------------------------------------------------- identity

class _NotResumed(Exception):
    """A checkpoint that is not this run's (already reported)."""


def _state_hash(state: Mapping[str, torch.Tensor]) -> str:
    """Content hash of a state dict: every entry's name, dtype, shape and bytes, in order
    (a permutation of hidden units, which keeps the function, changes it)."""
    return config_hash({"names": list(state), "tensors": [content_hash(v) for v in state.values()]}, length=64)


def _run_spec(model: nn.Module, images: torch.Tensor, labels: torch.Tensor | None, config: TrainConfig,
              eval_data: tuple[torch.Tensor, torch.Tensor] | None, symmetry: tuple[Action, Action] | None,
              preprocess: Callable | None) -> dict[str, Any]:
    """Everything that changes a number of a training run, by content: the model's class,
    repr and initial weights (bytes), the config (with the after-step hook's name), the
    bytes of the images, of the labels (classifiers) and of the evaluation data, the
    symmetry (what each action does to a fixed probe) and the preprocess's key."""
    used_labels = labels if config.task == "classify" else None
    spec = {"model": _model_spec(model), "init": _state_hash(model.state_dict()), "config": config.to_dict(),
            "images": content_hash(images), "labels": None if used_labels is None else content_hash(used_labels),
            "eval": None if eval_data is None else [content_hash(eval_data[0]),
                                                     None if eval_data[1] is None else content_hash(eval_data[1])],
            "preprocess": _preprocess_key(preprocess)}
    if symmetry is not None:
        spec["symmetry"] = {"rho_in": _action_spec(symmetry[0]), "rho_out": _action_spec(symmetry[1])}
    return spec


# --------------------------------------------------------------------------- train

def _check_pair(name: str, value: object) -> tuple[torch.Tensor, torch.Tensor | None]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (samples, labels), got {show(value)}")
    return value[0], value[1]


def _resume(ckpt_path: Path, identity: str, model: nn.Module, optimizer: torch.optim.Optimizer,
            gen: torch.Generator, config: TrainConfig):
    """(optimizer, history, snapshots, start epoch) from the checkpoint when it is this run's,
    else a fresh start (reported)."""
    initial_state = {k: v.clone() for k, v in model.state_dict().items()}
    try:
        state = load_torch(ckpt_path, map_location="cpu")
        if not isinstance(state, dict) or state.get("identity") != identity:
            warnings.warn(f"the checkpoint {ckpt_path} belongs to another run (other data, settings or initial "
                          "weights, or an older eqlib that stored no identity); it is not resumed: training "
                          "from scratch (it will be overwritten)")
            state = None
    except CorruptFileError as exc:
        warnings.warn(f"ignoring unreadable checkpoint {ckpt_path} ({exc}); training from scratch")
        state = None
    try:
        if state is None:
            raise _NotResumed
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        history = {k: list(v) for k, v in state["history"].items()}
        snapshots = [(int(e), s) for e, s in zip(state["snapshot_epochs"], state["snapshots"])]
        return optimizer, history, snapshots, int(state["epoch"])
    except (_NotResumed, KeyError, RuntimeError, ValueError, TypeError) as exc:
        if not isinstance(exc, _NotResumed):
            warnings.warn(f"ignoring unreadable checkpoint {ckpt_path} ({exc}); training from scratch")
        model.load_state_dict(initial_state)
        gen.manual_seed(int(config.seed))
        return _make_optimizer(model, config), _empty_history(), [], 0


@torch.no_grad()
def _evaluate(model: nn.Module, eval_data, task: str, preprocess: Callable | None, dev: torch.device,
              batch_size: int = 1000) -> tuple[float, float]:
    """(accuracy, nan) for classifiers, (nan, mean squared error) for autoencoders, on the
    preprocessed evaluation samples, in batches (one sync)."""
    ex, ey = eval_data
    n = len(ex)
    total = torch.zeros((), dtype=torch.float64, device=dev)
    model.eval()
    for i in range(0, n, batch_size):
        xb = ex[i:i + batch_size].to(dev)
        xb = preprocess(xb) if preprocess is not None else xb.float()
        out = model(xb)
        if task == "classify":
            total += (out.argmax(1) == ey[i:i + batch_size].to(dev)).sum()
        else:
            total += _task_loss(out, xb, None, "autoencode").double() * len(xb)
    model.train()
    value = float(total) / n
    return (value, float("nan")) if task == "classify" else (float("nan"), value)


def _record(history: dict[str, list], epoch: int, s: list[float], pw: float, lr: float, seconds: float, n: int,
            classify: bool, test: tuple[float, float] | None) -> None:
    """Append epoch ``epoch``'s values to ``history`` (``s`` from ``_epoch_means``)."""
    for key, value in (("epoch", epoch), ("loss", s[0]), ("task_loss", s[1]), ("penalty", s[2]),
                       ("noise_penalty", s[3]), ("penalty_weight", pw),
                       ("accuracy", s[4] if classify else float("nan")), ("lr", lr),
                       ("seconds", seconds), ("images_per_s", n / max(seconds, 1e-9))):
        history[key].append(value)
    if test is not None:
        history["test_accuracy"].append(test[0])
        history["test_loss"].append(test[1])


def _save_checkpoint(path: Path, state: dict[str, Any]) -> Path | None:
    """Write ``state`` to ``path`` atomically; ``path``, or None (warned once) when it cannot
    be written: the checkpoint is optional."""
    try:
        save_torch(state, path)
        return path
    except CACHE_WRITE_ERRORS as exc:  # read-only or full disk
        warn_once(f"checkpoint:{path.parent}", f"could not write the checkpoint {path} "
                  f"({type(exc).__name__}: {exc}); training on without checkpoints")
        return None


class _Run:
    """What one epoch of :func:`train` needs besides the model and the config."""

    def __init__(self, config, rho_in, rho_out, prep, x_all, y_all, gen, dev, optimizer, hooks, bar):
        self.config, self.rho_in, self.rho_out, self.prep = config, rho_in, rho_out, prep
        self.x_all, self.y_all, self.gen, self.dev, self.optimizer, self.hooks, self.bar = \
            x_all, y_all, gen, dev, optimizer, hooks, bar
        self.group = rho_in.group if rho_in is not None else None
        self.others = [g for g in self.group if g != self.group.identity] if self.group is not None else []
        self.per_batch = config.augment_mirror and config.augment_per_batch
        self.n = x_all.shape[0]
        self.bs = min(config.batch_size, self.n)
        self.steps_per_epoch = math.ceil(self.n / self.bs)
        self.total_steps = config.epochs * self.steps_per_epoch
        self.block = max(1, (_PREP_IMAGES_CPU if dev.type == "cpu" else _PREP_IMAGES_GPU) // self.bs)
        self.label_max = int(y_all.max()) if y_all is not None else None

    def epoch(self, model: nn.Module, epoch: int) -> tuple[list[float], float, float, float]:
        """Train one epoch: (epoch means of ``_epoch_means``, last penalty weight, last lr,
        seconds); a diverged loss raises."""
        t0 = time.perf_counter()
        s, pw, lr = self._steps(model, epoch)
        seconds = time.perf_counter() - t0
        if self.bar is not None:  # no device sync inside the epoch; the bar redraws at most every few seconds
            self.bar.set_postfix(epoch=epoch + 1, loss=f"{s[0]:.4f}", img_s=f"{self.n / max(seconds, 1e-9):.0f}",
                                 refresh=False)
        if not math.isfinite(s[0]) or abs(s[0]) > _DIVERGED:
            raise FloatingPointError(f"training diverged in epoch {epoch + 1} (loss {s[0]:g}); lower lr or "
                                     f"penalty_weight, or lengthen penalty_ramp")
        return s, pw, lr, seconds

    def _steps(self, model: nn.Module, epoch: int) -> tuple[list[float], float, float]:
        """The epoch's steps: (epoch means of ``_epoch_means``, last penalty weight, last lr)."""
        config, gen, dev, bs, group = self.config, self.gen, self.dev, self.bs, self.group
        perm = torch.randperm(self.n, generator=gen, device=dev)
        elements = _draw_elements(group, self.n, gen, dev) if config.augment_mirror and not self.per_batch else None
        pad = config.augment_crop
        offsets = torch.randint(2 * pad + 1, (self.n, 2), generator=gen, device=dev) if pad else None
        # per batch, kept on the device until the epoch ends (one sync per epoch):
        task_losses: list[torch.Tensor] = []
        terms: list[tuple[list[float], list[torch.Tensor]]] = [([], []), ([], [])]  # (weights, values): x, noise
        predictions: list[torch.Tensor] = []
        pw, lr = 0.0, config.lr
        for b in range(self.steps_per_epoch):
            if b % self.block == 0:  # crop, preprocess (and act on) the next `block` batches in one go
                idx = perm[b * bs:(b + self.block) * bs]
                raw = self.x_all[idx]
                if offsets is not None:  # crop the zero-padded (for uint8 images: black) samples
                    raw = _random_crops(raw, offsets[idx], pad)
                xs = self.prep(raw)
                if elements is not None:
                    xs = _act_each(self.rho_in, elements[idx], xs)
                x_batches = xs.split(bs)
                y_batches = self.y_all[idx].split(bs) if self.y_all is not None else None
            x = x_batches[b % self.block]
            y = y_batches[b % self.block] if y_batches is not None else None
            if self.per_batch:
                x = _act_each(self.rho_in, _draw_elements(group, len(x), gen, dev), x)
            step = epoch * self.steps_per_epoch + b
            lr = _lr_at(config, step, self.total_steps)
            for param_group in self.optimizer.param_groups:
                param_group["lr"] = lr
            frac = step / self.total_steps
            pw, pn = penalty_weight_at(config, frac), penalty_weight_at(config, frac, noise=True)
            out = model(x)
            if self.label_max is not None:  # once: the labels must index the model's outputs
                if out.dim() != 2 or self.label_max >= out.shape[1]:
                    raise ValueError(f"labels must be class indices below the model's {tuple(out.shape[1:])} "
                                     f"outputs, got a label {self.label_max}")
                self.label_max = None
            task_loss = _task_loss(out, x, y, config.task)
            loss = task_loss
            noise = torch.randn(x.shape, generator=gen, device=dev) * config.noise_std if pn > 0 else None
            picks = None
            if (pw > 0 or pn > 0) and config.penalty_samples:
                drawn = torch.randint(group.order, (config.penalty_samples,), generator=gen, device=dev)
                picks = [group[int(i)] for i in drawn]
            for (weights, values), w, inputs in zip(terms, (pw, pn), (x, noise)):
                weights.append(w)
                if w > 0:
                    pen = penalty_term(model, inputs, config.penalty, out=out if inputs is x else None,
                                       symmetry=(self.rho_in, self.rho_out), elements=picks or self.others)
                    loss = loss + w * pen
                    values.append(pen.detach())
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            self.optimizer.step()
            if "after_step" in self.hooks:
                self.hooks["after_step"](model, step)
            task_losses.append(task_loss.detach())
            if y is not None:
                predictions.append(out.argmax(1))
            if self.bar is not None:
                self.bar.update(1)
        correct = (torch.cat(predictions) == self.y_all[perm]).sum() if predictions else None
        return _epoch_means(task_losses, terms, correct, self.n, bs), pw, lr


def train(model: nn.Module, data: tuple[torch.Tensor, torch.Tensor | None], config: TrainConfig, *,
          symmetry: tuple[Action, Action] | None = None,
          preprocess: Callable[[torch.Tensor], torch.Tensor] | None = None,
          hooks: Mapping[str, Callable] | None = None, device: str | torch.device | None = None,
          progress: bool = True, checkpoints: str | Path | None = None, checkpoint_every: int = 1,
          eval_data: tuple[torch.Tensor, torch.Tensor | None] | None = None) -> TrainResult:
    """Train ``model`` on ``data = (samples, labels)`` under ``config``: the one training loop.

    Each step takes a batch in a seeded order, cropped when ``config.augment_crop``,
    ``preprocess``-ed on the device (None: the samples as floats), acted on by a random element of G per sample when
    ``config.augment_mirror``, and adds to the task loss the penalty
    mean_g mean (f(ρ_in(g)x) − ρ_out(g)f(x))² (ρ_out = identity for ``penalty="invariance"``)
    on the batch and, with ``config.penalty_noise``, on isotropic noise, each with its
    ramped weight. Images are a preset, not a mode: ``**image_preset(shape)`` passes the
    mirror and :class:`Normalize`.

    Random draws, in order, from one generator seeded with ``config.seed``: per epoch the
    batch order, then the augmentation elements of the epoch's samples (with
    ``config.augment_per_batch``, each batch's at the start of the batch instead), then
    the crop offsets (``config.augment_crop``); per batch, the penalty noise, then the
    sampled penalty elements. Crops are cut from the raw samples, before ``preprocess``.

    Args:
        model: any module mapping preprocessed samples to logits (N, K) or to
            reconstructions of the samples' shape or their flattening.
        data: (samples, labels); samples are moved once to the device; labels are integer
            class indices (N,) for ``task="classify"`` (used as int64; ignored otherwise).
        config: the :class:`TrainConfig`.
        symmetry: ``(rho_in, rho_out)``, actions of one finite group on the preprocessed
            samples and on the outputs; needed by the augmentation and the penalty.
        preprocess: a function applied to blocks of raw samples on the device; its
            ``check(samples, name)``, when it has one, validates the data; its ``key`` is
            its cache key (:class:`Normalize` has both).
        hooks: ``{"after_step": f(model, step), "after_epoch": g(epoch, model, history)}``;
            ``f`` runs after every optimizer step (``step`` counts from 0; its name goes in
            ``config.after_step``), ``g`` after every epoch (after the checkpoint).
        device: where to train (default :func:`eqlib.device.default_device`).
        progress: show a ``tqdm.auto`` bar with loss and samples/s.
        checkpoints: a file path; every ``checkpoint_every`` epochs the full state
            (weights, optimizer, random generator, history) is saved there atomically
            with the run's identity (a content hash of the initial weights, the data,
            config, symmetry and the preprocess's key), and if the file exists when
            ``train`` starts, training resumes from it only when its identity is this
            run's; a checkpoint of another run is reported and training starts afresh.
        eval_data: optional (samples, labels) for test accuracy (classifiers) or test loss
            after every epoch.

    Returns:
        :class:`TrainResult`; same seed and same device give the same weights.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    _check_model(model)
    check_bool("progress", progress)
    images, labels = _check_pair("data", data)
    rho_in, rho_out = _check_symmetry(symmetry) if symmetry is not None else (None, None)
    if preprocess is not None and not callable(preprocess):
        raise TypeError(f"preprocess must be callable, got {show(preprocess)}")
    wants = config.augment_mirror or (config.penalty != "none" and config.penalty_weight + config.penalty_noise > 0)
    if rho_in is None and wants:
        raise ValueError("config's augmentation and penalty act by a symmetry: pass symmetry=(rho_in, rho_out) "
                         "(images: **eqlib.train.image_preset(shape))")
    _check_samples(images, labels, config.task, rho_in, preprocess)
    if config.augment_crop and images.dim() != 4:
        raise ValueError(f"TrainConfig.augment_crop crops images (N, C, H, W), got samples of shape "
                         f"{tuple(images.shape)}")
    if eval_data is not None:
        ex, ey = _check_pair("eval_data", eval_data)
        _check_samples(ex, ey, config.task, rho_in, preprocess, "eval images")
        eval_data = (ex.detach(), None if ey is None else ey.detach().long())
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, 1)
    hooks = _check_hooks(hooks, config)
    dev = _check_device(default_device(device))
    model.to(dev)
    images = images.detach()  # the library owns the graph: an input with requires_grad must not join it
    x_all = images.to(dev).contiguous()  # once; any memory layout gives the same numbers
    y_all = labels.detach().to(dev, torch.long) if (labels is not None and config.task == "classify") else None
    gen = torch_generator(int(config.seed), dev)
    optimizer = _make_optimizer(model, config)
    history, snapshots, start_epoch = _empty_history(), [], 0
    ckpt_path = Path(checkpoints) if checkpoints is not None else None
    identity = None
    if ckpt_path is not None:  # what the checkpoint must belong to: this run, by content
        identity = config_hash(_run_spec(model, images, labels, config, eval_data, symmetry, preprocess), length=64)
        if ckpt_path.exists():
            optimizer, history, snapshots, start_epoch = _resume(ckpt_path, identity, model, optimizer, gen, config)
    if config.snapshot_every and start_epoch == 0 and not snapshots:
        snapshots.append((0, _cpu_state(model)))
    prep = preprocess if preprocess is not None else (lambda x: x.float())
    run = _Run(config, rho_in, rho_out, prep, x_all, y_all, gen, dev, optimizer, hooks, None)
    n = run.n
    if progress:
        from tqdm.auto import tqdm
        run.bar = tqdm(total=run.total_steps, initial=start_epoch * run.steps_per_epoch,
                       desc=f"train {config.task}", unit="step", leave=False, mininterval=_PROGRESS_SECONDS)
    model.train()
    for epoch in range(start_epoch, config.epochs):
        s, pw, lr, seconds = run.epoch(model, epoch)
        test = _evaluate(model, eval_data, config.task, preprocess, dev) if eval_data is not None else None
        _record(history, epoch + 1, s, pw, lr, seconds, n, y_all is not None, test)
        if config.snapshot_every and (epoch + 1) % config.snapshot_every == 0:
            snapshots.append((epoch + 1, _cpu_state(model)))
        if ckpt_path is not None and ((epoch + 1) % checkpoint_every == 0 or epoch + 1 == config.epochs):
            ckpt_path = _save_checkpoint(ckpt_path, {
                "identity": identity, "model": _cpu_state(model), "optimizer": optimizer.state_dict(),
                "generator": gen.get_state(), "history": history, "epoch": epoch + 1,
                "snapshot_epochs": [e for e, _ in snapshots], "snapshots": [s for _, s in snapshots]})
        if "after_epoch" in hooks:
            hooks["after_epoch"](epoch + 1, model, history)
    if run.bar is not None:
        run.bar.close()
    model.eval()
    return TrainResult(model=model, history=history, snapshots=snapshots, config=config)

# --------------------------------------------------------------------------- cache

def _model_spec(model: nn.Module) -> dict[str, Any]:
    shapes = {k: list(v.shape) for k, v in model.state_dict().items()}
    return {"class": type(model).__name__, "repr": repr(model), "shapes": shapes}


def cached_train(build_model: Callable[[], nn.Module], config: TrainConfig,
                 data: tuple[torch.Tensor, torch.Tensor | None], *,
                 symmetry: tuple[Action, Action] | None = None,
                 preprocess: Callable[[torch.Tensor], torch.Tensor] | None = None,
                 hooks: Mapping[str, Callable] | None = None,
                 cache_key_extra: Mapping[str, Any] | None = None, data_spec: Mapping[str, Any] | None = None,
                 device: str | torch.device | None = None, progress: bool = True,
                 eval_data: tuple[torch.Tensor, torch.Tensor | None] | None = None,
                 checkpoint_every: int = 1) -> TrainResult:
    """:func:`train` ``build_model()`` on ``data = (samples, labels)``, cached on disk.

    ``symmetry``, ``preprocess`` and ``hooks`` are passed to :func:`train`. The cache key
    is :func:`eqlib.io.config_hash` of everything that changes a number, by content
    (:func:`eqlib.io.content_hash` of the bytes, never a sample or a sum): the model's
    class, repr and initial weights (in order, so a permuted initialisation is another
    run), the config (which names the after-step hook), the samples, the labels
    (classifiers), ``eval_data``, the symmetry (its group and what each action does to a
    fixed probe), the preprocess's ``key``, ``data_spec`` (a description added to the
    content, never replacing it) and ``cache_key_extra`` (plain JSON). The after-epoch
    hook only observes and is not keyed. The result (weights, history, snapshots) is
    saved atomically under ``cache_dir("models")`` with that identity, and a file whose
    stored identity differs is retrained; while training, a checkpoint file beside it lets
    an interrupted run resume (:func:`train` resumes only a checkpoint of the same run). A
    corrupt cache file is rebuilt with a warning.

    Returns:
        :class:`TrainResult` with the model on the CPU in eval mode (``from_cache`` set
        when it was loaded).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not callable(build_model) or isinstance(build_model, nn.Module):
        raise TypeError(f"build_model must be a function returning a fresh model, got {show(build_model)}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    images, labels = _check_pair("data", data)
    rho_in = _check_symmetry(symmetry)[0] if symmetry is not None else None
    _check_samples(images, labels, config.task, rho_in, preprocess)
    _preprocess_key(preprocess)
    _check_hooks(hooks, config)
    for name, value in (("cache_key_extra", cache_key_extra), ("data_spec", data_spec)):
        if value is not None and not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a mapping (JSON-serialisable), got {show(value)}")
    model = build_model()
    if not isinstance(model, nn.Module):
        raise TypeError(f"build_model must return a torch.nn.Module, got {show(model)}")
    if eval_data is not None:
        _check_pair("eval_data", eval_data)
    run_spec = _run_spec(model, images, labels, config, eval_data, symmetry, preprocess)
    for name, value in (("cache_key_extra", cache_key_extra), ("data_spec", data_spec)):
        if value is not None:
            try:
                config_hash({name: value})
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{name} must be plain JSON: {exc}") from None
    spec = {"run": run_spec, "data_spec": None if data_spec is None else dict(data_spec),
            "extra": dict(cache_key_extra or {})}
    identity = config_hash(spec, length=64)
    key = identity[:16]
    kwargs = {"symmetry": symmetry, "preprocess": preprocess, "hooks": hooks, "device": device,
              "progress": progress, "eval_data": eval_data}
    try:
        folder = cache_dir("models")
    except OSError as exc:  # read-only or full disk: the cache is optional
        warn_once(f"models-cache:{exc.filename}", f"the model cache cannot be created ({exc}); training "
                  "without it (set EQLIB_CACHE to a writable folder to keep the results)")
        result = train(model, (images, labels), config, **kwargs)
        result.model.to("cpu")
        return result
    path = folder / f"{type(model).__name__}-{config.task}-{key}.pt"
    ckpt = folder / f"{type(model).__name__}-{config.task}-{key}.ckpt"
    if path.exists():
        try:
            state = load_torch(path)
            if state.get("identity") != identity:
                raise ValueError("it was stored for another run (or by an older eqlib)")
            model.load_state_dict(state["model"])
            snapshots = [(int(e), s) for e, s in zip(state["snapshot_epochs"], state["snapshots"])]
            return TrainResult(model=model.eval(), history={k: list(v) for k, v in state["history"].items()},
                               snapshots=snapshots, config=config, from_cache=True)
        except (CorruptFileError, KeyError, RuntimeError, ValueError, TypeError) as exc:
            warnings.warn(f"cached model {path.name} is corrupt ({exc}); retraining it")
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
            model = build_model()
    result = train(model, (images, labels), config, checkpoints=ckpt, checkpoint_every=checkpoint_every, **kwargs)
    result.model.to("cpu")
    try:
        save_torch({"identity": identity, "model": _cpu_state(result.model), "history": result.history,
                    "snapshot_epochs": [e for e, _ in result.snapshots],
                    "snapshots": [s for _, s in result.snapshots], "config": json.dumps(config.to_dict())}, path)
        ckpt.unlink(missing_ok=True)
    except CACHE_WRITE_ERRORS as exc:  # read-only or full disk: the result is still good
        warn_once(f"models-cache-write:{folder}", f"could not write the model cache {path} "
                  f"({type(exc).__name__}: {exc}); the result is returned but not cached")
    return result
