"""Images are a preset of the trainer, not a mode: :class:`~eqlib.train.Normalize` (the
preprocessing), :func:`~eqlib.train.image_preset` (the mirror as the symmetry) and
:func:`~eqlib.train.evaluate_accuracy` on uint8 images.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ..actions import PermutationAction
from ..device import default_device
from ..images import CIFAR10_MEAN, CIFAR10_STD, prepare_images
from ..images import mirror as mirror_action
from ..validation import check_float, check_int, show
from .checks import _check_data, _check_images

__all__ = ["Normalize", "image_preset", "evaluate_accuracy"]


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


@functools.lru_cache(maxsize=32)
def _mirror_of(shape: tuple[int, ...], axis: str) -> PermutationAction:
    return mirror_action(shape, axis)


@torch.no_grad()
def evaluate_accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, *, batch_size: int = 1000,
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
