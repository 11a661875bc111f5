"""Finding CIFAR-10: the accepted layouts (official batches or image folders, extracted
or in a ``.tar.gz``) under ``root``, ``$EQLIB_DATA`` or the download folder.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import os
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..io import cache_dir, warn_once
from .cifar import _ARCHIVE_SUFFIXES, _SPLITS, CLASSES, MD5, URL, CorruptDataError, DataNotFoundError


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
