"""Permutation specs, activation matching, interpolation, BN reset and REPAIR."""
import pytest
import torch

from eqlib.matching import (apply_permutation, channel_correlations, channel_statistics, interpolate,
                            involution_distance, invert_permutation, match_activations, random_permutations,
                            permutation_spec, repair, reset_bn, vgg_permutation_spec)
from eqlib.models import MLP
from eqlib.models.attention import AttentionNetwork, MultiHeadAttention
from eqlib.models.cnn import VGG, MirrorGCNN, warm_batchnorm
from eqlib.symmetries import AttentionSymmetry, SymmetryElement, apply_attention_symmetry, apply_symmetry

CFG = [8, "M", 16, "M", 16, "M"]


def _net(seed, batchnorm=True):
    return warm_batchnorm(VGG(CFG, batchnorm=batchnorm, seed=seed), seed=seed)


def _images(n=64, seed=5):
    return torch.randn(n, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("batchnorm", [True, False], ids=["bn", "nobn"])
def test_apply_permutation_keeps_the_function(batchnorm):
    net = _net(0, batchnorm)
    spec = vgg_permutation_spec(net)
    perms = random_permutations(spec, seed=1)
    moved = apply_permutation(net, perms)
    x = _images(8)
    torch.testing.assert_close(moved(x), net(x), atol=1e-5, rtol=1e-5)
    assert not torch.allclose(moved.layers[0].conv.weight, net.layers[0].conv.weight)
    # permuting back with the inverses restores the parameters exactly
    back = apply_permutation(moved, {k: invert_permutation(p) for k, p in perms.items()})
    for (k, a), b in zip(net.state_dict().items(), back.state_dict().values()):
        torch.testing.assert_close(a, b, msg=lambda m: f"{k}: {m}")


def test_bad_permutation_is_rejected():
    net = _net(0)
    with pytest.raises(ValueError, match="permutation of 0..7"):
        apply_permutation(net, {"conv0": torch.zeros(8, dtype=torch.long)})
    with pytest.raises(ValueError, match="unknown permutation"):
        apply_permutation(net, {"fc": torch.arange(3)})
    with pytest.raises(TypeError, match="to_cnn"):
        vgg_permutation_spec(MirrorGCNN(CFG))
    with pytest.raises(TypeError, match="needs a VGG"):
        vgg_permutation_spec(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="no permutation spec"):
        permutation_spec(torch.nn.Linear(2, 2))


def test_matching_recovers_a_planted_permutation():
    net = _net(2)
    spec = vgg_permutation_spec(net)
    planted = random_permutations(spec, seed=3)
    other = apply_permutation(net, planted)
    found = match_activations(net, other, _images(32), batch_size=10)
    for name, p in planted.items():
        assert torch.equal(found[name], invert_permutation(p)), name
    aligned = apply_permutation(other, found)
    for a, b in zip(net.state_dict().values(), aligned.state_dict().values()):
        torch.testing.assert_close(a, b)


def test_streaming_correlations_equal_corrcoef():
    a, b = _net(0), _net(1)
    x = _images(12)
    corr = channel_correlations(a, b, x, batch_size=5)[0]
    with torch.no_grad():
        ha, hb = a.layers[0](x), b.layers[0](x)
    flat = torch.cat([ha.transpose(0, 1).reshape(8, -1), hb.transpose(0, 1).reshape(8, -1)]).double()
    ref = torch.corrcoef(flat)[:8, 8:].float()
    torch.testing.assert_close(corr, ref, atol=1e-5, rtol=1e-4)


def test_involution_distance():
    assert involution_distance(torch.tensor([1, 0, 2, 3])) == 0.0
    assert involution_distance(torch.tensor([1, 2, 0, 3])) == 0.75


def test_interpolate_endpoints_and_midpoint():
    a, b = _net(0), _net(1)
    x = _images(4)
    torch.testing.assert_close(interpolate(a, b, 0.0)(x), a(x))
    torch.testing.assert_close(interpolate(a, b, 1.0)(x), b(x))
    mid = interpolate(a, b, 0.5)
    torch.testing.assert_close(mid.layers[1].conv.weight, 0.5 * (a.layers[1].conv.weight + b.layers[1].conv.weight))
    with pytest.raises(ValueError, match="alpha"):
        interpolate(a, b, 1.5)


def test_bn_reset_matches_the_data_statistics():
    net = _net(0)
    x = _images(40) * 3 + 2  # data far from what the running statistics saw
    reset_bn(net, x, batch_size=40)  # one batch: the stats are those of the batch
    with torch.no_grad():
        z = net.layers[0].conv(x)
    torch.testing.assert_close(net.layers[0].bn.running_mean, z.mean(dim=(0, 2, 3)), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(net.layers[0].bn.running_var, z.var(dim=(0, 2, 3)), atol=1e-3, rtol=1e-3)
    assert not net.training


def _reference_statistics(model, x):
    """Per-channel mean and std of every conv layer's ReLU input, by one plain forward pass
    (shares no code with REPAIR or channel_statistics)."""
    out = []
    with torch.no_grad():
        model.eval()
        for layer in model.layers[:-1]:
            z = layer.preactivation(x)
            out.append((z.double().mean(dim=(0, 2, 3)), z.double().std(dim=(0, 2, 3), unbiased=False)))
            x = layer.activate(z)
    return out


@pytest.mark.parametrize("batchnorm", [True, False], ids=["bn", "nobn"])
def test_repair_restores_target_statistics(batchnorm):
    a, b = _net(0, batchnorm), _net(1, batchnorm)
    x = _images(48)
    alpha = 0.3
    mid = interpolate(a, b, alpha)
    fixed = repair(mid, a, b, x, alpha=alpha, batch_size=16)
    sa, sb = _reference_statistics(a, x), _reference_statistics(b, x)
    sm, before = _reference_statistics(fixed, x), _reference_statistics(mid, x)
    assert len(sm) == len(CFG) - CFG.count("M")
    for (ma, da), (mb, db), (mm, dm) in zip(sa, sb, sm):
        torch.testing.assert_close(mm, (1 - alpha) * ma + alpha * mb, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(dm, (1 - alpha) * da + alpha * db, atol=1e-4, rtol=1e-4)
    # the interpolated network had different statistics (otherwise the test proves nothing)
    assert float((before[-1][1] - ((1 - alpha) * sa[-1][1] + alpha * sb[-1][1])).abs().max()) > 1e-2
    # channel_statistics agrees with the plain forward pass
    for (m1, d1), (m2, d2) in zip(channel_statistics(fixed, x), sm):
        torch.testing.assert_close(m1, m2, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(d1, d2, atol=1e-6, rtol=1e-6)


def test_mlp_spec_permutes_like_the_parameter_symmetry():
    """apply_permutation with the MLP spec equals apply_symmetry with unit-scale elements."""
    net = MLP([5, 7, 6, 3], activations="relu", seed=0)
    spec = permutation_spec(net)
    assert spec.names == ["hidden1", "hidden2"] and spec.sizes == {"hidden1": 7, "hidden2": 6}
    perms = random_permutations(spec, seed=2)
    moved = apply_permutation(net, perms)
    ks = [SymmetryElement(perms["hidden1"]), SymmetryElement(perms["hidden2"])]
    ref = apply_symmetry(net, ks)
    same = apply_permutation(net, dict(zip(spec.names, ks)))  # the one symmetry type is accepted
    assert all(torch.equal(v, same.state_dict()[k]) for k, v in moved.state_dict().items())
    with pytest.raises(ValueError, match="scales"):
        apply_permutation(net, {"hidden1": SymmetryElement(perms["hidden1"], torch.full((7,), 2.0))})
    for (k, v), (k2, v2) in zip(moved.state_dict().items(), ref.state_dict().items()):
        assert k == k2
        torch.testing.assert_close(v, v2)
    x = torch.randn(10, 5, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(moved(x), net(x), atol=1e-5, rtol=1e-5)
    assert not torch.equal(moved.layers[0].weight, net.layers[0].weight)


@pytest.mark.parametrize("network", [False, True], ids=["layer", "network"])
def test_attention_spec_permutes_heads_like_the_attention_symmetry(network):
    model = AttentionNetwork(5, [8, 8, 8], heads=3) if network else MultiHeadAttention(5, 8, 8, 3)
    spec = permutation_spec(model)
    perms = random_permutations(spec, seed=4)
    moved = apply_permutation(model, perms)
    layers = list(model.layers) if network else [model]
    syms = [AttentionSymmetry(p, torch.eye(l.d_k).repeat(3, 1, 1), torch.eye(l.d_v).repeat(3, 1, 1))
            for p, l in zip(perms.values(), layers)]
    ref = apply_attention_symmetry(model, syms if network else syms[0])
    for k, v in moved.state_dict().items():
        torch.testing.assert_close(v, ref.state_dict()[k])
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(moved(x), model(x), atol=1e-5, rtol=1e-5)


# -- issue 21, item 6: matching validates its inputs (each case gave wrong data before) ------------
@pytest.mark.parametrize("p", [[0, 0, 1], [1, 2, 3], [-1, 0, 1], torch.tensor([[0, 1]])],
                         ids=["repeat", "out-of-range", "negative", "2-d"])
def test_invert_permutation_refuses_non_permutations(p):
    """invert_permutation([0, 0, 1]) returned uninitialised memory."""
    with pytest.raises(ValueError, match="p must"):
        invert_permutation(p)
    with pytest.raises(ValueError, match="p must"):
        involution_distance(p)


@pytest.mark.parametrize("p", [torch.tensor([0.0, 1.0]), "01", {0, 1}, 3], ids=["float", "str", "set", "int"])
def test_invert_permutation_refuses_non_integer_sequences(p):
    with pytest.raises(TypeError, match="p must"):
        invert_permutation(p)


def test_invert_permutation_takes_lists_and_any_integer_dtype():
    for p in ([2, 0, 1], torch.tensor([2, 0, 1], dtype=torch.int32), torch.tensor([2, 0, 1], dtype=torch.uint8)):
        assert invert_permutation(p).tolist() == [1, 2, 0]
    assert invert_permutation([]).tolist() == []


@pytest.mark.parametrize("kw, error, match", [
    (dict(alpha=float("nan")), ValueError, "alpha"), (dict(alpha=5.0), ValueError, "alpha"),
    (dict(alpha=-0.1), ValueError, "alpha"), (dict(alpha="0.5"), TypeError, "alpha"),
    (dict(eps=-1.0), ValueError, "eps"), (dict(eps=0.0), ValueError, "eps"), (dict(eps=float("nan")), ValueError, "eps"),
    (dict(batch_size=0), ValueError, "batch_size")], ids=lambda v: str(v) if not isinstance(v, dict) else None)
def test_repair_refuses_bad_settings(kw, error, match):
    """repair(alpha=nan / 5, eps=-1) gave NaN or extrapolated networks silently."""
    a, b = _net(0), _net(1)
    with pytest.raises(error, match=match):
        repair(interpolate(a, b, 0.5), a, b, _images(16), **kw)


def test_matching_refuses_nan_weights_nan_images_and_no_images():
    a, b = _net(0), _net(1)
    merged = interpolate(a, b, 0.5)
    bad = _net(2)
    with torch.no_grad():
        bad.layers[0].conv.weight[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="must be finite"):
        repair(merged, bad, b, _images(16))
    with pytest.raises(ValueError, match="must be finite"):
        interpolate(a, bad, 0.5)
    with pytest.raises(ValueError, match="must be finite"):
        reset_bn(bad, _images(16))
    x = _images(16)
    x[3, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="images must be finite"):
        reset_bn(merged, x)
    with pytest.raises(ValueError, match="images must be finite"):
        repair(merged, a, b, x)
    with pytest.raises(ValueError, match="at least one image"):
        reset_bn(merged, _images(16)[:0])
    with pytest.raises(ValueError, match="at least one image"):
        repair(merged, a, b, _images(16)[:0])
    with pytest.raises(ValueError, match="alpha"):
        interpolate(a, b, float("nan"))
