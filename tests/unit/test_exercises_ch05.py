import numpy as np
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


def test_intertwiner_dim_accepts_any_real_scalar():
    """A correct answer computed with NumPy (``rho.matrix(g).numpy().trace()``) is a NumPy
    scalar; the old checker rejected it as "not a number" (referee ch04-07-a r6, B)."""
    for cast in (np.float32, np.float64, np.int64, np.array, float, torch.tensor,
                 lambda v: torch.tensor([v]), lambda v: np.array([v]), complex):
        assert check_intertwiner_dim(lambda a, b: cast(round(float(intertwiner_dimension(a, b))))) is None
    for bad in ("3", torch.tensor([3.0, 3.0]), np.array([3.0, 3.0]), float("nan"), 3 + 1j,
                np.complex64(3 + 1j)):
        with pytest.raises(ExerciseError, match="intertwiner_dim"):
            check_intertwiner_dim(lambda a, b, bad=bad: bad)


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


def test_relu_breaks_decides_membership_exactly():
    """ρ(r) = T·swap·T⁻¹ with T = [[1, ε], [0, 1]] is outside ReLU's group (a negative entry), so
    the layer is not equivariant, however small ε; the old fixed threshold rejected ε = 1e-3
    (referee ch04-05-r2, C)."""
    D4 = dihedral(4)
    eps = 1e-3
    T = torch.tensor([[1.0, eps], [0.0, 1.0]])
    swap = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    near = from_matrices(D4, {D4["r"]: T @ swap @ torch.linalg.inv(T), D4["s"]: torch.eye(2)})
    assert check_relu_breaks(near) is None


def test_relu_breaks_hint_for_scaled_permutations():
    """A positively scaled permutation action (not a permutation action) is rejected. The
    message must not state the criterion that the exercise's second question asks for
    (referee round 2, ch05 C): it names neither positively scaled permutations nor
    permutation actions."""
    D4 = dihedral(4)
    scaled = from_matrices(D4, {D4["r"]: torch.eye(2), D4["s"]: [[0.0, 2.0], [0.5, 0.0]]})
    for action in (scaled, regular(D4)):
        with pytest.raises(ExerciseError, match="stays equivariant") as err:
            check_relu_breaks(action)
        assert "scaled" not in str(err.value) and "permutation" not in str(err.value)
