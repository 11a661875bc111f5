"""eqlib.data: layouts, safe unpickling, errors, cache (all on tiny fake data); the image
transforms are tested in test_images.py."""
from __future__ import annotations

import hashlib
import io
import os
import pickle
import shutil
import struct
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.testing import assert_close

from eqlib import data
from eqlib.data import (
    CIFAR10,
    CLASSES,
    CorruptDataError,
    DataNotFoundError,
    UnsafePickleError,
    load_cifar10,
)


# the small fake data sets have the official classes but not the official counts
pytestmark = pytest.mark.filterwarnings("ignore:.*images per class, not the official")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test gets its own cache and no $EQLIB_DATA."""
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("EQLIB_DATA", raising=False)


# -- fake data sets -----------------------------------------------------------------------
def fake_images(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)


def write_image_folder(root: Path, per_class: int = 2, fmt: str = "png") -> dict[str, np.ndarray]:
    """root/{train,test}/<class>/<k>.png; returns the expected (class-ordered) images per split."""
    expected = {}
    for s, split in enumerate(("train", "test")):
        imgs = []
        for c, cls in enumerate(CLASSES):
            x = fake_images(per_class, seed=100 * s + c)
            d = root / split / cls
            d.mkdir(parents=True)
            for k in range(per_class):
                Image.fromarray(x[k].transpose(1, 2, 0)).save(d / f"{k}.{fmt}")
            imgs.append(x)
        expected[split] = np.concatenate(imgs)
    return expected


def tar_folder(folder: Path, archive: Path, arcname: str) -> Path:
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(folder, arcname=arcname)
    return archive


def batch_bytes(x: np.ndarray, y: list[int], protocol: int = 4) -> bytes:
    return pickle.dumps({b"batch_label": b"fake", b"labels": y, b"data": x.reshape(len(x), -1),
                         b"filenames": [b"f%d.png" % i for i in range(len(x))]}, protocol=protocol)


def write_batches(folder: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    folder.mkdir(parents=True)
    expected = {"train": ([], []), "test": ([], [])}
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for i, name in enumerate(names):  # 10 images per batch, one of every class
        x, y = fake_images(10, seed=i), [(i + k) % 10 for k in range(10)]
        (folder / name).write_bytes(batch_bytes(x, y))
        split = "test" if name == "test_batch" else "train"
        expected[split][0].append(x)
        expected[split][1].append(np.array(y))
    meta = {b"label_names": [c.encode() for c in CLASSES], b"num_vis": 3072}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=4))
    return {k: (np.concatenate(a), np.concatenate(b)) for k, (a, b) in expected.items()}


# -- layouts ------------------------------------------------------------------------------
@pytest.mark.parametrize("split", ["train", "test"])
def test_image_folder_extracted(tmp_path, split):
    expected = write_image_folder(tmp_path / "cifar")
    ds = load_cifar10(split, root=tmp_path / "cifar")
    assert ds.images.dtype == torch.uint8 and ds.images.shape == (20, 3, 32, 32)
    assert ds.labels.dtype == torch.int64
    assert ds.classes == CLASSES and ds.split == split
    assert ds.labels.tolist() == [c for c in range(10) for _ in range(2)]
    assert_close(ds.images, torch.from_numpy(expected[split]))


def test_image_folder_found_two_levels_down_and_via_env(tmp_path, monkeypatch):
    expected = write_image_folder(tmp_path / "a" / "b")
    monkeypatch.setenv("EQLIB_DATA", str(tmp_path))
    ds = load_cifar10("test")
    assert_close(ds.images, torch.from_numpy(expected["test"]))
    assert ds.source == str(tmp_path / "a" / "b")


def test_image_folder_archive_read_directly(tmp_path):
    expected = write_image_folder(tmp_path / "src")
    (tmp_path / "data").mkdir()
    tar_folder(tmp_path / "src", tmp_path / "data" / "cifar10-jpeg.tar.gz", "cifar10-jpeg")
    for root in (tmp_path / "data", tmp_path / "data" / "cifar10-jpeg.tar.gz"):
        ds = load_cifar10("train", root=root, cache=False)
        assert_close(ds.images, torch.from_numpy(expected["train"]))
        assert ds.source.endswith("cifar10-jpeg.tar.gz:cifar10-jpeg")


def test_jpeg_images_decode_close_to_original(tmp_path):
    x = np.full((3, 32, 32), 128, np.uint8)
    x[0, :, :16] = 200
    for split in ("train", "test"):
        for cls in CLASSES:
            (tmp_path / split / cls).mkdir(parents=True)
            Image.fromarray(x.transpose(1, 2, 0)).save(tmp_path / split / cls / "0.jpg", quality=95)
    ds = load_cifar10("test", root=tmp_path)
    assert (ds.images.float() - torch.from_numpy(x).float()).abs().mean() < 3


@pytest.mark.parametrize("packed", [False, True], ids=["batches-folder", "official-tar.gz"])
def test_official_pickle_layout(tmp_path, packed):
    expected = write_batches(tmp_path / "src" / "cifar-10-batches-py")
    root = tmp_path / "src"
    if packed:
        (tmp_path / "data").mkdir()
        root = tar_folder(tmp_path / "src" / "cifar-10-batches-py", tmp_path / "data" / "cifar-10-python.tar.gz",
                          "cifar-10-batches-py")
    for split, n in (("train", 50), ("test", 10)):
        ds = load_cifar10(split, root=root)
        assert len(ds) == n
        assert_close(ds.images, torch.from_numpy(expected[split][0]))
        assert ds.labels.tolist() == expected[split][1].tolist()


def test_official_layout_preferred_over_image_folder(tmp_path):
    write_image_folder(tmp_path / "jpeg")
    write_batches(tmp_path / "cifar-10-batches-py")
    assert load_cifar10("test", root=tmp_path).source == str(tmp_path / "cifar-10-batches-py")


@pytest.mark.parametrize("chunk", [2500, 4], ids=["one-chunk", "chunks-of-4"])
def test_parallel_decoding_matches_serial(tmp_path, monkeypatch, chunk):
    expected = write_image_folder(tmp_path, per_class=3)
    monkeypatch.setattr(data.decode, "_PARALLEL_MIN", 1)
    monkeypatch.setattr(data.decode, "_CHUNK", chunk)  # 30 images: a last chunk of 2
    for workers in (2, 1):
        ds = load_cifar10("train", root=tmp_path, workers=workers, cache=False)
        assert ds.images.is_contiguous()
        assert_close(ds.images, torch.from_numpy(expected["train"]))


# -- errors -------------------------------------------------------------------------------
def test_missing_data_one_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotFoundError) as info:
        load_cifar10("train", root=tmp_path / "empty")
    msg = str(info.value)
    assert str(tmp_path / "empty") in msg and data.URL in msg and "EQLIB_DATA" in msg
    assert list((tmp_path / "empty").iterdir()) == []  # nothing half-written
    try:  # callers that know only the standard library catch it
        load_cifar10("train", root=tmp_path / "empty")
    except FileNotFoundError:
        pass
    # the error was about the missing data, not the folder: with the data there it loads
    expected = write_batches(tmp_path / "empty" / "cifar-10-batches-py")
    ds = load_cifar10("train", root=tmp_path / "empty")
    assert_close(ds.images, torch.from_numpy(expected["train"][0]))


def test_missing_data_without_root_or_env_names_the_default_place(tmp_path):
    with pytest.raises(DataNotFoundError, match="EQLIB_DATA is not set") as info:
        load_cifar10("test")
    assert str(tmp_path / "cache") in str(info.value)


def test_bad_split():
    with pytest.raises(ValueError, match="split must be"):
        load_cifar10("validation")


def test_truncated_archive_names_the_file(tmp_path):
    write_image_folder(tmp_path / "src", per_class=20)
    (tmp_path / "data").mkdir()
    archive = tar_folder(tmp_path / "src", tmp_path / "data" / "c.tar.gz", "c")
    raw = archive.read_bytes()
    archive.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CorruptDataError, match="truncated or corrupt") as info:
        load_cifar10("train", root=archive)
    assert str(archive) in str(info.value)


def test_damaged_archive_beside_good_data_is_skipped(tmp_path):
    expected = write_image_folder(tmp_path / "good")
    (tmp_path / "broken.tar.gz").write_bytes(b"\x1f\x8b\x08 not really gzip")
    ds = load_cifar10("test", root=tmp_path)
    assert_close(ds.images, torch.from_numpy(expected["test"]))
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "cifar10.tar.gz").write_bytes(b"\x1f\x8b\x08 not really gzip")
    with pytest.raises(CorruptDataError, match="cifar10.tar.gz"):
        load_cifar10("test", root=tmp_path / "only")  # the only candidate: say it is damaged


def test_bad_jpeg_names_the_file(tmp_path):
    write_image_folder(tmp_path, per_class=1)
    bad = tmp_path / "test" / "cat" / "9.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 this is not really a jpeg")
    with pytest.raises(CorruptDataError, match="could not decode image") as info:
        load_cifar10("test", root=tmp_path)
    assert str(bad) in str(info.value)


def test_wrong_image_size_names_the_file(tmp_path):
    write_image_folder(tmp_path, per_class=1)
    big = tmp_path / "test" / "dog" / "7.png"
    Image.new("RGB", (64, 48)).save(big)
    with pytest.raises(CorruptDataError, match="64x48") as info:
        load_cifar10("test", root=tmp_path)
    assert str(big) in str(info.value)


def test_unknown_class_folder_is_an_error(tmp_path):
    write_image_folder(tmp_path, per_class=1)
    (tmp_path / "test" / "unicorn").mkdir()
    Image.new("RGB", (32, 32)).save(tmp_path / "test" / "unicorn" / "0.png")
    with pytest.raises(CorruptDataError, match="unicorn"):
        load_cifar10("test", root=tmp_path)


class _Evil:
    """Unpickling this runs a shell command (the attack a tampered batch could carry)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({b"data": _Evil(marker), b"labels": [0]}, protocol=4)
    # the payload is real: an ordinary unpickler runs the command
    pickle.loads(payload)
    assert marker.exists()
    marker.unlink()
    folder = tmp_path / "cifar-10-batches-py"
    write_batches(folder)
    (folder / "test_batch").write_bytes(payload)
    with pytest.raises(UnsafePickleError, match="refused to load global") as info:
        load_cifar10("test", root=tmp_path)
    assert "test_batch" in str(info.value) and ("posix.system" in str(info.value) or "os.system" in str(info.value))
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError):  # what code written for pickle expects
        load_cifar10("test", root=tmp_path, cache=False)
    assert not marker.exists()
    # the safe loader refuses the one tampered batch, not every batch: the train split loads
    ds = load_cifar10("train", root=tmp_path, cache=False)
    assert len(ds) == 50 and ds.labels.tolist()[:10] == list(range(10))


