"""Matching units (rows of weight matrices, columns of activations) up to sign and scale.

The latent action of a layer is a structured matrix k in the layer's symmetry group:
``(k z)_j = scale_j · z_{perm_j}`` (a signed, positively scaled or plain permutation).
Recovering it from weights or activations is an assignment problem, solved with
:func:`scipy.optimize.linear_sum_assignment` on a similarity matrix.

Chapter: *The main theorem* (book/part2/06_main_theorem).
"""
from __future__ import annotations

import torch

from ..symmetries import best_assignment
from ..validation import check_bool, check_tensor

__all__ = ["assign", "match_units"]

Tensor = torch.Tensor


def assign(similarity: Tensor, signed: bool) -> Tensor:
    """The permutation ``perm`` maximizing ``Σ_j sim[j, perm_j]`` (``|sim|`` if signed).

    If the row-wise argmax is already a bijection it is the optimum (the sum of row
    maxima bounds every assignment), so the O(d³) solver is skipped; otherwise
    :func:`scipy.optimize.linear_sum_assignment` solves it.

    Args:
        similarity: (n, n) tensor.
        signed: maximize the absolute similarity.

    Returns:
        perm: (n,) long tensor on the similarity's device.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    check_tensor("similarity", similarity, dtype="real", finite=True), check_bool("signed", signed)
    if similarity.ndim != 2 or similarity.shape[0] != similarity.shape[1]:
        raise ValueError(f"need a square similarity matrix, got shape {tuple(similarity.shape)}")
    score = similarity.abs() if signed else similarity
    score = torch.nan_to_num(score, nan=-1.0)
    best = score.argmax(dim=1)
    n = score.shape[0]
    if torch.bincount(best, minlength=n).max() <= 1:
        return best
    return best_assignment(score).to(similarity.device)


def _unit_rows(x: Tensor) -> tuple[Tensor, Tensor]:
    norms = x.norm(dim=1)
    return x / norms.clamp_min(1e-12)[:, None], norms


def match_units(A: Tensor, B: Tensor, signed: bool = True, scaled: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """Match every row of A to a distinct row of B: ``A[j] ≈ scales[j] · B[perm[j]]``.

    In matrix form ``A ≈ k B`` with k the monomial matrix ``k[j, perm[j]] = scales[j]``.

    Args:
        A, B: (n, m) tensors (e.g. the rows [W_i k_{i-1} | b_i] and [W_i | b_i], or the
            flattened first-layer filters and their mirror images).
        signed: allow scale −1 (odd activations such as tanh): match ``|cosine|``.
        scaled: allow any scale (positive only unless ``signed``), fitted by least
            squares per matched pair; otherwise scales are ±1 (or 1).

    Returns:
        perm: (n,) long tensor; scales: (n,) tensor (±1 when not ``scaled``);
        similarity: (n,) cosine similarity of each matched pair (absolute when signed).

    Raises:
        ValueError: if A and B are not matrices of the same shape.
        TypeError: if A or B is not a floating-point tensor (cast integer rows with
            ``.float()``).

    Examples:
        >>> A = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
        >>> perm, scales, similarity = match_units(A, -A[[2, 0, 1]])
        >>> perm, scales
        (tensor([1, 2, 0]), tensor([-1., -1., -1.]))

    Chapter: *The main theorem* (book/part2/06_main_theorem); used in *Reproducing the
    CIFAR-10 experiment* to pair filters with their mirror images.
    """
    check_tensor("A", A, dtype="float"), check_tensor("B", B, dtype="float")  # cosines need floats
    check_bool("signed", signed), check_bool("scaled", scaled)
    if A.ndim != 2 or A.shape != B.shape:
        raise ValueError(f"A and B must be matrices of one shape, got {tuple(A.shape)} and {tuple(B.shape)}")
    An, a_norm = _unit_rows(A)
    Bn, b_norm = _unit_rows(B.to(A.dtype))
    cos = An @ Bn.T  # (n, n)
    perm = assign(cos, signed)
    matched = cos.gather(1, perm[:, None])[:, 0]
    if scaled:
        Bp = B.to(A.dtype)[perm]
        scales = (A * Bp).sum(1) / (Bp * Bp).sum(1).clamp_min(1e-30)
        if not signed:
            scales = scales.clamp_min(0.0)
    else:
        scales = torch.where(matched < 0, -1.0, 1.0).to(A.dtype) if signed else torch.ones_like(matched)
    similarity = matched.abs() if signed else matched
    return perm, scales, similarity
