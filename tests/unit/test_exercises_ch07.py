import numpy as np
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch07 import check_bypass_c4, check_bypass_weights, check_sigmoid_flip


def test_sigmoid_flip():
    assert check_sigmoid_flip(-torch.eye(3), torch.ones(3)) is None
    with pytest.raises(ExerciseError, match="does not depend"):
        check_sigmoid_flip(-torch.eye(3), torch.zeros(3))          # linear: misses the 1
    with pytest.raises(ExerciseError, match="must be"):
        check_sigmoid_flip(-torch.eye(2), torch.ones(3))
    with pytest.raises(ExerciseError, match="arrays of numbers"):
        check_sigmoid_flip([["a"]], torch.ones(1))


def test_sigmoid_flip_accepts_arrays_and_lists():
    """The statement asks for "a matrix D and a vector c", not tensors; the old checker refused
    NumPy arrays and lists (referee ch04-07-a r6, C)."""
    assert check_sigmoid_flip(-np.eye(3), np.ones(3)) is None
    assert check_sigmoid_flip([[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]],
                              [1, 1, 1]) is None
    with pytest.raises(ExerciseError, match="does not depend"):
        check_sigmoid_flip(-np.eye(3), np.zeros(3))


def test_sigmoid_flip_wants_three_units():
    """The exercise asks for n = 3 units; the old checker took n from len(c) and accepted
    answers of any size (referee ch04-07-b r7, C)."""
    for D, c in (([[-1.0]], [1.0]), (-np.eye(2), np.ones(2)), (-np.eye(4), np.ones(4))):
        with pytest.raises(ExerciseError, match=r"\(3, 3\)"):
            check_sigmoid_flip(D, c)


def test_bypass_weights():
    W1 = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    W2 = torch.tensor([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, -1.0]])
    assert check_bypass_weights(W1, W2) is None
    # the plain bypass network passes x_1 through instead of folding it
    identity = torch.cat([torch.eye(2), -torch.eye(2)], 1)
    with pytest.raises(ExerciseError, match="first output"):
        check_bypass_weights(W1, identity)
    with pytest.raises(ExerciseError, match="second output"):
        check_bypass_weights(W1, W2.abs())                        # folds x_2 too
    with pytest.raises(ExerciseError, match="shape"):
        check_bypass_weights(W1[:, :1], W2)
    with pytest.raises(ExerciseError, match="finite"):
        check_bypass_weights(W1 * float("nan"), W2)


def test_bypass_c4():
    k = torch.zeros(4, 4)
    k[[0, 1, 2, 3], [3, 0, 1, 2]] = 1.0          # (x1, x2, -x1, -x2) -> (-x2, x1, x2, -x1)
    assert check_bypass_c4(k) is None
    with pytest.raises(ExerciseError, match="largest gap"):
        check_bypass_c4(k.T)                     # the rotation the other way
    with pytest.raises(ExerciseError, match="permutation matrix"):
        check_bypass_c4(-k)


def test_bypass_c4_accepts_arrays_and_lists():
    """A correct k given as a NumPy array or a nested list is accepted (the old checker asked
    for a torch.Tensor; referee ch04-07-a r6, C); a wrong shape is still refused."""
    k = np.zeros((4, 4))
    k[[0, 1, 2, 3], [3, 0, 1, 2]] = 1.0
    assert check_bypass_c4(k) is None
    assert check_bypass_c4(k.astype(int).tolist()) is None
    with pytest.raises(ExerciseError, match="largest gap"):
        check_bypass_c4(k.T.tolist())
    with pytest.raises(ExerciseError, match="shape"):
        check_bypass_c4(np.eye(3))
