"""Content-true identity (issue 21, items 1-4 and 9): configuration hashes that refuse what
is not plain JSON, content hashes of tensors, model caches and checkpoints keyed on the
actual bytes of everything that changes a number, and a data cache that a copy with the
modification time kept cannot fool.

Each test here failed on the code before the fix (cache hits on other data, a resumed
foreign checkpoint, colliding hashes)."""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from eqlib import io as eio
from eqlib.data import CIFAR10, CLASSES, load_cifar10
from eqlib.models import MLP
from eqlib.train import TrainConfig, cached_train, image_preset, train
from eqlib.seeds import torch_generator


#: the CIFAR-10 preset (mirror symmetry, normalisation) every image run here uses
IMG = image_preset()


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("EQLIB_DATA", raising=False)
    eio._warned.clear()
    eio._cleaned.clear()


# -- config_hash and content_hash -----------------------------------------------------------------
def test_config_hash_refuses_non_string_keys_naming_the_path():
    with pytest.raises(TypeError, match=r"config\['a'\]\[0\]: .*key 1"):
        eio.config_hash({"a": [{1: "x"}]})
    assert eio.config_hash({"1": "a"})  # the string key is fine


@pytest.mark.parametrize("value, kind", [
    ({1, 2}, "set"), (frozenset({1}), "frozenset"), (object(), "object"), (b"ab", "bytes"),
    (torch.zeros(3), "Tensor"), (np.zeros(3), "ndarray"), (np.int64(3), "int64"),
    (Path("/tmp"), "Path"), (1 + 2j, "complex")])
def test_config_hash_refuses_what_is_not_plain_json(value, kind):
    with pytest.raises(TypeError, match=rf"config\['k'\]\['v'\].*{kind}"):
        eio.config_hash({"k": {"v": value}})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_config_hash_refuses_non_finite_numbers(value):
    with pytest.raises(ValueError, match=r"config\['x'\]"):
        eio.config_hash({"x": value})


def test_config_hash_tells_apart_what_json_tells_apart():
    keys = [eio.config_hash({"x": v}) for v in (1, 1.0, True, "1", None, [1], {"1": 1})]
    assert len(set(keys)) == len(keys)
    assert eio.config_hash({"x": (1, 2)}) == eio.config_hash({"x": [1, 2]})  # a tuple is a JSON list
    with pytest.raises(TypeError, match="config must be a mapping"):
        eio.config_hash([1, 2])


def test_content_hash_sees_every_byte_the_dtype_and_the_shape():
    big = torch.zeros(100_000)
    other = big.clone()
    other[50_000] = 1.0  # str() of both tensors is the same ("...")
    assert str(big) == str(other)
    assert eio.content_hash(big) != eio.content_hash(other)
    assert eio.content_hash(torch.zeros(6, dtype=torch.int32)) != eio.content_hash(torch.zeros(6))
    assert eio.content_hash(torch.zeros(2, 3)) != eio.content_hash(torch.zeros(3, 2))
    x = torch.arange(12.0).reshape(3, 4)
    assert eio.content_hash(x.t()) == eio.content_hash(x.t().contiguous())  # strides do not matter
    assert eio.content_hash(x.t()) != eio.content_hash(x)
    assert eio.content_hash(x.requires_grad_()) == eio.content_hash(x.detach())
    assert eio.content_hash(np.arange(12.0).reshape(3, 4)) == eio.content_hash(torch.arange(12.0,
            dtype=torch.float64).reshape(3, 4))
    assert eio.content_hash(torch.tensor(-0.0)) != eio.content_hash(torch.tensor(0.0))
    with pytest.raises(TypeError, match="x must be a torch.Tensor or a numpy array"):
        eio.content_hash([1, 2])
    with pytest.raises(ValueError, match="meta"):
        eio.content_hash(torch.zeros(3, device="meta"))


# -- the model cache ------------------------------------------------------------------------------
def _data(n=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g),
            torch.randint(0, 3, (n,), generator=g))


def _model():
    return MLP([3072, 8, 3], activations="tanh", seed=0)


CFG = TrainConfig(task="classify", epochs=1, batch_size=16)


def _first_hit(data, **kw):
    first = cached_train(_model, CFG, data, progress=False, **IMG, **kw)
    assert not first.from_cache
    return first


