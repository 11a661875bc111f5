"""Linear actions (representations) of finite groups on vectors, images and tokens.

An :class:`Action` ``rho`` of a group G on R^d gives a matrix ``rho(g)`` for every
element and acts on batches with ``rho.act(g, x)`` (x of shape ``(..., d)``, or
``(..., *rho.shape)`` for actions on images and token sequences). Permutation-like
actions (token permutations, signed permutations, and the mirrors and rotations of
images built in ``eqlib.images``) act by indexing, so a 3072-dimensional image action
never builds a dense matrix.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from .groups import FiniteGroup, GroupElement
from .validation import check_finite, check_float, check_int, check_sequence, check_shape, check_tensor, show

__all__ = [
    "Action",
    "MatrixAction",
    "PermutationAction",
    "DirectSum",
    "from_matrices",
    "trivial",
    "permutation",
    "signed_permutation",
    "regular",
    "token_permutation",
    "check_homomorphism",
    "check_equivariance",
    "equivariance_residual",
    "equivariant_basis",
    "intertwiner_dimension",
    "reynolds",
    "equivariant_projector",
]

Tensor = torch.Tensor


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
        if not isinstance(g, GroupElement) or g.group != self.group:
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


# -- checks ---------------------------------------------------------------------------
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
    x = torch.randn(num_probes, rho.dim, generator=torch.Generator().manual_seed(check_int("seed", seed)))
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
        if not isinstance(g, GroupElement) or g.group != group:
            raise ValueError(f"{name} has the key {g!r}, which is not an element of {group.name}")


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


def _require_homomorphism(rho: Action, tol: float = 1e-5) -> None:
    err = check_homomorphism(rho)
    if not err <= tol:  # also catches NaN
        raise ValueError(
            f"these matrices do not define an action of {rho.group.name}: "
            f"max |ρ(g)ρ(h) − ρ(gh)| = {err:.3g} (or ρ(e) ≠ I)"
        )


def equivariance_residual(
    f: Callable[[Tensor], Tensor], rho_in: Action, rho_out: Action, x: Tensor, g: GroupElement,
    fx: Tensor | None = None,
) -> Tensor:
    """The equivariance residual f(ρ_in(g)x) − ρ_out(g)f(x) on a batch x (autograd-friendly).

    The one kernel behind every equivariance error and penalty in eqlib; pass ``fx = f(x)``
    to reuse it across elements.

    Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
    """
    if fx is None:
        fx = f(x)
    else:  # a given f(x) must be a tensor rho_out acts on: say so naming fx, not x
        rho_out._flat(fx, "fx")
    return f(rho_in.act(g, x)) - rho_out.act(g, fx)


def check_equivariance(
    f: Callable[[Tensor], Tensor],
    rho_in: Action | Tensor,
    rho_out: Action | None = None,
    x: Tensor | None = None,
    elements: Sequence[GroupElement] | None = None,
) -> dict[GroupElement, float]:
    """Relative equivariance error of f for each group element:

    .. math:: \\frac{\\lVert f(\\rho_{in}(g)x) - \\rho_{out}(g) f(x) \\rVert}{\\lVert f(x) \\rVert}

    over the whole batch x (Frobenius norms). Returns ``{g: error}``.

    ``check_equivariance(model, x)`` reads the actions from ``model.rho_in`` and
    ``model.rho_out`` (as :class:`~eqlib.models.equivariant.EquivariantDense` and
    :class:`~eqlib.models.equivariant.EquivariantMLP` carry them).

    Raises:
        ValueError: for an empty batch x, an empty list of elements (it would check
            nothing), elements of another group, or when f gives NaN/inf (on x or on a
            transformed x): the check then cannot say anything.
        TypeError: for elements given as a set or another unordered container.

    Chapter: *Groups and actions*; used throughout.
    """
    if not callable(f):
        raise TypeError(f"f must be callable, got {show(f)}")
    if isinstance(rho_in, Tensor) and rho_out is None and x is None:  # check_equivariance(model, x)
        x = rho_in
        rho_in, rho_out = getattr(f, "rho_in", None), getattr(f, "rho_out", None)
        if rho_in is None or rho_out is None:
            raise TypeError("check_equivariance(f, x) needs f to carry actions f.rho_in and f.rho_out; "
                            f"{show(f)} does not: call check_equivariance(f, rho_in, rho_out, x)")
    if x is None:
        raise TypeError("check_equivariance needs a batch x: check_equivariance(f, rho_in, rho_out, x)")
    for name, rho in (("rho_in", rho_in), ("rho_out", rho_out)):
        if not isinstance(rho, Action):
            raise TypeError(f"{name} must be an Action, got {show(rho)}")
    if rho_in.group != rho_out.group:
        raise ValueError("rho_in and rho_out must be actions of the same group")
    check_tensor("x", x, nonempty=True, finite=True)
    elements = check_sequence("elements", elements, nonempty=True) if elements is not None \
        else rho_in.group.elements
    for g in elements:
        rho_in._check(g)
    with torch.no_grad():
        fx = f(x)
        check_finite("f(x)", fx)
        scale = fx.norm().clamp_min(1e-12)
        errors = {}
        for g in elements:
            res = equivariance_residual(f, rho_in, rho_out, x, g, fx)
            check_finite(f"f(rho_in({g.name}) x)", res)
            errors[g] = (res.norm() / scale).item()
        return errors


# -- intertwiners: the equivariant linear maps -----------------------------------------
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


# -- factories ------------------------------------------------------------------------
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

    Chapter: *Groups and actions*.
    """
    _check_group(group)
    if group.order > REGULAR_MAX_ORDER:
        raise ValueError(f"group must have order at most {REGULAR_MAX_ORDER}: the regular representation "
                         f"of {group.name} (order {group.order}) acts on R^{group.order}; orders above "
                         f"{REGULAR_MAX_ORDER} are refused (too big to build or use)")
    return permutation(group, group.table)


#: the most entries an action's tables or a dense operator may hold (about 0.5 GB of int64):
#: bigger sizes are refused at once instead of exhausting memory
MAX_ENTRIES = 2**26


#: the largest group order :func:`regular` builds
REGULAR_MAX_ORDER = 1024


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
