"""The action types: :class:`~eqlib.actions.Action` and its matrix, (signed) permutation
and direct-sum forms, with the homomorphism check every constructed action passes.

Permutation-like actions act by indexing, so a 3072-dimensional image action never
builds a dense matrix.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from ..groups import FiniteGroup, GroupElement
from ..seeds import torch_generator
from ..validation import check_finite, check_int, check_shape, check_tensor, show

Tensor = torch.Tensor

#: the most entries an action's tables or a dense operator may hold (about 0.5 GB of int64):
#: bigger sizes are refused at once instead of exhausting memory
MAX_ENTRIES = 2**26


def _real_float(x: Tensor) -> Tensor:
    """``x`` checked (a tensor with data), with integer and bool entries cast to the default
    float dtype: a matrix with non-integer entries must never be applied in integer
    arithmetic (it would truncate)."""
    check_tensor("x", x)
    if x.is_floating_point() or x.is_complex():
        return x
    return x.to(torch.get_default_dtype())


class Action:
    """A linear action ρ: G → GL(d) of a finite group.

    Subclasses implement ``act``; ``matrix`` then follows by acting on the
    identity matrix. ``rho(g)`` is ``rho.matrix(g)``; ``rho1 + rho2`` is the direct sum.

    Chapter: *Groups and actions*.
    """

    group: FiniteGroup
    dim: int
    shape: tuple[int, ...]  # the shape of one vector: (dim,) or e.g. (C, H, W)

    def act(self, g: GroupElement, x: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def matrix(self, g: GroupElement) -> Tensor:
        """ρ(g) as a dense (dim, dim) float tensor."""
        eye = torch.eye(self.dim)
        return self.act(g, eye).T.contiguous()  # columns are ρ(g) e_j

    def act_transpose(self, g: GroupElement, x: Tensor) -> Tensor:
        """ρ(g)ᵀ x for x of shape ``(..., dim)`` (or ``(..., *shape)``): the matrix-free way
        to multiply a weight on the right, ``W ρ(g) = act_transpose(g, W)`` row by row.

        The default goes through :meth:`matrix`; permutation-like actions override it
        with an index gather.
        """
        xf, back = self._flat(_real_float(x))
        return back(xf @ self.matrix(g).to(device=xf.device, dtype=xf.dtype))

    def __call__(self, g: GroupElement) -> Tensor:
        return self.matrix(g)

    def matrices(self) -> Tensor:
        """All ρ(g), stacked in the group's element order: (``|G|``, dim, dim)."""
        return torch.stack([self.matrix(g) for g in self.group])

    def __add__(self, other: "Action") -> "DirectSum":
        return DirectSum(self, other)

    def _flat(self, x: Tensor, name: str = "x") -> tuple[Tensor, Callable[[Tensor], Tensor]]:
        """View x as (..., dim); return it and the map back to x's shape (errors name
        the argument ``name``)."""
        check_tensor(name, x)
        if x.shape[-1:] == (self.dim,) and self.shape == (self.dim,):
            return x, lambda y: y
        k = len(self.shape)
        if tuple(x.shape[-k:]) == self.shape:
            lead = x.shape[:-k]
            return x.reshape(*lead, self.dim), lambda y: y.reshape(*lead, *self.shape)
        if x.shape[-1:] == (self.dim,):
            return x, lambda y: y
        raise ValueError(
            f"{name} must have shape (..., {', '.join(map(str, self.shape))}) or (..., {self.dim}): "
            f"{type(self).__name__} acts on vectors of shape {self.shape} (or flat {self.dim}), "
            f"got a tensor of shape {tuple(x.shape)}"
        )

    def _check(self, g: GroupElement) -> int:
        if not isinstance(g, GroupElement):
            raise TypeError(f"g must be an element of {self.group.name} (a GroupElement), got {show(g)}")
        if g.group != self.group:
            raise ValueError(f"g = {g!r} is not an element of {self.group.name}, the group this action is of")
        return g.index

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.group.name}, dim={self.dim})"


