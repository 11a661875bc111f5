"""Parameter symmetry groups K_i and their action on parameters (eqlib.symmetries)."""
import pytest
import torch

from eqlib.models import MLP, AttentionNetwork, MultiHeadAttention
from eqlib.symmetries import (KINDS, AttentionSymmetry, SymmetryElement, SymmetryGroup, act_on_layer,
                              apply_attention_symmetry, apply_symmetry, intertwines, intertwining_error,
                              layer_symmetry_groups, sample_attention_symmetry, symmetry_group)
from eqlib.seeds import torch_generator

ACTS = ["tanh", "relu", "gelu", "sigmoid", "identity"]


@pytest.mark.parametrize("kind", KINDS)
def test_element_algebra_matches_matrices(kind):
    K = SymmetryGroup(kind, 7)
    a, b = K.sample(1), K.sample(2)
    torch.testing.assert_close((a @ b).matrix(), a.matrix() @ b.matrix())
    torch.testing.assert_close(a.inverse().matrix(), torch.linalg.inv(a.matrix()))
    torch.testing.assert_close((a @ ~a).matrix(), torch.eye(7))
    z = torch.randn(4, 3, 7, generator=torch_generator(100))
    torch.testing.assert_close(a.act(z), z @ a.matrix().T)
    W = torch.randn(7, 5, generator=torch_generator(101))
    torch.testing.assert_close(a.left(W), a.matrix() @ W)
    V = torch.randn(5, 7, generator=torch_generator(102))
    torch.testing.assert_close(a.right_inverse(V), V @ torch.linalg.inv(a.matrix()), atol=1e-5, rtol=1e-5)
    assert SymmetryElement.from_matrix(a.matrix()).allclose(a)
    assert K.contains(a) and K.contains(a @ b) and K.contains(a.inverse(), tol=1e-5)


def test_contains_distinguishes_kinds():
    d = 5
    perm = SymmetryGroup("permutation", d).sample(0)
    signed = SymmetryElement(perm.perm, torch.tensor([1., -1, 1, 1, 1]))
    scaled = SymmetryElement(perm.perm, torch.tensor([1., 2, 1, 1, 0.5]))
    assert SymmetryGroup("permutation", d).contains(perm)
    assert not SymmetryGroup("permutation", d).contains(signed)
    assert SymmetryGroup("signed_permutation", d).contains(signed)
    assert not SymmetryGroup("signed_permutation", d).contains(scaled)
    assert SymmetryGroup("scaled_permutation", d).contains(scaled)
    assert not SymmetryGroup("scaled_permutation", d).contains(signed)
    assert SymmetryGroup("nonzero_scaled_permutation", d).contains(signed.matrix() @ scaled.matrix())
    assert not SymmetryGroup("nonzero_scaled_permutation", d).contains(torch.ones(d, d))
    assert not SymmetryGroup("permutation", d).contains(torch.eye(d + 1))


@pytest.mark.parametrize("kind", KINDS)
def test_project_recovers_noisy_element(kind):
    K = SymmetryGroup(kind, 12)
    k = K.sample(3)
    noise = 0.01 * torch.randn(12, 12, generator=torch.Generator().manual_seed(0))
    near, dist = K.project(k.matrix() + noise)
    assert torch.equal(near.perm, k.perm)
    assert dist <= noise.norm().item() + 1e-6  # k itself is a candidate
    assert K.contains(near)
    _, zero = K.project(k.matrix())
    assert zero < 1e-5


def test_project_distance_of_a_rotation():
    c, s = 0.6, 0.8
    R = torch.tensor([[c, -s], [s, c]])
    _, d_signed = SymmetryGroup("signed_permutation", 2).project(R)
    # nearest signed permutation of [[.6,-.8],[.8,.6]] is [[0,-1],[1,0]]: distance sqrt(2*.36 + 2*.04)
    assert abs(d_signed - (2 * 0.36 + 2 * 0.04) ** 0.5) < 1e-6
    with pytest.raises(ValueError, match="NaN"):
        SymmetryGroup("permutation", 2).project(torch.full((2, 2), float("nan")))


