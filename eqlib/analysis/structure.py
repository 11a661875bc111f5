"""Structure of a first layer beyond its mirror categories: an exactly paired layer planted
from a trained one (the projection of its filters onto the layers equivariant under a
signed permutation), and how spatially localised its filters are.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..images import CIFAR10_SHAPE, mirror_images
from ..symmetries import best_assignment
from ..validation import check_int, check_tensor

__all__ = ["PairedLayer", "paired_projection", "involutive_matching", "filter_localisation"]


@dataclass
class PairedLayer:
    """A first layer (``weight`` (n, d), ``bias`` (n,)) equivariant under the mirror with the
    signed permutation k = P_s, ``(P_s z)_j = signs[j] · z_{perm[j]}``: ``perm`` is an
    involution (fixed points and 2-cycles), the signs are equal on each 2-cycle, and
    ``mirror(weight[j]) = signs[j] · weight[perm[j]]``, ``bias[j] = signs[j] · bias[perm[j]]``,
    so W M = P_s W and, for an odd activation σ, σ(W m(x) + b) = P_s σ(W x + b).

    Attributes:
        weight, bias: the planted layer.
        perm, signs: (n,) int arrays of k.
        score: (n,) ``|cos(mirror(w_j), w_{perm[j]})|`` of the filters the layer was
            planted from (how far the projection moved them: 1 means not at all).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    weight: torch.Tensor
    bias: torch.Tensor
    perm: np.ndarray
    signs: np.ndarray
    score: np.ndarray

    def matrix(self) -> torch.Tensor:
        """P_s as an (n, n) matrix, ``P_s[j, perm[j]] = signs[j]``, in the weight's dtype."""
        n = len(self.perm)
        k = torch.zeros(n, n, dtype=self.weight.dtype)
        k[torch.arange(n), torch.as_tensor(self.perm)] = torch.as_tensor(self.signs, dtype=self.weight.dtype)
        return k

    def kinds(self) -> dict[str, int]:
        """Units per kind of k: ``symmetric``, ``antisymmetric`` (fixed points, sign ±1),
        ``mirrored pair``, ``negated mirrored pair`` (units in 2-cycles, sign ±1)."""
        fixed = self.perm == np.arange(len(self.perm))
        pos = self.signs > 0
        return {"symmetric": int((fixed & pos).sum()), "antisymmetric": int((fixed & ~pos).sum()),
                "mirrored pair": int((~fixed & pos).sum()), "negated mirrored pair": int((~fixed & ~pos).sum())}


