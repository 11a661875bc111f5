"""Decoding CIFAR-10 image folders (extracted or in an archive): every image checked to be
32x32 before it is decoded, in parallel processes for large splits, ordered by class and
file name.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import io
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..validation import check_int
from .archive import _iter_archive, _read_regular
from .cifar import _IMAGE_SUFFIXES, _MAX_IMAGE_BYTES, CLASSES, CorruptDataError, DataNotFoundError
from .find import DataSource

_PARALLEL_MIN = 4000  # fewer images than this are decoded in-process
_CHUNK = 2500  # images decoded per task (a worker returns 7.5 MB)


def _decode(items: Sequence[tuple[str, bytes]]) -> np.ndarray:
    """Decode encoded images into uint8 (n, 32, 32, 3); a bad one raises naming it."""
    from PIL import Image, UnidentifiedImageError

    out = np.empty((len(items), 32, 32, 3), dtype=np.uint8)
    for i, (name, data) in enumerate(items):
        try:
            with Image.open(io.BytesIO(data)) as im:
                if im.size != (32, 32):  # checked before decoding: no large allocations
                    raise CorruptDataError(f"image {name} is {im.size[0]}x{im.size[1]}; CIFAR-10 images are 32x32")
                im.load()
                out[i] = np.asarray(im.convert("RGB"))
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
            raise CorruptDataError(f"could not decode image {name} ({type(exc).__name__}: {exc})") from None
    return out


def _decode_all(items: list[tuple[str, bytes]], workers: int | None) -> np.ndarray:
    """Decode ``items`` into uint8 (n, 3, 32, 32), chunk by chunk into one preallocated
    array (no concatenated (n, 32, 32, 3) copy to transpose afterwards: half the peak)."""
    if workers is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        workers = min(4, cpus)
    workers = check_int("workers", workers, 0)  # 0 and 1: decode in-process
    out = np.empty((len(items), 3, 32, 32), dtype=np.uint8)
    starts = range(0, len(items), _CHUNK)
    chunks = (items[i:i + _CHUNK] for i in starts)
    if workers <= 1 or len(items) < _PARALLEL_MIN:
        decoded = map(_decode, chunks)
    else:
        import concurrent.futures as cf
        import multiprocessing as mp

        try:
            ctx = mp.get_context("fork")
        except ValueError:  # no fork on this platform
            return _decode_all(items, 1)
        try:
            with cf.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
                for i, part in zip(starts, pool.map(_decode, chunks)):
                    out[i:i + len(part)] = part.transpose(0, 3, 1, 2)
            return out
        except cf.process.BrokenProcessPool:
            warnings.warn("parallel JPEG decoding failed; decoding in one process", stacklevel=3)
            return _decode_all(items, 1)
    for i, part in zip(starts, decoded):
        out[i:i + len(part)] = part.transpose(0, 3, 1, 2)
    return out


_SORT_KEY = re.compile(r"(\d+)")


def _natural(name: str):
    return [int(t) if t.isdigit() else t for t in _SORT_KEY.split(name)]


def _collect(split: str, entries: list[tuple[str, bytes | Path]], where: str):
    """Order image entries (class, natural file name) and attach labels."""
    labelled = []
    for rel, data in entries:
        parts = rel.split("/")
        cls = parts[-2]
        if cls not in CLASSES:
            raise CorruptDataError(f"{where}: class folder {cls!r} is not a CIFAR-10 class {CLASSES}")
        labelled.append((CLASSES.index(cls), _natural(parts[-1]), rel, data))
    if not labelled:
        raise DataNotFoundError(f"{where} has no '{split}/<class>/' images")
    labelled.sort(key=lambda t: (t[0], t[1]))
    labels = np.array([t[0] for t in labelled], dtype=np.int64)
    return labelled, labels


def _read_images_dir(root: Path, split: str, workers: int | None):
    d = root / split
    if not d.is_dir():
        raise DataNotFoundError(f"{root} has no '{split}' folder (found {sorted(p.name for p in root.iterdir())})")
    entries = []
    for cls_dir in sorted(d.iterdir()):
        if cls_dir.is_dir():
            entries += [(f"{split}/{cls_dir.name}/{f.name}", f) for f in cls_dir.iterdir()
                        if f.name.lower().endswith(_IMAGE_SUFFIXES)]
    labelled, labels = _collect(split, entries, str(root))
    items = []
    for _, _, rel, path in labelled:
        try:
            items.append((str(root / rel), _read_regular(path, _MAX_IMAGE_BYTES,
                                                         "a 32x32 CIFAR-10 image (a few thousand bytes)")))
        except OSError as exc:
            raise CorruptDataError(f"could not read {root / rel}: {exc}") from None
    return _decode_all(items, workers), labels


def _read_images_tar(src: DataSource, split: str, workers: int | None):
    prefix = (src.prefix + "/") if src.prefix else ""
    head = f"{prefix}{split}/"

    def wanted(name: str) -> bool:
        return name.startswith(head) and name.lower().endswith(_IMAGE_SUFFIXES) and name.count("/") == head.count("/") + 1

    entries = [(name[len(prefix):], data) for name, data in _iter_archive(src.path, wanted, _MAX_IMAGE_BYTES)]
    labelled, labels = _collect(split, entries, f"{src.path}:{prefix or '.'}")
    items = [(f"{src.path}:{prefix}{rel}", data) for _, _, rel, data in labelled]
    return _decode_all(items, workers), labels
