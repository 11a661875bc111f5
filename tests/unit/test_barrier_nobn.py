"""The GCNN barrier on VGGs without BatchNorm (issue #25: REPAIR's base setting), on
untrained networks: the budget's ``batchnorm`` field, an honest report (nothing to reset),
a no-BN GCNN's zero barrier and REPAIR's targets taken from the endpoints themselves."""
import pytest
import torch

from eqlib import images
from eqlib.experiments import barrier_merge as bm
from eqlib.experiments import gcnn_barrier as gb
from eqlib.experiments import protocol
from eqlib.matching import apply_permutation, channel_statistics, has_batchnorm, interpolate, repair
from eqlib.models.cnn import VGG, MirrorGCNN, conv_layers, flip_filters

CFG = [6, "M", 8, "M"]
COLUMNS = ("barrier", "barrier_reset", "barrier_repair")


def _data(seed, labels_from=None):
    gen = torch.Generator().manual_seed(seed)
    match = torch.randint(0, 256, (24, 3, 32, 32), generator=gen, dtype=torch.uint8)
    test = torch.randint(0, 256, (120, 3, 32, 32), generator=gen, dtype=torch.uint8)
    labels = torch.randint(0, 10, (120,), generator=gen)
    if labels_from is not None:  # the network's own predictions: accuracy 100 %, a non-trivial test
        with torch.no_grad():
            labels = labels_from(images.prepare_images(test)).argmax(1)
    return gb.MergeData.from_images(match, test, labels)


def test_default_budgets_keep_batchnorm_and_their_networks():
    for name, b in gb.BUDGETS.items():
        assert b.batchnorm is True, name
        for variant in gb.VARIANTS:
            net = gb.build_network(variant, b.widths[0], 0, b)
            assert has_batchnorm(net), (name, variant)
    # the default network is the VGG built before the field existed (the model cache keys on it)
    laptop = gb.BUDGETS["laptop"]
    old, new = VGG(list(laptop.config), width=1.0, seed=3), gb.build_network("plain", 1.0, 3, laptop)
    assert repr(old) == repr(new)
    assert all(torch.equal(p, q) for p, q in zip(old.state_dict().values(), new.state_dict().values()))


def test_batchnorm_false_builds_networks_without_batchnorm():
    b = gb.settings("laptop", batchnorm=False)
    assert protocol.parse_setting("batchnorm=false", b) == ("batchnorm", False)
    for variant in gb.VARIANTS:
        net = gb.build_network(variant, 1.0, 0, b)
        assert not has_batchnorm(net), variant
        assert all(layer.bn is None for layer in conv_layers(net)), variant
        assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in net.modules()), variant
    with pytest.raises(TypeError, match="batchnorm"):
        gb.settings("laptop", batchnorm="no")


def test_records_made_before_the_field_check_as_batchnorm():
    nested = protocol.settings_dict(gb.BUDGETS["medium"])
    del nested["batchnorm"]  # a nested record made before the field existed
    protocol.check_recorded({"settings": nested}, gb.BUDGETS["medium"])
    with pytest.raises(AssertionError, match="batchnorm"):  # ... was made with BatchNorm
        protocol.check_recorded({"settings": nested}, gb.replace(gb.BUDGETS["medium"], batchnorm=False))
    with pytest.raises(AssertionError, match="batchnorm"):
        protocol.check_recorded({"settings": {**nested, "batchnorm": False}}, gb.BUDGETS["medium"])
    # a flat record (older code, as the shipped laptop record) also reads as made with BatchNorm
    flat = dict(protocol.load_recorded("gcnn_barrier_laptop.json")["settings"])
    assert "batchnorm" not in flat and "train" not in flat
    laptop = gb.replace(gb.BUDGETS["laptop"], seeds=(3, 4, 5))
    protocol.check_recorded({"settings": flat}, laptop)
    with pytest.raises(AssertionError, match="batchnorm"):
        protocol.check_recorded({"settings": flat}, gb.replace(laptop, batchnorm=False))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nobn_gcnn_merged_with_its_flipped_copy_has_barrier_zero(seed):
    gcnn = MirrorGCNN(CFG, seed=seed, batchnorm=False).eval()
    plain = gcnn.to_cnn().eval()
    data = _data(seed, labels_from=plain)
    r = gb.gcnn_barrier(gcnn, data)
    assert r["batchnorm"] is False
    assert r["perms"] == {f"conv{i}": pi.tolist() for i, pi in enumerate(gcnn.involutions)}
    assert r["acc_a"] == r["acc_b"] == r["acc_mid"] == r["acc_mid_repair"] == 100.0
    for key in COLUMNS:
        assert r[key] == pytest.approx(0.0, abs=1e-9), (key, r[key])
        assert r["loss_" + key] == pytest.approx(0.0, abs=1e-5), (key, r["loss_" + key])
    # independently: the flipped copy, aligned by the involutions, is the GCNN itself
    x = images.prepare_images(data.test_images)
    aligned = apply_permutation(flip_filters(plain), {k: torch.tensor(p) for k, p in r["perms"].items()})
    with torch.no_grad():
        torch.testing.assert_close(aligned(x), plain(x), atol=1e-5, rtol=1e-5)


def test_nobn_merge_resets_nothing_and_repairs_towards_the_endpoints(monkeypatch):
    a, b = VGG(CFG, seed=4, batchnorm=False).eval(), VGG(CFG, seed=5, batchnorm=False).eval()
    data = _data(4)

    def no_reset(*args, **kwargs):
        raise AssertionError("reset_bn called on a network without BatchNorm")

    monkeypatch.setattr(bm, "reset_bn", no_reset)
    for r, partner in ((gb.merge_barrier(a, b, data), b), (gb.gcnn_barrier(a, data), flip_filters(a))):
        assert r["batchnorm"] is False
        for end in ("a", "b", "mid"):  # nothing to reset: the reset columns repeat the others
            assert r[f"acc_{end}_reset"] == r[f"acc_{end}"] and r[f"loss_{end}_reset"] == r[f"loss_{end}"]
        assert r["barrier_reset"] == r["barrier"] and r["loss_barrier_reset"] == r["loss_barrier"]
        assert r["invariance_mid_reset"] == r["invariance_mid"]
        # REPAIR's targets are the endpoints themselves: every channel of the repaired
        # midpoint has the mean of their means and of their standard deviations
        aligned = apply_permutation(partner, {k: torch.tensor(p) for k, p in r["perms"].items()}).eval()
        rep = repair(interpolate(a, aligned, 0.5), a, aligned, data.match)
        for (m, s), (ma, sa), (mb, sb) in zip(*(channel_statistics(n, data.match) for n in (rep, a, aligned))):
            torch.testing.assert_close(m, 0.5 * (ma + mb), atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(s, 0.5 * (sa + sb), atol=1e-4, rtol=1e-4)
        acc, loss = bm._acc_loss(rep, data)
        assert r["acc_mid_repair"] == pytest.approx(acc) and r["loss_mid_repair"] == pytest.approx(loss)
    # the same networks with BatchNorm are reset (the default path is unchanged)
    with pytest.raises(AssertionError, match="reset_bn called"):
        gb.merge_barrier(VGG(CFG, seed=4).eval(), VGG(CFG, seed=5).eval(), data)
