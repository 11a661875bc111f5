"""The arguments of :func:`~eqlib.train.train` and :func:`~eqlib.train.cached_train`, checked at the
boundary: samples and labels, images, the symmetry, hooks, the device and the model.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
from torch import nn

from ..actions import Action
from ..images import check_unit_range
from ..validation import check_finite, check_tensor, show
from .config import TrainConfig

_HOOKS = ("after_step", "after_epoch")


def _check_symmetry(symmetry: object) -> tuple[Action, Action]:
    if not isinstance(symmetry, (tuple, list)) or len(symmetry) != 2:
        raise TypeError(f"symmetry must be a pair (rho_in, rho_out) of actions, got {show(symmetry)}")
    for name, rho in zip(("rho_in", "rho_out"), symmetry):
        if not isinstance(rho, Action):
            raise TypeError(f"symmetry's {name} must be an Action, got {show(rho)}")
    if symmetry[0].group != symmetry[1].group:
        raise ValueError("symmetry's rho_in and rho_out must be actions of one group")
    return symmetry[0], symmetry[1]


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


def _check_pair(name: str, value: object) -> tuple[torch.Tensor, torch.Tensor | None]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (samples, labels), got {show(value)}")
    return value[0], value[1]
