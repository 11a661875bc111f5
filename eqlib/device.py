"""Device selection: CUDA when present, else CPU; the ``EQLIB_DEVICE`` variable overrides.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import os

import torch

__all__ = ["default_device"]


def default_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else ``$EQLIB_DEVICE``, else ``cuda`` when available, else ``cpu``.

    Raises:
        ValueError: if CUDA is asked for but not available.
    """
    name = device if device is not None else os.environ.get("EQLIB_DEVICE")
    if name is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA was requested but no CUDA device is available; use device='cpu'")
    return dev
