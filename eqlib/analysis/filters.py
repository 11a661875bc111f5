"""How first-layer filters map to each other under a mirror: symmetric, antisymmetric,
mirrored pairs, negated mirrored pairs (a signed-permutation latent action), or unmatched.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..latent import match_units
from ..train import mirror_images

__all__ = ["CATEGORIES", "SYMMETRIC", "ANTISYMMETRIC", "PAIR", "NEGATED_PAIR", "UNMATCHED",
           "PAIRED", "FilterPairing", "filter_pairing"]

CATEGORIES = ("symmetric", "antisymmetric", "mirrored pair", "negated mirrored pair", "unmatched")
#: indices into ``CATEGORIES``
SYMMETRIC, ANTISYMMETRIC, PAIR, NEGATED_PAIR, UNMATCHED = range(len(CATEGORIES))
#: the categories whose filter has a partner other than itself
PAIRED = (PAIR, NEGATED_PAIR)



@dataclass
class FilterPairing:
    """How the first-layer filters map to each other under the mirror.

    Attributes:
        perm, signs, similarity: from :func:`eqlib.latent.match_units` of the mirrored
            filters against the filters: mirror(w_j) ≈ signs[j] · w_{perm[j]}, with
            ``|cosine|`` ``similarity[j]``.
        category: per filter, an index into ``CATEGORIES``.
        threshold: the ``|cosine|`` below which a filter counts as unmatched.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    perm: np.ndarray
    signs: np.ndarray
    similarity: np.ndarray
    category: np.ndarray
    threshold: float

    def counts(self, first: int | None = None) -> dict[str, int]:
        """Number of filters in each category (among the first ``first`` filters if given)."""
        c = self.category[:first] if first is not None else self.category
        return {name: int((c == k).sum()) for k, name in enumerate(CATEGORIES)}

    @property
    def matched_fraction(self) -> float:
        return float((self.category != UNMATCHED).mean())


def filter_pairing(W1: torch.Tensor, axis: str = "horizontal", threshold: float = 0.8,
                   subspace: torch.Tensor | None = None) -> FilterPairing:
    """Classify first-layer filters W_1 (d_1, 3072) under the mirror ``axis``.

    Each filter w_j (a 3×32×32 image) is mirrored and matched (signed, one-to-one,
    :func:`eqlib.latent.match_units`) against all filters. A filter whose mirror image is
    ±itself is (anti)symmetric; one whose mirror image is ±another filter has a
    (negated) mirrored partner; a best match with ``|cosine|`` below ``threshold`` is
    unmatched. A signed-permutation latent action makes every filter matched.

    ``subspace`` (3072, k) with orthonormal columns spanning a mirror-invariant subspace
    (e.g. top principal directions of :func:`~eqlib.analysis.mirror_symmetric_spectrum`):
    the filters are first projected onto it, w ↦ w P Pᵀ (the part of each filter that
    images with that covariance see).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
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
    perm, signs, sim = match_units(mirror_images(W, axis), W, signed=True)
    perm, signs, sim = perm.numpy(), signs.numpy(), sim.numpy()
    self_ = perm == np.arange(len(perm))
    cat = np.where(self_, np.where(signs > 0, SYMMETRIC, ANTISYMMETRIC),
                   np.where(signs > 0, PAIR, NEGATED_PAIR))
    cat = np.where(sim >= threshold, cat, UNMATCHED)
    return FilterPairing(perm, signs, sim, cat, threshold)
