import copy

import numpy as np
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch09 import (check_relating_count, check_residual_invariant,
                                  check_sum_pair_adjunction, check_unrelated_layer)
from eqlib.latent.generalized import pair_set_symmetries, relating_sequences
from eqlib.models.sets import DeepSetsLayer
from eqlib.seeds import torch_generator


def test_sum_pair_adjunction():
    gen = torch.Generator().manual_seed(0)
    Lam, Gam, b = torch.randn(3, 2, generator=gen), torch.randn(3, 2, generator=gen), torch.randn(2,
            generator=torch_generator(100))
    assert check_sum_pair_adjunction(Lam, Gam, b, (-Lam, Gam + Lam, b)) is None
    with pytest.raises(ExerciseError, match="exchanges"):      # the mean formula
        check_sum_pair_adjunction(Lam, Gam, b, (-Lam, Gam + 2 * Lam, b))
    with pytest.raises(ExerciseError, match="tuple"):
        check_sum_pair_adjunction(Lam, Gam, b, -Lam)
    with pytest.raises(ExerciseError, match="shapes"):
        check_sum_pair_adjunction(Lam, Gam, b, (-Lam.T, Gam, b))


def _pair_network(zero_first_lambda: bool):
    q1, q2 = DeepSetsLayer(2, 2, 3, seed=0), DeepSetsLayer(2, 3, 2, seed=10)
    if zero_first_lambda:
        with torch.no_grad():
            q1.Lam.zero_()
    return q1, q2, torch.randn(16, 2, 2, generator=torch.Generator().manual_seed(0))


def test_relating_count_generic():
    p1, p2, x = _pair_network(False)
    assert check_relating_count(1, p1, p2, x) is None          # generic: only k_1 = T
    with pytest.raises(ExerciseError, match="not the number"):
        check_relating_count(2, p1, p2, x)
    with pytest.raises(ExerciseError, match="int"):
        check_relating_count(1.0, p1, p2, x)


def test_relating_count_accepts_integer_like_answers():
    """The count 1 given as a NumPy integer or a 0-d integer tensor is a correct answer;
    floats, booleans and float tensors are not counts."""
    p1, p2, x = _pair_network(True)
    for answer in (1, np.int64(1), torch.tensor(1)):
        assert check_relating_count(answer, p1, p2, x) is None
    for answer in (1.0, True, torch.tensor(1.0), "1"):
        with pytest.raises(ExerciseError, match="integer"):
            check_relating_count(answer, p1, p2, x)


def test_relating_count_is_one_for_every_y_not_eight():
    """ch09-ex4 with Λ_1 = 0: the 8 symmetries that relate θ^Π to θ on the reached latents
    are not relating symmetries of the definition (for every y ∈ V_1); exactly one is.
    Independent check: brute force over the 384 symmetries on random y, written here."""
    q1, q2, x = _pair_network(True)
    K1 = pair_set_symmetries(3)
    primed = [copy.deepcopy(q1), copy.deepcopy(q2)]
    with torch.no_grad():
        for layer, new in zip((q1, q2), primed):
            new.Lam.copy_(-layer.Lam)
            new.Gam.copy_(layer.Gam + 2 * layer.Lam)
    assert len(relating_sequences([q1, q2], primed, [K1], x)) == 8      # reached only
    y = torch.randn(50, 2, 3, generator=torch.Generator().manual_seed(3))
    count = 0
    for k in K1:
        with torch.no_grad():
            first = torch.allclose(primed[0](x).reshape(16, -1), q1(x).reshape(16, -1) @ k.T,
                                   atol=1e-5)
            second = torch.allclose(primed[1]((y.reshape(50, -1) @ k.T).reshape(y.shape)), q2(y),
                                    atol=1e-5)
        count += first and second
    assert count == 1
    assert check_relating_count(1, q1, q2, x) is None
    with pytest.raises(ExerciseError, match="every y"):                 # the old answer
        check_relating_count(8, q1, q2, x)


def test_unrelated_layer():
    q1, q2, _ = _pair_network(True)
    M = torch.randn(3, 2, generator=torch.Generator().manual_seed(2))
    right = copy.deepcopy(q2)
    with torch.no_grad():
        right.Lam += M
        right.Gam -= M
    assert check_unrelated_layer(q1, q2, right) is None
    swapped = copy.deepcopy(q2)                 # Π·θ_2: same function, but related by k_1 = Π
    with torch.no_grad():
        swapped.Lam.copy_(-q2.Lam)
        swapped.Gam.copy_(q2.Gam + 2 * q2.Lam)
    with pytest.raises(ExerciseError, match="relate"):
        check_unrelated_layer(q1, q2, swapped)
    other_function = copy.deepcopy(q2)
    with torch.no_grad():
        other_function.Lam += M
    with pytest.raises(ExerciseError, match="does not compute"):
        check_unrelated_layer(q1, q2, other_function)
    with pytest.raises(ExerciseError, match="DeepSetsLayer"):
        check_unrelated_layer(q1, q2, q2.Lam)


def test_residual_checker():
    W1 = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    x = torch.randn(20, 3, generator=torch_generator(101))
    assert check_residual_invariant(-2 * torch.linalg.pinv(W1), W1, x) is None
    with pytest.raises(ExerciseError, match="hint: compute") as wrong:
        check_residual_invariant(torch.linalg.pinv(W1), W1, x)
    assert "−2 I" not in str(wrong.value)          # a hint, not the answer
    with pytest.raises(ExerciseError, match="shape"):
        check_residual_invariant(torch.zeros(3, 3), W1, x)


def test_residual_checker_leaky():
    W1 = torch.randn(5, 2, generator=torch.Generator().manual_seed(4))
    x = torch.randn(50, 2, generator=torch.Generator().manual_seed(1))
    right = -2 / 1.2 * torch.linalg.pinv(W1)
    assert check_residual_invariant(right, W1, x, slope=0.2) is None
    with pytest.raises(ExerciseError, match="for z > 0 and for z ≤ 0") as wrong:   # ReLU answer
        check_residual_invariant(-2 * torch.linalg.pinv(W1), W1, x, slope=0.2)
    message = str(wrong.value)
    assert "−2 I" not in message and "(1 + a) z" not in message   # the message gives no answer
    with pytest.raises(ExerciseError, match="shape"):
        check_residual_invariant(right.T, W1, x, slope=0.2)


def test_residual_checker_refuses_a_scaled_up_wrong_answer():
    """A W2 with W2 W1 = 0 scaled by 10^6 makes ‖f(x)‖ huge; relative to ‖f(x)‖ it passed."""
    W1 = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    x = torch.randn(40, 3, generator=torch.Generator().manual_seed(2))
    null = torch.linalg.svd(W1.T, full_matrices=True).Vh[3:]     # rows n with n W1 = 0
    W2 = 1e6 * torch.randn(3, 2, generator=torch.Generator().manual_seed(3)) @ null
    assert (W2 @ W1).norm() < 1e-4 * W2.norm() * W1.norm()       # W2 W1 = 0 up to rounding
    with pytest.raises(ExerciseError, match="hint: compute"):
        check_residual_invariant(W2, W1, x)
