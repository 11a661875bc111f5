"""Safe files: the cache folder, configuration hashes, atomic writes, safe loading.

An interrupted write never leaves a corrupt file: everything is written to a temporary
file in the same folder, flushed to disk, and moved into place with ``os.replace``; the
temporary files of a killed writer are removed by the next run (only those whose
process is gone, or, for writers that cannot be asked, that are an hour old; a live
writer on this host is never disturbed).
:func:`save_torch` stores a SHA-256 of the file in the zip comment of ``torch.save``'s
archive (so ``torch.load`` still reads it) and :func:`load_torch` verifies it before
``torch.load(..., weights_only=True)``: a damaged checkpoint is reported, never loaded
silently wrong.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import glob
import hashlib
import io
import errno
import json
import math
import os
import re
import socket
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import torch

from .validation import check_int, show

__all__ = ["cache_dir", "config_hash", "json_object", "content_hash", "atomic_write", "save_torch", "load_torch", "CorruptFileError",
           "clean_stale_temporaries", "warn_once", "CACHE_WRITE_ERRORS"]

#: errors that mean "this cache cannot be written" (read-only, full, no permission, ...);
#: :func:`save_torch` serialises in memory first, so a full disk is an OSError, never
#: torch's RuntimeError from inside its zip writer
CACHE_WRITE_ERRORS = (OSError,)
_SEAL = b"eqlib-sha256:"  # the zip comment: this prefix and 64 hex digits
_SEAL_LEN = len(_SEAL) + 64
#: a temporary file of a writer that cannot be asked (another host, an older name) is stale once untouched this long
_STALE_SECONDS = 3600
_warned: set[str] = set()
_cleaned: set[Path] = set()


def warn_once(key: str, message: str, stacklevel: int = 3) -> None:
    """``warnings.warn(message)`` the first time ``key`` is seen in this process (an optional
    cache that cannot be written says so once, not at every write).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, stacklevel=stacklevel)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())


_WRITER = re.compile(r"\.w(\d+)@([A-Za-z0-9_-]*)\.[^.]+\.tmp$")


def _tmp_prefix(path: Path) -> str:
    return f".{path.name}.w{os.getpid()}@{_host()}."


def _writer_state(tmp: Path) -> str:
    """``"alive"`` or ``"dead"``: whether the process that named ``tmp``
    (``.<name>.w<pid>@<host>.<random>.tmp``) on this host still runs; ``"unknown"`` for
    another host's or an older eqlib's temporary file (only its age can make it stale)."""
    match = _WRITER.search(tmp.name)
    if match is None or match.group(2) != _host():
        return "unknown"
    pid = int(match.group(1))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "dead"
    except PermissionError:
        return "alive"
    return "alive"


def _writer_alive(tmp: Path) -> bool:
    """Whether the writer of ``tmp`` may still run (alive, or not ours to judge)."""
    return _writer_state(tmp) != "dead"


