"""Parameter symmetry groups K_i of a model and their action on parameters.

For an MLP layer f_i(x) = σ(W_i x + b_i), the group K_i acting on the latent space V_i is
the group of invertible maps k with σ(k z) = k σ(z) (the *intertwiner group* of σ;
Godfrey et al., 2022). The course models only its **monomial** part: k = P·D
with P a permutation and D an invertible diagonal matrix, stored as a
:class:`SymmetryElement`.

Convention (used everywhere in eqlib)::

    (k z)_i = scale_i · z_{perm_i}        so   k.matrix()[i, perm[i]] = scale[i].

K_i acts on the parameters of layer i (and i+1) by θ_i ↦ (k_i W_i k_{i-1}^{-1}, k_i b_i),
with k_0 = k_L = identity; the end-to-end function does not change
(:func:`apply_symmetry`). For multi-head attention the symmetries are head permutations
and per-head changes of basis (:class:`AttentionSymmetry`).

Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
"""
from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .models.attention import AttentionNetwork, MultiHeadAttention
from .models.activation import Activation, activation_record
from .models.mlp import MLP
from .seeds import torch_generator
from .validation import check_bool, check_float, check_int, check_sequence, check_tensor, show

__all__ = [
    "KINDS",
    "best_assignment",
    "SymmetryElement",
    "SymmetryGroup",
    "symmetry_group",
    "layer_symmetry_groups",
    "intertwining_error",
    "intertwines",
    "act_on_layer",
    "apply_symmetry",
    "AttentionSymmetry",
    "sample_attention_symmetry",
    "apply_attention_symmetry",
]

Tensor = torch.Tensor

#: the monomial groups the course uses, by name
KINDS = ("permutation", "signed_permutation", "scaled_permutation", "nonzero_scaled_permutation")



_generator = torch_generator  # the one seed helper: seed=None means DEFAULT_SEED



def best_assignment(score: torch.Tensor, *, maximize: bool = True) -> torch.Tensor:
    """The permutation ``p`` (a long tensor) maximising (or, with ``maximize=False``,
    minimising) ``Σ_i score[i, p[i]]`` over a square score matrix: the one call of
    ``scipy.optimize.linear_sum_assignment`` in eqlib (Hungarian algorithm, exact; scores
    copied to the CPU in float64).

    Examples:
        >>> best_assignment(torch.tensor([[0.1, 0.9], [0.8, 0.2]])).tolist()
        [1, 0]
        >>> best_assignment(torch.tensor([[0.1, 0.9], [0.8, 0.2]]), maximize=False).tolist()
        [0, 1]

    Chapter: *Parameter symmetries* (matching units); used for channel and head matching
    in *ReLU CNNs and GCNNs* and *Attention*.
    """
    check_tensor("score", score, ndim=2, dtype="real", finite=True)
    check_bool("maximize", maximize)
    if score.shape[0] != score.shape[1]:
        raise ValueError(f"score must be a square matrix, got shape {tuple(score.shape)}")
    from scipy.optimize import linear_sum_assignment  # imported here: scipy.optimize takes ~1 s

    rows, cols = linear_sum_assignment(score.detach().double().cpu().numpy(), maximize=maximize)
    return torch.as_tensor(cols[np.argsort(rows)], dtype=torch.long)


