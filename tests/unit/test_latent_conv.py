"""The theorem under the generalized adjunction on C4-equivariant conv nets (chapter 8)."""
import pytest
import torch
import torch.nn.functional as F

from eqlib.actions import trivial
from eqlib.groups import cyclic
from eqlib.latent.conv import (act_on_images, c4_channel_action, plant_c4_conv, recover_conv_actions,
                               rotate, transport_conv)
from eqlib.models.convnet import SameConv, conv_net
from eqlib.seeds import torch_generator

C4 = cyclic(4)
BLOCKS = [["trivial"], ["regular", "pair", "trivial", "sign"], ["regular", "regular"], ["trivial"]]


@pytest.mark.parametrize("kernel", [1, 3, 5])
@pytest.mark.parametrize("size", [5, 6])
def test_conv_generalized_adjunction(kernel, size):
    gen = torch.Generator().manual_seed(kernel + size)
    x, W = torch.randn(2, 3, size, size, generator=gen), torch.randn(4, 3, kernel, kernel, generator=gen)
    for g in C4:
        lhs = F.conv2d(rotate(x, g), W, padding=kernel // 2)
        rhs = rotate(F.conv2d(x, rotate(W, ~g), padding=kernel // 2), g)
        assert torch.allclose(lhs, rhs, atol=1e-5)


def test_channel_blocks_are_signed_permutation_representations():
    rho = c4_channel_action(["regular", "pair", "trivial", "sign"])
    r = C4[1]
    assert torch.equal(torch.linalg.matrix_power(rho.matrix(r), 4), torch.eye(8))
    for g in C4:
        for h in C4:
            assert torch.equal(rho.matrix(g @ h), rho.matrix(g) @ rho.matrix(h))
    with pytest.raises(ValueError, match="unknown blocks"):
        c4_channel_action(["trivial", "spin"])
    with pytest.raises(ValueError, match="cyclic"):
        c4_channel_action(["trivial"], cyclic(2))


def test_transported_parameters_give_the_same_function_when_equivariant():
    p = plant_c4_conv(BLOCKS, seed=3)
    x = torch.randn(5, 1, 7, 7, generator=torch.Generator().manual_seed(0))
    for g in C4:
        moved = conv_net([1, 8, 8, 1], 7)
        with torch.no_grad():
            for layer, (W, b) in zip(moved.layers, transport_conv(p.model, g, p.rho_in, p.rho_out)):
                layer.weight.copy_(W), layer.bias.copy_(b)
            assert torch.allclose(moved(x), p.model(x), atol=1e-5)


@pytest.mark.parametrize("seed", range(4))
def test_recovery_finds_the_hidden_planted_actions(seed):
    p = plant_c4_conv(BLOCKS, seed=seed)
    x = torch.randn(8, 1, 7, 7, generator=torch.Generator().manual_seed(seed))
    res = recover_conv_actions(p.model, x, p.rho_in, p.rho_out)
    assert res.equivariant and res.layerwise and res.is_signed_permutation()
    assert res.homomorphism_error() == 0.0
    for i, action in enumerate(p.hidden_actions):
        for g in C4:
            assert torch.equal(res.k[i][g.name], action.matrix(g))
    assert "LAYERWISE EQUIVARIANT" in res.summary()


def test_recovery_with_channel_actions_on_input_and_output_and_depth_one():
    p = plant_c4_conv([["pair"], ["regular", "sign", "sign"], ["regular"]], size=6, seed=1)
    x = torch.randn(6, 2, 6, 6, generator=torch.Generator().manual_seed(1))
    res = recover_conv_actions(p.model, x, p.rho_in, p.rho_out)
    assert res.equivariant and res.layerwise and res.homomorphism_error() == 0.0
    one = plant_c4_conv([["trivial"], ["regular"]], seed=2)
    res1 = recover_conv_actions(one.model, torch.randn(4, 1, 7, 7, generator=torch_generator(100)), one.rho_in, one.rho_out)
    assert res1.k == [] and res1.equivariant and res1.layerwise


def test_random_net_is_reported_not_equivariant():
    net = conv_net([1, 8, 8, 1], 7, seed=0)
    res = recover_conv_actions(net, torch.randn(8, 1, 7, 7, generator=torch_generator(101)))
    assert not res.equivariant and not res.layerwise
    assert "NOT equivariant" in res.summary()


def test_planted_layers_are_equivariant_before_hiding():
    p = plant_c4_conv(BLOCKS, hide=False, seed=5)
    acts = [c4_channel_action(b) for b in BLOCKS]
    y = torch.randn(3, 1, 7, 7, generator=torch_generator(102))
    for i, layer in enumerate(p.model.layers):
        for g in C4:
            lhs = layer(act_on_images(g, acts[i], y))
            assert torch.allclose(lhs, act_on_images(g, acts[i + 1], layer(y)), atol=1e-5)
        y = layer(y)


def test_bad_inputs():
    net = conv_net([1, 4, 1], 5)
    with pytest.raises(ValueError, match="x must have shape"):
        recover_conv_actions(net, torch.randn(3, 2, 5, 5, generator=torch_generator(103)))
    with pytest.raises(TypeError, match="SameConv"):
        recover_conv_actions(torch.nn.Linear(2, 2), torch.randn(3, 1, 5, 5, generator=torch_generator(104)))
    with pytest.raises(ValueError, match="rho_in"):
        transport_conv(net, C4[1], trivial(C4, 2))
    with pytest.raises(ValueError, match="square"):
        rotate(torch.randn(2, 3, 4, generator=torch_generator(105)), C4[1])
    with pytest.raises(ValueError, match="cyclic"):
        rotate(torch.randn(2, 4, 4, generator=torch_generator(106)), cyclic(3)[1])
    with pytest.raises(ValueError, match="kernel"):
        SameConv(1, 2, 5, kernel=2)
    with pytest.raises(ValueError, match="activation"):
        SameConv(1, 2, 5, activation="relu")
    with pytest.raises(ValueError, match="channels"):
        conv_net([3], 5)
    with pytest.raises(ValueError, match="blocks"):
        plant_c4_conv([["trivial"]])


def test_plot_conv_filters_rows_agree_for_the_recovered_action():
    import matplotlib
    matplotlib.use("Agg")
    from eqlib.plots.attention import plot_conv_filters

    p = plant_c4_conv(BLOCKS, seed=0)
    res = recover_conv_actions(p.model, torch.randn(4, 1, 7, 7, generator=torch_generator(107)), p.rho_in, p.rho_out)
    (W_turned, _), *_ = transport_conv(p.model, C4[1], p.rho_in, p.rho_out)
    W = p.model.layers[0].weight.detach()
    fig = plot_conv_filters(W_turned, W, res.k[0]["r"], g_name="r")
    top = [ax.images[0].get_array() for ax in fig.axes[:8]]
    bottom = [ax.images[0].get_array() for ax in fig.axes[8:]]
    assert all(abs(a - b).max() < 1e-5 for a, b in zip(top, bottom))
    with pytest.raises(ValueError, match="equal shape"):
        plot_conv_filters(W_turned[:2], W, res.k[0]["r"])
