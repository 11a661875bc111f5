"""eqlib.io: cache folder, configuration hashes, atomic writes, safe checkpoint loading."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest
import torch
from torch.testing import assert_close

from eqlib import io as eio
from eqlib.io import CorruptFileError
from eqlib.seeds import torch_generator


def test_cache_dir_follows_env_and_creates(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "c"))
    path = eio.cache_dir("data", "x")
    assert path == tmp_path / "c" / "data" / "x" and path.is_dir()


def test_cache_dir_default(tmp_path, monkeypatch):
    monkeypatch.delenv("EQLIB_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert eio.cache_dir() == tmp_path / ".cache" / "eqlib"


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
def test_cache_dir_refuses_folders_others_can_write_or_own(tmp_path, monkeypatch):
    # another user could plant data, models or results in such a folder
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "shared"))
    (tmp_path / "shared" / "data").mkdir(parents=True)
    os.chmod(tmp_path / "shared", 0o777)
    with pytest.raises(PermissionError, match="writable by others.*chmod go-w"):
        eio.cache_dir("data")
    os.chmod(tmp_path / "shared", 0o755)
    os.chmod(tmp_path / "shared" / "data", 0o775)  # a folder below the root too
    with pytest.raises(PermissionError, match="writable by others"):
        eio.cache_dir("data")
    os.chmod(tmp_path / "shared" / "data", 0o755)
    assert eio.cache_dir("data") == tmp_path / "shared" / "data"
    if os.getuid() == 0:  # only root can give a folder away
        os.chown(tmp_path / "shared" / "data", 12345, 12345)
        with pytest.raises(PermissionError, match="owned by user id 12345"):
            eio.cache_dir("data")


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes")
def test_cache_dir_makes_folders_no_wider_than_0755(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "c"))
    old = os.umask(0)
    try:
        path = eio.cache_dir("models", "x")
    finally:
        os.umask(old)
    for folder in (tmp_path / "c", tmp_path / "c" / "models", path):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755, folder


def test_config_hash_is_stable_and_order_free():
    a = eio.config_hash({"lr": 0.1, "widths": [3, 4], "act": "tanh"})
    b = eio.config_hash({"act": "tanh", "widths": [3, 4], "lr": 0.1})
    assert a == b and len(a) == 16 and all(c in "0123456789abcdef" for c in a)
    assert eio.config_hash({"lr": 0.1, "widths": [3, 5], "act": "tanh"}) != a
    assert len(eio.config_hash({"x": 1}, length=8)) == 8


def test_atomic_write_success_and_permissions(tmp_path):
    path = eio.atomic_write(tmp_path / "sub" / "f.bin", lambda f: f.write(b"hello"))
    assert path.read_bytes() == b"hello"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.bin"]


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt], ids=["exception", "interrupt"])
def test_atomic_write_failure_keeps_old_content(tmp_path, error):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")

    def write(f):
        f.write(b"new but half")
        raise error("stop")

    with pytest.raises(error):
        eio.atomic_write(path, write)
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]  # no temporary file left

    with pytest.raises(error):
        eio.atomic_write(tmp_path / "absent.bin", write)
    assert not (tmp_path / "absent.bin").exists()


def test_save_and_load_torch_roundtrip(tmp_path):
    obj = {"w": torch.randn(3, 4, generator=torch_generator(100)), "step": 7, "names": ["a", "b"]}
    eio.save_torch(obj, tmp_path / "ckpt.pt")
    back = eio.load_torch(tmp_path / "ckpt.pt")
    assert_close(back["w"], obj["w"])
    assert back["step"] == 7 and back["names"] == ["a", "b"]


def test_load_torch_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        eio.load_torch(tmp_path / "nope.pt")


def test_load_torch_truncated_file(tmp_path):
    path = tmp_path / "ckpt.pt"
    eio.save_torch({"w": torch.randn(100, 100, generator=torch_generator(101))}, path)
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(CorruptFileError, match="delete it to rebuild") as info:
        eio.load_torch(path)
    assert str(path) in str(info.value)


class _Evil:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_load_torch_refuses_code(tmp_path):
    marker = tmp_path / "pwned"
    raw, sealed = tmp_path / "evil.pt", tmp_path / "evil-sealed.pt"
    torch.save({"w": _Evil(marker)}, raw)
    with pytest.raises(CorruptFileError, match="no eqlib integrity checksum"):
        eio.load_torch(raw)
    # an attacker who also writes a valid checksum still meets the weights-only unpickler
    eio.save_torch({"w": _Evil(marker)}, sealed)
    with pytest.raises(CorruptFileError, match="could not be loaded safely"):
        eio.load_torch(sealed)
    assert not marker.exists()
    # the payload is real: the unsafe loader would have run it
    with open(raw, "rb") as f:
        torch.load(f, weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("damage", ["zero-block", "bit-flip", "truncate", "append"])
def test_load_torch_detects_any_damage_by_its_checksum(tmp_path, damage):
    """A zeroed 4 KB block used to load silently as 1,025 wrong weights (issue 16)."""
    path = tmp_path / "model.pt"
    eio.save_torch({"w": torch.randn(200, 200, generator=torch_generator(102))}, path)
    data = bytearray(path.read_bytes())
    if damage == "zero-block":
        data[len(data) // 2:len(data) // 2 + 4096] = bytes(4096)
    elif damage == "bit-flip":
        data[len(data) // 3] ^= 0x10
    elif damage == "truncate":
        del data[-1000:]
    else:
        data += b"x"
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="SHA-256|integrity checksum|loaded safely") as info:
        eio.load_torch(path)
    assert str(path) in str(info.value)


def test_sealed_files_stay_readable_by_plain_torch_load(tmp_path):
    path = tmp_path / "m.pt"
    eio.save_torch({"w": torch.arange(4), "epoch": 3}, path)
    plain = torch.load(path, weights_only=True)
    assert plain["epoch"] == 3 and torch.equal(plain["w"], torch.arange(4))


def _fake_orphan(folder, name, pid, age_s=0.0):
    tmp = folder / f".{name}.w{pid}@{eio._host()}.abc123.tmp"
    tmp.write_bytes(b"partial")
    if age_s:
        t = time.time() - age_s
        os.utime(tmp, (t, t))
    return tmp


def test_stale_temporaries_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    orphan = _fake_orphan(tmp_path, "m.pt", int(dead))
    live = _fake_orphan(tmp_path, "m.pt", os.getpid())  # a concurrent writer: this process
    foreign = tmp_path / ".m.pt.legacyname.tmp"  # no writer recorded: judged by age only
    foreign.write_bytes(b"x")
    old_foreign = tmp_path / ".m.pt.oldlegacy.tmp"
    old_foreign.write_bytes(b"x")
    t = time.time() - 2 * 3600
    os.utime(old_foreign, (t, t))
    eio.save_torch({"a": 1}, tmp_path / "m.pt")  # the next write of the same file cleans up
    assert not orphan.exists() and not old_foreign.exists()
    assert live.exists() and foreign.exists()
    assert eio.load_torch(tmp_path / "m.pt") == {"a": 1}


def test_cache_dir_cleans_its_folder_once(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path))
    (tmp_path / "models").mkdir()
    orphan = _fake_orphan(tmp_path / "models", "x.ckpt", 2**22 + 12345)  # no such process
    eio.cache_dir("models")
    assert not orphan.exists()


def test_a_live_writers_old_temporary_is_never_removed(tmp_path):
    """Issue 21, item 12: with a skewed clock (or a slow write) a live writer's temporary file
    older than an hour was deleted under it by another process."""
    live = _fake_orphan(tmp_path, "m.pt", os.getpid())
    t = time.time() - 5 * 3600
    os.utime(live, (t, t))
    assert eio.clean_stale_temporaries(tmp_path) == []
    assert live.exists()
