"""The identity of a cached or checkpointed training run is pinned: the hex digests below were
computed by ``eqlib.train`` before it became a package (issue 24) and must never change
silently, since long recordings load trained networks from the model cache by this key.

A change that alters what a run *is* (its data, config fields, model, symmetry, preprocess)
may change a digest on purpose; then update it here and say so in the commit. A
refactoring must leave every digest as it is.
"""
from __future__ import annotations

import pytest
import torch

from eqlib import io as eio
from eqlib.actions import regular, trivial
from eqlib.groups import dihedral
from eqlib.io import load_torch
from eqlib.models import MLP
from eqlib.train import TrainConfig, cached_train, image_preset, train


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))
    eio._warned.clear()


def _images(n, shape, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 256, (n, *shape), dtype=torch.uint8, generator=g),
            torch.randint(0, 3, (n,), generator=g))


def _classifier():
    """An image classifier under the mirror preset, with eval data, a data spec and an extra key."""
    images, labels = _images(8, (3, 4, 4), 0)
    config = TrainConfig(task="classify", epochs=1, batch_size=4, augment_mirror=True, penalty="invariance",
                         penalty_weight=0.5, seed=3)
    return dict(build_model=lambda: MLP([48, 8, 3], "tanh", seed=1), config=config, data=(images, labels),
                eval_data=_images(4, (3, 4, 4), 1), data_spec={"set": "pin", "n": 8},
                cache_key_extra={"experiment": "pin"}, **image_preset((3, 4, 4)))


def _autoencoder():
    """An image autoencoder with the equivariance penalty, crops, snapshots and a cosine schedule."""
    images, _ = _images(8, (3, 4, 4), 2)
    config = TrainConfig(task="autoencode", epochs=1, batch_size=4, penalty="equivariance", penalty_weight=1.0,
                         augment_crop=1, snapshot_every=1, schedule="cosine", weight_decay=1e-3)
    return dict(build_model=lambda: MLP([48, 6, 48], "gelu", seed=2), config=config, data=(images, None),
                **image_preset((3, 4, 4)))


def _group_vectors():
    """Float vectors under the regular action of D4, an after-step hook and first-layer weight decay."""
    rho = regular(dihedral(4))
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(8, rho.dim, generator=g), torch.randint(0, 2, (8,), generator=g)
    config = TrainConfig(task="classify", epochs=1, batch_size=4, optimizer="sgd", first_weight_decay=1e-2,
                         after_step="noop", augment_mirror=True, augment_per_batch=True, penalty_samples=2)
    return dict(build_model=lambda: MLP([rho.dim, 5, 2], "relu", seed=5), config=config, data=(x, y),
                symmetry=(rho, trivial(rho.group, 2)), hooks={"after_step": lambda model, step: None})


#: (case, cache file name, stored identity) computed before the split of eqlib/train.py
PINNED = {
    "classifier": ("MLP-classify-76ab1f2bd8d3759a.pt",
                   "76ab1f2bd8d3759a3540313e71aefc71a015ec7b819390923de4ec4e12ebcd83"),
    "autoencoder": ("MLP-autoencode-eaadb1c922854993.pt",
                    "eaadb1c922854993f96f0482fb04d41c205b5581ae7885f13703a4669337c0e1"),
    "group_vectors": ("MLP-classify-f316137e0ffea620.pt",
                      "f316137e0ffea620faa994f304057103be35ff187bf2021b4a4e2ba6202335f2"),
}
CASES = {"classifier": _classifier, "autoencoder": _autoencoder, "group_vectors": _group_vectors}


def _cached(case):
    kwargs = CASES[case]()
    cached_train(device="cpu", progress=False, **kwargs)
    files = sorted(eio.cache_dir("models").glob("*.pt"))
    assert len(files) == 1, files
    return files[0].name, load_torch(files[0])["identity"]


@pytest.mark.parametrize("case", list(CASES))
def test_cached_train_identity_is_pinned(case):
    assert _cached(case) == PINNED[case]


def test_checkpoint_identity_is_pinned(tmp_path):
    """``train(..., checkpoints=...)`` stores the identity of the run alone (the cache adds its
    data spec and extra key around it)."""
    kwargs = _classifier()
    kwargs.pop("data_spec"), kwargs.pop("cache_key_extra")
    build, config, data = kwargs.pop("build_model"), kwargs.pop("config"), kwargs.pop("data")
    ckpt = tmp_path / "run.ckpt"
    train(build(), data, config, device="cpu", progress=False, checkpoints=ckpt, **kwargs)
    assert load_torch(ckpt)["identity"] == "064c46d9965e36cbaf8c385e172069715b53ec763fddd1bbff8db103c4d920cd"
