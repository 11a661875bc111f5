"""The checkers of chapter 4's exercises accept right answers and reject wrong ones."""
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch04 import (check_linear_gelu_pair, check_relu_intertwiner_test, check_transform,
                                  relu_intertwiner_cases)


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
    for orbit, stab, message in [(48, 1, "stabilizer is trivial"), (24, 1, "orbit-stabilizer"),
                                 (12, 4, "not right"), (None, 2, "is None"),
                                 (24.0, 2, "must be an integer"), (True, 2, "must be an integer")]:
        with pytest.raises(ExerciseError, match=message):
            ch04.check_parameter_orbit(orbit, stab)


def test_parameter_orbit_accepts_numpy_and_torch_integers():
    """Correct counts computed with NumPy or torch are accepted (the old checker wanted `int`)."""
    import numpy as np

    from eqlib.exercises import ch04
    assert ch04.check_parameter_orbit(np.int64(24), np.int64(2)) is None
    assert ch04.check_parameter_orbit(torch.tensor(24), torch.tensor(2)) is None


def test_parameter_orbit_hint_does_not_give_the_answer_away():
    """For the natural wrong answer (48, 1) the hint does not name the stabilizing element."""
    from eqlib.exercises import ch04
    with pytest.raises(ExerciseError) as info:
        ch04.check_parameter_orbit(48, 1)
    assert "neuron 1" not in str(info.value) and "exchanges" not in str(info.value)


def test_relu_intertwiner_test_accepts_numpy_bools():
    """A correct answer returning np.bool_ is accepted (the old checker wanted a Python bool)."""
    import numpy as np

    def numpy_answer(A, tol=1e-8):
        a = A.numpy()
        nz = np.abs(a) > tol
        return np.bool_((nz.sum(0) == 1).all() and (nz.sum(1) == 1).all() and (a[nz] > 0).all())

    assert check_relu_intertwiner_test(numpy_answer) is None


def test_columns_only_answer_is_rejected():
    """An answer that checks one positive entry per column only (no row condition) is wrong:
    it says True for [[1, 1], [0, 0]], which is singular and has relu(Az) ≠ A relu(z) at
    z = (1, −1). The old cases all had a column with two nonzeros or a zero column, so the
    old checker accepted it (referee ch04-05-r2, B1)."""
    def columns_only(A, tol=1e-8):
        nz = A.abs() > tol
        return bool((nz.sum(0) == 1).all() and (A[nz] > 0).all())

    with pytest.raises(ExerciseError, match=r"\[\[1, 1\], \[0, 0\]\]"):
        check_relu_intertwiner_test(columns_only)
    A, z = torch.tensor([[1.0, 1.0], [0.0, 0.0]]), torch.tensor([1.0, -1.0])
    assert not torch.equal(torch.relu(A @ z), A @ torch.relu(z))


def _literal_answer(A: torch.Tensor) -> bool:
    """The literal statement of ch04-ex2, tested independently of the checker: A is invertible
    (full rank) and relu(A z) = A relu(z) on random points and on the points e_j − t e_l."""
    d = A.shape[0]
    if torch.linalg.matrix_rank(A.double()) < d:
        return False
    z = 3 * torch.randn(2000, d, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    eye = torch.eye(d, dtype=torch.float64)
    probes = [eye[j] - t * eye[l] for j in range(d) for l in range(d) for t in (0.5, 10.0)]
    z = torch.cat([z, torch.stack(probes), -eye])
    A = A.double()
    return bool(torch.allclose(torch.relu(z @ A.T), torch.relu(z) @ A.T, atol=1e-9))


def test_relu_intertwiner_cases_follow_the_literal_statement():
    """Every expected answer of the checker is the literal statement's (ch04-ex2)."""
    for A, want, what in relu_intertwiner_cases():
        assert _literal_answer(A) == want, what


def test_singular_matrices_satisfy_the_identity_but_are_not_in_the_group():
    """The singular cases of the issue satisfy relu(Az) = A relu(z): only invertibility excludes them."""
    z = 3 * torch.randn(500, 3, generator=torch.Generator().manual_seed(1))
    for A in (torch.diag(torch.tensor([1.0, 2.0, 0.0])), torch.zeros(3, 3),
              torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])):
        torch.testing.assert_close(torch.relu(z @ A.T), torch.relu(z) @ A.T)
        assert not _literal_answer(A)


def test_rows_only_answer_is_rejected():
    """An answer that checks rows but not invertibility (True for [[1,0,0],[1,0,0],[0,0,2]]) is wrong
    under the statement "invertible and relu(Az) = A relu(z)"; the old checker accepted it."""
    def rows_only(A, tol=1e-8):
        nz = A.abs() > tol
        return bool((nz.sum(1) == 1).all()) and bool((A[nz] > 0).all())

    with pytest.raises(ExerciseError, match="singular"):
        check_relu_intertwiner_test(rows_only)


def test_transform_may_return_a_list():
    """A right answer returned as a list of three tensors is still right."""
    assert check_transform(lambda W1, b1, W2, k: list(transform(W1, b1, W2, k))) is None
