"""Recovering the latent action of G on attention layers: head matching and bases.

The adjunction moves g onto the parameters (:func:`transport_parameters`); heads are
matched by their products (:func:`head_products`, :func:`match_heads`), the per-head
changes of basis are fitted jointly for each (query, key) and (value, output) pair, and
heads and tokens are matched again from the activations
(:func:`recover_token_permutation`). :func:`recover_attention_action` does all of it for
one layer and :func:`recover_attention_network` layer by layer.

Chapter: *Attention* (book/part2/08_attention).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ...actions import Action, MatrixAction, equivariance_residual
from ...groups import FiniteGroup, GroupElement
from ...models.attention import AttentionNetwork, MultiHeadAttention
from ...models.base import Model
from ...seeds import torch_generator
from ...symmetries import best_assignment
from ...validation import check_float, check_tensor, show
from .tokens import ByElement, TokenAction, _permutation_homomorphism_error

__all__ = ["head_products", "transport_parameters", "match_heads", "recover_token_permutation",
           "AttentionLatentAction", "recover_attention_action", "recover_attention_network"]

Tensor = torch.Tensor


# -- parameters -----------------------------------------------------------------------
def _layer(model: MultiHeadAttention | AttentionNetwork) -> MultiHeadAttention:
    if isinstance(model, MultiHeadAttention):
        return model
    if isinstance(model, AttentionNetwork):
        if model.depth != 1:
            raise ValueError(f"head matching works layer by layer; pass one layer (this network has depth {model.depth})")
        return model.layers[0]
    raise TypeError(f"model must be a MultiHeadAttention layer or an AttentionNetwork, got {type(model).__name__}")


def _check_token_action(layer: MultiHeadAttention, action_in: object) -> TokenAction:
    """action_in must be a TokenAction on the layer's (n, d_in) tokens."""
    if not isinstance(action_in, TokenAction):
        raise TypeError(f"action_in must be a TokenAction, got {type(action_in).__name__} {show(action_in)}")
    if (action_in.n_tokens, action_in.token_dim) != tuple(layer.in_shape):
        raise ValueError(f"action_in acts on ({action_in.n_tokens}, {action_in.token_dim}) tokens, "
                         f"the layer takes {tuple(layer.in_shape)}")
    return action_in


def head_products(layer: MultiHeadAttention) -> tuple[Tensor, Tensor]:
    """The per-head products Q^h = W_Q^h W_K^{hᵀ} (H, d_in, d_in) and O^h = W_V^h W_O^h
    (H, d_in, d_out). They do not change under per-head changes of basis
    (W_Q A, W_K A^{-ᵀ}, W_V B, B^{-1} W_O) and are permuted by head permutations.

    Chapter: *Attention*.
    """
    layer = _layer(layer)
    with torch.no_grad():
        return layer.W_Q @ layer.W_K.transpose(-1, -2), layer.W_V @ layer.W_O


def transport_parameters(layer: MultiHeadAttention, action_in: TokenAction, g: GroupElement,
                         out_features: Tensor | None = None) -> dict[str, Tensor]:
    """g·θ: the parameters with f(·; g·θ) = g·f(g^{-1}·(·); θ) (the adjunction).

    Args:
        layer: the attention layer.
        action_in: the action on input tokens (Π_g, R_g).
        g: the group element.
        out_features: U_g (d_out, d_out), the action on output features (default I;
            the output tokens are permuted by Π_g).

    Returns:
        dict with W_Q, W_K, W_V (H, d_in, ·), W_O (H, d_v, d_out) and P (n, d_in) or None.

    Chapter: *Attention*.
    """
    layer = _layer(layer)
    _check_token_action(layer, action_in)
    d_out = layer.out_shape[1]
    if out_features is not None:
        check_tensor("out_features", out_features, ndim=2, dtypes="float", finite=True)
        if tuple(out_features.shape) != (d_out, d_out):
            raise ValueError(f"out_features must be the matrix U_g of shape ({d_out}, {d_out}), "
                             f"got shape {tuple(out_features.shape)}")
    R = action_in.feature_matrix(g).to(layer.W_Q)
    Rit = torch.linalg.inv(R).T
    S = torch.eye(d_out) if out_features is None else out_features.to(layer.W_Q)
    with torch.no_grad():
        out = {name: Rit @ getattr(layer, name) for name in ("W_Q", "W_K", "W_V")}
        out["W_O"] = layer.W_O @ S.T
        out["P"] = None if layer.P is None else action_in.permute_tokens(g, layer.P) @ R.T
    return out


def _rel(a: Tensor, b: Tensor) -> Tensor:
    """‖a − b‖ / max(‖b‖, tiny), over the last two axes."""
    return (a - b).flatten(-2).norm(dim=-1) / b.flatten(-2).norm(dim=-1).clamp_min(1e-12)


