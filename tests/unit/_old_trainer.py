"""FROZEN copy of eqlib/train.py and of the filter search's loop (filter_search._search_run's
training part) as they were before the one-loop trainer (issue 24, item 2), for
tests/unit/test_train_equivalence.py only. Do not edit: it is the reference the new loop must
reproduce. Imports are absolute; the image helpers come from eqlib.images, where they now live.
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

from eqlib.actions import Action, PermutationAction, equivariance_residual
from eqlib.images import CIFAR10_MEAN, CIFAR10_STD, MIRROR_AXES, normalize
from eqlib.images import mirror as mirror_action
from eqlib.images import mirror_images as _mirror_images
from eqlib.device import default_device
from eqlib.io import (CACHE_WRITE_ERRORS, CorruptFileError, cache_dir, config_hash, content_hash, load_torch, save_torch,
                 warn_once)
from eqlib.validation import check_bool, check_choice, check_finite, check_float, check_int, check_tensor, show

__all__ = ["TrainConfig", "TrainResult", "train", "cached_train", "mirror_images", "prepare_images",
           "penalty_term", "penalty_weight_at", "learning_rate_at", "evaluate_accuracy", "CIFAR_MEAN", "CIFAR_STD"]

#: per-channel mean and standard deviation of the CIFAR-10 training images (in [0, 1])
CIFAR_MEAN, CIFAR_STD = CIFAR10_MEAN, CIFAR10_STD

_TASKS = ("classify", "autoencode")
_OPTIMIZERS = ("adam", "sgd")
_SCHEDULES = ("constant", "warmup_linear")
_PENALTIES = ("none", "equivariance", "invariance")


#: the largest learning rate :class:`TrainConfig` accepts (larger ones only diverge)
LR_MAX = 100.0


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (its fields define the cache hash).

    Args:
        task: ``"classify"`` (cross-entropy on logits) or ``"autoencode"`` (mean squared
            error between the reconstruction and the normalised input).
        epochs: passes over the data.
        batch_size: images per step.
        lr: peak learning rate.
        optimizer: ``"adam"`` or ``"sgd"`` (with ``momentum``).
        momentum: SGD momentum (ignored by Adam).
        weight_decay: decoupled (AdamW-style) for Adam, L2 for SGD.
        schedule: ``"constant"`` or ``"warmup_linear"`` (linear warm-up over
            ``warmup`` of training, then linear decay to 0).
        warmup: fraction of training spent warming up.
        augment_mirror: mirror each image with probability 1/2 along ``mirror_axis``.
        penalty: ``"none"``, ``"equivariance"`` (autoencoders: f(mx) ≈ m f(x)) or
            ``"invariance"`` (classifiers: f(mx) ≈ f(x)).
        penalty_weight: the weight once fully on.
        penalty_start: fraction of training after which the penalty is on (the paper:
            the second half, 0.5).
        penalty_ramp: fraction of training over which the weight ramps linearly from 0
            (0 switches it on abruptly).
        mirror_axis: ``"horizontal"`` (the trained symmetry) or ``"vertical"``.
        mean, std: per-channel normalisation applied on the device.
        grad_clip: clip the gradient norm to this value (0: no clipping).
        snapshot_every: keep a copy of the weights every this many epochs (0: none);
            epoch 0 (the initialisation) is included.
        seed: seed of the batch order, augmentation and nothing else (the model's
            initialisation is the model builder's business).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    task: str = "classify"
    epochs: int = 10
    batch_size: int = 256
    lr: float = 1e-3
    optimizer: str = "adam"
    momentum: float = 0.9
    weight_decay: float = 0.0
    schedule: str = "constant"
    warmup: float = 0.05
    augment_mirror: bool = False
    penalty: str = "none"
    penalty_weight: float = 0.0
    penalty_start: float = 0.5
    penalty_ramp: float = 0.1
    mirror_axis: str = "horizontal"
    mean: tuple[float, float, float] = CIFAR_MEAN
    std: tuple[float, float, float] = CIFAR_STD
    grad_clip: float = 0.0
    snapshot_every: int = 0
    seed: int = 0

    def __post_init__(self):
        """Check every field (NaN, inf, non-integers and unknown options are errors that name
        the field); integral floats such as ``epochs=2.0`` become ints."""
        for name, options in (("task", _TASKS), ("optimizer", _OPTIMIZERS), ("schedule", _SCHEDULES),
                              ("penalty", _PENALTIES), ("mirror_axis", tuple(MIRROR_AXES))):
            check_choice(f"TrainConfig.{name}", getattr(self, name), options)
        for name, low in (("epochs", 1), ("batch_size", 1), ("snapshot_every", 0), ("seed", 0)):
            value = getattr(self, name)
            # torch generators take 64-bit seeds; an epoch count beyond 10^6 would run for ever
            high = {"seed": 2**63 - 1, "epochs": 10**6, "batch_size": 2**31}.get(name)
            if check_int(f"TrainConfig.{name}", value, low, high) != value or type(value) is not int:
                object.__setattr__(self, name, int(value))
        check_float("TrainConfig.lr", self.lr, 0.0, LR_MAX, low_open=True)
        check_float("TrainConfig.momentum", self.momentum, 0.0, 1.0)
        for name in ("weight_decay", "penalty_weight", "grad_clip"):
            check_float(f"TrainConfig.{name}", getattr(self, name), 0.0)
        for name in ("penalty_start", "penalty_ramp", "warmup"):
            check_float(f"TrainConfig.{name}", getattr(self, name), 0.0, 1.0)
        check_bool("TrainConfig.augment_mirror", self.augment_mirror)
        if self.penalty == "equivariance" and self.task != "autoencode":
            raise ValueError("the equivariance penalty f(mx) ≈ m f(x) needs image outputs: use task='autoencode' "
                             "(classifiers take penalty='invariance')")
        for name in ("mean", "std"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes, set, frozenset, Mapping)) or not hasattr(value, "__len__") \
                    or len(value) != 3:
                raise ValueError(f"TrainConfig.{name} must hold 3 numbers (one per channel), got {show(value)}")
            for i, v in enumerate(value):
                check_float(f"TrainConfig.{name}[{i}]", v, 0.0 if name == "std" else None, low_open=True)
        object.__setattr__(self, "mean", tuple(float(v) for v in self.mean))
        object.__setattr__(self, "std", tuple(float(v) for v in self.std))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the fields."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}

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


# --------------------------------------------------------------------------- pieces

def mirror_images(x: torch.Tensor, axis: str = "horizontal") -> torch.Tensor:
    """:func:`eqlib.actions.mirror_images` on images (N, C, H, W) or on flattened CIFAR-sized
    images ``(N, 3·32·32)`` (MLP outputs).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if x.dim() == 2:
        if x.shape[1] != 3 * 32 * 32:
            raise ValueError(f"flattened images must have 3·32·32 = 3072 coordinates, got {x.shape[1]}")
        return _mirror_images(x, axis, (3, 32, 32))
    if x.dim() != 4:
        raise ValueError(f"x must be images (N, C, H, W) or (N, 3072), got shape {tuple(x.shape)}")
    return _mirror_images(x, axis)


