"""Device selection: CUDA when present, else CPU; the ``EQLIB_DEVICE`` variable overrides.
And :func:`~eqlib.device.limit_resident_memory`, for a notebook that must stay small.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import ctypes
import os
import sys

import torch

from .validation import show

__all__ = ["default_device", "limit_resident_memory"]

#: glibc's initial (and documented default) ``M_MMAP_THRESHOLD``: 128 KiB
_MMAP_THRESHOLD = 128 * 1024


def limit_resident_memory(threshold: int = _MMAP_THRESHOLD) -> bool:
    """Keep glibc's malloc from holding on to freed tensor memory: fix its mmap threshold at
    ``threshold`` bytes (``mallopt``; default 128 KiB, glibc's initial value). Returns True
    where it was set.

    glibc serves a block of 128 KiB or more with its own mapping, returned to the system
    when freed, but raises that threshold (up to 32 MiB) each time such a block is freed:
    from then on tensors of a few MB (batches, activations, a decoded chunk) come from the
    heap, whose freed holes stay resident. Chapter 11's kernel peaked at 1.56 GiB so, and at
    1.10 GiB with the threshold fixed. The price is speed: a training step of chapter 11's
    MLP took about 1.2 times as long, of chapter 10's small CNN about 1.5 times
    (``benchmarks/malloc_threshold.py``). So it is a choice for a notebook that must fit a
    small machine, never made on import. Nothing is done off
    glibc, or when ``$MALLOC_MMAP_THRESHOLD_`` is set (glibc has read the user's own then).

    Raises:
        ValueError: ``threshold`` is not a positive int.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold <= 0:
        raise ValueError(f"threshold must be a positive int (bytes), got {threshold!r}")
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
