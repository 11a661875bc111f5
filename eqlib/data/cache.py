"""The cache of decoded CIFAR-10 splits: uint8 arrays under ``eqlib.io.cache_dir("data")``,
keyed by the source's path and each file's inode, size, modification and change time,
CRC-checked when read and written atomically.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
import zlib
from pathlib import Path

import numpy as np

from ..io import atomic_write, cache_dir, warn_once
from .cifar import _BATCHES
from .find import DataSource

_CACHE_VERSION = 1


def _stamp(st: os.stat_result) -> str:
    """A file's identity as the cache sees it: inode, size, and modification and change
    times. The change time (ctime) is set by the kernel at every write, rename or chmod
    and no copying tool (``cp -p``, ``rsync -t``, ``tar x``) can restore it, so a
    same-size edit with its mtime kept still gets a new key."""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _fingerprint(src: DataSource, split: str) -> tuple[str, str]:
    """(hash of the source's path, hash of its path + every file's inode, size, mtime and
    ctime): a changed source gets a new key."""
    path = src.path.resolve()
    where = hashlib.sha256(repr([str(path), src.prefix]).encode()).hexdigest()[:16]
    state = hashlib.sha256(repr([_CACHE_VERSION, str(path), src.kind, src.prefix, split]).encode())
    if src.path.is_file():
        st = src.path.stat()
        state.update(_stamp(st).encode())
    elif src.kind == "batches-dir":
        for name in _BATCHES[split] + ["batches.meta"]:
            p = src.path / name
            if p.exists():
                st = p.stat()
                state.update(f"{name}:{_stamp(st)}\n".encode())
    else:  # image folder: every file of the split (one stat each)
        for cls_dir in sorted((src.path / split).iterdir()):
            if cls_dir.is_dir():
                with os.scandir(cls_dir) as it:
                    rows = []
                    for e in it:
                        st = e.stat()
                        rows.append(f"{e.name}:{_stamp(st)}")
                rows.sort()
                state.update((cls_dir.name + "\n" + "\n".join(rows) + "\n").encode())
    return where, state.hexdigest()[:16]


def _cache_path(src: DataSource, split: str) -> Path | None:
    """The cache file for this source and split; None (with one warning) when the cache
    folder cannot be created (read-only, full disk): the data is then read uncached."""
    where, state = _fingerprint(src, split)
    try:
        folder = cache_dir("data")
    except OSError as exc:
        warn_once(f"data-cache:{exc.filename}", f"the data cache cannot be created ({exc}); reading CIFAR-10 "
                  "without it (set EQLIB_CACHE to a writable folder to decode the images only once)")
        return None
    return folder / f"cifar10-{split}-{where}-{state}.u8"


_MAGIC = b"EQLIB-CIFAR10-CACHE-1\n"


def _write_cache_file(f, x: np.ndarray, y: np.ndarray) -> None:
    """Raw layout: magic, 8-byte header length, JSON header (shape, CRC-32s), images, labels."""
    header = json.dumps({"shape": list(x.shape), "crc_images": zlib.crc32(x), "crc_labels": zlib.crc32(y)}).encode()
    f.write(_MAGIC + len(header).to_bytes(8, "little") + header)
    f.write(memoryview(x).cast("B"))
    f.write(memoryview(y).cast("B"))


def _read_cache_file(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size > 60_000 * (3 * 32 * 32 + 8) + (1 << 20):
            raise ValueError("the file is larger than any CIFAR-10 split (planted or damaged)")
        if f.read(len(_MAGIC)) != _MAGIC:
            raise ValueError("wrong magic bytes")
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        shape = tuple(int(s) for s in header["shape"])
        if len(shape) != 4 or shape[1:] != (3, 32, 32) or not 0 <= shape[0] <= 60_000:
            raise ValueError(f"unexpected image shape {shape}")
        x = np.empty(shape, dtype=np.uint8)
        y = np.empty(shape[0], dtype="<i8")
        if f.readinto(memoryview(x).cast("B")) != x.nbytes or f.readinto(memoryview(y).cast("B")) != y.nbytes:
            raise ValueError("the file is truncated")
        if f.read(1):
            raise ValueError("the file has trailing bytes")
    if zlib.crc32(x) != header["crc_images"] or zlib.crc32(y) != header["crc_labels"]:
        raise ValueError("CRC-32 mismatch")
    return x, y.astype(np.int64, copy=False)


def _load_cache(path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    if not path.exists():
        return None
    try:
        return _read_cache_file(path)
    except Exception as exc:  # truncated, flipped bits, garbage
        warnings.warn(f"the data cache {path} is corrupt ({type(exc).__name__}: {exc}); deleting and "
                      "rebuilding it", stacklevel=3)
        try:
            path.unlink(missing_ok=True)
        except OSError:  # a read-only cache: the rebuilt data cannot replace it either
            pass
        return None


def _save_cache(path: Path, x: np.ndarray, y: np.ndarray) -> None:
    try:
        atomic_write(path, lambda f: _write_cache_file(f, x, y))
    except OSError as exc:  # read-only, full disk: the cache is optional
        warn_once(f"data-cache-write:{path.parent}", f"could not write the data cache {path} ({exc}); "
                  "continuing without it", stacklevel=4)
        return
    stem = path.name.rsplit("-", 1)[0]  # cifar10-<split>-<where>: older states of this source
    for old in path.parent.glob(f"{stem}-*.u8"):
        if old != path:
            try:
                old.unlink(missing_ok=True)
            except OSError:
                pass
