import pytest
import torch

from eqlib.actions import from_matrices, intertwiner_dimension, regular
from eqlib.exercises import ExerciseError
from eqlib.exercises.ch05 import check_circulant, check_intertwiner_dim, check_relu_breaks
from eqlib.groups import dihedral


def test_intertwiner_dim():
    assert check_intertwiner_dim(intertwiner_dimension) is None
    with pytest.raises(ExerciseError):
        check_intertwiner_dim(lambda a, b: a.dim * b.dim)


def test_circulant():
    W = torch.stack([torch.tensor([1.0, 2.0, 3.0, 4.0]).roll(k) for k in range(4)])
    assert check_circulant(W) is None
    with pytest.raises(ExerciseError):
        check_circulant(torch.tensor([[1.0, 2.0, 3.0, 4.0]] * 4))
    with pytest.raises(ExerciseError):
        check_circulant(W.T)


def test_relu_breaks():
    D4 = dihedral(4)
    rot = from_matrices(D4, {D4["r"]: [[0.0, -1.0], [1.0, 0.0]], D4["s"]: [[-1.0, 0.0], [0.0, 1.0]]})
    assert check_relu_breaks(rot) is None
    with pytest.raises(ExerciseError):
        check_relu_breaks(regular(D4))