def prepare_images(images: torch.Tensor, mean=CIFAR_MEAN, std=CIFAR_STD) -> torch.Tensor:
    """What the trained models take: uint8 images (N, C, H, W) → :func:`eqlib.data.normalize`
    (``mean`` and ``std`` hold one number per channel, C = 3 for the CIFAR defaults);
    float images (in [0, 1]; 0..255 floats are refused, never normalised as if in [0, 1])
    are normalised the same way.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_tensor("images", images, ndim=4)
    c = images.shape[1]
    for name, values in (("mean", mean), ("std", std)):
        if not isinstance(values, (str, bytes)) and hasattr(values, "__len__") and len(values) != c:
            raise ValueError(f"images have {c} channel(s) (shape {tuple(images.shape)}) but {name} holds "
                             f"{len(values)} numbers: mean and std need one number per channel of images")
    if images.dtype == torch.uint8:
        return normalize(images, mean, std)
    if not images.is_floating_point():
        raise TypeError(f"images must be uint8 (0..255) or float (in [0, 1]), got {images.dtype}")
    _check_unit_range("images", images.detach())
    m = torch.tensor(mean, device=images.device, dtype=torch.float32).view(1, c, 1, 1)
    s = torch.tensor(std, device=images.device, dtype=torch.float32).view(1, c, 1, 1)
    return (images.float() - m) / s


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
    terms = [equivariance_residual(model, rho_in, rho_out, x, g=g, fx=fx).pow(2).mean() for g in elements]
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
    """ρ(g_n) x_n for every sample n, with g_n = the group's element number ``index[n]``."""
    out = x.clone()
    for g in rho.group:
        mask = index == g.index
        if g != rho.group.identity and bool(mask.any()):
            out[mask] = rho.act(g, x[mask])
    return out