def test_safe_unpickle_allows_arrays_and_refuses_other_globals():
    x = np.arange(12, dtype=np.uint8).reshape(3, 4)
    for protocol in (2, 4, 5):
        if protocol == 2:
            continue  # Python 3 protocol 2 builds bytes through _codecs.encode, which is refused
        out = data.safe_unpickle(pickle.dumps({b"data": x, b"n": 3, "s": "t", b"l": [1]}, protocol=protocol))
        np.testing.assert_array_equal(out[b"data"], x)
    with pytest.raises(UnsafePickleError, match="collections.OrderedDict"):
        import collections
        data.safe_unpickle(pickle.dumps(collections.OrderedDict(a=1)))
    with pytest.raises(CorruptDataError, match="not a readable"):
        data.safe_unpickle(b"garbage")


class _Py2Pickler(pickle._Pickler):
    """Writes bytes as Python 2 ``str`` opcodes, as the official (Python 2) batches do."""

    dispatch = pickle._Pickler.dispatch.copy()

    def save_py2_str(self, obj):
        n = len(obj)
        if n < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([n]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", n) + obj)
        self.memoize(obj)

    dispatch[bytes] = save_py2_str


def test_python2_style_official_batch(tmp_path):
    x = fake_images(10, seed=3)
    labels = [3, 1, 4, 0, 5, 9, 2, 6, 8, 7]
    buf = io.BytesIO()
    _Py2Pickler(buf, protocol=2).dump({b"batch_label": b"testing batch 1 of 1", b"labels": labels,
                                        b"data": x.reshape(10, -1), b"filenames": [b"a.png"] * 10})
    raw = buf.getvalue().replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n")  # numpy 1.x names
    assert b"numpy.core.multiarray\n_reconstruct" in raw and b"_codecs" not in raw
    folder = tmp_path / "cifar-10-batches-py"
    write_batches(folder)
    (folder / "test_batch").write_bytes(raw)
    ds = load_cifar10("test", root=tmp_path)
    assert_close(ds.images, torch.from_numpy(x))
    assert ds.labels.tolist() == labels


def test_batch_with_wrong_content_is_reported(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    write_batches(folder)
    (folder / "test_batch").write_bytes(pickle.dumps({b"data": np.zeros((2, 10), np.uint8), b"labels": [0, 1]}))
    with pytest.raises(CorruptDataError, match="test_batch does not look like a CIFAR-10 batch"):
        load_cifar10("test", root=tmp_path)


# -- cache --------------------------------------------------------------------------------
def cache_files(tmp_path) -> list[Path]:
    return sorted((tmp_path / "cache" / "data").glob("*.u8"))


def test_cache_hit_does_not_decode(tmp_path, monkeypatch):
    expected = write_image_folder(tmp_path / "d")
    load_cifar10("test", root=tmp_path / "d")
    assert len(cache_files(tmp_path)) == 1

    def fail(*args, **kwargs):
        raise AssertionError("decoded although the cache should have been used")

    monkeypatch.setattr(data.decode, "_decode", fail)
    ds = load_cifar10("test", root=tmp_path / "d")
    assert_close(ds.images, torch.from_numpy(expected["test"]))


def test_cache_invalidated_when_source_changes(tmp_path):
    write_image_folder(tmp_path / "d")
    first = load_cifar10("test", root=tmp_path / "d")
    f = tmp_path / "d" / "test" / "airplane" / "0.png"
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(f)
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    second = load_cifar10("test", root=tmp_path / "d")
    assert int(second.images[0].sum()) == 0 and int(first.images[0].sum()) > 0
    assert len(cache_files(tmp_path)) == 1  # the stale entry was removed


def test_corrupt_cache_is_detected_deleted_and_rebuilt(tmp_path):
    expected = write_image_folder(tmp_path / "d")
    load_cifar10("test", root=tmp_path / "d")
    (path,) = cache_files(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # a flipped byte inside the images: the CRC-32 catches it
    path.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="corrupt"):
        ds = load_cifar10("test", root=tmp_path / "d")
    assert_close(ds.images, torch.from_numpy(expected["test"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_cifar10("test", root=tmp_path / "d")  # rebuilt cache is valid again
    for damaged in (b"garbage", path.read_bytes()[:-7]):  # garbage, truncated
        path.write_bytes(damaged)
        with pytest.warns(UserWarning, match="corrupt"):
            load_cifar10("test", root=tmp_path / "d")


def test_interrupted_cache_write_leaves_no_file(tmp_path, monkeypatch):
    write_image_folder(tmp_path / "d")
    real_write = data.cache._write_cache_file

    def interrupted(f, x, y):
        buffer = io.BytesIO()
        real_write(buffer, x, y)
        f.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(data.cache, "_write_cache_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        load_cifar10("test", root=tmp_path / "d")
    assert list((tmp_path / "cache" / "data").iterdir()) == []  # neither cache nor temp file


def test_cache_disabled_writes_nothing(tmp_path):
    write_image_folder(tmp_path / "d")
    load_cifar10("test", root=tmp_path / "d", cache=False)
    assert cache_files(tmp_path) == []


# -- download -----------------------------------------------------------------------------
def test_download_checks_md5_and_is_never_default(tmp_path, monkeypatch):
    write_batches(tmp_path / "src" / "cifar-10-batches-py")
    archive = tar_folder(tmp_path / "src" / "cifar-10-batches-py", tmp_path / "fake.tar.gz", "cifar-10-batches-py")
    md5 = hashlib.md5(archive.read_bytes()).hexdigest()
    monkeypatch.setattr(data.download, "URL", archive.as_uri())
    monkeypatch.setattr(data.download, "MD5", md5)
    (tmp_path / "dl").mkdir()
    with pytest.raises(DataNotFoundError):
        load_cifar10("test", root=tmp_path / "dl")  # download=False: nothing fetched
    assert list((tmp_path / "dl").iterdir()) == []
    ds = load_cifar10("test", root=tmp_path / "dl", download=True)
    assert len(ds) == 10 and (tmp_path / "dl" / "cifar-10-python.tar.gz").exists()
    (tmp_path / "dl2").mkdir()
    with pytest.raises(CorruptDataError, match="md5"):
        data.download_cifar10(tmp_path / "dl2", url=archive.as_uri(), md5="0" * 32)
    assert list((tmp_path / "dl2").iterdir()) == []


# -- the real archive (a few members only) -------------------------------------------------
_REAL_DATA = os.environ.get("EQLIB_DATA")  # read at import, before the fixture hides it


def test_real_archive_first_members_decode():
    if not _REAL_DATA:
        pytest.skip("EQLIB_DATA is not set: no real CIFAR-10 to peek at")
    src = data.find_cifar10(_REAL_DATA)
    if not src.kind.endswith("tar"):
        pytest.skip(f"the real data is not an archive ({src.kind})")
    items = []
    for name, blob in data.archive._iter_archive(src.path, lambda n: n.lower().endswith((".jpg", ".png"))):
        items.append((name, blob))
        if len(items) == 5:
            break
    x = data.decode._decode(items)
    assert x.shape == (5, 32, 32, 3) and x.dtype == np.uint8 and x.std() > 10


def make_dataset(n_per_class: int = 10) -> data.CIFAR10:
    labels = torch.arange(10).repeat_interleave(n_per_class)
    images = torch.from_numpy(fake_images(len(labels), seed=0))
    return data.CIFAR10(images, labels, CLASSES, "fake", "train")


@pytest.mark.parametrize("stratified", [True, False], ids=["stratified", "uniform"])
def test_subset_seeded(stratified):
    ds = make_dataset()
    a, b, c = (data.subset(ds, 25, seed=s, stratified=stratified) for s in (0, 0, 1))
    assert len(a) == 25 and torch.equal(a.images, b.images) and not torch.equal(a.images, c.images)
    # the subset's images are the dataset's images with their own labels
    idx = [int((ds.images == img).flatten(1).all(1).nonzero()) for img in a.images]
    assert len(set(idx)) == 25 and ds.labels[idx].tolist() == a.labels.tolist()
    if stratified:
        assert torch.bincount(a.labels, minlength=10).tolist() == [3] * 5 + [2] * 5


def test_subset_errors():
    ds = make_dataset(2)
    with pytest.raises(ValueError, match="n must be"):
        data.subset(ds, 0)
    ds_unbalanced = data.CIFAR10(ds.images, torch.zeros(20, dtype=torch.long), CLASSES, "fake")
    with pytest.raises(ValueError, match="fewer than"):
        data.subset(ds_unbalanced, 10)


def test_dataset_validates_shapes():
    with pytest.raises(ValueError, match="uint8"):
        data.CIFAR10(torch.zeros(2, 3, 32, 32), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="one label per image"):
        data.CIFAR10(torch.zeros(2, 3, 32, 32, dtype=torch.uint8), torch.zeros(3, dtype=torch.long))


def test_partial_image_folder_says_what_is_missing(tmp_path):
    """One deleted image (9,999 of 10,000) or a deleted class folder used to load silently."""
    write_image_folder(tmp_path / "d", per_class=3)
    (tmp_path / "d" / "test" / "cat" / "1.png").unlink()
    with pytest.raises(CorruptDataError, match=r"incomplete: 29 images.*'cat' has 2, the other classes 3"):
        load_cifar10("test", root=tmp_path / "d")
    shutil.rmtree(tmp_path / "d" / "train" / "dog")
    with pytest.raises(CorruptDataError, match=r"'dog' has 0"):
        load_cifar10("train", root=tmp_path / "d")


def test_archive_cut_at_a_member_boundary_is_incomplete(tmp_path):
    write_image_folder(tmp_path / "src", per_class=2)
    archive = tmp_path / "cut.tar"
    with tarfile.open(archive, "w") as tf:  # the test split stops after the first 7 classes
        for cls in CLASSES[:7]:
            tf.add(tmp_path / "src" / "test" / cls, arcname=f"cifar/test/{cls}")
    with pytest.raises(CorruptDataError, match=r"'horse' has 0, 'ship' has 0, 'truck' has 0"):
        load_cifar10("test", root=archive)


def test_equal_but_unofficial_counts_warn_once(tmp_path):
    write_image_folder(tmp_path / "d", per_class=2)
    with pytest.warns(UserWarning, match="2 images per class, not the official 5,000"):
        load_cifar10("train", root=tmp_path / "d", cache=False)


def test_official_counts_pass_silently(tmp_path, monkeypatch, recwarn):
    write_image_folder(tmp_path / "d", per_class=2)
    monkeypatch.setitem(data.cifar._OFFICIAL_PER_CLASS, "test", 2)
    assert len(load_cifar10("test", root=tmp_path / "d")) == 20
    assert not [w for w in recwarn if "official" in str(w.message)]


def test_oversized_archive_member_is_refused_before_reading(tmp_path):
    write_image_folder(tmp_path / "src", per_class=1)
    archive = tmp_path / "bomb.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(tmp_path / "src", arcname="cifar")
        info = tarfile.TarInfo("cifar/test/cat/huge.jpg")
        info.size = 64 << 20  # 64 MiB of zeros: 64 KB compressed
        tf.addfile(info, io.BytesIO(bytes(info.size)))
    with pytest.raises(CorruptDataError, match=r"huge.jpg has 67,108,864 bytes, more than"):
        load_cifar10("test", root=archive, cache=False)


def test_oversized_image_file_is_refused(tmp_path):
    write_image_folder(tmp_path / "d", per_class=1)
    (tmp_path / "d" / "test" / "cat" / "0.png").write_bytes(bytes(2 << 20))
    with pytest.raises(CorruptDataError, match=r"0.png has 2,097,152 bytes"):
        load_cifar10("test", root=tmp_path / "d", cache=False)


@pytest.mark.parametrize("labels,message", [
    (torch.tensor([0, 42]), r"labels must be class indices in 0..9, got values in 0..42"),
    (torch.tensor([-1, 0]), r"labels must be class indices in 0..9"),
    (torch.tensor([0.0, 1.0]), r"labels must be an integer tensor"),
    ([0, 1], r"labels must be a torch.Tensor"),
])
def test_cifar10_rejects_bad_labels(labels, message):
    images = torch.zeros(2, 3, 32, 32, dtype=torch.uint8)
    with pytest.raises((ValueError, TypeError), match=message):
        CIFAR10(images, labels)
