"""How first-layer filters map to each other under a mirror: symmetric, antisymmetric,
mirrored pairs, negated mirrored pairs (a signed-permutation latent action), or unmatched.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..latent import match_units
from ..images import mirror_images
from ..validation import check_tensor

__all__ = ["CATEGORIES", "SYMMETRIC", "ANTISYMMETRIC", "PAIR", "NEGATED_PAIR", "UNMATCHED",
           "PAIRED", "TOLERANCE", "FilterPairing", "filter_pairing"]

CATEGORIES = ("symmetric", "antisymmetric", "mirrored pair", "negated mirrored pair", "unmatched")
#: indices into ``CATEGORIES``
SYMMETRIC, ANTISYMMETRIC, PAIR, NEGATED_PAIR, UNMATCHED = range(len(CATEGORIES))
#: the categories whose filter has a partner other than itself
PAIRED = (PAIR, NEGATED_PAIR)
#: similarities are compared with ``threshold - TOLERANCE``: the computed ``|cosine|`` of
#: an exact fixed point or an exact pair is 1 only up to rounding (a few 1e-16)
TOLERANCE = 1e-9


@dataclass
class FilterPairing:
    """How the first-layer filters map to each other under the mirror.

    Attributes:
        perm, signs, similarity: from :func:`eqlib.latent.match_units` of the mirrored
            filters against the filters: mirror(w_j) ≈ signs[j] · w_{perm[j]}, with
            ``|cosine|`` ``similarity[j]``.
        category: per filter, an index into ``CATEGORIES``. A filter is in a (negated)
            mirrored pair only if the pair is a verified 2-cycle of a signed permutation
            (see :func:`filter_pairing`); every other filter that is not (anti)symmetric
            is ``UNMATCHED``.
        threshold: the ``|cosine|`` below which (by more than ``TOLERANCE``) a filter
            counts as unmatched.
        self_similarity: per filter, ``|cosine|`` between the filter and its own mirror
            image.
        non_reciprocal: per filter, True if its best match passes the threshold and is
            another filter, but the match is not reciprocal (``perm[perm[j]] != j``) or
            the two signs differ. Such a filter is ``UNMATCHED``.
        self_symmetric_pair: per filter, True if it is in a reciprocal, sign-consistent
            match with another filter above the threshold, but one of the two filters is
            itself (anti)symmetric at the threshold, so the pair cannot be told apart from
            two (anti)symmetric near-copies. Such a filter is ``UNMATCHED``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    perm: np.ndarray
    signs: np.ndarray
    similarity: np.ndarray
    category: np.ndarray
    threshold: float
    self_similarity: np.ndarray
    non_reciprocal: np.ndarray
    self_symmetric_pair: np.ndarray

    def counts(self, first: int | None = None) -> dict[str, int]:
        """Number of filters in each category (among the first ``first`` filters if given)."""
        c = self.category[:first] if first is not None else self.category
        return {name: int((c == k).sum()) for k, name in enumerate(CATEGORIES)}

    def rejected_counts(self, first: int | None = None) -> dict[str, int]:
        """Filters matched to another filter above the threshold but not counted as a pair:
        ``"non-reciprocal"`` (the match is not a sign-consistent 2-cycle) and
        ``"self-symmetric pair"`` (a 2-cycle of filters that are themselves (anti)symmetric
        at the threshold). Both are ``UNMATCHED`` in :meth:`counts`."""
        sl = slice(None, first)
        return {"non-reciprocal": int(self.non_reciprocal[sl].sum()),
                "self-symmetric pair": int(self.self_symmetric_pair[sl].sum())}

    @property
    def matched_fraction(self) -> float:
        return float((self.category != UNMATCHED).mean())