def penalty_weight_at(config: TrainConfig, progress: float) -> float:
    """The penalty weight after fraction ``progress`` ∈ [0, 1] of training (0 before ``penalty_start``,
    then a linear ramp over ``penalty_ramp``, then ``penalty_weight``).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_float("progress", progress, 0.0, 1.0)
    if config.penalty == "none" or config.penalty_weight == 0:
        return 0.0
    if progress < config.penalty_start:
        return 0.0
    if config.penalty_ramp <= 0:
        return float(config.penalty_weight)
    return float(config.penalty_weight) * min(1.0, (progress - config.penalty_start) / config.penalty_ramp)


def learning_rate_at(config: TrainConfig, progress: float) -> float:
    """The learning rate after fraction ``progress`` of training under ``config.schedule``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_float("progress", progress, 0.0, 1.0)
    if config.schedule == "constant":
        return float(config.lr)
    if config.warmup > 0 and progress < config.warmup:
        return float(config.lr) * progress / config.warmup
    return float(config.lr) * max(0.0, (1.0 - progress) / max(1e-12, 1.0 - config.warmup))


def _task_loss(out: torch.Tensor, x: torch.Tensor, y: torch.Tensor | None, task: str) -> torch.Tensor:
    if task == "classify":
        return F.cross_entropy(out, y)
    return F.mse_loss(out, x.reshape(out.shape))


@torch.no_grad()
def evaluate_accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, batch_size: int = 1000,
                      mean=CIFAR_MEAN, std=CIFAR_STD, device: str | torch.device | None = None) -> float:
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


def _check_data(images: torch.Tensor, labels: torch.Tensor | None, task: str, name: str = "images") -> None:
    """Images uint8 (0..255) or float in [0, 1], finite, non-empty; labels integers >= 0."""
    check_tensor(name, images, ndim=4, nonempty=True)
    if images.shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3, H, W), got {tuple(images.shape)}")
    if images.dtype != torch.uint8:
        if not images.is_floating_point():
            raise TypeError(f"{name} must be uint8 (0..255) or float (in [0, 1]), got {images.dtype}")
        _check_unit_range(name, images.detach())
    _check_labels(labels, images.shape[0], task, name)


def _check_unit_range(name: str, images: torch.Tensor) -> None:
    """Float images must be finite and in [0, 1] (0..255 floats are the commonest mistake)."""
    check_finite(name, images)
    if images.numel():
        lo, hi = float(images.min()), float(images.max())
        if lo < 0.0 or hi > 1.0:
            raise ValueError(f"float {name} must lie in [0, 1], got values in [{lo:g}, {hi:g}]"
                             + ("; pass uint8 images, or divide by 255" if hi > 1.0 else ""))


def _check_samples(x: torch.Tensor, labels: torch.Tensor | None, task: str, rho_in: Action,
                   name: str = "images") -> None:
    """Group-generic data: float samples (N, *rho_in.shape) or (N, rho_in.dim); labels as for images."""
    check_tensor(name, x, nonempty=True, dtypes="float", finite=True)
    if tuple(x.shape[1:]) not in (tuple(rho_in.shape), (rho_in.dim,)):
        raise ValueError(f"{name} must have shape (N, {', '.join(map(str, rho_in.shape))}) or (N, {rho_in.dim}) "
                         f"for the symmetry's rho_in, got {tuple(x.shape)}")
    _check_labels(labels, x.shape[0], task, name)


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


