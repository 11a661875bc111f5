"""Reading CIFAR-10's files and archive members safely: only regular files, every read
bounded by the largest size such a file can have, and damaged archives reported by name.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

import os
import stat as stat_module
import tarfile
import zlib
from pathlib import Path

from .cifar import _MAX_BATCH_BYTES, MD5, URL, CorruptDataError


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


def _iter_archive(path: Path, wanted, max_size: int = _MAX_BATCH_BYTES):
    """Yield (member name, bytes) for the members ``wanted(name)`` accepts, streaming;
    a member larger than ``max_size`` bytes is an error (checked before reading it)."""
    try:
        with tarfile.open(path, "r|*") as tf:
            while (m := tf.next()) is not None:
                tf.members.clear()  # read once, in order: no list of 60,000 members (30 MB)
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
