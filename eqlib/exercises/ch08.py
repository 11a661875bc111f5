"""Checkers for the exercises of *Attention* (book/part2/08_attention).

Chapter: *Attention* (book/part2/08_attention).
"""
from __future__ import annotations

import numpy as np
import torch

from . import ExerciseError, passed, require

__all__ = ["check_equivariant_positions", "check_head_permutation", "check_turned_filter"]


def check_equivariant_positions(P, action) -> None:
    """ch08-ex1: P (n, d) must satisfy Π_g P R_gᵀ = P for every g of the action's group,
    and must not be zero.

    Chapter: *Attention*.
    """
    if not isinstance(P, torch.Tensor):
        raise ExerciseError(f"P must be a torch.Tensor, got {type(P).__name__}")
    require(tuple(P.shape) == (action.n_tokens, action.token_dim),
            f"P must have shape ({action.n_tokens}, {action.token_dim}), got {tuple(P.shape)}")
    P = P.detach().to(torch.get_default_dtype())
    require(bool(torch.isfinite(P).all()), "P holds NaN or inf")
    require(float(P.norm()) > 1e-6, "P = 0 is equivariant but useless: it carries no position information")
    for g in action.group:
        moved = action.permute_tokens(g, P) @ action.feature_matrix(g).T
        err = float((moved - P).norm() / P.norm())
        require(err < 1e-5, f"Π_g P R_gᵀ ≠ P for g = {g.name} (relative error {err:.3g}): "
                            "start from P0 and ask which combination of it and its images under the "
                            "group every g leaves fixed")
    passed("Correct: the positional encodings are equivariant.")


def check_head_permutation(answer, planted) -> None:
    """ch08-ex4: ``answer`` is τ_m as a list (head h on x ↔ head τ(h) on m·x) for the
    planted layer.

    Chapter: *Attention*.
    """
    try:
        tau = np.asarray(answer, dtype=np.int64).reshape(-1)
    except (TypeError, ValueError):
        raise ExerciseError(f"give the head permutation as a list of integers, got {answer!r}") from None
    truth = planted.head_perm["m"]
    require(tau.shape == truth.shape, f"the layer has {truth.size} heads; your list has {tau.size} entries")
    require(sorted(tau.tolist()) == list(range(truth.size)), f"{tau.tolist()} is not a permutation of the heads")
    if not np.array_equal(tau, truth):
        inverse = np.argsort(truth)
        # the direction hint only where it can be the mistake: tau is the inverse of the
        # true permutation and differs from it (never for the mirror, as τ_m τ_m = id)
        hint = ("; did you read it in the right direction (τ(h) = the head of m·x that does "
                "what head h does on x)?" if np.array_equal(tau, inverse) else
                "; match every head h to the head of m·x whose moved maps are closest")
        raise ExerciseError(f"{tau.tolist()} is not the head permutation of this layer{hint}")
    passed(f"Correct: τ_m = {truth.tolist()}.")


def check_turned_filter(layer, g, answer) -> None:
    """ch08-ex2: the filters rot_g⁻¹ W of the generalized adjunction of a conv layer,
    with conv(rot_g x; W) = rot_g conv(x; rot_g⁻¹ W). For a one-channel layer a k×k answer
    is read as the (1, 1, k, k) filter.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    from ..latent.conv import rotate
    from ..models import Model
    from ..latent.conv import transport_conv

    W = layer.weight.detach()
    require(isinstance(answer, torch.Tensor), f"answer must be a torch.Tensor, got {type(answer).__name__}")
    lead = W.dim() - answer.dim()          # a 3×3 answer for a one-channel (1, 1, 3, 3) W
    if 0 < lead and all(n == 1 for n in W.shape[:lead]) and answer.shape == W.shape[lead:]:
        answer = answer.reshape(W.shape)
    require(tuple(answer.shape) == tuple(W.shape),
            f"the turned filters have the shape of W, {tuple(W.shape)}; got {tuple(answer.shape)}")
    (expected, _), = transport_conv(Model([layer]), g)
    if not torch.allclose(answer.float(), expected, atol=1e-6):
        other = rotate(W, g)
        hint = ("you turned the filters the wrong way: the adjunction needs rot_g⁻¹ W"
                if torch.allclose(answer.float(), other, atol=1e-6) and not torch.allclose(other, expected)
                else "turn every filter (the last two axes) back by g, entry by entry: "
                     "r turns counterclockwise, so turning back by r is clockwise")
        raise ExerciseError(f"conv(rot_g x; W) ≠ rot_g conv(x; answer): {hint}")
    passed("Correct: turning the input turns the output, with the filters turned back")
