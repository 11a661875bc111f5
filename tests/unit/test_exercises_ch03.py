"""The checkers of chapter 3's exercises accept right answers and reject wrong ones."""
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch03 import check_fold_constant, check_merge_clone
from eqlib.models import ACTIVATIONS


def merge_clone(W1, b1, W2, a, j, c):
    W2 = W2.clone()
    W2[:, a] += c * W2[:, j]
    keep = [i for i in range(W1.shape[0]) if i != j]
    return W1[keep], b1[keep], W2[:, keep]


def fold_constant(W1, b1, W2, b2, j, activation):
    b2 = b2 + W2[:, j] * ACTIVATIONS[activation](b1[j])
    keep = [i for i in range(W1.shape[0]) if i != j]
    return W1[keep], b1[keep], W2[:, keep], b2


def test_right_answers_pass():
    assert check_merge_clone(merge_clone) is None
    assert check_fold_constant(fold_constant) is None


def test_wrong_answers_fail_with_reasons():
    def no_sign(W1, b1, W2, a, j, c):  # forgets the sign of negated clones
        return merge_clone(W1, b1, W2, a, j, abs(c))

    def just_drop(W1, b1, W2, a, j, c):
        keep = [i for i in range(W1.shape[0]) if i != j]
        return W1[keep], b1[keep], W2[:, keep]

    with pytest.raises(ExerciseError, match="function changed"):
        check_merge_clone(no_sign)
    with pytest.raises(ExerciseError, match="function changed"):
        check_merge_clone(just_drop)
    with pytest.raises(ExerciseError, match="tuple"):
        check_merge_clone(lambda *args: None)

    def no_fold(W1, b1, W2, b2, j, activation):
        keep = [i for i in range(W1.shape[0]) if i != j]
        return W1[keep], b1[keep], W2[:, keep], b2

    with pytest.raises(ExerciseError, match="σ\\(b1\\[j\\]\\)"):
        check_fold_constant(no_fold)
    with pytest.raises(ExerciseError, match="removed"):
        check_fold_constant(lambda W1, b1, W2, b2, j, act: (W1, b1, W2, b2))

    def todo(*args):
        raise NotImplementedError()

    with pytest.raises(ExerciseError, match="not implemented"):
        check_fold_constant(todo)


def test_lift_right_and_wrong():
    from eqlib.exercises import ExerciseError, ch03
    A, A_star = torch.tensor([[1.0], [-1.0], [0.0]]), torch.tensor([[1.0, 0.0, 0.0]])
    k = torch.tensor([[-1.0]])
    assert ch03.check_lift(A @ k @ A_star + torch.eye(3) - A @ A_star) is None
    swap_negate = torch.tensor([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    other = torch.tensor([[-1.0, 0.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, -1.0]])
    for wrong, message in [(A @ k @ A_star, "add the term"), (torch.eye(3), "K_lift A"),
                           (swap_negate, "K_lift A"), (other, "not the lift"), (None, "is None"),
                           (torch.eye(2), "3x3"), (2 * torch.eye(3), "squared")]:
        with pytest.raises(ExerciseError, match=message):
            ch03.check_lift(wrong)


def test_lift_accepts_a_numpy_answer():
    """A right lift given as a NumPy array (or nested lists) is right too."""
    import numpy as np

    from eqlib.exercises import ch03
    right = np.array([[-1.0, 0.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])   # A k A* + (I - A A*)
    truth = torch.tensor([[1.0], [-1.0], [0.0]]) @ torch.tensor([[-1.0]]) @ torch.tensor(
        [[1.0, 0.0, 0.0]]) + torch.eye(3) - torch.tensor([[1.0], [-1.0], [0.0]]) @ torch.tensor([[1.0, 0.0, 0.0]])
    assert np.allclose(right, truth.numpy())
    assert ch03.check_lift(right) is None
    assert ch03.check_lift(right.tolist()) is None


def test_merge_clone_refuses_an_unshifted_index():
    """Deleting neuron j first and then adding into the old index a is wrong when a > j."""
    def shifted_wrong(W1, b1, W2, a, j, c):
        keep = [i for i in range(W1.shape[0]) if i != j]
        W2n = W2[:, keep].clone()
        W2n[:, a if a < W2n.shape[1] else -1] += c * W2[:, j]   # a not shifted after the deletion
        return W1[keep], b1[keep], W2n

    def right(W1, b1, W2, a, j, c):
        W2 = W2.clone()
        W2[:, a] += c * W2[:, j]
        keep = [i for i in range(W1.shape[0]) if i != j]
        return W1[keep], b1[keep], W2[:, keep]

    assert check_merge_clone(right) is None
    with pytest.raises(ExerciseError, match="the function changed"):
        check_merge_clone(shifted_wrong)
