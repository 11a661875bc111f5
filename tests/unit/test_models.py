"""The formalism: layers, Model, MLP, attention (eqlib.models)."""
import pytest
import torch

from eqlib import check_equivariance
from eqlib.actions import token_permutation
from eqlib.groups import symmetric
from eqlib.models import ACTIVATIONS, ODD_ACTIVATIONS, MLP, AttentionNetwork, Dense, Model, MultiHeadAttention
from eqlib.seeds import torch_generator


def test_mlp_shapes_depth_latents_prefix():
    net = MLP([7, 5, 4, 3], ["tanh", "gelu"], seed=0)
    assert net.depth == 3 and net.widths == [7, 5, 4, 3] and net.shapes == [(7,), (5,), (4,), (3,)]
    assert net.activations == ["tanh", "gelu", "identity"]
    x = torch.randn(9, 7, generator=torch_generator(100))
    hs = net.latents(x)
    assert [tuple(h.shape) for h in hs] == [(9, 5), (9, 4), (9, 3)]
    torch.testing.assert_close(hs[-1], net(x))
    torch.testing.assert_close(hs[0], torch.tanh(x @ net.layers[0].weight.T + net.layers[0].bias))
    p = net.prefix(2)
    assert p.depth == 2
    torch.testing.assert_close(p(x), hs[1])
    assert p.layers[0].weight is net.layers[0].weight  # shares parameters
    assert len(net.latents(x, upto=1)) == 1
    with pytest.raises(ValueError, match="prefix length"):
        net.prefix(0)


def test_mlp_flattens_images_and_activation_lists():
    net = MLP([12, 4, 2], "relu")
    img = torch.randn(3, 3, 2, 2, generator=torch_generator(101))
    torch.testing.assert_close(net(img), net(img.flatten(1)))
    assert MLP([3, 4, 5, 2], ["tanh", "relu", "sigmoid"]).activations == ["tanh", "relu", "sigmoid"]
    with pytest.raises(ValueError, match="activations"):
        MLP([3, 4, 5, 2], ["tanh"])
    with pytest.raises(ValueError, match="unknown activation"):
        Dense(3, 4, "swish")
    with pytest.raises(ValueError, match="two widths"):
        MLP([3])


@pytest.mark.parametrize("act", sorted(ACTIVATIONS))
def test_activations_and_oddness(act):
    z = torch.linspace(-3, 3, 101)
    s = ACTIVATIONS[act]
    is_odd = bool(torch.allclose(s(-z), -s(z), atol=1e-6))
    assert is_odd == (act in ODD_ACTIVATIONS)


def test_seeds_reproducible_and_distinct():
    a, b, c = MLP([5, 6, 2], seed=3), MLP([5, 6, 2], seed=3), MLP([5, 6, 2], seed=4)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)
    assert not torch.equal(a.layers[0].weight, c.layers[0].weight)


def test_model_checks_shapes_and_finiteness():
    with pytest.raises(ValueError, match="outputs"):
        Model([Dense(3, 4), Dense(5, 2)])
    with pytest.raises(ValueError, match="at least one layer"):
        Model([])
    net = MLP([3, 4, 2])
    net.check_finite()
    with torch.no_grad():
        net.layers[0].weight[0, 0] = float("inf")
    with pytest.raises(ValueError, match="layers.0.weight"):
        net.check_finite()


def test_attention_network_shapes():
    net = AttentionNetwork(n_tokens=5, dims=[8, 6, 4], heads=[2, 1], seed=0)
    assert net.depth == 2 and net.shapes == [(5, 8), (5, 6), (5, 4)]
    x = torch.randn(3, 5, 8, generator=torch_generator(102))
    assert net(x).shape == (3, 5, 4)
    layer = net.layers[0]
    maps = layer.attention_maps(x)
    assert maps.shape == (3, 2, 5, 5)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, 2, 5))
    torch.testing.assert_close(layer.head_outputs(x).sum(1), layer(x))


