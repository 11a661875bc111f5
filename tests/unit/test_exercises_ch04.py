"""The checkers of chapter 4's exercises accept right answers and reject wrong ones."""
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch04 import check_linear_gelu_pair, check_relu_intertwiner_test, check_transform


def transform(W1, b1, W2, k):
    return k @ W1, k @ b1, W2 @ k.T


def is_relu_intertwiner(A, tol=1e-8):
    nz = A.abs() > tol
    monomial = bool((nz.sum(0) == 1).all() and (nz.sum(1) == 1).all())
    return monomial and bool((A[nz] > 0).all())


def test_right_answers_pass():
    assert check_transform(transform) is None
    assert check_relu_intertwiner_test(is_relu_intertwiner) is None
    assert check_linear_gelu_pair([[1.0], [-1.0]], [[3.0, -3.0]]) is None
    assert check_linear_gelu_pair(torch.tensor([[3.0], [-3.0]]), torch.tensor([[1.0, -1.0]])) is None


def test_wrong_answers_fail_with_reasons():
    with pytest.raises(ExerciseError, match="W2 is not right"):
        check_transform(lambda W1, b1, W2, k: (k @ W1, k @ b1, W2 @ k))
    with pytest.raises(ExerciseError, match="b1 is not right"):
        check_transform(lambda W1, b1, W2, k: (k @ W1, b1, W2 @ k.T))
    with pytest.raises(ExerciseError, match="signed permutation"):
        check_relu_intertwiner_test(lambda A: bool((A.abs() > 0).sum(1).eq(1).all()))  # ignores signs
    with pytest.raises(ExerciseError, match="shear"):
        check_relu_intertwiner_test(lambda A: bool((A >= 0).all()) and bool(torch.linalg.det(A) != 0))
    with pytest.raises(ExerciseError, match="differs from 3x"):
        check_linear_gelu_pair([[1.0], [1.0]], [[1.5, 1.5]])
    with pytest.raises(ExerciseError, match="shape"):
        check_linear_gelu_pair([[1.0, -1.0]], [[3.0, -3.0]])


def test_parameter_orbit_right_and_wrong():
    from eqlib.exercises import ExerciseError, ch04
    assert ch04.check_parameter_orbit(24, 2) is None
    for orbit, stab, message in [(48, 1, "not trivial"), (24, 1, "orbit-stabilizer"),
                                 (12, 4, "not right"), (None, 2, "is None"),
                                 (24.0, 2, "must be an int")]:
        with pytest.raises(ExerciseError, match=message):
            ch04.check_parameter_orbit(orbit, stab)