class SymmetryElement:
    """A monomial matrix k = P·D acting on R^d by ``(k z)_i = scale_i · z_{perm_i}``.

    Args:
        perm: LongTensor (d,), a permutation of 0..d-1.
        scale: float tensor (d,) of nonzero entries (default all ones).

    ``a @ b`` composes (apply b first), ``~a`` or ``a.inverse()`` inverts,
    ``a.matrix()`` is the dense (d, d) matrix, ``a.act(z)`` acts on (..., d),
    ``a.left(W)`` = k W and ``a.right(W)`` = W k act on weight matrices.

    This is the course's one parameter-symmetry type: :mod:`eqlib.latent` (recovered
    latent actions, :class:`~eqlib.latent.MonomialAction`) and :mod:`eqlib.matching`
    use it too; :meth:`unchecked` builds one without validation (a recovered element
    may have zero scales on dead units).

    Raises:
        ValueError: if perm is not a permutation, or a scale is zero or not finite.

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """

    __slots__ = ("perm", "scale")

    def __init__(self, perm: Tensor | Sequence[int], scale: Tensor | Sequence[float] | None = None):
        if isinstance(perm, torch.Tensor):
            check_tensor("perm", perm)  # a meta perm has no entries to check
        elif not isinstance(perm, np.ndarray):
            perm = check_sequence("perm", perm)
        perm = torch.as_tensor(perm).reshape(-1)
        if perm.is_complex() or perm.dtype == torch.bool:
            raise TypeError(f"perm must hold integers, got {perm.dtype}")
        if perm.is_floating_point() and not bool((perm == perm.round()).all()):
            raise ValueError(f"perm must hold integers, got {perm.tolist()[:10]}")
        perm = perm.long()
        d = perm.numel()
        if d == 0:
            raise ValueError("perm must be a permutation of 0..d-1 with d >= 1, got an empty one")
        if not torch.equal(torch.sort(perm).values, torch.arange(d)):
            raise ValueError(f"perm must be a permutation of 0..{d - 1}, got {perm.tolist()[:10]}")
        if scale is not None and not isinstance(scale, (torch.Tensor, np.ndarray)):
            scale = check_sequence("scale", scale)
        if isinstance(scale, torch.Tensor):
            check_tensor("scale", scale, dtype="real")
        elif scale is not None and np.iscomplexobj(scale):
            raise TypeError(f"scale must hold real numbers, got {show(scale)}")
        scale = torch.ones(d) if scale is None else torch.as_tensor(scale, dtype=torch.get_default_dtype()).reshape(-1)
        if scale.numel() != d:
            raise ValueError(f"scale has {scale.numel()} entries but perm has {d}")
        if not bool(torch.isfinite(scale).all()) or bool((scale == 0).any()):
            raise ValueError(f"scale must hold finite nonzero numbers (a monomial matrix), got {show(scale)}")
        tiny = torch.finfo(scale.dtype).tiny  # below it 1/scale overflows: k^{-1} would hold inf
        if bool((scale.abs() < tiny).any()):
            raise ValueError(f"scale must hold numbers of magnitude >= {tiny:.3g} (smaller ones have no finite "
                             f"inverse), got {show(scale)} (smallest {float(scale.abs().min()):.3g})")
        self.perm, self.scale = perm, scale

    @classmethod
    def unchecked(cls, perm: Tensor, scale: Tensor) -> "SymmetryElement":
        """An element from an integer tensor ``perm`` and a real tensor ``scale`` (d,) whose
        *values* are not validated: ``perm`` need not be checked as a permutation, and zero
        scales are kept (a recovered element may have zero scales on dead units). Their
        kind is checked, without reading an entry (TypeError / ValueError naming the
        argument): 1-D tensors of one length with data on one device, ``perm`` of an integer
        dtype (cast to long), ``scale`` real (integers cast to the default float dtype)."""
        check_tensor("perm", perm, ndim=1, dtype="integer")
        check_tensor("scale", scale, ndim=1, dtype="real", device=perm.device)
        if scale.shape != perm.shape:
            raise ValueError(f"scale has {scale.numel()} entries but perm has {perm.numel()}")
        if perm.dtype != torch.long:
            perm = perm.long()
        if not scale.is_floating_point():
            scale = scale.to(torch.get_default_dtype())
        return cls._raw(perm, scale)

    @classmethod
    def _raw(cls, perm: Tensor, scale: Tensor) -> "SymmetryElement":
        """An element from a long ``perm`` and a float ``scale`` built by this class itself
        (inverse, composition): no check at all."""
        k = cls.__new__(cls)
        k.perm, k.scale = perm, scale
        return k

    @classmethod
    def identity(cls, dim: int) -> "SymmetryElement":
        """The identity of R^dim."""
        return cls(torch.arange(check_int("dim", dim, 1)))

    @classmethod
    def from_matrix(cls, matrix: Tensor, tol: float = 1e-6) -> "SymmetryElement":
        """Read a monomial matrix back (inverse of :meth:`matrix`).

        Raises:
            ValueError: if ``matrix`` is not square or not monomial up to ``tol``.
        """
        check_float("tol", tol, 0.0)
        m = _real_matrix("matrix", matrix)
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ValueError(f"need a square matrix, got shape {tuple(m.shape)}")
        if not _is_monomial(m, tol):
            raise ValueError("the matrix is not monomial (one nonzero entry per row and per column)")
        perm = m.abs().argmax(dim=1)
        return cls(perm, m[torch.arange(m.shape[0]), perm])

    @property
    def dim(self) -> int:
        return self.perm.numel()

    def matrix(self) -> Tensor:
        """The dense (d, d) matrix with ``[i, perm[i]] = scale[i]``."""
        m = torch.zeros(self.dim, self.dim, dtype=self.scale.dtype, device=self.scale.device)
        m[torch.arange(self.dim, device=self.perm.device), self.perm] = self.scale
        return m

    def act(self, z: Tensor) -> Tensor:
        """k z for z of shape (..., d); integer and bool z are cast to the default float
        dtype first (a non-integer scale must never be applied in integer arithmetic)."""
        z = _real_float("z", z)
        if z.ndim == 0 or z.shape[-1] != self.dim:
            raise ValueError(f"z must have shape (..., {self.dim}) (this element acts on R^{self.dim}), got a "
                             f"tensor of shape {tuple(z.shape)}")
        return z[..., self.perm.to(z.device)] * self.scale.to(device=z.device, dtype=z.dtype)

    def inverse(self) -> "SymmetryElement":
        """k^{-1}: ``perm = argsort(perm)``, ``scale = 1 / scale[argsort(perm)]``."""
        q = torch.argsort(self.perm)
        return SymmetryElement._raw(q, 1.0 / self.scale[q])

    def __invert__(self) -> "SymmetryElement":
        return self.inverse()

    def __matmul__(self, other: "SymmetryElement") -> "SymmetryElement":
        """(a @ b) z = a (b z)."""
        if not isinstance(other, SymmetryElement):
            return NotImplemented
        if other.dim != self.dim:
            raise ValueError(f"other acts on R^{other.dim} but this element on R^{self.dim}: cannot compose them")
        return SymmetryElement._raw(other.perm[self.perm], self.scale * other.scale[self.perm])

    def left(self, weight: Tensor) -> Tensor:
        """k W for W of shape (d, m) (acts on rows): ``scale[:, None] * W[perm]``."""
        weight = _real_float("weight", weight)
        if weight.ndim == 0 or weight.shape[0] != self.dim:
            raise ValueError(f"weight must have {self.dim} rows (this element acts on R^{self.dim}), got shape "
                             f"{tuple(weight.shape)}")
        s = self.scale.to(device=weight.device, dtype=weight.dtype)
        return weight[self.perm.to(weight.device)] * s.reshape(-1, *([1] * (weight.ndim - 1)))

    def right(self, weight: Tensor) -> Tensor:
        """W k for W of shape (m, d) (acts on columns): ``(W k)[:, perm_j] = W[:, j] scale_j``."""
        weight = _real_float("weight", weight)
        if weight.ndim != 2 or weight.shape[1] != self.dim:
            raise ValueError(f"weight must have shape (m, {self.dim}) (this element acts on R^{self.dim}), got "
                             f"shape {tuple(weight.shape)}")
        out = torch.empty_like(weight)
        out[:, self.perm.to(weight.device)] = weight * self.scale.to(weight)[None, :]
        return out

    def right_inverse(self, weight: Tensor) -> Tensor:
        """W k^{-1} for W of shape (m, d) (acts on columns): ``W[:, perm] / scale``."""
        weight = _real_float("weight", weight)
        if weight.ndim != 2 or weight.shape[1] != self.dim:
            raise ValueError(f"weight must have shape (m, {self.dim}) (this element acts on R^{self.dim}), got "
                             f"shape {tuple(weight.shape)}")
        s = self.scale.to(device=weight.device, dtype=weight.dtype)
        return weight[:, self.perm.to(weight.device)] / s

    def allclose(self, other: "SymmetryElement", tol: float = 1e-6) -> bool:
        """Same permutation and scales within ``tol`` (absolute)."""
        check_float("tol", tol, 0.0)
        return self.dim == other.dim and torch.equal(self.perm, other.perm) and bool(
            torch.allclose(self.scale, other.scale, atol=tol, rtol=0))

    def __repr__(self) -> str:
        if self.dim <= 8:
            return f"SymmetryElement(perm={self.perm.tolist()}, scale={[round(s, 4) for s in self.scale.tolist()]})"
        return f"SymmetryElement(dim={self.dim})"


