"""Latent actions from the weights: the proof of the main theorem run as an algorithm.

For an MLP layer f_i(y) = σ(W_i y + b_i) and k in the intertwiner group K_i of σ
(σ(k z) = k σ(z)):

.. math:: f_i(k_{i-1} y) = k_i f_i(y)\\ \\forall y
   \\iff [W_i k_{i-1} \\mid b_i] = k_i [W_i \\mid b_i]

(⇐ is one line; ⇒ holds for identifiable parameters). So, for each group element g:
transport g into the first layer (adjunction: W_1 ↦ W_1 ρ_in(g)), then for
i = 1, …, L−1 find k_i(g) by matching the rows of [W_i k_{i-1}(g) | b_i] to those of
[W_i | b_i] (an assignment problem), and last check
[W_L k_{L-1}(g) | b_L] = ρ_out(g) [W_L | b_L].

*Every element is recovered on its own* (not only the generators), so that the
homomorphism property k_i(gh) = k_i(g) k_i(h) is a genuine check of the theorem's
uniqueness argument, not something the construction imposes; it is verified for all g
and all generators s (k(gs) = k(g)k(s) and k(e) = I imply it for all pairs).

Weakly identifiable networks (dead or cloned units) are first reduced with
:func:`eqlib.submodels.reduce`. With the embedding α_i: Ṽ_i → V_i and its left inverse
α_i* (α_i* α_i = I), the action recovered on the reduced network is lifted to

.. math:: k_i(g) = α_i \\tilde k_i(g) α_i^* + (I − α_i α_i^*).

This is a homomorphism (α*(I − αα*) = 0 and (I − αα*)α = 0 kill the cross terms) and
makes f_i equivariant, after discarding the dead units (J_i), on every latent the network
reaches, J_i f_{≤i}(x) = α_i f̃_{≤i}(x): k_{i-1} α_{i-1} ỹ = α_{i-1} k̃_{i-1} ỹ, so
J_i f_i(k_{i-1} α ỹ) = α_i f̃_i(k̃_{i-1} ỹ) = α_i k̃_i f̃_i(ỹ) = k_i α_i f̃_i(ỹ).
(Chapter 6's weak case of the theorem; the reduction's α_i is affine, but its offset
vanishes on the representatives α_i* reads, so the lift is linear.) The lift need not
lie in K_i: it does exactly when k̃_i(g) fixes every class that has a clone. When α_i
only re-inserts removed units (a coordinate inclusion) the lift is again monomial: k̃_i
on the kept units and the identity on the removed ones.

Chapter: *The main theorem* (book/part2/06_main_theorem).
"""
from __future__ import annotations

import numpy as np
import torch

from ..actions import Action, PermutationAction
from ..groups import GroupElement
from ..models.activation import activation_record
from ..models.mlp import Dense
from ..submodels import reduce
from ..symmetries import SymmetryElement, SymmetryGroup
from ..validation import check_bool, check_float, check_tensor
from .result import MonomialAction, dense_action, layer_errors
from .units import match_units

__all__ = ["maybe_degenerate", "lift_action", "mlp_layers", "layer_kind", "hidden_groups", "recover_by_weights",
           "monomial_of"]

Tensor = torch.Tensor

_MATCH_FLAGS = {  # kind → (signed, scaled)
    "permutation": (False, False),
    "signed_permutation": (True, False),
    "scaled_permutation": (False, True),
    "nonzero_scaled_permutation": (True, True),
}


def mlp_layers(model) -> list[Dense]:
    """The Dense layers of an MLP-like model.

    Raises:
        TypeError: if some layer is not an :class:`~eqlib.models.mlp.Dense` layer.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    layers = list(getattr(model, "layers", []))
    if not layers or not all(isinstance(l, Dense) for l in layers):
        raise TypeError(f"model must be an MLP of Dense layers (latent-action recovery from weights), got {type(model).__name__}")
    return layers


def layer_kind(activation) -> str:
    """The kind of K_i for activation σ (a name or its record; see :func:`eqlib.symmetries.symmetry_group`).

    Raises:
        ValueError: for ``"identity"``: a linear hidden layer has K = GL(d), so rows
            cannot be matched; use ``method="lstsq"``.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    sigma = activation_record(activation)
    if sigma.linear:
        raise ValueError("a hidden layer without nonlinearity has symmetry group GL(d): its latent action "
                         "is not determined by matching units; use method='lstsq'")
    return sigma.kind


