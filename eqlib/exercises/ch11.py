"""Checkers for the exercises of *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..train import mirror_images, penalty_term
from . import ExerciseError, passed, require

__all__ = ["check_mirror_partner", "check_equivariance_penalty", "planted_filters"]


def planted_filters(seed: int = 0) -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """Six filters (6, 3072) with a known mirror structure and the answer [(partner, sign), ...]:
    filter 0 symmetric, 1 antisymmetric, 2 ↔ 4 mirrored, 3 ↔ 5 mirrored and negated.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(4, 3072, generator=g)
    m = mirror_images(v)
    W = torch.stack([v[0] + m[0], v[1] - m[1], v[2], v[3], m[2], -m[3]])
    return W, [(0, 1), (1, -1), (4, 1), (5, -1), (2, 1), (3, -1)]


def check_mirror_partner(mirror_partner: Callable[[torch.Tensor, int], tuple[int, int]]) -> None:
    """ch11-ex1: ``mirror_partner(W, j)`` must return (k, s) with mirror(w_j) ≈ s · w_k.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    require(callable(mirror_partner), "mirror_partner must be a function (W, j) -> (k, s)")
    for seed in (0, 1):
        W, answer = planted_filters(seed)
        perm = torch.randperm(6, generator=torch.Generator().manual_seed(seed + 10))
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
            require(k == true_k, f"filter {j}: its mirror image is ±filter {true_k}, you said {k} "
                    "(compare the mirrored filter with every filter by |cosine similarity|)")
            require(s == true_s, f"filter {j}: its mirror image is {'+' if true_s > 0 else '−'}filter {k}, you "
                    f"gave the sign {s} (the sign of the cosine similarity)")
    passed("Correct: every filter's mirror partner and sign found.")


def check_equivariance_penalty(equivariance_penalty: Callable[[nn.Module, torch.Tensor], torch.Tensor]) -> None:
    """ch11-ex2: ``equivariance_penalty(f, x)`` must be the mean over coordinates of (f(mx) − m f(x))².

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    require(callable(equivariance_penalty), "equivariance_penalty must be a function (f, x) -> scalar tensor")
    gen = torch.Generator().manual_seed(0)
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
            "3,072 coordinates instead of a mean (THEORY: the sum collapsed the autoencoder)")
    require(abs(ratio - 5) > 1e-3 or abs(ratio - 1) < 1e-4, "your penalty is 5 times too large: it sums over the "
            "5 images instead of averaging")
    require(abs(ratio - 1) < 1e-4, f"your penalty is {float(got):.6g}, expected {float(want):.6g}: compare "
            "f(mirror(x)) with mirror(f(x)), square, and average over everything")
    sym = nn.Conv2d(3, 3, (3, 1), padding=(1, 0))  # acts on columns only: commutes with the mirror
    with torch.no_grad():
        sym_penalty = float(equivariance_penalty(sym, x))
    require(sym_penalty < 1e-10, "a conv acting within columns commutes with the "
            "horizontal mirror, so its penalty must be 0")
    passed("Correct: the penalty is a mean, zero for an equivariant map.")