@pytest.mark.parametrize("change", ["transpose", "rgb-bgr", "labels-rolled", "one-pixel"])
def test_the_model_cache_never_answers_for_other_data(change):
    """The old key summed a pixel stride and labels·index mod 9973: transposed or BGR images hit."""
    images, labels = _data()
    _first_hit((images, labels))
    if change == "transpose":
        images = images.transpose(2, 3).contiguous()
    elif change == "rgb-bgr":
        images = images.flip(1).contiguous()
    elif change == "labels-rolled":
        labels = torch.roll(labels, 1)
    else:
        images = images.clone()
        images[5, 1, 3, 4] ^= 1
    assert not cached_train(_model, CFG, (images, labels), progress=False, **IMG).from_cache


def test_the_model_cache_tells_apart_permuted_initialisations():
    """Permuting hidden units keeps the function (the course's own topic) and used to keep the key."""
    images, labels = _data()
    _first_hit((images, labels))
    perm = torch.roll(torch.arange(8), 1)

    def permuted():
        m = _model()
        state = m.state_dict()
        with torch.no_grad():
            state["layers.0.weight"].copy_(state["layers.0.weight"][perm].clone())
            state["layers.0.bias"].copy_(state["layers.0.bias"][perm].clone())
            state["layers.1.weight"].copy_(state["layers.1.weight"][:, perm].clone())
        return m

    x = torch.rand(4, 3072, generator=torch_generator(100))
    torch.testing.assert_close(permuted()(x), _model()(x))  # the same function
    assert not cached_train(permuted, CFG, (images, labels), progress=False, **IMG).from_cache


def test_the_model_cache_keys_the_evaluation_data():
    """A rerun with more test images reported the old test accuracy (eval_data not in the key)."""
    images, labels = _data()
    test_images, test_labels = _data(24, seed=1)
    first = _first_hit((images, labels), eval_data=(test_images[:8], test_labels[:8]))
    again = cached_train(_model, CFG, (images, labels), progress=False, **IMG,
                         eval_data=(test_images[:8], test_labels[:8]))
    assert again.from_cache and again.history["test_accuracy"] == first.history["test_accuracy"]
    more = cached_train(_model, CFG, (images, labels), progress=False, **IMG, eval_data=(test_images, test_labels))
    assert not more.from_cache
    none = cached_train(_model, CFG, (images, labels), progress=False, **IMG)
    assert not none.from_cache


def test_a_given_data_spec_does_not_replace_the_content():
    images, labels = _data()
    _first_hit((images, labels), data_spec={"dataset": "x"})
    assert not cached_train(_model, CFG, (images.flip(1).contiguous(), labels), data_spec={"dataset": "x"},
                            progress=False, **IMG).from_cache


# -- checkpoints ----------------------------------------------------------------------------------
class _Stop(Exception):
    pass


def _interrupted(ckpt, cfg, images, labels, at=1):
    def stop(epoch, model, history):
        if epoch == at:
            raise _Stop

    with pytest.raises(_Stop):
        train(_model(), (images, labels), cfg, device="cpu", progress=False, **IMG, checkpoints=ckpt,
              hooks={"after_epoch": stop})
    assert ckpt.exists()


@pytest.mark.parametrize("other", ["lr", "batch_size", "epochs", "data", "labels", "init", "eval"])
def test_a_checkpoint_of_another_run_is_never_resumed(tmp_path, other):
    images, labels = _data()
    cfg = CFG.replace(epochs=3)
    ckpt = tmp_path / "run.ckpt"
    _interrupted(ckpt, cfg, images, labels)
    build, eval_data = _model, None
    if other in ("lr", "batch_size", "epochs"):
        cfg = cfg.replace(**{"lr": {"lr": 3e-3}, "batch_size": {"batch_size": 8}, "epochs": {"epochs": 4}}[other])
    elif other == "data":
        images = images.flip(1).contiguous()
    elif other == "labels":
        labels = (labels + 1) % 3
    elif other == "init":
        build = lambda: MLP([3072, 8, 3], activations="tanh", seed=1)  # noqa: E731
    else:
        eval_data = _data(8, seed=3)
    clean = train(build(), (images, labels), cfg, device="cpu", progress=False, **IMG, eval_data=eval_data)
    with pytest.warns(UserWarning, match="belongs to another run"):
        result = train(build(), (images, labels), cfg, device="cpu", progress=False, **IMG, checkpoints=ckpt,
                       eval_data=eval_data)
    assert result.history["epoch"] == list(range(1, cfg.epochs + 1))
    assert all(torch.equal(p, q) for p, q in zip(clean.model.state_dict().values(),
                                                 result.model.state_dict().values()))


