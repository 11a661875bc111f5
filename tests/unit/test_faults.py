"""Fault injection: damaged data, damaged caches, unwritable caches, killed and concurrent writers.

Every fault must end in correct data or a clear error, never in silently wrong data, and no
temporary file may outlive the next run. Read-only and full cache folders are real tmpfs
mounts where this machine allows ``mount`` (root); otherwise the write call is made to fail
with the same errno (EROFS, ENOSPC).
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from eqlib import data
from eqlib import io as eio
from eqlib.data import CLASSES, CorruptDataError, load_cifar10
from eqlib.io import CorruptFileError
from eqlib.models import MLP
from eqlib.train import TrainConfig, cached_train, image_preset, train

ROOT = Path(__file__).resolve().parents[2]
PER_CLASS = 2
pytestmark = pytest.mark.filterwarnings("ignore:.*images per class, not the official")

#: the CIFAR-10 preset (mirror symmetry, normalisation) of the image runs here
IMG = image_preset()


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("EQLIB_DATA", raising=False)
    eio._warned.clear()  # "warn once" is per process; each fault is a fresh story
    eio._cleaned.clear()


# -- small data and models ----------------------------------------------------------------------
def write_folder(root: Path, per_class: int = PER_CLASS) -> dict[str, np.ndarray]:
    expected = {}
    for s, split in enumerate(("train", "test")):
        imgs = []
        for c, cls in enumerate(CLASSES):
            x = np.random.default_rng(100 * s + c).integers(0, 256, (per_class, 32, 32, 3), dtype=np.uint8)
            (root / split / cls).mkdir(parents=True)
            for k in range(per_class):
                Image.fromarray(x[k]).save(root / split / cls / f"{k}.png")
            imgs.append(x.transpose(0, 3, 1, 2))
        expected[split] = np.concatenate(imgs)
    return expected


def write_tar(folder: Path, archive: Path, gz: bool = True) -> Path:
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz" if gz else "w") as tf:
        tf.add(folder, arcname="cifar")
    return archive


def _images():
    g = torch.Generator().manual_seed(0)
    return (torch.randint(0, 256, (48, 3, 32, 32), dtype=torch.uint8, generator=g),
            torch.randint(0, 3, (48,), generator=g))


def _model():
    return MLP([3072, 8, 3], activations="tanh", seed=0)


CFG = TrainConfig(task="classify", epochs=2, batch_size=16)


def _same_weights(a, b) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


def _no_temporaries(folder: Path) -> bool:
    return not list(Path(folder).rglob("*.tmp"))


def _damage(path: Path, kind: str) -> None:
    raw = bytearray(path.read_bytes())
    if kind == "truncate":
        del raw[len(raw) // 2:]
    elif kind == "zero-block":
        start = len(raw) // 3
        raw[start:start + 4096] = bytes(min(4096, len(raw) - start))
    elif kind == "bit-flip":
        raw[len(raw) // 2] ^= 0x04
    elif kind == "empty":
        raw = bytearray()
    path.write_bytes(bytes(raw))


# -- mounts: real read-only / full folders where possible ----------------------------------------
@contextlib.contextmanager
def tmpfs(where: Path, options: str):
    """Mount a tmpfs with ``options`` at ``where`` (yields True), or yield False when not allowed."""
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None or os.geteuid() != 0:
        yield False
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        yield False
        return
    try:
        yield True
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@contextlib.contextmanager
def unwritable_cache(tmp_path: Path, monkeypatch, code: int):
    """EQLIB_CACHE on a read-only (EROFS) or full (ENOSPC) folder: a real tmpfs, or injected."""
    folder = tmp_path / ("ro" if code == errno.EROFS else "full")
    options = "ro,size=1m" if code == errno.EROFS else "size=16k"
    with tmpfs(folder, options) as real:
        monkeypatch.setenv("EQLIB_CACHE", str(folder))
        if not real:  # inject the same error at the write calls
            original_mkdir, original_mkstemp = Path.mkdir, eio.tempfile.mkstemp

            def failing_mkdir(self, *args, **kwargs):
                if str(self).startswith(str(folder)) and not self.exists():
                    raise OSError(code, os.strerror(code), str(self))
                return original_mkdir(self, *args, **kwargs)

            def failing_mkstemp(*args, dir=None, **kwargs):
                if str(dir).startswith(str(folder)):
                    raise OSError(code, os.strerror(code), str(dir))
                return original_mkstemp(*args, dir=dir, **kwargs)

            monkeypatch.setattr(Path, "mkdir", failing_mkdir)
            monkeypatch.setattr(eio.tempfile, "mkstemp", failing_mkstemp)
            if code == errno.ENOSPC:  # the folders exist; the writes fail
                original_mkdir(folder / "data", parents=True, exist_ok=True)
                original_mkdir(folder / "models", parents=True, exist_ok=True)
        yield real, folder


# -- the data path --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["truncate", "zero-block", "bit-flip", "empty"])
def test_damaged_archive_gives_a_clear_error_or_correct_data(tmp_path, kind):
    expected = write_folder(tmp_path / "src")
    archive = write_tar(tmp_path / "src", tmp_path / "data" / "cifar.tar.gz")
    _damage(archive, kind)
    try:
        ds = load_cifar10("test", root=archive, cache=False)
    except (CorruptDataError, data.DataNotFoundError) as exc:
        assert str(archive) in str(exc) or "cifar" in str(exc)
    else:  # gzip and tar checks missed it only if the data is intact
        np.testing.assert_array_equal(ds.images.numpy(), expected["test"])


def test_archive_cut_at_a_member_boundary_names_the_missing_classes(tmp_path):
    write_folder(tmp_path / "src")
    archive = tmp_path / "cut.tar"
    with tarfile.open(archive, "w") as tf:
        for cls in CLASSES[:7]:
            tf.add(tmp_path / "src" / "test" / cls, arcname=f"cifar/test/{cls}")
    with pytest.raises(CorruptDataError, match="'horse' has 0"):
        load_cifar10("test", root=archive)
    assert _no_temporaries(tmp_path)


@pytest.mark.parametrize("what", ["one-image", "class-folder", "batch-file"])
def test_missing_files_are_reported(tmp_path, what):
    if what == "batch-file":
        folder = tmp_path / "cifar-10-batches-py"
        folder.mkdir()
        for name in [f"data_batch_{i}" for i in range(1, 5)]:  # data_batch_5 is missing
            (folder / name).write_bytes(b"")
        with pytest.raises(CorruptDataError, match="data_batch_5"):
            load_cifar10("train", root=tmp_path)
        return
    write_folder(tmp_path / "d")
    if what == "one-image":
        (tmp_path / "d" / "test" / "frog" / "0.png").unlink()
        match = "'frog' has 1"
    else:
        shutil.rmtree(tmp_path / "d" / "test" / "frog")
        match = "'frog' has 0"
    with pytest.raises(CorruptDataError, match=match):
        load_cifar10("test", root=tmp_path / "d")


def test_damaged_image_is_named(tmp_path):
    write_folder(tmp_path / "d")
    bad = tmp_path / "d" / "test" / "ship" / "1.png"
    _damage(bad, "truncate")
    with pytest.raises(CorruptDataError, match="1.png"):
        load_cifar10("test", root=tmp_path / "d")


@pytest.mark.parametrize("kind", ["truncate", "zero-block", "bit-flip", "empty"])
def test_damaged_data_cache_is_rebuilt_with_a_warning(tmp_path, kind):
    expected = write_folder(tmp_path / "d")
    load_cifar10("test", root=tmp_path / "d")
    (cache,) = (tmp_path / "cache" / "data").glob("*.u8")
    _damage(cache, kind)
    with pytest.warns(UserWarning, match="corrupt"):
        ds = load_cifar10("test", root=tmp_path / "d")
    np.testing.assert_array_equal(ds.images.numpy(), expected["test"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_cifar10("test", root=tmp_path / "d")  # the rebuilt cache is good
    assert torch.equal(again.images, ds.images)


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC], ids=["read-only", "full"])
def test_unwritable_data_cache_warns_once_and_loads(tmp_path, monkeypatch, code):
    expected = write_folder(tmp_path / "d", per_class=4)  # 40 images: 120 KB, more than the full tmpfs
    with unwritable_cache(tmp_path, monkeypatch, code) as (real, folder):
        with pytest.warns(UserWarning, match="data cache") as record:
            first = load_cifar10("test", root=tmp_path / "d")
            second = load_cifar10("test", root=tmp_path / "d")
        assert len([w for w in record if "data cache" in str(w.message)]) == 1  # once
        for ds in (first, second):
            np.testing.assert_array_equal(ds.images.numpy(), expected["test"])
        assert _no_temporaries(folder)


# -- model caches and checkpoints -----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["truncate", "zero-block", "bit-flip", "empty"])
def test_damaged_model_cache_is_retrained_never_loaded(tmp_path, kind):
    """A .pt with 4 KB zeroed used to load silently with 1,025 wrong weights."""
    images, labels = _images()
    first = cached_train(_model, CFG, (images, labels), progress=False, **IMG)
    (pt,) = (tmp_path / "cache" / "models").glob("*.pt")
    _damage(pt, kind)
    with pytest.warns(UserWarning, match="corrupt"):
        again = cached_train(_model, CFG, (images, labels), progress=False, **IMG)
    assert not again.from_cache and _same_weights(first.model, again.model)
    assert cached_train(_model, CFG, (images, labels), progress=False, **IMG).from_cache  # rebuilt


@pytest.mark.parametrize("kind", ["truncate", "zero-block", "bit-flip"])
def test_damaged_checkpoint_restarts_from_scratch(tmp_path, kind):
    """A zeroed .ckpt used to resume silently at a later epoch with different weights."""
    images, labels = _images()
    ckpt = tmp_path / "run.ckpt"
    cfg = CFG.replace(epochs=3)
    clean = train(_model(), (images, labels), cfg, device="cpu", progress=False, **IMG)
    stop = []

    def interrupt(epoch, model, history):
        if epoch == 2:
            stop.append(epoch)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(_model(), (images, labels), cfg, device="cpu", progress=False, **IMG, checkpoints=ckpt, hooks={"after_epoch": interrupt})
    _damage(ckpt, kind)
    with pytest.warns(UserWarning, match="unreadable checkpoint"):
        resumed = train(_model(), (images, labels), cfg, device="cpu", progress=False, **IMG, checkpoints=ckpt)
    assert stop == [2] and resumed.history["epoch"] == [1, 2, 3]
    assert _same_weights(clean.model, resumed.model)


def test_checkpoint_with_valid_checksum_but_code_is_refused(tmp_path):
    images, labels = _images()
    ckpt = tmp_path / "run.ckpt"
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    eio.save_torch({"model": Evil()}, ckpt)
    with pytest.warns(UserWarning, match="unreadable checkpoint"):
        train(_model(), (images, labels), CFG, device="cpu", progress=False, **IMG, checkpoints=ckpt)
    assert not marker.exists()


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC], ids=["read-only", "full"])
def test_unwritable_model_cache_warns_once_and_trains(tmp_path, monkeypatch, code):
    images, labels = _images()
    reference = train(_model(), (images, labels), CFG, device="cpu", progress=False, **IMG)
    with unwritable_cache(tmp_path, monkeypatch, code) as (real, folder):
        with pytest.warns(UserWarning, match="cache|checkpoint") as record:
            result = cached_train(_model, CFG, (images, labels), progress=False, **IMG)
        assert 1 <= len(record) <= 2  # one for the cache (and one for the checkpoints)
        assert _same_weights(reference.model, result.model) and not result.from_cache
        assert _no_temporaries(folder)


# -- killed and concurrent writers ----------------------------------------------------------------
_SLOW_WRITER = textwrap.dedent("""
    import sys, time
    from eqlib import io as eio
    def write(f):
        f.write(b"x" * 100_000)
        f.flush()
        print("writing", flush=True)
        time.sleep(60)
    eio.atomic_write(sys.argv[1], write)
