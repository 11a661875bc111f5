"""CIFAR-10: find it, download it, verify it, decode it (safely) and cache it.

:func:`~eqlib.data.load_cifar10` accepts the official release (the ``cifar-10-batches-py`` folder or
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

The package's modules, lowest first: ``cifar`` (the facts, errors, the split and
:func:`~eqlib.data.subset`), ``archive`` (bounded reads of files and archive
members), ``find``, ``download``, ``batches`` (restricted unpickling), ``decode`` (image
folders), ``cache`` and ``load``; every public name is importable from ``eqlib.data``.

Chapters: *Groups and actions* (book/part1/02_groups_and_actions) and *Reproducing the
CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from .cifar import (ARCHIVE_BYTES, CIFAR10, CLASSES, MD5, SHA256, URL, CorruptDataError, DataNotFoundError,
                    UnsafePickleError, subset)
from .batches import safe_unpickle
from .find import DataSource, find_cifar10
from .download import download_cifar10, download_enabled
from .load import load_cifar10

__all__ = [
    "CLASSES",
    "URL",
    "MD5",
    "SHA256",
    "ARCHIVE_BYTES",
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
