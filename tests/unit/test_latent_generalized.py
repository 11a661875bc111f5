"""Relating sequences of parameter symmetries; Deep Sets on two and on n ≥ 3 elements."""
import copy

import pytest
import torch

from eqlib.latent.generalized import pair_set_symmetries, relating_sequences, token_channel_candidates
from eqlib.models.sets import DeepSetsLayer, pair_swap_parameters
from eqlib.seeds import torch_generator


def _swapped(layer):
    new = copy.deepcopy(layer)
    with torch.no_grad():
        for name, value in pair_swap_parameters(layer).items():
            getattr(new, name).copy_(value)
    return new


def test_pair_set_group_is_a_group_of_signed_permutations():
    K = pair_set_symmetries(2)
    assert K.shape == (32, 4, 4) and torch.equal(K[0], torch.eye(4))
    flat = K.reshape(len(K), -1)
    assert len(torch.unique(flat, dim=0)) == 32                                  # distinct
    prods = (K[:, None] @ K[None, :]).reshape(-1, 16)
    assert all(bool((flat == p).all(1).any()) for p in prods)                    # closed
    assert bool((K.abs().sum(1) == 1).all() and (K.abs().sum(2) == 1).all())


@pytest.mark.parametrize("seed", range(4))
def test_pair_swap_is_an_adjunction_and_an_involution(seed):
    layer = DeepSetsLayer(2, 3, 4, seed=seed)
    x = torch.randn(10, 2, 3, generator=torch.Generator().manual_seed(seed))
    moved = _swapped(layer)
    with torch.no_grad():
        torch.testing.assert_close(moved(x), layer(x.flip(-2)))
        torch.testing.assert_close(moved(x), layer(x).flip(-2))
        torch.testing.assert_close(_swapped(moved)(x), layer(x))
    with pytest.raises(ValueError, match="n = 2"):
        pair_swap_parameters(DeepSetsLayer(3, 2, 2))


@pytest.mark.parametrize("seed", range(3))
def test_n2_theta_g_is_related_to_theta_by_the_swap_only(seed):
    """The theorem's θ^g for n = 2: the unique relating k_1 is the swap T (in K_1)."""
    f1, f2 = DeepSetsLayer(2, 2, 3, seed=seed), DeepSetsLayer(2, 3, 2, seed=seed + 10)
    x = torch.randn(16, 2, 2, generator=torch.Generator().manual_seed(seed))
    K = pair_set_symmetries(3)
    seqs = relating_sequences([f1, f2], [_swapped(f1), _swapped(f2)], [K], x)
    assert len(seqs) == 1
    T = torch.kron(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), torch.eye(3))
    assert torch.equal(K[seqs[0][0]], T)
    assert relating_sequences([f1, f2], [f1, f2], [K], x) == [(0,)]             # θ to itself: only e


@pytest.mark.parametrize("n", [3, 4])
def test_token_permutations_never_relate_theta_to_itself_for_n_at_least_3(n):
    f1, f2 = DeepSetsLayer(n, 2, 2, seed=n), DeepSetsLayer(n, 2, 2, seed=n + 1)
    x = torch.randn(16, n, 2, generator=torch.Generator().manual_seed(n))
    cands = token_channel_candidates(n, 2)
    assert relating_sequences([f1, f2], [f1, f2], [cands], x) == [(0,)]


def test_bad_inputs():
    with pytest.raises(ValueError, match="1..4"):
        pair_set_symmetries(5)
    with pytest.raises(ValueError, match="too many"):
        token_channel_candidates(6, 3)
    with pytest.raises(ValueError, match="candidate"):
        relating_sequences([torch.tanh], [torch.tanh, torch.tanh], [], torch.randn(2, 2, generator=torch_generator(100)))