def filter_pairing(W1: torch.Tensor, axis: str = "horizontal", threshold: float = 0.8,
                   subspace: torch.Tensor | None = None) -> FilterPairing:
    """Classify first-layer filters W_1 (d_1, 3072) under the mirror ``axis``.

    Each filter w_j (a 3×32×32 image) is mirrored and matched (signed, one-to-one,
    :func:`eqlib.latent.match_units`) against all filters: mirror(w_j) ≈ s_j w_{π(j)}.
    A filter matched to itself with ``|cosine|`` reaching ``threshold`` is symmetric
    (s_j = 1) or antisymmetric (s_j = −1). A filter j matched to another filter t = π(j)
    is in a mirrored pair (s_j = 1) or a negated mirrored pair (s_j = −1) only if all of these hold:

    * the match is reciprocal, π(t) = j, and sign-consistent, s_t = s_j (what the
      four-kinds proposition of the chapter requires of a 2-cycle);
    * both matches reach ``threshold``;
    * as a further rule of the sorting (a guard against near-copies, not a consequence
      of the proposition), neither filter is itself (anti)symmetric at the threshold
      (``|cos(mirror(w), w)|`` below it), so the pair is not two near-copies of one
      symmetric filter, for which the assignment would choose between "pair" and
      "symmetric" arbitrarily.

    "Reaches ``threshold``" means at least ``threshold - TOLERANCE`` (1e-9): the computed
    ``|cosine|`` of an exact fixed point or an exact pair is 1 only up to rounding, on
    either side, so without the tolerance a threshold of 1 (or within rounding of 1)
    would leave exact filters, symmetric or antisymmetric, unmatched.

    Otherwise the filter is unmatched; the matches rejected for the first or the last
    reason are reported in ``non_reciprocal`` and ``self_symmetric_pair``. The
    categorised filters therefore always describe one signed permutation k with k² = I.
    On an exact signed-permutation action, W_1 ρ(m) = k W_1 with k² = I, whose filters
    are nonzero and pairwise non-parallel, the assignment finds k and every filter is
    categorised except the mirrored (or negated) pairs (w, ±mirror(w)) whose filters are
    themselves near-symmetric, ``|cos(mirror(w), w)|`` reaching ``threshold``: such a pair
    cannot be told from two near-copies of one symmetric filter and is rejected as a
    ``self_symmetric_pair`` (the chapter's proposition on the sorting of an exact action,
    for every ``threshold`` in (0, 1]; proved in exact arithmetic, it holds for the
    function up to rounding).

    (Before this check existed, every filter with π(j) ≠ j and ``|cosine|`` at least
    ``threshold`` counted as paired: pair counts made that way are upper bounds of these.
    Symmetric and antisymmetric counts are unchanged.)

    ``subspace`` (3072, k) with orthonormal columns spanning a mirror-invariant subspace
    (e.g. top principal directions of :func:`~eqlib.analysis.mirror_symmetric_spectrum`):
    the filters are first projected onto it, w ↦ w P Pᵀ (the part of each filter that
    images with that covariance see).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_tensor("W1", W1, dtype="real", finite=True)
    if W1.dim() != 2 or W1.shape[1] != 3072:
        raise ValueError(f"W1 must have shape (d_1, 3072), got {tuple(W1.shape)}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold is a |cosine| in (0, 1], got {threshold}")
    W = W1.detach().double().cpu()
    if subspace is not None:
        if subspace.dim() != 2 or subspace.shape[0] != W.shape[1]:
            raise ValueError(f"subspace must have shape ({W.shape[1]}, k), "
                             f"got {tuple(subspace.shape)}")
        P = subspace.detach().double().cpu()
        W = (W @ P) @ P.T
    M = mirror_images(W, axis)
    perm, signs, sim = match_units(M, W, signed=True)
    perm, signs, sim = perm.numpy(), signs.numpy(), sim.numpy()
    norms = W.norm(dim=1).clamp_min(1e-300)
    self_sim = ((M * W).sum(1) / norms ** 2).abs().numpy()
    n = len(perm)
    self_ = perm == np.arange(n)
    above = sim >= threshold - TOLERANCE
    reciprocal = (perm[perm] == np.arange(n)) & (signs[perm] == signs)
    self_sym = self_sim >= threshold - TOLERANCE
    other = ~self_ & above & above[perm]
    non_reciprocal = ~self_ & above & ~reciprocal
    self_symmetric_pair = other & reciprocal & (self_sym | self_sym[perm])
    pair = other & reciprocal & ~self_sym & ~self_sym[perm]
    cat = np.full(n, UNMATCHED)
    cat[self_ & above] = np.where(signs[self_ & above] > 0, SYMMETRIC, ANTISYMMETRIC)
    cat[pair] = np.where(signs[pair] > 0, PAIR, NEGATED_PAIR)
    return FilterPairing(perm, signs, sim, cat, threshold, self_sim, non_reciprocal,
                         self_symmetric_pair)
