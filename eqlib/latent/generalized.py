"""Which sequences of parameter symmetries relate two parameters layer by layer.

Identifiability asks for a *unique* sequence k_1, …, k_{L-1} (k_0 = k_L = id) with
f_i(x; θ'_i) = k_i f_i(k_{i-1}^{-1} x; θ_i) for every layer. When each K_i is a finite
group given by its matrices, :func:`relating_sequences` finds all such sequences by a
depth-first search, layer by layer, checking each relation on probes; this makes the
uniqueness that the theorem uses checkable on examples. :func:`pair_set_symmetries`
lists the finite group K_i of a tanh Deep Sets layer on sets of two elements.

Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import torch

from ..validation import check_float, check_int, check_sequence, check_tensor

__all__ = ["pair_set_symmetries", "token_channel_candidates", "relating_sequences"]

Tensor = torch.Tensor


def pair_set_symmetries(d: int) -> Tensor:
    """The group ({±1} × S_2)^d ⋊ S_d acting on V = R^{2×d} (sets of two elements with d
    channels), as matrices on the row-major flattening of X (index t·d + c).

    An element permutes the channels, flips the sign of each channel and, channel by
    channel, swaps the two set elements or not. For tanh Deep Sets layers on sets of
    two elements all of these are parameter symmetries (signed channel permutations
    commute with tanh, and a per-channel swap acts on the parameters of that channel
    by (λ, γ) ↦ (−λ, γ + 2λ), :func:`eqlib.models.sets.pair_swap_parameters`).

    Args:
        d: number of channels, 1 ≤ d ≤ 4 (the group has 4^d · d! elements).

    Returns:
        (4^d · d!, 2d, 2d) tensor; element 0 is the identity.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    d = check_int("d", d, 1, 4)  # the group has 4^d·d! elements
    mats = []
    for perm in itertools.permutations(range(d)):
        for signs in itertools.product([1.0, -1.0], repeat=d):
            for swaps in itertools.product([0, 1], repeat=d):
                M = torch.zeros(2 * d, 2 * d)
                for c in range(d):  # output channel c reads input channel perm[c]
                    for t in range(2):
                        M[t * d + c, ((t + swaps[c]) % 2) * d + perm[c]] = signs[c]
                mats.append(M)
    return torch.stack(mats)


def token_channel_candidates(n: int, d: int) -> Tensor:
    """All maps X ↦ Π X sᵀ on R^{n×d}: a token permutation Π ∈ S_n times a signed
    channel permutation s, as matrices on the row-major flattening (n!·2^d·d! of them).

    For tanh Deep Sets layers the maps with Π = I are parameter symmetries; for n ≥ 3
    the others are not (a token permutation of one latent space cannot be absorbed
    by the parameters), which :func:`relating_sequences` lets one check.

    Returns:
        (n!·2^d·d!, n·d, n·d) tensor; element 0 is the identity.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    n, d = check_int("n", n, 1), check_int("d", d, 1)
    size = math.factorial(n) * 2 ** d * math.factorial(d)
    if size > 10_000:
        raise ValueError(f"n!·2^d·d! = {size} candidates is too many (at most 10,000)")
    tokens = [torch.eye(n)[list(p)] for p in itertools.permutations(range(n))]
    channels = [torch.diag(torch.tensor(s)) @ torch.eye(d)[list(p)]
                for p in itertools.permutations(range(d)) for s in itertools.product([1.0, -1.0], repeat=d)]
    return torch.stack([torch.kron(P, S) for P in tokens for S in channels])


def relating_sequences(layers: Sequence[Callable[[Tensor], Tensor]],
                       layers_prime: Sequence[Callable[[Tensor], Tensor]],
                       candidates: Sequence[Tensor], x: Tensor, *, tol: float = 1e-5) -> list[tuple[int, ...]]:
    """All sequences (k_1, …, k_{L-1}) from the candidate groups relating θ' to θ.

    The relation is f_i(y; θ'_i) = k_i f_i(k_{i-1}^{-1} y; θ_i) for every layer, with
    k_0 = k_L = id, checked on the probes propagated through θ (y = f_{<i}(x; θ)
    moved by k_{i-1}) up to relative error ``tol``.

    Args:
        layers, layers_prime: the layers f_i(·; θ_i) and f_i(·; θ'_i) (callables on
            batches whose trailing axes flatten to dim V_{i-1}).
        candidates: for each hidden latent space V_i (i = 1 … L-1), a tensor (m_i, D_i, D_i)
            of matrices acting on flattened latent vectors.
        x: probes (N, …) for the input space.
        tol: relative tolerance.

    Returns:
        The index tuples (into ``candidates``) of every relating sequence; the empty
        tuple when L = 1 and the single layer relation holds.

    Raises:
        ValueError: when the numbers of layers and candidate groups do not fit.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    layers, layers_prime = check_sequence("layers", layers), check_sequence("layers_prime", layers_prime)
    candidates = check_sequence("candidates", candidates)
    tol = check_float("tol", tol, 0.0)
    L = len(layers)
    if len(layers_prime) != L:
        raise ValueError(f"layers_prime must hold as many layers as layers ({L}), got {len(layers_prime)} (and "
                         f"candidates L-1 = {L - 1} candidate groups)")
    if len(candidates) != L - 1:
        raise ValueError(f"candidates must hold L-1 = {L - 1} candidate groups (one per hidden latent space), "
                         f"got {len(candidates)}")
    for i, c in enumerate(candidates):
        check_tensor(f"candidates[{i}]", c, ndim=3, dtype="float", finite=True)
    check_tensor("x", x, dtype="float", nonempty=True, finite=True)
    if x.ndim == 0:
        raise ValueError("x must be a batch of probes (N, ...), got a 0-d tensor")
    param = next(layers[0].parameters(), None) if isinstance(layers[0], torch.nn.Module) else None
    if param is not None and param.is_floating_point():
        x = x.to(param.dtype)  # another float precision: the layers' own dtype

    def rel(a: Tensor, b: Tensor) -> float:
        return float((a - b).norm() / b.norm().clamp_min(1e-12))

    found: list[tuple[int, ...]] = []

    def search(i: int, y: Tensor, k_prev: Tensor | None, chosen: tuple[int, ...]) -> None:
        # y: probes in V_{i-1} for θ; the relation needs f_i(k_{i-1} y; θ') = k_i f_i(y; θ)
        shape = y.shape
        flat = y.reshape(len(y), -1)
        y_moved = flat if k_prev is None else flat @ k_prev.to(flat).T
        with torch.no_grad():
            lhs = layers_prime[i](y_moved.reshape(shape))
            out = layers[i](y)
        lhs_flat, out_flat = lhs.reshape(len(lhs), -1), out.reshape(len(out), -1)
        if i == L - 1:
            if rel(lhs_flat, out_flat) <= tol:
                found.append(chosen)
            return
        for j, k in enumerate(candidates[i]):
            if rel(lhs_flat, out_flat @ k.to(out_flat).T) <= tol:
                search(i + 1, out, k, chosen + (j,))

    search(0, x, None, ())
    return found
