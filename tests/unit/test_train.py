"""Tests of eqlib.train: reproducibility, penalties, the cache and resuming."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from eqlib.images import mirror_images, prepare_images
from eqlib.models import MLP
from eqlib.train import (Normalize, TrainConfig, cached_train, image_preset, learning_rate_at, penalty_term,
                         penalty_weight_at, train)


#: the CIFAR-10 preset (mirror symmetry, normalisation) every image run here uses
IMG = image_preset()

def _data(n=96, seed=0):
    g = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g)
    labels = torch.randint(0, 3, (n,), generator=g)
    return images, labels


def _clf(seed=0):
    return MLP([3072, 16, 3], activations="tanh", seed=seed)


def _ae(seed=0):
    return MLP([3072, 8, 3072], activations="gelu", seed=seed)


FAST = dict(epochs=3, batch_size=32, lr=1e-3)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))


def _same(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return all(torch.equal(sa[k], sb[k]) for k in sa)


def test_seeded_reproducibility_and_seed_matters():
    images, labels = _data()
    cfg = TrainConfig(task="classify", augment_mirror=True, **FAST)
    r1 = train(_clf(), (images, labels), cfg, device="cpu", progress=False, **IMG)
    r2 = train(_clf(), (images, labels), cfg, device="cpu", progress=False, **IMG)
    r3 = train(_clf(), (images, labels), cfg.replace(seed=1), device="cpu", progress=False, **IMG)
    assert _same(r1.model, r2.model)
    assert not _same(r1.model, r3.model)
    assert r1.history["epoch"] == [1, 2, 3]
    assert len(r1.history["loss"]) == 3


def test_history_matches_a_hand_computed_pass():
    """With lr = 1e-30 the model does not move (below float32 resolution), so every epoch's recorded loss and accuracy are
    those of the initial model on all images, computed here by hand."""
    images, labels = _data()
    model = _clf()
    with torch.no_grad():
        logits = model(prepare_images(images).reshape(len(images), -1))
    accuracy = float((logits.argmax(1) == labels).float().mean())
    loss = float(nn.functional.cross_entropy(logits, labels))
    r = train(_clf(), (images, labels), TrainConfig(task="classify", epochs=2, batch_size=32, lr=1e-30),
              device="cpu", progress=False, **IMG)
    assert _same(r.model, model)
    assert r.history["accuracy"] == pytest.approx([accuracy] * 2, abs=1e-6)
    assert r.history["loss"] == pytest.approx([loss] * 2, rel=1e-5)
    assert 0 < accuracy < 1  # a reference that can tell right from wrong on this data


def test_training_lowers_the_loss():
    images, labels = _data(64)
    cfg = TrainConfig(task="classify", epochs=15, batch_size=16, lr=3e-3)
    r = train(_clf(), (images, labels), cfg, device="cpu", progress=False, **IMG)
    assert r.history["loss"][-1] < 0.5 * r.history["loss"][0]


def test_autoencoder_with_ramped_penalty_and_snapshots():
    images, _ = _data(64)
    cfg = TrainConfig(task="autoencode", epochs=4, batch_size=32, penalty="equivariance", penalty_weight=1.0,
                      penalty_start=0.5, penalty_ramp=0.25, snapshot_every=2)
    r = train(_ae(), (images, None), cfg, device="cpu", progress=False, **IMG)
    assert r.history["penalty_weight"][0] == 0 and r.history["penalty"][0] == 0
    assert r.history["penalty"][-1] > 0 and r.history["penalty_weight"][-1] == 1.0
    assert [e for e, _ in r.snapshots] == [0, 2, 4]


def test_penalty_schedule_and_lr_schedule():
    cfg = TrainConfig(penalty="invariance", penalty_weight=2.0, penalty_start=0.5, penalty_ramp=0.2)
    assert penalty_weight_at(cfg, 0.49) == 0
    assert penalty_weight_at(cfg, 0.6) == pytest.approx(1.0)
    assert penalty_weight_at(cfg, 0.9) == 2.0
    assert penalty_weight_at(cfg.replace(penalty_ramp=0.0), 0.5) == 2.0
    sched = TrainConfig(schedule="warmup_linear", warmup=0.1, lr=1.0)
    assert learning_rate_at(sched, 0.05) == pytest.approx(0.5)
    assert learning_rate_at(sched, 0.1) == pytest.approx(1.0)
    assert learning_rate_at(sched, 0.55) == pytest.approx(0.5)


class _MirrorAverage(nn.Module):
    """f(x) = g(x) + g(mx) with g a conv: exactly mirror-invariant logits via pooling."""

    def __init__(self, equivariant: bool):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.equivariant = equivariant

    def forward(self, x):
        y = self.conv(x)
        if self.equivariant:
            y = y + self.conv(x.flip(-1)).flip(-1)
        return y


def test_penalties_zero_for_exact_symmetry_positive_otherwise_and_a_mean():
    x = prepare_images(_data(8)[0])
    eq = _MirrorAverage(True)
    assert penalty_term(eq, x, "equivariance").item() < 1e-10
    inv = nn.Sequential(_MirrorAverage(True), nn.Flatten(), nn.Linear(3072, 1))
    # invariance: pool over width symmetrically
    pooled = nn.Sequential(_MirrorAverage(True), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    assert penalty_term(pooled, x, "invariance").item() < 1e-10
    assert penalty_term(inv, x, "invariance").item() > 1e-6
    plain = _MirrorAverage(False)
    p = penalty_term(plain, x, "equivariance")
    assert p.item() > 1e-4
    # a mean over coordinates: identical to the explicit mean, and not growing with the image count
    manual = ((plain(mirror_images(x)) - mirror_images(plain(x))) ** 2).mean()
    torch.testing.assert_close(p, manual)
    p2 = penalty_term(plain, torch.cat([x, x]), "equivariance")
    torch.testing.assert_close(p2, p)
    # the identity map is equivariant; flattened outputs are handled
    assert penalty_term(nn.Flatten(), x, "equivariance").item() == 0
    with pytest.raises(ValueError):
        penalty_term(plain, x, "nonsense")


def test_bad_configs_raise():
    with pytest.raises(ValueError, match="task"):
        TrainConfig(task="segment")
    with pytest.raises(ValueError, match="autoencode"):
        TrainConfig(task="classify", penalty="equivariance")
    with pytest.raises(ValueError, match="penalty_start must be a finite number >= 0.0 and <= 1.0, got 1.5"):
        TrainConfig(penalty_start=1.5)
    with pytest.raises(ValueError, match="labels"):
        train(_clf(), (_data()[0], None), TrainConfig(), device="cpu", progress=False, **IMG)
    cfg = TrainConfig(weight_decay=0.1, seed=3)
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("field,value", [
    ("epochs", 2.5), ("epochs", NAN), ("epochs", True), ("epochs", 0), ("batch_size", "8"),
    ("lr", NAN), ("lr", INF), ("lr", 0.0), ("penalty_weight", NAN), ("weight_decay", NAN),
    ("weight_decay", -1.0), ("grad_clip", INF), ("momentum", NAN), ("warmup", NAN),
    ("penalty_noise", NAN), ("noise_std", 0.0), ("first_weight_decay", -1.0), ("penalty_samples", -1),
    ("after_step", 3), ("augment_per_batch", "yes"), ("schedule", "cos"),
    ("snapshot_every", -1), ("seed", 1.5), ("augment_mirror", "yes"), ("optimizer", "lbfgs"),
])
def test_train_config_rejects_nan_inf_and_non_integers_naming_the_field(field, value):
    """penalty_weight=nan used to disable the penalty silently, std=inf to zero a channel."""
    with pytest.raises((ValueError, TypeError), match=rf"TrainConfig\.{field}"):
        TrainConfig(**{field: value})


@pytest.mark.parametrize("field,value", [
    ("std", (INF, 1.0, 1.0)), ("std", (0.0, 1.0, 1.0)), ("mean", (NAN, 0.0, 0.0)), ("mean", "abc")])
def test_normalize_rejects_bad_statistics_naming_them(field, value):
    """std=inf used to zero a channel; the statistics moved from TrainConfig to the preprocess."""
    with pytest.raises((ValueError, TypeError), match=field):
        Normalize(**{field: value})


def test_train_config_integral_floats_become_ints():
    cfg = TrainConfig(epochs=2.0)
    assert cfg.epochs == 2 and type(cfg.epochs) is int and cfg == TrainConfig(epochs=2)


def test_train_rejects_float_images_in_0_255_and_nan_inputs():
    images, labels = _data()
    cfg = TrainConfig(task="classify", **FAST)
    with pytest.raises(ValueError, match=r"float images must lie in \[0, 1\].*divide by 255"):
        train(_clf(), (images.float(), labels), cfg, device="cpu", progress=False, **IMG)
    floats = images.float() / 255
    floats[1, 2, 3, 4] = float("nan")
    with pytest.raises(ValueError, match="images must be finite.*first at index \\(1, 2, 3, 4\\)"):
        train(_clf(), (floats, labels), cfg, device="cpu", progress=False, **IMG)
    model = _clf()
    with torch.no_grad():
        next(model.parameters())[0, 0] = float("nan")
    name = next(n for n, _ in model.named_parameters())
    with pytest.raises(ValueError, match=f"parameter '{name}' must be finite"):
        train(model, (images, labels), cfg, device="cpu", progress=False, **IMG)


def test_train_rejects_empty_data_and_bad_labels():
    images, labels = _data()
    cfg = TrainConfig(task="classify", **FAST)
    with pytest.raises(ValueError, match="images must not be empty"):
        train(_clf(), (images[:0], labels[:0]), cfg, device="cpu", progress=False, **IMG)
    with pytest.raises(TypeError, match="labels must be an integer tensor"):
        train(_clf(), (images, labels.float()), cfg, device="cpu", progress=False, **IMG)
    with pytest.raises(ValueError, match="labels must be class indices below"):
        train(_clf(), (images, torch.full_like(labels, 42)), cfg, device="cpu", progress=False, **IMG)
    with pytest.raises(ValueError, match="checkpoint_every must be an integer >= 1"):
        train(_clf(), (images, labels), cfg, device="cpu", progress=False, **IMG, checkpoint_every=0)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        train("mlp", (images, labels), cfg, device="cpu", progress=False, **IMG)


def test_cache_hit_and_miss():
    images, labels = _data()
    cfg = TrainConfig(task="classify", **FAST)
    r1 = cached_train(_clf, cfg, (images, labels), progress=False, **IMG)
    r2 = cached_train(_clf, cfg, (images, labels), progress=False, **IMG)
    assert not r1.from_cache and r2.from_cache
    assert _same(r1.model, r2.model) and r2.history["loss"] == r1.history["loss"]
    r3 = cached_train(_clf, cfg.replace(lr=2e-3), (images, labels), progress=False, **IMG)
    assert not r3.from_cache and not _same(r1.model, r3.model)
    r4 = cached_train(_clf, cfg, (images, labels), cache_key_extra={"variant": "b"}, progress=False, **IMG)
    assert not r4.from_cache


def test_corrupt_cache_is_rebuilt_with_a_warning(tmp_path):
    images, labels = _data()
    cfg = TrainConfig(task="classify", **FAST)
    r1 = cached_train(_clf, cfg, (images, labels), progress=False, **IMG)
    from eqlib.io import cache_dir
    (path,) = list(cache_dir("models").glob("*.pt"))
    path.write_bytes(b"not a checkpoint")
    with pytest.warns(UserWarning, match="corrupt"):
        r2 = cached_train(_clf, cfg, (images, labels), progress=False, **IMG)
    assert not r2.from_cache and _same(r1.model, r2.model)


class _Interrupt(Exception):
    pass


def test_resume_after_interruption_gives_the_same_weights():
    images, labels = _data()
    cfg = TrainConfig(task="classify", epochs=4, batch_size=32, augment_mirror=True, weight_decay=0.01,
                      schedule="warmup_linear", snapshot_every=1)
    straight = train(_clf(), (images, labels), cfg, device="cpu", progress=False, **IMG)

    def stop(epoch, model, history):
        if epoch == 2:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        cached_train(_clf, cfg, (images, labels), progress=False, **IMG, hooks={"after_epoch": stop})
    from eqlib.io import cache_dir
    assert len(list(cache_dir("models").glob("*.ckpt"))) == 1
    seen = []
    resumed = cached_train(_clf, cfg, (images, labels), progress=False, **IMG,
                           hooks={"after_epoch": lambda e, m, h: seen.append(e)})
    assert seen == [3, 4]  # continued from the last complete epoch
    assert _same(straight.model, resumed.model)
    assert resumed.history["loss"] == straight.history["loss"]
    assert [e for e, _ in resumed.snapshots] == [0, 1, 2, 3, 4]
    assert not list(cache_dir("models").glob("*.ckpt"))


# --------------------------------------------------------------------------- crop augmentation

class _Seen(nn.Module):
    """A classifier that keeps a copy of every batch it is given."""

    def __init__(self):
        super().__init__()
        self.inner = _clf()
        self.seen: list[torch.Tensor] = []

    def forward(self, x):
        self.seen.append(x.detach().clone())
        return self.inner(x)


@pytest.mark.parametrize("pad", [1, 4])
def test_crops_are_windows_of_the_padded_images_drawn_after_the_elements(pad):
    """The first epoch's inputs, rebuilt by hand from the documented random stream (batch
    order, then the mirror coins, then the crop offsets, uniform in 0..2·pad): a slice of
    the black-padded uint8 image, then normalised, then mirrored."""
    images, labels = _data(n=40)
    cfg = TrainConfig(epochs=1, batch_size=16, lr=1e-30, augment_mirror=True, augment_crop=pad, seed=5)
    model = _Seen()
    train(model, (images, labels), cfg, device="cpu", progress=False, **IMG)
    gen = torch.Generator().manual_seed(5)
    perm = torch.randperm(40, generator=gen)
    flips = torch.rand(40, generator=gen) < 0.5
    offsets = torch.randint(2 * pad + 1, (40, 2), generator=gen)
    padded = nn.functional.pad(images, (pad,) * 4)
    crops = torch.stack([padded[i, :, dy:dy + 32, dx:dx + 32] for i, (dy, dx) in zip(perm.tolist(),
                                                                                      offsets[perm].tolist())])
    expected = prepare_images(crops)  # (x / 255 - mean) / std: the trainer's fused form rounds otherwise
    expected = torch.where(flips[perm].view(-1, 1, 1, 1), expected.flip(-1), expected)
    assert torch.allclose(torch.cat(model.seen), expected, rtol=0, atol=1e-5)
    assert (offsets != pad).any()  # some window is not the image itself


def test_crop_resume_after_interruption_gives_the_same_weights():
    """Killed after epoch 2, the cached run resumes at epoch 3 and ends with the weights of
    an uninterrupted run: the crops of later epochs come from the checkpointed generator."""
    images, labels = _data()
    cfg = TrainConfig(task="classify", epochs=4, batch_size=32, augment_mirror=True, augment_crop=3)
    straight = train(_clf(), (images, labels), cfg, device="cpu", progress=False, **IMG)
    no_crop = train(_clf(), (images, labels), cfg.replace(augment_crop=0), device="cpu", progress=False, **IMG)
    assert not _same(straight.model, no_crop.model)  # the crops act

    def stop(epoch, model, history):
        if epoch == 2:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        cached_train(_clf, cfg, (images, labels), progress=False, **IMG, hooks={"after_epoch": stop})
    seen = []
    resumed = cached_train(_clf, cfg, (images, labels), progress=False, **IMG,
                           hooks={"after_epoch": lambda e, m, h: seen.append(e)})
    assert seen == [3, 4]
    assert _same(straight.model, resumed.model)
    assert resumed.history["loss"] == straight.history["loss"]


def test_augment_crop_field_and_bounds():
    assert "augment_crop" not in TrainConfig().to_dict()  # the cache keys of runs without crops stay
    assert TrainConfig(augment_crop=2).to_dict()["augment_crop"] == 2
    assert TrainConfig.from_dict(TrainConfig(augment_crop=2).to_dict()) == TrainConfig(augment_crop=2)
    for bad in (-1, 65, 1.5):
        with pytest.raises(ValueError, match="augment_crop"):
            TrainConfig(augment_crop=bad)
    flat = image_preset()["symmetry"][0]
    images, labels = _data(n=8)
    with pytest.raises(ValueError, match="augment_crop crops images"):  # flattened samples: no image to crop
        train(_clf(), (images.reshape(8, -1).float() / 255, labels), TrainConfig(epochs=1, augment_crop=1),
              symmetry=(flat, flat), device="cpu", progress=False)