def _real_float(name: str, x: Tensor) -> Tensor:
    """``x`` checked by the tensor gate (a tensor with data, not meta, not complex), integer
    and bool entries cast to the default float dtype (as :meth:`eqlib.actions.MatrixAction.act`)."""
    check_tensor(name, x)
    if x.is_floating_point():
        return x
    if x.is_complex():
        raise TypeError(f"{name} must be a real tensor, got {x.dtype}")
    return x.to(torch.get_default_dtype())


def _real_matrix(name: str, matrix: Any) -> Tensor:
    """An array-like of real numbers as a default-float tensor: a tensor passes the tensor
    gate (data, not meta; integer or float, not bool or complex: an imaginary part would be
    dropped); an array or nested list must hold real numbers (TypeError naming ``name``)."""
    if isinstance(matrix, torch.Tensor):
        check_tensor(name, matrix, dtype="real")
        return matrix.to(torch.get_default_dtype())
    if isinstance(matrix, (str, bytes)) or np.iscomplexobj(matrix):
        raise TypeError(f"{name} must hold real numbers, got {show(matrix)}")
    try:
        return torch.as_tensor(matrix, dtype=torch.get_default_dtype())
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"{name} must be a matrix of real numbers (tensor, array or nested lists), got "
                        f"{show(matrix)} ({exc})") from None


