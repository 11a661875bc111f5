"""CIFAR-10: find it, download it, verify it, decode it (safely) and cache it.

:func:`load_cifar10` accepts the official release (the ``cifar-10-batches-py`` folder or
``cifar-10-python.tar.gz``) and the common image-folder layout
(``train/<class>/*.jpg|png`` and ``test/<class>/...``), extracted or read straight from a
``.tar.gz``. The location comes from ``root`` or ``$EQLIB_DATA``; when neither is given
and nothing is found, the official archive is downloaded into the cache (md5-checked;
``EQLIB_DOWNLOAD=0`` turns this off). Official batches are pickles; they are read with a
restricted unpickler that can only rebuild dicts, lists, strings, numbers and numpy arrays, so a
tampered file cannot run code. Decoded images are cached as uint8 arrays under
``eqlib.io.cache_dir("data")``, keyed by the source's path and each file's inode, size,
modification and change time (ctime, which copying tools cannot preserve),
and written atomically. Transforms of the decoded images (mirrors, rotations,
normalisation with the CIFAR-10 statistics) live in ``eqlib.images``.

Chapters: *Groups and actions* (book/part1/02_groups_and_actions) and *Reproducing the
CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import hashlib
import http.client
import io
import os
import pickle
import re
import stat as stat_module
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .io import CorruptFileError, atomic_write, cache_dir, warn_once
from .validation import check_bool, check_float, check_int, check_tensor

__all__ = [
    "CLASSES",
    "URL",
    "MD5",
    "SHA256",
    "CIFAR10",
    "DataSource",
    "DataNotFoundError",
    "CorruptDataError",
    "UnsafePickleError",
    "load_cifar10",
    "find_cifar10",
    "download_cifar10",
    "download_enabled",
    "safe_unpickle",
    "subset",
]

#: The official label order.
CLASSES: tuple[str, ...] = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)
URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
MD5 = "c58f30108f718f92721af3b95e74349a"
#: SHA-256 and size in bytes of the official archive (checked beside its md5).
SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
ARCHIVE_BYTES = 170_498_071
_OFFICIAL_MD5 = MD5

_SPLITS = ("train", "test")
_BATCHES = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}
_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
_CACHE_VERSION = 1
#: images per class in the official release
_OFFICIAL_PER_CLASS = {"train": 5000, "test": 1000}
#: largest archive member or file read: a 32x32 image is a few KB, an official batch about 31 MB
_MAX_IMAGE_BYTES = 1 << 20
_MAX_BATCH_BYTES = 64 << 20
_PARALLEL_MIN = 4000  # fewer images than this are decoded in-process


# -- errors ---------------------------------------------------------------------------
class DataNotFoundError(FileNotFoundError):
    """CIFAR-10 is in none of the places searched; the message lists them and says how to get it.

    Chapter: *Groups and actions*.
    """


class CorruptDataError(CorruptFileError):
    """A data file (archive, batch, image) is truncated or damaged; the message names it.

    Chapter: *Groups and actions*.
    """


class UnsafePickleError(pickle.UnpicklingError, CorruptDataError):
    """A pickle asked for something the CIFAR-10 format never needs (it could run code).

    Chapter: *Groups and actions*.
    """


# -- the data set ---------------------------------------------------------------------
@dataclass
class CIFAR10:
    """One split of CIFAR-10.

    Attributes:
        images: uint8 tensor (N, 3, 32, 32).
        labels: int64 tensor (N,), indices into ``classes``.
        classes: class names in the official label order.
        source: the folder or archive the images were read from.
        split: ``"train"`` or ``"test"``.

    Chapters: *Groups and actions*; *Reproducing the CIFAR-10 experiment*.
    """

    images: torch.Tensor
    labels: torch.Tensor
    classes: tuple[str, ...] = CLASSES
    source: str = ""
    split: str = "train"

    def __post_init__(self) -> None:
        check_tensor("images", self.images)
        check_tensor("labels", self.labels, dtypes="integer")
        if self.images.dtype != torch.uint8 or self.images.ndim != 4 or self.images.shape[1] != 3:
            raise ValueError(f"images must be uint8 (N, 3, H, W), got {self.images.dtype} {tuple(self.images.shape)}")
        if self.labels.shape != (self.images.shape[0],):
            raise ValueError(f"need one label per image: {tuple(self.labels.shape)} vs {self.images.shape[0]} images")
        self.classes = tuple(self.classes)
        if self.labels.numel() and (int(self.labels.min()) < 0 or int(self.labels.max()) >= len(self.classes)):
            raise ValueError(f"labels must be class indices in 0..{len(self.classes) - 1}, got values in "
                             f"{int(self.labels.min())}..{int(self.labels.max())}")

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def __repr__(self) -> str:
        return f"CIFAR10(split={self.split!r}, n={len(self)}, source={self.source!r})"


# -- safe unpickling --------------------------------------------------------------------
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


# -- finding the data --------------------------------------------------------------------
@dataclass(frozen=True)
class DataSource:
    """Where CIFAR-10 was found: its layout (``kind``), the folder or archive, and the
    folder inside an archive that holds the data."""

    kind: str  # "batches-dir" | "batches-tar" | "images-dir" | "images-tar"
    path: Path  # folder or archive
    prefix: str = ""  # inside an archive: the folder holding the data

    def describe(self) -> str:
        return f"{self.kind} {self.path}" + (f" (inside: {self.prefix or '.'})" if self.kind.endswith("tar") else "")


def _is_batches_dir(d: Path) -> bool:
    return (d / "test_batch").is_file() or (d / "data_batch_1").is_file()


def _is_images_dir(d: Path) -> bool:
    return any((d / split / c).is_dir() for split in _SPLITS for c in CLASSES)


def _peek_archive(path: Path, max_members: int = 64) -> DataSource | None:
    """Look at the first members of an archive to tell which layout it holds."""
    try:
        with tarfile.open(path, "r|*") as tf:
            for i, m in enumerate(tf):
                if i >= max_members:
                    break
                parts = m.name.strip("/").split("/")
                if parts[-1] in ("test_batch", "data_batch_1", "batches.meta"):
                    return DataSource("batches-tar", path, "/".join(parts[:-1]))
                for j in range(len(parts) - 1):
                    if parts[j] in _SPLITS and parts[j + 1] in CLASSES:
                        return DataSource("images-tar", path, "/".join(parts[:j]))
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise CorruptDataError(f"{path} could not be read as a tar archive ({type(exc).__name__}: {exc}); "
                               f"it may be truncated: download it again ({URL})") from None
    return None


def _search(root: Path, depth: int = 2, errors: list[CorruptDataError] | None = None) -> list[DataSource]:
    """Every CIFAR-10 source under root (root itself, then 1 and 2 levels down), best first.

    An unreadable archive met while scanning a folder is recorded in ``errors`` (and
    skipped), so a damaged unrelated file does not hide good data beside it.
    """
    found: list[DataSource] = []
    if root.is_file():
        src = _peek_archive(root) if root.name.endswith(_ARCHIVE_SUFFIXES) else None
        return [src] if src else []
    if not root.is_dir():
        return []
    if _is_batches_dir(root):
        found.append(DataSource("batches-dir", root))
    if _is_images_dir(root):
        found.append(DataSource("images-dir", root))
    if found:
        return found
    try:
        children = sorted(p for p in root.iterdir() if not p.name.startswith("."))
    except OSError:
        return []
    for p in children:
        if p.is_file() and p.name.endswith(_ARCHIVE_SUFFIXES):
            try:
                src = _peek_archive(p)
            except CorruptDataError as exc:
                if errors is not None:
                    errors.append(exc)
                continue
            if src:
                found.append(src)
        elif p.is_dir() and depth > 0:
            found.extend(_search(p, depth - 1, errors))
    return found


_PREFERENCE = {"batches-dir": 0, "batches-tar": 1, "images-dir": 2, "images-tar": 3}


def _default_places() -> list[Path]:
    try:
        return [cache_dir("data", "downloads")]
    except OSError as err:  # an unwritable cache: nothing there to find
        warn_once("download-folder", f"the cache folder cannot be used ({err}); no download "
                  "folder to search")
        return []


def find_cifar10(root: str | os.PathLike | None = None) -> "DataSource":
    """Locate CIFAR-10 under ``root`` (or ``$EQLIB_DATA``, or the download folder).

    Prefers, in order: the official batches folder, the official archive, an extracted
    image folder, an image-folder archive (lossless and fast first).

    Raises:
        DataNotFoundError: listing every place searched and how to get the data.
        CorruptDataError: if the only candidate found is an unreadable archive.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if root is not None:
        places, origin = [Path(root).expanduser()], "root argument"
    elif os.environ.get("EQLIB_DATA"):
        places, origin = [Path(os.environ["EQLIB_DATA"]).expanduser()], "$EQLIB_DATA"
    else:
        places, origin = _default_places(), "default download folder (EQLIB_DATA is not set)"
    errors: list[CorruptDataError] = []
    found = [s for p in places for s in _search(p, errors=errors)]
    if not found and errors:
        raise errors[0]
    if not found:
        looked = "\n".join(f"  - {p} ({origin}; {'exists' if p.exists() else 'does not exist'}, "
                           f"searched 2 levels down)" for p in places)
        raise DataNotFoundError(
            "CIFAR-10 was not found. Looked in:\n" + looked + "\n"
            "Looked for: a 'cifar-10-batches-py' folder, 'cifar-10-python.tar.gz', or an image folder "
            "'train/<class>/*.jpg' and 'test/<class>/*.jpg' (extracted or as a .tar.gz).\n"
            f"To get it: download {URL} (md5 {MD5}), put it in a folder and set "
            "EQLIB_DATA=/that/folder (or pass root=...), or call load_cifar10(..., download=True) "
            "(done by default when EQLIB_DATA is unset, unless EQLIB_DOWNLOAD=0)."
        )
    return min(found, key=lambda s: _PREFERENCE[s.kind])


