"""The GCNN barrier's filter distances: how far a CNN's conv filters are from the mirror-GCNN
constraint, plain and scale-invariant, and BatchNorm's positive channel rescaling.
:mod:`eqlib.experiments.gcnn_barrier` re-exports every name.

Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
"""
from __future__ import annotations

import copy

import numpy as np
import torch

from ..models.cnn import VGG, conv_layers
from ..seeds import torch_generator
from ..symmetries import best_assignment
from ..validation import check_tensor

__all__ = ["filter_distance", "gcnn_filter_distance", "normalize_kernels", "min_scaled_filter_distance",
           "rescale_channels"]


def normalize_kernels(weight: torch.Tensor) -> torch.Tensor:
    """Every k×k kernel ``W[o, c]`` of a conv weight divided by its Frobenius norm (zero kernels stay 0).

    The result is unchanged when kernel (o, c) is multiplied by any positive number, in
    particular by the per-channel positive rescalings a_o / s_c that BatchNorm and ReLU
    allow (:func:`rescale_channels`). Double precision.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    check_tensor("weight", weight, ndim=4, dtype="real")
    w = weight.detach().double()
    n = w.flatten(2).norm(dim=2)[..., None, None]
    return torch.where(n > 0, w / n.clamp_min(1e-300), torch.zeros_like(w))


def _channel_permutation(name: str, p: object) -> torch.Tensor:
    """An integer permutation as a CPU long tensor; floats, bools and complex are refused (never rounded)."""
    if not isinstance(p, torch.Tensor):
        try:
            p = torch.as_tensor(np.asarray(p))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a permutation (integers), got {type(p).__name__}") from exc
    check_tensor(name, p, ndim=1, dtype="integer")
    return p.detach().cpu().long()


def filter_distance(weight: torch.Tensor, pi_out: torch.Tensor, pi_in: torch.Tensor | None = None,
                    scale_invariant: bool = False) -> float:
    """Normalised distance of a conv weight from the mirror-GCNN constraint of chapter 10.

    With :math:`TW = \\bar W[\\pi_{out}][:, \\pi_{in}]` (flip horizontally, permute output
    and input channels),

    .. math::
        d(W) = \\frac{\\lVert W - TW\\rVert}{\\lVert W\\rVert + \\lVert TW\\rVert}
             = \\frac{\\lVert W - \\mathcal R W\\rVert}{\\lVert W\\rVert}\\in[0, 1],

    where :math:`\\mathcal R = \\tfrac12(1 + T)` (T is an isometry); when the π's are
    involutions, T is an involution and :math:`\\mathcal R`, the Reynolds average over
    {1, T}, is the orthogonal projection onto the constraint: 0 exactly on GCNN filters,
    1 when TW = −W, about :math:`1/\\sqrt2 \\approx 0.71` for W and TW unrelated. Frobenius
    norms; ``pi_in`` None is the identity (the RGB input).

    With ``scale_invariant`` the same formula is applied to :func:`normalize_kernels` (W)
    (every k×k kernel scaled to norm 1): the **scale-invariant filter distance**
    :math:`\\hat d(W) = d(\\hat W) = \\sqrt{(1 - \\overline{\\cos})/2}`, with
    :math:`\\overline{\\cos}` the mean over non-zero kernels of the cosine between kernel
    (o, c) and the mirrored kernel (π_out(o), π_in(c)). It is unchanged by positive
    rescalings of channels (BatchNorm's positive symmetry) and 0 on GCNN filters; ``d`` is
    not. Neither absorbs BatchNorm's sign symmetry (conv output channel and γ_o both times
    −1), which keeps the function and can make both positive on a GCNN.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"weight must be a conv weight tensor (C_out, C_in, k, k), got {type(weight).__name__}")
    if weight.dim() != 4:
        raise ValueError(f"weight must be a conv weight (C_out, C_in, k, k), got shape {tuple(weight.shape)}")
    check_tensor("weight", weight, dtype="real")
    pi_in = torch.arange(weight.shape[1]) if pi_in is None else _channel_permutation("pi_in", pi_in)
    pi_out = _channel_permutation("pi_out", pi_out)
    for name, p, n in (("pi_out", pi_out, weight.shape[0]), ("pi_in", pi_in, weight.shape[1])):
        if p.shape != (n,) or not torch.equal(torch.sort(p).values, torch.arange(n)):
            raise ValueError(f"{name} must be a permutation of {n} channels, got {p.tolist()}")
    w = normalize_kernels(weight) if scale_invariant else weight.detach().double()
    tw = w.flip(-1)[pi_out][:, pi_in]
    den = float(w.norm() + tw.norm())
    return float((w - tw).norm()) / den if den > 0 else 0.0