def _is_monomial(m: Tensor, tol: float) -> bool:
    nz = m.abs() > tol
    return bool((nz.sum(dim=0) == 1).all() and (nz.sum(dim=1) == 1).all())


class SymmetryGroup:
    """A monomial matrix group K ⊂ GL(dim).

    Args:
        kind: ``"permutation"`` (P), ``"signed_permutation"`` (P·diag(±1), tanh),
            ``"scaled_permutation"`` (P·diag(positive), ReLU) or
            ``"nonzero_scaled_permutation"`` (P·diag(nonzero): large monomials t^m, and
            the monomial part of GL(d) for σ = id).
        dim: d.

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """

    def __init__(self, kind: str, dim: int):
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; choose from {KINDS}")
        self.kind, self.dim = kind, check_int("dim", dim, 1)

    def identity(self) -> SymmetryElement:
        return SymmetryElement.identity(self.dim)

    def sample(self, seed: int | torch.Generator | None = 0, log_scale: float = 1.0) -> SymmetryElement:
        """A random element: a uniform permutation; signs uniform in {±1} where allowed;
        scales exp(u) with u uniform in [−log_scale, log_scale] where allowed."""
        log_scale = check_float("log_scale", log_scale, 0.0, LOG_SCALE_MAX)
        gen = _generator(seed)
        perm = torch.randperm(self.dim, generator=gen)
        scale = torch.ones(self.dim)
        if self.kind in ("scaled_permutation", "nonzero_scaled_permutation"):
            scale = torch.exp((torch.rand(self.dim, generator=gen) * 2 - 1) * log_scale)
        if self.kind in ("signed_permutation", "nonzero_scaled_permutation"):
            scale = scale * (torch.randint(0, 2, (self.dim,), generator=gen) * 2 - 1)
        return SymmetryElement(perm, scale)

    def contains(self, matrix: Tensor | SymmetryElement, tol: float = 1e-6) -> bool:
        """Is ``matrix`` (dense (d, d) or a SymmetryElement) in K, up to ``tol``?"""
        check_float("tol", tol, 0.0)
        m = matrix.matrix() if isinstance(matrix, SymmetryElement) else _real_matrix("matrix", matrix)
        if m.shape != (self.dim, self.dim) or not bool(torch.isfinite(m).all()):
            return False
        if not _is_monomial(m, tol):
            return False
        entries = m[torch.arange(self.dim), m.abs().argmax(dim=1)]
        if self.kind == "permutation":
            return bool(((entries - 1).abs() <= tol).all())
        if self.kind == "signed_permutation":
            return bool(((entries.abs() - 1).abs() <= tol).all())
        if self.kind == "scaled_permutation":
            return bool((entries > tol).all())
        return True

    def project(self, matrix: Tensor) -> tuple[SymmetryElement, float]:
        """The element of K nearest to ``matrix`` in Frobenius norm, and that distance.

        Exact: ‖M − P D‖² = ‖M‖² − Σ_i (2 s_i M[i, p_i] − s_i²) is minimised over the
        permutation by ``linear_sum_assignment`` on the per-entry gain (M for
        permutations, abs(M) for signed, max(M, 0)² for positive and M² for nonzero
        scalings), then over the scales entrywise. For positive scalings a nonpositive
        matched entry gets scale 1e-12 (the infimum is then not attained).

        Returns:
            (k, ‖M − k.matrix()‖_F). Divide by ‖M‖_F for a relative distance.

        Chapter: *Parameter symmetries*; used by the latent-action chapters.
        """
        m = _real_matrix("matrix", matrix).detach().cpu()
        if m.shape != (self.dim, self.dim):
            raise ValueError(f"need a ({self.dim}, {self.dim}) matrix, got {tuple(m.shape)}")
        if not bool(torch.isfinite(m).all()):
            raise ValueError("the matrix holds NaN or inf")
        gain = {"permutation": m, "signed_permutation": m.abs(), "scaled_permutation": m.clamp_min(0) ** 2,
                "nonzero_scaled_permutation": m ** 2}[self.kind]
        perm = best_assignment(gain)
        matched = m[torch.arange(self.dim), perm]
        if self.kind == "permutation":
            scale = torch.ones(self.dim)
        elif self.kind == "signed_permutation":
            scale = torch.where(matched >= 0, 1.0, -1.0)
        elif self.kind == "scaled_permutation":
            scale = matched.clamp_min(1e-12)
        else:
            scale = torch.where(matched == 0, torch.full_like(matched, 1e-12), matched)
        k = SymmetryElement(perm, scale)
        return k, float((m - k.matrix()).norm())

    def __repr__(self) -> str:
        return f"SymmetryGroup({self.kind!r}, dim={self.dim})"


