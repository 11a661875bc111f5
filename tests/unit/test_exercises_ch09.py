import pytest
import torch

from eqlib.actions import token_permutation
from eqlib.exercises import ExerciseError
from eqlib.exercises.ch09 import check_dense_adjunction, check_residual_invariant
from eqlib.groups import symmetric
from eqlib.models import Dense


def test_dense_adjunction_checker():
    G = symmetric(3)
    act = token_permutation(G, 3, 2)
    layer = Dense(6, 4, "tanh", seed=0)
    g = G.generators[1]
    x = torch.randn(10, 6)
    assert check_dense_adjunction(layer.weight.detach() @ act.matrix(g), layer, act, g, x) is None
    with pytest.raises(ExerciseError, match="differs"):
        check_dense_adjunction(act.matrix(g)[:4, :6] * 0 + layer.weight.detach(), layer, act, g, x)


def test_residual_checker():
    W1 = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    x = torch.randn(20, 3)
    assert check_residual_invariant(-2 * torch.linalg.pinv(W1), W1, x) is None
    with pytest.raises(ExerciseError, match="W2 W1 = −2 I"):
        check_residual_invariant(torch.linalg.pinv(W1), W1, x)
    with pytest.raises(ExerciseError, match="shape"):
        check_residual_invariant(torch.zeros(3, 3), W1, x)
