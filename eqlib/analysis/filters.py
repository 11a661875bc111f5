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
from ..symmetries import best_assignment
from ..validation import check_float, check_tensor

__all__ = ["CATEGORIES", "SYMMETRIC", "ANTISYMMETRIC", "PAIR", "NEGATED_PAIR", "UNMATCHED",
           "PAIRED", "TOLERANCE", "FilterPairing", "filter_pairing", "NegatedCopies", "negated_copies"]

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


@dataclass
class NegatedCopies:
    """Pairs of rows that are negated copies of each other, w_i ≈ −c w_j with c > 0 (no
    mirror): the candidates for GELU's bypass pairs.

    Attributes:
        pairs: (k, 2) int array of the pairs (i, j), i < j, in increasing order of i.
        cosine: (k,) cos(−w_i, w_j) of each pair (at least ``threshold - TOLERANCE``).
        n_rows: the number of rows matched.
        threshold: the cosine a pair reaches.
        perm: the assignment: row i's negation is matched to row ``perm[i]``.
        non_reciprocal: rows whose match is another row and reaches the threshold but is
            not reciprocal (``perm[perm[i]] != i``): not counted.
        norm_ratio: (k,) ‖w_j‖ / ‖w_i‖ of each pair (1 for an exact bypass pair).
        bias_sum: (k,) b_i + b_j of each pair (0 when b_i = −b_j), or None without biases.
        bias_gap: (k,) ``abs(b_i + b_j) / (abs(b_i) + abs(b_j))`` in [0, 1] (0 when b_i = −b_j, also when
            both are 0; 1 when the biases have the same sign or one is 0), or None.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    pairs: np.ndarray
    cosine: np.ndarray
    n_rows: int
    threshold: float
    perm: np.ndarray
    non_reciprocal: np.ndarray
    norm_ratio: np.ndarray
    bias_sum: np.ndarray | None = None
    bias_gap: np.ndarray | None = None

    @property
    def count(self) -> int:
        """The number of negated pairs."""
        return len(self.pairs)

    def counts(self, first: int | None = None) -> dict[str, int]:
        """``{"negated pairs": ..., "rows in pairs": ..., "non-reciprocal": ...}``, among the
        first ``first`` rows if given (a pair counts when both its rows are among them)."""
        n = self.n_rows if first is None else min(int(first), self.n_rows)
        inside = (self.pairs < n).all(axis=1) if self.count else np.zeros(0, bool)
        return {"negated pairs": int(inside.sum()), "rows in pairs": 2 * int(inside.sum()),
                "non-reciprocal": int(self.non_reciprocal[:n].sum())}

    def outgoing_cosines(self, next_weight: torch.Tensor) -> np.ndarray:
        """cos(a_i, −a_j) for each pair (i, j), with a_i the column of ``next_weight``
        (the next layer's weight, (m, n)) that unit i feeds: 1 for a bypass pair, whose
        outgoing weights are opposite.

        Raises:
            ValueError: ``next_weight`` not 2-d with one column per row of the layer.

        Chapter: *Reproducing the CIFAR-10 experiment*.
        """
        check_tensor("next_weight", next_weight, ndim=2, dtype="real", finite=True)
        if next_weight.shape[1] != self.n_rows:
            raise ValueError(f"next_weight must have {self.n_rows} columns (one per unit), got shape "
                             f"{tuple(next_weight.shape)}")
        a = next_weight.detach().double().cpu()
        pairs = torch.as_tensor(self.pairs, dtype=torch.long).reshape(-1, 2)
        ai, aj = a[:, pairs[:, 0]], a[:, pairs[:, 1]]
        return (-(ai * aj).sum(0) / (ai.norm(dim=0) * aj.norm(dim=0)).clamp_min(1e-300)).numpy()


def negated_copies(weight: torch.Tensor, bias: torch.Tensor | None = None, *,
                   threshold: float = 0.8) -> NegatedCopies:
    """The rows of ``weight`` (n, d) (a layer's units) that are negated copies of other rows.

    The negations −w_i are matched one-to-one to the other rows by the best assignment
    (``eqlib.symmetries.best_assignment``) on the cosines cos(−w_i, w_j), the diagonal
    excluded; a pair (i, j) is kept only if the match is reciprocal, π(π(i)) = i ≠ π(i),
    and its cosine reaches ``threshold`` (at least ``threshold - TOLERANCE``, as in
    ``filter_pairing``). The cosine is scale-free: w and −c w (c > 0) are a pair. A row that
    is only a mirror image of another is not a negated copy (no mirror is applied).

    Why it matters: GELU(z) − GELU(−z) = z, so two GELU units with weights w, −w, biases
    b, −b and outgoing weights a, −a pass the affine function a(w·x + b) through the layer
    (a *bypass pair*); for tanh, an odd function, such a pair computes one feature twice. ``bias`` (n,) adds the bias
    relation of each pair (``bias_sum``, ``bias_gap``); ``norm_ratio`` says whether the
    two weights have equal norms, as an exact bypass pair's do.

    A score of −4 on the diagonal makes every optimal assignment fixed-point free when
    n ≥ 2 (moving a fixed point into another cycle changes the total by at least
    −3 + 4 > 0); a zero row has cosine 0 with every row and is never paired.

    Examples:
        >>> g = torch.Generator().manual_seed(0)
        >>> w = torch.randn(4, 50, generator=g)
        >>> W = torch.cat([w, -2 * w[:2]])  # rows 4, 5 negate rows 0, 1 (scaled)
        >>> res = negated_copies(W, torch.tensor([0.5, 0.0, 0.1, 0.2, -0.5, 0.3]))
        >>> res.count, res.pairs.tolist()
        (2, [[0, 4], [1, 5]])
        >>> res.bias_gap.round(3).tolist(), res.norm_ratio.tolist()
        ([0.0, 1.0], [2.0, 2.0])

    Raises:
        TypeError: ``weight`` or ``bias`` not a real tensor, ``threshold`` not a number.
        ValueError: ``weight`` not 2-d or with no row, ``bias`` not of shape (n,), not
            finite, or ``threshold`` outside (0, 1].

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_tensor("weight", weight, ndim=2, dtype="real", finite=True)
    if weight.shape[0] < 1 or weight.shape[1] < 1:
        raise ValueError(f"weight must have at least one row and one column, got shape {tuple(weight.shape)}")
    n = weight.shape[0]
    if bias is not None:
        check_tensor("bias", bias, ndim=1, dtype="real", finite=True)
        if bias.shape[0] != n:
            raise ValueError(f"bias must have shape ({n},) like weight's rows, got {tuple(bias.shape)}")
    threshold = check_float("threshold", threshold, low=0.0, high=1.0, low_open=True)
    W = weight.detach().double().cpu()
    norms = W.norm(dim=1)
    U = W / norms.clamp_min(1e-300)[:, None]
    score = -(U @ U.T)  # cos(−w_i, w_j)
    score.fill_diagonal_(-4.0)
    perm = best_assignment(score).numpy()
    cos = score.numpy()[np.arange(n), perm]
    idx = np.arange(n)
    other = (perm != idx) & (cos >= threshold - TOLERANCE)
    reciprocal = perm[perm] == idx
    first = other & reciprocal & (idx < perm)
    i = idx[first]
    j = perm[first]
    pairs = np.stack([i, j], axis=1) if len(i) else np.zeros((0, 2), dtype=np.int64)
    nrm = norms.numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(nrm[i] > 0, nrm[j] / np.where(nrm[i] > 0, nrm[i], 1.0), np.inf)
    bias_sum = bias_gap = None
    if bias is not None:
        b = bias.detach().double().cpu().numpy()
        bias_sum = b[i] + b[j]
        scale = np.abs(b[i]) + np.abs(b[j])
        bias_gap = np.where(scale > 0, np.abs(bias_sum) / np.where(scale > 0, scale, 1.0), 0.0)
    return NegatedCopies(pairs.astype(np.int64), cos[first], n, threshold, perm, other & ~reciprocal,
                         ratio, bias_sum, bias_gap)