#: the largest ``log_scale`` of :meth:`SymmetryGroup.sample`: exp(±80) is still finite in float32
LOG_SCALE_MAX = 80.0


def symmetry_group(activation: str | Activation, dim: int) -> SymmetryGroup:
    """The (monomial) intertwiner group K of σ on R^dim: {k : σ(k z) = k σ(z)}.

    tanh (odd) → signed permutations; relu → positively scaled permutations
    (Bökman & Kahl 2023, Lemma 2.2); gelu, sigmoid → permutations;
    identity → nonzero-scaled permutations (the identity commutes with all of GL(d);
    eqlib models only its monomial subgroup). Sigmoid's sign flip σ(−z) = 1 − σ(z) is
    affine, not linear, so it is not in K. It still preserves the function when it acts
    affinely on parameters, (w, b, v, c) ↦ (−w, −b, −v, c + v) for a unit with incoming
    (w, b), outgoing column v and next bias c: the sigmoid's full parameter symmetries
    are signed permutations acting affinely, so relative to this K (permutations)
    sigmoid MLPs with biases are not identifiable. :func:`apply_symmetry` does not
    apply the affine flips; chapter 4 applies and checks them.

    The kind is read from the activation's record
    (``eqlib.models.activation.Activation``); a record may be passed instead of a name.

    Raises:
        ValueError: for an unknown activation.

    Examples:
        >>> symmetry_group("tanh", 3)
        SymmetryGroup('signed_permutation', dim=3)
        >>> symmetry_group("relu", 3).kind
        'scaled_permutation'

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """
    return SymmetryGroup(activation_record(activation).kind, dim)


