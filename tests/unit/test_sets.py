"""Deep Sets, message passing and skip connections: where the adjunction fails."""
import pytest
import torch

from eqlib.actions import PermutationAction, check_equivariance, token_permutation
from eqlib.groups import symmetric
from eqlib.models import Dense
from eqlib.models.sets import (DeepSetsLayer, GraphLayer, adjunction_fit, cycle_automorphisms, cycle_graph,
                               plant_residual_invariant)
from eqlib.seeds import torch_generator

N, D, E = 4, 3, 2


def test_deep_sets_equivariant_for_every_theta_and_adjunction_fails():
    G = symmetric(N)
    a_in, a_out = token_permutation(G, N, D), token_permutation(G, N, E)
    x = torch.randn(12, N, D, generator=torch.Generator().manual_seed(0))
    for seed in range(2):
        layer = DeepSetsLayer(N, D, E, seed=seed)
        assert max(check_equivariance(layer, a_in, a_out, x).values()) < 1e-6
        for g in G.sample(2, seed=seed):
            if g == G.identity:
                continue
            ordinary = adjunction_fit(layer, a_in, g, x)
            assert not ordinary.exists and ordinary.residual > 0.1  # no θ' with f(gx; θ) = f(x; θ')
            general = adjunction_fit(layer, a_in, g, x, rho_out=a_out)
            assert general.exists and general.unique
            assert general.moved < 1e-4  # the only induced action on Θ is the trivial one


def test_graph_layer_absorbs_the_automorphisms():
    A = cycle_graph(5)
    G = cycle_automorphisms(5)
    assert G.order == 10
    layer = GraphLayer(A, D, E, seed=1)
    a_in, a_out = token_permutation(G, 5, D), token_permutation(G, 5, E)
    x = torch.randn(12, 5, D, generator=torch_generator(100))
    assert max(check_equivariance(layer, a_in, a_out, x).values()) < 1e-6
    for g in G.generators:
        assert adjunction_fit(layer, a_in, g, x).residual > 0.1
        general = adjunction_fit(layer, a_in, g, x, rho_out=a_out)
        assert general.exists and general.moved < 1e-4


def test_dense_layer_has_the_ordinary_adjunction():
    G = symmetric(N)
    flat = PermutationAction(G, token_permutation(G, N, D).index)
    layer = Dense(N * D, 5, "tanh", seed=0)
    g = G.sample(1, seed=3)[0]
    fit = adjunction_fit(layer, flat, g, torch.randn(40, N * D, generator=torch_generator(101)))
    assert fit.exists and fit.moved > 0.1  # θ' = W ρ(g): the parameters really move
    torch.testing.assert_close(fit.theta_prime[: 5 * N * D].reshape(5, N * D), layer.weight.detach() @ flat.matrix(g),
                               atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_residual_block_invariant_but_inner_layer_not_linear(activation):
    block = plant_residual_invariant(3, 6, activation, seed=2)
    x = torch.randn(400, 3, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(block(-x), block(x), atol=1e-5, rtol=1e-5)
        h, h_neg = block.inner(x), block.inner(-x)
        A = torch.linalg.lstsq(h, h_neg, driver="gelsd").solution
        assert (h @ A - h_neg).norm() / h_neg.norm() > 0.05  # no linear map on the inner layer alone
        z, z_neg = block.latent(x), block.latent(-x)
        M = torch.linalg.lstsq(z, z_neg, driver="gelsd").solution
        assert (z @ M - z_neg).norm() / z_neg.norm() < 1e-4  # but (x, h) carries a linear action


def test_bad_inputs():
    with pytest.raises(ValueError, match="relu or gelu"):
        plant_residual_invariant(3, 6, "tanh")
    with pytest.raises(ValueError, match="square"):
        GraphLayer(torch.ones(3, 4), 2, 2)
    with pytest.raises(ValueError, match="unknown activation"):
        DeepSetsLayer(3, 2, 2, activation="swish")
