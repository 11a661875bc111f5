"""Small fully convolutional networks: f_i(x) = σ(conv_{k×k}(x; W_i) + b_i).

Every layer keeps the spatial size (odd kernel, zero padding k // 2, stride 1), so on
square images a quarter turn of the input can be moved onto the filters:
``conv(rot x, W) = rot conv(x, rot⁻¹ W)`` (the generalized adjunction of
:mod:`eqlib.latent.conv`).

Chapter: *Attention and convolutions* (book/part2/08_attention).
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..seeds import spawn, torch_generator
from ..validation import check_int, show
from .activation import Activation, activation_record
from .base import Layer, Model

__all__ = ["SameConv", "conv_net"]

#: the activations a SameConv accepts → their records ("linear" is the identity)
_ACTIVATIONS = {"tanh": activation_record("tanh"), "linear": activation_record("identity")}


class SameConv(Layer):
    """One layer f(x) = σ(conv(x; W) + b) on (N, C_in, size, size), size kept.

    Args:
        in_channels, out_channels: channel counts.
        size: the spatial side (images are square).
        kernel: odd kernel side.
        activation: ``"tanh"`` or ``"linear"``.
        seed: seed of the initialization (normal, std 1/sqrt(fan-in)).

    Raises:
        ValueError: on a non-positive size or channel count, an even kernel or an
            unknown activation.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """

    def __init__(self, in_channels: int, out_channels: int, size: int, kernel: int = 3,
                 *, activation: str = "tanh", seed: int = 0):
        super().__init__()
        in_channels, out_channels = check_int("in_channels", in_channels, 1), check_int("out_channels", out_channels, 1)
        size, kernel = check_int("size", size, 1), check_int("kernel", kernel, 1)
        if kernel % 2 == 0:
            raise ValueError(f"kernel must be a positive odd integer, got {kernel!r}")
        if not isinstance(activation, str):
            raise TypeError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {show(activation)}")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        gen = torch_generator(seed)
        fan_in = in_channels * kernel * kernel
        self.weight = nn.Parameter(torch.randn(out_channels, in_channels, kernel, kernel, generator=gen)
                                   / fan_in ** 0.5)
        self.bias = nn.Parameter(0.1 * torch.randn(out_channels, generator=gen))
        self.activation = activation
        self.in_shape, self.out_shape = (in_channels, size, size), (out_channels, size, size)

    def preactivation(self, x: torch.Tensor) -> torch.Tensor:
        """conv(x; W) + b (``x``: a float (N, C_in, H, W) or (C_in, H, W), cast to W's dtype)."""
        x = self._input(x, self.weight, (self.in_shape[0], None, None), (3, 4))
        return F.conv2d(x, self.weight, self.bias, padding=self.weight.shape[-1] // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sigma.fn(self.preactivation(x))

    @property
    def sigma(self) -> Activation:
        """The layer's ``eqlib.models.activation.Activation`` record."""
        return _ACTIVATIONS[self.activation]

    def extra_repr(self) -> str:
        c_out, c_in, k, _ = self.weight.shape
        return f"{c_in}→{c_out}, {k}×{k}, size={self.in_shape[1]}, {self.activation}"


def conv_net(channels: Sequence[int], size: int, kernel: int = 3, seed: int = 0) -> Model:
    """A depth-L network of :class:`SameConv` layers: tanh layers, the last one linear.

    Args:
        channels: [c_0, …, c_L] (at least two entries).
        size, kernel: as in :class:`SameConv`.
        seed: layer i is initialized from the stream ``spawn(seed, f"layer {i}")``.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    if isinstance(channels, (str, bytes, set, frozenset, dict)) or not hasattr(channels, "__iter__"):
        raise TypeError(f"channels must be a list of channel counts (ordered: not a set), got {channels!r}")
    channels = list(channels)
    if len(channels) < 2:
        raise ValueError(f"channels needs at least two entries [c_0, c_1], got {channels!r}")
    L = len(channels) - 1
    return Model([SameConv(channels[i], channels[i + 1], size, kernel,
                           activation="linear" if i == L - 1 else "tanh", seed=spawn(seed, f"layer {i}"))
                  for i in range(L)])