def layer_symmetry_groups(model: MLP) -> list[SymmetryGroup]:
    """[K_1, …, K_{L-1}]: the symmetry group of each hidden latent space of an MLP.

    Raises:
        TypeError: if ``model`` is not an :class:`~eqlib.models.MLP`.

    Chapter: *Parameter symmetries*.
    """
    if not isinstance(model, MLP):
        raise TypeError(f"model must be an eqlib MLP (layer_symmetry_groups), got {type(model).__name__}")
    return [symmetry_group(layer.activation, layer.out_dim) for layer in model.layers[:-1]]


def intertwining_error(activation: str, k: SymmetryElement, z: Tensor) -> float:
    """max-abs of σ(k z) − k σ(z) over a batch z of shape (..., d), relative to max-abs of σ(z).

    Chapter: *Parameter symmetries*.
    """
    if not isinstance(activation, str):
        raise TypeError(f"activation must be a string, got {type(activation).__name__} {activation!r}")
    sigma = activation_record(activation).fn
    if not isinstance(k, SymmetryElement):
        raise TypeError(f"k must be a SymmetryElement, got {type(k).__name__}")
    check_tensor("z", z, dtypes="float", nonempty=True, finite=True)
    with torch.no_grad():
        err = (sigma(k.act(z)) - k.act(sigma(z))).abs().max()
        return float(err / sigma(z).abs().max().clamp_min(1e-12))


def intertwines(activation: str, k: SymmetryElement, z: Tensor, tol: float = 1e-5) -> bool:
    """Does σ(k z) = k σ(z) hold on the batch z (relative error ≤ tol)?

    Chapter: *Parameter symmetries*.
    """
    return intertwining_error(activation, k, z) <= check_float("tol", tol, 0.0)


def act_on_layer(weight: Tensor, bias: Tensor | None, k_out: SymmetryElement | None = None,
                 k_in: SymmetryElement | None = None) -> tuple[Tensor, Tensor | None]:
    """(W, b) ↦ (k_out W k_in^{-1}, k_out b), for W of shape (d_out, d_in).

    ``None`` stands for the identity.

    Integer and bool ``weight``/``bias`` are cast to the default float dtype first (the
    scales need not be integers); meta tensors are refused.

    Chapter: *Parameter symmetries*.
    """
    weight = _real_float("weight", weight)
    if weight.ndim != 2:
        raise ValueError(f"weight must have 2 dimensions (d_out, d_in), got shape {tuple(weight.shape)}")
    bias = None if bias is None else _real_float("bias", bias)
    if k_in is not None:
        if k_in.dim != weight.shape[1]:
            raise ValueError(f"k_in acts on R^{k_in.dim} but the weight has {weight.shape[1]} columns")
        weight = k_in.right_inverse(weight)
    if k_out is not None:
        if k_out.dim != weight.shape[0]:
            raise ValueError(f"k_out acts on R^{k_out.dim} but the weight has {weight.shape[0]} rows")
        weight = k_out.left(weight)
        if bias is not None and (bias.ndim != 1 or bias.shape[0] != k_out.dim):
            raise ValueError(f"bias must have shape ({k_out.dim},) (one entry per row of weight), got "
                             f"{tuple(bias.shape)}")
        bias = None if bias is None else k_out.act(bias)
    return weight, bias


