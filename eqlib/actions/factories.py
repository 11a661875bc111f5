"""Building actions: from explicit matrices, the trivial, permutation, signed-permutation
and regular representations, and token permutations of sequences.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ..groups import FiniteGroup, GroupElement
from ..validation import check_finite, check_int, show
from .base import (MAX_ENTRIES, MatrixAction, PermutationAction, _check_element_keys, _check_group,
                   _require_homomorphism)

#: the largest group order :func:`~eqlib.actions.regular` builds
REGULAR_MAX_ORDER = 1024


def _per_element(name: str, values: object, group: FiniteGroup) -> np.ndarray:
    """One row per element, from a mapping {g: row} or an array (|G|, d)."""
    if isinstance(values, Mapping):
        _check_element_keys(name, values, group)
        missing = [g.name for g in group if g not in values]
        if missing:
            raise ValueError(f"{name} must give a row for every element of {group.name}; missing {missing[:5]}")
        rows = [np.asarray(values[g]) for g in group]
        if len({r.shape for r in rows}) != 1:
            raise ValueError(f"{name} must give rows of one length, got shapes {sorted({r.shape for r in rows})}")
        return np.stack(rows)
    try:
        out = np.asarray(values)
    except ValueError as exc:
        raise ValueError(f"{name} must be an array ({group.order}, d), got {show(values)} ({exc})") from None
    if out.ndim != 2 or out.shape[0] != group.order:
        raise ValueError(f"{name} must be an array ({group.order}, d), one row per element, got shape {out.shape}")
    return out


def from_matrices(group: FiniteGroup, matrices: Mapping[GroupElement, object]) -> MatrixAction:
    """An action from explicit matrices, given for every element or for the generators.

    Raises:
        ValueError: if the matrices do not form a homomorphism G → GL(d).

    Chapter: *Groups and actions*.
    """
    _check_group(group)
    _check_element_keys("matrices", matrices, group)
    if not matrices:
        raise ValueError(f"matrices must give a matrix for every element or every generator of {group.name}, "
                         "got none")
    mats = {}
    for g, m in matrices.items():
        try:
            mats[g] = torch.as_tensor(np.asarray(m, dtype=np.float64), dtype=torch.get_default_dtype())
        except (TypeError, ValueError) as exc:
            raise TypeError(f"matrices[{g.name}] must be a square matrix of numbers, got {show(m)}") from exc
    d = next(iter(mats.values())).shape[0] if next(iter(mats.values())).ndim else 0
    for g, m in mats.items():
        if m.shape != (d, d) or d == 0:
            raise ValueError(f"matrices[{g.name}] must be a {d}x{d} matrix like the others (d >= 1), "
                             f"got shape {tuple(m.shape)}")
        check_finite(f"matrices[{g.name}]", m)
    if all(g in mats for g in group):
        stacked = torch.stack([mats[g] for g in group])
    elif all(s in mats for s in group.generators):
        stacked = torch.empty(group.order, d, d)
        for g, word in zip(group, group.words):
            m = torch.eye(d)
            for k in word:
                m = m @ mats[group.generators[k]]
            stacked[g.index] = m
    else:
        raise ValueError(f"matrices must give a matrix for every element, or at least for every generator of "
                         f"{group.name}, got {len(matrices)} matrices")
    action = MatrixAction(group, stacked)
    _require_homomorphism(action)
    return action


def trivial(group: FiniteGroup, dim: int = 1) -> PermutationAction:
    """ρ(g) = I for every g.

    Chapter: *Groups and actions*.
    """
    _check_group(group)
    dim = check_int("dim", dim, 1, MAX_ENTRIES // group.order)
    return PermutationAction(group, np.tile(np.arange(dim), (group.order, 1)))


def permutation(group: FiniteGroup, points: Mapping[GroupElement, Sequence[int]] | np.ndarray) -> PermutationAction:
    """The permutation representation of an action of G on points {0..d-1}.

    ``points[g][i]`` is the image of point i under g; ρ(g) sends e_i to e_{g·i}.

    Raises:
        ValueError: if the maps are not permutations or not a homomorphism.

    Chapter: *Groups and actions*.
    """
    return signed_permutation(group, points, None)


def signed_permutation(
    group: FiniteGroup,
    points: Mapping[GroupElement, Sequence[int]] | np.ndarray,
    signs: Mapping[GroupElement, Sequence[float]] | np.ndarray | None,
) -> PermutationAction:
    """ρ(g) e_i = s_{g·i}(g) e_{g·i}: a monomial matrix with entries ±1.

    Raises:
        ValueError: if the maps are not permutations or not a homomorphism.

    Chapter: *Groups and actions*.
    """
    _check_group(group)
    pts = _per_element("points", points, group)
    if not np.issubdtype(pts.dtype, np.integer):
        raise TypeError(f"points must hold integer point indices, got dtype {pts.dtype}")
    if pts.ndim != 2 or pts.shape[1] == 0:
        raise ValueError(f"points must give one map of d >= 1 points per element: shape ({group.order}, d), "
                         f"got {pts.shape}")
    not_perm = ~np.all(np.sort(pts, axis=1) == np.arange(pts.shape[1]), axis=1)
    if not_perm.any():
        g = group[int(np.flatnonzero(not_perm)[0])]
        raise ValueError(f"points[{g.name}] = {pts[g.index].tolist()} is not a permutation of "
                         f"0..{pts.shape[1] - 1}")
    index = np.argsort(pts, axis=1)  # (ρ(g)x)_j = x_{g^{-1}·j}
    sg = None
    if signs is not None:
        sg = _per_element("signs", signs, group)
    action = PermutationAction(group, index, sg)
    _require_homomorphism(action)
    return action


def regular(group: FiniteGroup) -> PermutationAction:
    """The regular representation on ``R^|G|``: ρ(g) e_h = e_{gh}.

    Raises:
        ValueError: for a group of order above ``REGULAR_MAX_ORDER`` (its ``|G| × |G|``
            index table, and every use of the action, would take minutes and gigabytes).

    Examples:
        >>> import torch
        >>> from eqlib.groups import cyclic
        >>> rho = regular(cyclic(3))
        >>> rho.act(rho.group["r"], torch.tensor([1.0, 0.0, 0.0]))
        tensor([0., 1., 0.])

    Chapter: *Groups and actions*.
    """
    _check_group(group)
    if group.order > REGULAR_MAX_ORDER:
        raise ValueError(f"group must have order at most {REGULAR_MAX_ORDER}: the regular representation "
                         f"of {group.name} (order {group.order}) acts on R^{group.order}; orders above "
                         f"{REGULAR_MAX_ORDER} are refused (too big to build or use)")
    return permutation(group, group.table)


def token_permutation(group: FiniteGroup, n_tokens: int, token_dim: int) -> PermutationAction:
    """A permutation group G ≤ S_n permuting the tokens of sequences (n_tokens, token_dim).

    ``group`` must carry ``permutations`` (as :func:`~eqlib.groups.symmetric` and
    :func:`~eqlib.groups.from_permutations` do); token i moves to position g(i).

    Chapter: *Groups and actions*; used in *Attention*.
    """
    _check_group(group)
    n_tokens, token_dim = check_int("n_tokens", n_tokens, 1), check_int("token_dim", token_dim, 1)
    perms = getattr(group, "permutations", None)
    if perms is None or perms.shape[1] != n_tokens:
        raise ValueError(f"n_tokens = {n_tokens} does not fit {group.name}: it must be a group of permutations of "
                         f"{n_tokens} tokens")
    inv = np.argsort(perms, axis=1)  # new position j holds old token g^{-1}(j)
    index = (inv[:, :, None] * token_dim + np.arange(token_dim)[None, None, :]).reshape(group.order, -1)
    action = PermutationAction(group, index, None, (n_tokens, token_dim))
    _require_homomorphism(action)
    return action
