"""The GCNN barrier on CIFAR-10: is a trained ReLU CNN close to a mirror-GCNN? (Bökman & Kahl 2023)

Flip every filter of a trained CNN θ (the flipped network computes f(mirror x)), align
its channels to θ by activation matching, and merge: the midpoint ½(θ + π·flip θ) is
exactly a mirror-GCNN when every matched permutation π is an involution. The
**GCNN barrier** is how much test accuracy the midpoint loses. We compare it with the
barrier of merging two independently trained networks.

Definition used here (ours; the paper's exact equation is not available to us):

.. math::
    B = \\tfrac12\\big(\\mathrm{acc}(\\theta_A) + \\mathrm{acc}(\\theta_B)\\big)
        - \\mathrm{acc}\\big(\\tfrac12(\\theta_A + \\theta_B)\\big)

in percentage points of test accuracy, with θ_B the aligned partner (π·flip θ_A for the
self-flip merge), and the midpoint's normalisation statistics either interpolated,
re-estimated (BN reset) or REPAIRed; for the BN-reset and REPAIR barriers the endpoints'
statistics are re-estimated on the same images too, so all three are measured alike, and
REPAIR's target statistics are those of the BN-reset endpoints. A GCNN whose matched
permutations are its own involutions is its own aligned flipped copy and its own midpoint,
so its self-flip barrier is exactly 0 in all three columns (up to float rounding in
REPAIR's rescaling). The **loss barrier** is the same
comparison for the test cross-entropy, with the sign turned so that a positive barrier
is a loss: the midpoint's loss minus the endpoints' mean loss, in nats, in the same three
columns. All matching, BN resets and REPAIR use a mirror-symmetric set (training images
and their mirrors), which makes the self-flip correlation matrices symmetric and so the
matched permutations involutions unless the assignment has ties.

CLI::

    python -m eqlib.experiments.gcnn_barrier --budget laptop --device cpu --seeds 0,1,2 --out results/
    python -m eqlib.experiments.gcnn_barrier --budget full --device cpu --seeds 0,1 \\
        --set widths=0.0625 --set n_train=256 --set epochs=1 --parts barriers --out /tmp/tiny  # smoke test
    python -m eqlib.experiments.gcnn_barrier --budget full --device cuda --out results/   # a GPU
    bash benchmarks/record_medium.sh   # the medium record on a CPU: hours, resumable (kill and rerun)

Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import json
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..budget import budget as select_budget
from ..budget import budget_choices
from ..device import default_device
from ..images import mirror_images, prepare_images
from ..io import atomic_write, cache_dir, config_hash, content_hash, warn_once
from ..matching import (apply_permutation, interpolate, involution_distance, match_activations, repair,
                        reset_bn)
from ..models.cnn import VGG, MirrorGCNN, conv_layers, flip_filters, mirror_invariance_error
from ..train import TrainConfig, cached_train, evaluate_accuracy, image_preset
from ..validation import check_tensor
from . import html_table, protocol

__all__ = ["VARIANTS", "BarrierBudget", "CropBudget", "BUDGETS", "MergeData", "load_merge_data", "build_network",
           "train_config", "train_networks", "gcnn_barrier", "merge_barrier", "interpolation_curve",
           "summarize", "summary_table", "summary_table_html", "run_experiment", "main",
           "filter_distance", "gcnn_filter_distance", "normalize_kernels", "min_scaled_filter_distance",
           "rescale_channels", "network_seeds", "apply_overrides", "PARTS"]

#: The training variants (plain, mirror augmentation, augmentation + invariance loss, mirror-GCNN).
VARIANTS = ("plain", "mirror", "invariance", "gcnn")


@dataclass(frozen=True)
class BarrierBudget:
    """Sizes of one run of the experiment.

    Attributes:
        config: VGG configuration (see :class:`eqlib.models.cnn.VGG`).
        widths: width multipliers measured (the first is the main one).
        variants: training variants at the main width; the other widths train
            ``extra_variants``.
        extra_variants: variants trained at the other widths.
        networks: independently trained networks per (variant, width); every pair is merged.
        n_train, n_match, n_test: training images, matching/BN-reset images (before adding
            their mirrors), test images.
        epochs, batch_size, lr, optimizer, momentum, weight_decay, schedule: the trainer's.
        penalty_weight, penalty_start: the invariance loss of the ``"invariance"`` variant.
        fixed_fraction: channels fixed by π in the GCNN (symmetric filters in layer 1).
        alphas: points of the interpolation curves.
        seeds: the networks' seeds (empty: ``0 .. networks − 1``); the CLI's ``--seeds``.
        amp: ``"bf16"`` trains and evaluates under bfloat16 autocast (GPU speed), ``"none"`` not.
        channels_last: train in the channels-last memory format (faster convolutions on GPUs).

    Chapter: *ReLU CNNs and GCNNs*.
    """

    config: tuple = (8, "M", 16, "M", 32, "M", 64, "M")
    widths: tuple[float, ...] = (1.0, 0.5)
    variants: tuple[str, ...] = VARIANTS
    extra_variants: tuple[str, ...] = ("plain", "invariance")
    networks: int = 3
    n_train: int = 2500
    n_match: int = 250
    n_test: int = 1000
    epochs: int = 3
    batch_size: int = 128
    lr: float = 2e-3
    optimizer: str = "adam"
    momentum: float = 0.9
    weight_decay: float = 0.0
    schedule: str = "constant"
    penalty_weight: float = 10.0
    penalty_start: float = 0.5
    fixed_fraction: float = 0.25
    alphas: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    seeds: tuple[int, ...] = ()
    amp: str = "none"
    channels_last: bool = False

    def __post_init__(self):
        if self.amp not in ("none", "bf16"):
            raise ValueError(f"BarrierBudget.amp must be 'none' or 'bf16', got {self.amp!r}")
        if not isinstance(self.channels_last, bool):
            raise TypeError(f"BarrierBudget.channels_last must be a bool, got {self.channels_last!r}")
        if isinstance(self.networks, bool) or not isinstance(self.networks, int) or self.networks < 1:
            raise ValueError(f"BarrierBudget.networks must be an int >= 1, got {self.networks!r}")
        seeds = tuple(self.seeds)
        if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in seeds) or len(set(seeds)) != len(seeds):
            raise ValueError(f"BarrierBudget.seeds must be distinct ints >= 0, got {self.seeds!r}")
        object.__setattr__(self, "seeds", seeds)


#: epochs of the ``medium`` budget
MEDIUM_EPOCHS = 15


@dataclass(frozen=True)
class CropBudget(BarrierBudget):
    """A :class:`BarrierBudget` whose networks all train with translation augmentation
    (the ``medium`` budget). A subclass, so that the settings recorded by the budgets
    without it stay as they were.

    Attributes:
        augment_crop: pad every training image by this many black pixels and crop a random
            32×32 window, for every variant (``TrainConfig.augment_crop``); 0: none.

    Chapter: *ReLU CNNs and GCNNs*.
    """

    augment_crop: int = 4

    def __post_init__(self):
        super().__post_init__()
        if isinstance(self.augment_crop, bool) or not isinstance(self.augment_crop, int) \
                or not 0 <= self.augment_crop <= 16:
            raise ValueError(f"CropBudget.augment_crop must be an int in 0..16, got {self.augment_crop!r}")


def network_seeds(b: "BarrierBudget") -> tuple[int, ...]:
    """The seeds of the networks of every cell: ``b.seeds``, or ``0 .. b.networks − 1`` when empty.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    return b.seeds if b.seeds else tuple(range(b.networks))