def _make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if config.optimizer == "adam":
        if config.weight_decay > 0:
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


def _epoch_means(task_losses: list[torch.Tensor], penalties: list[torch.Tensor], weights: list[float],
                 correct: torch.Tensor | None, n: int, batch_size: int) -> list[float]:
    """[loss, task loss, penalty, accuracy] averaged over the epoch's ``n`` images, from the
    per-batch values (the penalty is on for the batches with weight > 0); one device sync."""
    k = torch.full((len(task_losses),), float(batch_size), dtype=torch.float64)
    k[-1] = n - batch_size * (len(task_losses) - 1)  # the last batch may be smaller
    task = torch.stack(task_losses).double().cpu()
    pen = torch.zeros_like(task)
    on = torch.tensor([w > 0 for w in weights])
    if penalties:
        pen[on] = torch.stack(penalties).double().cpu()
    loss = task + torch.tensor(weights, dtype=torch.float64) * pen
    means = [float((v * k).sum() / n) for v in (loss, task, pen)]
    return [*means, float(correct) / n if correct is not None else float("nan")]


def _cpu_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _empty_history() -> dict[str, list]:
    keys = ("epoch", "loss", "task_loss", "penalty", "penalty_weight", "accuracy", "test_accuracy", "test_loss",
            "lr", "images_per_s", "seconds")
    return {k: [] for k in keys}


# --------------------------------------------------------------------------- identity

class _NotResumed(Exception):
    """A checkpoint that is not this run's (already reported)."""


def _state_hash(state: Mapping[str, torch.Tensor]) -> str:
    """Content hash of a state dict: every entry's name, dtype, shape and bytes, in order
    (a permutation of hidden units, which keeps the function, changes it)."""
    return config_hash({"names": list(state), "tensors": [content_hash(v) for v in state.values()]}, length=64)


def _run_spec(model: nn.Module, images: torch.Tensor, labels: torch.Tensor | None, config: TrainConfig,
              eval_data: tuple[torch.Tensor, torch.Tensor] | None, sym_spec: Mapping[str, Any] | None
              ) -> dict[str, Any]:
    """Everything that changes a number of a training run, by content: the model's class,
    repr and initial weights (bytes), the config, the bytes of the images, of the labels
    (classifiers) and of the evaluation data, and the symmetry."""
    used_labels = labels if config.task == "classify" else None
    spec = {"model": _model_spec(model), "init": _state_hash(model.state_dict()), "config": config.to_dict(),
            "images": content_hash(images), "labels": None if used_labels is None else content_hash(used_labels),
            "eval": None if eval_data is None else [content_hash(eval_data[0]),
                                                     None if eval_data[1] is None else content_hash(eval_data[1])]}
    if sym_spec is not None:
        spec["symmetry"] = dict(sym_spec)
    return spec


# --------------------------------------------------------------------------- train