def clean_stale_temporaries(folder: str | os.PathLike, name: str = "*") -> list[Path]:
    """Remove the temporary files ``.<name>.*.tmp`` that :func:`atomic_write` left in
    ``folder`` when its process was killed: those whose writer process is gone (same host),
    and those whose writer cannot be asked (another host, an older eqlib's name) once
    untouched for an hour. A live writer's file on this host is never removed, whatever
    its age (clock skew or a slow write). Returns the removed paths; never raises.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    removed = []
    try:
        pattern = name if name == "*" else glob.escape(name)
        candidates = list(Path(folder).glob(f".{pattern}.*.tmp"))
    except OSError:
        return removed
    now = time.time()
    for tmp in candidates:
        try:
            state = _writer_state(tmp)
            # a live writer's file is never removed, however old its mtime looks (a slow
            # write, or a clock that jumped): the age rule is only for writers we cannot ask
            if state == "alive" or (state == "unknown" and now - tmp.stat().st_mtime < _STALE_SECONDS):
                continue
            tmp.unlink()
            removed.append(tmp)
        except OSError:  # gone already, or a read-only folder
            pass
    return removed



class CorruptFileError(RuntimeError):
    """A cached or downloaded file could not be read; it names the file and what to do."""


def cache_dir(*parts: str) -> Path:
    """``$EQLIB_CACHE`` (default ``~/.cache/eqlib``) joined with ``parts``, created if needed.

    New folders are made no wider than ``0755`` (the user's umask can only narrow that).
    A cache folder is trusted only if the current user (or root) owns it and nobody else
    may write to it: another user could otherwise plant data, models or results in it. Such a
    folder (the root or any folder below it) is refused with a ``PermissionError`` that
    says how to fix it; callers that treat the cache as optional then go on uncached.
    The first call for a folder in a process removes stale temporary files there (see
    :func:`clean_stale_temporaries`). Raises OSError if the folder cannot be created.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    for k, part in enumerate(parts):
        if not isinstance(part, str):
            raise TypeError(f"parts[{k}] must be a folder name (a string), got {show(part)}")
        if part in ("", ".", "..") or "/" in part or os.sep in part or (os.altsep and os.altsep in part):
            raise ValueError(f"parts[{k}] must be a single folder name inside the cache (no '/', '.' or '..'), "
                             f"got {part!r}")
    root = Path(os.environ.get("EQLIB_CACHE") or Path.home() / ".cache" / "eqlib").expanduser()
    path = root.joinpath(*parts)
    for folder in [root, *(root.joinpath(*parts[:k]) for k in range(1, len(parts) + 1))]:
        if folder == root:
            folder.mkdir(mode=0o755, parents=True, exist_ok=True)
        else:
            folder.mkdir(mode=0o755, exist_ok=True)
        _check_trusted(folder)
    if path not in _cleaned:
        _cleaned.add(path)
        clean_stale_temporaries(path)
    return path


def _check_trusted(folder: Path) -> None:
    """Refuse a cache folder that another user owns or that others may write to."""
    if not hasattr(os, "getuid"):  # no POSIX owners (Windows): nothing to check
        return
    st = folder.stat()
    if st.st_uid not in (os.getuid(), 0):
        raise PermissionError(errno.EACCES, f"the cache folder is owned by user id {st.st_uid}, not by you "
                              f"(user id {os.getuid()}), so its files cannot be trusted; set EQLIB_CACHE to "
                              "a folder of your own", str(folder))
    if st.st_mode & 0o022:
        raise PermissionError(errno.EACCES, f"the cache folder is writable by others (mode "
                              f"{st.st_mode & 0o777:o}), so its files cannot be trusted; run "
                              f"`chmod go-w {folder}` or set EQLIB_CACHE to a folder of your own",
                              str(folder))


def json_object(mapping: Mapping[Any, Any], convert: Callable[[str, Any], Any], where: str) -> dict[str, Any]:
    """``{key: convert(key, value)}`` for a mapping about to become a JSON object, whose
    keys must all be strings (``{1: ...}`` and ``{'1': ...}`` would collide).

    Raises:
        TypeError: naming ``where`` and the first key that is not a str.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    out = {}
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise TypeError(f"{where}: key {key!r} is a {type(key).__name__}, not a str (JSON keys are "
                            "strings, so {1: ...} and {'1': ...} would collide); use string keys")
        out[key] = convert(key, value)
    return out


def _plain(value: Any, path: str) -> Any:
    """``value`` as plain JSON (dicts with str keys, lists, str, finite numbers, bools,
    None; tuples become lists), or a TypeError/ValueError naming ``path``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):  # numpy's float64 is a float: its value is kept exactly
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{path}: {value!r} is not a finite number (JSON has no NaN or inf); "
                             "describe it as a string or leave it out")
        return value
    if isinstance(value, Mapping):
        return json_object(value, lambda key, item: _plain(item, f"{path}[{key!r}]"), path)
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{path}[{i}]") for i, item in enumerate(value)]
    hint = ("; hash its bytes with eqlib.io.content_hash" if isinstance(value, torch.Tensor)
            or type(value).__module__ == "numpy" else "")
    raise TypeError(f"{path}: {type(value).__name__} {value!r:.60} is not plain JSON (dict with str keys, "
                    f"list, tuple, str, finite int/float, bool, None){hint}")


