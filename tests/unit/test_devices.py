"""The same computations on the CPU and, when one is present, on a CUDA device.

Each test runs once per device; the ``cuda`` case is marked ``gpu`` and skips without one
(tests/conftest.py). Results on the device are compared with the CPU's.
"""
from __future__ import annotations

import pytest
import torch

from eqlib.actions import trivial
from eqlib.images import mirror
from eqlib.data import CIFAR10
from eqlib.experiments import cifar_mlp
from eqlib.groups import flip
from eqlib.latent import fit_linear_action, latent_actions, plant_equivariant
from eqlib.matching import apply_permutation, invert_permutation, match_activations, random_permutations, \
    vgg_permutation_spec
from eqlib.models import MLP
from eqlib.models.cnn import VGG, MirrorGCNN, mirror_invariance_error, warm_batchnorm
from eqlib.train import TrainConfig, cached_train, image_preset, train

#: the CIFAR-10 preset (mirror symmetry, normalisation) of the image runs here
IMG = image_preset()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))


def _images(n, seed=0, classes=3):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g),
            torch.randint(0, classes, (n,), generator=g))


@pytest.mark.parametrize("device", DEVICES)
def test_latent_actions_agree_with_the_cpu(device):
    G = flip()
    rin, rout = mirror((1, 4, 4)), trivial(G, 3)
    net, _ = plant_equivariant(G, rin, rout, [16, 12, 10, 3], activation="tanh", seed=1)
    x = torch.randn(400, 16, generator=torch.Generator().manual_seed(0))
    reference = latent_actions(net, rin, rout, method="weights", x=x)
    moved = net.to(device)
    for method in ("weights", "activations", "lstsq"):
        res = latent_actions(moved, rin, rout, method=method, x=x.to(device), samples=3000)
        assert res.ok, (method, res.summary())
        for i in (1, 2):
            torch.testing.assert_close(res.matrix(i, G["m"]).cpu(), reference.matrix(i, G["m"]),
                                       atol=1e-3 if method == "lstsq" else 1e-5, rtol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_fit_linear_action_on_device_matches_gelsd(device):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(4000, 64, generator=gen)
    A = torch.randn(64, 64, generator=gen) / 8
    Y = X @ A.T + 1e-3 * torch.randn(4000, 64, generator=gen)
    cpu = fit_linear_action(X, Y, solver="gelsd")
    dev = fit_linear_action(X.to(device).double(), Y.to(device).double())
    assert dev.A.device.type == torch.device(device).type
    torch.testing.assert_close(dev.A.cpu().float(), cpu.A, atol=1e-4, rtol=0)
    assert dev.median_error == pytest.approx(cpu.median_error, rel=1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_training_on_device_is_seeded_resumable_and_cached(device, tmp_path):
    images, labels = _images(128)
    cfg = TrainConfig(task="classify", epochs=4, batch_size=32, lr=3e-3, augment_mirror=True,
                      penalty="invariance", penalty_weight=1.0, penalty_start=0.5, penalty_ramp=0.25)
    build = lambda: MLP([3072, 32, 3], activations="tanh", seed=0)  # noqa: E731
    r1 = train(build(), (images, labels), cfg, device=device, progress=False, **IMG)
    r2 = train(build(), (images, labels), cfg, device=device, progress=False, **IMG)
    assert next(r1.model.parameters()).device.type == torch.device(device).type
    for a, b in zip(r1.model.state_dict().values(), r2.model.state_dict().values()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)
    assert r1.history["task_loss"][-1] < r1.history["task_loss"][0]
    assert r1.history["penalty"][-1] > 0

    # interrupted after epoch 2, resumed from the checkpoint: the same weights
    ckpt = tmp_path / "run.ckpt"

    def stop(epoch, model, history):
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(build(), (images, labels), cfg, device=device, progress=False, checkpoints=ckpt,
              hooks={"after_epoch": stop}, **IMG)
    assert torch.load(ckpt, weights_only=True)["epoch"] == 2
    resumed = train(build(), (images, labels), cfg, device=device, progress=False, checkpoints=ckpt, **IMG)
    assert resumed.history["task_loss"] == pytest.approx(r1.history["task_loss"], rel=1e-6)
    for a, b in zip(r1.model.state_dict().values(), resumed.model.state_dict().values()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)

    # the cache hands back CPU weights, whatever device trained them
    c1 = cached_train(build, cfg, (images, labels), device=device, progress=False, **IMG)
    c2 = cached_train(build, cfg, (images, labels), device="cpu", progress=False, **IMG)
    assert c2.from_cache and next(c2.model.parameters()).device.type == "cpu"
    for a, b in zip(c1.model.state_dict().values(), c2.model.state_dict().values()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_cnn_matching_and_gcnn_invariance_on_device(device):
    cfg = [8, "M", 16, "M", 16, "M"]
    net = warm_batchnorm(VGG(cfg, seed=2), seed=2)
    planted = random_permutations(vgg_permutation_spec(net), seed=3)
    other = apply_permutation(net, planted)
    x = torch.randn(32, 3, 32, 32, generator=torch.Generator().manual_seed(5))
    found = match_activations(net.to(device), other.to(device), x.to(device), batch_size=10)
    for name, p in planted.items():
        assert torch.equal(found[name].cpu(), invert_permutation(p)), name
    gcnn = warm_batchnorm(MirrorGCNN(cfg, seed=1), seed=1).to(device)
    assert mirror_invariance_error(gcnn, x.to(device)) < 1e-5


@pytest.mark.parametrize("device", DEVICES)
def test_equivariance_table_on_device_matches_the_cpu(device):
    images, labels = _images(300, seed=1, classes=10)
    data = CIFAR10(images, labels)
    s = cifar_mlp.settings("ci", noise_samples=600)
    models = {name: cifar_mlp.build_mlp(act, task, (48, 32, 32), seed=0)
              for name, (act, task) in cifar_mlp.NETWORKS.items() if act == "tanh"}
    kw = dict(probes=("noise", "images"), layers=(1, 2), seed=0)
    cpu = cifar_mlp.equivariance_table(models, s, data, data, device="cpu", **kw)
    dev = cifar_mlp.equivariance_table(models, s, data, data, device=device, **kw)
    assert len(cpu) == len(dev) == 2 * 2 * 2 * 2
    for a, b in zip(cpu, dev):
        assert a["median_error"] == pytest.approx(b["median_error"], rel=1e-3, abs=1e-5), (a, b)
    assert all(next(m.parameters()).device.type == "cpu" for m in models.values())
