"""Checkers for the exercises of *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..images import mirror as mirror_action
from ..images import mirror_images
from ..latent import linear_equivariance_error
from ..models import MLP
from ..train import penalty_term
from ..seeds import spawn, torch_generator
from . import ExerciseError, passed, require, variants

__all__ = ["check_mirror_partner", "check_equivariance_penalty", "planted_filters",
           "noise_scale_reference", "check_noise_scale_errors", "check_noise_scale_numbers"]


def planted_filters(seed: int = 0) -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """Six filters (6, 3072) with a known mirror structure and the answer [(partner, sign), ...]:
    filter 0 symmetric, 1 antisymmetric, 2 ↔ 4 mirrored, 3 ↔ 5 mirrored and negated.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    g = torch_generator(seed)
    v = torch.randn(4, 3072, generator=g)
    m = mirror_images(v)
    W = torch.stack([v[0] + m[0], v[1] - m[1], v[2], v[3], m[2], -m[3]])
    return W, [(0, 1), (1, -1), (4, 1), (5, -1), (2, 1), (3, -1)]


def check_mirror_partner(mirror_partner: Callable[[torch.Tensor, int], tuple[int, int]]) -> None:
    """ch11-ex1: ``mirror_partner(W, j)`` must return (k, s) with mirror(w_j) ≈ s · w_k, on
    planted filters in a shuffled order (the book's, or drawn per variant).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    require(callable(mirror_partner), "mirror_partner must be a function (W, j) -> (k, s)")
    for seed in (variants.input_seed("ch11-ex1", book=book) for book in (0, 1)):
        W, answer = planted_filters(seed)
        perm = torch.randperm(6, generator=spawn(seed, "filter order"))
        W = W[perm]  # the structure must be found, not remembered
        inv = torch.argsort(perm)
        for j in range(6):
            try:
                got = mirror_partner(W.clone(), j)
            except NotImplementedError:
                raise ExerciseError("mirror_partner still raises NotImplementedError: write your answer") from None
            require(isinstance(got, (tuple, list)) and len(got) == 2, f"mirror_partner(W, {j}) returned {got!r}; "
                    "return a pair (k, s)")
            k, s = int(got[0]), int(got[1])
            true_k, true_s = answer[int(perm[j])]
            true_k = int(inv[true_k])
            require(k == true_k, f"filter {j}: its mirror image is not ±filter {k}, as you said "
                    "(compare the mirrored filter with every filter by |cosine similarity|)")
            require(s == true_s, f"filter {j}: its mirror image is ±filter {k}, as you said, but the sign {s} "
                    "is wrong "
                    "(the sign of the cosine similarity)")
    passed("Correct: every filter's mirror partner and sign found.")


def check_equivariance_penalty(equivariance_penalty: Callable[[nn.Module, torch.Tensor], torch.Tensor]) -> None:
    """ch11-ex2: ``equivariance_penalty(f, x)`` must be the mean over coordinates of (f(mx) − m f(x))²,
    on a random conv and images (the book's, or drawn per variant).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    require(callable(equivariance_penalty), "equivariance_penalty must be a function (f, x) -> scalar tensor")
    gen = variants.input_generator("ch11-ex2", book=0)
    x = torch.randn(5, 3, 32, 32, generator=gen)
    conv = nn.Conv2d(3, 3, 3, padding=1)
    with torch.no_grad():
        for p in conv.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    try:
        with torch.no_grad():
            got = equivariance_penalty(conv, x)
    except NotImplementedError:
        raise ExerciseError("equivariance_penalty still raises NotImplementedError: write your answer") from None
    require(isinstance(got, torch.Tensor) and got.numel() == 1, f"return a scalar tensor, got {got!r}")
    with torch.no_grad():
        want = penalty_term(conv, x, "equivariance")
    ratio = float(got.detach()) / float(want)
    require(abs(ratio - 3072) > 1 or abs(ratio - 1) < 1e-4, "your penalty is 3,072 times too large: a sum over the "
            "3,072 coordinates instead of a mean; at weight 1 such a sum dominates the reconstruction loss")
    require(abs(ratio - 5) > 1e-3 or abs(ratio - 1) < 1e-4, "your penalty is 5 times too large: it sums over the "
            "5 images instead of averaging")
    require(abs(ratio - 1) < 1e-4, f"your penalty {float(got):.6g} is not the expected mean: compare "
            "f(mirror(x)) with mirror(f(x)), square, and average over everything")
    sym = nn.Conv2d(3, 3, (3, 1), padding=(1, 0))  # acts on columns only: commutes with the mirror
    with torch.no_grad():
        sym_penalty = float(equivariance_penalty(sym, x))
    require(sym_penalty < 1e-10, "a conv acting within columns commutes with the "
            "horizontal mirror, so its penalty must be 0")
    passed("Correct: the penalty is a mean, zero for an equivariant map.")


def noise_scale_reference(model: MLP, scale: float, samples: int = 1000) -> tuple[float, float]:
    """ch11-ex4's reference: the median linear-equivariance error (horizontal mirror,
    isotropic noise of standard deviation ``scale``, ``samples`` probes, seed 0) of the
    first layer f_1 = tanh(W_1 y + b_1) of ``model`` and of its pre-activation W_1 y + b_1.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    act = mirror_action((3, 32, 32))
    first = model.layers[0]
    pre = MLP([first.weight.shape[1], first.weight.shape[0]])  # one affine layer
    pre.layers[0].load_state_dict(first.state_dict())
    return tuple(linear_equivariance_error(f, act, act.group["m"], samples=samples,
                                           noise_scale=scale, seed=0).median_error
                 for f in (model.prefix(1), pre))


def _errors_table(errors, scales, name: str) -> dict[float, tuple[float, float]]:
    require(isinstance(errors, dict), f"{name} must be a dict {{scale: (tanh error, "
            f"pre-activation error)}}, got {type(errors).__name__}")
    missing = [s for s in scales if s not in errors]
    require(not missing, f"{name} has no entry for the scales {missing}; its keys are "
            f"{sorted(errors)}")
    table = {}
    for s in scales:
        pair = errors[s]
        require(isinstance(pair, (tuple, list)) and len(pair) == 2,
                f"{name}[{s}] = {pair!r}: give a pair (tanh error, pre-activation error)")
        table[s] = (float(pair[0]), float(pair[1]))
    return table


def _compare(got: dict, model: MLP, scales, samples: int, what: str) -> None:
    for s in scales:
        want = noise_scale_reference(model, s, samples)
        tanh, pre = got[s]
        right = abs(tanh - want[0]) < 1e-4 and abs(pre - want[1]) < 1e-4
        if not right and abs(tanh - want[1]) < 1e-4 and abs(pre - want[0]) < 1e-4:
            raise ExerciseError(f"{what}, scale {s}: the two errors are swapped; return "
                                "(error of the tanh layer, error of the pre-activation)")
        require(abs(pre - tanh) > 1e-6 or abs(want[0] - want[1]) < 1e-6,
                f"{what}, scale {s}: both errors are {tanh:.4f}; the pre-activation "
                "W_1 y + b_1 must skip the tanh (one affine layer with W_1 and b_1)")
        require(abs(tanh - want[0]) < 1e-4,
                f"{what}, scale {s}: the tanh layer's error is not your {tanh:.4f} "
                f"(linear_equivariance_error of model.prefix(1) with "
                f"samples={samples}, noise_scale={s}, seed=0)")
        require(abs(pre - want[1]) < 1e-4,
                f"{what}, scale {s}: the pre-activation's error is not your {pre:.4f} "
                "(an affine layer with the first layer's W_1 and b_1)")


def check_noise_scale_errors(noise_scale_errors: Callable[..., dict]) -> None:
    """ch11-ex4: ``noise_scale_errors(model, scales, samples)`` must return
    ``{scale: (error of f_1, error of W_1 y + b_1)}`` as :func:`noise_scale_reference`, on a
    random network (the book's, or drawn per variant).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    require(callable(noise_scale_errors), "noise_scale_errors must be a function "
            "(model, scales, samples) -> {scale: (tanh error, pre-activation error)}")
    model = MLP([3072, 24, 3072], "tanh", seed=variants.input_seed("ch11-ex4", book=3))
    scales = (0.1, 10.0)
    try:
        got = noise_scale_errors(model, scales, 200)
    except NotImplementedError:
        raise ExerciseError("noise_scale_errors still raises NotImplementedError: write "
                            "your answer") from None
    _compare(_errors_table(got, scales, "the returned dict"), model, scales, 200,
             "a random 3072-24-3072 tanh network")
    passed("Correct: both errors match at every scale.")


def check_noise_scale_numbers(errors: dict, model: MLP, samples: int = 1000) -> None:
    """ch11-ex4: the student's ``errors`` for the chapter's Tanh autoencoder ``model``
    (``{scale: (tanh error, pre-activation error)}``, at least three scales) are recomputed
    at the largest scale, where the two errors differ most.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    require(isinstance(errors, dict) and len(errors) >= 3, "errors must be a dict with at "
            f"least three scales, got {errors!r}")
    scales = sorted(errors)
    table = _errors_table(errors, scales, "errors")
    _compare(table, model, (scales[-1],), samples, "the Tanh autoencoder")
    passed(f"Correct: your numbers at the scale {scales[-1]} match.")