def train(model: nn.Module, images: torch.Tensor, labels: torch.Tensor | None, config: TrainConfig,
          device: str | torch.device | None = None, progress: bool = True,
          checkpoints: str | Path | None = None, checkpoint_every: int = 1,
          eval_data: tuple[torch.Tensor, torch.Tensor] | None = None,
          callback: Callable[[int, nn.Module, dict], None] | None = None,
          symmetry: tuple[Action, Action] | None = None, penalty_samples: int = 1) -> TrainResult:
    """Train ``model`` on uint8 ``images`` (N, 3, 32, 32) under ``config``.

    With ``symmetry=(rho_in, rho_out)`` the trainer is group-generic: ``images`` is any float
    tensor ``(N, *rho_in.shape)`` (or ``(N, rho_in.dim)``), used as it is (no normalisation);
    ``augment_mirror`` then acts on every sample by a uniformly random element of G;
    the penalty is the mean over ``penalty_samples`` uniformly sampled g per batch of
    mean (f(ρ_in(g)x) − ρ_out(g)f(x))² (ρ_out = identity for ``penalty="invariance"``).
    ``mirror_axis``, ``mean`` and ``std`` are then unused.

    Args:
        model: any module mapping float images (N, 3, 32, 32) to logits (N, K) or to
            reconstructions (N, 3, 32, 32) / (N, 3072).
        images: uint8 (or float in [0, 1]) images; moved once to the device.
        labels: integer labels (N,) for ``task="classify"`` (any integer dtype, used as
            int64; ignored otherwise).
        config: the :class:`TrainConfig`.
        device: where to train (default :func:`eqlib.device.default_device`).
        progress: show a ``tqdm.auto`` bar with loss and images/s.
        checkpoints: a file path; every ``checkpoint_every`` epochs the full state
            (weights, optimizer, random generator, history) is saved there atomically
            with the run's identity (a content hash of the initial weights, the images,
            labels, evaluation data, config and symmetry), and if the file exists when
            ``train`` starts, training resumes from it only when its identity is this
            run's; a checkpoint of another run is reported and training starts afresh.
        eval_data: optional (images, labels) to record test accuracy (classifiers) or
            test loss after every epoch.
        callback: called as ``callback(epoch, model, history)`` after each epoch (after
            the checkpoint is saved).
        symmetry: ``(rho_in, rho_out)``, actions of one finite group (see above).
        penalty_samples: group elements sampled per batch for the symmetry penalty.

    Returns:
        :class:`TrainResult`; same seed and same device give the same weights.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    _check_model(model)
    rho_in = rho_out = None
    check_bool("progress", progress)
    penalty_samples = check_int("penalty_samples", penalty_samples, 1, 10**4)
    if symmetry is not None:
        rho_in, rho_out = _check_symmetry(symmetry)
        _check_samples(images, labels, config.task, rho_in)
    else:
        _check_data(images, labels, config.task)
    if eval_data is not None:
        if not isinstance(eval_data, (tuple, list)) or len(eval_data) != 2:
            raise TypeError(f"eval_data must be a pair (images, labels), got {show(eval_data)}")
        if symmetry is not None:
            _check_samples(eval_data[0], eval_data[1], config.task, rho_in, "eval images")
        else:
            _check_data(eval_data[0], eval_data[1], config.task, "eval images")
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, 1)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {show(callback)}")
    dev = _check_device(default_device(device))
    model.to(dev)
    n = images.shape[0]
    bs = min(config.batch_size, n)
    steps_per_epoch = math.ceil(n / bs)
    total_steps = config.epochs * steps_per_epoch
    images = images.detach()  # the library owns the graph: an input with requires_grad must not join it
    x_all = images.to(dev).contiguous()  # once; any memory layout gives the same numbers
    y_all = labels.detach().to(dev, torch.long) if (labels is not None and config.task == "classify") else None
    if eval_data is not None:
        eval_data = (eval_data[0].detach(), None if eval_data[1] is None else eval_data[1].detach().long())
    scale = 255.0 if x_all.dtype == torch.uint8 else 1.0
    # (x / scale - mean) / std  ==  x * mul - sub, fused in place per batch
    mul = (1.0 / (scale * torch.tensor(config.std, device=dev))).view(1, 3, 1, 1)
    sub = (torch.tensor(config.mean, device=dev) / torch.tensor(config.std, device=dev)).view(1, 3, 1, 1)
    axis = MIRROR_AXES[config.mirror_axis]
    label_max = int(y_all.max()) if y_all is not None else None

    gen = torch.Generator(device=dev)
    gen.manual_seed(int(config.seed))
    optimizer = _make_optimizer(model, config)
    history = _empty_history()
    snapshots: list[tuple[int, dict]] = []
    start_epoch = 0
    ckpt_path = Path(checkpoints) if checkpoints is not None else None
    identity = None
    if ckpt_path is not None:  # what the checkpoint must belong to: this run, by content
        sym_spec = None if rho_in is None else {"penalty_samples": penalty_samples, "rho_in": _action_spec(rho_in),
                                                "rho_out": _action_spec(rho_out)}
        identity = config_hash(_run_spec(model, images, labels, config, eval_data, sym_spec), length=64)
    if ckpt_path is not None and ckpt_path.exists():
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
            start_epoch = int(state["epoch"])
        except (_NotResumed, KeyError, RuntimeError, ValueError, TypeError) as exc:
            if not isinstance(exc, _NotResumed):
                warnings.warn(f"ignoring unreadable checkpoint {ckpt_path} ({exc}); training from scratch")
            model.load_state_dict(initial_state)
            optimizer = _make_optimizer(model, config)
            gen.manual_seed(int(config.seed))
            history, snapshots, start_epoch = _empty_history(), [], 0
    if config.snapshot_every and start_epoch == 0 and not snapshots:
        snapshots.append((0, _cpu_state(model)))

    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total_steps, initial=start_epoch * steps_per_epoch, desc=f"train {config.task}",
                   unit="step", leave=False, mininterval=_PROGRESS_SECONDS)
    model.train()
    block = max(1, (_PREP_IMAGES_CPU if dev.type == "cpu" else _PREP_IMAGES_GPU) // bs)  # batches prepared together
    for epoch in range(start_epoch, config.epochs):
        t0 = time.perf_counter()
        perm = torch.randperm(n, generator=gen, device=dev)
        flips = (torch.rand(n, generator=gen, device=dev) < 0.5) if config.augment_mirror and rho_in is None \
            else None
        elements = torch.randint(rho_in.group.order, (n,), generator=gen, device=dev) \
            if config.augment_mirror and rho_in is not None else None
        # per batch, kept on the device until the epoch ends (one sync per epoch):
        task_losses: list[torch.Tensor] = []
        penalties: list[torch.Tensor] = []  # batches with the penalty on
        predictions: list[torch.Tensor] = []
        weights: list[float] = []  # penalty weight of each batch
        pw = 0.0
        lr = config.lr
        for b in range(steps_per_epoch):
            if b % block == 0:  # normalise (and mirror) the next `block` batches in one go
                idx = perm[b * bs:(b + block) * bs]
                if rho_in is None:
                    xs = x_all[idx].float().mul_(mul).sub_(sub)
                else:  # group-generic: samples as they are
                    xs = x_all[idx].float()
                if flips is not None:
                    xs = torch.where(flips[idx].view(-1, 1, 1, 1), xs.flip(axis), xs)
                if elements is not None:
                    xs = _act_each(rho_in, elements[idx], xs)
                x_batches = xs.split(bs)
                y_batches = y_all[idx].split(bs) if y_all is not None else None
            x = x_batches[b % block]
            y = y_batches[b % block] if y_batches is not None else None
            frac = (epoch * steps_per_epoch + b) / total_steps
            lr = learning_rate_at(config, frac)
            for group in optimizer.param_groups:
                group["lr"] = lr
            pw = penalty_weight_at(config, frac)
            out = model(x)
            if label_max is not None:  # once: the labels must index the model's outputs
                if out.dim() != 2 or label_max >= out.shape[1]:
                    raise ValueError(f"labels must be class indices below the model's {tuple(out.shape[1:])} "
                                     f"outputs, got a label {label_max}")
                label_max = None
            task_loss = _task_loss(out, x, y, config.task)
            loss = task_loss
            if pw > 0:
                if rho_in is None:
                    pen = penalty_term(model, x, config.penalty, config.mirror_axis, out=out)
                else:
                    picks = torch.randint(rho_in.group.order, (penalty_samples,), generator=gen, device=dev)
                    pen = penalty_term(model, x, config.penalty, out=out, symmetry=(rho_in, rho_out),
                                       elements=[rho_in.group[int(i)] for i in picks])
                loss = task_loss + pw * pen
                penalties.append(pen.detach())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            task_losses.append(task_loss.detach())
            weights.append(pw)
            if y is not None:
                predictions.append(out.argmax(1))
            if bar is not None:
                bar.update(1)
        correct = (torch.cat(predictions) == y_all[perm]).sum() if predictions else None
        s = _epoch_means(task_losses, penalties, weights, correct, n, bs)
        seconds = time.perf_counter() - t0
        if bar is not None:  # no device sync inside the epoch; the bar redraws at most every few seconds
            bar.set_postfix(epoch=epoch + 1, loss=f"{s[0]:.4f}", img_s=f"{n / max(seconds, 1e-9):.0f}", refresh=False)
        if not math.isfinite(s[0]) or abs(s[0]) > _DIVERGED:
            raise FloatingPointError(f"training diverged in epoch {epoch + 1} (loss {s[0]:g}); lower lr or "
                                     f"penalty_weight, or lengthen penalty_ramp")
        history["epoch"].append(epoch + 1)
        history["loss"].append(s[0])
        history["task_loss"].append(s[1])
        history["penalty"].append(s[2])
        history["penalty_weight"].append(pw)
        history["accuracy"].append(s[3] if y_all is not None else float("nan"))
        history["lr"].append(lr)
        history["seconds"].append(seconds)
        history["images_per_s"].append(n / max(seconds, 1e-9))
        if eval_data is not None:
            ex, ey = eval_data
            model.eval()
            if rho_in is not None:  # group-generic: raw samples
                with torch.no_grad():
                    xe = ex.to(dev).float()
                    oe = model(xe)
                    if config.task == "classify":
                        history["test_accuracy"].append(float((oe.argmax(1) == ey.to(dev)).float().mean()))
                        history["test_loss"].append(float("nan"))
                    else:
                        history["test_loss"].append(float(_task_loss(oe, xe, None, "autoencode")))
                        history["test_accuracy"].append(float("nan"))
            elif config.task == "classify":
                history["test_accuracy"].append(evaluate_accuracy(model, ex, ey, mean=config.mean, std=config.std))
                history["test_loss"].append(float("nan"))
            else:
                with torch.no_grad():
                    xe = prepare_images(ex[:2000].to(dev), config.mean, config.std)
                    history["test_loss"].append(float(_task_loss(model(xe), xe, None, "autoencode")))
                history["test_accuracy"].append(float("nan"))
            model.train()
        if config.snapshot_every and (epoch + 1) % config.snapshot_every == 0:
            snapshots.append((epoch + 1, _cpu_state(model)))
        if ckpt_path is not None and ((epoch + 1) % checkpoint_every == 0 or epoch + 1 == config.epochs):
            try:
                save_torch({"identity": identity, "model": _cpu_state(model), "optimizer": optimizer.state_dict(),
                            "generator": gen.get_state(), "history": history, "epoch": epoch + 1,
                            "snapshot_epochs": [e for e, _ in snapshots], "snapshots": [s for _, s in snapshots]},
                           ckpt_path)
            except CACHE_WRITE_ERRORS as exc:  # read-only or full disk: the checkpoint is optional
                warn_once(f"checkpoint:{ckpt_path.parent}", f"could not write the checkpoint {ckpt_path} "
                          f"({type(exc).__name__}: {exc}); training on without checkpoints")
                ckpt_path = None
        if callback is not None:
            callback(epoch + 1, model, history)
    if bar is not None:
        bar.close()
    model.eval()
    return TrainResult(model=model, history=history, snapshots=snapshots, config=config)


# --------------------------------------------------------------------------- cache

def _model_spec(model: nn.Module) -> dict[str, Any]:
    shapes = {k: list(v.shape) for k, v in model.state_dict().items()}
    return {"class": type(model).__name__, "repr": repr(model), "shapes": shapes}


def cached_train(build_model: Callable[[], nn.Module], config: TrainConfig,
                 data: tuple[torch.Tensor, torch.Tensor | None], cache_key_extra: Mapping[str, Any] | None = None,
                 data_spec: Mapping[str, Any] | None = None, device: str | torch.device | None = None,
                 progress: bool = True, eval_data: tuple[torch.Tensor, torch.Tensor] | None = None,
                 checkpoint_every: int = 1, callback: Callable[[int, nn.Module, dict], None] | None = None,
                 symmetry: tuple[Action, Action] | None = None, penalty_samples: int = 1,
                 ) -> TrainResult:
    """:func:`train` ``build_model()`` on ``data = (images, labels)``, cached on disk.

    ``symmetry`` and ``penalty_samples`` are passed to :func:`train` (the group-generic
    trainer). The cache key is :func:`eqlib.io.config_hash` of everything that changes a
    number, by content (:func:`eqlib.io.content_hash` of the bytes, never a sample or a
    sum): the model's class, repr and initial weights (in order, so a permuted
    initialisation is another run), the config, the images, the labels (classifiers),
    ``eval_data``, the symmetry (its group and what each action does to a fixed probe),
    ``data_spec`` (a description added to the content, never replacing it) and
    ``cache_key_extra`` (plain JSON). The result (weights, history, snapshots) is saved
    atomically under ``cache_dir("models")`` with that identity, and a file whose stored
    identity differs is retrained; while training, a checkpoint file beside it lets an
    interrupted run resume (:func:`train` resumes only a checkpoint of the same run). A
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
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(f"data must be a pair (images, labels), got {show(data)}")
    images, labels = data
    sym_spec = None
    if symmetry is not None:
        rho_in, rho_out = _check_symmetry(symmetry)
        penalty_samples = check_int("penalty_samples", penalty_samples, 1)
        _check_samples(images, labels, config.task, rho_in)
        sym_spec = {"penalty_samples": penalty_samples,
                    "rho_in": _action_spec(rho_in), "rho_out": _action_spec(rho_out)}
    else:
        _check_data(images, labels, config.task)
    for name, value in (("cache_key_extra", cache_key_extra), ("data_spec", data_spec)):
        if value is not None and not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a mapping (JSON-serialisable), got {show(value)}")
    model = build_model()
    if not isinstance(model, nn.Module):
        raise TypeError(f"build_model must return a torch.nn.Module, got {show(model)}")
    if eval_data is not None and (not isinstance(eval_data, (tuple, list)) or len(eval_data) != 2):
        raise TypeError(f"eval_data must be a pair (images, labels), got {show(eval_data)}")
    run_spec = _run_spec(model, images, labels, config, eval_data, sym_spec)
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
    generic = {} if symmetry is None else {"symmetry": symmetry, "penalty_samples": penalty_samples}
    try:
        folder = cache_dir("models")
    except OSError as exc:  # read-only or full disk: the cache is optional
        warn_once(f"models-cache:{exc.filename}", f"the model cache cannot be created ({exc}); training "
                  "without it (set EQLIB_CACHE to a writable folder to keep the results)")
        result = train(model, images, labels, config, device=device, progress=progress,
                       eval_data=eval_data, callback=callback, **generic)
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
    result = train(model, images, labels, config, device=device, progress=progress, checkpoints=ckpt,
                   checkpoint_every=checkpoint_every, eval_data=eval_data, callback=callback, **generic)
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


# --------------------------------------------------------------------------- the filter search's loop

def _lr_factor(schedule: str, step: int, steps: int) -> float:
    if schedule == "constant":
        return 1.0
    warm = max(1, steps // 20)
    if step < warm:
        return (step + 1) / warm
    return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm)))


def search_train(model: nn.Module, X: torch.Tensor, s, seed: int) -> nn.Module:
    """The training part of the old ``filter_search._search_run``: ``model`` (already built
    with ``first_init_scale``) trained on rows of ``X``; ``s`` has the SearchSettings fields.
    The old loop's global ``torch.manual_seed(seed)`` is kept, inside ``fork_rng``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        first = model.layers[0].weight
        if s.first_norm > 0:
            with torch.no_grad():
                first.mul_(s.first_norm / first.norm(dim=1, keepdim=True).clamp_min(1e-12))
        rest = [q for q in model.parameters() if q is not first]
        opt = torch.optim.AdamW([{"params": [first], "weight_decay": s.first_weight_decay},
                                 {"params": rest, "weight_decay": s.weight_decay}], lr=s.lr)
        gen = torch.Generator().manual_seed(seed)
        steps = s.epochs * math.ceil(len(X) / s.batch_size)
        step = 0
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
                step += 1
        model.eval()
    return model
