"""Intertwiners, the equivariant linear maps between two actions: an orthonormal basis,
the Reynolds average (matrix-free) and its dense projector, and their dimension from
characters.

Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
"""
from __future__ import annotations

import numpy as np
import torch

from ..validation import check_float, check_tensor, show
from .base import MAX_ENTRIES, Action, Tensor, _real_float


def _check_pair(rho_in: object, rho_out: object) -> None:
    for name, rho in (("rho_in", rho_in), ("rho_out", rho_out)):
        if not isinstance(rho, Action):
            raise TypeError(f"{name} must be an Action, got {show(rho)}")
    if rho_in.group != rho_out.group:
        raise ValueError(f"rho_in and rho_out must be actions of one group, got {rho_in.group.name} "
                         f"and {rho_out.group.name}")


def equivariant_basis(rho_in: Action, rho_out: Action, tol: float = 1e-5) -> Tensor:
    """An orthonormal basis of the intertwiners Hom_G(ρ_in, ρ_out) = {W : W ρ_in(g) = ρ_out(g) W}.

    W is equivariant iff vec(W) is in the null space of the stacked constraints
    ``ρ_out(s) ⊗ ρ_in(s⁻¹)ᵀ − I`` over the generators s (row-major vec: vec(A W B) =
    (A ⊗ Bᵀ) vec(W)); solved with :func:`scipy.linalg.null_space`.

    Args:
        tol: singular values below ``tol`` times the largest one count as zero (the
            matrices are stored in float32, so the constraints hold only to ~1e-7).

    Returns:
        a tensor (k, d_out, d_in): k orthonormal (Frobenius) equivariant matrices.

    Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
    """
    from scipy.linalg import null_space

    _check_pair(rho_in, rho_out)
    d_in, d_out = rho_in.dim, rho_out.dim
    if d_in * d_out > 40_000:
        raise ValueError(f"equivariant_basis solves a dense (d_out·d_in)² system; d_out·d_in = {d_out * d_in} is "
                         "too large (at most 40000): use actions on fewer dimensions")
    G = rho_in.group
    rows = [np.kron(rho_out.matrix(s).double().numpy(), rho_in.matrix(G.inverse(s)).double().numpy().T)
            - np.eye(d_in * d_out) for s in G.generators]
    tol = check_float("tol", tol, 0, 1, low_open=True)
    basis = null_space(np.concatenate(rows), rcond=tol).T  # (k, d_out·d_in)
    return torch.as_tensor(basis.reshape(-1, d_out, d_in), dtype=torch.get_default_dtype())


def reynolds(W: Tensor, rho_in: Action, rho_out: Action) -> Tensor:
    """The Reynolds average (1/``|G|``) Σ_g ρ_out(g) W ρ_in(g)⁻¹ of matrices W (..., d_out, d_in).

    It is the orthogonal projection onto the intertwiners when the actions are orthogonal
    (and a projection onto them in general). Differentiable in W.

    Computed without forming ρ(g): ρ_out(g) W acts on W's columns (``Action.act``)
    and B ρ_in(g⁻¹) on B's rows (:meth:`eqlib.actions.Action.act_transpose`), so for permutation-like
    actions each term is two index gathers (no d × d matrix).

    Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
    """
    _check_pair(rho_in, rho_out)
    W = _real_float(check_tensor("W", W, finite=True))
    if W.ndim < 2 or tuple(W.shape[-2:]) != (rho_out.dim, rho_in.dim):
        raise ValueError(f"W must have shape (..., {rho_out.dim}, {rho_in.dim}) (d_out, d_in), "
                         f"got {tuple(W.shape)}")
    G = rho_in.group
    total = torch.zeros_like(W)
    for g in G:
        moved = rho_out.act(g, W.mT).mT  # ρ_out(g) W
        total = total + rho_in.act_transpose(G.inverse(g), moved)  # · ρ_in(g⁻¹)
    return total / G.order


def equivariant_projector(rho_in: Action, rho_out: Action) -> Tensor:
    """The Reynolds operator as a (d_out·d_in, d_out·d_in) matrix acting on row-major vec(W).

    Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
    """
    _check_pair(rho_in, rho_out)
    n = rho_in.dim * rho_out.dim
    if n * n > MAX_ENTRIES:
        raise ValueError(f"rho_in and rho_out are too big for a dense projector: it would be a ({n}, {n}) matrix "
                         f"({n * n} entries > {MAX_ENTRIES}); use reynolds(W, rho_in, rho_out) instead")
    G = rho_in.group
    return torch.stack([torch.kron(rho_out.matrix(g), rho_in.matrix(G.inverse(g)).T.contiguous()) for g in G]).mean(0)


def intertwiner_dimension(rho_in: Action, rho_out: Action) -> float:
    """dim Hom_G(ρ_in, ρ_out) from characters: (1/``|G|``) Σ_g χ_in(g⁻¹) χ_out(g).

    (For real representations χ(g⁻¹) = χ(g).) Returns a float, an integer up to rounding.

    Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
    """
    _check_pair(rho_in, rho_out)
    G = rho_in.group
    total = sum(float(torch.trace(rho_in.matrix(G.inverse(g)))) * float(torch.trace(rho_out.matrix(g)))
                for g in G)
    return total / G.order