def hidden_groups(model, matching: bool = True) -> list[SymmetryGroup]:
    """K_1, …, K_{L−1}: each hidden layer's intertwiner group, built once from its
    activation record (``eqlib.models.activation.Activation``).

    Args:
        model: an MLP of Dense layers.
        matching: the groups are for matching units (``"weights"``, ``"activations"``):
            a linear hidden layer (K = GL(d)) is then an error.

    Raises:
        ValueError: with ``matching``, for a hidden layer without nonlinearity.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    layers = mlp_layers(model)
    kinds = [layer_kind(l.activation) if matching else activation_record(l.activation).kind for l in layers[:-1]]
    return [SymmetryGroup(k, l.out_dim) for k, l in zip(kinds, layers)]


def monomial_of(action: Action, g: GroupElement) -> SymmetryElement | None:
    """ρ(g) as a :class:`~eqlib.symmetries.SymmetryElement` when the action is monomial, else None.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    if isinstance(action, MonomialAction):
        return action.element(g)
    if isinstance(action, PermutationAction):
        p = action.permutation(g)
        s = action.signs[g.index] if action.signs is not None else torch.ones(action.dim)
        return SymmetryElement.unchecked(p, s)
    return None


def right_multiply(W: Tensor, k: SymmetryElement | Tensor) -> Tensor:
    """W k for a parameter symmetry k (:meth:`SymmetryElement.right`) or a dense matrix k.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    W = _real("W", W)
    return W @ _real("k", k).to(W) if isinstance(k, Tensor) else k.right(W)


def left_multiply(k: SymmetryElement | Tensor, W: Tensor) -> Tensor:
    """k W for a parameter symmetry k (:meth:`SymmetryElement.left`) or a dense matrix k.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    W = _real("W", W)
    return _real("k", k).to(W) @ W if isinstance(k, Tensor) else k.left(W)


def _real(name: str, x: Tensor) -> Tensor:
    """A real tensor with data (the tensor gate), integers and bools cast to the default
    float dtype: a symmetry is never applied in integer arithmetic; complex is refused."""
    check_tensor(name, x)
    if x.is_complex():
        raise TypeError(f"{name} must be a real tensor, got {x.dtype}")
    return x if x.is_floating_point() else x.to(torch.get_default_dtype())


def _with_bias(layer: Dense, W: Tensor) -> Tensor:
    b = layer.bias if layer.bias is not None else W.new_zeros(W.shape[0])
    return torch.cat([W, b.detach()[:, None]], dim=1)


def _clone_ambiguity(B: Tensor, signed: bool, tol: float) -> int:
    """Number of units whose row [w | b] is parallel to another unit's row (non-unique match)."""
    Bn = B / B.norm(dim=1, keepdim=True).clamp_min(1e-12)
    C = Bn @ Bn.T
    C = C.abs() if signed else C
    C.fill_diagonal_(-2.0)
    zero = B.norm(dim=1) <= 1e-12
    return int(((C >= 1 - tol).any(dim=1) | zero).sum())


