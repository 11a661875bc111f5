"""Safe files: the cache folder, configuration hashes, atomic writes, safe loading.

An interrupted write never leaves a corrupt file: everything is written to a temporary
file in the same folder, flushed to disk, and moved into place with ``os.replace``.
Checkpoints load with ``torch.load(..., weights_only=True)``.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/10_cifar_mlp).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import torch

__all__ = ["cache_dir", "config_hash", "atomic_write", "save_torch", "load_torch", "CorruptFileError"]


class CorruptFileError(RuntimeError):
    """A cached or downloaded file could not be read; it names the file and what to do."""


def cache_dir(*parts: str) -> Path:
    """``$EQLIB_CACHE`` (default ``~/.cache/eqlib``) joined with ``parts``, created if needed."""
    root = Path(os.environ.get("EQLIB_CACHE") or Path.home() / ".cache" / "eqlib").expanduser()
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_hash(config: Mapping[str, Any], length: int = 16) -> str:
    """A stable hex digest of a JSON-serialisable configuration (key order does not matter)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write(f)`` on a temporary file beside ``path``, then move it into place.

    If ``write`` raises (or the process dies), ``path`` keeps its old content, or stays
    absent, and the temporary file is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; caches are ordinary readable files
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def save_torch(obj: Any, path: str | os.PathLike) -> Path:
    """``torch.save`` through :func:`atomic_write` (tensors, dicts, lists, numbers only)."""
    return atomic_write(path, lambda f: torch.save(obj, f))


def load_torch(path: str | os.PathLike, map_location: str | torch.device | None = "cpu") -> Any:
    """``torch.load(path, weights_only=True)``; a damaged file raises :class:`CorruptFileError`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # truncated zip, pickle with forbidden globals, ...
        raise CorruptFileError(f"{path} could not be loaded safely ({exc.__class__.__name__}: {exc}); "
                               "delete it to rebuild the cache") from exc
