"""The VGG family: flipped filters compute f(mirror x); the mirror-GCNN is exactly invariant."""
import pytest
import torch

from eqlib.models.cnn import (VGG, warm_batchnorm, MirrorGCNN, channel_involution, conv_layers, flip_filters,
                              mirror_invariance_error)
from eqlib.seeds import torch_generator


def _warm_bn(net, seed=0):
    return warm_batchnorm(net, batch_size=8, scale=2.0, shift=0.5, seed=seed)


@pytest.mark.parametrize("batchnorm", [True, False], ids=["bn", "nobn"])
def test_flipped_filters_compute_mirrored_function(batchnorm):
    net = _warm_bn(VGG([8, "M", 16, 16, "M", 24, "M"], batchnorm=batchnorm, seed=3))
    x = torch.randn(5, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    flipped = flip_filters(net).eval()
    torch.testing.assert_close(flipped(x), net(x.flip(-1)), atol=1e-5, rtol=1e-5)
    # and the original network is not mirror-invariant (so the test can fail)
    assert mirror_invariance_error(net, x) > 1e-3


def test_width_multiplier_and_config_errors():
    net = VGG([16, "M", 32, "M"], width=0.5)
    assert net.channels == [8, 16]
    assert net(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    with pytest.raises(ValueError, match="'M' must follow"):
        VGG(["M", 8])
    with pytest.raises(ValueError, match="positive ints"):
        VGG([8, "X"])
    with pytest.raises(ValueError, match="unknown configuration"):
        VGG("vgg99")


def test_channel_involution():
    pi = channel_involution(7, 3)
    assert pi.tolist() == [1, 0, 3, 2, 4, 5, 6]
    with pytest.raises(ValueError, match="even"):
        channel_involution(6, 3)


@pytest.mark.parametrize("fixed_fraction", [0.0, 0.25, 1.0])
def test_gcnn_is_exactly_invariant_and_constrained(fixed_fraction):
    gcnn = _warm_bn(MirrorGCNN([8, "M", 16, "M", 16, "M"], seed=0, fixed_fraction=fixed_fraction))
    x = torch.randn(6, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    assert mirror_invariance_error(gcnn, x) < 1e-5
    pi_in = torch.arange(3)
    for layer, pi in zip(conv_layers(gcnn), gcnn.involutions):
        w = layer.conv.weight
        torch.testing.assert_close(w.flip(-1), w[pi][:, pi_in])
        torch.testing.assert_close(layer.conv.bias, layer.conv.bias[pi])
        pi_in = pi
    plain = gcnn.to_cnn().eval()
    torch.testing.assert_close(plain(x), gcnn(x), atol=1e-5, rtol=1e-5)


def test_gcnn_trains_with_ordinary_optimizer_and_stays_invariant():
    gcnn = MirrorGCNN([8, "M", 8, "M"], seed=1)
    opt = torch.optim.SGD(gcnn.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(16, 3, 32, 32, generator=gen), torch.randint(0, 10, (16,), generator=gen)
    before = gcnn.layers[0].conv.weight.detach().clone()
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(gcnn.train()(x), y)
        opt.zero_grad(), loss.backward(), opt.step()
    assert not torch.allclose(before, gcnn.layers[0].conv.weight)
    assert mirror_invariance_error(gcnn.eval(), x) < 1e-5


def test_mirror_gcnn_constraints_are_reynolds_averages():
    """MirrorGCNN is the general construction: its parametrizations are the Reynolds average
    of the mirror acting on parameters, equal to actions.reynolds on a flattened filter bank."""
    import numpy as np

    from eqlib.actions import PermutationAction, reynolds
    from eqlib.groups import flip
    from eqlib.models import GroupAverage, MirrorGCNN, conv_layers

    net = MirrorGCNN("small", width=0.25, image_size=16, seed=0)
    layer = conv_layers(net)[1]
    proj = layer.conv.parametrizations.weight[0]
    assert isinstance(proj, GroupAverage)
    w = torch.randn(layer.conv.parametrizations.weight.original.shape, generator=torch_generator(100))
    c_out, c_in, kh, kw = w.shape
    G = flip()

    def action(pi, c):  # m: permute channels by pi and mirror the filter's columns
        grid = torch.arange(c * kh * kw).reshape(c, kh, kw)
        return PermutationAction(G, np.stack([grid.reshape(-1).numpy(), grid[pi].flip(-1).reshape(-1).numpy()]))

    rho_out = action(proj.pi_out, c_out)  # on the rows (o, h, x) of the flattened filter bank
    flat = w.permute(0, 2, 3, 1).reshape(c_out * kh * kw, c_in)
    moved = proj(w).permute(0, 2, 3, 1).reshape(c_out * kh * kw, c_in)
    pi_in_action = PermutationAction(G, np.stack([np.arange(c_in), proj.pi_in.numpy()]))
    assert torch.allclose(reynolds(flat, pi_in_action, rho_out), moved, atol=1e-6)
