"""The group-generic trainer: train(..., symmetry=(rho_in, rho_out))."""
from __future__ import annotations

import pytest
import torch

from eqlib.actions import check_equivariance, regular, trivial
from eqlib.images import image_dihedral, mirror
from eqlib.groups import dihedral
from eqlib.models import MLP
from eqlib.train import TrainConfig, _act_each, cached_train, penalty_term, train
from eqlib.seeds import torch_generator


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))


def _data(n=64, seed=0):
    g = torch_generator(seed)
    return torch.randn(n, 1, 4, 4, generator=g), torch.randint(0, 3, (n,), generator=g)


def test_penalty_is_the_mean_over_elements_of_the_kernel():
    D4 = dihedral(4)
    rin, rout = image_dihedral((1, 4, 4)), trivial(D4, 3)
    net = MLP([16, 8, 3], "tanh", seed=0)
    x, _ = _data(8)
    fx = net(x)
    manual = torch.stack([(net(rin.act(g, x)) - fx).pow(2).mean() for g in D4]).mean()
    assert torch.allclose(penalty_term(net, x, "invariance", symmetry=(rin, rout)), manual)
    assert torch.allclose(penalty_term(net, x, "equivariance", symmetry=(rin, rout)), manual)  # trivial ρ_out
    # the mirror penalty is the symmetry penalty of the mirror at g = m
    imgs = torch.randn(4, 3, 32, 32, generator=torch_generator(100))
    ae = MLP([3072, 4, 3072], "gelu", seed=1)
    rho = mirror((3, 32, 32))
    assert torch.equal(penalty_term(ae, imgs, "equivariance"),
                       penalty_term(ae, imgs, "equivariance", symmetry=(rho, rho), elements=[rho.group["m"]]))


def test_act_each_applies_one_element_per_sample():
    rho = image_dihedral((2, 3, 3))
    x = torch.randn(10, 2, 3, 3, generator=torch_generator(101))
    idx = torch.arange(10) % 8
    out = _act_each(rho, idx, x)
    for n in range(10):
        assert torch.equal(out[n], rho.act(rho.group[int(idx[n])], x[n:n + 1])[0])


def test_penalty_makes_a_plain_mlp_nearly_invariant_and_is_reproducible():
    D4 = dihedral(4)
    sym = (image_dihedral((1, 4, 4)), trivial(D4, 3))
    x, y = _data()
    base = TrainConfig(task="classify", epochs=8, batch_size=16, lr=3e-3)
    plain = train(MLP([16, 16, 3], "tanh", seed=0), (x, y), base, device="cpu", progress=False, symmetry=sym)
    cfg = base.replace(penalty="invariance", penalty_weight=30.0, penalty_start=0.0, penalty_ramp=0.0,
                       augment_mirror=True, penalty_samples=2)
    pen = train(MLP([16, 16, 3], "tanh", seed=0), (x, y), cfg, device="cpu", progress=False, symmetry=sym)
    again = train(MLP([16, 16, 3], "tanh", seed=0), (x, y), cfg, device="cpu", progress=False, symmetry=sym)
    assert all(torch.equal(a, b) for a, b in zip(pen.model.state_dict().values(), again.model.state_dict().values()))
    err = lambda m: max(check_equivariance(m, *sym, x).values())  # noqa: E731
    assert err(pen.model) < 0.3 * err(plain.model)
    assert pen.history["penalty"][-1] > 0


def test_vector_inputs_and_equivariant_autoencoding():
    rho = regular(dihedral(4))  # any input shape: vectors of R^8
    x = torch.randn(48, 8, generator=torch_generator(2))
    base = TrainConfig(task="autoencode", epochs=10, batch_size=16, lr=1e-2, augment_mirror=True)
    pen = base.replace(penalty="equivariance", penalty_weight=30.0, penalty_start=0.0, penalty_ramp=0.0)
    runs = {name: train(MLP([8, 4, 8], "tanh", seed=0), (x, None), cfg, device="cpu", progress=False,
                        symmetry=(rho, rho), eval_data=(x[:8], torch.zeros(8, dtype=torch.long)))
            for name, cfg in (("plain", base), ("penalty", pen))}
    err = {name: max(check_equivariance(r.model, rho, rho, x).values()) for name, r in runs.items()}
    plain, r = runs["plain"].history, runs["penalty"].history
    assert len(r["test_loss"]) == 10
    assert plain["test_loss"][-1] < 0.8 * plain["test_loss"][0]  # the autoencoder learns
    assert r["penalty"][-1] < 0.1 * r["penalty"][0] and r["loss"][-1] < r["loss"][0]
    # the penalty makes the D4 autoencoder equivariant, within a tolerance the plain one misses
    assert err["penalty"] < 0.6 < err["plain"] and err["penalty"] < 0.5 * err["plain"], err


def test_bad_symmetry_input():
    x, y = _data(8)
    cfg = TrainConfig(task="classify", epochs=1, batch_size=4)
    with pytest.raises(TypeError, match="symmetry"):
        train(MLP([16, 3], seed=0), (x, y), cfg, device="cpu", progress=False, symmetry=image_dihedral((1, 4, 4)))
    with pytest.raises(ValueError, match="rho_in"):
        train(MLP([16, 3], seed=0), (torch.randn(8, 5, generator=torch_generator(102)), y), cfg, device="cpu",
              progress=False, symmetry=(image_dihedral((1, 4, 4)), trivial(dihedral(4), 3)))


def test_cached_train_passes_the_symmetry_and_keys_the_cache_by_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path))
    rho = regular(dihedral(4))
    x = torch.randn(32, 8, generator=torch_generator(3))
    cfg = TrainConfig(task="autoencode", epochs=2, batch_size=16, lr=3e-3, penalty="equivariance",
                      penalty_weight=10.0, penalty_start=0.0, penalty_ramp=0.0)
    build = lambda: MLP([8, 4, 8], "tanh", seed=0)  # noqa: E731
    direct = train(build(), (x, None), cfg, device="cpu", progress=False, symmetry=(rho, rho))
    first = cached_train(build, cfg, (x, None), device="cpu", progress=False, symmetry=(rho, rho))
    again = cached_train(build, cfg, (x, None), device="cpu", progress=False, symmetry=(rho, rho))
    assert not first.from_cache and again.from_cache
    for a, b in zip(direct.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(a, b)
    # another action of the same group on R^8 is another cache entry
    other = (rho, trivial(dihedral(4), 8))
    third = cached_train(build, cfg, (x, None), device="cpu", progress=False, symmetry=other)
    assert not third.from_cache
    assert len(list((tmp_path / "models").glob("*.pt"))) == 2
    with pytest.raises(ValueError, match="penalty_samples"):
        cached_train(build, cfg.replace(penalty_samples=-1), (x, None), device="cpu", progress=False,
                     symmetry=(rho, rho))
