"""Downloading the official CIFAR-10 archive: same-host redirects only, bounded size and
time, md5 and SHA-256 checked, and the file written only when complete.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

import hashlib
import http.client
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from ..io import atomic_write
from ..validation import check_float, check_int
from .cifar import ARCHIVE_BYTES, MD5, SHA256, URL, CorruptDataError, DataNotFoundError

_OFFICIAL_MD5 = MD5

_OFF = ("0", "false", "no", "off")


def download_enabled(root: str | os.PathLike | None = None) -> bool:
    """Whether :func:`~eqlib.data.load_cifar10` downloads CIFAR-10 by default when it is not found:
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


def download_cifar10(dest: str | os.PathLike, *, url: str | None = None, md5: str | None = None,
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
