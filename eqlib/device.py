"""Device selection: CUDA when present, else CPU; the ``EQLIB_DEVICE`` variable overrides.
Importing it also keeps glibc's malloc from holding on to freed tensor memory
(``_pin_mmap_threshold``).

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import ctypes
import os
import sys

import torch

from .validation import show

__all__ = ["default_device"]

#: glibc's initial (and documented default) ``M_MMAP_THRESHOLD``: 128 KiB
_MMAP_THRESHOLD = 128 * 1024


def _pin_mmap_threshold(threshold: int = _MMAP_THRESHOLD) -> bool:
    """Fix glibc malloc's mmap threshold at ``threshold`` bytes (``mallopt``); True where set.

    glibc serves a block of 128 KiB or more with its own mapping, returned to the system
    when freed, but raises that threshold (up to 32 MiB) each time such a block is freed:
    from then on tensors of a few MB (batches, activations, a decoded chunk) come from the
    heap, whose freed holes stay resident. A notebook that trains networks kept 0.3 GiB so
    (chapter 11: 0.84 GiB resident after training, 0.50 with the threshold fixed; training
    as fast). Setting the threshold turns that growth off. Nothing is done off glibc or
    when ``$MALLOC_MMAP_THRESHOLD_`` is set (glibc has read the user's own then)."""
    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, ValueError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt(-3, int(threshold)) == 1  # -3: M_MMAP_THRESHOLD (malloc.h); 1: success


_MALLOC_PINNED = _pin_mmap_threshold()


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