def gcnn_filter_distance(model: VGG, perms: dict[str, torch.Tensor], scale_invariant: bool = False
                         ) -> dict[str, float]:
    """:func:`filter_distance` of every conv layer of ``model`` under the matched ``perms``
    (``{"conv0": π_0, ...}``, the output permutation of each layer; the input permutation
    of layer i is layer i − 1's); ``scale_invariant`` as there.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    layers = conv_layers(model)
    if len(layers) != len(perms):
        raise ValueError(f"perms must hold one permutation per conv layer ({len(layers)}), got {len(perms)}")
    out, prev = {}, None
    for layer, (name, p) in zip(layers, perms.items()):
        out[name] = filter_distance(layer.conv.weight, torch.as_tensor(p), prev, scale_invariant)
        prev = torch.as_tensor(p)
    return out


def min_scaled_filter_distance(model: VGG, start: dict[str, torch.Tensor] | None = None, sweeps: int = 20
                              ) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """The scale-invariant filter distance minimised over channel permutations, layer by layer.

    Minimises :math:`\\sum_i \\hat d_i^2` (the squared scale-invariant distances of the conv
    layers, :func:`filter_distance` with ``scale_invariant``) over the tuple
    (π_0, π_1, …) of output permutations by exact block-coordinate descent: with the other
    layers fixed, :math:`\\hat d_i^2` and :math:`\\hat d_{i+1}^2` are affine in the
    assignment score :math:`\\sum_o S[o, \\pi_i(o)]`, so each step is a linear assignment
    problem solved exactly (``scipy.optimize.linear_sum_assignment``, O(C³)). The sum
    never increases, so the result is at most its value at ``start`` (default: the
    identity); when the loop ends before ``sweeps`` runs out it is a local minimum (no
    single layer can improve), not necessarily the global one. The minimisers are permutations: they are involutions when the scores
    are symmetric and the optimum unique (check with
    :func:`~eqlib.matching.involution_distance`).

    Returns:
        ``({"conv0": d̂_0, ...}, {"conv0": π_0, ...})`` at the minimiser.

    Chapter: *ReLU CNNs and GCNNs*.
    """

    ws = [normalize_kernels(layer.conv.weight) for layer in conv_layers(model)]
    names = [f"conv{i}" for i in range(len(ws))]
    if start is None:
        perms = [torch.arange(w.shape[0]) for w in ws]
    else:
        if list(start) != names:
            raise ValueError(f"start must give the permutations {names}, got {list(start)}")
        perms = [torch.as_tensor(start[k]).long().clone() for k in names]
    sizes = [max(float((w * w).sum()), 1e-300) for w in ws]  # ‖Ŵ_i‖² = number of non-zero kernels
    for _ in range(max(1, int(sweeps))):
        changed = False
        for i, w in enumerate(ws):
            pin = perms[i - 1] if i > 0 else torch.arange(w.shape[1])
            score = torch.einsum("ocxy,pcxy->op", w, w.flip(-1)[:, pin]) / sizes[i]
            if i + 1 < len(ws):
                nxt = ws[i + 1]
                g = nxt.flip(-1)[perms[i + 1]]
                score = score + torch.einsum("ocxy,oqxy->cq", nxt, g) / sizes[i + 1]
            new = best_assignment(score)
            cur = float(score[torch.arange(len(new)), perms[i]].sum())
            if float(score[torch.arange(len(new)), new].sum()) > cur + 1e-12:
                perms[i], changed = new, True
        if not changed:
            break
    out = {k: v for k, v in zip(names, perms)}
    return gcnn_filter_distance(model, out, scale_invariant=True), out


def rescale_channels(model: VGG, seed: int = 0, low: float = 0.25, high: float = 4.0) -> VGG:
    """A copy of ``model`` (with BatchNorm) whose channels are rescaled by random positive factors
    without changing the function it computes: BatchNorm's per-channel symmetry.

    For every conv layer, output channel o of the convolution (weight, bias) is multiplied by
    a_o and the BatchNorm statistics follow (running mean by a_o, running variance by a_o²);
    the BatchNorm output channel (weight, bias) is multiplied by s_o and the next layer's
    input channel (conv weight, or the classifier's column) by 1/s_o (ReLU and max-pooling
    commute with positive scalings). a_o, s_o are drawn log-uniformly from [low, high]. The
    function is unchanged up to BatchNorm's ε (it divides by √(a²·var + ε), not
    a·√(var + ε)), exactly when ε = 0; with or without a BN reset.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    layers = conv_layers(model)
    if not layers or any(l.bn is None for l in layers):
        raise ValueError("rescale_channels needs a VGG with BatchNorm after every convolution")
    if not 0 < low <= high:
        raise ValueError(f"need 0 < low <= high, got {low}, {high}")
    out = copy.deepcopy(model).eval()
    gen = torch_generator(int(seed))
    layers = conv_layers(out)
    lo, hi = float(np.log(low)), float(np.log(high))
    with torch.no_grad():
        for i, layer in enumerate(layers):
            n = layer.conv.out_channels
            a = torch.exp(lo + (hi - lo) * torch.rand(n, generator=gen, dtype=torch.float64)).float()
            s = torch.exp(lo + (hi - lo) * torch.rand(n, generator=gen, dtype=torch.float64)).float()
            layer.conv.weight.mul_(a.view(-1, 1, 1, 1))
            layer.conv.bias.mul_(a)
            layer.bn.running_mean.mul_(a)
            layer.bn.running_var.mul_(a * a)
            layer.bn.weight.mul_(s)
            layer.bn.bias.mul_(s)
            if i + 1 < len(layers):
                layers[i + 1].conv.weight.div_(s.view(1, -1, 1, 1))
            else:
                out.layers[-1].linear.weight.div_(s.view(1, -1))
    return out
