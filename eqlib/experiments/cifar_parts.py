"""The optional parts of the CIFAR-10 MLP experiment: the ablation, the emergence over
training and the attention autoencoder.

:func:`~eqlib.experiments.cifar_parts.ablation` retrains the Tanh autoencoder with one change
at a time
(:data:`~eqlib.experiments.cifar_parts.ABLATION_VARIANTS`);
:func:`~eqlib.experiments.cifar_parts.emergence` follows the first layer's action over
the checkpoints of a training run; :func:`~eqlib.experiments.cifar_parts.attention_experiment`
trains a single-layer
attention autoencoder on image patches and recovers its head permutation.
:mod:`eqlib.experiments.cifar_mlp` runs them as its parts and re-exports every name.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ..analysis import NETWORKS, end_to_end_error, equivariance_table, filter_pairing, table_lookup
from ..data import CIFAR10, subset
from ..latent import linear_equivariance_error
from ..images import mirror as mirror_action
from ..images import patchify, prepare_images, unpatchify
from ..latent.attention import patch_mirror_action, recover_attention_action
from ..models import AttentionNetwork
from ..seeds import torch_generator
from ..train import TrainConfig, TrainResult, cached_train, image_preset
from . import protocol
from .cifar_setup import Settings, _data_spec, train_networks
from ..validation import check_tensor

__all__ = ["ABLATION_PROBES", "ABLATION_VARIANTS", "ablation", "ablation_settings", "attention_config", "emergence",
           "PatchAttentionAutoencoder",
           "attention_experiment"]


# --------------------------------------------------------------------------- ablation

#: noise probes the ablation scores f_1 on (at most; the table's budget may use more)
ABLATION_PROBES = 10_000
#: variant name → changes relative to the ablation's base (Tanh autoencoder)
ABLATION_VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "default first-layer init (×10)": {"first_init_scale": 1.0},
    "no weight decay": {"train.weight_decay": 0.0},
    "strong weight decay (0.5)": {"train.weight_decay": 0.5},
    "no penalty": {"train.penalty_weight": 0.0},
    "abrupt penalty (no ramp)": {"train.penalty_ramp": 0.0},
    "penalty weight ×10": {"train.penalty_weight": 10.0},
    "2× epochs": {"epochs_factor": 2},
    "2× width": {"width_factor": 2},
    "smaller first-layer init (×0.1)": {"first_init_scale": 0.01},
    "5× epochs": {"epochs_factor": 5},
}


def ablation_settings(s: Settings, change: dict[str, Any], n_train: int, label: str = "") -> Settings:
    """The settings one ablation variant trains with: ``s`` at the ablation's scale
    (``n_train`` images, ``s.ablation_epochs`` epochs times ``epochs_factor``, no snapshots,
    the hidden widths times ``width_factor``) with the variant's ``change`` (keys of
    :func:`eqlib.experiments.protocol.setting_keys`, e.g. ``train.weight_decay``).

    Raises:
        ValueError: naming the variant ``label``, for a key that is not a setting.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    change = dict(change)
    ef, wf = change.pop("epochs_factor", 1), change.pop("width_factor", 1)
    bad = [k for k in change if k not in protocol.setting_keys(s)]
    if bad:
        raise ValueError(f"unknown ablation keys {sorted(bad)} in variant {label!r}")
    return protocol.replace_settings(s, {"n_train": n_train, "train.epochs": s.ablation_epochs * ef,
                                         "train.snapshot_every": 0, "hidden": tuple(int(h * wf) for h in s.hidden),
                                         **change})