def _partner_system_checked(W1: Tensor, W1g: Tensor, W2: Tensor, W2g: Tensor) -> tuple[Tensor, ...]:
    """The four factors in float64, after checking they fit (H, m, d), (H, m, d),
    (H, p, d), (H, p, d) (ValueError otherwise)."""
    if W1.dim() != 3 or W1g.shape != W1.shape or W2.dim() != 3 or W2g.shape != W2.shape \
            or W2.shape[0] != W1.shape[0] or W2.shape[-1] != W1.shape[-1]:
        raise ValueError(f"the partner-basis fit needs W1, W1g of shape (H, m, d) and W2, W2g of shape "
                         f"(H, p, d), got {tuple(W1.shape)}, {tuple(W1g.shape)}, {tuple(W2.shape)}, "
                         f"{tuple(W2g.shape)}")
    return tuple(w.detach().double() for w in (W1, W1g, W2, W2g))


def _pick_partner_basis(C0: Tensor, project_free, gen: torch.Generator, tries: int) -> Tensor:
    """The best-conditioned of the candidates C0 (minimum norm), C0 + P(I − C0) (nearest
    to I) and C0 + scale·P(Z) for ``tries`` draws Z ~ N(0, I) of d × d matrices, P the
    orthogonal projection onto the free directions (``project_free``). P(Z) is a
    standard Gaussian on the free subspace whatever basis of it a solver uses, so the
    dense and the structured solver draw the same candidates from the same generator."""
    d = C0.shape[-1]
    eye = torch.eye(d, dtype=C0.dtype)
    candidates = [C0, C0 + project_free(eye - C0)]
    scale = float(C0.norm()) / d ** 0.5 + 1.0
    candidates += [C0 + scale * project_free(torch.randn(d, d, generator=gen, dtype=C0.dtype))
                   for _ in range(tries)]
    conds = [float((sv := torch.linalg.svdvals(c))[-1] / sv[0].clamp_min(1e-300)) for c in candidates]
    return candidates[int(np.argmax(conds))]


def _partner_report(C: Tensor, W1: Tensor, W1g: Tensor, W2: Tensor, W2g: Tensor, dtype) -> tuple[Tensor, float]:
    """(C in ``dtype``, the worse relative error of W1 C = W1g and W2 C^{-ᵀ} = W2g; ∞
    when some C_h is singular, σ_min ≤ 1e-10 σ_max)."""
    sv = torch.linalg.svdvals(C)
    if not bool((sv[:, -1] > 1e-10 * sv[:, 0]).all()):
        return C.to(dtype), float("inf")
    err1 = _rel(W1 @ C, W1g).max()
    err2 = _rel(W2 @ torch.linalg.inv(C).mT, W2g).max()
    return C.to(dtype), float(max(err1, err2))