# -- downloading -------------------------------------------------------------------------
_OFF = ("0", "false", "no", "off")


def download_enabled(root: str | os.PathLike | None = None) -> bool:
    """Whether :func:`load_cifar10` downloads CIFAR-10 by default when it is not found:
    only when no location was given (``root`` is None and ``$EQLIB_DATA`` is unset) and
    ``$EQLIB_DOWNLOAD`` is not ``0`` (or ``false``/``no``/``off``).

    Chapter: *Groups and actions*.
    """
    if root is not None or os.environ.get("EQLIB_DATA"):
        return False
    return os.environ.get("EQLIB_DOWNLOAD", "1").strip().lower() not in _OFF


class _SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the same host, and never from https down to http."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if new.hostname != old.hostname or (old.scheme == "https" and new.scheme != "https"):
            raise DataNotFoundError(f"downloading {req.full_url} failed: the server redirects to "
                                    f"{newurl}, another host or an unencrypted address; nothing was "
                                    "kept. Download the archive yourself and set EQLIB_DATA")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def download_cifar10(dest: str | os.PathLike, url: str | None = None, md5: str | None = None,
                     progress: bool = True, timeout: float = 60.0, sha256: str | None = None,
                     max_bytes: int = 200_000_000, time_limit: float = 3600.0) -> Path:
    """Download the official archive (``url``, default ``URL``) into folder ``dest``
    as ``cifar-10-python.tar.gz``, with a progress bar, and check its md5 (default ``MD5``)
    and, for the official archive or when ``sha256`` is given, its SHA-256 (``SHA256``).

    The file appears only when complete and checked: a server or network error, a
    transfer shorter than announced, a wrong checksum, more than ``max_bytes`` bytes
    (the official archive has ``ARCHIVE_BYTES``), a transfer that takes longer than
    ``time_limit`` seconds in all (each read waits at most ``timeout`` seconds) or a
    redirect to another host raises and leaves no file behind.

    Raises:
        DataNotFoundError: if the server answers with an error, cannot be reached or
            redirects to another host.
        CorruptDataError: for a truncated, oversized or too slow transfer, or a wrong
            checksum.

    Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
    """
    url, md5 = url or URL, md5 or MD5
    sha256 = sha256 or (SHA256 if md5 == _OFFICIAL_MD5 else None)
    timeout = check_float("timeout", timeout, 0, low_open=True)
    time_limit = check_float("time_limit", time_limit, 0, low_open=True)
    max_bytes = check_int("max_bytes", max_bytes, 1)
    target = Path(dest).expanduser() / "cifar-10-python.tar.gz"
    digest, digest256 = hashlib.md5(), hashlib.sha256()
    opener = urllib.request.build_opener(_SameHostRedirects)

    def write(f):
        from tqdm.auto import tqdm

        start = time.monotonic()
        try:
            response = opener.open(url, timeout=timeout)  # noqa: S310 (fixed URL)
        except urllib.error.HTTPError as exc:
            raise DataNotFoundError(f"downloading {url} failed: the server answered "
                                    f"{exc.code} {exc.reason}; nothing was kept") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DataNotFoundError(f"downloading {url} failed ({reason}); nothing was kept. "
                                    "Check the network, or download it yourself and set "
                                    "EQLIB_DATA") from None
        with response:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            if total is not None and total > max_bytes:
                raise CorruptDataError(f"downloading {url}: the server announces {total:,} bytes, "
                                       f"more than the {max_bytes:,} allowed (the official archive "
                                       f"has {ARCHIVE_BYTES:,}); nothing was kept")
            done = 0
            read = getattr(response, "read1", response.read)  # what has arrived, not a full MiB
            with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                      desc="CIFAR-10", disable=not progress) as bar:
                try:
                    while chunk := read(1 << 20):
                        done += len(chunk)
                        if done > max_bytes:
                            raise CorruptDataError(f"downloading {url}: more than {max_bytes:,} "
                                                   f"bytes (the official archive has "
                                                   f"{ARCHIVE_BYTES:,}); nothing was kept")
                        if time.monotonic() - start > time_limit:
                            raise CorruptDataError(f"downloading {url} took longer than "
                                                   f"{time_limit:g} s ({done:,} bytes so far); "
                                                   "nothing was kept, try again later")
                        digest.update(chunk)
                        digest256.update(chunk)
                        f.write(chunk)
                        bar.update(len(chunk))
                except (OSError, http.client.HTTPException) as exc:
                    raise CorruptDataError(f"downloading {url} broke off after {done:,} bytes "
                                           f"({exc}); nothing was kept, try again") from None
        if total is not None and done != total:
            raise CorruptDataError(f"downloading {url} broke off: got {done:,} of {total:,} "
                                   "bytes; nothing was kept, try again")
        if digest.hexdigest() != md5:
            raise CorruptDataError(f"download of {url} has md5 {digest.hexdigest()}, expected "
                                   f"{md5}; nothing was kept, try again")
        if sha256 is not None and digest256.hexdigest() != sha256:
            raise CorruptDataError(f"download of {url} has SHA-256 {digest256.hexdigest()}, "
                                   f"expected {sha256}; nothing was kept, try again")

    return atomic_write(target, write)


