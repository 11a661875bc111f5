import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch07 import check_bypass_weights, check_hidden_representation


def test_hidden_representation():
    P = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    W1 = torch.tensor([[2.0, 0.0], [0.0, 3.0]]) @ P
    rho0 = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    rho1 = W1 @ rho0 @ torch.linalg.inv(W1)
    assert check_hidden_representation(W1, rho0, rho1) is None
    with pytest.raises(ExerciseError):
        check_hidden_representation(W1, rho0, torch.eye(2))


def test_bypass_weights():
    W1 = torch.cat([torch.eye(2), -torch.eye(2)])
    W2 = torch.cat([torch.eye(2), -torch.eye(2)], 1)
    assert check_bypass_weights(W1, W2) is None
    with pytest.raises(ExerciseError):
        check_bypass_weights(W1, W2.abs())
    with pytest.raises(ExerciseError):
        check_bypass_weights(W1[:, :1], W2)