def _fit_partner_basis(W1: Tensor, W1g: Tensor, W2: Tensor, W2g: Tensor, rcond: float = 1e-6,
                       tries: int = 8) -> tuple[Tensor, float]:
    r"""Per head, an invertible C (d, d) with W1 C = W1g and W2 C^{-ᵀ} = W2g, and the
    worse relative error of the two relations.

    **What is minimised.** Both relations are imposed together; the second is linear
    in C once written as W2 = W2g Cᵀ. Per head, C minimises

    .. math:: F(C) = a\,\|W_1 C - W_1^g\|^2 + b\,\|W_2^g C^\top - W_2\|^2,
              \qquad a = \|W_1^g\|^{-2},\; b = \|W_2\|^{-2}

    (the weights give both relations equal say). Fitting C to W1 alone would leave it
    undetermined when W1 has rank < d (a degenerate head), and the minimum-norm
    solution would then be singular.

    **Why the normal equations are a Sylvester equation.** ½∇F = a W1ᵀ(W1 C − W1g)
    + b (C W2gᵀ − W2ᵀ) W2g, so ∇F = 0 reads

    .. math:: P C + C Q = R,\quad P = a W_1^\top W_1,\; Q = b\,W_2^{g\top} W_2^g,\;
              R = a W_1^\top W_1^g + b W_2^\top W_2^g,

    i.e. (P ⊗ I + I ⊗ Q) vec C = vec R with row-major vec: the Gram matrix MᵀM of the
    stacked Kronecker system M vec C = rhs (M = [√a W1 ⊗ I; √b (I ⊗ W2g)·swap], (m+p)d
    rows, d² columns) that :func:`_fit_partner_basis_dense` solves. With the SVDs
    W1 = U1 Σ1 V1ᵀ and W2g = U2 Σ2 V2ᵀ (V1, V2 orthogonal d × d, the σ's padded with
    zeros to d), P = V1 diag(λ) V1ᵀ, Q = V2 diag(μ) V2ᵀ with λ_i = a σ1_i², μ_j = b σ2_j²,
    and in the coordinates C̃ = V1ᵀ C V2 the equations decouple:

    .. math:: (\lambda_i + \mu_j)\,\tilde C_{ij} = \tilde R_{ij},\qquad
              \tilde R = a\,\Sigma_1 U_1^\top W_1^g V_2 + b\,V_1^\top W_2^\top U_2 \Sigma_2 .

    So the columns of V1 ⊗ V2 are right singular vectors of M, with singular values
    s_ij = √(λ_i + μ_j): this *is* the SVD of M, got from two SVDs of the m × d and
    p × d factors, O((m + p) d²) per head instead of O((m + p) d⁵) time and (m + p) d³
    memory. R̃ is formed from the SVD factors, not from W1ᵀW1, so the condition number
    is not squared: each entry is as accurate as the dense SVD's Uᵀ rhs / s.

    **Singular and rank-deficient systems.** s_ij = 0 iff λ_i = μ_j = 0, i.e. v1_i ∈
    ker W1 and v2_j ∈ ker W2g; then R̃_ij = 0 as well (the normal equations are always
    consistent) and F does not depend on C̃_ij. As in the dense solve, every (i, j) with
    s_ij ≤ ``rcond`` · max s is dropped: C̃_ij = 0 there (the minimum-norm least-squares
    solution C0, the pseudo-inverse's) and those directions, span{v1_i v2_jᵀ}, are the
    free ones, projected onto by X ↦ V1 (N ⊙ V1ᵀ X V2) V2ᵀ (N the dropped mask). When
    there are any, the best-conditioned of a few solutions is taken: C0, the one nearest
    to I (I itself for g = e) and ``tries`` seeded generic ones (det is a polynomial on
    the affine solution space, so a generic solution is invertible whenever any is;
    :func:`_pick_partner_basis`). The error uses C^{-1}; it is ∞ when no invertible C
    was found. Two things differ from the dense solve as first written, neither in
    what is chosen from: the generic candidates are drawn as projections of d × d
    Gaussians (the same law as Gaussian coordinates in a basis of the free space, but
    the same draws whatever basis a solver finds), and when m + p < d the free space
    is complete (a thin SVD of M missed the directions beyond its (m + p) d rows).

    Args:
        W1, W1g: (H, m, d); W2, W2g: (H, p, d).
        rcond: relative cut-off on the singular values s_ij of the joint system.
        tries: number of generic candidates when the system leaves freedom.

    Returns:
        (C (H, d, d) in W1's dtype, the worse relative error over heads and relations).
    """
    dtype = W1.dtype
    W1, W1g, W2, W2g = _partner_system_checked(W1, W1g, W2, W2g)
    H, d = W1.shape[0], W1.shape[-1]
    a = W1g.flatten(-2).norm(dim=-1).clamp_min(1e-12) ** -2  # equal weight to both relations
    b = W2.flatten(-2).norm(dim=-1).clamp_min(1e-12) ** -2
    U1, s1, V1h = torch.linalg.svd(W1, full_matrices=True)   # V1h (H, d, d), s1 (H, min(m, d))
    U2, s2, V2h = torch.linalg.svd(W2g, full_matrices=True)
    r1, r2 = s1.shape[-1], s2.shape[-1]
    V1, V2 = V1h.mT, V2h.mT
    Rt = W1.new_zeros(H, d, d)
    Rt[:, :r1] += a[:, None, None] * s1[..., None] * (U1[..., :r1].mT @ W1g @ V2)
    Rt[:, :, :r2] += b[:, None, None] * (V1h @ W2.mT @ U2[..., :r2]) * s2[:, None]
    lam = W1.new_zeros(H, d)
    lam[:, :r1] = a[:, None] * s1 ** 2
    mu = W1.new_zeros(H, d)
    mu[:, :r2] = b[:, None] * s2 ** 2
    D = lam[:, :, None] + mu[:, None, :]                      # s_ij² (H, d, d)
    s = D.sqrt()
    keep = s > rcond * s.flatten(1).max(dim=1).values[:, None, None]
    Ct = torch.where(keep, Rt / torch.where(keep, D, torch.ones_like(D)), torch.zeros_like(D))
    C = V1 @ Ct @ V2h
    gen = torch_generator(0)
    for h in range(H):
        if bool(keep[h].all()):
            continue
        free = (~keep[h]).to(W1.dtype)
        C[h] = _pick_partner_basis(C[h], lambda X, h=h, free=free: V1[h] @ (free * (V1h[h] @ X @ V2[h])) @ V2h[h],
                                   gen, tries)
    return _partner_report(C, W1, W1g, W2, W2g, dtype)


