"""Checkers for the exercises of *Attention* (book/part2/08_attention).

Chapter: *Attention* (book/part2/08_attention).
"""
from __future__ import annotations

import numpy as np
import torch

from . import ExerciseError, passed, require, variants

__all__ = ["given", "check_equivariant_positions", "check_head_permutation", "check_turned_filter"]

_SHAPE, _PATCH = (1, 8, 12), 4   # the chapter's images: a 2×3 grid of 4×4 patches


def given() -> dict:
    """The numbers this copy's exercises give, for the current variant
    (``eqlib.exercises.variants``).

    - ``"ex2_filter"``: the 3×3 filter W of ``ex_conv`` in ch08-ex2. Book: the numbers 1 to
      9 row by row. A variant draws a random order of 1, …, 9 (nine distinct integers, so
      every entry shows where the turn moves it).
    - ``"ex4_head_perm"``: the head permutation planted for the mirror in ch08-ex4, before
      the layer is hidden (a tuple over the 5 heads; book: (2, 1, 0, 4, 3)), and
      ``"ex4_seed"``: the seed of ``plant_attention_equivariant`` (book: 7), which also
      draws the hiding symmetry. A variant draws an involution other than the identity
      (one or two swapped pairs of heads: τ_m τ_m = id, as m² = e) and a seed in
      0, …, 9999, and redraws the seed while the hidden layer's τ_m (the answer) equals
      the printed ``ex4_head_perm`` or the book's τ_m, (3, 4, 2, 0, 1), so that neither
      answers the copy.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    gen = variants.parameter_generator("ch08-ex2")
    order = torch.arange(9) if gen is None else torch.randperm(9, generator=gen)
    out = {"ex2_filter": (order + 1.0).reshape(3, 3)}
    gen = variants.parameter_generator("ch08-ex4")
    if gen is None:
        out["ex4_head_perm"], out["ex4_seed"] = (2, 1, 0, 4, 3), 7
    else:
        heads, tau = torch.randperm(5, generator=gen).tolist(), list(range(5))
        for i in range(int(torch.randint(1, 3, (), generator=gen))):
            a, b = heads[2 * i], heads[2 * i + 1]
            tau[a], tau[b] = b, a
        out["ex4_head_perm"] = tuple(tau)
        seed = int(torch.randint(0, 10000, (), generator=gen))
        while tuple(_hidden_perm(tau, seed)) in (tuple(tau), _BOOK_TAU):
            seed = int(torch.randint(0, 10000, (), generator=gen))
        out["ex4_seed"] = seed
    return out


_BOOK_TAU = (3, 4, 2, 0, 1)     # τ_m of the book's hidden layer (head_perm (2, 1, 0, 4, 3), seed 7)


def _hidden_perm(head_perm, seed: int) -> np.ndarray:
    """τ_m of the layer that ch08-ex4 plants with ``head_perm`` and ``seed``, once hidden."""
    from ..latent.attention import patch_mirror_action, plant_attention_equivariant

    perms = np.array([list(range(5)), list(head_perm)])
    planted = plant_attention_equivariant(patch_mirror_action(_SHAPE, _PATCH), perms, d_k=4,
                                          d_v=4, seed=seed)
    return planted.head_perm["m"]


def _planted_truth() -> np.ndarray:
    """τ_m of the hidden layer ch08-ex4 plants with this copy's ``given()`` numbers."""
    numbers = given()
    return _hidden_perm(numbers["ex4_head_perm"], numbers["ex4_seed"])


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
    planted layer. Under a variant the layer is the one this copy's ``given()`` plants
    (``planted`` must be it).

    Chapter: *Attention*.
    """
    try:
        tau = np.asarray(answer, dtype=np.int64).reshape(-1)
    except (TypeError, ValueError):
        raise ExerciseError(f"give the head permutation as a list of integers, got {answer!r}") from None
    truth = planted.head_perm["m"]
    if variants.current() is not None:
        want = _planted_truth()
        require(np.array_equal(truth, want), "exercise_planted is not the layer this copy's "
                "given[...] plants: run the exercise cells from the top")
        truth = want
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
    passed(f"Correct: τ_m = {tau.tolist()}.")


def check_turned_filter(layer, g, answer) -> None:
    """ch08-ex2: the filters rot_g⁻¹ W of the generalized adjunction of a conv layer,
    with conv(rot_g x; W) = rot_g conv(x; rot_g⁻¹ W). For a one-channel layer a k×k answer
    is read as the (1, 1, k, k) filter. Under a variant, ``layer`` must carry this copy's
    ``given()["ex2_filter"]``.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    from ..latent.conv import rotate
    from ..models import Model
    from ..latent.conv import transport_conv

    W = layer.weight.detach()
    if variants.current() is not None:
        want = given()["ex2_filter"]
        require(W.numel() == want.numel() and torch.equal(W.reshape(want.shape).float(), want),
                "ex_conv's filter is not this copy's given[\"ex2_filter\"]: run the exercise "
                "cells from the top")
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