def maybe_degenerate(model, cos_tol: float = 1e-4, zero_tol: float = 1e-6) -> bool:
    """Cheap prefilter for :func:`eqlib.submodels.reduce`: could some hidden unit be
    dead (zero outgoing column), constant (zero incoming row) or a clone (row [w | b]
    parallel to another's, ``|cosine|`` ≥ 1 − cos_tol)? False means reduce finds nothing.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    check_float("cos_tol", cos_tol, 0.0), check_float("zero_tol", zero_tol, 0.0)
    layers = mlp_layers(model)
    with torch.no_grad():
        for i in range(len(layers) - 1):
            W = layers[i].weight
            if bool((W.abs().amax(dim=1) <= zero_tol).any()):
                return True
            if bool((layers[i + 1].weight.abs().amax(dim=0) <= zero_tol).any()):
                return True
            if _clone_ambiguity(_with_bias(layers[i], W), True, cos_tol):
                return True
    return False


def _rel(a: Tensor, b: Tensor) -> float:
    return float((a - b).norm() / a.norm().clamp_min(1e-12))


def recover_by_weights(model, rho_in: Action, rho_out: Action, tol: float = 1e-4, *, check_clones: bool = True,
                       groups: list[SymmetryGroup] | None = None):
    """Recover k_i(g) for every hidden layer and every g from the weights (no reduction).

    Args:
        model: MLP of depth L (Dense layers; hidden activations not ``"identity"``).
        rho_in, rho_out: actions on V_0 and V_L.
        tol: relative tolerance of the weight relations.
        check_clones: count units with parallel rows (skip when
            ``maybe_degenerate`` already said there are none).
        groups: the hidden layers' groups K_i (``hidden_groups``); built here if None.

    Returns:
        (actions, residuals, ambiguous): one :class:`~eqlib.latent.MonomialAction` per hidden layer;
        (L,) max-over-g relative residuals of the relations of layers 1..L; per hidden
        layer the number of units whose match is not unique (parallel rows).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    check_float("tol", tol, 0.0), check_bool("check_clones", check_clones)
    layers = mlp_layers(model)
    L, G = len(layers), rho_in.group
    groups = hidden_groups(model) if groups is None else groups
    flags = [_MATCH_FLAGS[K.kind] for K in groups]
    with torch.no_grad():
        Bs = [_with_bias(l, l.weight.detach()) for l in layers]
        ambiguous = [_clone_ambiguity(Bs[i], flags[i][0], tol) if check_clones else 0 for i in range(L - 1)]
        perms = [torch.empty(G.order, l.out_dim, dtype=torch.long, device=l.weight.device) for l in layers[:-1]]
        scales = [torch.empty(G.order, l.out_dim, dtype=l.weight.dtype, device=l.weight.device) for l in layers[:-1]]
        residuals = np.zeros(L)
        for g in G:
            k_prev = monomial_of(rho_in, g)
            if k_prev is None:
                k_prev = rho_in.matrix(g)
            for i in range(L - 1):
                W = layers[i].weight.detach()
                A = _with_bias(layers[i], right_multiply(W, k_prev))
                signed, scaled = flags[i]
                p, s, _ = match_units(A, Bs[i], signed=signed, scaled=scaled)
                k_prev = SymmetryElement.unchecked(p, s)
                residuals[i] = max(residuals[i], _rel(A, k_prev.left(Bs[i])))
                perms[i][g.index], scales[i][g.index] = p, s
            last = layers[-1]
            A = _with_bias(last, right_multiply(last.weight.detach(), k_prev))
            k_out = monomial_of(rho_out, g)
            target = left_multiply(k_out if k_out is not None else rho_out.matrix(g), Bs[-1])
            residuals[-1] = max(residuals[-1], _rel(A, target) if A.norm() > 0 else float(target.norm()))
    actions = [MonomialAction(G, p, s) for p, s in zip(perms, scales)]
    return actions, residuals, ambiguous


