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
    with pytest.raises(ExerciseError, match="torch tensors"):
        check_sigmoid_flip([[-1.0]], torch.ones(1))


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
