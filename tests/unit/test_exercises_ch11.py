"""The chapter-11 checkers accept right answers and reject wrong ones with a useful message."""
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch11 import check_equivariance_penalty, check_mirror_partner
from eqlib.train import mirror_images


def _partner(W, j):
    m = mirror_images(W[j:j + 1])[0]
    cos = (W @ m) / (W.norm(dim=1) * m.norm())
    k = int(cos.abs().argmax())
    return k, int(torch.sign(cos[k]))


def test_mirror_partner_right_and_wrong():
    assert check_mirror_partner(_partner) is None
    with pytest.raises(ExerciseError, match="sign"):
        check_mirror_partner(lambda W, j: (_partner(W, j)[0], 1))
    with pytest.raises(ExerciseError, match="mirror image is"):
        check_mirror_partner(lambda W, j: (j, 1))


def test_equivariance_penalty_right_and_wrong():
    right = lambda f, x: ((f(mirror_images(x)) - mirror_images(f(x))) ** 2).mean()  # noqa: E731
    assert check_equivariance_penalty(right) is None
    with pytest.raises(ExerciseError, match="3,072"):
        check_equivariance_penalty(lambda f, x: ((f(mirror_images(x)) - mirror_images(f(x))) ** 2).sum((1, 2, 3)).mean())
    with pytest.raises(ExerciseError, match="expected"):
        check_equivariance_penalty(lambda f, x: ((f(mirror_images(x)) - f(x)) ** 2).mean())
