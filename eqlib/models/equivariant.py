"""Equivariant layers that know their actions: weights constrained to the intertwiners.

:class:`EquivariantDense` is σ(W x + b) with W ∈ Hom_G(ρ_in, ρ_out) and ρ_out(g) b = b for
all g. The constraint is imposed with :func:`torch.nn.utils.parametrize`: the stored
free parameter is projected orthogonally (in the Frobenius inner product) onto the space
of intertwiners, spanned by an orthonormal basis from
:func:`eqlib.actions.equivariant_basis`. A pointwise activation σ commutes with ρ_out(g)
when ρ_out acts by permutations (or by signed permutations and σ is odd), so the layer is
then equivariant: f(ρ_in(g)x) = ρ_out(g) f(x).

Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize

from ..actions import Action, DirectSum, PermutationAction, equivariant_basis, trivial
from ..actions.intertwiners import _check_pair
from ..validation import check_bool, check_tensor, show
from .base import EquivariantLayer
from .activation import activation_record
from .mlp import ACTIVATIONS, FlatModel, _check_activation, _generator, layer_activations

__all__ = ["IntertwinerProjection", "GroupAverage", "EquivariantDense", "EquivariantMLP"]


class IntertwinerProjection(nn.Module):
    """The parametrization W ↦ Σ_k ⟨B_k, W⟩ B_k for an orthonormal basis (B_k) of a
    space of matrices: the orthogonal projection onto that space.

    Chapter: *Building equivariant layers*.
    """

    def __init__(self, basis: torch.Tensor):
        super().__init__()
        # a real (k, d_out, d_in) tensor with data; integer entries are cast to the default
        # float dtype (exact), bool / complex / meta / non-tensors are refused
        check_tensor("basis", basis, ndim=3, dtype="real", finite=True)
        basis = basis.detach() if basis.is_floating_point() else basis.to(torch.get_default_dtype())
        self.register_buffer("basis", basis.clone())  # (k, d_out, d_in)

    def forward(self, W: torch.Tensor) -> torch.Tensor:
        W = self._check(W)
        coef = torch.einsum("kij,ij->k", self.basis, W)
        return torch.einsum("k,kij->ij", coef, self.basis)

    def right_inverse(self, W: torch.Tensor) -> torch.Tensor:
        return self._check(W)  # assigning an equivariant W stores W itself

    def _check(self, W: torch.Tensor) -> torch.Tensor:
        """W a real float (d_out, d_in) tensor with data, on the basis' device, in its dtype (a
        meta W gave uninitialised numbers, a list was stored as the weight, float16 crashed)."""
        check_tensor("W", W, dtype="float", ndim=2, device=self.basis.device)
        if tuple(W.shape) != tuple(self.basis.shape[1:]):
            raise ValueError(f"W must have shape {tuple(self.basis.shape[1:])}, got {tuple(W.shape)}")
        return W.to(self.basis.dtype)


class GroupAverage(nn.Module):
    """The Reynolds average θ ↦ (1/``|G|``) Σ_g g·θ of a parameter tensor, as a parametrization.

    Subclasses give the action on parameters through ``images``, the list of g·θ over
    the non-identity elements g. With g·W = ρ_out(g) W ρ_in(g)⁻¹ this is
    :func:`eqlib.actions.reynolds`; :class:`~eqlib.models.MirrorGCNN` uses it with the
    mirror acting on convolution filters, biases and classifier columns (a G-CNN is the
    general construction of chapter 5 with convolutions).

    Chapter: *Building equivariant layers*.
    """

    def images(self, theta: torch.Tensor) -> list[torch.Tensor]:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, theta: torch.Tensor) -> torch.Tensor:
        moved = self.images(theta)
        if len(moved) == 1:  # a group of order 2
            return 0.5 * (theta + moved[0])
        return (theta + torch.stack(moved).sum(0)) / (len(moved) + 1)


#: σ as a plain torch module, for ``EquivariantDense.export``
_ACTIVATION_MODULES = {"tanh": nn.Tanh, "relu": nn.ReLU, "gelu": nn.GELU, "sigmoid": nn.Sigmoid}


def _pointwise_ok(rho: Action, activation: str) -> bool:
    if activation_record(activation).linear:
        return True
    if isinstance(rho, DirectSum):
        return all(_pointwise_ok(p, activation) for p in rho.parts)
    if not isinstance(rho, PermutationAction):
        return False
    return rho.signs is None or activation_record(activation).odd


class EquivariantDense(EquivariantLayer):
    """f(x) = σ(W x + b) with W ρ_in(g) = ρ_out(g) W and ρ_out(g) b = b for every g.

    Args:
        rho_in, rho_out: actions of one group on V_{i-1} and V_i.
        activation: one of ``ACTIVATIONS``; anything but ``"identity"`` needs ρ_out to
            act by permutations (signed permutations need an odd activation).
        bias: whether the layer has b.
        seed: seed (or torch.Generator) of the initialisation (uniform, then projected).

    ``layer.weight`` and ``layer.bias`` are the constrained (equivariant) tensors; the
    free parameters live in ``layer.parametrizations``. The layer carries ``rho_in`` and
    ``rho_out``, so ``check_equivariance(layer, x)`` needs no other arguments, and
    ``layer.check_equivariance(x)`` gives the largest residual; ``layer.export()`` is the
    same function as a plain ``torch.nn.Linear`` (followed by σ).

    Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
    """

    def __init__(self, rho_in: Action, rho_out: Action, activation: str = "identity", *, bias: bool = True,
                 seed: int | torch.Generator | None = 0):
        super().__init__()
        _check_pair(rho_in, rho_out)
        _check_activation(activation)
        if not _pointwise_ok(rho_out, activation):
            raise ValueError(f"activation {activation!r} is applied pointwise, which commutes with rho_out only "
                             f"when rho_out acts by permutations (signed ones need an odd activation); got "
                             f"{rho_out!r}: use activation='identity' or a permutation action")
        check_bool("bias", bias)
        self.rho_in, self.rho_out, self.activation = rho_in, rho_out, activation
        self.in_shape, self.out_shape = (rho_in.dim,), (rho_out.dim,)
        gen = _generator(seed)
        bound = 1.0 / math.sqrt(rho_in.dim)
        self.weight = nn.Parameter((torch.rand(rho_out.dim, rho_in.dim, generator=gen) * 2 - 1) * bound)
        parametrize.register_parametrization(self, "weight", IntertwinerProjection(equivariant_basis(rho_in, rho_out)))
        if bias:
            self.bias = nn.Parameter((torch.rand(rho_out.dim, 1, generator=gen) * 2 - 1) * bound)
            fixed = equivariant_basis(trivial(rho_out.group, 1), rho_out)  # (k, d_out, 1)
            parametrize.register_parametrization(self, "bias", IntertwinerProjection(fixed))
        else:
            self.bias = None

    @property
    def dimension(self) -> int:
        """Number of free parameters, dim Hom_G(ρ_in, ρ_out) plus the dimension of the fixed vectors."""
        out = self.parametrizations.weight[0].basis.shape[0]
        if self.bias is not None:
            out += self.parametrizations.bias[0].basis.shape[0]
        return out

    def preactivation(self, x: torch.Tensor) -> torch.Tensor:
        """W x + b (``x``: a float tensor (..., in_dim), cast to the weights' dtype)."""
        x = self._input(x, self.parametrizations.weight.original)
        return F.linear(x, self.weight, None if self.bias is None else self.bias[:, 0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if isinstance(x, torch.Tensor) and x.dim() > 2 and x.shape[-1] != self.in_dim:  # (N, C, H, W) → (N, CHW)
            x = x.flatten(1)
        return ACTIVATIONS[self.activation](self.preactivation(x))

    @torch.no_grad()
    def export(self) -> nn.Module:
        """The same function as plain torch modules: ``nn.Linear`` holding the constrained W
        and b (no parametrization), followed by σ as a module unless σ is the identity, and
        preceded by ``nn.Flatten`` when ρ_in acts on images (as ``forward`` flattens).
        Its parameters are copies: training it leaves this layer unchanged.

        Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
        """
        W = self.weight
        linear = nn.Linear(self.in_dim, self.out_dim, bias=self.bias is not None, device=W.device, dtype=W.dtype)
        linear.weight.copy_(W)
        if self.bias is not None:
            linear.bias.copy_(self.bias[:, 0])
        parts = ([nn.Flatten(1)] if len(self.rho_in.shape) > 1 else []) + [linear]
        if self.activation != "identity":
            parts.append(_ACTIVATION_MODULES[self.activation]())
        return parts[0] if len(parts) == 1 else nn.Sequential(*parts)

    def extra_repr(self) -> str:
        return (f"{self.rho_in!r} → {self.rho_out!r}, σ={self.activation}, "
                f"bias={self.bias is not None}, free parameters={self.dimension}")


class EquivariantMLP(FlatModel):
    """An MLP of :class:`EquivariantDense` layers: ρ_0 → ρ_1 → … → ρ_L.

    Args:
        actions: [ρ_0, …, ρ_L], actions of one group (ρ_0 may act on images).
        activations: one name for every hidden layer (the last layer is then linear),
            or a list of L − 1 or L names, as for :class:`~eqlib.models.MLP`.
        bias: whether layers have biases.
        seed: seed of the initialisation.

    Carries ``rho_in = ρ_0`` and ``rho_out = ρ_L``: ``check_equivariance(model, x)``.

    Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
    """

    def __init__(self, actions: Sequence[Action], activations: str | Sequence[str] = "relu", bias: bool = True,
                 seed: int | None = 0):
        if isinstance(actions, Action) or not isinstance(actions, Sequence) or len(actions) < 2:
            raise ValueError(f"actions must be a list [rho_0, ..., rho_L] of at least two actions, got {show(actions)}")
        L = len(actions) - 1
        acts = layer_activations(activations, L)
        gen = _generator(seed)
        super().__init__([EquivariantDense(actions[i], actions[i + 1], acts[i], bias=bias, seed=gen) for i in range(L)])
        self.rho_in, self.rho_out = actions[0], actions[-1]

    def prefix(self, i: int) -> FlatModel:
        """f_{≤i}, sharing the parameters; it flattens images and carries ``rho_in = ρ_0``
        and ``rho_out = ρ_i``, so ``check_equivariance(model.prefix(i), x)`` works."""
        sub = super().prefix(i)
        sub.rho_in, sub.rho_out = self.rho_in, sub.layers[-1].rho_out
        return sub
