"""The chapter-10 checkers accept right answers and reject wrong ones with a message."""
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch10 import (check_filter_distance, check_gcnn_projection,
                                  check_relu_intertwiner)


def right_intertwiner(a):
    nz = a.abs() > 1e-9
    return bool((nz.sum(0) == 1).all() and (nz.sum(1) == 1).all() and (a[nz] > 0).all())


def test_relu_intertwiner_checker():
    assert check_relu_intertwiner(right_intertwiner) is None
    # a common mistake: accepting signed permutations (the tanh answer)
    with pytest.raises(ExerciseError, match="signed permutation|negative diagonal"):
        check_relu_intertwiner(lambda a: bool(((a.abs() > 1e-9).sum(0) == 1).all() and ((a.abs() > 1e-9).sum(1) == 1).all()))


def test_gcnn_projection_checker():
    assert check_gcnn_projection(lambda w, po, pi: 0.5 * (w + w[po][:, pi].flip(-1))) is None
    with pytest.raises(ExerciseError, match="does not satisfy"):
        check_gcnn_projection(lambda w, po, pi: 0.5 * (w + w.flip(-1)))
    with pytest.raises(ExerciseError, match="shape"):
        check_gcnn_projection(lambda w, po, pi: w[:, :2])


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