#: ``laptop`` (the default): a narrow VGG on a CIFAR-10 subset, minutes on 2 CPU cores; ``full``: VGG11 (REPAIR's recipe,
#: without the translation augmentation, 10 epochs) on the full training set, for a GPU; ``medium``: VGG11's layers
#: at 1/8 width on the full training set with crop augmentation, for a CPU over hours (resumable).
BUDGETS: dict[str, BarrierBudget] = {
    "laptop": BarrierBudget(),
    # sized so the whole benchmarks/gpu_check.sh fits in 8 minutes on one H200: 4 variants x 3
    # networks of VGG11 at width 1, 10 epochs each, bf16 autocast and channels-last
    "full": BarrierBudget(config=(64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
                          widths=(1.0,), extra_variants=(), networks=3, n_train=50000, n_match=2500,
                          n_test=10000, epochs=10, batch_size=500, lr=0.08, optimizer="sgd", momentum=0.9,
                          weight_decay=5e-4, schedule="warmup_linear", penalty_weight=10.0,
                          alphas=tuple(np.round(np.linspace(0, 1, 11), 2).tolist()), amp="bf16",
                          channels_last=True),
    # VGG11's layers at 1/8 width (8,M,16,M,32,32,M,64,64,M,64,64,M) on all 50,000 images with
    # 4-pixel crops (and the variants' flips), SGD with warm-up and linear decay: the CPU record
    # (benchmarks/record_medium.sh), every network resumable through the model cache
    "medium": CropBudget(config=(64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
                         widths=(0.125,), extra_variants=(), networks=3, n_train=50000, n_match=2500,
                         n_test=10000, epochs=MEDIUM_EPOCHS, batch_size=500, lr=0.08, optimizer="sgd",
                         momentum=0.9, weight_decay=5e-4, schedule="warmup_linear", penalty_weight=10.0,
                         alphas=tuple(np.round(np.linspace(0, 1, 11), 2).tolist()), augment_crop=4),
}


@dataclass
class MergeData:
    """Images for merging: ``match`` (normalised float, mirror-closed) and the test split (uint8).

    Attributes:
        match: (2M, 3, 32, 32) float, M training images followed by their mirrors,
            normalised; used for matching, BN reset and REPAIR.
        test_images: uint8 (N, 3, 32, 32); ``test_labels``: int64 (N,).

    Chapter: *ReLU CNNs and GCNNs*.
    """

    match: torch.Tensor
    test_images: torch.Tensor
    test_labels: torch.Tensor

    @classmethod
    def from_images(cls, match_images: torch.Tensor, test_images: torch.Tensor, test_labels: torch.Tensor
                    ) -> "MergeData":
        """Build from uint8 training images (their mirrors are added) and the test split."""
        try:
            x = prepare_images(match_images)
        except (TypeError, ValueError) as exc:  # name the argument: prepare_images calls it images
            raise type(exc)(f"match_images: {exc}") from None
        check_tensor("test_images", test_images, ndim=4, nonempty=True)
        check_tensor("test_labels", test_labels, dtype="integer", ndim=1)
        if len(test_labels) != len(test_images):
            raise ValueError(f"test_labels must hold one label per test image ({len(test_images)}), "
                             f"got {len(test_labels)}")
        return cls(torch.cat([x, mirror_images(x)]), test_images, test_labels)


def load_merge_data(b: BarrierBudget, root: str | None = None, download: bool | None = None):
    """The training subset (images, labels) and :class:`MergeData` for budget ``b``.

    ``download`` is passed to :func:`~eqlib.data.load_cifar10` (None: download CIFAR-10
    when it is not found and ``$EQLIB_DATA`` is unset, unless ``EQLIB_DOWNLOAD=0``).

    The matching images are drawn from the training split independently of the training
    subset (the two may overlap; BN statistics are estimated on training data).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    from ..data import load_cifar10, subset

    train_set = load_cifar10("train", root, download=download)
    test_set = load_cifar10("test", root, download=download)
    tr = subset(train_set, b.n_train, seed=0) if b.n_train < len(train_set) else train_set
    te = subset(test_set, b.n_test, seed=0) if b.n_test < len(test_set) else test_set
    match = subset(train_set, b.n_match, seed=1)
    return (tr.images, tr.labels), MergeData.from_images(match.images, te.images, te.labels)


def build_network(variant: str, width: float, seed: int, b: BarrierBudget) -> VGG:
    """A fresh network of ``variant`` (a :class:`~eqlib.models.MirrorGCNN` for ``"gcnn"``, else a BatchNorm VGG).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
    if variant == "gcnn":
        return MirrorGCNN(list(b.config), width=width, seed=seed, fixed_fraction=b.fixed_fraction)
    return VGG(list(b.config), width=width, seed=seed)


def train_config(variant: str, seed: int, b: BarrierBudget) -> TrainConfig:
    """The :class:`eqlib.train.TrainConfig` of a variant: ``plain`` and ``gcnn`` without mirror augmentation,
    ``mirror`` with mirror augmentation, ``invariance`` with augmentation plus the invariance loss;
    every variant with the budget's crop augmentation (:class:`CropBudget`). (Flipping a
    GCNN's inputs would change nothing: it is mirror-invariant.)

    Chapter: *ReLU CNNs and GCNNs*.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
    extra: dict[str, Any] = {}
    if variant in ("mirror", "invariance"):
        extra["augment_mirror"] = True
    if variant == "invariance":
        extra.update(penalty="invariance", penalty_weight=b.penalty_weight, penalty_start=b.penalty_start)
    if getattr(b, "augment_crop", 0):
        extra["augment_crop"] = b.augment_crop
    return TrainConfig(task="classify", epochs=b.epochs, batch_size=b.batch_size, lr=b.lr, optimizer=b.optimizer,
                       momentum=b.momentum, weight_decay=b.weight_decay, schedule=b.schedule, seed=seed, **extra)


def _autocast(b: BarrierBudget, device) -> contextlib.AbstractContextManager:
    if b.amp == "none":
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def train_networks(b: BarrierBudget, train_data, device=None, progress: bool = False,
                   log: Callable[[str], None] | None = None, test_data=None
                   ) -> dict[tuple[str, float], list[nn.Module]]:
    """Train (or load from the cache) one network per seed of :func:`network_seeds` per (variant, width).

    With ``b.amp == "bf16"`` training runs under bfloat16 autocast, with ``b.channels_last``
    in the channels-last memory format; both are part of the cache key when on.

    Every network goes through :func:`eqlib.train.cached_train`: a finished one is loaded,
    never retrained, and one in progress checkpoints every epoch, so a run killed at any
    moment and started again resumes from the last finished epoch (with the weights an
    uninterrupted run gets). ``log`` (e.g. ``print``) receives a line per network and per
    trained epoch (wall-clock seconds, the process's CPU seconds since the last line, the
    training accuracy and, given ``test_data = (uint8 images, labels)``, the test accuracy,
    which leaves the training and its cache key unchanged).

    Returns:
        ``{(variant, width): [model, ...]}``, models on the CPU in eval mode (float32,
        contiguous); GCNNs are converted to plain VGGs
        (:meth:`~eqlib.models.MirrorGCNN.to_cnn`) so every tool applies.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    dev = default_device(device)
    fmt = torch.channels_last if b.channels_last else torch.contiguous_format
    extra = {k: v for k, v in (("amp", b.amp), ("channels_last", b.channels_last)) if v not in ("none", False)}
    out = {}
    for w in b.widths:
        for variant in (b.variants if w == b.widths[0] else b.extra_variants):
            nets = []
            for s in network_seeds(b):
                name, cpu = f"{variant}@{w:g} seed {s}", [time.process_time()]

                def epoch_done(epoch, model, history, name=name, cpu=cpu):
                    used, cpu[0] = time.process_time() - cpu[0], time.process_time()  # this process's CPU time
                    test = "" if test_data is None else \
                        f", test {100 * evaluate_accuracy(model, *test_data, batch_size=1000):.2f} %"
                    log(f"{name}: epoch {epoch}/{b.epochs} in {history['seconds'][-1]:.1f} s (CPU time "
                        f"{used:.0f} s), train loss {history['task_loss'][-1]:.4f}, train "
                        f"{100 * history['accuracy'][-1]:.2f} %{test}")

                t0 = time.perf_counter()
                with _autocast(b, dev):
                    res = cached_train(lambda: build_network(variant, w, s, b).to(memory_format=fmt),
                                       train_config(variant, s, b), train_data, device=dev, progress=progress,
                                       cache_key_extra=extra or None,
                                       hooks={"after_epoch": epoch_done} if log else None,
                                       **image_preset(tuple(train_data[0].shape[1:])))
                if log:
                    log(f"{name}: loaded from the cache" if res.from_cache else
                        f"{name}: trained in {time.perf_counter() - t0:.0f} s")
                m = res.model.cpu().float().to(memory_format=torch.contiguous_format).eval()
                nets.append(m.to_cnn().eval() if isinstance(m, MirrorGCNN) else m)
            out[(variant, w)] = nets
    return out


def _acc(model: nn.Module, data: MergeData) -> float:
    return 100.0 * evaluate_accuracy(model, data.test_images, data.test_labels, batch_size=1000)


@torch.no_grad()
def _acc_loss(model: nn.Module, data: MergeData, batch_size: int = 1000) -> tuple[float, float]:
    """Test accuracy (%) and mean cross-entropy of ``model`` on ``data``'s test split, in one pass
    (the accuracy is :func:`~eqlib.train.evaluate_accuracy`'s)."""
    dev = next(model.parameters()).device
    was_training = model.training
    model.eval()
    correct, loss, n = 0, 0.0, len(data.test_labels)
    for i in range(0, n, batch_size):
        out = model(prepare_images(data.test_images[i:i + batch_size].to(dev))).float()
        lab = data.test_labels[i:i + batch_size].to(dev)
        correct += int((out.argmax(1) == lab).sum())
        loss += float(nn.functional.cross_entropy(out, lab, reduction="sum"))
    model.train(was_training)
    return 100.0 * correct / max(1, n), loss / max(1, n)


def _invariance(model: nn.Module, data: MergeData, n: int = 250) -> float:
    dev = next(model.parameters()).device
    x = prepare_images(data.test_images[:n]).to(dev)
    return mirror_invariance_error(model, x)


def interpolation_curve(model_a: nn.Module, model_b: nn.Module, data: MergeData, alphas: Sequence[float],
                        mode: str = "reset") -> list[float]:
    """Test accuracy (%) of (1 − α) θ_A + α θ_B along ``alphas``; B must be aligned with A.

    ``mode``: ``"none"`` (interpolated statistics), ``"reset"`` (BN reset) or
    ``"repair"`` (BN reset, then REPAIR towards the statistics of the BN-reset endpoints),
    all on ``data.match``.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    if mode not in ("none", "reset", "repair"):
        raise ValueError(f"mode must be 'none', 'reset' or 'repair', got {mode!r}")
    if mode == "repair":  # REPAIR's targets: the endpoints after their own BN reset
        ref_a, ref_b = _reset_copy(model_a, data), _reset_copy(model_b, data)
    accs = []
    for a in alphas:
        m = interpolate(model_a, model_b, float(a))
        if mode != "none":
            reset_bn(m, data.match)
        if mode == "repair":
            m = repair(m, ref_a, ref_b, data.match, alpha=float(a))
        accs.append(_acc(m, data))
    return accs


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
    from scipy.optimize import linear_sum_assignment

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
            rows, cols = linear_sum_assignment(score.numpy(), maximize=True)
            new = torch.as_tensor(cols[np.argsort(rows)]).long()
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
    gen = torch.Generator().manual_seed(int(seed))
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


def _reset_copy(model: nn.Module, data: MergeData) -> nn.Module:
    return reset_bn(copy.deepcopy(model), data.match)


def _merge(model_a: nn.Module, model_b: nn.Module, data: MergeData, alphas: Sequence[float] | None,
           kind: str) -> dict[str, Any]:
    model_a = model_a.to_cnn() if isinstance(model_a, MirrorGCNN) else model_a
    model_a = model_a.eval()
    perms, corrs = match_activations(model_a, model_b, data.match, return_correlations=True)
    aligned = apply_permutation(model_b, perms).eval()
    (acc_a, loss_a), (acc_b, loss_b) = _acc_loss(model_a, data), _acc_loss(aligned, data)
    # endpoints with their statistics re-estimated on the same images as the midpoint's; these
    # BN-reset endpoints are also REPAIR's targets (a GCNN, its own midpoint, then stays put)
    reset_a, reset_b = _reset_copy(model_a, data), _reset_copy(aligned, data)
    (acc_a_reset, loss_a_reset), (acc_b_reset, loss_b_reset) = _acc_loss(reset_a, data), _acc_loss(reset_b, data)
    mean, mean_reset = 0.5 * (acc_a + acc_b), 0.5 * (acc_a_reset + acc_b_reset)
    lmean, lmean_reset = 0.5 * (loss_a + loss_b), 0.5 * (loss_a_reset + loss_b_reset)
    mid = interpolate(model_a, aligned, 0.5).eval()
    acc_mid, loss_mid = _acc_loss(mid, data)
    inv_mid = _invariance(mid, data)
    reset_bn(mid, data.match)
    acc_reset, loss_reset = _acc_loss(mid, data)
    inv_reset = _invariance(mid, data)
    rep = repair(mid, reset_a, reset_b, data.match, alpha=0.5)
    acc_repair, loss_repair = _acc_loss(rep, data)
    inv_a, inv_b = _invariance(model_a, data), _invariance(aligned, data)
    inv_dist = {k: involution_distance(p) for k, p in perms.items()}
    report = {
        "kind": kind,
        "acc_a": acc_a, "acc_b": acc_b, "endpoint_mean": mean,
        "acc_a_reset": acc_a_reset, "acc_b_reset": acc_b_reset, "endpoint_mean_reset": mean_reset,
        "acc_mid": acc_mid, "acc_mid_reset": acc_reset, "acc_mid_repair": acc_repair,
        "barrier": mean - acc_mid, "barrier_reset": mean_reset - acc_reset, "barrier_repair": mean_reset - acc_repair,
        "loss_a": loss_a, "loss_b": loss_b, "loss_a_reset": loss_a_reset, "loss_b_reset": loss_b_reset,
        "loss_mid": loss_mid, "loss_mid_reset": loss_reset, "loss_mid_repair": loss_repair,
        "loss_barrier": loss_mid - lmean, "loss_barrier_reset": loss_reset - lmean_reset,
        "loss_barrier_repair": loss_repair - lmean_reset,
        "involution_distance": inv_dist,
        "involution_distance_mean": float(np.mean(list(inv_dist.values()))),
        "matched_correlation": {k: float(c.diagonal().mean()) for k, c in zip(perms, corrs)},
        "invariance_a": inv_a, "invariance_b": inv_b, "invariance_mid": inv_mid,
        "invariance_mid_reset": inv_reset, "invariance_mid_repair": _invariance(rep, data),
        "perms": {k: p.tolist() for k, p in perms.items()},
    }
    if kind == "self-flip":
        dist = gcnn_filter_distance(model_a, perms)
        report["filter_distance"] = dist
        report["filter_distance_mean"] = float(np.mean(list(dist.values())))
        scaled = gcnn_filter_distance(model_a, perms, scale_invariant=True)
        report["filter_distance_scaled"] = scaled
        report["filter_distance_scaled_mean"] = float(np.mean(list(scaled.values())))
        best, best_perms = min_scaled_filter_distance(model_a, perms)
        report["filter_distance_min"] = best
        report["filter_distance_min_mean"] = float(np.mean(list(best.values())))
        report["filter_distance_min_involution_distance"] = {k: involution_distance(p) for k, p in best_perms.items()}
        report["filter_distance_min_perms"] = {k: p.tolist() for k, p in best_perms.items()}
    if alphas is not None:
        report["alphas"] = [float(a) for a in alphas]
        report["curve_reset"] = interpolation_curve(model_a, aligned, data, alphas, "reset")
    return report


def gcnn_barrier(model: nn.Module, data: MergeData, alphas: Sequence[float] | None = None) -> dict[str, Any]:
    """The self-flip merge of ``model`` with its own flipped copy: the GCNN barrier and its diagnostics.

    Returns a dict (JSON-serialisable) with, in percent / percentage points:
    ``acc_a`` (θ), ``acc_b`` (π·flip θ, i.e. θ on mirrored images), ``endpoint_mean``,
    the same after a BN reset of each endpoint (``acc_a_reset``, ``acc_b_reset``,
    ``endpoint_mean_reset``), ``acc_mid`` / ``acc_mid_reset`` / ``acc_mid_repair`` (midpoint
    with interpolated statistics, after BN reset, after BN reset + REPAIR), ``barrier``
    (endpoint mean minus midpoint, both with their own statistics) / ``barrier_reset`` /
    ``barrier_repair`` (BN-reset endpoint mean minus the BN-reset / REPAIRed midpoint:
    endpoints and midpoint measured alike; REPAIR's targets are the BN-reset endpoints, so
    for a GCNN all three are 0); ``loss_a`` … ``loss_mid_repair`` (test cross-entropy, nats)
    and ``loss_barrier`` / ``loss_barrier_reset`` / ``loss_barrier_repair`` (midpoint's loss
    minus the endpoints' mean loss, same pairing as the accuracy barriers);
    ``filter_distance`` per layer (:func:`gcnn_filter_distance`) and its mean;
    ``filter_distance_scaled`` (the scale-invariant form at the matched permutations) and
    ``filter_distance_min`` (minimised by :func:`min_scaled_filter_distance`, started at the
    matched permutations), their means, the minimisers (``filter_distance_min_perms``) and
    their distance from an involution; ``involution_distance`` per layer
    (fraction of channels c with π(π(c)) ≠ c) and its mean; ``matched_correlation`` per
    layer; the mirror-invariance error ‖f(mx) − f(x)‖/‖f(x)‖ on test images of A, B and
    the midpoints; ``perms``; and, given ``alphas``, ``curve_reset`` (accuracy along α
    after BN reset).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    model = (model.to_cnn() if isinstance(model, MirrorGCNN) else model).eval()
    return _merge(model, flip_filters(model).eval(), data, alphas, "self-flip")


def merge_barrier(model_a: nn.Module, model_b: nn.Module, data: MergeData,
                  alphas: Sequence[float] | None = None) -> dict[str, Any]:
    """The same report as :func:`gcnn_barrier` for two independently trained networks A and B.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    model_b = (model_b.to_cnn() if isinstance(model_b, MirrorGCNN) else model_b).eval()
    return _merge(model_a, model_b, data, alphas, "two-network")


def _stats(values: Sequence[float]) -> dict[str, Any]:
    v = np.asarray(values, dtype=float)
    return {"values": v.tolist(), "mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
            "min": float(v.min()), "max": float(v.max())}


def summarize(self_flip: Sequence[dict], pairs: Sequence[dict]) -> dict[str, Any]:
    """Barriers of one (variant, width) cell over all networks (self-flip) and all pairs (two-network).

    Returns ``{"self_flip": {key: stats}, "two_network": {key: stats}, "self_flip_below_pairs": {...}}``
    where stats are mean, std, min, max and the values; ``self_flip_below_pairs[key]`` says whether
    every self-flip barrier lies below every two-network barrier (the robust form of the paper's
    ordering) and whether the means are ordered.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    keys = ("barrier", "barrier_reset", "barrier_repair", "acc_a", "acc_mid_reset", "involution_distance_mean",
            "invariance_a", "invariance_mid_reset")
    optional = ("acc_a_reset", "endpoint_mean_reset", "filter_distance_mean", "loss_a", "loss_barrier",
                "loss_barrier_reset", "loss_barrier_repair", "filter_distance_scaled_mean",
                "filter_distance_min_mean")

    def block(reports):
        present = keys + tuple(k for k in optional if all(k in r for r in reports))
        return {k: _stats([r[k] for r in reports]) for k in present}

    out: dict[str, Any] = {"self_flip": block(self_flip)}
    if pairs:
        out["two_network"] = block(pairs)
        out["self_flip_below_pairs"] = {
            k: {"all": bool(max(r[k] for r in self_flip) < min(r[k] for r in pairs)),
                "means": bool(out["self_flip"][k]["mean"] < out["two_network"][k]["mean"])}
            for k in ("barrier_reset", "barrier_repair") + tuple(
                k for k in ("loss_barrier_reset", "loss_barrier_repair")
                if k in out["self_flip"] and k in out["two_network"])}
    return out


#: bump when the measurements change, so cached results are recomputed
_RESULTS_VERSION = 3


def _digest(results: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(results, sort_keys=True).encode()).hexdigest()


def _load_cached(path: Path) -> dict[str, Any] | None:
    """The cached results at ``path`` if present and their sha256 matches, else None (a bad
    file is removed when possible)."""
    try:
        if not path.is_file():
            return None
        stored = json.loads(path.read_text())
        results = stored["results"]
        if stored.get("sha256") == _digest(results):
            return results
        warn_once(f"gcnn-cache-bad:{path}", f"cached results {path} fail their sha256 check; recomputing")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        warn_once(f"gcnn-cache-unreadable:{path}", f"cached results {path} are unreadable ({exc}); recomputing")
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)
    return None


def _store_cached(path: Path, results: dict[str, Any]) -> None:
    """Write ``results`` with their sha256, atomically; a read-only or full cache only warns."""
    text = json.dumps({"sha256": _digest(results), "results": results})
    try:
        atomic_write(path, lambda f: f.write(text.encode()))
    except OSError as exc:
        warn_once("gcnn-cache-write", f"could not cache the GCNN-barrier results at {path} ({exc}); "
                  "they will be recomputed next time")


def _fingerprint(networks, data) -> str:
    """The identity of a run's inputs: every network's parameters and buffers and every
    merge and test image and label, hashed byte for byte (:func:`eqlib.io.content_hash`)."""
    nets = {f"{v}@{w:g}": [{k: content_hash(t) for k, t in n.state_dict().items()} for n in ns]
            for (v, w), ns in networks.items()}
    _, md = data
    return config_hash({"nets": nets, "match": content_hash(md.match),
                        "test_images": content_hash(md.test_images),
                        "test_labels": content_hash(md.test_labels)})


def run_experiment(budget: str | BarrierBudget | None = None, device=None, data_root: str | None = None,
                   progress: bool = False, curves: bool = True, networks=None, data=None,
                   cache: bool = True) -> dict[str, Any]:
    """Train every variant, measure every self-flip and two-network barrier, and summarise.

    Args:
        budget: ``"laptop"``, ``"full"``, a :class:`BarrierBudget`, or None for ``$EQLIB_BUDGET``.
        device: training and evaluation device.
        data_root: CIFAR-10 location (default ``$EQLIB_DATA``).
        progress: progress bars while training.
        curves: compute interpolation curves for the first network (self-flip) and first pair
            of every variant at the main width.
        networks, data: reuse :func:`train_networks` / :func:`load_merge_data` outputs.
        cache: keep the results as JSON under ``cache_dir("results")``, keyed by the budget,
            the networks' weights and the data, and reuse them (``from_cache`` is then True).

    Returns:
        A JSON-serialisable dict: ``budget``, ``cells`` (one per "variant@width" with the
        per-network and per-pair reports and the :func:`summarize` block), ``claims``
        (the orderings the chapter states, computed), ``seconds``.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    t0 = time.perf_counter()
    b = budget if isinstance(budget, BarrierBudget) else BUDGETS[select_budget(budget)]
    dev = default_device(device)
    if data is None:
        data = load_merge_data(b, data_root)
    train_data, merge_data = data
    if networks is None:
        networks = train_networks(b, train_data, device=dev, progress=progress)
    key = config_hash({"budget": asdict(b), "curves": curves, "version": _RESULTS_VERSION,
                       "inputs": _fingerprint(networks, data)})
    path = None
    if cache:
        try:
            path = cache_dir("results") / f"gcnn_barrier-{key}.json"
        except OSError as exc:
            warn_once("gcnn-cache-dir", f"no results cache ({exc}); computing without one")
    if path is not None:
        results = _load_cached(path)
        if results is not None:
            results["from_cache"] = True
            return results
    cells = {}
    for (variant, w), nets in networks.items():
        nets = [n.to(dev).eval() for n in nets]
        md = MergeData(merge_data.match.to(dev), merge_data.test_images, merge_data.test_labels)
        curve = curves and w == b.widths[0]
        selfs = [gcnn_barrier(n, md, b.alphas if (curve and i == 0) else None) for i, n in enumerate(nets)]
        pairs = [merge_barrier(nets[i], nets[j], md, b.alphas if (curve and (i, j) == (0, 1)) else None)
                 for i, j in itertools.combinations(range(len(nets)), 2)]
        cells[f"{variant}@{w:g}"] = {"variant": variant, "width": w, "self_flip": selfs, "two_network": pairs,
                                     "summary": summarize(selfs, pairs)}
        for n in nets:
            n.cpu()
    main_w = b.widths[0]

    def mean_of(variant, w, kind="self_flip", key="barrier_reset"):
        c = cells.get(f"{variant}@{w:g}")
        return None if c is None or kind not in c["summary"] else c["summary"][kind][key]["mean"]

    claims = {}
    for w in b.widths:
        p, i = mean_of("plain", w), mean_of("invariance", w)
        if p is not None and i is not None:
            claims[f"invariance_below_plain@{w:g}"] = bool(i < p)
    for key, cell in cells.items():
        s = cell["summary"]
        claims[f"midpoint_more_invariant@{key}"] = bool(
            s["self_flip"]["invariance_mid_reset"]["max"] < s["self_flip"]["invariance_a"]["min"]
            or s["self_flip"]["invariance_a"]["max"] < 1e-4)
        if "self_flip_below_pairs" in s:
            claims[f"self_flip_below_pairs_means@{key}"] = s["self_flip_below_pairs"]["barrier_reset"]["means"]
            claims[f"self_flip_below_pairs_all@{key}"] = s["self_flip_below_pairs"]["barrier_reset"]["all"]
    if len(b.widths) > 1:
        for variant in ("plain", "invariance"):
            lo, hi = mean_of(variant, min(b.widths)), mean_of(variant, max(b.widths))
            if lo is not None and hi is not None:
                claims[f"barrier_shrinks_with_width@{variant}"] = bool(hi < lo)  # wider network, smaller barrier
    results = {"budget": asdict(b), "device": str(dev), "definition": (
        "barrier = mean of the endpoints' test accuracies minus the midpoint's, in percentage points "
        "(our definition)"), "main_width": main_w, "cells": cells, "claims": claims,
        "seconds": time.perf_counter() - t0, "from_cache": False}
    if path is not None:
        _store_cached(path, results)
    return results


_KINDS = ("barrier", "barrier_reset", "barrier_repair")


def summary_table(results: dict[str, Any], spread: str = "std") -> tuple[list[str], list[list[str]]]:
    """The main table of :func:`run_experiment`'s results: one row per "variant@width" with
    test accuracy, GCNN and two-network barriers (interpolated statistics / BN reset /
    REPAIR, in ppt), the same three loss barriers (midpoint's cross-entropy minus the
    endpoints' mean, nats; when the results have them), the normalised filter distance from
    the GCNN constraint (:func:`gcnn_filter_distance`) and its scale-invariant form at the
    matched permutations and minimised (:func:`min_scaled_filter_distance`; when present),
    the matched permutations' distance from an involution and
    the invariance error of the network and of its self-flip midpoint.

    Args:
        spread: ``"std"`` writes mean ± sample standard deviation, ``"range"`` writes
            mean [min, max] over the networks (pairs).

    Returns:
        ``(header, rows)`` of strings; :func:`summary_table_html` renders them.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    if spread not in ("std", "range"):
        raise ValueError(f"spread must be 'std' or 'range', got {spread!r}")

    def fmt(s):
        if spread == "std":
            return f"{s['mean']:.1f} ± {s['std']:.1f}"
        return f"{s['mean']:.1f} [{s['min']:.1f}, {s['max']:.1f}]"

    def fmt2(s):
        if not s:
            return "–"
        return f"{s['mean']:.2f}" + (f" [{s['min']:.2f}, {s['max']:.2f}]" if spread == "range" else "")

    def lfmt(s):
        if spread == "std":
            return f"{s['mean']:.2f} ± {s['std']:.2f}"
        return f"{s['mean']:.2f} [{s['min']:.2f}, {s['max']:.2f}]"

    has_loss = any("loss_barrier" in c["summary"]["self_flip"] for c in results["cells"].values())
    has_scaled = any("filter_distance_min_mean" in c["summary"]["self_flip"] for c in results["cells"].values())
    header = ["variant @ width", "test acc. (%)", "GCNN barrier: interp. / BN reset / REPAIR",
              "two-network: interp. / BN reset / REPAIR"]
    if has_loss:
        header += ["GCNN loss barrier: interp. / BN reset / REPAIR", "two-network loss barrier"]
    header += ["filter distance d"] + (["scale-inv. d̂ (matched / min)"] if has_scaled else []) + [
        "π distance from involution", "invariance error θ → midpoint"]
    rows = []
    for key, cell in results["cells"].items():
        s = cell["summary"]
        sf, tn = s["self_flip"], s.get("two_network")
        row = [key, fmt(sf["acc_a"]), " / ".join(fmt(sf[k]) for k in _KINDS),
               " / ".join(fmt(tn[k]) for k in _KINDS) if tn else "–"]
        if has_loss:
            row += [" / ".join(lfmt(sf["loss_" + k]) for k in _KINDS) if "loss_barrier" in sf else "–",
                    " / ".join(lfmt(tn["loss_" + k]) for k in _KINDS) if tn and "loss_barrier" in tn else "–"]
        row += [fmt2(sf.get("filter_distance_mean"))]
        if has_scaled:
            row += [f"{fmt2(sf.get('filter_distance_scaled_mean'))} / {fmt2(sf.get('filter_distance_min_mean'))}"]
        row += [f"{sf['involution_distance_mean']['mean']:.3f}",
                f"{sf['invariance_a']['mean']:.3f} → {sf['invariance_mid_reset']['mean']:.1e}"]
        rows.append(row)
    return header, rows


def summary_table_html(results: dict[str, Any], spread: str = "std") -> str:
    """:func:`summary_table` as an HTML ``<table>`` (display it with ``IPython.display.HTML``).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    header, rows = summary_table(results, spread)
    return html_table(header, rows)


def _figures(results: dict[str, Any], stem: str) -> dict[str, Any]:
    """The figures of a run, keyed by file name ``<stem>_barriers.png`` and
    ``<stem>_interpolation_<variant>_w<width>.png`` (``stem`` carries the budget and, for
    one network seed, the seed)."""
    from ..plots.merging import barrier_table_figure, interpolation_figure

    figures = {f"{stem}_barriers.png": barrier_table_figure(results)}
    for key, cell in results["cells"].items():
        sf = cell["self_flip"][0]
        pair = cell["two_network"][0] if cell["two_network"] else None
        if "curve_reset" not in sf:
            continue
        variant, width = key.split("@")
        title = f"Interpolation paths: variant {variant}, width multiplier {width}"
        figures[f"{stem}_interpolation_{key.replace('@', '_w')}.png"] = interpolation_figure(sf, pair, title=title)
    return figures


def output_stem(budget: str, seeds: Sequence[int]) -> str:
    """The start of every output name: ``gcnn_barrier_<budget>`` for several network seeds,
    ``gcnn_barrier_<budget>_seed<N>`` for one (so one-seed runs never overwrite each other).

    Chapter: *ReLU CNNs and GCNNs*.
    """
    seeds = tuple(seeds)
    name = protocol.output_name("gcnn_barrier", budget, seeds[0] if len(seeds) == 1 else None, "")
    return name


def summary_text(results: dict[str, Any]) -> str:
    """The few lines the command line prints at the end, for people: one row per cell
    (variant @ width multiplier) with the networks' test accuracy, the GCNN (self-flip) and
    two-network barriers after a BN reset, and the invariance error of a network and of its
    self-flip midpoint; then how many of the chapter's claims hold.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    def ms(stats: dict[str, Any] | None, digits: int = 1) -> str:
        if not stats:
            return "–"
        return f"{stats['mean']:.{digits}f} ± {stats['std']:.{digits}f}"

    header = ["cell (variant @ width)", "networks", "test accuracy (%)", "GCNN barrier (ppt)",
              "two-network barrier (ppt)", "invariance error: network → midpoint"]
    rows = []
    for key, cell in results["cells"].items():
        sf, tn = cell["summary"]["self_flip"], cell["summary"].get("two_network")
        rows.append([key, len(cell["self_flip"]), ms(sf["acc_a"]), ms(sf["barrier_reset"]),
                     ms(tn["barrier_reset"]) if tn else "–",
                     f"{sf['invariance_a']['mean']:.3f} → {sf['invariance_mid_reset']['mean']:.1e}"])
    claims = results.get("claims", {})
    failing = [k for k, v in claims.items() if not v]
    seeds = results.get("seeds")
    lines = [f"GCNN barrier experiment, budget {results.get('budget_name', '?')}, network seeds {seeds}, "
             f"on {results.get('device', '?')}" + (" (results from the cache)" if results.get("from_cache") else "")
             + ":",
             protocol.text_table(header, rows),
             textwrap.fill(
                 "barrier: mean test accuracy of the two endpoints minus the midpoint's, in percentage "
                 "points, after resetting BatchNorm statistics (mean ± std over networks / pairs); GCNN "
                 "barrier: a network merged with its channel-aligned mirrored copy; two-network: two "
                 "independently trained networks merged. invariance error: relative change of the "
                 "logits under the mirror.", 100),
             f"claims: {len(claims) - len(failing)} of {len(claims)} hold"
             + (f"; not holding: {', '.join(failing)}" if failing else "")]
    return "\n".join(lines)


#: what the CLI's ``--parts`` can select: the barrier measurements (always needed) and the figures
PARTS = ("barriers", "figures")


def apply_overrides(b: BarrierBudget, settings: Sequence[str]) -> BarrierBudget:
    """``b`` with ``--set`` overrides ``"field=value"`` applied, typed like the field
    (:func:`eqlib.experiments.protocol.parse_setting`; tuples comma-separated, e.g.
    ``widths=0.0625``, ``variants=plain,gcnn``, ``seeds=3,4,5``).

    Raises:
        ValueError: naming the setting, for an unknown field, a value of the wrong type or
            an unknown variant.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    changes = protocol.parse_settings(settings, b)
    unknown = [v for v in tuple(changes.get("variants", ())) + tuple(changes.get("extra_variants", ()))
               if v not in VARIANTS]
    if unknown:
        raise ValueError(f"--set: unknown variants {unknown}; choose from {VARIANTS}")
    return replace(b, **changes)


#: the command line's help after the flags: budgets with their measured run times, outputs
CLI_EPILOG = """budgets (measured run times; "not measured" where no run backs a figure):
  laptop  small VGG-style CNNs (config 8,M,16,M,32,M,64,M): 4 variants at width 1
          and 2 at width 0.5, 3 networks each, 2,500 images, 3 epochs.
          CPU: the barrier measurements of the recorded three-seed run took 403 s
          after training (eqlib/recorded/gcnn_barrier_laptop.json: the
          recorded runs ship inside eqlib; the training time is not recorded).
          Training included: not measured.
          GPU: not measured.
  full    VGG11 at width 1, 4 variants x 3 networks, 50,000 images, 10 epochs of
          SGD, bf16 autocast and channels-last: meant for a GPU. Not measured
          (no record yet; benchmarks/gpu_check.sh records one).
  medium  VGG11's layers at 1/8 width (8,M,16,M,32,32,M,64,64,M,64,64,M), 4 variants
          x 3 networks, all 50,000 images with 4-pixel crops (every variant) and
          flips (mirror, invariance), 15 epochs of SGD (batch 500, lr 0.08, warm-up
          and linear decay), 10,000 test images: a CPU record, resumable
          (benchmarks/record_medium.sh). CPU, OMP_NUM_THREADS=2 on 2 cores shared
          with other jobs (load average 6-14): one plain network (seed 0) took
          199-475 s per epoch, mean 292 s over its first 11 epochs (about 110 s of
          CPU time per epoch), test accuracy 72.6 % after 11 of its 15 epochs
          (the last 4 not measured). The whole record: not measured.
  ci      an old name of laptop, still accepted (older scripts, CI).

outputs in --out (written to a temporary folder beside --out and moved in at
once; if the move fails they are kept there and the error names it):
  gcnn_barrier_<budget>.json        every number, the settings and the command
                                    (several network seeds: the default, --seeds)
  gcnn_barrier_<budget>_seed<N>.json  the same for one network seed (--seed N)
  <the same stem>_barriers.png, <stem>_interpolation_<variant>_w<width>.png
                                    the figures (--parts figures)
A table of the main numbers is printed at the end."""


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """CLI: ``python -m eqlib.experiments.gcnn_barrier --budget laptop|full --device cpu|cuda
    [--seeds 0,1,2 | --seed N] [--set FIELD=VALUE ...] [--parts barriers,figures] --out results/``,
    the flags of :mod:`eqlib.experiments.protocol`.

    Without ``--seed``/``--seeds`` every cell has the budget's networks (seeds
    ``0 .. networks − 1``). Writes ``gcnn_barrier_<budget>.json`` (with one network seed
    ``gcnn_barrier_<budget>_seed<N>.json``, ``output_stem``: every number,
    ``settings``, the command that made it and the package versions) and, with the part
    ``figures``, PNG figures, all through a temporary folder beside ``--out`` moved in at
    once (:func:`eqlib.experiments.protocol.write_outputs`). Prints a table of the main
    numbers at the end (``summary_text``); when the outputs cannot be moved into
    ``--out``, prints where they are kept and exits with status 1.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    import platform
    import shlex
    import sys

    argv_list = list(sys.argv[1:] if argv is None else argv)
    parser = protocol.build_parser(
        "python -m eqlib.experiments.gcnn_barrier",
        "The GCNN barrier on CIFAR-10 (Bökman & Kahl, \"Investigating how ReLU-networks encode "
        "symmetries\", NeurIPS 2023): is a trained ReLU CNN close to a mirror-GCNN? Each network "
        "is merged with its channel-aligned mirrored copy (their midpoint is a mirror-GCNN) and, "
        "for comparison, with an independently trained network; the barrier is the test accuracy "
        "the midpoint loses. Chapter 10 of the course.",
        parts=PARTS, progress=False, epilog=CLI_EPILOG, budgets=tuple(BUDGETS))
    seeds_given = any(a.split("=")[0] in ("--seed", "--seeds") for a in argv_list)

    def budget_of(args) -> BarrierBudget:
        b = apply_overrides(BUDGETS[args.budget], args.set)
        return replace(b, seeds=tuple(args.seeds)) if seeds_given else b

    def outputs(args) -> list[str]:  # the JSON's name, checked before any work
        return [output_stem(args.budget, network_seeds(budget_of(args))) + ".json"]

    args = protocol.parse_args(parser, argv_list, BUDGETS, outputs=outputs)
    if "barriers" not in args.parts:
        parser.error("--parts must include 'barriers' (the figures are drawn from them)")
    try:
        b = budget_of(args)
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    name, out = args.budget, args.out
    stem = output_stem(name, network_seeds(b))
    data = load_merge_data(b, args.data, download=args.download)
    networks = train_networks(b, data[0], device=default_device(args.device), progress=args.progress,
                              log=lambda line: print(line, flush=True),
                              test_data=(data[1].test_images, data[1].test_labels))
    results = run_experiment(b, device=args.device, networks=networks, data=data)
    results["budget_name"] = name
    results["settings"] = protocol.settings_dict(b)
    results["seeds"] = list(network_seeds(b))
    results["overrides"] = list(args.set)
    results["command"] = "python -m eqlib.experiments.gcnn_barrier " + shlex.join(argv_list)
    results["versions"] = {"python": platform.python_version(), "torch": torch.__version__,
                           "machine": platform.machine()}
    figures = _figures(results, stem) if "figures" in args.parts else {}
    results["figures"] = list(figures)
    try:
        path = protocol.write_outputs(out, stem + ".json", results, figures, dpi=120)[0]
    except protocol.OutputsKept as exc:
        print(summary_text(results))
        raise SystemExit(f"error: {exc}") from None
    print(summary_text(results))
    print(f"wrote {path} and {len(figures)} figures in {results['seconds']:.0f} s (plus training)")
    return results


if __name__ == "__main__":
    main()
