"""The chapter-11 checkers accept right answers and reject wrong ones with a useful message."""
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch11 import check_equivariance_penalty, check_mirror_partner
from eqlib.images import mirror_images


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


_MEMO = {}


def _scale_errors(model, scales, samples):
    """The right answer (memoised: the wrong answers below derive from it)."""
    from eqlib.exercises.ch11 import noise_scale_reference
    key = lambda s: (float(model.layers[0].weight.detach().sum()), s, samples)  # noqa: E731
    for s in scales:
        if key(s) not in _MEMO:
            _MEMO[key(s)] = noise_scale_reference(model, s, samples)
    return {s: _MEMO[key(s)] for s in scales}


def test_noise_scale_errors_right_and_wrong():
    from eqlib.exercises.ch11 import check_noise_scale_errors
    assert check_noise_scale_errors(_scale_errors) is None
    swapped = lambda m, sc, n: {s: v[::-1] for s, v in _scale_errors(m, sc, n).items()}  # noqa: E731
    with pytest.raises(ExerciseError, match="swapped"):
        check_noise_scale_errors(swapped)
    both_tanh = lambda m, sc, n: {s: (v[0], v[0]) for s, v in _scale_errors(m, sc, n).items()}  # noqa: E731
    with pytest.raises(ExerciseError, match="skip the tanh"):
        check_noise_scale_errors(both_tanh)
    with pytest.raises(ExerciseError, match="no entry for the scales"):
        check_noise_scale_errors(lambda m, sc, n: _scale_errors(m, sc[:1], n))
    other_seed = lambda m, sc, n: {s: (v[0] + 0.01, v[1]) for s, v in _scale_errors(m, sc, n).items()}  # noqa: E731
    with pytest.raises(ExerciseError, match="tanh layer's error"):
        check_noise_scale_errors(other_seed)


def test_noise_scale_numbers_right_and_wrong():
    from eqlib.exercises.ch11 import check_noise_scale_numbers
    from eqlib.models import MLP
    model = MLP([3072, 16, 3072], "tanh", seed=5)
    right = _scale_errors(model, (0.1, 1.0, 10.0), 200)
    assert check_noise_scale_numbers(right, model, samples=200) is None
    with pytest.raises(ExerciseError, match="at least three scales"):
        check_noise_scale_numbers({0.1: right[0.1]}, model, samples=200)
    wrong = dict(right)
    wrong[10.0] = (right[10.0][0], right[10.0][1] * 0.5)
    with pytest.raises(ExerciseError, match="pre-activation's error"):
        check_noise_scale_numbers(wrong, model, samples=200)