class MatrixAction(Action):
    """An action given by one explicit matrix per element: ``act(g, x) = x @ ρ(g)ᵀ``.

    Chapter: *Groups and actions*.
    """

    def __init__(self, group: FiniteGroup, matrices: Tensor, shape: tuple[int, ...] | None = None):
        _check_group(group)
        self.group = group
        if not isinstance(matrices, torch.Tensor):
            try:
                matrices = torch.as_tensor(np.asarray(matrices))
            except (TypeError, ValueError, RuntimeError) as exc:
                raise TypeError(f"matrices must be a (|G|, d, d) tensor, got {show(matrices)} ({exc})") from None
        check_tensor("matrices", matrices, dtype="real")  # complex matrices would lose their imaginary part
        self._matrices = matrices.detach().to(dtype=torch.get_default_dtype())
        if (self._matrices.ndim != 3 or self._matrices.shape[0] != group.order
                or self._matrices.shape[1] != self._matrices.shape[2] or self._matrices.shape[1] == 0):
            raise ValueError(f"matrices must be {group.order} square matrices (|G|, d, d) with d >= 1, "
                             f"got shape {tuple(self._matrices.shape)}")
        check_finite("matrices", self._matrices)
        self.dim = self._matrices.shape[1]
        self.shape = shape or (self.dim,)

    def matrix(self, g: GroupElement) -> Tensor:
        return self._matrices[self._check(g)].clone()

    def matrices(self) -> Tensor:
        return self._matrices.clone()

    def act(self, g: GroupElement, x: Tensor) -> Tensor:
        """ρ(g) x; integer (or bool) x is cast to the default float dtype first (a 120°
        rotation of [2, 0] is [-1, 1.73], never an integer-truncated [0, 0])."""
        xf, back = self._flat(_real_float(x))
        m = self._matrices[self._check(g)].to(device=xf.device, dtype=xf.dtype)
        return back(xf @ m.T)

    def act_transpose(self, g: GroupElement, x: Tensor) -> Tensor:
        xf, back = self._flat(_real_float(x))
        return back(xf @ self._matrices[self._check(g)].to(device=xf.device, dtype=xf.dtype))