def test_a_checkpoint_of_the_same_run_is_resumed(tmp_path):
    images, labels = _data()
    cfg = CFG.replace(epochs=3)
    ckpt = tmp_path / "run.ckpt"
    _interrupted(ckpt, cfg, images, labels)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train(_model(), (images, labels), cfg, device="cpu", progress=False, **IMG, checkpoints=ckpt,
              hooks={"after_epoch": lambda e, m, h: seen.append(e)})
    assert seen == [2, 3]


def test_a_checkpoint_without_identity_is_not_resumed(tmp_path):
    """Checkpoints of older eqlib stored no identity: they are retrained, never trusted."""
    images, labels = _data()
    cfg = CFG.replace(epochs=2)
    ckpt = tmp_path / "run.ckpt"
    _interrupted(ckpt, cfg, images, labels)
    state = eio.load_torch(ckpt)
    del state["identity"]
    eio.save_torch(state, ckpt)
    with pytest.warns(UserWarning, match="belongs to another run"):
        result = train(_model(), (images, labels), cfg, device="cpu", progress=False, **IMG, checkpoints=ckpt)
    assert result.history["epoch"] == [1, 2]


# -- the data cache -------------------------------------------------------------------------------
def _folder(root: Path, seed: int = 0) -> None:
    for split in ("train", "test"):
        for c, cls in enumerate(CLASSES):
            (root / split / cls).mkdir(parents=True, exist_ok=True)
            x = np.random.default_rng(seed + c).integers(0, 256, (1, 32, 32, 3), dtype=np.uint8)
            Image.fromarray(x[0]).save(root / split / cls / "0.png", compress_level=0)


def test_a_same_size_edit_with_the_time_kept_is_seen_by_the_data_cache(tmp_path):
    """``cp -p`` / ``rsync -t`` keep size and mtime: the old key (path, size, mtime) returned stale images."""
    _folder(tmp_path / "d")
    first = load_cifar10("test", root=tmp_path / "d")
    target = tmp_path / "d" / "test" / CLASSES[3] / "0.png"
    st = target.stat()
    new = np.full((32, 32, 3), 7, dtype=np.uint8)
    Image.fromarray(new).save(target, compress_level=0)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert target.stat().st_size == st.st_size and target.stat().st_mtime_ns == st.st_mtime_ns
    again = load_cifar10("test", root=tmp_path / "d")
    assert not torch.equal(again.images, first.images)
    np.testing.assert_array_equal(again.images[3].numpy(), new.transpose(2, 0, 1))


# -- cifar_mlp's data spec ------------------------------------------------------------------------
def test_cifar_mlp_data_spec_reads_every_pixel_and_label():
    from eqlib.experiments.cifar_mlp import _data_spec
    images, labels = _data(20)
    base = CIFAR10(images, labels, split="train")
    off_grid = images.clone()
    off_grid[0, 0, 1, 1] ^= 1  # not on the old ::7 grid
    relabel = labels.clone()
    relabel[0] = (relabel[0] + 1) % 3  # label 0 was multiplied by its index 0
    specs = [_data_spec(base, 20, 0), _data_spec(CIFAR10(off_grid, labels, split="train"), 20, 0),
             _data_spec(CIFAR10(images, relabel, split="train"), 20, 0)]
    assert len({eio.config_hash(s) for s in specs}) == 3
    with pytest.raises(ValueError, match="n_train"):
        _data_spec(base, 60_000, 0)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2**16),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.float16, torch.int32, torch.uint8, torch.bool]),
       flip=st.booleans())
def test_content_hash_depends_on_values_not_layout(shape, seed, dtype, flip):
    """Any layout of the same values hashes alike; changing one entry changes the hash."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(*shape, generator=g) * 100).to(dtype)
    view = x.flip(0).contiguous().flip(0) if flip else x.t().contiguous().t() if x.ndim == 2 else x
    assert eio.content_hash(view) == eio.content_hash(x)
    y = x.clone().reshape(-1)
    y[0] = (~y[0]) if dtype == torch.bool else y[0] + 1
    assert eio.content_hash(y.reshape(x.shape)) != eio.content_hash(x)
