"""Multilayer perceptrons: layers f_i(x) = σ_i(W_i x + b_i).

Chapter: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels).
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..seeds import torch_generator
from ..validation import check_bool, check_float, check_int, check_tensor, show
from .activation import ACTIVATION_RECORDS, Activation, activation_record
from .base import Layer, Model

__all__ = ["ACTIVATIONS", "ODD_ACTIVATIONS", "Dense", "MLP", "FlatModel", "layer_activations"]

#: σ by name (a view of the ``eqlib.models.activation.Activation`` records)
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {n: a.fn for n, a in ACTIVATION_RECORDS.items()}
#: activations with σ(−z) = −σ(z)
ODD_ACTIVATIONS = frozenset(n for n, a in ACTIVATION_RECORDS.items() if a.odd)


_generator = torch_generator  # seed=None means eqlib.seeds.DEFAULT_SEED


def _check_activation(activation: object) -> str:
    """``activation`` must name one of ``ACTIVATIONS``: TypeError for a non-string,
    ValueError for an unknown name."""
    if not isinstance(activation, str):
        raise TypeError(f"activation must be a name, one of {sorted(ACTIVATIONS)}, got {show(activation)}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}: activation must be one of {sorted(ACTIVATIONS)}")
    return activation


def layer_activations(activations: str | Sequence[str], L: int) -> list[str]:
    """One activation per layer: a single name for every hidden layer (the last is linear),
    or a list of L − 1 (the last is linear) or L names.

    Chapter: *Models, latent spaces and submodels*.
    """
    if isinstance(activations, str):
        acts = [activations] * (L - 1) + ["identity"]
        if activations not in ACTIVATIONS:
            raise ValueError(f"activations must name one of {sorted(ACTIVATIONS)}, got {activations!r}")
        return acts
    if isinstance(activations, (set, frozenset, Mapping)) or not hasattr(activations, "__iter__"):
        raise TypeError(f"activations must be a name or a list of names, got {show(activations)}")
    acts = list(activations)
    for i, a in enumerate(acts):
        if not isinstance(a, str) or a not in ACTIVATIONS:
            raise ValueError(f"activations[{i}] must name one of {sorted(ACTIVATIONS)}, got {a!r}")
    if len(acts) == L - 1:
        acts.append("identity")
    if len(acts) != L:
        raise ValueError(f"activations: need {L - 1} or {L} activations for {L} layers, got {len(acts)}")
    return acts


class Dense(Layer):
    """f(x; W, b) = σ(W x + b) with W of shape (out, in).

    Args:
        in_dim, out_dim: dimensions of V_{i-1} and V_i.
        activation: one of ``ACTIVATIONS`` (tanh, relu, gelu, sigmoid, identity).
        bias: whether the layer has b.
        seed: seed (or torch.Generator) of the PyTorch-default uniform initialisation.
        init_scale: multiplies the initial weights.

    Chapter: *Models, latent spaces and submodels*.
    """

    def __init__(self, in_dim: int, out_dim: int, activation: str = "identity", *, bias: bool = True,
                 seed: int | torch.Generator | None = 0, init_scale: float = 1.0):
        super().__init__()
        _check_activation(activation)
        in_dim, out_dim = check_int("in_dim", in_dim, 1), check_int("out_dim", out_dim, 1)
        check_bool("bias", bias)
        init_scale = check_float("init_scale", init_scale)
        self.in_shape, self.out_shape = (int(in_dim),), (int(out_dim),)
        self.activation = activation
        gen = _generator(seed)
        bound = 1.0 / math.sqrt(in_dim)
        self.weight = nn.Parameter((torch.rand(out_dim, in_dim, generator=gen) * 2 - 1) * bound * init_scale)
        self.bias = nn.Parameter((torch.rand(out_dim, generator=gen) * 2 - 1) * bound) if bias else None

    @property
    def sigma(self) -> Activation:
        """The layer's ``eqlib.models.activation.Activation`` record."""
        return activation_record(self.activation)

    def preactivation(self, x: torch.Tensor) -> torch.Tensor:
        """W x + b (``x``: a float tensor (..., in_dim), cast to the weights' dtype)."""
        return F.linear(self._input(x, self.weight), self.weight, self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sigma.fn(self.preactivation(x))

    def extra_repr(self) -> str:
        return f"{self.in_dim} → {self.out_dim}, σ={self.activation}, bias={self.bias is not None}"


class FlatModel(Model):
    """A :class:`~eqlib.models.base.Model` that flattens image batches (N, C, H, W) → (N, CHW) first: the base
    of :class:`MLP`, and what its prefixes are.

    Chapter: *Models, latent spaces and submodels*.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.check_input(x)
        if x.dim() > 2:
            x = x.flatten(1)
        return super().forward(x)

    def latents(self, x: torch.Tensor, upto: int | None = None) -> list[torch.Tensor]:
        x = self.check_input(x)
        if x.dim() > 2:
            x = x.flatten(1)
        return super().latents(x, upto)

    def prefix(self, i: int) -> "FlatModel":
        """f_{≤i}, sharing this model's parameters; it flattens images first too."""
        return FlatModel(list(super().prefix(i).layers))


#: the most weights one layer of :class:`MLP` may have (2^28 floats = 1 GiB)
MAX_LAYER_ENTRIES = 2**28


class MLP(FlatModel):
    """An MLP of depth L = len(widths) − 1.

    Args:
        widths: [d_0, d_1, …, d_L].
        activations: one name for every hidden layer (the last layer is then linear),
            or a list of L − 1 names (hidden layers) or L names (every layer).
        bias: whether layers have biases.
        seed: seed of the initialisation.
        init_scale: multiplies every layer's initial weights; a list gives one per layer.

    Example:
        >>> net = MLP([3072, 512, 256, 10], activations=["tanh", "gelu"])

    Chapter: *Models, latent spaces and submodels*.
    """

    def __init__(self, widths: Sequence[int], activations: str | Sequence[str] = "tanh", *, bias: bool = True,
                 seed: int | None = 0, init_scale: float | Sequence[float] = 1.0):
        if isinstance(widths, (str, bytes, set, frozenset, Mapping)) or not hasattr(widths, "__len__"):
            raise TypeError(f"widths must be a list of layer widths [d_0, ..., d_L] (ordered: not a set), "
                            f"got {show(widths)}")
        L = len(widths) - 1
        if L < 1:
            raise ValueError(f"widths must hold at least two widths (an MLP needs one layer), got {list(widths)}")
        widths = [check_int(f"widths[{i}]", w, 1) for i, w in enumerate(widths)]
        for i in range(L):
            if widths[i] * widths[i + 1] > MAX_LAYER_ENTRIES:
                raise ValueError(f"widths[{i}] * widths[{i + 1}] = {widths[i] * widths[i + 1]} weights exceed "
                                 f"{MAX_LAYER_ENTRIES} per layer: widths {widths} are too big to build")
        acts = layer_activations(activations, L)
        if isinstance(init_scale, numbers.Real):
            scales = [init_scale] * L
        elif isinstance(init_scale, (list, tuple)):
            scales = list(init_scale)
        else:
            raise TypeError(f"init_scale must be a number or a list of {L} numbers, got {show(init_scale)}")
        if len(scales) != L:
            raise ValueError(f"init_scale must be one number or {L} (one per layer), got {show(init_scale)}")
        gen = _generator(seed)
        super().__init__([
            Dense(widths[i], widths[i + 1], acts[i], bias=bias, seed=gen, init_scale=scales[i]) for i in range(L)
        ])

    @property
    def widths(self) -> list[int]:
        return self.dims

    @property
    def activations(self) -> list[str]:
        return [layer.activation for layer in self.layers]

    def weights(self) -> list[torch.Tensor]:
        return [layer.weight for layer in self.layers]

    def biases(self) -> list[torch.Tensor | None]:
        return [layer.bias for layer in self.layers]