class PermutationAction(Action):
    """A (signed) permutation action: ``(ρ(g) x)_i = s_i(g) · x_{p_i(g)}``.

    Args:
        group: the group.
        index: integer array (``|G|``, dim); row g is the index map p(g).
        signs: optional ±1 array (``|G|``, dim); None for plain permutations.
        shape: the shape of one vector (default ``(dim,)``), e.g. (C, H, W) for images.

    Chapter: *Groups and actions*.
    """

    def __init__(self, group: FiniteGroup, index, signs=None, shape: tuple[int, ...] | None = None):
        _check_group(group)
        self.group = group
        index = np.asarray(index)
        if not np.issubdtype(index.dtype, np.integer):
            raise TypeError(f"index must hold integers, got dtype {index.dtype}")
        self.index = torch.as_tensor(index, dtype=torch.long)
        if self.index.ndim != 2 or self.index.shape[0] != group.order or self.index.shape[1] == 0:
            raise ValueError(f"index must hold one index map per element: shape ({group.order}, dim) with "
                             f"dim >= 1, got {tuple(self.index.shape)}")
        self.dim = self.index.shape[1]
        ok = torch.sort(self.index, dim=1).values == torch.arange(self.dim)
        if not bool(ok.all()):
            raise ValueError("every index map of a permutation action must be a permutation of 0..dim-1")
        self.signs = None if signs is None else torch.as_tensor(np.asarray(signs), dtype=torch.get_default_dtype())
        if self.signs is not None and self.signs.shape != self.index.shape:
            raise ValueError(f"signs must have the shape of index {tuple(self.index.shape)}, "
                             f"got {tuple(self.signs.shape)}")
        if self.signs is not None and not bool((self.signs.abs() == 1).all()):
            raise ValueError("signs of a signed permutation action must be ±1")
        self._check_homomorphism()
        self.shape = check_shape("shape", shape) if shape is not None else (self.dim,)
        if int(np.prod(self.shape)) != self.dim:
            raise ValueError(f"shape {self.shape} does not hold {self.dim} entries")

    def _check_homomorphism(self) -> None:
        """ρ(e) = I and ρ(g)ρ(s) = ρ(gs) for every g and every generator s (enough: every
        element is a product of generators). With (ρ(g)x)_j = s_j(g) x_{p_j(g)},
        (ρ(g)ρ(s)x)_j = s_j(g) s_{p_j(g)}(s) x_{p_{p_j(g)}(s)}. Costs |G| · #generators · dim."""
        G, idx = self.group, self.index
        e = G.identity.index
        if not torch.equal(idx[e], torch.arange(self.dim)) or (
                self.signs is not None and not bool((self.signs[e] == 1).all())):
            raise ValueError(f"index (and signs) do not define an action of {G.name}: the identity {G.identity!r} "
                             "must act as the identity map")
        for s in {int(g.index) for g in G.generators} or {e}:
            composite = idx[s][idx]  # row g: p(s)[p(g)]
            want = idx[torch.as_tensor(G.table[:, s])]
            bad = ~(composite == want).all(dim=1)
            if self.signs is not None:
                sign = self.signs * self.signs[s][idx]
                bad |= ~(sign == self.signs[torch.as_tensor(G.table[:, s])]).all(dim=1)
            if bool(bad.any()):
                g = G[int(torch.nonzero(bad)[0])]
                raise ValueError(f"index (and signs) do not define an action of {G.name}: "
                                 f"ρ({g.name})ρ({G[s].name}) ≠ ρ({(g @ G[s]).name})")

    def act(self, g: GroupElement, x: Tensor) -> Tensor:
        i = self._check(g)
        xf, back = self._flat(x)
        y = xf[..., self.index[i].to(x.device)]
        if self.signs is not None:
            y = y * self.signs[i].to(device=x.device, dtype=x.dtype)
        return back(y)

    def act_transpose(self, g: GroupElement, x: Tensor) -> Tensor:
        # ρ(g) has entries [j, p_j] = s_j, so (ρ(g)ᵀ x)_{p_j} = s_j x_j: a gather by p⁻¹
        i = self._check(g)
        xf, back = self._flat(x)
        q = torch.argsort(self.index[i]).to(x.device)
        y = xf[..., q]
        if self.signs is not None:
            y = y * self.signs[i][q].to(device=x.device, dtype=x.dtype)
        return back(y)

    def matrix(self, g: GroupElement) -> Tensor:
        i = self._check(g)
        m = torch.zeros(self.dim, self.dim)
        s = self.signs[i] if self.signs is not None else torch.ones(self.dim)
        m[torch.arange(self.dim), self.index[i]] = s
        return m

    def permutation(self, g: GroupElement) -> Tensor:
        """The index map p(g), so that ``act(g, x) = signs * x[..., p(g)]``."""
        return self.index[self._check(g)].clone()

    @classmethod
    def from_generators(
        cls,
        group: FiniteGroup,
        generator_index: Mapping[GroupElement, Sequence[int]],
        generator_signs: Mapping[GroupElement, Sequence[float]] | None = None,
        shape: tuple[int, ...] | None = None,
    ) -> "PermutationAction":
        """Extend index maps (and signs) given on the generators to the whole group,
        along the words of ``FiniteGroup.words``; check it is a homomorphism."""
        _check_group(group)
        _check_element_keys("generator_index", generator_index, group)
        missing = [s.name for s in group.generators if s not in generator_index]
        if missing:
            raise ValueError(f"generator_index must give an index map for every generator; missing {missing}")
        dim = len(next(iter(generator_index.values())))
        gen_p = [np.asarray(generator_index[s], dtype=np.int64) for s in group.generators]
        for s, p in zip(group.generators, gen_p):
            if p.shape != (dim,) or not np.array_equal(np.sort(p), np.arange(dim)):
                raise ValueError(f"generator_index[{s.name}] must be a permutation of 0..{dim - 1}, "
                                 f"got {p.tolist()[:10]}")
        gen_s = [
            np.asarray(generator_signs[s], dtype=np.float64) if generator_signs else np.ones(dim)
            for s in group.generators
        ]
        index = np.empty((group.order, dim), dtype=np.int64)
        signs = np.empty((group.order, dim))
        for g, word in zip(group, group.words):
            p, s = np.arange(dim), np.ones(dim)
            for k in word:  # ρ(a s_k) = ρ(a) ρ(s_k)
                p, s = gen_p[k][p], s * gen_s[k][p]
            index[g.index], signs[g.index] = p, s
        action = cls(group, index, signs if generator_signs else None, shape)
        _require_homomorphism(action)
        return action


