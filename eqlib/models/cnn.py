"""VGG-style ReLU CNNs and mirror-GCNNs built from the same layers.

A network of the family is given by a configuration list such as
``[16, "M", 32, "M", 64, "M", 128, "M"]``: each number is a 3×3 convolution (padding 1)
with that many output channels (times a width multiplier), optionally followed by
BatchNorm, then ReLU; each ``"M"`` is a 2×2 max-pool after the preceding convolution.
The head is global average pooling followed by a linear classifier.

Two facts the chapter uses, both checked by the tests:

* **Flipped filters.** Mirroring every convolution kernel horizontally,
  ``W[o, i, :, ::-1]``, gives a network f' with f'(x) = f(mirror x) exactly: a 3×3 conv
  with padding 1 commutes with the mirror once its kernels are flipped, BatchNorm, ReLU
  and the 2×2 max-pool (on even widths) commute with the mirror, and global pooling
  forgets positions (:func:`flip_filters`).
* **Mirror-GCNN.** If every conv satisfies ``W[o, i, :, ::-1] = W[π_out(o), π_in(i), :, :]``
  for an involution π_out of its channels, π_in the previous layer's (pairs of channels with mirrored filters, fixed
  channels with symmetric filters: in the first layer, where the input permutation is the
  identity; deeper, up to the previous layer's π on the input channels), biases and
  BatchNorm parameters are π-invariant and the classifier is π-invariant after global
  pooling, the network is exactly mirror-invariant (:class:`MirrorGCNN`; the constraint
  holds by construction).

Inputs are float images (N, 3, H, W) already normalised (the trainer does that).

Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
"""
from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize

from ..actions import equivariance_residual, trivial
from ..images import mirror
from ..seeds import torch_generator, torch_seeded
from ..validation import check_bool, check_float, check_int, check_tensor
from .base import Layer, Model
from .equivariant import GroupAverage

__all__ = ["VGG_CONFIGS", "ConvLayer", "PoolHead", "VGG", "MirrorGCNN", "flip_filters", "channel_involution",
           "mirror_invariance_error", "conv_layers", "warm_batchnorm"]

#: named configurations; ``"vgg11"`` is the VGG11 of REPAIR (Jordan et al. 2023), before the width multiplier
VGG_CONFIGS: dict[str, list] = {
    "tiny": [8, "M", 16, "M", 32, "M", 64, "M"],
    "small": [16, "M", 32, "M", 64, "M", 128, "M"],
    "vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
}


class ConvLayer(Layer):
    """One layer f_i(x) = pool(ReLU(BN(conv3×3(x)))) on (N, C_in, H, W).

    Submodules ``conv`` (``nn.Conv2d``, padding 1, with bias) and, if ``batchnorm``,
    ``bn`` (``nn.BatchNorm2d``). ``pool`` adds a 2×2 max-pool after the ReLU.

    Chapter: *ReLU CNNs and GCNNs*.
    """

    def __init__(self, in_channels: int, out_channels: int, size: int, *, batchnorm: bool = True, pool: bool = False):
        super().__init__()
        in_channels, out_channels = check_int("in_channels", in_channels, 1), check_int("out_channels", out_channels, 1)
        size = check_int("size", size, 1)
        check_bool("batchnorm", batchnorm)
        check_bool("pool", pool)
        if pool and size % 2:
            raise ValueError(f"a 2×2 max-pool needs an even spatial size to commute with the mirror, got {size}")
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(out_channels) if batchnorm else None
        self.pool = bool(pool)
        out_size = size // 2 if pool else size
        self.in_shape, self.out_shape = (in_channels, size, size), (out_channels, out_size, out_size)

    def preactivation(self, x: torch.Tensor) -> torch.Tensor:
        """BN(conv(x)) (or conv(x) without BatchNorm): the input of the ReLU, (N, C_out, H, W).
        ``x``: a float batch (N, C_in, H, W), cast to the weights' dtype."""
        z = self.conv(self._input(x, self.conv.weight, (self.in_shape[0], None, None), (4,)))
        return self.bn(z) if self.bn is not None else z

    def activate(self, z: torch.Tensor) -> torch.Tensor:
        """pool(ReLU(z)) (``z``: a float batch (N, C_out, H, W), cast to the weights' dtype)."""
        h = F.relu(self._input(z, self.conv.weight, (self.out_shape[0], None, None), (4,), name="z"))
        return F.max_pool2d(h, 2) if self.pool else h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activate(self.preactivation(x))

    def extra_repr(self) -> str:
        return f"pool={self.pool}"


