"""The loader: :func:`~eqlib.data.load_cifar10` finds (or downloads) CIFAR-10, reads
it from the cache or decodes it, and checks every class is complete.

Chapters: *Groups and actions* (book/part1/02_groups_and_actions) and *Reproducing the
CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from ..io import cache_dir, warn_once
from ..validation import check_bool
from .batches import _read_batches_dir, _read_batches_tar
from .cache import _cache_path, _load_cache, _save_cache
from .cifar import _OFFICIAL_PER_CLASS, _SPLITS, CIFAR10, CLASSES, MD5, URL, CorruptDataError, DataNotFoundError
from .decode import _read_images_dir, _read_images_tar
from .download import download_cifar10, download_enabled
from .find import find_cifar10


def _check_counts(y: np.ndarray, split: str, where: str) -> None:
    """The official release has 5,000 (train) or 1,000 (test) images of every class.

    Missing classes or classes of different sizes mean lost files (a truncated archive,
    deleted images): an error that says what is missing. Equal but other counts (a
    deliberate subset, another release) get one warning."""
    want = _OFFICIAL_PER_CLASS[split]
    counts = np.bincount(y, minlength=len(CLASSES))[: len(CLASSES)]
    if (counts == want).all():
        return
    total, full = int(counts.sum()), int(counts.max())
    if counts.min() == full:
        warn_once(f"counts:{where}:{split}", f"{where}: the {split} split has {full:,} images per class, not the "
                  f"official {want:,}; using it as it is", stacklevel=4)
        return
    short = ", ".join(f"{CLASSES[c]!r} has {counts[c]:,}" for c in range(len(CLASSES)) if counts[c] < full)
    raise CorruptDataError(
        f"{where}: the {split} split is incomplete: {total:,} images where the official release has "
        f"{want * len(CLASSES):,} ({want:,} per class); {short}, the other classes {full:,}. Files are "
        f"missing (a truncated archive or deleted images): get the data again ({URL}, md5 {MD5})")


def load_cifar10(
    split: str = "train",
    root: str | os.PathLike | None = None,
    *, download: bool | None = None,
    cache: bool = True,
    workers: int | None = None,
) -> CIFAR10:
    """Load one split of CIFAR-10 as uint8 images (N, 3, 32, 32) and int64 labels (N,).

    Args:
        split: ``"train"`` (50,000 images) or ``"test"`` (10,000).
        root: a folder or archive holding CIFAR-10 in any accepted layout (searched up
            to two levels down); default ``$EQLIB_DATA``.
        download: if the data is not found, fetch the official archive (needs internet)
            into ``root`` (or ``$EQLIB_DATA``, or the cache's download folder) and check
            its md5. None (the default): download only when no location was given
            (``root`` None, ``$EQLIB_DATA`` unset) and ``$EQLIB_DOWNLOAD`` is not ``0``
            (see :func:`~eqlib.data.download_enabled`).
        cache: read and write the decoded arrays under ``eqlib.io.cache_dir("data")``.
        workers: processes for JPEG decoding (default up to 4; 1 decodes in-process).

    Returns:
        A :class:`~eqlib.data.CIFAR10`, ordered by class and then file name (image folders) or in
        the official order (batches).

    Raises:
        ValueError: for an unknown split.
        DataNotFoundError: if no data is found (the message lists where it looked).
        CorruptDataError: for a truncated archive or an undecodable image (named).
        UnsafePickleError: for a batch file that tries to load anything but arrays.

    Chapters: *Groups and actions* (book/part1/02_groups_and_actions);
    *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    if split not in _SPLITS:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    check_bool("cache", cache)
    if download is not None:
        check_bool("download", download)
    try:
        src = find_cifar10(root)
    except DataNotFoundError:
        if download is not None and not isinstance(download, bool):
            raise TypeError(f"download must be True, False or None, got {download!r}") from None
        if not (download_enabled(root) if download is None else download):
            raise
        dest = Path(root or os.environ.get("EQLIB_DATA") or cache_dir("data", "downloads")).expanduser()
        if dest.suffix in (".gz", ".tgz", ".tar"):
            dest = dest.parent
        print(f"CIFAR-10 not found: downloading {URL} (about 163 MB) into {dest} "
              "(EQLIB_DOWNLOAD=0 turns this off)", flush=True)
        path = download_cifar10(dest)
        print(f"CIFAR-10 downloaded and checked: {path}", flush=True)
        src = find_cifar10(dest)
    path = _cache_path(src, split) if cache else None
    hit = _load_cache(path) if path is not None else None
    if hit is not None:
        x, y = hit
        _check_counts(y, split, src.describe())  # also caches written before this check existed
    else:
        if src.kind == "batches-dir":
            x, y = _read_batches_dir(src.path, split)
        elif src.kind == "batches-tar":
            x, y = _read_batches_tar(src, split)
        elif src.kind == "images-dir":
            x, y = _read_images_dir(src.path, split, workers)  # (n, 3, 32, 32)
        else:
            x, y = _read_images_tar(src, split, workers)
        x, y = np.ascontiguousarray(x), np.ascontiguousarray(y, dtype=np.int64)
        _check_counts(y, split, src.describe())
        if path is not None:
            _save_cache(path, x, y)
    source = str(src.path) + (f":{src.prefix}" if src.kind.endswith("tar") and src.prefix else "")
    return CIFAR10(torch.from_numpy(x), torch.from_numpy(y), CLASSES, source, split)
