"""Channel permutations, activation matching, weight interpolation, BatchNorm reset, REPAIR.

A :class:`PermutationSpec` says declaratively which axes of which parameters (and
buffers) each channel permutation acts on, à la Git Re-Basin (Ainsworth et al. 2023);
one spec format covers VGGs, MLPs and attention (:func:`permutation_spec`).
Permuting (:func:`apply_permutation`), matching (:func:`match_activations`) and merging
(:func:`interpolate`, :func:`repair`) all read the same spec.

Convention: a permutation ``p`` (LongTensor of length C) maps a network to the one whose
channel ``j`` is the old channel ``p[j]``; the network function does not change.

Images given to this module are float tensors (N, 3, H, W), already normalised
(``eqlib.images.prepare_images``); they are cut into batches and moved to the model's
device batch by batch.

Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
"""
from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.optim.swa_utils import update_bn

from .models.attention import AttentionNetwork, MultiHeadAttention
from .models.cnn import VGG, MirrorGCNN, conv_layers
from .models.mlp import MLP
from .symmetries import SymmetryElement, best_assignment
from .seeds import torch_generator
from .validation import check_bool, check_finite, check_float, check_int, check_tensor, show

__all__ = ["PermutationSpec", "permutation_spec", "vgg_permutation_spec", "mlp_permutation_spec",
           "attention_permutation_spec", "identity_permutations", "random_permutations",
           "apply_permutation", "invert_permutation", "involution_distance", "channel_correlations",
           "match_activations", "interpolate", "has_batchnorm", "reset_bn", "channel_statistics", "repair"]

Perms = Mapping[str, torch.Tensor]


@dataclass(frozen=True)
class PermutationSpec:
    """Which permutation acts on which axis of which state-dict entry.

    Attributes:
        axes: ``{state_dict key: (perm name or None for each axis)}``; keys not listed
            are left alone by permutations (but still interpolated).
        sizes: ``{perm name: number of channels}``.

    Chapter: *ReLU CNNs and GCNNs*.
    """

    axes: dict[str, tuple[str | None, ...]]
    sizes: dict[str, int]

    @property
    def names(self) -> list[str]:
        """The permutation names, in network order."""
        return list(self.sizes)


