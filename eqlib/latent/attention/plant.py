"""Planting equivariant attention layers, and hiding them by parameter symmetries.

:func:`plant_attention_equivariant` builds one layer that is G-equivariant with a chosen
head permutation; :func:`hide_attention_network` hides a stack of layers by random
attention symmetries and changes of feature basis, leaving the function unchanged.

Chapter: *Attention* (book/part2/08_attention).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from ...actions import Action
from ...groups import GroupElement
from ...models.attention import MultiHeadAttention
from ...models.base import Model
from ...symmetries import apply_attention_symmetry, random_invertible, sample_attention_symmetry
from ...seeds import spawn, torch_generator
from ...validation import check_bool, check_float
from .tokens import ByElement, TokenAction, _permutation_homomorphism_error

__all__ = ["hide_attention_network", "PlantedAttention", "plant_attention_equivariant"]

Tensor = torch.Tensor


def hide_attention_network(net: Model, seed: int = 0, log_scale: float = 0.5,
                           heads: bool = True) -> tuple[Model, list[Tensor]]:
    """A copy of a stack of attention layers hidden by a random parameter symmetry.

    Every layer gets a random attention symmetry (head permutation and per-head bases,
    :func:`eqlib.symmetries.sample_attention_symmetry`), and every intermediate space
    V_i = R^{n×d_i} a random change of feature basis M_i ∈ GL(d_i):
    W_O^{(i)} ↦ W_O^{(i)} M_iᵀ in layer i and W_{Q,K,V}^{(i+1)} ↦ M_i^{-ᵀ} W_{Q,K,V}^{(i+1)},
    P_{i+1} ↦ P_{i+1} M_iᵀ in layer i+1. The function does not change; a feature action
    U_g on V_i becomes M_i U_g M_i^{-1}.

    Args:
        net: a Model of MultiHeadAttention layers.
        seed: seed of everything random.
        log_scale: the singular values of M_i lie in [e^{-log_scale}, e^{log_scale}].
        heads: also apply the per-layer attention symmetries (False: only the M_i).

    Returns:
        (hidden network, [M_1, …, M_{L-1}]).

    Chapter: *Attention* (book/part2/08_attention).
    """
    check_bool("heads", heads)
    check_float("log_scale", log_scale, 0.0, 80.0)
    layers = list(net.layers) if isinstance(net, Model) else None
    if not layers or not all(isinstance(l, MultiHeadAttention) for l in layers):
        raise TypeError("net must be a Model whose layers are all MultiHeadAttention layers")
    gen = torch_generator(seed)
    new = [apply_attention_symmetry(l, sample_attention_symmetry(l, seed=gen)) if heads else copy.deepcopy(l)
           for l in layers]
    Ms = []
    with torch.no_grad():
        for i in range(len(new) - 1):
            d = new[i].out_shape[1]
            M = random_invertible(1, d, gen, log_scale)[0]
            Mit = torch.linalg.inv(M).T
            new[i].W_O.copy_(new[i].W_O @ M.T)
            for name in ("W_Q", "W_K", "W_V"):
                getattr(new[i + 1], name).copy_(Mit @ getattr(new[i + 1], name))
            if new[i + 1].P is not None:
                new[i + 1].P.copy_(new[i + 1].P @ M.T)
            Ms.append(M)
    return Model([copy.deepcopy(l) for l in new]), Ms


# -- planting -------------------------------------------------------------------------
@dataclass
class PlantedAttention:
    """A planted equivariant attention layer.

    Attributes:
        layer: the layer (hidden by a random attention symmetry when ``hidden``).
        head_perm: {g: τ_g} of the returned layer (conjugated by the hiding
            symmetry's head permutation), a ``ByElement`` mapping (names work too).
        action_in: the input action; out_features: the output feature action.
        hidden: whether a random attention symmetry was applied.

    Chapter: *Attention*.
    """

    layer: MultiHeadAttention
    head_perm: dict[str, np.ndarray]
    action_in: TokenAction
    out_features: Action | None
    hidden: bool

    def __post_init__(self):
        self.head_perm = ByElement(self.action_in.group, self.head_perm)


def _regular_block(stab: list[GroupElement], s: GroupElement, dim: int) -> Tensor:
    """s acting on R^dim by copies of the regular representation of the stabilizer
    (columns indexed by stabilizer elements), the leftover columns fixed."""
    k = len(stab)
    M = torch.eye(dim)
    pos = {t.index: i for i, t in enumerate(stab)}
    for c in range(dim // k):
        block = torch.zeros(k, k)
        for i, t in enumerate(stab):
            block[pos[(s @ t).index], i] = 1.0
        M[c * k:(c + 1) * k, c * k:(c + 1) * k] = block
    return M


def _most_rank(*candidates: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
    """The first pair of factors with the largest total rank (ties: the earlier one)."""
    ranks = [sum(int(torch.linalg.matrix_rank(w)) for w in pair) for pair in candidates]
    return candidates[int(np.argmax(ranks))]


def plant_attention_equivariant(action_in: TokenAction, head_perms: np.ndarray | dict, *, d_out: int | None = None,
                                out_features: Action | None = None, d_k: int = 4, d_v: int = 4,
                                positional: bool = True, hide: bool = True, seed: int = 0) -> PlantedAttention:
    """An attention layer that is G-equivariant with a chosen head permutation, then hidden.

    Heads are built orbit by orbit: for a representative h0 with stabilizer G_{h0},
    W^{h0} is averaged so that s·W^{h0} = W^{h0} A_s, with A a sum of regular
    representations of G_{h0} or trivial (A_s = I), whichever leaves the factors more
    rank (with R_s = I the regular one would force rank < d_k, a degenerate head); then
    head τ_g(h0) := g·(head h0). P is averaged to Π_g P R_gᵀ = P. With
    ``hide``, a random attention symmetry (head permutation and per-head GL changes,
    :func:`eqlib.symmetries.sample_attention_symmetry`) is applied, which conjugates
    the planted head permutation.

    Args:
        action_in: how G acts on input tokens.
        head_perms: τ as an array (``|G|``, H) (row g: head h → τ_g(h)) or {g: τ_g}; must
            be a homomorphism G → S_H.
        d_out: output token dimension (default: the input's, as in an autoencoder).
        out_features: the action on output features (default: the input feature action
            when d_out equals the input dimension and one is given, else trivial).
        d_k, d_v: per-head query/key and value dimensions.
        positional: whether the layer has positional encodings.
        hide: apply a random attention symmetry afterwards.
        seed: seed of everything random.

    Raises:
        ValueError: if head_perms is not a homomorphism, or the shapes do not fit.

    Chapter: *Attention* (book/part2/08_attention).
    """
    check_bool("positional", positional), check_bool("hide", hide)
    G = action_in.group
    if isinstance(head_perms, dict):
        head_perms = np.stack([np.asarray(head_perms[g] if g in head_perms else head_perms[g.name]) for g in G])
    tau = np.asarray(head_perms, dtype=np.int64)
    if tau.ndim != 2 or tau.shape[0] != G.order:
        raise ValueError(f"head_perms must have shape ({G.order}, H), got {tau.shape}")
    H = tau.shape[1]
    if not all(sorted(row) == list(range(H)) for row in tau.tolist()):
        raise ValueError("every row of head_perms must be a permutation of the heads")
    if _permutation_homomorphism_error(G, tau) != 0:
        raise ValueError("head_perms is not a homomorphism: τ(a·b) ≠ τ(a)∘τ(b) for some a, b")
    n, d_in = action_in.n_tokens, action_in.token_dim
    d_out = d_in if d_out is None else int(d_out)
    if out_features is None and d_out == d_in and action_in.feature_action is not None:
        out_features = action_in.feature_action
    if out_features is not None and (out_features.dim != d_out or out_features.group != G):
        raise ValueError(f"out_features must be an action of {G.name} on R^{d_out}")
    gen = torch_generator(seed)
    layer = MultiHeadAttention(n, d_in, d_out, H, d_k=d_k, d_v=d_v, positional=positional, seed=gen)
    R = {g.index: action_in.feature_matrix(g) for g in G}
    Rit = {i: torch.linalg.inv(m).T for i, m in R.items()}
    S = {g.index: (out_features.matrix(g) if out_features is not None else torch.eye(d_out)) for g in G}
    WQ, WK, WV, WO = (torch.zeros_like(p) for p in (layer.W_Q, layer.W_K, layer.W_V, layer.W_O))
    done = np.zeros(H, dtype=bool)
    with torch.no_grad():
        for h0 in range(H):
            if done[h0]:
                continue
            stab = [s for s in G if tau[s.index, h0] == h0]
            q0, k0, v0, o0 = layer.W_Q[h0], layer.W_K[h0], layer.W_V[h0], layer.W_O[h0]
            # twirls: s·W_Q = W_Q A_s, s·W_K = W_K A_s^{-T}, s·W_V = W_V B_s, W_O S_s^T = B_s^{-1} W_O,
            # with A, B copies of the stabilizer's regular representation, or trivial (A_s = I) when
            # that keeps more rank (e.g. R_s = I forces the regular twirl of W_Q to rank < d_k)
            def twirl_qk(A):
                return (sum(Rit[s.index] @ q0 @ torch.linalg.inv(a) for s, a in zip(stab, A)) / len(stab),
                        sum(Rit[s.index] @ k0 @ a.T for s, a in zip(stab, A)) / len(stab))

            def twirl_vo(B):
                return (sum(Rit[s.index] @ v0 @ torch.linalg.inv(b) for s, b in zip(stab, B)) / len(stab),
                        sum(torch.linalg.inv(b) @ o0 @ torch.linalg.inv(S[s.index]).T
                            for s, b in zip(stab, B)) / len(stab))

            q, k = _most_rank(twirl_qk([_regular_block(stab, s, d_k) for s in stab]),
                              twirl_qk([torch.eye(d_k)] * len(stab)))
            v, o = _most_rank(twirl_vo([_regular_block(stab, s, d_v) for s in stab]),
                              twirl_vo([torch.eye(d_v)] * len(stab)))
            for g in G:
                h = int(tau[g.index, h0])
                if done[h]:
                    continue
                WQ[h], WK[h], WV[h] = Rit[g.index] @ q, Rit[g.index] @ k, Rit[g.index] @ v
                WO[h] = o @ S[g.index].T
                done[h] = True
        layer.W_Q.copy_(WQ), layer.W_K.copy_(WK), layer.W_V.copy_(WV), layer.W_O.copy_(WO)
        if layer.P is not None:
            P0 = layer.P.clone()
            layer.P.copy_(sum(action_in.permute_tokens(g, P0) @ R[g.index].T for g in G) / G.order)
    planted = {g: tau[g.index].copy() for g in G}
    if hide:
        sym = sample_attention_symmetry(layer, seed=spawn(seed, "hiding symmetry"))
        layer = apply_attention_symmetry(layer, sym)
        new_from_old = sym.perm.numpy()  # new head h is old head new_from_old[h]
        slot = np.argsort(new_from_old)  # old head h sits in slot[h]
        # τ'(slot[h]) = slot[τ(h)], i.e. τ' = slot ∘ τ ∘ slot^{-1}
        planted = {g: slot[t[new_from_old]] for g, t in planted.items()}
    return PlantedAttention(layer, planted, action_in, out_features, hide)
