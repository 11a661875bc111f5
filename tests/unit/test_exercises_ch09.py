import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch09 import (check_relating_count, check_residual_invariant,
                                  check_sum_pair_adjunction)
from eqlib.models.sets import DeepSetsLayer


def test_sum_pair_adjunction():
    gen = torch.Generator().manual_seed(0)
    Lam, Gam, b = torch.randn(3, 2, generator=gen), torch.randn(3, 2, generator=gen), torch.randn(2)
    assert check_sum_pair_adjunction(Lam, Gam, b, (-Lam, Gam + Lam, b)) is None
    with pytest.raises(ExerciseError, match="exchanges"):      # the mean formula
        check_sum_pair_adjunction(Lam, Gam, b, (-Lam, Gam + 2 * Lam, b))
    with pytest.raises(ExerciseError, match="tuple"):
        check_sum_pair_adjunction(Lam, Gam, b, -Lam)
    with pytest.raises(ExerciseError, match="shapes"):
        check_sum_pair_adjunction(Lam, Gam, b, (-Lam.T, Gam, b))


def test_relating_count():
    p1, p2 = DeepSetsLayer(2, 2, 3, seed=0), DeepSetsLayer(2, 3, 2, seed=10)
    x = torch.randn(16, 2, 2, generator=torch.Generator().manual_seed(0))
    assert check_relating_count(1, p1, p2, x) is None          # generic: only k_1 = T
    with pytest.raises(ExerciseError, match="not the number"):
        check_relating_count(2, p1, p2, x)
    with pytest.raises(ExerciseError, match="int"):
        check_relating_count(1.0, p1, p2, x)


def test_residual_checker():
    W1 = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    x = torch.randn(20, 3)
    assert check_residual_invariant(-2 * torch.linalg.pinv(W1), W1, x) is None
    with pytest.raises(ExerciseError, match="W2 W1 = −2 I"):
        check_residual_invariant(torch.linalg.pinv(W1), W1, x)
    with pytest.raises(ExerciseError, match="shape"):
        check_residual_invariant(torch.zeros(3, 3), W1, x)


def test_residual_checker_leaky():
    W1 = torch.randn(5, 2, generator=torch.Generator().manual_seed(4))
    x = torch.randn(50, 2, generator=torch.Generator().manual_seed(1))
    right = -2 / 1.2 * torch.linalg.pinv(W1)
    assert check_residual_invariant(right, W1, x, slope=0.2) is None
    with pytest.raises(ExerciseError, match=r"\(1 \+ a\) W2 W1 = −2 I"):   # the ReLU answer
        check_residual_invariant(-2 * torch.linalg.pinv(W1), W1, x, slope=0.2)
    with pytest.raises(ExerciseError, match="shape"):
        check_residual_invariant(right.T, W1, x, slope=0.2)