""")


def _run_and_kill(script: str, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline().strip() == b"writing"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


def test_sigkill_during_a_write_keeps_the_old_file_and_the_next_run_cleans_up(tmp_path):
    target = tmp_path / "models" / "m.pt"
    eio.save_torch({"w": torch.arange(5)}, target)
    _run_and_kill(_SLOW_WRITER, str(target))
    orphans = list(target.parent.glob(".m.pt.*.tmp"))
    assert len(orphans) == 1 and orphans[0].stat().st_size >= 100_000  # the killed write's leftovers
    assert torch.equal(eio.load_torch(target)["w"], torch.arange(5))  # the old content is intact
    eio.save_torch({"w": torch.arange(6)}, target)  # the next run
    assert _no_temporaries(tmp_path) and torch.equal(eio.load_torch(target)["w"], torch.arange(6))


def test_killed_data_cache_writer_beside_a_live_one(tmp_path):
    """A concurrent writer's temporary file is left alone while it lives; once it is killed,
    the next run removes it; the data is right throughout."""
    expected = write_folder(tmp_path / "d")
    script = textwrap.dedent("""
        import sys, time
        from eqlib import data
        from eqlib.data import cache
        def slow(f, x, y):
            f.write(b"partial" * 10_000)
            f.flush()
            print("writing", flush=True)
            time.sleep(60)
        cache._write_cache_file = slow
        data.load_cifar10("test", root=sys.argv[1])
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "d")], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline().strip() == b"writing"
        live = list((tmp_path / "cache" / "data").glob(".*.tmp"))
        ds = load_cifar10("test", root=tmp_path / "d")  # writes the same cache file meanwhile
        assert len(live) == 1 and live[0].exists()  # the live writer's temporary file stays
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    np.testing.assert_array_equal(ds.images.numpy(), expected["test"])
    assert live[0].exists()  # the orphan, until the next run
    eio._cleaned.clear()  # the next run (a new process cleans each cache folder once)
    again = load_cifar10("test", root=tmp_path / "d")
    assert torch.equal(again.images, ds.images) and _no_temporaries(tmp_path / "cache")


