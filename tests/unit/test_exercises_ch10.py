"""The exercise checkers accept right answers and reject wrong ones with a useful message."""
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


# the chapter-10 checkers (the tests above exercise chapter 11's, kept until that chapter's
# own test file holds them)
from eqlib.exercises.ch10 import check_filter_distance, check_gcnn_projection  # noqa: E402


def _distance(W, pi_out, pi_in):
    tw = W.flip(-1)[pi_out][:, pi_in]
    return float((W - tw).norm() / (W.norm() + tw.norm()))


def test_filter_distance_right_and_wrong():
    assert check_filter_distance(_distance) is None
    with pytest.raises(ExerciseError, match="does not flip"):
        check_filter_distance(lambda W, po, pi: float((W - W[po][:, pi]).norm() / (2 * W.norm())))
    with pytest.raises(ExerciseError, match="does not permute"):
        check_filter_distance(lambda W, po, pi: float((W - W.flip(-1)).norm() / (2 * W.norm())))
    with pytest.raises(ExerciseError, match="divide by"):
        check_filter_distance(lambda W, po, pi: float((W - W.flip(-1)[po][:, pi]).norm() / W.norm()))
    with pytest.raises(ExerciseError, match="number"):
        check_filter_distance(lambda W, po, pi: "small")


def test_gcnn_projection_right_and_wrong():
    assert check_gcnn_projection(lambda W, po, pi: 0.5 * (W + W[po][:, pi].flip(-1))) is None
    with pytest.raises(ExerciseError, match="does not satisfy"):
        check_gcnn_projection(lambda W, po, pi: 0.5 * (W + W.flip(-1)))
    with pytest.raises(ExerciseError):
        check_gcnn_projection(lambda W, po, pi: W[po][:, pi].flip(-1) * 0 + 0.5 * (W + W[po][:, pi].flip(-1)) * 2)
