"""Checkers of chapter 1's exercises accept right answers and explain wrong ones."""
import pytest
import torch

from eqlib import images
from eqlib.exercises import ExerciseError, ch01


@pytest.fixture
def rho():
    return images.mirror((1, 3, 3))


def test_symmetrized_weight_right(rho):
    W = torch.randn(9, 9, generator=torch.Generator().manual_seed(0))
    P = rho.matrix(rho.group["m"])
    assert ch01.check_symmetrized_weight((W + P @ W @ P) / 2, W, rho) is None


@pytest.mark.parametrize("answer,message", [
    ("W", "does not commute"), ("zero", "not the group average"), ("none", "is None"), ("shape", "shape"),
], ids=["unchanged", "zero-matrix", "no-answer", "wrong-shape"])
def test_symmetrized_weight_wrong(rho, answer, message):
    W = torch.randn(9, 9, generator=torch.Generator().manual_seed(0))
    wrong = {"W": W, "zero": torch.zeros(9, 9), "none": None, "shape": torch.zeros(3, 3)}[answer]
    with pytest.raises(ExerciseError, match=message):
        ch01.check_symmetrized_weight(wrong, W, rho)


def right_abs_action():
    # swap u = ReLU(W_1·1) and v = ReLU(W_1·(−1)), fix w = (1, −1, 0)
    u, v, w = torch.tensor([1.0, 0, 2]), torch.tensor([0.0, 1, 0]), torch.tensor([1.0, -1, 0])
    B = torch.stack([u, v, w], 1)
    return torch.stack([v, u, w], 1) @ torch.linalg.inv(B)


def test_abs_hidden_action_right():
    assert ch01.check_abs_hidden_action(right_abs_action()) is None


@pytest.mark.parametrize("answer,message", [
    (torch.eye(3), "layer 1 is not equivariant"),
    (torch.tensor([[0.0, 1, 0], [1, 0, 0], [0, 0, 1]]), "layer 1 is not equivariant"),
    (torch.zeros(2, 2), "3×3"),
], ids=["identity", "swap-permutation", "wrong-shape"])
def test_abs_hidden_action_wrong(answer, message):
    with pytest.raises(ExerciseError, match=message):
        ch01.check_abs_hidden_action(answer)


def test_abs_hidden_action_not_involution():
    A = right_abs_action()
    # keep the action on u, v but scale the fixed direction w by 2: equivariant, but A² ≠ I
    w = torch.tensor([1.0, -1, 0])
    A2 = A + torch.outer(w, torch.linalg.pinv(torch.stack([torch.tensor([1.0, 0, 2]), torch.tensor([0.0, 1, 0]), w], 1))[2])
    with pytest.raises(ExerciseError, match="A·A ≠ I"):
        ch01.check_abs_hidden_action(A2)


@pytest.fixture(scope="module")
def planted16():
    from eqlib import groups
    from eqlib.latent import plant_equivariant
    rho16 = images.mirror((1, 4, 4))
    net, hidden = plant_equivariant(groups.flip(), rho16, rho16, [16, 12, 12, 16], seed=0)
    return net, hidden, rho16


def test_read_off_action_right(planted16):
    net, hidden, rho16 = planted16
    K2 = hidden[1].matrix(rho16.group["m"])
    assert ch01.check_read_off_action(K2, net, rho16) is None


def test_read_off_action_wrong(planted16):
    net, hidden, rho16 = planted16
    K2 = hidden[1].matrix(rho16.group["m"])
    K1 = hidden[0].matrix(rho16.group["m"])
    wrong = [(None, "is None"), (torch.eye(3), "12x12"), (0.5 * K2, "round"),
             (K2 + torch.eye(12) * (torch.diagonal(K2) == 0), "not a signed permutation"),
             (torch.roll(torch.eye(12), 1, 0), "K2² ≠ I"), (K1 @ K1 * 0 + torch.eye(12), "differs")]
    for answer, message in wrong:
        with pytest.raises(ExerciseError, match=message):
            ch01.check_read_off_action(answer, net, rho16)


def test_least_squares_action_is_not_an_answer():
    """Issue #20 A2: the minimum-norm least-squares A of chapter 1 satisfies the first
    condition of ch01-ex2 but not W_2 A = W_2 (W_2 A = (0.2, 1, 0.4)); the checker says
    so at the second condition, not only at A² = I."""
    A = torch.tensor([[0.0, 1, 0], [0.2, 0, 0.4], [0, 2, 0]])
    x = torch.linspace(-3, 3, 61)[:, None]
    h = torch.relu(x @ ch01.ABS_W1.T)
    # the first condition holds, and W_2 A h = W_2 h on the features that occur,
    assert (h @ A.T - torch.relu(-x @ ch01.ABS_W1.T)).abs().max() < 1e-5
    assert (h @ A.T @ ch01.ABS_W2.T - h @ ch01.ABS_W2.T).abs().max() < 1e-5
    # but W_2 A ≠ W_2 as matrices: the statement "satisfies the first two conditions" was false
    torch.testing.assert_close(ch01.ABS_W2 @ A, torch.tensor([[0.2, 1.0, 0.4]]))
    with pytest.raises(ExerciseError, match="layer 2 is not invariant"):
        ch01.check_abs_hidden_action(A)


def test_ex2_statement_does_not_claim_w2_a_equals_w2():
    """Issue #20 A2, on the text: ch01-ex2 must not say the least-squares A satisfies the
    first two conditions (it fails W_2 A = W_2)."""
    from pathlib import Path

    import nbformat
    path = Path(__file__).resolve().parents[2] / "book" / "part1" / "01_introduction.ipynb"
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if ":label: ch01-ex2\n" in c.source]
    assert len(cells) == 1
    text = " ".join(cells[0].split())
    assert "satisfies the first two conditions" not in text
    assert "not $W_2 A = W_2$" in text
