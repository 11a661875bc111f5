"""``eqlib.analysis.negated_copies``: pairs of rows w_i ≈ −c w_j (c > 0), no mirror (issue 25,
item 4). References: planted layers, a brute-force assignment over all derangements."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from eqlib.analysis import negated_copies
from eqlib.images import mirror_images


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def planted(k: int, extra: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, list[tuple[int, int]]]:
    """k exact negated pairs (scaled by c > 0) among ``extra`` random rows, rows shuffled;
    biases negated within each pair. Returns (weight, bias, the planted pairs i < j)."""
    g = gen(seed)
    base = torch.randn(k + extra, d, generator=g, dtype=torch.float64)
    scale = torch.rand(k, generator=g, dtype=torch.float64) * 3 + 0.1
    W = torch.cat([base, -scale[:, None] * base[:k]])
    b0 = torch.randn(k + extra, generator=g, dtype=torch.float64)
    b = torch.cat([b0, -scale * b0[:k]])
    order = torch.randperm(len(W), generator=g)
    inv = torch.argsort(order)
    pairs = sorted(tuple(sorted((int(inv[i]), int(inv[k + extra + i])))) for i in range(k))
    return W[order], b[order], pairs


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("k,extra", [(0, 10), (3, 10), (8, 5), (5, 0)])
def test_planted_pairs_are_found_exactly(seed, k, extra):
    W, b, pairs = planted(k, extra, 200, seed)
    res = negated_copies(W.float(), b.float())
    assert res.count == k
    assert [tuple(p) for p in res.pairs.tolist()] == pairs
    assert np.allclose(res.cosine, 1.0, atol=1e-5)
    # planted: (w_j, b_j) = −c (w_i, b_i) or the other way round, so b_j = −(‖w_j‖/‖w_i‖) b_i
    i, j = res.pairs.T if k else (np.zeros(0, int),) * 2
    bb = b.numpy()
    assert np.allclose(bb[i] * res.norm_ratio + bb[j], 0, atol=1e-4)
    assert res.counts()["negated pairs"] == k and res.counts()["rows in pairs"] == 2 * k


def test_exact_bypass_pair_has_zero_bias_gap_and_unit_ratio():
    w = torch.randn(3, 40, generator=gen(5))
    W = torch.cat([w, -w[:1]])
    res = negated_copies(W, torch.tensor([0.7, 0.1, -0.2, -0.7]))
    assert res.pairs.tolist() == [[0, 3]]
    assert res.bias_sum.tolist() == pytest.approx([0.0], abs=1e-7)
    assert res.bias_gap.tolist() == pytest.approx([0.0], abs=1e-7)
    assert res.norm_ratio.tolist() == pytest.approx([1.0])
    same_sign = negated_copies(W, torch.tensor([0.7, 0.1, -0.2, 0.3]))
    assert same_sign.bias_gap.tolist() == pytest.approx([1.0])
    both_zero = negated_copies(W, torch.zeros(4))
    assert both_zero.bias_gap.tolist() == [0.0]
    assert negated_copies(W).bias_sum is None and negated_copies(W).bias_gap is None


@pytest.mark.parametrize("c", [1e-3, 0.5, 1.0, 7.0, 1e3])
def test_scaled_negation_counts(c):
    w = torch.randn(5, 64, generator=gen(11), dtype=torch.float64)
    W = torch.cat([w, -c * w[2:3]])
    res = negated_copies(W, threshold=1.0)
    assert res.pairs.tolist() == [[2, 5]]
    assert res.norm_ratio[0] == pytest.approx(c)
    # a positive copy (c w) is not a negated copy
    assert negated_copies(torch.cat([w, c * w[2:3]])).count == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mirrored_but_not_negated_rows_are_not_counted(seed):
    w = torch.randn(6, 3072, generator=gen(seed))
    for W in (torch.cat([w, mirror_images(w, "horizontal")]),          # mirrored pairs
              torch.cat([w, -mirror_images(w, "horizontal")]),         # negated mirrored pairs
              torch.cat([w, mirror_images(w, "vertical")])):
        assert negated_copies(W).count == 0
    # the same layer with one true negated copy added counts exactly that one
    W = torch.cat([w, -mirror_images(w, "horizontal"), -w[:1]])
    assert negated_copies(W).pairs.tolist() == [[0, 12]]


def test_threshold_edge_is_inclusive():
    # cos(−w_0, w_1) = 0.6 (exact in binary up to rounding): unit rows (1, 0) and (−0.6, 0.8)
    W = torch.tensor([[1.0, 0.0], [-0.6, 0.8]], dtype=torch.float64)
    assert negated_copies(W, threshold=0.6).count == 1
    assert negated_copies(W, threshold=0.6).cosine[0] == pytest.approx(0.6)
    assert negated_copies(W, threshold=0.6 + 1e-6).count == 0
    assert negated_copies(W, threshold=0.5999).count == 1
    # threshold 1 keeps an exact (rounded) negation
    assert negated_copies(torch.tensor([[0.1, 0.3, 0.7], [-0.1, -0.3, -0.7]]), threshold=1.0).count == 1


def test_non_reciprocal_matches_are_not_counted():
    # three unit rows at 120° in a plane: cos(−w_i, w_j) = 1/2 for i ≠ j, and the only
    # fixed-point-free assignments of three rows are 3-cycles (never reciprocal)
    ang = torch.tensor([0.0, 2.0, 4.0], dtype=torch.float64) * torch.pi / 3
    W = torch.zeros(3, 8, dtype=torch.float64)
    W[:, 0], W[:, 1] = torch.cos(ang), torch.sin(ang)
    res = negated_copies(W, threshold=0.5)
    assert res.count == 0
    assert res.non_reciprocal.tolist() == [True, True, True]
    assert res.counts()["non-reciprocal"] == 3
    assert (res.perm[res.perm] != np.arange(3)).all()


def brute_force(W: torch.Tensor, threshold: float) -> list[list[int]]:
    """The reciprocal pairs of the best derangement, by enumerating all permutations."""
    U = W / W.norm(dim=1, keepdim=True)
    S = -(U @ U.T).numpy()
    n = len(W)
    best, arg = -np.inf, None
    for p in itertools.permutations(range(n)):
        if any(p[i] == i for i in range(n)):
            continue
        v = sum(S[i, p[i]] for i in range(n))
        if v > best:
            best, arg = v, p
    return [[i, arg[i]] for i in range(n) if arg[arg[i]] == i and i < arg[i] and S[i, arg[i]] >= threshold]


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_brute_force(seed):
    g = gen(seed)
    w = torch.randn(4, 3, generator=g, dtype=torch.float64)
    # two noisy negations, so the cosines spread around the threshold
    W = torch.cat([w, -w[:2] + 0.6 * torch.randn(2, 3, generator=g, dtype=torch.float64)])
    for threshold in (0.1, 0.5, 0.8):
        assert negated_copies(W, threshold=threshold).pairs.tolist() == brute_force(W, threshold)


def test_counts_within_first_rows_and_edge_sizes():
    w = torch.randn(4, 30, generator=gen(3))
    W = torch.cat([w[:2], -w[:2], w[2:], -w[2:]])  # pairs (0, 2), (1, 3), (4, 6), (5, 7)
    res = negated_copies(W)
    assert res.pairs.tolist() == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert res.counts(4)["negated pairs"] == 2 and res.counts(3)["negated pairs"] == 1
    assert res.counts(100) == res.counts()
    one = negated_copies(torch.ones(1, 5))
    assert one.count == 0 and one.pairs.shape == (0, 2)
    zero_row = negated_copies(torch.cat([torch.zeros(1, 30), w]))
    assert zero_row.count == 0


def test_bad_inputs_name_the_argument():
    W = torch.randn(4, 6, generator=gen(0))
    with pytest.raises(TypeError, match="weight"):
        negated_copies(W.tolist())
    with pytest.raises(TypeError, match="weight"):
        negated_copies(torch.ones(3, 4, dtype=torch.complex64))
    with pytest.raises(ValueError, match="weight"):
        negated_copies(torch.ones(6))
    with pytest.raises(ValueError, match="weight"):
        negated_copies(torch.zeros(0, 6))
    with pytest.raises(ValueError, match="weight"):
        negated_copies(torch.tensor([[1.0, float("nan")], [0.0, 1.0]]))
    with pytest.raises(TypeError, match="bias"):
        negated_copies(W, [0.0] * 4)
    with pytest.raises(ValueError, match="bias"):
        negated_copies(W, torch.zeros(5))
    with pytest.raises(ValueError, match="bias"):
        negated_copies(W, torch.zeros(4, 1))
    with pytest.raises(ValueError, match="bias"):
        negated_copies(W, torch.tensor([0.0, float("inf"), 0.0, 0.0]))
    for bad in (0.0, -0.1, 1.01, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            negated_copies(W, threshold=bad)
    for bad in ("0.8", None, True):
        with pytest.raises(TypeError, match="threshold"):
            negated_copies(W, threshold=bad)
    with pytest.raises(TypeError):
        negated_copies(W, None, 0.8)  # threshold is keyword-only


def test_outgoing_cosines_are_one_for_a_bypass_pair_and_check_the_shape():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(3, 20, generator=g)
    W = torch.cat([w, -w[:1]])                       # row 3 negates row 0
    res = negated_copies(W)
    a = torch.randn(5, 4, generator=g)
    a[:, 3] = -a[:, 0]                               # opposite outgoing columns: a bypass pair
    assert res.pairs.tolist() == [[0, 3]]
    assert np.allclose(res.outgoing_cosines(a), [1.0])
    a[:, 3] = a[:, 0]
    assert np.allclose(res.outgoing_cosines(a), [-1.0])
    with pytest.raises(ValueError, match="4 columns"):
        res.outgoing_cosines(torch.randn(5, 3))