def config_hash(config: Mapping[str, Any], length: int = 16) -> str:
    """A stable hex digest of a plain-JSON configuration (key order does not matter).

    Only plain JSON is accepted, so that two different configurations never share a
    digest: dicts with ``str`` keys, lists and tuples (a tuple is the list of its items),
    ``str``, finite ``int``/``float``, ``bool`` and ``None``. Anything else — a set
    (ordered differently in every process), a non-string key (``{1: 'a'}`` would collide
    with ``{'1': 'a'}``), a tensor or array (its ``str`` drops entries), a numpy scalar,
    NaN — raises ``TypeError``/``ValueError`` naming the key path. Hash tensors and arrays
    with :func:`content_hash` and put the digest in the configuration.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__} {config!r:.60}")
    length = check_int("length", length, 1, 64)
    text = json.dumps(_plain(config, "config"), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def content_hash(x: Any, length: int = 64) -> str:
    """SHA-256 of a tensor's or array's dtype, shape and bytes (in C order, so strides and
    ``requires_grad`` do not matter; ``-0.0`` and ``0.0`` differ, as their bytes do).

    A numpy array and a CPU tensor of the same dtype, shape and values hash alike. Meta
    tensors (no data) are refused. This is the one way eqlib puts a tensor into a cache key.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    length = check_int("length", length, 1, 64)
    if not isinstance(x, torch.Tensor):
        if type(x).__module__ == "numpy" and hasattr(x, "dtype") and hasattr(x, "shape"):
            import numpy as np
            x = np.ascontiguousarray(x)
            dtype, shape, raw = str(x.dtype), tuple(x.shape), x.tobytes()
        else:
            raise TypeError(f"x must be a torch.Tensor or a numpy array, got {type(x).__name__}")
    else:
        if x.device.type == "meta":
            raise ValueError("x is a meta tensor (it holds no data): nothing to hash")
        t = x.detach().to("cpu").contiguous()
        if t.is_conj():
            t = t.resolve_conj()
        if t.is_neg():
            t = t.resolve_neg()
        dtype, shape = str(t.dtype).removeprefix("torch."), tuple(t.shape)
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    digest = hashlib.sha256(f"{dtype}|{shape}|".encode())
    digest.update(raw)
    return digest.hexdigest()[:length]


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write(f)`` on a temporary file beside ``path``, then move it into place.

    If ``write`` raises, ``path`` keeps its old content, or stays absent, and the
    temporary file is removed; if the process dies, the next write of ``path`` (or the
    next :func:`cache_dir` of its folder) removes it.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {show(path)}")
    if not callable(write):
        raise TypeError(f"write must be a function taking the open file, got {show(write)}")
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"path {str(path)!r} is a directory, not a file to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(path.parent, path.name)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_tmp_prefix(path), suffix=".tmp")
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
    """``torch.save`` through :func:`atomic_write` (tensors, dicts, lists, numbers only),
    sealed with the SHA-256 of the archive in its zip comment (checked by :func:`load_torch`;
    plain ``torch.load`` ignores it)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    archive = buffer.getbuffer()
    # a zip ends with its 22-byte end-of-central-directory record; torch writes no comment
    if bytes(archive[-22:-18]) != b"PK\x05\x06" or bytes(archive[-2:]) != b"\x00\x00":
        raise RuntimeError("torch.save wrote an unexpected format: cannot seal it with a checksum")
    body = archive[:-2]
    seal = _SEAL + hashlib.sha256(body).hexdigest().encode()

    def write(f):
        f.write(body)
        f.write(len(seal).to_bytes(2, "little") + seal)

    return atomic_write(path, write)


def load_torch(path: str | os.PathLike, map_location: str | torch.device | None = "cpu") -> Any:
    """Verify the SHA-256 that :func:`save_torch` stored, then ``torch.load(...,
    weights_only=True)``. A damaged file (truncated, zeroed, flipped bits, no checksum,
    forbidden pickle globals) raises :class:`CorruptFileError` naming it."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {show(path)}")
    if map_location is not None and not callable(map_location) and not isinstance(map_location, dict):
        try:
            torch.device(map_location)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise ValueError(f"map_location must name a device (e.g. 'cpu'), got {show(map_location)} "
                             f"({exc})") from None
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CorruptFileError(f"{path} could not be read ({exc}); delete it to rebuild the cache") from exc
    end = len(data) - _SEAL_LEN - 2  # where the comment length field starts
    sealed = end >= 20 and data[end:end + 2] == _SEAL_LEN.to_bytes(2, "little")
    if not sealed or data[end + 2:end + 2 + len(_SEAL)] != _SEAL:
        raise CorruptFileError(f"{path} has no eqlib integrity checksum (damaged, or written by an older "
                               "eqlib); delete it to rebuild the cache")
    if hashlib.sha256(memoryview(data)[:end]).hexdigest().encode() != data[end + 2 + len(_SEAL):]:
        raise CorruptFileError(f"{path} fails its SHA-256 check (the file was damaged); delete it to "
                               "rebuild the cache")
    try:
        return torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except Exception as exc:  # pickle with forbidden globals, ...
        raise CorruptFileError(f"{path} could not be loaded safely ({exc.__class__.__name__}: {exc}); "
                               "delete it to rebuild the cache") from exc
