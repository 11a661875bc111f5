"""Reading the official release's batches: pickles read by a restricted unpickler that can
only rebuild dicts, lists, strings, numbers and numpy arrays, so a tampered file cannot
run code.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np

from .archive import _iter_archive, _read_regular
from .cifar import _BATCHES, _MAX_BATCH_BYTES, CLASSES, URL, CorruptDataError, UnsafePickleError
from .find import DataSource


def _numpy_globals() -> dict[tuple[str, str], object]:
    core = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1
    reconstruct = core.multiarray._reconstruct
    frombuffer = core.numeric._frombuffer
    allowed: dict[tuple[str, str], object] = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for mod in ("numpy.core", "numpy._core"):
        allowed[(f"{mod}.multiarray", "_reconstruct")] = reconstruct
        allowed[(f"{mod}.numeric", "_frombuffer")] = frombuffer
    return allowed


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the numpy globals that rebuild an array; everything else is refused."""

    _allowed = _numpy_globals()

    def find_class(self, module: str, name: str):
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise UnsafePickleError(
                f"refused to load global {module}.{name}: a CIFAR-10 batch only holds dicts, lists, "
                "strings, numbers and numpy arrays"
            ) from None


def safe_unpickle(data: bytes, name: str = "<bytes>") -> object:
    """Unpickle ``data`` allowing only dict, list, bytes, str, int and numpy arrays.

    Args:
        data: the pickle's bytes (an official batch is a Python 2 pickle; strings come
            back as bytes).
        name: the file's name, used in error messages.

    Raises:
        UnsafePickleError: if the pickle references any other global (e.g. ``os.system``
            through ``__reduce__``); nothing is executed.
        CorruptDataError: if the bytes are not a valid pickle.

    Chapter: *Groups and actions*.
    """
    try:
        return _RestrictedUnpickler(io.BytesIO(data), encoding="bytes").load()
    except UnsafePickleError as exc:
        raise UnsafePickleError(f"{name}: {exc}. The file may have been tampered with; "
                                f"re-download it from {URL}") from None
    except Exception as exc:  # truncated, garbage
        raise CorruptDataError(f"{name} is not a readable CIFAR-10 batch ({type(exc).__name__}: {exc}); "
                               f"re-download it from {URL}") from exc


def _get(d: dict, key: str):
    for k in (key.encode(), key):
        if k in d:
            return d[k]
    raise KeyError(key)


def _parse_batch(data: bytes, name: str) -> tuple[np.ndarray, np.ndarray]:
    obj = safe_unpickle(data, name)
    try:
        if not isinstance(obj, dict):
            raise TypeError(f"expected a dict, got {type(obj).__name__}")
        x = _get(obj, "data")
        y = np.asarray(_get(obj, "labels"), dtype=np.int64)
        if not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != 3072:
            raise TypeError(f"'data' must be a uint8 array (N, 3072), got {getattr(x, 'dtype', type(x))} "
                            f"{getattr(x, 'shape', '')}")
        if y.shape != (x.shape[0],) or (y.size and (y.min() < 0 or y.max() > 9)):
            raise TypeError("'labels' must hold one label in 0..9 per image")
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptDataError(f"{name} does not look like a CIFAR-10 batch: {exc}") from None
    return x.reshape(-1, 3, 32, 32), y


def _check_meta(data: bytes | None, name: str) -> None:
    if data is None:
        return
    meta = safe_unpickle(data, name)
    try:
        names = tuple(n.decode() if isinstance(n, bytes) else n for n in _get(meta, "label_names"))
    except (KeyError, TypeError, AttributeError):
        raise CorruptDataError(f"{name} has no label_names") from None
    if names != CLASSES:
        raise CorruptDataError(f"{name} lists classes {names}, expected {CLASSES}")


def _read_batches(blobs: dict[str, bytes], split: str, where: str):
    missing = [b for b in _BATCHES[split] if b not in blobs]
    if missing:
        raise CorruptDataError(f"{where} lacks the batch files {missing} of the {split} split")
    _check_meta(blobs.get("batches.meta"), f"{where}/batches.meta")
    xs, ys = zip(*(_parse_batch(blobs[b], f"{where}/{b}") for b in _BATCHES[split]))
    return np.concatenate(xs), np.concatenate(ys)


def _read_batches_dir(root: Path, split: str):
    blobs = {}
    for name in _BATCHES[split] + ["batches.meta"]:
        if (root / name).exists():
            try:
                blobs[name] = _read_regular(root / name, _MAX_BATCH_BYTES, "a CIFAR-10 batch")
            except OSError as exc:
                raise CorruptDataError(f"could not read {root / name}: {exc}") from None
    return _read_batches(blobs, split, str(root))


def _read_batches_tar(src: DataSource, split: str):
    names = set(_BATCHES[split] + ["batches.meta"])
    prefix = (src.prefix + "/") if src.prefix else ""
    blobs = {name[len(prefix):]: data for name, data in
             _iter_archive(src.path, lambda n: n.startswith(prefix) and n[len(prefix):] in names, _MAX_BATCH_BYTES)}
    return _read_batches(blobs, split, f"{src.path}:{src.prefix or '.'}")
