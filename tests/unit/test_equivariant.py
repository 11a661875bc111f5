"""Intertwiners (null space, Reynolds average, characters) and EquivariantDense."""
import pytest
import torch

from eqlib.actions import (check_equivariance, equivariance_residual, equivariant_basis,
                           equivariant_projector, from_matrices, intertwiner_dimension, regular, reynolds,
                           signed_permutation, trivial)
from eqlib.images import image_dihedral, mirror
from eqlib.groups import cyclic, dihedral, flip
from eqlib.models import EquivariantDense, EquivariantMLP, MLP
from eqlib.seeds import torch_generator


def _pairs():
    D4 = dihedral(4)
    yield image_dihedral((1, 3, 3)), regular(D4)
    yield regular(D4), regular(D4) + trivial(D4, 2)
    yield mirror((1, 2, 3)), trivial(flip(), 2)
    C3 = cyclic(3)
    c, s = -0.5, 3 ** 0.5 / 2
    yield from_matrices(C3, {C3["r"]: [[c, -s], [s, c]]}), regular(C3)


@pytest.mark.parametrize("k", range(4))
def test_basis_is_equivariant_orthonormal_and_complete(k):
    rin, rout = list(_pairs())[k]
    B = equivariant_basis(rin, rout)
    assert B.shape[0] == round(intertwiner_dimension(rin, rout))
    gram = torch.einsum("kij,lij->kl", B, B)
    assert torch.allclose(gram, torch.eye(B.shape[0]), atol=1e-5)
    for g in rin.group:
        assert torch.allclose(rout.matrix(g) @ B, B @ rin.matrix(g), atol=1e-5)
    # the Reynolds average lands in the span and fixes it
    W = torch.randn(5, rout.dim, rin.dim, generator=torch.Generator().manual_seed(k))
    R = reynolds(W, rin, rout)
    coef = torch.einsum("kij,nij->nk", B, R)
    assert torch.allclose(torch.einsum("nk,kij->nij", coef, B), R, atol=1e-5)
    assert torch.allclose(reynolds(R, rin, rout), R, atol=1e-5)
    P = equivariant_projector(rin, rout)
    assert torch.allclose(P @ P, P, atol=1e-5)
    assert int(torch.linalg.matrix_rank(P)) == B.shape[0]


def _actions_of_d4():
    D4 = dihedral(4)
    from eqlib.latent import hidden_representation  # a MonomialAction with signs
    M = regular(D4).matrices()
    D = torch.diag(torch.rand(8, generator=torch.Generator().manual_seed(5)) + 0.5)
    skew = from_matrices(D4, {g: D @ M[g.index] @ torch.linalg.inv(D) for g in D4})  # not orthogonal
    return [image_dihedral((2, 3, 3)), regular(D4), hidden_representation(D4, 13, True, 1),
            regular(D4) + trivial(D4, 2), skew]


def test_act_transpose_is_the_transposed_matrix():
    for k, rho in enumerate(_actions_of_d4()):
        x = torch.randn(4, rho.dim, generator=torch.Generator().manual_seed(k))
        for g in rho.group:
            assert torch.allclose(rho.act_transpose(g, x), x @ rho.matrix(g), atol=1e-5), (rho, g)


def test_matrix_free_reynolds_equals_the_dense_average():
    acts = _actions_of_d4()
    for i, rin in enumerate(acts):
        for j, rout in enumerate(acts):
            W = torch.randn(3, rout.dim, rin.dim, generator=torch.Generator().manual_seed(10 * i + j))
            dense = torch.stack([rout.matrix(g) @ W @ rin.matrix(~g) for g in rin.group]).mean(0)
            assert torch.allclose(reynolds(W, rin, rout), dense, atol=1e-4), (rin, rout)


def test_bad_input():
    with pytest.raises(TypeError, match="rho_in"):
        equivariant_basis("x", regular(flip()))
    with pytest.raises(ValueError, match="one group"):
        equivariant_basis(regular(flip()), regular(cyclic(3)))
    with pytest.raises(ValueError, match="W must have shape"):
        reynolds(torch.zeros(3, 3), regular(flip()), regular(flip()))
    with pytest.raises(ValueError, match="pointwise"):
        EquivariantDense(regular(flip()), signed_permutation(flip(), [[0, 1], [1, 0]], [[1, 1], [-1, -1]]), "relu")
    with pytest.raises(TypeError, match="rho_in"):
        check_equivariance(MLP([4, 2]), torch.zeros(3, 4))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equivariant_mlp_is_equivariant_before_and_after_training(seed):
    D4 = dihedral(4)
    rin, hid, out = image_dihedral((1, 4, 4)), regular(D4) + regular(D4), trivial(D4, 3)
    model = EquivariantMLP([rin, hid, out], "relu", seed=seed)
    x = torch.randn(16, 1, 4, 4, generator=torch.Generator().manual_seed(seed))
    assert max(check_equivariance(model, x).values()) < 1e-5
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        model(x).square().sum().backward()
        opt.step()
    assert max(check_equivariance(model, x).values()) < 1e-5
    assert model.layers[0].dimension == equivariant_basis(rin, hid).shape[0] + 2  # bias: 2 fixed vectors
    # an unconstrained MLP is not equivariant
    plain = MLP([16, 16, 3], "relu", seed=seed)
    assert max(check_equivariance(plain, rin, out, x).values()) > 1e-2