def apply_symmetry(model: MLP, ks: Sequence[SymmetryElement | None], check: bool = True, tol: float = 1e-6) -> MLP:
    """A copy of the MLP with θ_i ↦ (k_i W_i k_{i-1}^{-1}, k_i b_i), k_0 = k_L = id.

    Args:
        model: an MLP of depth L.
        ks: L − 1 elements, one per hidden latent space (``None`` = identity).
        check: verify that each k_i lies in K_i = :func:`symmetry_group` of layer i's
            activation (otherwise the function would change).
        tol: tolerance of that check.

    Returns:
        A new MLP computing the same function (to float rounding).

    Raises:
        TypeError: if ``model`` is not an MLP.
        ValueError: wrong number of elements, wrong dimensions, or (with ``check``) an
            element outside K_i.

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """
    if not isinstance(model, MLP):
        raise TypeError(f"model must be an eqlib MLP (apply_symmetry), got {type(model).__name__}")
    check_bool("check", check), check_float("tol", tol, 0.0)
    L = model.depth
    ks = check_sequence("ks", ks)
    if len(ks) != L - 1:
        raise ValueError(f"ks: need {L - 1} elements (one per hidden layer), got {len(ks)}")
    groups = layer_symmetry_groups(model)
    for i, (k, K) in enumerate(zip(ks, groups), start=1):
        if k is None:
            continue
        if not isinstance(k, SymmetryElement):
            raise TypeError(f"ks[{i - 1}] must be a SymmetryElement or None, got {type(k).__name__}")
        if k.dim != K.dim:
            raise ValueError(f"k_{i} acts on R^{k.dim} but hidden layer {i} has width {K.dim}")
        if check and not K.contains(k, tol):
            raise ValueError(f"k_{i} is not in K_{i} = {K} (activation {model.layers[i - 1].activation!r}); "
                             "the function would change")
    new = copy.deepcopy(model)
    full = [None, *ks, None]
    with torch.no_grad():
        for i, layer in enumerate(new.layers, start=1):
            w, b = act_on_layer(layer.weight, layer.bias, full[i], full[i - 1])
            layer.weight.copy_(w)
            if b is not None:
                layer.bias.copy_(b)
    return new


# -- multi-head attention ------------------------------------------------------------------
@dataclass
class AttentionSymmetry:
    """A symmetry of one multi-head attention layer.

    New head h is old head ``perm[h]`` with its query–key basis changed by ``A[h]`` and
    its value–output basis by ``B[h]``:

    W_Q'[h] = W_Q[perm[h]] A[h],  W_K'[h] = W_K[perm[h]] A[h]^{-T},
    W_V'[h] = W_V[perm[h]] B[h],  W_O'[h] = B[h]^{-1} W_O[perm[h]].

    Then Q'K'ᵀ = Q Kᵀ and V' W_O' = V W_O per head, and the sum over heads is unchanged.

    Attributes:
        perm: LongTensor (H,).
        A: (H, d_k, d_k) invertible matrices.
        B: (H, d_v, d_v) invertible matrices.

    Chapter: *Parameter symmetries*; *Attention* (book/part2/08_attention).
    """

    perm: Tensor
    A: Tensor
    B: Tensor

    def __post_init__(self):
        # perm: integers (a float perm is never truncated); A, B: float tensors with data
        perm = self.perm if isinstance(self.perm, (torch.Tensor, np.ndarray)) else check_sequence("perm", self.perm)
        perm = torch.as_tensor(perm)
        check_tensor("perm", perm, ndim=1, dtype="integer")
        self.perm = perm.long()
        for name in ("A", "B"):
            check_tensor(name, getattr(self, name), ndim=3, dtype="float", finite=True)
            m = getattr(self, name)
            if m.shape[1] != m.shape[2]:
                raise ValueError(f"{name} must hold square matrices (H, d, d), got shape {tuple(m.shape)}")
        H = self.perm.numel()
        if not torch.equal(torch.sort(self.perm).values, torch.arange(H)):
            raise ValueError(f"perm must be a permutation of the {H} heads")
        if self.A.shape[0] != H or self.B.shape[0] != H:
            raise ValueError(f"need one A and one B per head ({H}), got {self.A.shape[0]} and {self.B.shape[0]}")

    @property
    def heads(self) -> int:
        return self.perm.numel()

    @classmethod
    def identity(cls, layer: MultiHeadAttention) -> "AttentionSymmetry":
        H = layer.heads
        return cls(torch.arange(H), torch.eye(layer.d_k).repeat(H, 1, 1), torch.eye(layer.d_v).repeat(H, 1, 1))


