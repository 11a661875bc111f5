"""The CIFAR-10 download, offline: a local HTTP server on 127.0.0.1 serves a small archive
in the official format (built here); URL and md5 point at it. Nothing leaves the machine."""
from __future__ import annotations

import hashlib
import http.server
import io
import pickle
import tarfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import eqlib.data as D

N_TEST = 10_000  # the official test split: 1,000 images of each class


def _batch(n: int, seed: int) -> bytes:
    labels = (np.arange(n) % 10).tolist()
    data = ((np.arange(n, dtype=np.uint16)[:, None] * 7 + seed) % 256).astype(np.uint8)
    data = np.repeat(data, 3072, axis=1)
    return pickle.dumps({b"batch_label": b"x", b"labels": labels, b"data": data,
                         b"filenames": [b"f%d.png" % i for i in range(n)]}, protocol=4)


@pytest.fixture(scope="module")
def archive() -> bytes:
    """``cifar-10-python.tar.gz`` in the official layout: a full-size test batch, small
    training batches (never read here) and the label names."""
    buf = io.BytesIO()
    members = {"batches.meta": pickle.dumps({b"label_names": [c.encode() for c in D.CLASSES],
                                             b"num_cases_per_batch": 10_000}, protocol=4)}
    members["test_batch"] = _batch(N_TEST, 1)
    members.update({f"data_batch_{i}": _batch(20, 10 + i) for i in range(1, 6)})
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture(scope="module")
def server(archive):
    """Serves ``/good`` (the archive), ``/short`` (announces the full length, sends half),
    ``/error`` (HTTP 500), ``/redirect-same`` and ``/redirect-other`` (to ``/good`` on
    127.0.0.1 or on localhost), ``/drip`` (a byte every half second), ``/huge`` (three
    archives, no length); yields the base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path == "/error":
                self.send_error(500, "broken on purpose")
                return
            if self.path.startswith("/redirect-"):  # to /good on this host or on another
                host = "127.0.0.1" if self.path == "/redirect-same" else "localhost"
                self.send_response(302)
                self.send_header("Location", f"http://{host}:{self.server.server_address[1]}/good")
                self.end_headers()
                return
            if self.path == "/drip":  # one byte every half second, no length announced
                self.send_response(200)
                self.end_headers()
                try:
                    for byte in archive[:40]:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(0.5)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up
                    pass
                return
            if self.path == "/huge":  # announces nothing, sends more than allowed
                self.send_response(200)
                self.end_headers()
                try:
                    self.wfile.write(archive * 3)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(archive)))
            self.end_headers()
            self.wfile.write(archive if self.path == "/good" else archive[: len(archive) // 2])

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_download_checks_md5_and_keeps_the_file(server, archive, tmp_path):
    md5 = hashlib.md5(archive).hexdigest()
    path = D.download_cifar10(tmp_path, url=f"{server}/good", md5=md5, progress=False)
    assert path == tmp_path / "cifar-10-python.tar.gz"
    assert path.read_bytes() == archive
    assert _leftovers(tmp_path) == ["cifar-10-python.tar.gz"]
    assert D.find_cifar10(tmp_path).kind == "batches-tar"


@pytest.mark.parametrize("where, md5, error, words", [
    ("good", "0" * 32, D.CorruptDataError, "md5"),
    ("short", None, D.CorruptDataError, "broke off"),
    ("error", None, D.DataNotFoundError, "500"),
])
def test_a_failed_download_is_a_clear_error_and_leaves_no_file(server, archive, tmp_path,
                                                               where, md5, error, words):
    md5 = md5 or hashlib.md5(archive).hexdigest()
    with pytest.raises(error, match=words) as info:
        D.download_cifar10(tmp_path, url=f"{server}/{where}", md5=md5, progress=False)
    assert "nothing was kept" in str(info.value)
    assert _leftovers(tmp_path) == []


def test_an_unreachable_server_is_a_clear_error(tmp_path):
    import socket
    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(D.DataNotFoundError, match="failed"):
        D.download_cifar10(tmp_path, url=f"http://127.0.0.1:{port}/x", md5="0" * 32,
                           progress=False, timeout=5)
    assert _leftovers(tmp_path) == []


@pytest.fixture
def fresh(monkeypatch, tmp_path, server, archive):
    """No EQLIB_DATA, an empty cache, URL and MD5 pointing at the local server."""
    monkeypatch.delenv("EQLIB_DATA", raising=False)
    monkeypatch.delenv("EQLIB_DOWNLOAD", raising=False)
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(D.download, "URL", f"{server}/good")
    monkeypatch.setattr(D.download, "MD5", hashlib.md5(archive).hexdigest())
    return tmp_path / "cache" / "data" / "downloads"


def test_load_downloads_into_the_cache_when_nothing_is_found(fresh, capsys):
    test = D.load_cifar10("test")
    assert len(test) == N_TEST and test.images.shape == (N_TEST, 3, 32, 32)
    assert test.labels.bincount().tolist() == [N_TEST // 10] * 10
    assert test.images[3, 0, 0, 0].item() == (3 * 7 + 1) % 256
    out = capsys.readouterr().out
    assert str(fresh) in out and "downloaded and checked" in out
    assert (fresh / "cifar-10-python.tar.gz").is_file()
    D.load_cifar10("test")  # found now: no second download
    assert "downloading" not in capsys.readouterr().out


@pytest.mark.parametrize("off", ["0", "false", "OFF"])
def test_eqlib_download_0_turns_it_off(fresh, monkeypatch, off):
    monkeypatch.setenv("EQLIB_DOWNLOAD", off)
    with pytest.raises(D.DataNotFoundError, match="EQLIB_DOWNLOAD=0"):
        D.load_cifar10("test")
    assert _leftovers(fresh) == []


def test_download_must_be_a_bool_or_none(fresh):
    with pytest.raises(TypeError, match="download must be"):
        D.load_cifar10("test", download="yes")


def test_no_download_when_a_location_is_given(fresh, monkeypatch, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(D.DataNotFoundError):
        D.load_cifar10("test", root=empty)
    monkeypatch.setenv("EQLIB_DATA", str(empty))
    with pytest.raises(D.DataNotFoundError):
        D.load_cifar10("test")
    assert _leftovers(empty) == [] and _leftovers(fresh) == []


def test_cli_flag_turns_it_off(fresh, tmp_path):
    from eqlib.experiments import cifar_mlp, gcnn_barrier
    for main in (cifar_mlp.main, gcnn_barrier.main):
        with pytest.raises(D.DataNotFoundError, match="not found"):
            main(["--no-download", "--out", str(tmp_path / "out"), "--device", "cpu"])
    assert _leftovers(fresh) == []


def test_redirects_stay_on_the_same_host(server, archive, tmp_path):
    md5 = hashlib.md5(archive).hexdigest()
    path = D.download_cifar10(tmp_path / "a", url=f"{server}/redirect-same", md5=md5,
                              progress=False)
    assert path.read_bytes() == archive
    with pytest.raises(D.DataNotFoundError, match="redirects to .*another host"):
        D.download_cifar10(tmp_path / "b", url=f"{server}/redirect-other", md5=md5,
                           progress=False)
    assert _leftovers(tmp_path / "b") == []


def test_a_download_is_capped_in_size_and_time(server, archive, tmp_path):
    md5 = hashlib.md5(archive).hexdigest()
    with pytest.raises(D.CorruptDataError, match="more than .* allowed"):  # announced
        D.download_cifar10(tmp_path, url=f"{server}/good", md5=md5, progress=False,
                           max_bytes=len(archive) - 1)
    with pytest.raises(D.CorruptDataError, match="more than"):  # not announced
        D.download_cifar10(tmp_path, url=f"{server}/huge", md5=md5, progress=False,
                           max_bytes=2 * len(archive))
    start = time.monotonic()
    with pytest.raises(D.CorruptDataError, match="took longer than 2 s"):
        D.download_cifar10(tmp_path, url=f"{server}/drip", md5=md5, progress=False,
                           time_limit=2)
    assert time.monotonic() - start < 5  # each read waits for what has arrived, not a MiB
    assert _leftovers(tmp_path) == []
    with pytest.raises(ValueError, match="max_bytes"):
        D.download_cifar10(tmp_path, url=f"{server}/good", md5=md5, max_bytes=0)


def test_the_official_archive_is_checked_by_sha256_too(server, archive, tmp_path, monkeypatch):
    md5 = hashlib.md5(archive).hexdigest()
    with pytest.raises(D.CorruptDataError, match="SHA-256"):
        D.download_cifar10(tmp_path, url=f"{server}/good", md5=md5, sha256="0" * 64,
                           progress=False)
    monkeypatch.setattr(D.download, "_OFFICIAL_MD5", md5)  # as if this were the official archive
    with pytest.raises(D.CorruptDataError, match=f"expected {D.SHA256}"):
        D.download_cifar10(tmp_path, url=f"{server}/good", md5=md5, progress=False)
    assert _leftovers(tmp_path) == []