def test_signed_output_with_odd_activation_and_residual():
    G = flip()
    rout = signed_permutation(G, [[0, 1], [1, 0]], [[1, 1], [-1, -1]])
    layer = EquivariantDense(regular(G), rout, "tanh", seed=3)
    x = torch.randn(7, 2, generator=torch_generator(100))
    assert max(check_equivariance(layer, x).values()) < 1e-6
    b = layer.bias[:, 0].detach()
    assert torch.allclose(rout.act(G["m"], b), b) and b.abs().max() > 0  # fixed vectors: (a, -a)
    res = equivariance_residual(layer, regular(G), rout, x, g=G["m"])
    assert res.shape == (7, 2) and res.abs().max() < 1e-6


def test_prefixes_flatten_images_and_carry_actions():
    images = torch.randn(5, 3, 4, 4, generator=torch_generator(101))
    net = MLP([48, 8, 3], seed=0)
    assert torch.allclose(net.prefix(1)(images), net.latents(images)[0])
    D4 = dihedral(4)
    model = EquivariantMLP([image_dihedral((1, 4, 4)), regular(D4), trivial(D4, 2)], "relu", seed=1)
    x = torch.randn(6, 1, 4, 4, generator=torch_generator(102))
    sub = model.prefix(1)
    assert sub.rho_out is model.layers[0].rho_out
    assert max(check_equivariance(sub, x).values()) < 1e-5


# -- the EquivariantLayer base: state_dict, export, check_equivariance ------------------------------------
def _gen(seed):
    return torch.Generator().manual_seed(seed)


def test_parametrized_equivariant_dense_survives_a_state_dict_round_trip():
    import io
    D4 = dihedral(4)
    rin, rout = image_dihedral((1, 3, 3)), regular(D4)
    layer = EquivariantDense(rin, rout, "relu", seed=3)
    with torch.no_grad():  # a trained-like state: free parameters off the equivariant subspace
        layer.parametrizations.weight.original.add_(torch.randn(8, 9, generator=_gen(0)))
    buf = io.BytesIO()
    torch.save(layer.state_dict(), buf)
    buf.seek(0)
    fresh = EquivariantDense(rin, rout, "relu", seed=11)
    x = torch.randn(6, 1, 3, 3, generator=_gen(1))
    assert not torch.equal(fresh(x), layer(x))
    fresh.load_state_dict(torch.load(buf, weights_only=True))
    assert torch.equal(fresh(x), layer(x))
    assert torch.equal(fresh.weight, layer.weight) and torch.equal(fresh.bias, layer.bias)
    assert fresh.check_equivariance(x) < 1e-5


@pytest.mark.parametrize("k", range(4))
@pytest.mark.parametrize("activation", ["identity", "relu"])
def test_export_is_a_plain_module_computing_the_same_function(k, activation):
    rin, rout = list(_pairs())[k]
    layer = EquivariantDense(rin, rout, activation, seed=k)
    plain = layer.export()
    assert not any(torch.nn.utils.parametrize.is_parametrized(m) for m in plain.modules())
    linears = [m for m in plain.modules() if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 1
    assert isinstance(plain, torch.nn.Linear) == (activation == "identity" and len(rin.shape) == 1)
    x = torch.randn(20, *rin.shape, generator=_gen(k))
    assert torch.allclose(plain(x), layer(x), atol=1e-6)
    # W x + b written out by hand: the exported weights are the constrained ones
    pre = x.flatten(1) @ layer.weight.detach().T + layer.bias.detach()[:, 0]
    assert torch.allclose(linears[0](x.flatten(1)), pre, atol=1e-6)
    with torch.no_grad():  # copies: changing the export leaves the layer alone
        linears[0].weight.add_(1.0)
    assert torch.allclose(layer(x), pre if activation == "identity" else pre.relu(), atol=1e-6)


def test_check_equivariance_is_zero_for_the_layer_and_positive_for_a_perturbed_linear():
    from eqlib.models import EquivariantLayer

    D4 = dihedral(4)
    rin, rout = image_dihedral((1, 3, 3)), regular(D4)
    layer = EquivariantDense(rin, rout, "tanh", seed=0)
    x = torch.randn(16, 1, 3, 3, generator=_gen(2))
    assert layer.check_equivariance(x, atol=1e-5) < 1e-5
    assert layer.check_equivariance(x, elements="all") < 1e-5

    class DeclaredLinear(EquivariantLayer):  # a plain Linear that only claims the actions
        def __init__(self, linear):
            super().__init__()
            self.rho_in, self.rho_out, self.linear = rin, rout, linear
            self.in_shape, self.out_shape = rin.shape, rout.shape

        def forward(self, inp):
            return torch.tanh(self.linear(inp.flatten(1)))

    plain = layer.export()[1]
    assert DeclaredLinear(plain).check_equivariance(x) < 1e-5  # the export is still equivariant
    with torch.no_grad():
        plain.weight.add_(0.1 * torch.randn(plain.weight.shape, generator=_gen(3)))
    bad = DeclaredLinear(plain)
    err = bad.check_equivariance(x)
    assert err > 1e-2
    with pytest.raises(AssertionError, match="not equivariant"):
        bad.check_equivariance(x, atol=1e-3)
    with pytest.raises(ValueError, match="elements"):
        layer.check_equivariance(x, elements="some")
    with pytest.raises(TypeError, match="x"):
        layer.check_equivariance(x.tolist())