class DirectSum(Action):
    """ρ_1 ⊕ ρ_2: acts blockwise on concatenated vectors.

    Chapter: *Groups and actions*.
    """

    def __init__(self, *parts: Action):
        for k, p in enumerate(parts):
            if not isinstance(p, Action):
                raise TypeError(f"parts[{k}] must be an Action, got {show(p)}")
        if not parts:
            raise ValueError("parts must hold at least one action, got none")
        if any(p.group != parts[0].group for p in parts):
            raise ValueError(f"parts must be actions of one and the same group, got actions of "
                             f"{[p.group.name for p in parts]}")
        self.group = parts[0].group
        self.parts = [q for p in parts for q in (p.parts if isinstance(p, DirectSum) else [p])]
        self.dim = sum(p.dim for p in self.parts)
        self.shape = (self.dim,)

    def _blockwise(self, g: GroupElement, x: Tensor, method: str) -> Tensor:
        """Apply ``method`` ("act" or "act_transpose") of each part to its block of x."""
        self._check(g)
        check_tensor("x", x)
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (..., {self.dim}) for this direct sum, got {tuple(x.shape)}")
        chunks = torch.split(x, [p.dim for p in self.parts], dim=-1)
        return torch.cat([getattr(p, method)(g, c) for p, c in zip(self.parts, chunks)], dim=-1)

    def act(self, g: GroupElement, x: Tensor) -> Tensor:
        return self._blockwise(g, x, "act")

    def act_transpose(self, g: GroupElement, x: Tensor) -> Tensor:
        return self._blockwise(g, x, "act_transpose")

    def matrix(self, g: GroupElement) -> Tensor:
        return torch.block_diag(*[p.matrix(g) for p in self.parts])


# -- the homomorphism check and argument checks ----------------------------------------
def check_homomorphism(rho: Action, num_probes: int = 8, seed: int = 0) -> float:
    """Largest violation of ρ(e) = I and ρ(g)ρ(h) = ρ(gh) over all pairs (g, h).

    Measured on random probe vectors (so it is cheap for large image actions), as the
    largest absolute entry of ``ρ(g)(ρ(h)x) − ρ(gh)x`` relative to the probes' scale.

    Raises:
        ValueError: if some ρ(g) gives NaN or ±inf on the probes (it names g), or
            ``num_probes`` < 1.

    Chapter: *Groups and actions*.
    """
    if not isinstance(rho, Action):
        raise TypeError(f"rho must be an Action, got {show(rho)}")
    num_probes = check_int("num_probes", num_probes, 1, 10**5)
    G = rho.group
    x = torch.randn(num_probes, rho.dim, generator=torch_generator(seed))
    acted = [rho.act(h, x) for h in G]
    for h in G:
        if not bool(torch.isfinite(acted[h.index]).all()):
            raise ValueError(f"rho({h.name}) is not finite: it maps probe vectors to NaN or inf")
    err = (acted[G.identity.index] - x).abs().max()
    for g in G:
        for h in G:
            err = torch.maximum(err, (rho.act(g, acted[h.index]) - acted[(g @ h).index]).abs().max())
    return err.item() / x.abs().max().item()


def _check_group(group: object) -> None:
    if not isinstance(group, FiniteGroup):
        raise TypeError(f"group must be a FiniteGroup, got {show(group)}")


def _check_element_keys(name: str, mapping: object, group: FiniteGroup) -> None:
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{name} must be a mapping from elements of {group.name}, got {show(mapping)}")
    for g in mapping:
        if not isinstance(g, GroupElement):
            raise TypeError(f"{name} has the key {show(g)}, which is not a GroupElement (of {group.name})")
        if g.group != group:
            raise ValueError(f"{name} has the key {g!r}, which is not an element of {group.name}")


def _require_homomorphism(rho: Action, tol: float = 1e-5) -> None:
    err = check_homomorphism(rho)
    if not err <= tol:  # also catches NaN
        raise ValueError(
            f"these matrices do not define an action of {rho.group.name}: "
            f"max |ρ(g)ρ(h) − ρ(gh)| = {err:.3g} (or ρ(e) ≠ I)"
        )