def vgg_permutation_spec(model: VGG) -> PermutationSpec:
    """The spec of a :class:`~eqlib.models.cnn.VGG`: one permutation ``"conv{k}"`` per conv layer.

    ``conv{k}`` permutes axis 0 of layer k's conv weight and bias and of its BatchNorm
    weight, bias, running mean and running variance, and axis 1 of the next conv weight
    (or of the classifier weight after global pooling).

    Raises:
        TypeError: for a :class:`~eqlib.models.cnn.MirrorGCNN` (call ``to_cnn()`` first)
            or a model that is not a VGG.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    if isinstance(model, MirrorGCNN):
        raise TypeError("a MirrorGCNN's parameters are parametrized; use model.to_cnn() to get a plain VGG first")
    if not isinstance(model, VGG):
        raise TypeError(f"model must be a VGG: vgg_permutation_spec needs a VGG, got {type(model).__name__}")
    axes: dict[str, tuple[str | None, ...]] = {}
    sizes: dict[str, int] = {}
    prev: str | None = None
    n = len(model.layers)
    for i, layer in enumerate(model.layers[:-1]):
        name = f"conv{i}"
        sizes[name] = layer.conv.out_channels
        axes[f"layers.{i}.conv.weight"] = (name, prev, None, None)
        axes[f"layers.{i}.conv.bias"] = (name,)
        if layer.bn is not None:
            for k in ("weight", "bias", "running_mean", "running_var"):
                axes[f"layers.{i}.bn.{k}"] = (name,)
        prev = name
    axes[f"layers.{n - 1}.linear.weight"] = (None, prev)
    axes[f"layers.{n - 1}.linear.bias"] = (None,)
    return PermutationSpec(axes, sizes)


def mlp_permutation_spec(model: MLP) -> PermutationSpec:
    """The spec of an :class:`~eqlib.models.MLP`: one permutation ``"hidden{i}"`` per hidden layer.

    ``hidden{i}`` permutes axis 0 of layer i's weight and bias and axis 1 of layer
    i + 1's weight (layers counted from 1): the permutation part of the MLP's parameter
    symmetries (:func:`eqlib.symmetries.apply_symmetry` with unit scales).

    Raises:
        TypeError: if ``model`` is not an MLP.

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """
    if not isinstance(model, MLP):
        raise TypeError(f"model must be an eqlib MLP (mlp_permutation_spec), got {type(model).__name__}")
    dims = list(model.dims)
    names = [None] + [f"hidden{i}" for i in range(1, len(dims) - 1)] + [None]
    axes = {}
    for i in range(len(dims) - 1):
        axes[f"layers.{i}.weight"] = (names[i + 1], names[i])
        axes[f"layers.{i}.bias"] = (names[i + 1],)
    return PermutationSpec(axes, {names[i]: dims[i] for i in range(1, len(dims) - 1)})


def attention_permutation_spec(model: MultiHeadAttention | AttentionNetwork) -> PermutationSpec:
    """The spec of an attention layer or network: one head permutation per layer.

    ``heads{i}`` (``"heads"`` for a single layer) permutes axis 0 of W_Q, W_K, W_V and
    W_O: the permutation part of :class:`eqlib.symmetries.AttentionSymmetry`.

    Raises:
        TypeError: for anything but a MultiHeadAttention or an AttentionNetwork.

    Chapter: *Attention* (book/part2/08_attention).
    """
    if isinstance(model, MultiHeadAttention):
        layers = {"": ("heads", model)}
    elif isinstance(model, AttentionNetwork):
        layers = {f"layers.{i}.": (f"heads{i}", l) for i, l in enumerate(model.layers)}
    else:
        raise TypeError(f"model must be a MultiHeadAttention or AttentionNetwork: attention_permutation_spec needs a MultiHeadAttention or AttentionNetwork, "
                        f"got {type(model).__name__}")
    axes, sizes = {}, {}
    for prefix, (name, layer) in layers.items():
        sizes[name] = layer.heads
        for w in ("W_Q", "W_K", "W_V", "W_O"):
            axes[prefix + w] = (name, None, None)
    return PermutationSpec(axes, sizes)


def permutation_spec(model: nn.Module) -> PermutationSpec:
    """The :class:`PermutationSpec` of a VGG, an MLP or an attention layer/network.

    Raises:
        TypeError: for any other model.

    Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
    """
    if isinstance(model, MLP):
        return mlp_permutation_spec(model)
    if isinstance(model, (MultiHeadAttention, AttentionNetwork)):
        return attention_permutation_spec(model)
    if isinstance(model, VGG):
        return vgg_permutation_spec(model)
    raise TypeError(f"model: no permutation spec for {type(model).__name__}: give one (spec=...)")


def identity_permutations(spec: PermutationSpec) -> dict[str, torch.Tensor]:
    """``{name: arange(C)}`` for every permutation of ``spec``.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    _check_spec(spec)
    return {n: torch.arange(c) for n, c in spec.sizes.items()}


def _check_spec(spec: object) -> None:
    if not isinstance(spec, PermutationSpec):
        raise TypeError(f"spec must be a PermutationSpec (see permutation_spec(model)), got {show(spec)}")