def involutive_matching(score: torch.Tensor) -> np.ndarray:
    """An involution σ (fixed points and 2-cycles) with a large ``Σ_j score[j, σ(j)]`` for a
    symmetric score matrix: the best permutation (``eqlib.symmetries.best_assignment``,
    exact), whose cycles of length ≥ 3 are then cut into consecutive 2-cycles (and, for
    an odd cycle, one fixed point), the best of the cuts kept. An involution is a
    permutation, so the assignment's total bounds every involution's; on an even cycle
    the better of its two cuts reaches at least that cycle's share of the total (the two
    cuts' totals add up to twice it, since score is symmetric), so the result is a
    maximum-weight involution whenever the assignment has no odd cycle of length ≥ 3.

    Raises:
        ValueError: ``score`` not square and symmetric.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_tensor("score", score, ndim=2, dtype="real", finite=True)
    S = score.detach().double().cpu()
    if S.shape[0] != S.shape[1] or not torch.allclose(S, S.T, rtol=1e-9, atol=1e-12):
        raise ValueError(f"score must be a square symmetric matrix, got shape {tuple(S.shape)}")
    perm = best_assignment(S).numpy()
    S = S.numpy()
    sigma = np.arange(len(perm))
    seen = np.zeros(len(perm), dtype=bool)
    for start in range(len(perm)):
        if seen[start]:
            continue
        cycle = [start]
        while perm[cycle[-1]] != start:
            cycle.append(int(perm[cycle[-1]]))
        seen[cycle] = True
        L = len(cycle)
        if L == 2:
            sigma[cycle[0]], sigma[cycle[1]] = cycle[1], cycle[0]
        if L < 3:
            continue
        best, best_value = None, -np.inf
        for r in range(2 if L % 2 == 0 else L):  # cut after node r (odd: node r stays fixed)
            order = cycle[r:] + cycle[:r]
            fixed = order[0] if L % 2 else None
            rest = order[1:] if L % 2 else order
            pairs = list(zip(rest[0::2], rest[1::2]))
            value = 2 * sum(S[a, b] for a, b in pairs) + (S[fixed, fixed] if fixed is not None else 0.0)
            if value > best_value:
                best, best_value = pairs, value
        for a, b in best:
            sigma[a], sigma[b] = b, a
    return sigma


def paired_projection(weight: torch.Tensor, bias: torch.Tensor | None = None, *, axis: str = "horizontal",
                      shape: tuple[int, int, int] = CIFAR10_SHAPE) -> PairedLayer:
    """Plant an exactly paired layer from ``weight`` (n, C·H·W) (filters as flattened images
    of ``shape``) and ``bias`` (n,) (default zeros): pair the filters by an involutive
    matching (``involutive_matching``) on ``|cos(mirror(w_i), w_j)|`` (the self-similarity on
    the diagonal), take each match's sign s = sign cos(mirror(w_i), w_j), and project onto
    the layers equivariant under that signed permutation: for a 2-cycle (i, j, s),
    w_i' = (w_i + s·mirror(w_j))/2, w_j' = s·mirror(w_i'), b_i' = (b_i + s·b_j)/2,
    b_j' = s·b_i' (Tanh is odd, so the sign carries over to the bias); for a fixed point
    (i, i, s), w_i' = (w_i + s·mirror(w_i))/2 and b_i' = (b_i + s·b_i)/2 (0 when
    antisymmetric). Then mirror(w_j') = s_j·w'_{π(j)} and b_j' = s_j·b'_{π(j)} hold
    exactly, in floating point too (a flip and a sign change are exact, and so is the cast
    from the float64 computation back to the weight's dtype): W' M = P_s W'. A zero
    filter is a symmetric fixed point.

    Examples:
        >>> g = torch.Generator().manual_seed(0)
        >>> layer = paired_projection(torch.randn(6, 3 * 4 * 4, generator=g), shape=(3, 4, 4))
        >>> W = layer.weight
        >>> torch.equal(mirror_images(W, shape=(3, 4, 4)), layer.matrix() @ W)
        True
        >>> sum(layer.kinds().values())
        6

    Raises:
        TypeError: ``weight`` or ``bias`` not a real tensor.
        ValueError: wrong shapes, non-finite entries.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_tensor("weight", weight, ndim=2, dtype="real", finite=True)
    n, d = weight.shape
    if d != int(np.prod(shape)):
        raise ValueError(f"weight must have shape (n, {int(np.prod(shape))}) for filters of shape {shape}, "
                         f"got {tuple(weight.shape)}")
    if bias is None:
        bias = torch.zeros(n, dtype=weight.dtype)
    check_tensor("bias", bias, ndim=1, dtype="real", finite=True)
    if bias.shape[0] != n:
        raise ValueError(f"bias must have shape ({n},) like weight's rows, got {tuple(bias.shape)}")
    out_dtype = weight.dtype if weight.is_floating_point() else torch.float64
    W = weight.detach().cpu().double()  # computed in float64; the cast back keeps W' M = P_s W' exact
    b = bias.detach().cpu().double()
    mirror = lambda v: mirror_images(v, axis, shape=shape)  # noqa: E731
    U = W / W.norm(dim=1, keepdim=True).clamp_min(1e-300)
    cos = mirror(U) @ U.T  # cos(mirror(w_i), w_j): symmetric, the mirror being an orthogonal involution
    cos = (cos + cos.T) / 2
    sigma = involutive_matching(cos.abs())
    idx = np.arange(n)
    signs = np.where(cos.numpy()[idx, sigma] < 0, -1, 1)
    first = sigma >= idx  # fixed points and the first unit of each 2-cycle
    i, j = torch.as_tensor(idx[first]), torch.as_tensor(sigma[first])
    s = torch.as_tensor(signs[first], dtype=W.dtype)
    Wn, bn = torch.empty_like(W), torch.empty_like(b)
    Wn[i] = (W[i] + s[:, None] * mirror(W[j])) / 2
    bn[i] = (b[i] + s * b[j]) / 2
    # the partners from their first units; a fixed point is written again with the same value
    pair = i != j
    Wn[j[pair]] = s[pair, None] * mirror(Wn[i[pair]])
    bn[j[pair]] = s[pair] * bn[i[pair]]
    score = cos.abs().numpy()[idx, sigma]
    return PairedLayer(Wn.to(out_dtype), bn.to(out_dtype), sigma.astype(np.int64), signs.astype(np.int64), score)


def filter_localisation(weight: torch.Tensor, window: int = 7,
                        shape: tuple[int, int, int] = CIFAR10_SHAPE) -> np.ndarray:
    """How spatially localised each filter (row of ``weight`` (n, C·H·W), an image of
    ``shape``) is: the largest share of its energy Σ_c w_c(y, x)² (summed over the colours)
    inside one ``window`` × ``window`` window of pixels (window positions entirely inside
    the image). A filter concentrated on one pixel scores 1, a constant one
    window²/(H·W) (49/1024 for 7 × 7 on 32 × 32); a zero filter scores 0.

    Examples:
        >>> delta = torch.zeros(1, 3072); delta[0, 5 * 32 + 9] = 1.0
        >>> filter_localisation(torch.cat([delta, torch.ones(1, 3072)])).tolist()
        [1.0, 0.0478515625]

    Raises:
        TypeError: ``weight`` not a real tensor or ``window`` not an int.
        ValueError: wrong shape, non-finite entries, a window larger than the image.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_tensor("weight", weight, ndim=2, dtype="real", finite=True)
    c, h, w = shape
    if weight.shape[1] != c * h * w:
        raise ValueError(f"weight must have shape (n, {c * h * w}) for filters of shape {shape}, "
                         f"got {tuple(weight.shape)}")
    window = check_int("window", window, 1, min(h, w))
    energy = weight.detach().double().cpu().reshape(-1, c, h, w).pow(2).sum(1, keepdim=True)
    inside = F.conv2d(energy, energy.new_ones(1, 1, window, window)).flatten(1).amax(1)
    total = energy.flatten(1).sum(1)
    return torch.where(total > 0, inside / total.clamp_min(1e-300), torch.zeros_like(total)).numpy()
