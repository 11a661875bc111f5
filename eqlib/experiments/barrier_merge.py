"""The GCNN barrier's merges: the data they use, the self-flip and two-network merges with
their barriers and diagnostics, interpolation curves and the summary of a cell.
:mod:`eqlib.experiments.gcnn_barrier` re-exports every name.

Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..images import mirror_images, prepare_images
from ..matching import (apply_permutation, has_batchnorm, interpolate, involution_distance, match_activations, repair,
                        reset_bn)
from ..models.cnn import MirrorGCNN, flip_filters, mirror_invariance_error
from ..train import evaluate_accuracy
from ..validation import check_tensor
from .barrier_filters import gcnn_filter_distance, min_scaled_filter_distance
from .barrier_settings import BarrierBudget

__all__ = ['MergeData', 'load_merge_data', 'interpolation_curve', 'gcnn_barrier', 'merge_barrier', 'summarize']


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
                        *, mode: str = "reset") -> list[float]:
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
    # BN-reset endpoints are also REPAIR's targets (a GCNN, its own midpoint, then stays put).
    # Without BatchNorm there is nothing to reset: the reset columns repeat the interpolated ones
    # (flagged by ``batchnorm``) and REPAIR's targets are the endpoints themselves
    bn = has_batchnorm(model_a)
    reset_a, reset_b = (_reset_copy(model_a, data), _reset_copy(aligned, data)) if bn else (model_a, aligned)
    (acc_a_reset, loss_a_reset), (acc_b_reset, loss_b_reset) = ((_acc_loss(reset_a, data), _acc_loss(reset_b, data))
                                                                if bn else ((acc_a, loss_a), (acc_b, loss_b)))
    mean, mean_reset = 0.5 * (acc_a + acc_b), 0.5 * (acc_a_reset + acc_b_reset)
    lmean, lmean_reset = 0.5 * (loss_a + loss_b), 0.5 * (loss_a_reset + loss_b_reset)
    mid = interpolate(model_a, aligned, 0.5).eval()
    acc_mid, loss_mid = _acc_loss(mid, data)
    inv_mid = _invariance(mid, data)
    if bn:
        reset_bn(mid, data.match)
    acc_reset, loss_reset = _acc_loss(mid, data) if bn else (acc_mid, loss_mid)
    inv_reset = _invariance(mid, data) if bn else inv_mid
    rep = repair(mid, reset_a, reset_b, data.match, alpha=0.5)
    acc_repair, loss_repair = _acc_loss(rep, data)
    inv_a, inv_b = _invariance(model_a, data), _invariance(aligned, data)
    inv_dist = {k: involution_distance(p) for k, p in perms.items()}
    report = {
        "kind": kind, "batchnorm": bn,
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
        report["curve_reset"] = interpolation_curve(model_a, aligned, data, alphas, mode="reset")
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
    ``filter_distance`` per layer (:func:`~eqlib.experiments.barrier_filters.gcnn_filter_distance`) and its mean;
    ``filter_distance_scaled`` (the scale-invariant form at the matched permutations) and
    ``filter_distance_min`` (minimised by
    :func:`~eqlib.experiments.barrier_filters.min_scaled_filter_distance`, started at the
    matched permutations), their means, the minimisers (``filter_distance_min_perms``) and
    their distance from an involution; ``batchnorm`` (whether the network has BatchNorm;
    without it there is nothing to reset, every ``*_reset`` value repeats the value with
    interpolated statistics, and REPAIR's targets are the endpoints themselves);
    ``involution_distance`` per layer
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