def random_invertible(n: int, d: int, gen: torch.Generator, log_scale: float) -> Tensor:
    """n random invertible d×d matrices Q·diag(e^u), u uniform in [-log_scale, log_scale].

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """
    q, r = torch.linalg.qr(torch.randn(n, d, d, generator=gen))
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)  # Haar orthogonal
    s = torch.exp((torch.rand(n, d, generator=gen) * 2 - 1) * log_scale)
    return q * s.unsqueeze(-2)  # orthogonal times positive diagonal: condition number ≤ e^{2 log_scale}


def sample_attention_symmetry(layer: MultiHeadAttention, seed: int | torch.Generator | None = 0,
                              log_scale: float = 0.5) -> AttentionSymmetry:
    """A random head permutation with random well-conditioned E_h, F_h (Q·diag(e^u)).

    Chapter: *Parameter symmetries*.
    """
    if not isinstance(layer, MultiHeadAttention):
        raise TypeError(f"need a MultiHeadAttention layer, got {type(layer).__name__}")
    log_scale = check_float("log_scale", log_scale, 0.0)
    gen = _generator(seed)
    perm = torch.randperm(layer.heads, generator=gen)
    return AttentionSymmetry(perm, random_invertible(layer.heads, layer.d_k, gen, log_scale),
                             random_invertible(layer.heads, layer.d_v, gen, log_scale))


def _apply_to_layer(layer: MultiHeadAttention, e: AttentionSymmetry) -> None:
    if e.heads != layer.heads or e.A.shape[-1] != layer.d_k or e.B.shape[-1] != layer.d_v:
        raise ValueError(f"element for {e.heads} heads, d_k={e.A.shape[-1]}, d_v={e.B.shape[-1]} does not fit "
                         f"layer with {layer.heads} heads, d_k={layer.d_k}, d_v={layer.d_v}")
    p = e.perm
    A, B = e.A.to(layer.W_Q), e.B.to(layer.W_V)
    with torch.no_grad():
        layer.W_Q.copy_(layer.W_Q[p] @ A)
        layer.W_K.copy_(layer.W_K[p] @ torch.linalg.inv(A).transpose(-1, -2))
        layer.W_V.copy_(layer.W_V[p] @ B)
        layer.W_O.copy_(torch.linalg.solve(B, layer.W_O[p]))


def apply_attention_symmetry(layer_or_network: MultiHeadAttention | AttentionNetwork,
                             element: AttentionSymmetry | Sequence[AttentionSymmetry]):
    """A copy of the layer (or network) with the symmetry applied; same function.

    Args:
        layer_or_network: a MultiHeadAttention layer, or an AttentionNetwork.
        element: one AttentionSymmetry for a layer; one per layer for a network.

    Chapter: *Parameter symmetries*; *Attention* (book/part2/08_attention).
    """
    new = copy.deepcopy(layer_or_network)
    if isinstance(new, MultiHeadAttention):
        if not isinstance(element, AttentionSymmetry):
            raise TypeError(f"element must be a single AttentionSymmetry for a single layer, got {show(element)}")
        _apply_to_layer(new, element)
        return new
    if isinstance(new, AttentionNetwork):
        elements = [element] if isinstance(element, AttentionSymmetry) else list(element)
        if len(elements) != new.depth:
            raise ValueError(f"need one AttentionSymmetry per layer ({new.depth}), got {len(elements)}")
        for layer, e in zip(new.layers, elements):
            _apply_to_layer(layer, e)
        return new
    raise TypeError(f"need a MultiHeadAttention or AttentionNetwork, got {type(layer_or_network).__name__}")