def random_permutations(spec: PermutationSpec, seed: int | torch.Generator = 0) -> dict[str, torch.Tensor]:
    """A uniformly random permutation for every name of ``spec`` (seeded).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    _check_spec(spec)
    gen = torch_generator(seed)
    return {n: torch.randperm(c, generator=gen) for n, c in spec.sizes.items()}


def _as_permutations(perms: Perms) -> dict[str, torch.Tensor]:
    """LongTensors from perms given as tensors, sequences or unit-scale SymmetryElements."""
    if not isinstance(perms, Mapping):
        raise TypeError(f"perms must be a mapping from permutation names to permutations, got {type(perms).__name__}")
    out = {}
    for name, p in perms.items():
        if isinstance(p, SymmetryElement):
            if not bool((p.scale == 1).all()):
                raise ValueError(f"permutation {name!r} is a SymmetryElement with scales ≠ 1; only its "
                                 "permutation can act on these channels")
            p = p.perm
        out[name] = torch.as_tensor(p)
    return out


def _check_perms(spec: PermutationSpec, perms: Perms) -> None:
    for name, p in perms.items():
        if name not in spec.sizes:
            raise ValueError(f"perms has the unknown permutation {name!r}; the spec has {spec.names}")
        p = torch.as_tensor(p)
        c = spec.sizes[name]
        if p.is_floating_point() or p.is_complex() or p.dtype == torch.bool:
            raise TypeError(f"perms[{name!r}] must hold integer indices, got {p.dtype}")
        if p.shape != (c,) or not torch.equal(torch.sort(p.cpu()).values, torch.arange(c)):
            raise ValueError(f"perms[{name!r}]: permutation {name!r} must be a permutation of 0..{c - 1}, "
                             f"got {p.tolist()[:12]}…")


def apply_permutation(model: nn.Module, perms: Perms, spec: PermutationSpec | None = None) -> nn.Module:
    """A copy of ``model`` with its channels permuted: new channel j of ``name`` is old channel ``perms[name][j]``.

    The network function is unchanged (the permutations are parameter symmetries).
    Permutations missing from ``perms`` are the identity.

    Args:
        model: the network (a VGG, MLP or attention layer/network unless ``spec`` is given).
        perms: ``{perm name: LongTensor (C,)}`` (or a
            :class:`~eqlib.symmetries.SymmetryElement` with unit scales: the same convention,
            new unit j is old unit ``perm[j]``).
        spec: the :class:`PermutationSpec` (default :func:`permutation_spec` of the model).

    Raises:
        TypeError: if perms is not a mapping, or the model has no default spec.
        ValueError: for an unknown name, a wrong length or a non-permutation.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    spec = spec or permutation_spec(model)
    perms = _as_permutations(perms)
    _check_perms(spec, perms)
    state = model.state_dict()
    new = {}
    for key, value in state.items():
        ax = spec.axes.get(key)
        if ax is not None:
            for a, name in enumerate(ax):
                if name is not None and name in perms:
                    value = value.index_select(a, torch.as_tensor(perms[name]).to(value.device))
        new[key] = value.clone()
    out = copy.deepcopy(model)
    out.load_state_dict(new)
    return out


def invert_permutation(p: torch.Tensor) -> torch.Tensor:
    """p⁻¹ with p⁻¹[p[j]] = j.

    Examples:
        >>> p = torch.tensor([2, 0, 1])
        >>> invert_permutation(p)
        tensor([1, 2, 0])
        >>> bool((p[invert_permutation(p)] == torch.arange(3)).all())
        True

    Chapter: *ReLU CNNs and GCNNs*.
    """
    p = _permutation("p", p)
    inv = torch.empty_like(p)
    inv[p] = torch.arange(len(p), device=p.device)
    return inv


def _permutation(name: str, p) -> torch.Tensor:
    """``p`` as a 1-D int64 tensor holding each of 0..n-1 exactly once (TypeError for a
    non-integer tensor or a non-sequence, ValueError for repeats or values out of range)."""
    if not isinstance(p, torch.Tensor):
        if isinstance(p, (str, bytes, set, frozenset, Mapping)) or not hasattr(p, "__len__"):
            raise TypeError(f"{name} must be a permutation (a 1-D integer tensor or sequence), got {show(p)}")
        try:
            arr = np.asarray(p)
            p = torch.as_tensor(arr.astype(np.int64) if arr.size == 0 else arr)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{name} must be a permutation (a 1-D integer tensor or sequence), got {show(p)}") from None
    check_tensor(name, p, ndim=1, dtype="integer")
    p = p.long()
    n = len(p)
    if n and not torch.equal(torch.sort(p).values, torch.arange(n, device=p.device)):
        raise ValueError(f"{name} must be a permutation of 0..{n - 1} (each once), got {show(p.tolist())}")
    return p


