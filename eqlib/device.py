"""Device selection: CUDA when present, else CPU; the ``EQLIB_DEVICE`` variable overrides.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import os

import torch

from .validation import show

__all__ = ["default_device"]


def default_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else ``$EQLIB_DEVICE``, else ``cuda`` when available, else ``cpu``.

    Only devices that exist are returned: ``cpu`` (index 0 at most), ``cuda`` and
    ``cuda:N`` with N below the number of visible GPUs.

    Raises:
        TypeError: if ``device`` is neither a string nor a ``torch.device``.
        ValueError: for an unknown name (``'gpu'``, ``''``), a device type other than
            cpu or cuda (``'meta'``), ``'cpu:1'``, a CUDA index that does not exist, or
            CUDA asked for but not available; the message says where the name came from.
    """
    source = "device"
    name = device
    if name is None:
        name = os.environ.get("EQLIB_DEVICE")
        source = "the EQLIB_DEVICE environment variable"
        if name is None:
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(name, (str, torch.device)):
        raise TypeError(f"device must be a string such as 'cpu' or 'cuda:0' or a torch.device, got {show(name)}")
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        raise ValueError(f"{source} names no device: {name!r}; use 'cpu', 'cuda' or 'cuda:N'") from None
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"{source} must be a cpu or cuda device, got {name!r}")
    if dev.type == "cpu" and dev.index not in (None, 0):
        raise ValueError(f"{source} {name!r} does not exist: there is one CPU device; use 'cpu'")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"CUDA was requested ({source} {name!r}) but no CUDA device is available; "
                             "use device='cpu'")
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ValueError(f"{source} {name!r} does not exist: {count} CUDA device(s) visible "
                             f"(cuda:0..cuda:{count - 1})")
    return dev