def ablation(s: Settings, train: CIFAR10, test: CIFAR10, *, variants: dict[str, dict[str, Any]] | None = None,
             network: str = "tanh-autoencoder", seed: int = 0, device: str | torch.device | None = None,
             progress: bool = True, probe_samples: int | None = None,
             on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """What makes the first-layer action emerge: retrain one network with one change at a time.

    Runs at the ablation scale (``s.ablation_n_train`` images, ``s.ablation_epochs``
    epochs). Each variant's keys are :class:`~eqlib.experiments.cifar_setup.Settings` keys (dotted for
    the training, ``train.weight_decay``) or
    ``epochs_factor`` /
    ``width_factor``. For each variant: f_1 errors (horizontal and vertical, isotropic
    noise and test images), f_2∘f_1 horizontal error on noise, the share of matched
    first-layer filters, the end-to-end equivariance error on test images and the final
    task loss. ``on_row`` is called with each row as soon as it is done (the command
    line prints it, so a long run that is stopped keeps what it finished).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if variants is None:
        names = s.ablation_variants or tuple(ABLATION_VARIANTS)
        unknown = [k for k in names if k not in ABLATION_VARIANTS]
        if unknown:
            raise ValueError(f"unknown ablation variants {unknown}; choose from {list(ABLATION_VARIANTS)}")
        variants = {k: ABLATION_VARIANTS[k] for k in names}
    if network not in NETWORKS:
        raise ValueError(f"unknown network {network!r}; choose from {list(NETWORKS)}")
    act, task = NETWORKS[network]
    tr = subset(train, s.ablation_n_train, seed=seed) if s.ablation_n_train < len(train) else train
    n_probe = probe_samples or min(s.noise_samples, ABLATION_PROBES)
    rows = []
    for label, change in variants.items():
        sv = ablation_settings(s, change, len(tr), label)
        change = dict(change)
        ef, wf = change.pop("epochs_factor", 1), change.pop("width_factor", 1)
        t0 = time.perf_counter()
        res = train_networks(sv, tr, None, seed=seed, device=device, progress=progress, names=[network])[network]
        seconds = time.perf_counter() - t0
        model = res.model
        errs = equivariance_table({network: model}, dataclasses.replace(sv, noise_samples=n_probe), tr, test,
                                  probes=("noise", "images"), layers=(1, 2), seed=seed, device=device)
        pairing = filter_pairing(model.layers[0].weight)
        rows.append({
            "network": network, "variant": label, "changes": {**change, **({"epochs_factor": ef} if ef != 1 else {}),
                                          **({"width_factor": wf} if wf != 1 else {})},
            "f1_horizontal_noise": table_lookup(errs, network, 1, "horizontal", probe="noise"),
            "f1_vertical_noise": table_lookup(errs, network, 1, "vertical", probe="noise"),
            "f1_horizontal_images": table_lookup(errs, network, 1, "horizontal", probe="images"),
            "f1_vertical_images": table_lookup(errs, network, 1, "vertical", probe="images"),
            "f12_horizontal_noise": table_lookup(errs, network, 2, "horizontal", probe="noise"),
            "matched_filters": pairing.matched_fraction,
            "end_to_end": end_to_end_error(model, test.images[:1000], task),
            "task_loss": res.history["task_loss"][-1], "train_seconds": seconds if not res.from_cache else None,
        })
        if on_row is not None:
            on_row(rows[-1])
    return rows


# --------------------------------------------------------------------------- emergence

def emergence(result: TrainResult, build, test: CIFAR10, *, probe: str = "images", samples: int = 2000,
              axis: str = "horizontal", seed: int = 0) -> list[dict[str, Any]]:
    """f_1's linear-equivariance error, matched filters and end-to-end error at every snapshot.

    Args:
        result: a :class:`~eqlib.train.TrainResult` with snapshots (``snapshot_every``).
        build: the model builder (to load snapshots into).
        probe: ``"images"`` (test images) or ``"noise"``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not result.snapshots:
        raise ValueError("this result has no snapshots; train with snapshot_every > 0")
    task = result.config.task if result.config is not None else "autoencode"
    act = mirror_action((3, 32, 32), axis)
    if probe == "images":
        y = prepare_images(test.images[:samples]).flatten(1)
    elif probe == "noise":
        y = torch.randn(samples, 3072, generator=torch_generator(seed))
    else:
        raise ValueError(f"probe must be 'images' or 'noise', got {probe!r}")
    out = []
    for k, (epoch, _) in enumerate(result.snapshots):
        model = result.snapshot_model(k, build)
        fit = linear_equivariance_error(model.prefix(1), act, act.group["m"], samples=y)
        out.append({"epoch": epoch, "f1_error": fit.median_error,
                    "matched_filters": filter_pairing(model.layers[0].weight, axis).matched_fraction,
                    "end_to_end": end_to_end_error(model, test.images[:500], task, axis),
                    "weight": model.layers[0].weight.detach().clone()})
    return out


# --------------------------------------------------------------------------- attention

class PatchAttentionAutoencoder(nn.Module):
    """Images → p×p patch tokens → one multi-head attention layer (with learned positional
    encodings) → tokens → images. ``attention`` is the :class:`~eqlib.models.AttentionNetwork`.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    def __init__(self, patch: int = 4, heads: int = 4, seed: int = 0):
        super().__init__()
        if 32 % patch:
            raise ValueError(f"patch must divide 32, got {patch}")
        self.patch = patch
        d = 3 * patch * patch
        self.attention = AttentionNetwork((32 // patch) ** 2, [d, d], heads=heads, positional=True, seed=seed)

    def tokens(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, ndim=4)  # errors name x (patchify's own name is images)
        return patchify(x, self.patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return unpatchify(self.attention(self.tokens(x)), (3, 32, 32), self.patch)


def attention_config(s: Settings, seed: int = 0) -> TrainConfig:
    """The attention autoencoder's :class:`eqlib.train.TrainConfig`: ``s.attention_epochs``
    epochs at learning rate 3e-3 (warm-up and linear decay, no weight decay), with the
    batch size, mirrors and equivariance penalty of ``s.train``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    t = s.train
    return TrainConfig(task="autoencode", epochs=s.attention_epochs, batch_size=t.batch_size, lr=3e-3,
                       schedule="warmup_linear", augment_mirror=t.augment_mirror, penalty="equivariance",
                       penalty_weight=t.penalty_weight, penalty_start=t.penalty_start, penalty_ramp=t.penalty_ramp,
                       seed=seed)


def attention_experiment(s: Settings, train: CIFAR10, test: CIFAR10, *, seed: int = 0,
                         device: str | torch.device | None = None, progress: bool = True) -> dict[str, Any]:
    """Train the attention autoencoder (mirror-equivariance penalty in the second half) and
    recover its latent action under the horizontal mirror with
    :func:`eqlib.latent.attention.recover_attention_action`.

    Returns:
        dict with ``model``, ``result`` (:class:`~eqlib.train.TrainResult`), ``latent``
        (the :class:`~eqlib.latent.attention.AttentionLatentAction`), ``head_perm``
        (τ from the parameters), ``head_perm_maps`` (τ from the attention maps),
        ``swapped_heads`` (heads with τ(h) ≠ h), ``maps_residual`` (under τ from the
        parameters), ``maps_residual_maps`` (under τ from the maps), ``maps_residual_best`` (the
        smallest over all head permutations), ``output_residual``,
        ``positional_residual``, ``end_to_end``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    cfg = attention_config(s, seed)
    build = lambda: PatchAttentionAutoencoder(s.attention_patch, s.attention_heads, seed=seed)  # noqa: E731
    res = cached_train(build, cfg, (train.images, None), data_spec=_data_spec(train, len(train), seed),
                       cache_key_extra={"experiment": "cifar_mlp/attention"}, device=device, progress=progress,
                       **image_preset(tuple(train.images.shape[1:])))
    model = res.model.eval()
    action = patch_mirror_action((3, 32, 32), s.attention_patch)
    x = model.tokens(prepare_images(test.images[:256]))
    latent = recover_attention_action(model.attention, action, x)
    tau = latent.head_perm["m"]
    return {"model": model, "result": res, "latent": latent, "action": action,
            "head_perm": tau.tolist(), "head_perm_maps": latent.head_perm_maps["m"].tolist(),
            "swapped_heads": [int(h) for h in np.nonzero(tau != np.arange(len(tau)))[0]],
            "maps_residual": latent.maps_residual["m"],
            "maps_residual_maps": latent.maps_residual_maps["m"],
            "maps_residual_best": latent.maps_residual_best["m"], "output_residual": latent.output_residual["m"],
            "positional_residual": latent.positional_residual["m"],
            "end_to_end": end_to_end_error(model, test.images[:1000], "autoencode"),
            "task_loss": res.history["task_loss"][-1]}