def involution_distance(p: torch.Tensor) -> float:
    """The fraction of channels c with p[p[c]] ≠ c (0 exactly when p is an involution).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    p = _permutation("p", p)
    if len(p) == 0:
        return 0.0
    return float((p[p] != torch.arange(len(p), device=p.device)).float().mean())


#: normalised CIFAR-10 pixels lie within about ±2.2; values above this are raw 0..255 pixels
IMAGE_ABS_MAX = 50.0


def _check_images(images: torch.Tensor, batch_size: int) -> int:
    """Normalised float images (N, C, H, W), N >= 1, finite; ``batch_size`` an integer >= 1."""
    check_tensor("images", images)
    if images.dim() != 4 or not images.is_floating_point():
        raise ValueError(f"images must be normalised float images (N, C, H, W), got {images.dtype} {tuple(images.shape)} "
                         "(convert uint8 images with eqlib.images.prepare_images)")
    if images.numel() and float(images.detach().abs().max()) > IMAGE_ABS_MAX:
        raise ValueError(f"images must be normalised (values within ±{IMAGE_ABS_MAX:g}), got values up to "
                         f"{float(images.detach().abs().max()):g}: 0..255 images? convert them with "
                         "eqlib.images.prepare_images")
    if images.shape[0] == 0:
        raise ValueError("images must hold at least one image, got none (shape "
                         f"{tuple(images.shape)}): the statistics of no data are undefined")
    check_finite("images", images)
    return check_int("batch_size", batch_size, 1)


def _check_model(name: str, model: nn.Module) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {show(model)}")
    for pname, t in list(model.named_parameters()) + list(model.named_buffers()):
        if t.is_floating_point():
            check_finite(f"{name}'s {pname}", t.detach())


def _batches(images: torch.Tensor, batch_size: int, device: torch.device) -> Iterator[torch.Tensor]:
    batch_size = _check_images(images, batch_size)
    for i in range(0, len(images), batch_size):
        yield images[i:i + batch_size].to(device)


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def channel_correlations(model_a: VGG, model_b: VGG, images: torch.Tensor, batch_size: int = 500
                         ) -> list[torch.Tensor]:
    """Pearson correlations between the channels of A and of B at every conv layer's output.

    Each channel's values over all images and all positions form one variable. The
    moments are accumulated batch by batch in float64 on the device, so the result is the
    same as ``torch.corrcoef`` on all activations at once without holding them. A channel
    that never varies (a dead ReLU) correlates 0 with everything.

    Returns:
        One (C_k, C_k) tensor per conv layer (on the CPU): entry [i, j] correlates A's
        channel i with B's channel j.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    dev = _device(model_a)
    was_a, was_b = model_a.training, model_b.training
    model_a.eval(), model_b.eval()
    model_b.to(dev)
    acc = None
    n_layers = len(model_a.layers) - 1
    for x in _batches(images, batch_size, dev):
        la = model_a.latents(x, upto=n_layers)
        lb = model_b.latents(x, upto=n_layers)
        if acc is None:
            acc = [dict(n=0.0, sa=0, sb=0, saa=0, sbb=0, sab=0) for _ in la]
        for s, a, b in zip(acc, la, lb):
            a = a.transpose(0, 1).reshape(a.shape[1], -1).double()  # (C, N·H·W)
            b = b.transpose(0, 1).reshape(b.shape[1], -1).double()
            s["n"] += a.shape[1]
            s["sa"] = s["sa"] + a.sum(1)
            s["sb"] = s["sb"] + b.sum(1)
            s["saa"] = s["saa"] + (a * a).sum(1)
            s["sbb"] = s["sbb"] + (b * b).sum(1)
            s["sab"] = s["sab"] + a @ b.T
    model_a.train(was_a), model_b.train(was_b)
    if acc is None:
        raise ValueError("no images given")
    out = []
    for s in acc:
        n = s["n"]
        ma, mb = s["sa"] / n, s["sb"] / n
        va = (s["saa"] / n - ma ** 2).clamp_min(0)
        vb = (s["sbb"] / n - mb ** 2).clamp_min(0)
        cov = s["sab"] / n - torch.outer(ma, mb)
        denom = torch.outer(va.sqrt(), vb.sqrt())
        corr = torch.where(denom > 1e-12, cov / denom.clamp_min(1e-300), torch.zeros_like(cov))
        out.append(corr.clamp(-1, 1).float().cpu())
    return out