def _fit_partner_basis_dense(W1: Tensor, W1g: Tensor, W2: Tensor, W2g: Tensor, rcond: float = 1e-6,
                             tries: int = 8) -> tuple[Tensor, float]:
    """The reference for :func:`_fit_partner_basis` (tests and benchmarks only): the same
    least-squares problem solved by a dense SVD of the Kronecker system M vec(C) = rhs,
    (m + p) d rows × d² columns in float64, O((m + p) d⁵) time and (m + p) d³ memory per
    head. The free directions are the right singular vectors with dropped singular
    values, completed by a full SVD when M has fewer rows than columns."""
    dtype = W1.dtype
    W1, W1g, W2, W2g = _partner_system_checked(W1, W1g, W2, W2g)
    H, d = W1.shape[0], W1.shape[-1]
    eye = torch.eye(d, dtype=W1.dtype)
    # row-major vec(C): vec(W1 C) = M1 vec(C), vec(W2g Cᵀ) = M2 vec(C)
    M1 = torch.einsum("hai,jk->hajik", W1, eye).reshape(H, -1, d * d)
    M2 = torch.einsum("haj,ik->haikj", W2g, eye).reshape(H, -1, d * d)
    w1 = W1g.flatten(-2).norm(dim=-1).clamp_min(1e-12)[:, None, None]  # equal weight to both relations
    w2 = W2.flatten(-2).norm(dim=-1).clamp_min(1e-12)[:, None, None]
    M = torch.cat([M1 / w1, M2 / w2], dim=1)
    rhs = torch.cat([W1g.reshape(H, -1) / w1[..., 0], W2.reshape(H, -1) / w2[..., 0]], dim=1)
    U, s, Vh = torch.linalg.svd(M, full_matrices=M.shape[1] < d * d)
    U = U[..., :s.shape[-1]]
    gen = torch_generator(0)
    Cs = []
    for h in range(H):
        keep = s[h] > rcond * s[h, 0]
        c0 = Vh[h, :len(keep)][keep].T @ ((U[h, :, keep].T @ rhs[h]) / s[h, keep])
        null = Vh[h, int(keep.sum()):]  # directions the two relations leave free
        C0 = c0.reshape(d, d)
        if len(null):
            C0 = _pick_partner_basis(C0, lambda X, null=null: (null.T @ (null @ X.reshape(-1))).reshape(d, d),
                                     gen, tries)
        Cs.append(C0)
    return _partner_report(torch.stack(Cs), W1, W1g, W2, W2g, dtype)


def _per_head(t: Tensor) -> Tensor:
    """(N, H, n, m) activations → (H, N·n, m), one block per head for :func:`_rel`."""
    return t.transpose(0, 1).reshape(t.shape[1], -1, t.shape[-1])


def _tie_classes(signature: Tensor, tol: float) -> list[np.ndarray]:
    """Classes of heads whose signatures (H, ·, ·) coincide up to relative error tol."""
    from scipy.sparse.csgraph import connected_components

    close = _rel(signature[:, None], signature[None, :]) <= tol
    k, labels = connected_components((close | close.T).numpy(), directed=False)
    return [np.flatnonzero(labels == c) for c in range(k)]


def _assign(cost: Tensor) -> np.ndarray:
    """The permutation t minimising Σ_h cost[h, t[h]]."""
    return best_assignment(cost, maximize=False).numpy()


def _match_heads_from_activations(cost_maps: Tensor, cost_out: Tensor, maps_gx: Tensor, out_gx: Tensor,
                                  tau_weights: np.ndarray, tol: float) -> tuple[np.ndarray, list[list[int]]]:
    """τ_g from activations: the attention maps first; among heads of g·X whose maps
    coincide (equal Q products give equal maps), the per-head outputs decide; among
    heads whose maps and outputs both coincide (interchangeable on the probes), the
    weights' τ_g is taken when it maps the tied heads onto themselves.

    Returns:
        (tau, ties): tau (H,) and the classes of heads of g·X (size > 1) that the
        activations could not tell apart.
    """
    tau = _assign(cost_maps)
    ties = []
    for cls in _tie_classes(_per_head(maps_gx), tol):
        if len(cls) < 2:
            continue
        src = np.flatnonzero(np.isin(tau, cls))  # heads of X sent into this class
        tau[src] = cls[_assign(cost_out[src][:, cls])]
        for sub in _tie_classes(_per_head(out_gx)[cls], tol):
            if len(sub) < 2:
                continue
            sub = cls[sub]
            ties.append(sorted(int(j) for j in sub))
            src = np.flatnonzero(np.isin(tau, sub))
            if set(tau_weights[src].tolist()) == set(sub.tolist()):
                tau[src] = tau_weights[src]
    return tau, ties