def test_bad_elements_rejected():
    with pytest.raises(ValueError, match="permutation"):
        SymmetryElement([0, 0, 1])
    with pytest.raises(ValueError, match="nonzero"):
        SymmetryElement([0, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match="unknown kind"):
        SymmetryGroup("rotation", 3)
    with pytest.raises(ValueError, match="unknown activation"):
        symmetry_group("swish", 3)


@pytest.mark.parametrize("act", ACTS)
def test_intertwiner_property_holds_in_K_and_fails_outside(act):
    z = 3 * torch.randn(64, 10, generator=torch.Generator().manual_seed(1))
    K = symmetry_group(act, 10)
    for seed in range(5):
        assert intertwines(act, K.sample(seed), z)
    # an element of a larger group breaks it (except for the identity activation)
    bigger = {"tanh": "nonzero_scaled_permutation", "relu": "signed_permutation",
              "gelu": "signed_permutation", "sigmoid": "signed_permutation"}
    if act in bigger:
        k = SymmetryGroup(bigger[act], 10).sample(0)
        assert intertwining_error(act, k, z) > 1e-2


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("widths", [[5, 8, 3], [4, 256, 16, 2], [3, 32, 64, 16, 2], [6, 12, 12, 12, 12, 4]],
                         ids=["depth2", "depth3-w256", "depth4", "depth5"])
def test_apply_symmetry_keeps_function(act, widths):
    net = MLP(widths, act, seed=2)
    ks = [K.sample(10 + i) for i, K in enumerate(layer_symmetry_groups(net))]
    new = apply_symmetry(net, ks)
    x = torch.randn(128, widths[0], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(new(x), net(x), atol=2e-5, rtol=1e-4)
        # the parameters did change, and each hidden latent moved by k_i
        assert (new.layers[0].weight - net.layers[0].weight).abs().max() > 1e-3
        for k, h, h_new in zip(ks, net.latents(x)[:-1], new.latents(x)[:-1]):
            torch.testing.assert_close(h_new, k.act(h), atol=1e-5, rtol=1e-4)


def test_apply_symmetry_rejects_wrong_elements():
    net = MLP([3, 6, 2], "gelu", seed=0)
    signed = SymmetryGroup("signed_permutation", 6).sample(1)
    with pytest.raises(ValueError, match="not in K_1"):
        apply_symmetry(net, [signed])
    with pytest.raises(ValueError, match="need 1 elements"):
        apply_symmetry(net, [])
    with pytest.raises(ValueError, match="width"):
        apply_symmetry(net, [SymmetryGroup("permutation", 5).sample(0)])
    with pytest.raises(TypeError, match="MLP"):
        apply_symmetry(torch.nn.Linear(2, 2), [])
    # without the check, the function really changes
    x = torch.randn(32, 3, generator=torch_generator(103))
    with torch.no_grad():
        assert (apply_symmetry(net, [signed], check=False)(x) - net(x)).abs().max() > 1e-3


def test_act_on_layer_and_groups_of_model():
    net = MLP([4, 5, 6, 2], ["tanh", "relu"], seed=0)
    assert [K.kind for K in layer_symmetry_groups(net)] == ["signed_permutation", "scaled_permutation"]
    assert [K.dim for K in layer_symmetry_groups(net)] == [5, 6]
    W, b = torch.randn(5, 4, generator=torch_generator(104)), torch.randn(5, generator=torch_generator(105))
    k = SymmetryGroup("signed_permutation", 5).sample(0)
    W2, b2 = act_on_layer(W, b, k_out=k)
    torch.testing.assert_close(W2, k.matrix() @ W)
    torch.testing.assert_close(b2, k.act(b))
    with pytest.raises(ValueError, match="columns"):
        act_on_layer(W, b, k_in=k)


def test_attention_symmetry_keeps_layer_function():
    layer = MultiHeadAttention(n_tokens=5, d_in=8, d_out=6, heads=4, d_k=3, d_v=2, positional=True, seed=1)
    e = sample_attention_symmetry(layer, seed=4)
    new = apply_attention_symmetry(layer, e)
    x = torch.randn(7, 5, 8, generator=torch_generator(106))
    with torch.no_grad():
        torch.testing.assert_close(new(x), layer(x), atol=1e-5, rtol=1e-4)
        # head h of the new layer is head perm[h] of the old one
        torch.testing.assert_close(new.attention_maps(x), layer.attention_maps(x)[:, e.perm], atol=1e-5, rtol=1e-4)
        assert (new.W_Q - layer.W_Q).abs().max() > 1e-2
    ident = apply_attention_symmetry(layer, AttentionSymmetry.identity(layer))
    torch.testing.assert_close(ident.W_O, layer.W_O)


def test_attention_symmetry_on_networks_and_errors():
    net = AttentionNetwork(n_tokens=4, dims=[6, 8, 4], heads=2, seed=0)
    es = [sample_attention_symmetry(layer, seed=i) for i, layer in enumerate(net.layers)]
    new = apply_attention_symmetry(net, es)
    x = torch.randn(3, 4, 6, generator=torch_generator(107))
    with torch.no_grad():
        torch.testing.assert_close(new(x), net(x), atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="one AttentionSymmetry per layer"):
        apply_attention_symmetry(net, es[:1])
    with pytest.raises(ValueError, match="does not fit"):
        apply_attention_symmetry(net.layers[1], es[0] if es[0].A.shape[-1] != net.layers[1].d_k else
                                 sample_attention_symmetry(MultiHeadAttention(4, 6, 8, 3), 0))
    with pytest.raises(TypeError):
        apply_attention_symmetry(MLP([2, 2]), es[0])


# -- bad input names the argument (issue 16) ----------------------------------------------------
def test_symmetry_arguments_are_checked():
    from eqlib.symmetries import intertwining_error, symmetry_group

    K = symmetry_group("tanh", 3)
    with pytest.raises(ValueError, match="tol must be a finite number >= 0"):
        K.contains(torch.eye(3), tol=float("nan"))
    with pytest.raises(ValueError, match="log_scale must be a finite number >= 0"):
        K.sample(0, log_scale=-1.0)
    with pytest.raises(ValueError, match="dim must be an integer >= 1, got 0"):
        SymmetryGroup("permutation", 0)
    with pytest.raises(ValueError, match="perm must hold integers"):
        SymmetryElement([0.5, 1.0])
    with pytest.raises(ValueError, match="z must not be empty"):
        intertwining_error("tanh", K.identity(), torch.zeros(0, 3))
    with pytest.raises(ValueError, match="z must be finite"):
        intertwining_error("tanh", K.identity(), torch.tensor([[0.0, float("nan"), 1.0]]))
    with pytest.raises(TypeError, match=r"ks\[0\] must be a SymmetryElement"):
        apply_symmetry(MLP([2, 3, 2]), [torch.eye(3)])


def test_left_and_right_agree_with_dense_matrices():
    """k W and W k from the monomial form equal the dense products (one symmetry type)."""
    gen = torch.Generator().manual_seed(3)
    for seed in range(3):
        perm = torch.randperm(6, generator=gen)
        k = SymmetryElement(perm, torch.rand(6, generator=gen) + 0.5)
        W = torch.randn(6, 6, generator=gen)
        torch.testing.assert_close(k.left(W), k.matrix() @ W)
        torch.testing.assert_close(k.right(W), W @ k.matrix())
        torch.testing.assert_close(k.right_inverse(W), W @ torch.linalg.inv(k.matrix()))
        torch.testing.assert_close((k @ ~k).matrix(), torch.eye(6), atol=1e-6, rtol=0)


def test_wrong_types_raise_type_errors():
    with pytest.raises(TypeError, match="activation must be a string"):
        intertwining_error(3, SymmetryElement.identity(2), torch.zeros(1, 2))