def match_activations(model_a: VGG, model_b: VGG, images: torch.Tensor, *, batch_size: int = 500,
                      return_correlations: bool = False):
    """Activation matching: the channel permutations of B that best align it with A.

    For every conv layer, maximise the summed Pearson correlation (from
    :func:`channel_correlations`) over permutations with
    an exact assignment (``best_assignment`` of eqlib.symmetries). Layers are matched
    independently (correlations do not depend on how earlier layers are permuted).

    Returns:
        ``perms`` (``{"conv{k}": LongTensor}``), to be given to
        ``apply_permutation(model_b, perms)``; with ``return_correlations`` also the
        list of correlation matrices, already permuted so that entry [i, i] is the
        correlation of A's channel i with its match.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    spec = vgg_permutation_spec(model_a)
    check_bool("return_correlations", return_correlations)
    corrs = channel_correlations(model_a, model_b, images, batch_size)
    perms, matched = {}, []
    for name, c in zip(spec.names, corrs):
        p = best_assignment(c)
        perms[name] = p
        matched.append(c[:, p])
    return (perms, matched) if return_correlations else perms


def interpolate(model_a: nn.Module, model_b: nn.Module, alpha: float) -> nn.Module:
    """(1 − α) θ_A + α θ_B for every floating-point parameter and buffer (a new model).

    Integer buffers (such as BatchNorm's batch counters) are taken from A. Interpolated
    BatchNorm statistics are usually wrong for the merged network: see :func:`reset_bn`.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    alpha = check_float("alpha", alpha, 0.0, 1.0)
    _check_model("model_a", model_a)
    _check_model("model_b", model_b)
    sa, sb = model_a.state_dict(), model_b.state_dict()
    if sa.keys() != sb.keys():
        raise ValueError("model_a and model_b have different parameters; they must share one architecture")
    new = {}
    for k, va in sa.items():
        vb = sb[k].to(va.device)
        if va.shape != vb.shape:
            raise ValueError(f"{k} has shape {tuple(va.shape)} in A but {tuple(vb.shape)} in B")
        new[k] = torch.lerp(va, vb, float(alpha)) if va.is_floating_point() else va.clone()
    out = copy.deepcopy(model_a)
    out.load_state_dict(new)
    return out


def has_batchnorm(model: nn.Module) -> bool:
    """Whether ``model`` holds a BatchNorm layer (any ``nn.modules.batchnorm._BatchNorm``).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


@torch.no_grad()
def reset_bn(model: nn.Module, images: torch.Tensor, batch_size: int = 500) -> nn.Module:
    """BN reset: re-estimate every BatchNorm's running statistics on ``images`` (in place).

    ``torch.optim.swa_utils.update_bn`` zeroes the statistics and averages them over all
    batches (a cumulative, not exponential, average). A no-op without BatchNorm.

    Returns:
        ``model`` (in eval mode).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    _check_model("model", model)
    batch_size = _check_images(images, batch_size)
    if has_batchnorm(model):
        update_bn(_batches(images, batch_size, _device(model)), model)
        _check_model("the reset model", model)  # NaN statistics are an error, never a silent network
    return model.eval()


def _preactivation_stats(model: VGG, images: torch.Tensor, batch_size: int, upto: int
                         ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    dev = _device(model)
    sums = None
    for x in _batches(images, batch_size, dev):
        stats = []
        for layer in model.layers[:upto]:
            z = layer.preactivation(x)
            stats.append(z)
            x = layer.activate(z)
        flat = [z.transpose(0, 1).reshape(z.shape[1], -1).double() for z in stats]
        cur = [(f.sum(1), (f * f).sum(1), f.shape[1]) for f in flat]
        sums = cur if sums is None else [(a + c, b + d, n + m) for (a, b, n), (c, d, m) in zip(sums, cur)]
    if sums is None:
        raise ValueError("no images given")
    return [(s / n, (q / n - (s / n) ** 2).clamp_min(0).sqrt()) for s, q, n in sums]


@torch.no_grad()
def channel_statistics(model: VGG, images: torch.Tensor, batch_size: int = 500) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Mean and standard deviation of every channel of every conv layer's ReLU input, in eval mode.

    Returns:
        ``[(mean (C_k,), std (C_k,)), ...]`` in float64, over all images and positions.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    was = model.training
    model.eval()
    out = _preactivation_stats(model, images, batch_size, len(conv_layers(model)))
    model.train(was)
    return out


@torch.no_grad()
def repair(merged: VGG, model_a: VGG, model_b: VGG, images: torch.Tensor, *, alpha: float = 0.5,
           batch_size: int = 500, eps: float = 1e-6) -> VGG:
    """REPAIR (Jordan et al. 2023): give each channel of the merged network the interpolated statistics.

    For every conv layer in turn, the target of channel c is the mean
    (1 − α) μ_A + α μ_B and standard deviation (1 − α) σ_A + α σ_B of the endpoints'
    channel c (of the ReLU input, on ``images``); the affine map z ↦ (z − μ) σ_t/σ + μ_t
    that brings the merged channel there is folded into BatchNorm's weight and bias (or
    the conv's, without BatchNorm). Layers are corrected in order, each measured after
    the earlier ones are fixed, so every channel ends with exactly its target statistics
    on ``images``. Channels that never vary are left alone. B must already be aligned
    with A (permuted). ``alpha`` must lie in [0, 1] and ``eps`` be > 0; NaN weights or
    images and an empty image set are errors, never a NaN network.

    Returns:
        A repaired copy of ``merged`` (eval mode).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    alpha = check_float("alpha", alpha, 0.0, 1.0)
    eps = check_float("eps", eps, 0.0, low_open=True)
    batch_size = _check_images(images, batch_size)
    for name, model in (("merged", merged), ("model_a", model_a), ("model_b", model_b)):
        _check_model(name, model)
    stats_a = channel_statistics(model_a, images, batch_size)
    stats_b = channel_statistics(model_b, images, batch_size)
    out = copy.deepcopy(merged).eval()
    for k, layer in enumerate(conv_layers(out)):
        mean_m, std_m = _preactivation_stats(out, images, batch_size, k + 1)[k]
        (ma, sa), (mb, sb) = stats_a[k], stats_b[k]
        mt, st = (1 - alpha) * ma + alpha * mb, (1 - alpha) * sa + alpha * sb
        scale = torch.where(std_m > eps, st / std_m.clamp_min(eps), torch.ones_like(std_m))
        shift = mt - mean_m * scale
        target = layer.bn if layer.bn is not None else layer.conv
        w, b = target.weight, target.bias
        dt = w.dtype
        if layer.bn is not None:
            w.mul_(scale.to(w.device, dt))
        else:
            w.mul_(scale.to(w.device, dt).view(-1, 1, 1, 1))
        b.mul_(scale.to(b.device, dt)).add_(shift.to(b.device, dt))
    return out
