"""Layers the theorem does not cover: Deep Sets, message passing, skip connections.

A Deep Sets layer (Zaheer et al. 2017) and a message-passing layer on a fixed graph tie
their weights so that *every* parameter value gives an equivariant layer. For a Deep
Sets layer on n ≥ 3 elements (and Λ ≠ 0) the group acts on the latent space and the
layer absorbs it, instead of moving onto the parameters; for n = 2 the swap does move
onto the parameters (:func:`pair_swap_parameters`). For message passing it depends on
the graph: on the 6-cycle no automorphism other than the identity has an ordinary
adjunction (for (W_self, W_nbr) ≠ 0), while on two disjoint edges the automorphism
Π = (0 1)(2 3) equals the adjacency matrix and moves onto the parameters by exchanging
W_self and W_nbr. :func:`adjunction_fit` measures this: it looks for parameters θ' with
``f(g·x; θ) = f(x; θ')`` (the ordinary adjunction, as a first MLP layer has with
θ' = W ρ(g)) or ``g^{-1}·f(g·x; θ) = f(x; θ')`` (the generalized one), by least
squares on the pre-activations, which are linear in θ.

Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, jacrev

from ..actions import Action
from ..groups import FiniteGroup, GroupElement, from_permutations
from .base import Layer
from ..validation import check_finite, check_int, check_tensor
from .mlp import ACTIVATIONS, _check_activation, _generator

__all__ = ["DeepSetsLayer", "pair_swap_parameters", "GraphLayer", "cycle_graph", "cycle_automorphisms", "AdjunctionFit",
           "adjunction_fit", "ResidualBlock", "plant_residual_invariant"]

Tensor = torch.Tensor


def _adjacency(adjacency) -> Tensor:
    """The adjacency matrix (array-like: tensor, array or nested lists of real numbers or
    bools) as a float tensor; complex values, meta tensors and non-numbers are refused."""
    try:
        A = adjacency if isinstance(adjacency, torch.Tensor) else torch.as_tensor(adjacency)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"adjacency must be a matrix of numbers (tensor, array or nested lists), got "
                        f"{type(adjacency).__name__} ({exc})") from None
    check_tensor("adjacency", A)
    if A.is_complex():
        raise TypeError(f"adjacency must be real, got {A.dtype}")
    return A.to(torch.get_default_dtype())


def _tied_parameters(d_in: int, d_out: int, seed: int | torch.Generator) -> tuple[nn.Parameter, ...]:
    """The tied weights of a set or graph layer: two (d_in, d_out) matrices with entries of
    standard deviation 1/sqrt(d_in) and a bias (d_out,) of standard deviation 0.1."""
    gen = _generator(seed)
    first = nn.Parameter(torch.randn(d_in, d_out, generator=gen) / math.sqrt(d_in))
    second = nn.Parameter(torch.randn(d_in, d_out, generator=gen) / math.sqrt(d_in))
    return first, second, nn.Parameter(torch.randn(d_out, generator=gen) * 0.1)


class DeepSetsLayer(Layer):
    """A permutation-equivariant layer on sets of n vectors (Zaheer et al. 2017):

    .. math:: f(X)_i = \\sigma\\big(X_i \\Lambda + \\bar X \\Gamma + b\\big),\\qquad
              \\bar X = \\tfrac1n \\textstyle\\sum_j X_j,

    X of shape (N, n, d_in); Λ, Γ of shape (d_in, d_out), b of shape (d_out,). The same
    Λ, Γ, b serve every element of the set (tied weights), so f(ΠX) = Π f(X) for every
    permutation Π and every θ.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """

    def __init__(self, n: int, d_in: int, d_out: int, activation: str = "tanh", *, seed: int | torch.Generator = 0):
        super().__init__()
        _check_activation(activation)
        n, d_in, d_out = check_int("n", n, 1), check_int("d_in", d_in, 1), check_int("d_out", d_out, 1)
        self.in_shape, self.out_shape = (int(n), int(d_in)), (int(n), int(d_out))
        self.activation = activation
        self.Lam, self.Gam, self.bias = _tied_parameters(d_in, d_out, seed)

    def preactivation(self, x: Tensor) -> Tensor:
        """X Λ + mean(X) Γ + b, shape (N, n, d_out)."""
        x = self._input(x, self.Lam)
        return x @ self.Lam + x.mean(dim=-2, keepdim=True) @ self.Gam + self.bias

    def forward(self, x: Tensor) -> Tensor:
        return ACTIVATIONS[self.activation](self.preactivation(x))


def pair_swap_parameters(layer: DeepSetsLayer) -> dict[str, Tensor]:
    """For sets of n = 2 elements: the parameters θ' = (−Λ, Γ + 2Λ, b) with
    f(Π X; θ) = f(X; θ') = Π f(X; θ), Π the swap of the two elements.

    Row 1 of the pre-activation is X_1(Λ + Γ/2) + X_2 Γ/2 + b; swapping X_1, X_2 is the
    same as replacing (Λ + Γ/2, Γ/2) by (Γ/2, Λ + Γ/2), i.e. Λ' = −Λ, Γ' = Γ + 2Λ
    (the course's own computation; for n ≥ 3 no such θ' exists when Λ ≠ 0). The map is
    an involution of the parameter space.

    Raises:
        ValueError: if the layer is not a DeepSetsLayer on sets of two elements.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    if not isinstance(layer, DeepSetsLayer) or layer.in_shape[0] != 2:
        raise ValueError(f"need a DeepSetsLayer on sets of n = 2 elements, got {layer!r}")
    Lam, Gam, b = layer.Lam.detach(), layer.Gam.detach(), layer.bias.detach()
    return {"Lam": -Lam, "Gam": Gam + 2 * Lam, "bias": b.clone()}


class GraphLayer(Layer):
    """A message-passing layer with tied weights on a fixed graph with adjacency A (n, n):

    .. math:: f(X) = \\sigma\\big(X W_{self} + A X W_{nbr} + b\\big).

    For every automorphism Π of the graph (Π A Πᵀ = A) and every θ, f(ΠX) = Π f(X).

    Chapter: *Where the theorem does not apply*.
    """

    def __init__(self, adjacency: Tensor, d_in: int, d_out: int, activation: str = "tanh",
                 *, seed: int | torch.Generator = 0):
        super().__init__()
        _check_activation(activation)
        A = _adjacency(adjacency)
        if A.dim() != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
            raise ValueError(f"adjacency must be a square non-empty matrix, got shape {tuple(A.shape)}")
        check_finite("adjacency", A)
        d_in, d_out = check_int("d_in", d_in, 1), check_int("d_out", d_out, 1)
        n = A.shape[0]
        self.register_buffer("adjacency", A)
        self.in_shape, self.out_shape = (n, int(d_in)), (n, int(d_out))
        self.activation = activation
        self.W_self, self.W_nbr, self.bias = _tied_parameters(d_in, d_out, seed)

    def preactivation(self, x: Tensor) -> Tensor:
        """X W_self + A X W_nbr + b, shape (N, n, d_out)."""
        x = self._input(x, self.W_self)
        return x @ self.W_self + self.adjacency @ x @ self.W_nbr + self.bias

    def forward(self, x: Tensor) -> Tensor:
        return ACTIVATIONS[self.activation](self.preactivation(x))


def cycle_graph(n: int) -> Tensor:
    """Adjacency (n, n) of the cycle graph 0 − 1 − … − (n−1) − 0.

    Chapter: *Where the theorem does not apply*.
    """
    n = check_int("n (nodes of the cycle graph)", n, 3, 2**14)
    A = torch.zeros(n, n)
    i = torch.arange(n)
    A[i, (i + 1) % n] = A[(i + 1) % n, i] = 1.0
    return A


def cycle_automorphisms(n: int) -> FiniteGroup:
    """The automorphism group D_n of the n-cycle, as permutations of its nodes
    (rotation i ↦ i+1 and reflection i ↦ −i), with ``permutations``.

    Chapter: *Where the theorem does not apply*.
    """
    n = check_int("n (nodes of the cycle graph)", n, 3, 2**14)
    rot = [(i + 1) % n for i in range(n)]
    ref = [(-i) % n for i in range(n)]
    return from_permutations([rot, ref], name=f"Aut(C{n})")


@dataclass
class AdjunctionFit:
    """Result of :func:`adjunction_fit`.

    Attributes:
        residual: ‖pre(x; θ') − target‖ / ‖target‖ for the best θ' (0 when an exact θ'
            exists).
        theta: the layer's parameters, flattened (p,).
        theta_prime: the least-squares θ' (p,).
        moved: ‖θ' − θ‖ / ‖θ‖: how far g moved the parameters.
        rank: rank of the linear map θ ↦ pre(x; θ) on the probes (p when θ' is unique).
        n_params: p.

    Chapter: *Where the theorem does not apply*.
    """

    residual: float
    theta: Tensor
    theta_prime: Tensor
    moved: float
    rank: int
    n_params: int

    @property
    def exists(self) -> bool:
        """Whether an exact θ' exists (residual below 1e-5)."""
        return self.residual < 1e-5

    @property
    def unique(self) -> bool:
        return self.rank == self.n_params


def adjunction_fit(layer: nn.Module, rho_in: Action, g: GroupElement, x: Tensor,
                   *, rho_out: Action | None = None) -> AdjunctionFit:
    """Look for θ' with pre(g·x; θ) = pre(x; θ') (ordinary adjunction, ``rho_out`` None)
    or ρ_out(g)^{-1} pre(g·x; θ) = pre(x; θ') (generalized adjunction).

    The pre-activation (``layer.preactivation``) is linear in θ, so this is a linear
    least-squares problem J θ' = target with J = ∂pre(x; θ)/∂θ, solved with
    :func:`torch.linalg.lstsq` (driver ``gelsd``). With an injective activation such
    as tanh, equal pre-activations are the same as equal layer outputs.

    Args:
        layer: a layer with a ``preactivation(x)`` method linear in its parameters
            (:class:`DeepSetsLayer`, :class:`GraphLayer`, :class:`~eqlib.models.Dense`).
        rho_in: the action on inputs; g: the element; x: probes (N, ``*in_shape``).
        rho_out: the action on outputs for the generalized adjunction.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    if not hasattr(layer, "preactivation"):
        raise ValueError(f"{type(layer).__name__} has no preactivation(x) method")
    names = [n for n, _ in layer.named_parameters()]
    params = [p.detach() for _, p in layer.named_parameters()]
    sizes = [p.numel() for p in params]
    theta = torch.cat([p.reshape(-1) for p in params])

    def pre(flat: Tensor, inp: Tensor) -> Tensor:
        chunks = torch.split(flat, sizes)
        d = {n: c.reshape(p.shape) for n, c, p in zip(names, chunks, params)}
        return _pre_call(layer, d, inp)

    with torch.no_grad():
        target = pre(theta, rho_in.act(g, x))
        if rho_out is not None:
            target = rho_out.act(~g, target)
    J = jacrev(lambda t: pre(t, x).reshape(-1))(theta)  # (N·out, p), constant in θ
    sol = torch.linalg.lstsq(J, target.reshape(-1, 1), driver="gelsd")
    theta_prime = sol.solution[:, 0]
    residual = float((J @ theta_prime - target.reshape(-1)).norm() / target.norm().clamp_min(1e-12))
    return AdjunctionFit(residual, theta, theta_prime, float((theta_prime - theta).norm() / theta.norm()),
                         int(torch.linalg.matrix_rank(J)), theta.numel())


def _pre_call(layer: nn.Module, params: dict[str, Tensor], x: Tensor) -> Tensor:
    """layer.preactivation(x) with its parameters replaced by ``params``."""

    class _Pre(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, inp):
            return self.inner.preactivation(inp)

    return functional_call(_Pre(layer), {f"inner.{k}": v for k, v in params.items()}, (x,))


class ResidualBlock(Layer):
    """A residual MLP block f(x) = x + W_2 σ(W_1 x + b_1) on R^d (hidden width m).

    Chapter: *Where the theorem does not apply*.
    """

    def __init__(self, d: int, hidden: int, activation: str = "relu", seed: int | torch.Generator = 0):
        super().__init__()
        _check_activation(activation)
        d, hidden = check_int("d", d, 1), check_int("hidden", hidden, 1)
        self.in_shape = self.out_shape = (int(d),)
        self.activation = activation
        gen = _generator(seed)
        self.W1 = nn.Parameter(torch.randn(hidden, d, generator=gen) / math.sqrt(d))
        self.b1 = nn.Parameter(torch.zeros(hidden))
        self.W2 = nn.Parameter(torch.randn(d, hidden, generator=gen) / math.sqrt(hidden))

    def inner(self, x: Tensor) -> Tensor:
        """The inner layer σ(W_1 x + b_1), shape (N, hidden)."""
        x = self._input(x, self.W1)
        return ACTIVATIONS[self.activation](x @ self.W1.T + self.b1)

    def latent(self, x: Tensor) -> Tensor:
        """The latent vector the skip connection really carries: (x, σ(W_1 x + b_1)),
        shape (N, d + hidden)."""
        return torch.cat([x, self.inner(x)], dim=-1)

    def forward(self, x: Tensor) -> Tensor:
        x = self._input(x, self.W1)
        return x + self.inner(x) @ self.W2.T


def plant_residual_invariant(d: int, hidden: int, activation: str = "relu", seed: int = 0) -> ResidualBlock:
    """A residual block invariant under x ↦ −x; for the chapter's d = 3 blocks its inner layer
    carries no linear action (not for every block: d = 1 can have one, see below).

    Our construction: σ(z) − σ(−z) = z for ReLU and GELU, so with b_1 = 0 and
    W_2 W_1 = −2 I (W_2 = −2 W_1⁺, W_1 of full column rank, hidden ≥ d)

    f(−x) = −x − 2W_1⁺σ(−W_1x) = −x − 2W_1⁺(σ(W_1x) − W_1x) = f(x).

    The inner layer maps −x to σ(−W_1x) = σ(W_1x) − W_1x, which is not a linear
    function of σ(W_1x) for the blocks the tests and the chapter build (d = 3, checked in
    tests/unit/test_sets.py; unit by unit not a function at all); not for every W_1: with
    d = 1 and two ReLU units of opposite signs a scaled swap of the units is one. On the
    latent (x, σ(W_1x)) that the skip carries, g acts by the linear map
    (x, h) ↦ (−x, h − W_1x), which is not a permutation times a scaling.

    Raises:
        ValueError: for an activation without σ(z) − σ(−z) = z, or hidden < d.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    if activation not in ("relu", "gelu"):
        raise ValueError(f"the construction needs σ(z) − σ(−z) = z (relu or gelu), got {activation!r}")
    d, hidden = check_int("d", d, 1), check_int("hidden", hidden, 1)
    if hidden < d:
        raise ValueError(f"need hidden >= d for W_1 of full column rank, got hidden={hidden}, d={d}")
    block = ResidualBlock(d, hidden, activation, seed)
    with torch.no_grad():
        block.b1.zero_()
        block.W2.copy_(-2 * torch.linalg.pinv(block.W1))
    return block