class PoolHead(Layer):
    """The last layer: global average pooling then ``linear`` (C → classes).

    Chapter: *ReLU CNNs and GCNNs*.
    """

    def __init__(self, channels: int, size: int, num_classes: int):
        super().__init__()
        channels, size = check_int("channels", channels, 1), check_int("size", size, 1)
        num_classes = check_int("num_classes", num_classes, 1)
        self.linear = nn.Linear(channels, num_classes)
        self.in_shape, self.out_shape = (channels, size, size), (num_classes,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._input(x, self.linear.weight, (self.in_shape[0], None, None), (3, 4))
        return self.linear(x.mean(dim=(-2, -1)))


def _parse(config: Sequence, width: float) -> list[tuple[int, bool]]:
    if isinstance(config, str):
        if config not in VGG_CONFIGS:
            raise ValueError(f"config: unknown configuration {config!r}; choose from {sorted(VGG_CONFIGS)} or give a list")
        config = VGG_CONFIGS[config]
    check_float("width", width, 0.0, 1e4, low_open=True)
    if isinstance(config, (set, frozenset, dict)) or not hasattr(config, "__iter__"):
        raise TypeError(f"config must be a list of channel counts and 'M' (ordered: not a set), or a name of "
                        f"{sorted(VGG_CONFIGS)}, got {config!r}")
    out: list[tuple[int, bool]] = []
    for item in config:
        if item == "M":
            if not out or out[-1][1]:
                raise ValueError(f"'M' must follow a convolution (and not another 'M') in {list(config)}")
            out[-1] = (out[-1][0], True)
        elif isinstance(item, int) and not isinstance(item, bool) and item > 0:
            channels = max(1, int(round(item * width)))
            if channels > 2**16:
                raise ValueError(f"config {item} times width {width} gives {channels} channels (at most 65536)")
            out.append((channels, False))
        else:
            raise ValueError(f"config entries are positive ints or 'M', got {item!r} in {list(config)}")
    if not out:
        raise ValueError("the configuration has no convolution")
    return out


class VGG(Model):
    """A VGG-style ReLU CNN: conv layers (:class:`ConvLayer`) then :class:`PoolHead`.

    Args:
        config: list of channel counts and ``"M"`` (2×2 max-pool), or a name of
            ``VGG_CONFIGS`` (``"tiny"``, ``"small"``, ``"vgg11"``).
        width: multiplies every channel count (rounded, at least 1).
        num_classes: outputs of the linear head.
        batchnorm: BatchNorm after every convolution.
        in_channels, image_size: the input (C, H, H).
        seed: seed of the (PyTorch-default) initialisation.

    Example:
        >>> net = VGG([16, "M", 32, "M"], width=0.5)
        >>> net(torch.zeros(2, 3, 32, 32)).shape
        torch.Size([2, 10])

    Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
    """

    def __init__(self, config: Sequence | str = "small", width: float = 1.0, *, num_classes: int = 10,
                 batchnorm: bool = True, in_channels: int = 3, image_size: int = 32, seed: int = 0):
        check_bool("batchnorm", batchnorm)
        spec = _parse(config, width)
        num_classes, in_channels = check_int("num_classes", num_classes, 1), check_int("in_channels", in_channels, 1)
        image_size, seed = check_int("image_size", image_size, 1), check_int("seed", seed, 0)
        layers: list[Layer] = []
        with torch_seeded(seed):
            c, s = in_channels, image_size
            for ch, pool in spec:
                if pool and s < 2:
                    raise ValueError(f"image_size {image_size} is too small for the {sum(p for _, p in spec)} "
                                     f"2x2 max-pools of {list(config) if not isinstance(config, str) else config}")
                layers.append(ConvLayer(c, ch, s, batchnorm=batchnorm, pool=pool))
                c, s = ch, (s // 2 if pool else s)
            layers.append(PoolHead(c, s, num_classes))
        super().__init__(layers)
        self.config = list(config) if not isinstance(config, str) else list(VGG_CONFIGS[config])
        self.width, self.num_classes, self.batchnorm = width, num_classes, batchnorm
        self.in_channels, self.image_size, self.seed = in_channels, image_size, seed

    def check_input(self, x: torch.Tensor) -> torch.Tensor:
        """The model's input gate (``Model.check_input``), and a batch: x must be
        (N, C, H, W) (BatchNorm takes no single unbatched image)."""
        x = super().check_input(x)
        if x.ndim != 4:
            raise ValueError(f"x must have shape (N, {self.in_channels}, {self.image_size}, {self.image_size}) "
                             f"(a batch; use x.unsqueeze(0) for one image), got {tuple(x.shape)}")
        return x

    @property
    def channels(self) -> list[int]:
        """Output channels of every conv layer."""
        return [l.conv.out_channels for l in conv_layers(self)]

    def extra_repr(self) -> str:
        return f"config={self.config}, width={self.width}, batchnorm={self.batchnorm}"


def conv_layers(model: Model) -> list[ConvLayer]:
    """The :class:`ConvLayer` s of a model, in order.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    return [l for l in model.layers if isinstance(l, ConvLayer)]


def flip_filters(model: VGG) -> VGG:
    """A copy of ``model`` with every conv kernel mirrored horizontally: W[o, i, :, ::-1].

    The copy computes x ↦ f(mirror x) exactly (BatchNorm statistics, biases and the head
    are unchanged). For a :class:`MirrorGCNN` the result is an ordinary :class:`VGG`.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    if not isinstance(model, VGG):
        raise TypeError(f"model must be a VGG (or MirrorGCNN) for flip_filters, got {type(model).__name__}")
    plain = model.to_cnn() if isinstance(model, MirrorGCNN) else copy.deepcopy(model)
    with torch.no_grad():
        for layer in conv_layers(plain):
            layer.conv.weight.copy_(layer.conv.weight.flip(-1))
    return plain


@torch.no_grad()
def warm_batchnorm(model: nn.Module, *, batches: int = 3, batch_size: int = 16, scale: float = 1.5,
                   shift: float = 0.3, seed: int = 0) -> nn.Module:
    """Give a fresh network's BatchNorm layers non-trivial running statistics.

    A few train-mode passes on Gaussian noise images ``scale · z + shift``; returns the
    model in eval mode. For tests and for demonstrating exact identities (flipped
    filters, permutation invariance) on untrained networks.

    Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
    """
    batches, batch_size = check_int("batches", batches, 1), check_int("batch_size", batch_size, 1, 2**16)
    scale, shift = check_float("scale", scale), check_float("shift", shift)
    gen = torch_generator(check_int("seed", seed, 0))
    shape = (batch_size, *(model.shapes[0] if hasattr(model, "shapes") else (3, 32, 32)))
    model.train()
    for _ in range(batches):
        model(torch.randn(*shape, generator=gen) * scale + shift)
    return model.eval()


@torch.no_grad()
def mirror_invariance_error(model: nn.Module, x: torch.Tensor) -> float:
    """‖f(mirror x) − f(x)‖ / ‖f(x)‖ over a batch of normalised images x (N, 3, H, W), in eval mode.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    check_tensor("x", x, ndim=4, dtypes="float", nonempty=True, finite=True)
    was = model.training
    model.eval()
    rho = mirror(tuple(x.shape[1:]))
    fx = model(x)
    diff = equivariance_residual(model, rho, trivial(rho.group, fx.shape[-1]), x, g=rho.group["m"], fx=fx)
    model.train(was)
    return float(diff.norm() / fx.norm().clamp_min(1e-30))


# --------------------------------------------------------------------------- mirror-GCNN

def channel_involution(channels: int, fixed: int) -> torch.Tensor:
    """The involution π of ``channels`` channels used by :class:`MirrorGCNN`.

    The first ``channels − fixed`` channels come in pairs (2k, 2k+1) swapped by π; the
    last ``fixed`` channels are fixed. Returns π as a LongTensor (π[c] = image of c).

    Raises:
        ValueError: if ``channels − fixed`` is odd or negative.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    channels, fixed = check_int("channels", channels, 1), check_int("fixed", fixed, 0)
    paired = channels - fixed
    if fixed < 0 or paired < 0 or paired % 2:
        raise ValueError(f"need 0 ≤ fixed ≤ channels with channels − fixed even; got channels={channels}, fixed={fixed}")
    pi = torch.arange(channels)
    pi[:paired] = torch.arange(paired).view(-1, 2).flip(-1).reshape(-1)
    return pi


class _SymmetrizeConv(GroupAverage):
    """W ↦ (W + W[π_out][:, π_in, :, ::-1]) / 2: the Reynolds average of the mirror m acting
    on filters (ρ_out(m) = π_out ⊗ mirror, ρ_in(m) = π_in ⊗ mirror), the projection onto
    the GCNN constraint."""

    def __init__(self, pi_out: torch.Tensor, pi_in: torch.Tensor):
        super().__init__()
        self.register_buffer("pi_out", pi_out.clone())
        self.register_buffer("pi_in", pi_in.clone())

    def images(self, w: torch.Tensor) -> list[torch.Tensor]:
        return [w[self.pi_out][:, self.pi_in].flip(-1)]


class _SymmetrizeVector(GroupAverage):
    """b ↦ (b + b[π]) / 2 along ``dim``: the Reynolds average of m acting by π (biases, BN
    affine parameters, classifier columns)."""

    def __init__(self, pi: torch.Tensor, dim: int = 0):
        super().__init__()
        self.register_buffer("pi", pi.clone())
        self.dim = dim

    def images(self, b: torch.Tensor) -> list[torch.Tensor]:
        return [b.index_select(self.dim, self.pi)]


class _InvolutionBatchNorm2d(nn.BatchNorm2d):
    """BatchNorm whose running statistics are symmetrised under π when used (eval mode)."""

    def __init__(self, channels: int, pi: torch.Tensor):
        super().__init__(channels)
        self.register_buffer("pi", pi.clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training or not self.track_running_stats:
            return super().forward(x)
        mean = 0.5 * (self.running_mean + self.running_mean[self.pi])
        var = 0.5 * (self.running_var + self.running_var[self.pi])
        return F.batch_norm(x, mean, var, self.weight, self.bias, False, 0.0, self.eps)


class MirrorGCNN(VGG):
    """A mirror-GCNN inside the VGG family: exactly mirror-invariant by construction.

    Every conv satisfies W[o, i, :, ::-1] = W[π_out(o), π_in(i), :, :] with π_out from
    :func:`channel_involution` and π_in the previous layer's (the identity on the RGB input); conv biases, BatchNorm
    parameters (and, in eval mode, running statistics) are π-invariant; the classifier
    columns are π-invariant. The constraints are ``torch.nn.utils.parametrize``
    projections of free parameters, so ordinary optimizers train it.

    Args:
        config, width, num_classes, batchnorm, in_channels, image_size, seed: as :class:`VGG`.
        fixed_fraction: fraction of each layer's channels fixed by π (symmetric
            filters in the first layer; deeper, symmetric up to the previous layer's π
            on the input channels); the rest come in mirrored pairs. Rounded so the paired
            part is even.

    Chapter: *ReLU CNNs and GCNNs*.
    """

    def __init__(self, config: Sequence | str = "small", width: float = 1.0, *, num_classes: int = 10,
                 batchnorm: bool = True, in_channels: int = 3, image_size: int = 32, seed: int = 0,
                 fixed_fraction: float = 0.25):
        check_float("fixed_fraction", fixed_fraction, 0.0, 1.0)
        super().__init__(config, width, num_classes=num_classes, batchnorm=batchnorm, in_channels=in_channels,
                         image_size=image_size, seed=seed)
        self.fixed_fraction = fixed_fraction
        self.involutions: list[torch.Tensor] = []
        pi_in = torch.arange(in_channels)
        for layer in conv_layers(self):
            c = layer.conv.out_channels
            fixed = int(round(fixed_fraction * c))
            if (c - fixed) % 2:
                fixed += 1 if fixed < c else -1
            pi = channel_involution(c, fixed)
            self.involutions.append(pi)
            parametrize.register_parametrization(layer.conv, "weight", _SymmetrizeConv(pi, pi_in))
            parametrize.register_parametrization(layer.conv, "bias", _SymmetrizeVector(pi))
            if layer.bn is not None:
                bn = _InvolutionBatchNorm2d(c, pi)
                parametrize.register_parametrization(bn, "weight", _SymmetrizeVector(pi))
                parametrize.register_parametrization(bn, "bias", _SymmetrizeVector(pi))
                layer.bn = bn
            pi_in = pi
        parametrize.register_parametrization(self.layers[-1].linear, "weight", _SymmetrizeVector(pi_in, dim=1))

    def to_cnn(self) -> VGG:
        """An ordinary :class:`VGG` with this network's (constrained) weights and symmetrised statistics."""
        plain = VGG(self.config, self.width, num_classes=self.num_classes, batchnorm=self.batchnorm,
                    in_channels=self.in_channels, image_size=self.image_size, seed=self.seed)
        was = self.training
        self.eval()
        with torch.no_grad():
            for mine, theirs in zip(conv_layers(self), conv_layers(plain)):
                theirs.conv.weight.copy_(mine.conv.weight)
                theirs.conv.bias.copy_(mine.conv.bias)
                if mine.bn is not None:
                    pi = mine.bn.pi
                    theirs.bn.weight.copy_(mine.bn.weight)
                    theirs.bn.bias.copy_(mine.bn.bias)
                    theirs.bn.running_mean.copy_(0.5 * (mine.bn.running_mean + mine.bn.running_mean[pi]))
                    theirs.bn.running_var.copy_(0.5 * (mine.bn.running_var + mine.bn.running_var[pi]))
                    theirs.bn.num_batches_tracked.copy_(mine.bn.num_batches_tracked)
            plain.layers[-1].linear.weight.copy_(self.layers[-1].linear.weight)
            plain.layers[-1].linear.bias.copy_(self.layers[-1].linear.bias)
        self.train(was)
        return plain.to(next(self.parameters()).device).train(was)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", fixed_fraction={self.fixed_fraction}"
