"""The search for a training protocol under which the first-layer filters pair up.

The Tanh autoencoder of *Reproducing the CIFAR-10 experiment*, trained under each variant
of :data:`~eqlib.experiments.filter_search.SEARCH_VARIANTS` (changes to
:class:`~eqlib.experiments.filter_search.SearchSettings`), its first-layer filters
classified by mirror category and its first layer's linear-equivariance errors measured
(:func:`~eqlib.experiments.filter_search.filter_search`, summarised over seeds by
:func:`~eqlib.experiments.filter_search.search_summary`). Budgets
(:data:`~eqlib.experiments.filter_search.SEARCH_BUDGETS`): ``full`` is the recorded search (the
defaults of
:class:`~eqlib.experiments.filter_search.SearchSettings`); ``laptop`` a smaller one. Command
line (writes
``filter_search_<budget>.json`` and figures of the filters)::

    python -m eqlib.experiments.filter_search --budget full --seeds 0,1,2 --set train.epochs=20

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from ..analysis import filter_pairing, mirror_symmetric_spectrum, paired_latents, whitening
from ..data import CIFAR10, load_cifar10, subset
from ..latent import fit_linear_action
from ..images import mirror as _MIRROR
from ..images import mirror_images, prepare_images
from ..seeds import torch_generator
from ..train import TrainConfig, TrainResult, cached_train, train
from . import protocol
from .cifar_setup import build_mlp

__all__ = ["SearchSettings", "SEARCH_VARIANTS", "SEARCH_KEYS", "SEARCH_BUDGETS", "BUDGETS", "settings",
           "filter_search", "search_config", "search_train", "search_summary", "search_figures", "search_html", "load_search",
           "load_search_data", "search_record", "main", "SEARCH_TRAIN", "search_text", "search_outputs",
           "run_search", "EXPERIMENT"]


#: The training of the search, as the chapter runs it. AdamW-style decoupled decay, the first
#: layer's apart, 5 % warm-up then cosine decay to 0, a fresh mirror draw per batch, the mirror
#: penalty ramped in from half-way; ``penalty_noise`` is the same penalty on isotropic noise.
SEARCH_TRAIN = TrainConfig(task="autoencode", epochs=15, batch_size=128, lr=1e-3, optimizer="adam",
                           weight_decay=1e-4, first_weight_decay=1e-4, schedule="cosine", warmup=0.05,
                           augment_mirror=True, augment_per_batch=True, penalty="equivariance",
                           penalty_weight=1.0, penalty_start=0.5, penalty_ramp=0.2, penalty_noise=0.0,
                           noise_std=1.0)


@dataclass(frozen=True)
class SearchSettings:
    """The scale and protocol of one run of
    :func:`~eqlib.experiments.filter_search.filter_search` (a Tanh autoencoder of
    the chapter's architecture; about a minute on 2 CPU cores at the defaults). Each
    variant of :data:`~eqlib.experiments.filter_search.SEARCH_VARIANTS` changes some of these
    settings (dotted keys for the training: ``train.first_weight_decay``).

    Attributes:
        n_train, n_test: images (stratified subsets).
        hidden: the Tanh autoencoder's hidden widths.
        train: its :class:`eqlib.train.TrainConfig`
            (:data:`~eqlib.experiments.filter_search.SEARCH_TRAIN`): epochs, batch size, lr;
            ``schedule`` ``"cosine"`` (5 % linear warm-up, then cosine decay to 0, so the
            run ends converged at its learning rate) or ``"constant"``; ``weight_decay``
            (decoupled) on every parameter but the first layer's weight,
            ``first_weight_decay`` on that weight; ``augment_mirror``, ``penalty_weight``,
            ``penalty_start``, ``penalty_ramp`` as in
            :class:`~eqlib.experiments.cifar_setup.Settings` (the penalty
            ‖f(m x) − m f(x)‖² on the training images, a mean over coordinates);
            ``penalty_noise``, the weight of the same penalty on isotropic Gaussian inputs
            y ~ N(0, noise_std² I) in the network's input space, with the same ramp (0: the
            paper's protocol, which penalises on images only). Older records call it
            ``noise_penalty`` (``LEGACY_NAMES``).
            :func:`~eqlib.experiments.filter_search.search_config` sets the penalty's kind,
            the projection's name and the seed.
        first_init_scale: multiplies the first layer's initial weights.
        whiten: ``"none"`` (the networks' usual normalised input) or ``"zca"``: inputs
            x Z with the ZCA whitening of the mirror-symmetrised covariance
            (:func:`eqlib.analysis.whitening`), which commutes with the mirror; the
            autoencoder then reconstructs the whitened image.
        zca_eps: ε added to the eigenvalues before whitening.
        first_norm: 0 (off), or the norm every first-layer filter is rescaled to after each
            step (a projected gradient step). On unit isotropic noise a filter of norm c
            gives pre-activations of standard deviation c, so c ≳ 1 keeps Tanh out of its
            linear regime, which the autoencoder otherwise settles in.
        probes: isotropic-noise probes in the network's input space (half fit, half scored),
            and as many isotropic in the data subspace (per-pixel variance 1).
        subspace_k: principal directions kept for the filters "in the data subspace".

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """

    #: the settings older records name otherwise (``{old key: dotted key}``, read by
    #: :func:`eqlib.experiments.records.legacy_settings`)
    LEGACY_NAMES: ClassVar[dict[str, str]] = {"noise_penalty": "train.penalty_noise"}

    n_train: int = 10_000
    n_test: int = 2_000
    hidden: tuple[int, int, int] = (256, 128, 128)
    train: TrainConfig = SEARCH_TRAIN
    first_init_scale: float = 0.1
    whiten: str = "none"
    zca_eps: float = 0.1
    first_norm: float = 0.0
    probes: int = 4_000
    subspace_k: int = 256

    def __post_init__(self):
        protocol.check_nested(self, "train", TrainConfig)
        for name in ("n_train", "n_test", "probes", "subspace_k"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if len(self.hidden) != 3 or min(self.hidden) < 1:
            raise ValueError(f"hidden must be three positive widths, got {self.hidden!r}")
        if self.subspace_k > 3072:
            raise ValueError(f"subspace_k must be at most 3072, got {self.subspace_k}")
        for name in ("first_init_scale", "zca_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not self.first_norm >= 0:
            raise ValueError(f"first_norm must be ≥ 0, got {self.first_norm!r}")
        if self.train.schedule not in ("cosine", "constant"):
            raise ValueError(f"train.schedule must be 'cosine' or 'constant', got {self.train.schedule!r}")
        if self.whiten not in ("none", "zca"):
            raise ValueError(f"whiten must be 'none' or 'zca', got {self.whiten!r}")


#: variant name → changes to :class:`~eqlib.experiments.filter_search.SearchSettings` (the
#: first is the chapter's protocol)
SEARCH_VARIANTS: dict[str, dict[str, Any]] = {
    "chapter's protocol": {},
    "init ×1": {"first_init_scale": 1.0},
    "init ×3": {"first_init_scale": 3.0},
    "noise penalty": {"train.penalty_noise": 1.0},
    "init ×1, noise penalty": {"first_init_scale": 1.0, "train.penalty_noise": 1.0},
    "init ×3, noise penalty": {"first_init_scale": 3.0, "train.penalty_noise": 1.0},
    "first-layer decay 5": {"train.first_weight_decay": 5.0},
    "ZCA input": {"whiten": "zca"},
    "init ×1, both penalties ×10": {"first_init_scale": 1.0, "train.penalty_weight": 10.0,
                                    "train.penalty_noise": 10.0},
    "init ×1, noise penalty from the start": {"first_init_scale": 1.0, "train.penalty_noise": 1.0,
                                              "train.penalty_start": 0.0, "train.penalty_ramp": 0.1},
    "filters of norm 1": {"first_norm": 1.0},
    "filters of norm 3": {"first_norm": 3.0},
    "filters of norm 1, both penalties ×10": {"first_norm": 1.0, "train.penalty_weight": 10.0,
                                              "train.penalty_noise": 10.0},
    "filters of norm 1, both penalties ×10 from the start": {
        "first_norm": 1.0, "train.penalty_weight": 10.0, "train.penalty_noise": 10.0, "train.penalty_start": 0.0,
        "train.penalty_ramp": 0.1},
    "first-layer decay 5, penalty ×10": {"train.first_weight_decay": 5.0, "train.penalty_weight": 10.0},
    "first-layer decay 5, penalty ×100": {"train.first_weight_decay": 5.0, "train.penalty_weight": 100.0},
    "first-layer decay 5, both penalties ×10": {"train.first_weight_decay": 5.0, "train.penalty_weight": 10.0,
                                                "train.penalty_noise": 10.0},
    "first-layer decay 50, penalty ×100": {"train.first_weight_decay": 50.0, "train.penalty_weight": 100.0},
    "first-layer decay 5, penalty ×1000": {"train.first_weight_decay": 5.0, "train.penalty_weight": 1000.0},
    "first-layer decay 5, both penalties ×100": {"train.first_weight_decay": 5.0,
                                                 "train.penalty_weight": 100.0, "train.penalty_noise": 100.0},
    "first-layer decay 50, penalty ×30": {"train.first_weight_decay": 50.0, "train.penalty_weight": 30.0},
    "first-layer decay 50, penalty ×100 from the start": {
        "train.first_weight_decay": 50.0, "train.penalty_weight": 100.0, "train.penalty_start": 0.0,
        "train.penalty_ramp": 0.1},
    "first-layer decay 50, both penalties ×100": {
        "train.first_weight_decay": 50.0, "train.penalty_weight": 100.0, "train.penalty_noise": 100.0},
    "first-layer decay 5, penalty ×100 from the start": {
        "train.first_weight_decay": 5.0, "train.penalty_weight": 100.0, "train.penalty_start": 0.0,
        "train.penalty_ramp": 0.1},
    "first-layer decay 20, both penalties ×100": {
        "train.first_weight_decay": 20.0, "train.penalty_weight": 100.0, "train.penalty_noise": 100.0},
    "first-layer decay 30, both penalties ×100": {
        "train.first_weight_decay": 30.0, "train.penalty_weight": 100.0, "train.penalty_noise": 100.0},
}

#: the numbers :func:`~eqlib.experiments.filter_search.filter_search` summarises over seeds
#: (min / mean / max)
SEARCH_KEYS = ("categorised_first64", "symmetric_first64", "pairs_first64",
               "control_categorised_first64", "filter_similarity",
               "subspace_categorised_first64", "f1_horizontal_noise",
               "f1_vertical_noise", "f1_horizontal_subspace_noise", "f1_horizontal_images",
               "f1_vertical_images", "median_best_cos", "subspace_median_best_cos",
               "offdata_energy", "preact_std_noise", "preact_std_images", "end_to_end",
               "test_relative_error", "train_seconds")

#: ``full``: the recorded search (the defaults of
#: :class:`~eqlib.experiments.filter_search.SearchSettings`, about a minute per
#: run on 2 CPU cores); ``laptop`` (the default): fewer images, epochs and probes, for a try
SEARCH_BUDGETS: dict[str, SearchSettings] = {
    "laptop": SearchSettings(n_train=2_000, n_test=1_000, train=SEARCH_TRAIN.replace(epochs=5), probes=2_000),
    "full": SearchSettings(),
}
#: the protocol's name for :data:`~eqlib.experiments.filter_search.SEARCH_BUDGETS`
BUDGETS = SEARCH_BUDGETS


def settings(budget: str | None = None, **overrides: Any) -> SearchSettings:
    """The :class:`~eqlib.experiments.filter_search.SearchSettings` of ``budget`` (default
    ``$EQLIB_BUDGET``, else
    ``"laptop"``) with ``overrides`` of its fields
    (:func:`eqlib.experiments.protocol.settings`).

    Raises:
        ValueError: for an unknown budget or an override that is not a field.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    return protocol.settings(BUDGETS, budget, **overrides)


def _filter_similarity(W1: torch.Tensor) -> float:
    """Median ``|cos|`` between two distinct filters: near 1 when the first layer has
    collapsed onto a few directions, so that every filter matches some other one and the
    categories say little."""
    U = W1 / W1.norm(dim=1, keepdim=True).clamp_min(1e-12)
    C = (U @ U.T).abs()
    return float(C[~torch.eye(len(C), dtype=torch.bool)].median())


def search_config(s: SearchSettings, seed: int) -> TrainConfig:
    """The :class:`eqlib.train.TrainConfig` of one search run: ``s.train`` with the mirror
    penalty on when either of its weights (images, noise) is positive, the filter-norm
    projection named when ``first_norm`` > 0 (``search_train`` applies it after every
    step), and ``seed``.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    t = s.train
    return t.replace(penalty="equivariance" if t.penalty_weight + t.penalty_noise > 0 else "none",
                     after_step=f"first-layer filter norm {s.first_norm!r}" if s.first_norm > 0 else "", seed=seed)


def _project_filters(model: nn.Module, norm: float) -> None:
    """Rescale every first-layer filter (row of ``model.layers[0].weight``) to ``norm``."""
    first = model.layers[0].weight
    with torch.no_grad():
        first.mul_(norm / first.norm(dim=1, keepdim=True).clamp_min(1e-12))


def search_train(s: SearchSettings, X: torch.Tensor, seed: int, *, start: nn.Module | None = None,
                 cached: bool = False) -> TrainResult:
    """Train the search's Tanh autoencoder (seeded by ``seed``) on the rows of ``X`` (already
    in its input space) with :func:`eqlib.train.train` under
    :func:`~eqlib.experiments.filter_search.search_config`; with ``first_norm`` the filters
    are projected to that norm at initialisation and after every step. ``start``: a
    network of the same architecture to start from instead of the seeded initialisation
    (left unchanged: a copy is trained). ``cached``: through the model cache
    (:func:`eqlib.train.cached_train`, keyed by content; an interrupted run resumes).

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    def build() -> nn.Module:
        if start is not None:
            model = copy.deepcopy(start).train()
        else:
            model = build_mlp("tanh", "autoencode", s.hidden, seed=seed, first_init_scale=s.first_init_scale)
        if s.first_norm > 0:
            _project_filters(model, s.first_norm)
        return model

    hooks = {}
    if s.first_norm > 0:
        hooks["after_step"] = lambda m, step: _project_filters(m, s.first_norm)
    rho = _MIRROR((3, 32, 32))
    if cached:
        return cached_train(build, search_config(s, seed), (X, None), symmetry=(rho, rho), hooks=hooks,
                            device="cpu", progress=False)
    return train(build(), (X, None), search_config(s, seed), symmetry=(rho, rho), hooks=hooks, device="cpu",
                 progress=False)


def _search_run(s: SearchSettings, X: torch.Tensor, Xt: torch.Tensor, P: torch.Tensor,
                seed: int) -> tuple[dict[str, Any], nn.Module]:
    """Train one Tanh autoencoder on rows of ``X`` (already in its input space), measure it;
    return (row, model)."""
    t0 = time.perf_counter()
    result = search_train(s, X, seed)
    seconds = time.perf_counter() - t0
    return _search_measures(s, result.model, X, Xt, P, seed, seconds, result.history["task_loss"]), result.model


def _search_measures(s: SearchSettings, model: nn.Module, X: torch.Tensor, Xt: torch.Tensor, P: torch.Tensor,
                     seed: int, seconds: float, losses: Sequence[float]) -> dict[str, Any]:
    """The row of measures of one trained search network (see ``filter_search``); reused by
    ``eqlib.experiments.pairing_hypotheses``."""
    W1 = model.layers[0].weight.detach().clone()
    raw, sub = filter_pairing(W1), filter_pairing(W1, subspace=P)
    g = torch_generator(seed + 1)  # the recorded search's probes: kept, not spawned
    errors = {}
    with torch.no_grad():
        z = torch.randn(s.probes, P.shape[1], generator=g) * math.sqrt(X.shape[1] / P.shape[1])
        noise = torch.randn(s.probes, X.shape[1], generator=g)
        for probe, y in (("noise", noise), ("subspace_noise", z @ P.T), ("images", Xt)):
            feats = paired_latents(model, y, (1,), ("horizontal", "vertical"))
            for ax in ("horizontal", "vertical"):
                fit = fit_linear_action(feats[(1, None)], feats[(1, ax)], fit_fraction=0.5)
                errors[f"f1_{ax}_{probe}"] = fit.median_error
        # spread of each unit's pre-activation w_j·x over the test images (bias aside);
        # on unit isotropic noise it is the filter's norm
        spread_images = float((Xt @ W1.T).std(0).median())
        rec = model(Xt)
        test_rel = float(((rec - Xt).norm(dim=1) / Xt.norm(dim=1).clamp_min(1e-12)).mean())
        gap = (model(mirror_images(Xt)) - mirror_images(rec)).norm(dim=1)
        end_to_end = float((gap / rec.norm(dim=1).clamp_min(1e-12)).mean())
        offdata = float(1 - (W1 @ P).pow(2).sum() / W1.pow(2).sum())
    categorised = lambda p: sum(v for k, v in p.counts(64).items() if k != "unmatched")  # noqa: E731
    counts = raw.counts(64)
    row = {"seed": seed, "filters_first64": counts, "categorised_first64": categorised(raw),
           "symmetric_first64": counts["symmetric"],
           "pairs_first64": counts["mirrored pair"] + counts["negated mirrored pair"],
           "control_categorised_first64": categorised(filter_pairing(W1, "vertical")),
           "filter_similarity": _filter_similarity(W1),
           "subspace_filters_first64": sub.counts(64), "subspace_categorised_first64": categorised(sub),
           "median_best_cos": float(np.median(raw.similarity)),
           "subspace_median_best_cos": float(np.median(sub.similarity)),
           **errors, "offdata_energy": offdata,
           "preact_std_noise": float(W1.norm(dim=1).median()), "preact_std_images": spread_images,
           "end_to_end": end_to_end,
           "test_relative_error": test_rel, "final_task_loss": float(losses[-1]),
           "train_seconds": seconds}
    return row


def search_summary(rows: Sequence[Mapping[str, Any]], min_seeds: int = 3) -> dict[str, Any]:
    """Per variant of the ``rows`` of :func:`~eqlib.experiments.filter_search.filter_search`:
    its seeds, min / mean / max of
    every number in :data:`~eqlib.experiments.filter_search.SEARCH_KEYS`, and whether the goal
    is met on every seed (at
    least ``min_seeds`` of them): ``meets_goal`` (≥ 32 of the first 64 filters in a
    signed-permutation category at ``|cos|`` ≥ 0.8 and f1's horizontal error on isotropic
    noise ≤ 0.1) and ``meets_goal_in_subspace`` (the same for the filters projected on
    the data subspace and noise in that subspace).

    Raises:
        ValueError: for no rows, a row without ``variant`` / ``seed`` or a number, or
            ``min_seeds`` < 1.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    if not rows:
        raise ValueError("search_summary needs at least one row")
    if not isinstance(min_seeds, int) or min_seeds < 1:
        raise ValueError(f"min_seeds must be a positive integer, got {min_seeds!r}")
    for r in rows:
        missing = [k for k in ("variant", "seed", *SEARCH_KEYS) if k not in r]
        if missing:
            raise ValueError(f"row {dict(r).get('variant')!r} lacks {missing}")
    summary = {}
    for name in dict.fromkeys(r["variant"] for r in rows):
        rs = [r for r in rows if r["variant"] == name]
        stat = lambda key: {"min": float(min(r[key] for r in rs)),  # noqa: E731
                            "mean": float(np.mean([r[key] for r in rs])),
                            "max": float(max(r[key] for r in rs))}
        summary[name] = {
            "seeds": [int(r["seed"]) for r in rs], **{k: stat(k) for k in SEARCH_KEYS},
            "meets_goal": len(rs) >= min_seeds and all(
                r["categorised_first64"] >= 32 and r["f1_horizontal_noise"] <= 0.1 for r in rs),
            "meets_goal_in_subspace": len(rs) >= min_seeds and all(
                r["subspace_categorised_first64"] >= 32
                and r["f1_horizontal_subspace_noise"] <= 0.1 for r in rs)}
    return summary


def _search_inputs(train: CIFAR10, test: CIFAR10, base: SearchSettings
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The search's data: its stratified subsets of ``train`` and ``test`` as flattened
    normalised images, and the spectrum (eigenvalues ascending, eigenvectors) of the
    mirror-symmetrised training images; reused by ``eqlib.experiments.pairing_hypotheses``."""
    tr = subset(train, base.n_train, seed=0) if base.n_train < len(train) else train
    te = subset(test, base.n_test, seed=1) if base.n_test < len(test) else test
    evals, evecs = mirror_symmetric_spectrum(tr.images)
    return prepare_images(tr.images).flatten(1), prepare_images(te.images).flatten(1), evals, evecs


def filter_search(train: CIFAR10, test: CIFAR10, variants: Mapping[str, Mapping[str, Any]] | None = None,
                  *, base: SearchSettings | None = None, seeds: Sequence[int] = (0,),
                  more_seeds: Sequence[int] = (1, 2), top: int = 3,
                  on_row: Callable[[dict[str, Any]], None] | None = None,
                  weights: dict[tuple[str, int], torch.Tensor] | None = None) -> dict[str, Any]:
    """A search for a protocol under which the Tanh autoencoder's first-layer filters show
    the signed-permutation picture of Shahverdi et al. (2026) (the chapter's protocol shows none).

    Every variant runs with ``seeds``; the ``top`` variants (by categorised filters among
    the first 64, then by f1's horizontal error on noise) and the first variant (the
    chapter's protocol) run again with ``more_seeds``. Each row holds the filter
    categories (raw and projected on the top ``subspace_k`` principal directions of the
    mirror-symmetrised images), f1's linear-equivariance errors (isotropic noise, noise in
    the data subspace, test images; horizontal and vertical mirror), the share of W_1's
    energy outside the data subspace, the median spread of the first-layer pre-activations
    on isotropic noise (the filters' norm) and over the test images, the end-to-end equivariance error and the reconstruction error. The
    goal is judged by :func:`~eqlib.experiments.filter_search.search_summary`. ``weights``,
    when a dict, receives each
    run's W_1 under ``(variant, seed)``.

    Returns:
        ``{"base", "variants", "rows" (one per variant and seed), "summary"}``.

    Raises:
        ValueError: for an unknown key in a variant, no or repeated seeds, or ``top`` < 0.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    base = base or SearchSettings()
    if not isinstance(base, SearchSettings):
        raise TypeError(f"base must be a SearchSettings, got {type(base).__name__}")
    variants = dict(SEARCH_VARIANTS if variants is None else variants)
    if not variants:
        raise ValueError("variants must name at least one variant")
    keys = set(protocol.setting_keys(base))
    for name, change in variants.items():
        bad = set(change) - keys
        if bad:
            raise ValueError(f"unknown search keys {sorted(bad)} in variant {name!r}")
    seeds, more_seeds = [int(x) for x in seeds], [int(x) for x in more_seeds]
    if not seeds or len(set(seeds + more_seeds)) != len(seeds) + len(more_seeds):
        raise ValueError(f"seeds must be distinct and non-empty, got {seeds} and {more_seeds}")
    if not isinstance(top, int) or top < 0:
        raise ValueError(f"top must be an integer ≥ 0, got {top!r}")
    settings_of = {name: protocol.replace_settings(base, change) for name, change in variants.items()}
    X0, Xt0, evals, evecs = _search_inputs(train, test, base)
    P = evecs[:, -base.subspace_k:]
    inputs: dict[tuple[str, float], tuple[torch.Tensor, torch.Tensor]] = {}

    def data_for(s: SearchSettings):
        key = (s.whiten, s.zca_eps)
        if key not in inputs:
            if s.whiten == "none":
                inputs[key] = (X0, Xt0)
            else:
                Z = whitening(evals, evecs, s.whiten, s.zca_eps)
                inputs[key] = (X0 @ Z, Xt0 @ Z)
        return inputs[key]

    rows = []

    def run_one(name, seed):
        s = settings_of[name]
        X, Xt = data_for(s)
        row, model = _search_run(s, X, Xt, P, seed)
        rows.append({"variant": name, **row})
        if weights is not None:
            weights[(name, seed)] = model.layers[0].weight.detach().clone()
        if on_row is not None:
            on_row(rows[-1])

    for name in variants:
        for seed in seeds:
            run_one(name, seed)

    def score(v):
        rs = [r for r in rows if r["variant"] == v]
        return (-np.mean([r["categorised_first64"] for r in rs]),
                np.mean([r["f1_horizontal_noise"] for r in rs]))

    again = list(dict.fromkeys([next(iter(variants)), *sorted(variants, key=score)[:top]]))
    for name in again:
        for seed in more_seeds:
            run_one(name, seed)
    return {"base": protocol.settings_dict(base), "variants": {k: dict(v) for k, v in variants.items()},
            "rows": rows, "summary": search_summary(rows, min_seeds=len(seeds) + len(more_seeds))}


def load_search(path: str | Path) -> dict[str, Any]:
    """A record written by :func:`~eqlib.experiments.filter_search.filter_search` through the
    command line
    (:func:`~eqlib.experiments.cifar_mlp.main`, or ``--parts search`` of the CIFAR-10
    experiment), checked for the keys the chapter reads
    (:func:`eqlib.experiments.protocol.load_json`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not JSON, or lacks ``base`` / ``variants`` / ``rows`` /
            ``summary``.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    return protocol.load_json(path, required=("base", "variants", "rows", "summary"))


def search_html(record: Mapping[str, Any]) -> str:
    """The settings and outcomes of a :func:`~eqlib.experiments.filter_search.filter_search`
    record as two HTML tables, narrow enough for the page: per variant, its seeds and the
    min–max over seeds (one value for one seed) of

    1. the filters among the first 64 in a signed-permutation category (all, symmetric, in
       pairs, after projection on the data subspace, and for the vertical mirror as a
       control) and the median ``|cos|`` between two filters (near 1: the categories say
       little);
    2. f1's linear-equivariance error on isotropic noise, on noise in the data subspace and
       on test images (horizontal mirror, and vertical as the control), the end-to-end
       error, W_1's energy outside the data subspace, the pre-activation spread on images
       and the reconstruction error.

    Raises:
        ValueError: a record without ``summary``.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    from ..analysis import html_table
    if "summary" not in record:
        raise ValueError("record must be a filter_search record with a 'summary'")
    cat = "filters in a category (of the first 64)"
    f1 = "f1's equivariance error"
    tables = (
        ((("categorised_first64", (cat, "all"), 0), ("symmetric_first64", (cat, "symmetric"), 0),
          ("pairs_first64", (cat, "in pairs"), 0),
          ("subspace_categorised_first64", (cat, "in the data subspace"), 0),
          ("control_categorised_first64", (cat, "control mirror"), 0),
          ("filter_similarity", "filter similarity", 2))),
        ((("f1_horizontal_noise", (f1, "noise"), 2), ("f1_vertical_noise", (f1, "noise, control"), 2),
          ("f1_horizontal_subspace_noise", (f1, "subspace noise"), 2),
          ("f1_horizontal_images", (f1, "images"), 2), ("f1_vertical_images", (f1, "images, control"), 2),
          ("end_to_end", "end-to-end error", 2), ("offdata_energy", "W1 energy off data", 2),
          ("preact_std_images", "pre-act. spread", 1), ("test_relative_error", "reconstr. error", 2))))

    def span(stat, digits):
        lo, hi = f"{stat['min']:.{digits}f}", f"{stat['max']:.{digits}f}"
        return lo if lo == hi else f"{lo}–{hi}"

    out = []
    for columns in tables:
        body = [[name, ",".join(map(str, s["seeds"])),
                 *(span(s[key], digits) for key, _, digits in columns)]
                for name, s in record["summary"].items()]
        out.append(html_table(["setting", "seeds", *(label for _, label, _ in columns)], body,
                              align_right_from=1))
    return "\n".join(out)


def search_figures(weights: Mapping[tuple[str, int], torch.Tensor], names: Sequence[str],
                   seed: int = 0) -> dict[str, Any]:
    """The first 64 first-layer filters of each variant in ``names`` on ``seed``, framed by
    mirror category (:func:`eqlib.plots.filters.plot_filters`), from the ``weights`` that
    :func:`~eqlib.experiments.filter_search.filter_search` filled in.

    Raises:
        KeyError: a (name, seed) without weights.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    from ..plots.filters import plot_filters
    figs = {}
    for name in names:
        if (name, seed) not in weights:
            raise KeyError(f"no weights for variant {name!r} on seed {seed}")
        W1 = weights[(name, seed)]
        figs[name] = plot_filters(W1, filter_pairing(W1), title=f"{name} (seed {seed})")
    return figs


def load_search_data(root: str | None = None, download: bool | None = None) -> tuple[CIFAR10, CIFAR10]:
    """The whole CIFAR-10 train and test splits (:func:`eqlib.data.load_cifar10`);
    :func:`~eqlib.experiments.filter_search.filter_search` takes its stratified subsets.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    return load_cifar10("train", root, download=download), load_cifar10("test", root, download=download)


def search_record(train: CIFAR10, test: CIFAR10, base: SearchSettings, seeds: Sequence[int],
                  *, command: str, variants: Mapping[str, Mapping[str, Any]] | None = None,
                  on_row: Callable[[dict[str, Any]], None] | None = None) -> tuple[dict[str, Any], list[Any]]:
    """The search as the command lines run it:
    :func:`~eqlib.experiments.filter_search.filter_search` from ``base`` on
    ``seeds[:1]``, again on ``seeds[1:]`` (default 1, 2) for the chosen variants, the
    ``command`` recorded, and the filters of the first variant and of the best one
    (most categorised filters, then the lowest f1 error on noise) on the first seed.

    Returns:
        (record, figures).

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    seeds = [int(x) for x in seeds]
    weights: dict[tuple[str, int], torch.Tensor] = {}
    found = filter_search(train, test, variants, base=base, seeds=seeds[:1], more_seeds=seeds[1:] or (1, 2),
                          on_row=on_row, weights=weights)
    found["command"] = command
    summary = found["summary"]
    best = max(summary, key=lambda v: (summary[v]["categorised_first64"]["mean"],
                                       -summary[v]["f1_horizontal_noise"]["mean"]))
    shown = list(dict.fromkeys([next(iter(summary)), best]))
    return found, list(search_figures(weights, shown, seed=seeds[0]).values())


def _variants(text: str | None) -> dict[str, dict[str, Any]] | None:
    if text is None:
        return None
    names = [x.strip() for x in text.split(";") if x.strip()]
    unknown = [x for x in names if x not in SEARCH_VARIANTS]
    if unknown or not names:
        raise ValueError(f"--variants: unknown or empty {unknown}; choose from {list(SEARCH_VARIANTS)}")
    return {name: SEARCH_VARIANTS[name] for name in names}


def search_text(record: Mapping[str, Any]) -> str:
    """The lines a search's command line prints at the end: per variant, its seeds, the
    filters in a signed-permutation category among the first 64 and f1's horizontal error
    on noise (means over the seeds), and whether it meets the goal.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    rows = [[name, ",".join(map(str, v["seeds"])), f"{v['categorised_first64']['mean']:.1f}",
             f"{v['f1_horizontal_noise']['mean']:.3f}", "yes" if v["meets_goal"] else "no"]
            for name, v in record["summary"].items()]
    return (f"filter search, budget {record.get('budget', '?')}:\n"
            + protocol.text_table(["variant", "seeds", "filters in a category (of 64)", "f1 error on noise",
                                   "meets the goal"], rows))


def search_outputs(stem: str, options: protocol.RunOptions) -> list[str]:
    """The JSON a search's command line writes, ``<stem>_<budget>.json`` (checked before any
    work, with the ``--variants`` flag when the command line has it).

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    _variants(options.flags.get("variants"))
    return [protocol.output_name(stem, options.budget)]


def run_search(s: SearchSettings, out: Path, options: protocol.RunOptions, stem: str = "filter_search"
               ) -> dict[str, Any]:
    """The search as a command line runs it (:func:`~eqlib.experiments.filter_search.search_record`
    from the settings ``s`` on the command line's seeds, each row printed as it finishes),
    written into ``out`` as ``<stem>_<budget>.json`` and ``<stem>_<budget>_filters_<k>.png``.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    variants = _variants(options.flags.get("variants"))
    tr, te = load_search_data(options.data, download=options.download)
    found, figures = search_record(tr, te, s, options.seeds, command=options.command, variants=variants,
                                   on_row=lambda row: print("search:", json.dumps(row), flush=True))
    found["budget"] = options.budget
    name = protocol.output_name(stem, options.budget, suffix="")
    protocol.write_outputs(out, f"{name}.json", found,
                           {f"{name}_filters_{k}.png": fig for k, fig in enumerate(figures)}, dpi=80)
    return found


#: the search as :func:`eqlib.experiments.protocol.main` runs it
#:
#: :meta hide-value:
EXPERIMENT = protocol.ExperimentCLI(
    prog="python -m eqlib.experiments.filter_search",
    description="The search for a training protocol under which the first-layer filters of the Tanh "
                "autoencoder of chapter 11 pair up under the mirror: every variant on the first seed, the "
                "first and the best three again on the others. Budgets: full is the recorded search, "
                "laptop a smaller one; --set changes any SearchSettings key (train.epochs=20, "
                "first_norm=1).",
    budgets=BUDGETS, settings=settings, outputs=lambda s, options: search_outputs("filter_search", options),
    run=run_search, summary=search_text, progress=False,
    flags={"--variants": {"default": None, "metavar": "A;B",
                          "help": "semicolon-separated variants to run (default: all of SEARCH_VARIANTS)"}})


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m eqlib.experiments.filter_search --budget full --seeds 0,1,2
    --set train.epochs=20 --variants "chapter's protocol;init ×1"`` runs
    :func:`~eqlib.experiments.filter_search.search_record`
    from the budget's :class:`~eqlib.experiments.filter_search.SearchSettings` with the
    ``--set`` overrides and writes
    ``filter_search_<budget>.json`` and ``filter_search_<budget>_filters_<k>.png`` into
    ``--out`` (:func:`eqlib.experiments.protocol.main`).

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    return protocol.main(EXPERIMENT, argv)


if __name__ == "__main__":
    main()