def match_heads(layer: MultiHeadAttention, action_in: TokenAction, g: GroupElement,
                out_features: Tensor | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The head permutation τ_g read off the parameters.

    Transports the head products by g and matches them to the original ones:
    cost[h, j] = rel. error of Q^j vs (g·Q)^h + rel. error of O^j vs (g·O)^h, solved by
    ``best_assignment`` (eqlib.symmetries); τ_g(h) = j.

    Returns:
        (tau, cost, residual): tau (H,), the cost matrix (H, H), and per head the
        matched cost (0 for an exactly equivariant layer).

    Chapter: *Attention*.
    """
    layer = _layer(layer)
    moved = transport_parameters(layer, action_in, g, out_features)
    Q, O = head_products(layer)
    Qg, Og = moved["W_Q"] @ moved["W_K"].transpose(-1, -2), moved["W_V"] @ moved["W_O"]
    cost = (_rel(Qg[:, None], Q[None, :]) + _rel(Og[:, None], O[None, :])).numpy()
    tau = best_assignment(torch.as_tensor(cost), maximize=False).numpy()
    return tau, cost, cost[np.arange(layer.heads), tau]


def recover_token_permutation(maps_x: Tensor, maps_gx: Tensor) -> tuple[np.ndarray, float]:
    """The token permutation π with maps_gx ≈ Π maps_x Πᵀ, from attention maps alone.

    Permuting the keys only reorders a row, so each query token's *sorted* attention row
    is a fingerprint; matching fingerprints of g·X to those of X
    (an optimal assignment) gives π: token i moves to π[i].

    Args:
        maps_x, maps_gx: attention maps (N, H', n, n) of X and g·X, heads already
            matched (head k of maps_gx corresponds to head k of maps_x).

    Returns:
        (pi, residual): pi (n,), and ‖maps_gx − Π maps_x Πᵀ‖ / ‖maps_gx‖.

    Chapter: *Attention*.
    """
    check_tensor("maps_x", maps_x, dtype="float"), check_tensor("maps_gx", maps_gx, dtype="float")
    if maps_gx.shape != maps_x.shape:
        raise ValueError(f"maps_gx must have the shape of maps_x, {tuple(maps_x.shape)}, got "
                         f"{tuple(maps_gx.shape)}")
    if maps_x.dim() != 4 or maps_x.shape[-1] != maps_x.shape[-2]:
        raise ValueError(f"maps_x and maps_gx must be attention maps (N, H, n, n), got shape "
                         f"{tuple(maps_x.shape)}")
    dt = torch.promote_types(maps_x.dtype, maps_gx.dtype)  # cdist needs float32 or float64
    dt = dt if dt in (torch.float32, torch.float64) else torch.float32
    maps_x, maps_gx = maps_x.detach().to(dt), maps_gx.detach().to(dt)
    n = maps_x.shape[-1]
    fx = maps_x.sort(dim=-1).values.permute(2, 0, 1, 3).reshape(n, -1)
    fg = maps_gx.sort(dim=-1).values.permute(2, 0, 1, 3).reshape(n, -1)
    pi = best_assignment(torch.cdist(fx, fg), maximize=False).numpy()
    inv = torch.as_tensor(np.argsort(pi))
    moved = maps_x[..., inv, :][..., inv]
    return pi, float((maps_gx - moved).norm() / maps_gx.norm().clamp_min(1e-12))


# -- the recovery ---------------------------------------------------------------------
@dataclass
class AttentionLatentAction:
    """What :func:`recover_attention_action` found, per group element.

    Every field below is a ``ByElement`` mapping keyed by group element
    (``res.head_perm[g]``); a name works too (``res.head_perm["m"]``).

    Attributes:
        head_perm: τ_g from the parameters (head h on X ↔ head τ_g(h) on g·X).
        head_perm_maps: τ_g from the activations of X and g·X: matched by the attention
            maps; heads whose maps coincide (equal Q products give equal maps) are told
            apart by their outputs, head τ(h) on g·X giving Π_g (head h on X) U_gᵀ.
        head_ties: classes of heads of g·X (lists, only those of size > 1) whose maps
            and outputs coincide on the probes, so the activations cannot tell them
            apart; within such a class ``head_perm_maps`` takes ``head_perm``'s choice
            when that maps the class onto itself (empty list: no ties).
        token_perm: π_g recovered from the attention maps (token i moves to π_g[i]).
        token_perm_given: π_g of the input action.
        A, B: per-head changes of basis (H, d_k, d_k), (H, d_v, d_v) with
            R_g^{-ᵀ} W_Q^h = W_Q^{τ(h)} E_h, R_g^{-ᵀ} W_K^h = W_K^{τ(h)} E_h^{-ᵀ} and
            R_g^{-ᵀ} W_V^h = W_V^{τ(h)} F_h, W_O^h U_gᵀ = F_h^{-1} W_O^{τ(h)}, each pair
            fitted jointly by least squares (unique when the head's factors have full
            rank; for a degenerate head, one invertible solution).
        head_residual: per head, the matched product cost (0 when exact).
        basis_residual: worst rel. error of the four relations above (∞ when no
            invertible E_h or F_h was found).
        positional_residual: ‖Π_g P R_gᵀ − P‖/‖P‖ (0 iff P is equivariant; None w/o P).
        maps_residual: ‖maps(g·X)[τ(h)] − Π maps(X)[h] Πᵀ‖ / ‖maps(g·X)‖.
        maps_residual_maps: the same with τ read from the attention maps
            (``head_perm_maps``): how well the maps' own head matching explains them.
        maps_residual_best: the smallest maps residual over *every* head permutation τ
            (an assignment problem on the heads' squared distances, solved exactly): no
            head permutation explains the maps better.
        output_residual: ‖f(g·X) − g·f(X)‖ / ‖f(X)‖.
        head_space_residual: max over heads of ‖Y_{τ(h)}(g·X) − Π_g Y_h(X) F_h^{-1}‖ / ‖·‖,
            Y_h the head value outputs (:meth:`eqlib.models.attention.MultiHeadAttention.head_values`): the
            latent action on the per-head space (R^{n×d_v})^H.
        S: the action U_g on output features that was used (d_out, d_out).
        tol: the tolerance behind :attr:`equivariant`.

    Chapter: *Attention*.
    """

    group: FiniteGroup
    head_perm: dict[str, np.ndarray] = field(default_factory=dict)
    head_perm_maps: dict[str, np.ndarray] = field(default_factory=dict)
    head_ties: dict[str, list[list[int]]] = field(default_factory=dict)
    token_perm: dict[str, np.ndarray] = field(default_factory=dict)
    token_perm_given: dict[str, np.ndarray] = field(default_factory=dict)
    A: dict[str, Tensor] = field(default_factory=dict)
    B: dict[str, Tensor] = field(default_factory=dict)
    head_residual: dict[str, np.ndarray] = field(default_factory=dict)
    basis_residual: dict[str, float] = field(default_factory=dict)
    positional_residual: dict[str, float | None] = field(default_factory=dict)
    maps_residual: dict[str, float] = field(default_factory=dict)
    maps_residual_maps: dict[str, float] = field(default_factory=dict)
    maps_residual_best: dict[str, float] = field(default_factory=dict)
    output_residual: dict[str, float] = field(default_factory=dict)
    head_space_residual: dict[str, float] = field(default_factory=dict)
    S: dict[str, Tensor] = field(default_factory=dict)
    tol: float = 1e-4

    def __post_init__(self):
        for f in ("head_perm", "head_perm_maps", "head_ties", "token_perm", "token_perm_given", "A", "B",
                  "head_residual", "basis_residual", "positional_residual", "maps_residual", "maps_residual_maps",
                  "maps_residual_best", "output_residual", "head_space_residual", "S"):
            setattr(self, f, ByElement(self.group, getattr(self, f)))

    @property
    def equivariant(self) -> bool:
        """True when every residual is below ``tol`` and both head matchings and both
        token permutations agree, for every element."""
        for g in self.head_perm:
            worst = max(float(self.head_residual[g].max()), self.basis_residual[g], self.maps_residual[g],
                        self.output_residual[g], self.positional_residual[g] or 0.0,
                        self.head_space_residual.get(g, 0.0))
            if not worst <= self.tol:
                return False
            if not np.array_equal(self.head_perm[g], self.head_perm_maps[g]):
                return False
            if not np.array_equal(self.token_perm[g], self.token_perm_given[g]):
                return False
        return True

    def is_homomorphism(self) -> bool:
        """Whether g ↦ τ_g respects products: τ_{ab} = τ_a ∘ τ_b (Remark 4.2 of the paper)."""
        G = self.group
        return _permutation_homomorphism_error(G, np.stack([self.head_perm[g] for g in G])) == 0

    def feature_homomorphism_error(self) -> float:
        """max over pairs (a, b) of ‖U_{ab} − U_a U_b‖ / ‖U_{ab}‖: whether g ↦ U_g, the
        action on output features, is a homomorphism."""
        G, worst = self.group, 0.0
        for a in G:
            for b in G:
                Sab = self.S[a @ b]
                worst = max(worst, float((Sab - self.S[a] @ self.S[b]).norm() / Sab.norm()))
        return worst

    def worst_residual(self) -> float:
        return max(max(float(self.head_residual[g].max()), self.basis_residual[g], self.maps_residual[g],
                       self.output_residual[g], self.positional_residual[g] or 0.0,
                       self.head_space_residual.get(g, 0.0)) for g in self.head_perm)

    def summary(self) -> str:
        lines = [f"latent action of {self.group.name} on an attention layer: "
                 + ("EQUIVARIANT (all residuals < %.0e)" % self.tol if self.equivariant
                    else "NOT equivariant: no parameter symmetry relates g·θ to θ (worst residual %.3g)"
                    % self.worst_residual())]
        for g in self.head_perm:
            pos = self.positional_residual[g]
            lines.append(
                f"  {g.name}: heads h→τ(h) {self.head_perm[g].tolist()} (maps say {self.head_perm_maps[g].tolist()}"
                + (f"; heads {self.head_ties[g]} look alike" if self.head_ties.get(g) else "") + "), "
                f"tokens {self.token_perm[g].tolist()}"
                + ("" if np.array_equal(self.token_perm[g], self.token_perm_given[g]) else
                   f" (input action: {self.token_perm_given[g].tolist()})")
                + f"; residuals: heads {float(self.head_residual[g].max()):.2g}, bases {self.basis_residual[g]:.2g}, "
                f"maps {self.maps_residual[g]:.2g}, output {self.output_residual[g]:.2g}, "
                f"head space {self.head_space_residual.get(g, float('nan')):.2g}"
                + ("" if pos is None else f", positional {pos:.2g}"))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def recover_attention_action(layer: MultiHeadAttention | AttentionNetwork, action_in: TokenAction, x: Tensor,
                             *, out_features: Action | None = None, tol: float = 1e-4) -> AttentionLatentAction:
    """Recover the latent action of G on an attention layer (the theorem's proof for attention).

    For every g: transport θ by the adjunction, match heads by their products (τ_g),
    solve for the per-head changes of basis E_h, F_h, check the positional encodings,
    match heads again from the attention maps of X and g·X (heads with coinciding maps
    told apart by their outputs), and recover the token permutation from the matched
    maps.

    Args:
        layer: a MultiHeadAttention layer (or a depth-1 AttentionNetwork).
        action_in: how G acts on input tokens (see :class:`~eqlib.latent.attention.TokenAction`).
        x: probe inputs (N, n, d_in).
        out_features: the action of G on output features (default: the input feature
            action when the layer keeps the token dimension, as in an autoencoder, else
            trivial; pass :func:`eqlib.actions.trivial` for invariant features); output
            tokens are permuted like the input's.
        tol: tolerance for :attr:`~eqlib.latent.attention.AttentionLatentAction.equivariant`.

    Returns:
        An :class:`~eqlib.latent.attention.AttentionLatentAction`; its ``summary()`` says whether the layer is
        equivariant and, when not, how far it is.

    Raises:
        ValueError: on shape mismatches between the layer, the action and x.

    Chapter: *Attention* (book/part2/08_attention).
    """
    layer = _layer(layer)
    n, d_in = layer.in_shape
    _check_token_action(layer, action_in)
    check_tensor("x", x, dtypes="float", finite=True)
    if x.dim() != 3 or tuple(x.shape[1:]) != (n, d_in) or x.shape[0] == 0:
        raise ValueError(f"x must have shape (N, {n}, {d_in}) with N >= 1, got {tuple(x.shape)}")
    tol = check_float("tol", tol, low=0, low_open=True)
    d_out = layer.out_shape[1]
    if out_features is None and d_out == d_in and action_in.feature_action is not None:
        out_features = action_in.feature_action
    if out_features is not None and not isinstance(out_features, Action):
        raise TypeError(f"out_features must be an Action (U_g on the output features) or None, "
                        f"got {type(out_features).__name__} {show(out_features)}")
    if out_features is not None and (out_features.dim != d_out or out_features.group != action_in.group):
        raise ValueError(f"out_features must be an action of {action_in.group.name} on R^{d_out}, got one of "
                         f"{out_features.group.name} on R^{out_features.dim}")
    G = action_in.group
    res = AttentionLatentAction(G, tol=tol)
    action_out = TokenAction(G, out_features, d_out, token_perms=action_in.perms)
    with torch.no_grad():
        maps_x, fx, out_x = layer.attention_maps(x), layer(x), layer.head_outputs(x)
        for g in G:
            S = out_features.matrix(g) if out_features is not None else torch.eye(d_out)
            tau, _, resid = match_heads(layer, action_in, g, S)
            moved = transport_parameters(layer, action_in, g, S)
            # per-head changes of basis: W_Q^{τ(h)} E_h = (g·W_Q)^h with W_K^{τ(h)} E_h^{-ᵀ} = (g·W_K)^h,
            # and W_V^{τ(h)} F_h = (g·W_V)^h with F_h^{-1} W_O^{τ(h)} = (g·W_O)^h, each pair fitted jointly
            A, err_qk = _fit_partner_basis(layer.W_Q[tau], moved["W_Q"], layer.W_K[tau], moved["W_K"])
            # (the O relation transposed: W_O^{τ(h)ᵀ} F_h^{-ᵀ} = (g·W_O)^{hᵀ}, so the fit gives C = F_h^{-ᵀ})
            C, err_vo = _fit_partner_basis(layer.W_O[tau].mT, moved["W_O"].mT, layer.W_V[tau], moved["W_V"])
            B_inv = C.mT
            B = torch.linalg.inv(B_inv) if np.isfinite(err_vo) else torch.linalg.pinv(B_inv)
            gx = action_in.act(g, x)
            maps_gx = layer.attention_maps(gx)
            pi_given = action_in.token_permutation(g)
            inv = torch.as_tensor(np.argsort(pi_given))
            expected = maps_x[..., inv, :][..., inv]  # Π maps(X) Πᵀ, head by head
            cost = _rel(maps_gx.transpose(0, 1)[None, :], expected.transpose(0, 1)[:, None])
            cost = cost.mean(-1)  # (H, H): expected head h vs head j of g·X
            # each head's output: head τ(h) on g·X gives Π (head h on X) U_gᵀ
            out_gx = layer.head_outputs(gx)
            expected_out = action_in.permute_tokens(g, out_x) @ S.T
            cost_out = _rel(_per_head(out_gx)[None, :], _per_head(expected_out)[:, None])
            tau_maps, ties = _match_heads_from_activations(cost, cost_out, maps_gx, out_gx, tau, tol)
            pi, _ = recover_token_permutation(maps_x, maps_gx[:, torch.as_tensor(tau)])
            name = g
            res.head_perm[name], res.head_perm_maps[name], res.head_ties[name] = tau, tau_maps, ties
            res.token_perm[name], res.token_perm_given[name] = pi, pi_given
            res.A[name], res.B[name] = A, B
            res.head_residual[name] = resid
            res.basis_residual[name] = max(err_qk, err_vo)
            res.positional_residual[name] = None if layer.P is None else float(_rel(moved["P"], layer.P))
            res.maps_residual[name] = float((maps_gx[:, torch.as_tensor(tau)] - expected).norm()
                                            / maps_gx.norm().clamp_min(1e-12))
            res.maps_residual_maps[name] = float((maps_gx[:, torch.as_tensor(tau_maps)] - expected).norm()
                                                 / maps_gx.norm().clamp_min(1e-12))
            res.maps_residual_best[name] = _best_maps_residual(maps_gx, expected)
            residual = equivariance_residual(layer, action_in, action_out, x, g=g, fx=fx)
            res.output_residual[name] = float(residual.norm() / fx.norm().clamp_min(1e-12))
            res.S[name] = S.clone()
            # the per-head space: Y_{τ(h)}(g·X) = Π_g Y_h(X) F_h^{-1}
            y_gx = layer.head_values(gx)[:, torch.as_tensor(tau)]
            y_moved = action_in.permute_tokens(g, layer.head_values(x)) @ B_inv[None]
            res.head_space_residual[name] = float(_rel(y_gx.transpose(0, 1), y_moved.transpose(0, 1)).max())
    return res


def _best_maps_residual(maps_gx: Tensor, expected: Tensor) -> float:
    """min over head permutations τ of ‖maps_gx[:, τ] − expected‖ / ‖maps_gx‖ (heads on dim 1)."""
    G = maps_gx.transpose(0, 1).reshape(maps_gx.shape[1], -1).double()
    E = expected.transpose(0, 1).reshape(expected.shape[1], -1).double()
    # D[h, j] = ‖E_h − G_j‖²: expected head h against head j of g·X
    D = (E * E).sum(1)[:, None] + (G * G).sum(1)[None, :] - 2 * E @ G.T
    tau = best_assignment(D, maximize=False)
    total = D[torch.arange(len(tau)), tau].sum().clamp_min(0)
    return float(total.sqrt() / G.norm().clamp_min(1e-12))


def recover_attention_network(net: Model, action_in: TokenAction, x: Tensor, *, out_features: Action | None = None,
                              tol: float = 1e-4) -> list[AttentionLatentAction]:
    """Layer-by-layer latent actions of a stack of attention layers.

    Tokens are permuted by Π_g in every latent space V_i. The action on the features of
    an intermediate V_i is not known in advance (any M ∈ GL(d_i) can be absorbed by
    W_O ↦ W_O Mᵀ in layer i and W_{Q,K,V} ↦ M^{-ᵀ} W_{Q,K,V}, P_{i+1} ↦ P_{i+1} Mᵀ in
    layer i+1), so it is fitted by least squares,
    ``f_{≤i}(X) U_gᵀ ≈ Π_g^{-1} f_{≤i}(g·X)`` (driver ``gelsd``), and then used as the
    input action of layer i+1.

    Args:
        net: a :class:`~eqlib.models.Model` of MultiHeadAttention layers (positional
            encodings allowed in any layer: P_{i+1} must then satisfy
            Π_g P_{i+1} U_gᵀ = P_{i+1} with the fitted U_g).
        action_in: the action on input tokens.
        x: probe inputs (N, n, d_0); the outputs of every layer but the last must
            span their latent space (else ValueError).
        out_features: the action on the output features (default: the input feature
            action when d_L = d_0, else trivial).
        tol: tolerance of every layer's report.

    Returns:
        One :class:`~eqlib.latent.attention.AttentionLatentAction` per layer.

    Chapter: *Attention* (book/part2/08_attention).
    """
    layers = list(net.layers) if isinstance(net, Model) else None
    if not layers or not all(isinstance(l, MultiHeadAttention) for l in layers):
        raise TypeError(f"net must be a Model whose layers are all MultiHeadAttention layers, "
                        f"got {type(net).__name__}")
    G = action_in.group
    d_last = layers[-1].out_shape[1]
    if out_features is None and action_in.feature_action is not None and d_last == action_in.token_dim:
        out_features = action_in.feature_action
    if out_features is None:
        out_features = MatrixAction(G, torch.eye(d_last).repeat(G.order, 1, 1))
    results, act, h = [], action_in, x
    with torch.no_grad():
        for i, layer in enumerate(layers):
            if i == len(layers) - 1:
                feat = out_features
            else:
                y = layer(h)
                d = y.shape[-1]
                rank = int(torch.linalg.matrix_rank(y.reshape(-1, d)))
                if rank < d:
                    raise ValueError(f"the outputs of layer {i + 1} span only {rank} of {d} dimensions: the latent "
                                     "space has unused directions (a degenerate network), so its action is not "
                                     "determined; use more probes or remove the unused directions")
                mats = []
                for g in G:
                    target = act.permute_tokens(~g, layer(act.act(g, h)))
                    sol = torch.linalg.lstsq(y.reshape(-1, d), target.reshape(-1, d), driver="gelsd").solution
                    mats.append(sol.T)
                feat = MatrixAction(G, torch.stack(mats))
            results.append(recover_attention_action(layer, act, h, out_features=feat, tol=tol))
            h = layer(h)
            act = TokenAction(G, feat, token_perms=action_in.perms)
    return results