# -- reading -----------------------------------------------------------------------------
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
    if workers is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        workers = min(4, cpus)
    workers = check_int("workers", workers, 0)  # 0 and 1: decode in-process
    if workers <= 1 or len(items) < _PARALLEL_MIN:
        return _decode(items)
    import concurrent.futures as cf
    import multiprocessing as mp

    chunks = [items[i:i + 2500] for i in range(0, len(items), 2500)]
    try:
        ctx = mp.get_context("fork")
    except ValueError:  # no fork on this platform
        return _decode(items)
    try:
        with cf.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            return np.concatenate(list(pool.map(_decode, chunks)))
    except cf.process.BrokenProcessPool:
        warnings.warn("parallel JPEG decoding failed; decoding in one process", stacklevel=3)
        return _decode(items)


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


def _read_regular(path: Path, limit: int, what: str) -> bytes:
    """The bytes of ``path``, which must be a regular file (a symlink to one is fine) of at
    most ``limit`` bytes: a FIFO would block the loader and a link to ``/dev/zero`` would
    read forever, so both are refused, and at most ``limit + 1`` bytes are ever read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block the open
    try:
        st = os.fstat(fd)
        if not stat_module.S_ISREG(st.st_mode):
            raise CorruptDataError(f"{path} is not a regular file (a device, FIFO or socket); {what} must be "
                                   "plain files")
        if st.st_size > limit:
            raise CorruptDataError(f"{path} has {st.st_size:,} bytes, more than {what} can have ({limit:,})")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise CorruptDataError(f"{path} grew past {limit:,} bytes while being read ({what})")
        return b"".join(chunks)
    finally:
        os.close(fd)


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


def _iter_archive(path: Path, wanted, max_size: int = _MAX_BATCH_BYTES):
    """Yield (member name, bytes) for the members ``wanted(name)`` accepts, streaming;
    a member larger than ``max_size`` bytes is an error (checked before reading it)."""
    try:
        with tarfile.open(path, "r|*") as tf:
            for m in tf:
                if m.isfile() and wanted(m.name):
                    if m.size > max_size:
                        raise CorruptDataError(f"{path}: the member {m.name} has {m.size:,} bytes, more than "
                                               f"a CIFAR-10 file can have ({max_size:,}); the archive is "
                                               "damaged or not CIFAR-10")
                    f = tf.extractfile(m)
                    yield m.name, f.read() if f is not None else b""
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise CorruptDataError(
            f"{path} is truncated or corrupt ({type(exc).__name__}: {exc}); download it again "
            f"(official release: {URL}, md5 {MD5})") from None


def _read_images_tar(src: DataSource, split: str, workers: int | None):
    prefix = (src.prefix + "/") if src.prefix else ""
    head = f"{prefix}{split}/"

    def wanted(name: str) -> bool:
        return name.startswith(head) and name.lower().endswith(_IMAGE_SUFFIXES) and name.count("/") == head.count("/") + 1

    entries = [(name[len(prefix):], data) for name, data in _iter_archive(src.path, wanted, _MAX_IMAGE_BYTES)]
    labelled, labels = _collect(split, entries, f"{src.path}:{prefix or '.'}")
    items = [(f"{src.path}:{prefix}{rel}", data) for _, _, rel, data in labelled]
    return _decode_all(items, workers), labels


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


# -- cache -------------------------------------------------------------------------------
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


_MAGIC = b"EQLIB-CIFAR10-CACHE-1\n"


def _write_cache_file(f, x: np.ndarray, y: np.ndarray) -> None:
    """Raw layout: magic, 8-byte header length, JSON header (shape, CRC-32s), images, labels."""
    import json

    header = json.dumps({"shape": list(x.shape), "crc_images": zlib.crc32(x), "crc_labels": zlib.crc32(y)}).encode()
    f.write(_MAGIC + len(header).to_bytes(8, "little") + header)
    f.write(memoryview(x).cast("B"))
    f.write(memoryview(y).cast("B"))


def _read_cache_file(path: Path) -> tuple[np.ndarray, np.ndarray]:
    import json

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


# -- the loader --------------------------------------------------------------------------
def load_cifar10(
    split: str = "train",
    root: str | os.PathLike | None = None,
    download: bool | None = None,
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
            (see :func:`download_enabled`).
        cache: read and write the decoded arrays under ``eqlib.io.cache_dir("data")``.
        workers: processes for JPEG decoding (default up to 4; 1 decodes in-process).

    Returns:
        A :class:`CIFAR10`, ordered by class and then file name (image folders) or in
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
            x, y = _read_images_dir(src.path, split, workers)
            x = x.transpose(0, 3, 1, 2)
        else:
            x, y = _read_images_tar(src, split, workers)
            x = x.transpose(0, 3, 1, 2)
        x, y = np.ascontiguousarray(x), np.ascontiguousarray(y, dtype=np.int64)
        _check_counts(y, split, src.describe())
        if path is not None:
            _save_cache(path, x, y)
    source = str(src.path) + (f":{src.prefix}" if src.kind.endswith("tar") and src.prefix else "")
    return CIFAR10(torch.from_numpy(x), torch.from_numpy(y), CLASSES, source, split)


def subset(dataset: CIFAR10, n: int, seed: int = 0, stratified: bool = True) -> CIFAR10:
    """``n`` images of ``dataset`` drawn without replacement with a seeded generator.

    ``stratified=True`` takes ``n // 10`` images of every class (the remainder from the
    classes in label order), so classes stay balanced; otherwise a uniform sample.

    Raises:
        ValueError: if n is not in 1..len(dataset) or a class has too few images.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not isinstance(dataset, CIFAR10):
        raise TypeError(f"dataset must be a CIFAR10, got {type(dataset).__name__}")
    n = check_int("n", n, 1, len(dataset))
    gen = torch.Generator().manual_seed(check_int("seed", seed, 0))
    if not stratified:
        idx = torch.randperm(len(dataset), generator=gen)[:n]
    else:
        k = len(dataset.classes)
        quota = torch.full((k,), n // k, dtype=torch.long)
        quota[: n % k] += 1
        counts = torch.bincount(dataset.labels, minlength=k)
        if bool((counts < quota).any()):
            bad = int(torch.nonzero(counts < quota)[0])
            raise ValueError(f"class {dataset.classes[bad]!r} has {int(counts[bad])} images, fewer than the "
                             f"{int(quota[bad])} a stratified subset of {n} needs; use stratified=False")
        # random order, then stable sort by label: each class's images in random order
        perm = torch.randperm(len(dataset), generator=gen)
        order = perm[torch.sort(dataset.labels[perm], stable=True).indices]
        start = torch.cumsum(counts, 0) - counts
        rank = torch.arange(len(dataset)) - start[dataset.labels[order]]
        idx = order[rank < quota[dataset.labels[order]]]
        idx = idx[torch.randperm(len(idx), generator=gen)]
    idx = idx.sort().values
    return CIFAR10(dataset.images[idx], dataset.labels[idx], dataset.classes, dataset.source, dataset.split)