def lift_action(action: Action, alpha: Tensor, alpha_star: Tensor) -> Action:
    """Lift an action on Ṽ to V: ``k(g) = α k̃(g) α* + (I − α α*)`` (see the module docstring).

    Args:
        action: the action k̃ on Ṽ (dim d̃).
        alpha: (d, d̃) embedding; alpha_star: (d̃, d) with ``alpha_star @ alpha = I``.

    Returns:
        A :class:`~eqlib.latent.MonomialAction` when α is a coordinate inclusion and α* = αᵀ, else a
        dense action.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    check_tensor("alpha", alpha, ndim=2, dtype="real", finite=True)
    check_tensor("alpha_star", alpha_star, ndim=2, dtype="real", finite=True)
    d, dt = alpha.shape
    if dt != action.dim or tuple(alpha_star.shape) != (dt, d):
        raise ValueError(f"alpha must have shape (d, {action.dim}) and alpha_star ({action.dim}, d) for an action on "
                         f"R^{action.dim}, got {tuple(alpha.shape)} and {tuple(alpha_star.shape)}")
    alpha, alpha_star = alpha.float(), alpha_star.float()
    G = action.group
    is_inclusion = (bool(((alpha == 0) | (alpha == 1)).all()) and bool((alpha.sum(0) == 1).all())
                    and bool((alpha.sum(1) <= 1).all()) and torch.equal(alpha_star, alpha.T))
    if is_inclusion and isinstance(action, MonomialAction):
        kept = alpha.argmax(0)  # kept[c] = full index of reduced coordinate c
        perm = torch.arange(d).repeat(G.order, 1)
        scales = torch.ones(G.order, d, dtype=action.scales.dtype)
        perm[:, kept] = kept[action.perm.cpu()]
        scales[:, kept] = action.scales.cpu()
        return MonomialAction(G, perm, scales)
    P = alpha @ alpha_star
    mats = torch.stack([alpha @ action.matrix(g).float() @ alpha_star + torch.eye(d) - P for g in G])
    return dense_action(G, mats)


def _reduce_degenerate(model, notes: list[str], degenerate: bool):
    """The :class:`~eqlib.submodels.Reduction` of a degenerate model, or None.

    A cheap prefilter (``maybe_degenerate``: zero rows or
    columns, nearly parallel rows) skips :func:`eqlib.submodels.reduce` when it would
    find nothing; a reduction that removes nothing is also reported as None.
    """
    if not degenerate:
        return None
    red = reduce(model)
    if list(red.model.dims) == list(model.dims):
        return None
    notes.append(f"weakly identifiable case: reduced the network from widths {model.dims} to "
                 f"{red.model.dims} (dead/constant/cloned units); the recovered homomorphisms "
                 "k̃_i: G → K̃_i act on the reduced network, and the actions on V_i are their lifts "
                 "k_i = α_i k̃_i α_i* + (I − α_i α_i*), which need not lie in K_i")
    if any(not bool(m.all()) for m in red.live):
        notes.append("layers are equivariant after discarding inactive units: dead units (never read "
                     "by the next layer) are left out of the layer errors")
    return red


def _by_weights(model, rho_in: Action, rho_out: Action, x: Tensor, tol: float, groups: list, notes: list[str],
                reduce_first: bool):
    """Method ``"weights"``: (actions on V_i, match residuals, failed layers, the weak case's
    ``reduction`` / ``reduced_actions`` / ``reduced_layer_errors``). A degenerate network is
    reduced first (when ``reduce_first``), its actions recovered there and lifted to V_i."""
    degenerate = maybe_degenerate(model)
    reduction = _reduce_degenerate(model, notes, degenerate) if reduce_first else None
    target = model if reduction is None else reduction.model
    target_groups = groups if reduction is None else hidden_groups(target)
    actions, residuals, ambiguous = recover_by_weights(target, rho_in, rho_out, tol, check_clones=degenerate,
                                                       groups=target_groups)
    for i, n in enumerate(ambiguous, start=1):
        if n:
            notes.append(f"layer {i}: {n} units have parallel rows [w | b] (clones) or are zero: "
                         "the match is not unique")
    weak = {"reduction": reduction, "reduced_actions": None, "reduced_layer_errors": None}
    if reduction is not None:
        weak["reduced_actions"] = actions
        weak["reduced_layer_errors"] = layer_errors(target, rho_in, rho_out, actions, x=x)
        actions = [lift_action(a, reduction.alpha[i + 1], reduction.alpha_star[i + 1])
                   for i, a in enumerate(actions)]
    failed = [i + 1 for i, r in enumerate(residuals) if not r <= tol]
    failed += [i + 1 for i, n in enumerate(ambiguous) if n and i + 1 not in failed]
    return actions, list(residuals), failed, weak