def test_attention_without_positions_is_token_permutation_equivariant():
    n, d = 4, 6
    G = symmetric(n)
    net = AttentionNetwork(n_tokens=n, dims=[d, 8, d], heads=2, positional=False, seed=1)
    x = torch.randn(10, n, d, generator=torch.Generator().manual_seed(0))
    rho_in, rho_out = token_permutation(G, n, d), token_permutation(G, n, d)
    some = [G.identity, *G.generators, G.generators[0] @ G.generators[1]]
    errs = check_equivariance(net, rho_in, rho_out, x, elements=some)
    assert max(errs.values()) < 1e-5
    # with learned positional encodings, it is generally not
    pos = AttentionNetwork(n_tokens=n, dims=[d, 8, d], heads=2, positional=True, seed=1)
    errs = check_equivariance(pos, rho_in, rho_out, x, elements=some)
    assert errs[G.identity] < 1e-6
    assert min(e for g, e in errs.items() if g != G.identity) > 1e-2


# -- bad arguments name themselves (issue 16: these were ZeroDivisionErrors) -----------------
@pytest.mark.parametrize("build,message", [
    (lambda: MLP([10, 0, 2]), r"widths\[1\] must be an integer >= 1, got 0"),
    (lambda: MLP([10, 2.5, 2]), r"widths\[1\] must be an integer"),
    (lambda: MLP([10]), "widths must hold at least two"),
    (lambda: MLP("10,2"), "widths must be a list"),
    (lambda: MLP([10, 4, 2], init_scale=[1.0]), "init_scale must be one number or 2"),
    (lambda: MLP([10, 4, 2], init_scale=float("nan")), "init_scale must be a finite number"),
    (lambda: MLP([10, 4, 2], seed=1.5), "seed must be an integer"),
    (lambda: MLP([10, 4, 2], bias="yes"), "bias must be True or False"),
])
def test_mlp_rejects_bad_arguments(build, message):
    with pytest.raises((ValueError, TypeError), match=message):
        build()


def test_attention_rejects_bad_arguments():
    from eqlib.models import AttentionNetwork, MultiHeadAttention

    with pytest.raises(ValueError, match="heads must be an integer >= 1, got 0"):
        MultiHeadAttention(4, 6, 6, heads=0)
    with pytest.raises(ValueError, match="d_k must be an integer >= 1"):
        MultiHeadAttention(4, 6, 6, heads=2, d_k=0)
    with pytest.raises(ValueError, match="heads must be one number or 2"):
        AttentionNetwork(4, [6, 6, 6], heads=[2])


def test_mlp_forward_rejects_integer_input():
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        MLP([4, 3, 2])(torch.ones(2, 4, dtype=torch.long))


def test_one_meaning_of_seed_none():
    import numpy as np

    from eqlib.images import random_mirror
    from eqlib.groups import dihedral
    from eqlib.seeds import DEFAULT_SEED, numpy_rng, torch_generator
    from eqlib.symmetries import SymmetryGroup

    assert DEFAULT_SEED == 0
    assert torch.equal(torch.rand(3, generator=torch_generator(None)), torch.rand(3, generator=torch_generator(0)))
    assert np.array_equal(numpy_rng(None).random(3), numpy_rng(0).random(3))
    G = dihedral(4)
    assert G.sample(5, None) == G.sample(5, 0)
    x = torch.randn(8, 3, 4, 4, generator=torch_generator(103))
    assert torch.equal(random_mirror(x), random_mirror(x, generator=0))
    assert torch.equal(MLP([4, 3], seed=None).layers[0].weight, MLP([4, 3], seed=0).layers[0].weight)
    assert torch.equal(SymmetryGroup("permutation", 5).sample(None).matrix(),
                       SymmetryGroup("permutation", 5).sample(0).matrix())
    with pytest.raises(ValueError, match="seed"):
        torch_generator(-1)
