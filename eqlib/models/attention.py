"""Multi-head self-attention layers and networks (no skip connections, no norms).

A layer maps token sequences X ∈ R^{n×d_in} to R^{n×d_out}:

.. math:: f(X) = \\sum_h \\operatorname{softmax}\\!\\Big(\\frac{Z W_Q^h (Z W_K^h)^\\top}{\\sqrt{d_k}}\\Big) Z W_V^h W_O^h,
          \\qquad Z = X + P,

with optional learned positional encodings P ∈ R^{n×d_in}.

Chapter: *Attention* (book/part2/08_attention).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from .base import Layer, Model
from ..validation import check_bool, check_int, check_sequence, check_tensor, show
from .mlp import _generator

__all__ = ["MultiHeadAttention", "AttentionNetwork"]


class MultiHeadAttention(Layer):
    """Multi-head self-attention f(X; W_Q, W_K, W_V, W_O, P) on (N, n_tokens, d_in).

    Parameters (one slice per head h): ``W_Q``, ``W_K`` of shape (H, d_in, d_k),
    ``W_V`` (H, d_in, d_v), ``W_O`` (H, d_v, d_out), and ``P`` (n_tokens, d_in) when
    ``positional`` is True.

    Chapter: *Attention*.
    """

    def __init__(self, n_tokens: int, d_in: int, d_out: int, heads: int, *, d_k: int | None = None,
                 d_v: int | None = None, positional: bool = False, seed: int | torch.Generator | None = 0):
        super().__init__()
        n_tokens, d_in, d_out = check_int("n_tokens", n_tokens, 1), check_int("d_in", d_in, 1), \
            check_int("d_out", d_out, 1)
        heads = check_int("heads", heads, 1)
        d_k = check_int("d_k", d_k, 1) if d_k is not None else max(1, d_in // heads)
        d_v = check_int("d_v", d_v, 1) if d_v is not None else max(1, d_out // heads)
        check_bool("positional", positional)
        gen = _generator(seed)
        self.in_shape, self.out_shape = (n_tokens, d_in), (n_tokens, d_out)
        self.heads, self.d_k, self.d_v = heads, d_k, d_v

        def init(*shape, fan_in):
            return nn.Parameter(torch.randn(*shape, generator=gen) / math.sqrt(fan_in))

        self.W_Q = init(heads, d_in, d_k, fan_in=d_in)
        self.W_K = init(heads, d_in, d_k, fan_in=d_in)
        self.W_V = init(heads, d_in, d_v, fan_in=d_in)
        self.W_O = init(heads, d_v, d_out, fan_in=d_v * heads)
        self.P = init(n_tokens, d_in, fan_in=1) if positional else None

    @property
    def positional(self) -> bool:
        return self.P is not None

    def check_input(self, x: torch.Tensor) -> torch.Tensor:
        """The layer's input gate: a float tensor (N, n_tokens, d_in) with data (not meta) on
        the parameters' device; another float precision is cast to the parameters' dtype."""
        check_tensor("x", x, dtype="float", ndim=3, device=self.W_Q.device)
        if tuple(x.shape[1:]) != tuple(self.in_shape):
            raise ValueError(f"x must have shape (N, {self.in_shape[0]}, {self.in_shape[1]}) (N, n_tokens, d_in), "
                             f"got {tuple(x.shape)}")
        return x.to(self.W_Q.dtype)

    def attention_maps(self, x: torch.Tensor) -> torch.Tensor:
        """Softmax attention weights, shape (N, H, n_tokens, n_tokens)."""
        x = self.check_input(x)
        z = x + self.P if self.P is not None else x
        q = torch.einsum("bnd,hdk->bhnk", z, self.W_Q)
        k = torch.einsum("bnd,hdk->bhnk", z, self.W_K)
        return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d_k), dim=-1)

    def head_values(self, x: torch.Tensor) -> torch.Tensor:
        """Each head's value output Y_h = maps_h(X) Z W_V^h before W_O, shape (N, H, n, d_v).

        The layer is f(X) = Σ_h Y_h W_O^h: the Y_h are coordinates of the per-head space
        (R^{n×d_v})^H on which head permutations and the value bases F_h act.
        """
        x = self.check_input(x)
        z = x + self.P if self.P is not None else x
        v = torch.einsum("bnd,hdv->bhnv", z, self.W_V)
        return self.attention_maps(x) @ v

    def head_outputs(self, x: torch.Tensor) -> torch.Tensor:
        """Each head's contribution to the output, shape (N, H, n_tokens, d_out)."""
        x = self.check_input(x)
        z = x + self.P if self.P is not None else x
        v = torch.einsum("bnd,hdv->bhnv", z, self.W_V)
        return torch.einsum("bhnm,bhmv,hvo->bhno", self.attention_maps(x), v, self.W_O)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head_outputs(x).sum(dim=1)

    def extra_repr(self) -> str:
        return (f"tokens={self.in_shape[0]}, {self.in_shape[1]} → {self.out_shape[1]}, heads={self.heads}, "
                f"d_k={self.d_k}, d_v={self.d_v}, positional={self.positional}")


class AttentionNetwork(Model):
    """A stack of multi-head attention layers on sequences of ``n_tokens`` tokens.

    Args:
        n_tokens: sequence length n.
        dims: token dimensions [d_0, d_1, …, d_L].
        heads: number of heads per layer (an int or one per layer).
        positional: learned positional encodings in the first layer.
        d_k, d_v: per-head query/key and value dimensions (default d // heads).
        seed: seed of the initialisation.

    Chapter: *Attention*.
    """

    def __init__(self, n_tokens: int, dims: Sequence[int], *, heads: int | Sequence[int] = 2,
                 positional: bool = False, d_k: int | None = None, d_v: int | None = None, seed: int | None = 0):
        if isinstance(dims, (str, bytes)) or not hasattr(dims, "__len__"):
            raise TypeError(f"dims must be a list of token dimensions [d_0, ..., d_L], got {show(dims)}")
        dims = check_sequence("dims", dims)
        L = len(dims) - 1
        if L < 1:
            raise ValueError(f"dims must hold at least two token dimensions, got {list(dims)}")
        hs = [heads] * L if isinstance(heads, int) else list(heads)
        if len(hs) != L:
            raise ValueError(f"heads must be one number or {L} (one per layer), got {show(heads)}")
        gen = _generator(seed)
        super().__init__([
            MultiHeadAttention(n_tokens, dims[i], dims[i + 1], hs[i], d_k=d_k, d_v=d_v,
                               positional=positional and i == 0, seed=gen)
            for i in range(L)
        ])