def test_concurrent_writers_leave_one_whole_file(tmp_path):
    script = textwrap.dedent("""
        import sys, torch
        from eqlib import io as eio
        print("start", flush=True)
        for _ in range(30):
            eio.save_torch({"w": torch.full((20_000,), 2)}, sys.argv[1])
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    target = tmp_path / "shared.pt"
    proc = subprocess.Popen([sys.executable, "-c", script, str(target)], stdout=subprocess.PIPE, env=env)
    assert proc.stdout.readline().strip() == b"start"
    for _ in range(30):  # this process writes too, and reads between writes
        eio.save_torch({"w": torch.full((20_000,), 1)}, target)
        w = eio.load_torch(target)["w"]
        assert bool((w == w[0]).all()) and int(w[0]) in (1, 2)  # never a mix, never torn
    assert proc.wait(timeout=120) == 0
    w = eio.load_torch(target)["w"]
    assert w.shape == (20_000,) and int(w[0]) in (1, 2) and bool((w == w[0]).all())
    assert _no_temporaries(tmp_path)


def test_stale_legacy_temporaries_go_after_an_hour(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path))
    (tmp_path / "data").mkdir()
    old = tmp_path / "data" / ".cifar10-test-a-b.u8.k2j3h4.tmp"  # the old naming: no writer recorded
    old.write_bytes(b"x" * 1000)
    t = time.time() - 7200
    os.utime(old, (t, t))
    eio.cache_dir("data")
    assert not old.exists()


def test_corrupt_file_error_names_the_file(tmp_path):
    path = tmp_path / "x.pt"
    eio.save_torch({"a": torch.ones(3)}, path)
    _damage(path, "bit-flip")
    with pytest.raises(CorruptFileError, match=str(path)):
        eio.load_torch(path)


# -- issue 21, item 11: image folders hold regular files of bounded size --------------------------
@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_a_png_that_is_not_a_regular_file_is_refused_fast(tmp_path, kind):
    """A .png symlinked to /dev/zero exhausted memory; a FIFO hung the loader."""
    write_folder(tmp_path / "d")
    bad = tmp_path / "d" / "test" / CLASSES[2] / "1.png"
    bad.unlink()
    if kind == "dev-zero":
        bad.symlink_to("/dev/zero")
    else:
        os.mkfifo(bad)
    t0 = time.perf_counter()
    with pytest.raises(CorruptDataError, match="not a regular file"):
        load_cifar10("test", root=tmp_path / "d", cache=False)
    assert time.perf_counter() - t0 < 30


def test_a_planted_huge_data_cache_is_rebuilt_not_loaded(tmp_path):
    expected = write_folder(tmp_path / "d")
    load_cifar10("test", root=tmp_path / "d")
    (cache,) = (tmp_path / "cache" / "data").glob("*.u8")
    with open(cache, "r+b") as f:  # a sparse 1 GB file: no disk used, but no split is that big
        f.truncate(1 << 30)
    with pytest.warns(UserWarning, match="corrupt"):
        ds = load_cifar10("test", root=tmp_path / "d")
    np.testing.assert_array_equal(ds.images.numpy(), expected["test"])
