"""The chapter-10 checkers accept right answers and reject wrong ones with a message."""
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch10 import check_filter_distance_by_hand, check_gcnn_projection


def test_gcnn_projection_checker():
    assert check_gcnn_projection(lambda w, po, pi: 0.5 * (w + w[po][:, pi].flip(-1))) is None
    with pytest.raises(ExerciseError, match="does not satisfy"):
        check_gcnn_projection(lambda w, po, pi: 0.5 * (w + w.flip(-1)))
    with pytest.raises(ExerciseError, match="shape"):
        check_gcnn_projection(lambda w, po, pi: w[:, :2])


def test_gcnn_projection_checker_rejects_projections_onto_too_small_a_space():
    """Referee ch10 (B): zeros, and orthogonal projections onto proper subspaces of the
    constrained weights, satisfy the constraint, are idempotent and have a residual
    orthogonal to their own image; the old checker called them correct."""
    def right(w, po, pi):
        return 0.5 * (w + w[po][:, pi].flip(-1))

    def smaller(w, po, pi):          # also symmetric up-down: a proper subspace
        p = right(w, po, pi)
        return 0.5 * (p + p.flip(-2))

    def only_centre(w, po, pi):      # keep the centre column of the projection only
        p = right(w, po, pi)
        out = torch.zeros_like(p)
        out[..., 1] = p[..., 1]
        return out

    for wrong in (lambda w, po, pi: torch.zeros_like(w), smaller, only_centre):
        with pytest.raises(ExerciseError, match="already satisfies the constraint"):
            check_gcnn_projection(wrong)


def test_filter_distance_by_hand_right_and_wrong():
    assert check_filter_distance_by_hand(26 ** -0.5) is None
    assert check_filter_distance_by_hand(0.196) is None                    # rounded by hand
    assert check_filter_distance_by_hand(torch.tensor(26 ** -0.5)) is None
    import numpy as np

    for numpy_answer in (np.float32(26 ** -0.5), np.float64(26 ** -0.5), np.array([26 ** -0.5])):
        assert check_filter_distance_by_hand(numpy_answer) is None  # NumPy answers are numbers
    with pytest.raises(ExerciseError, match="both steps") as hint:   # flip or swap alone
        check_filter_distance_by_hand(10 ** 0.5 / (2 * 13 ** 0.5))
    assert "(2, 2, 0)" not in str(hint.value)       # the hint does not give TW[0] away
    with pytest.raises(ExerciseError, match="denominator"):
        check_filter_distance_by_hand(2 / 26 ** 0.5)
    with pytest.raises(ExerciseError, match="square root"):
        check_filter_distance_by_hand(1 / 26)
    with pytest.raises(ExerciseError, match="is not d"):
        check_filter_distance_by_hand(0.3)
    with pytest.raises(ExerciseError, match="number"):
        check_filter_distance_by_hand("small")
