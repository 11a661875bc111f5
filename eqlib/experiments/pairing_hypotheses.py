"""Chapter 11's missing picture as a designed experiment: three hypotheses on why the Tanh
autoencoder's first-layer filters do not pair up under the mirror, each an intervention
with a stated prediction, run on the search's networks
(:class:`~eqlib.experiments.filter_search.SearchSettings`, trained through the model cache)
and measured as the search measures them, plus the filters' spatial localisation.

1. *Stability vs reachability* (``"stability"``): start from an exactly paired first layer,
   planted from the generic network of the same seed
   (:func:`eqlib.analysis.paired_projection`), and train with the protocol. Prediction:
   if pairing is stable but not reachable, the pairs survive and the reconstruction error
   matches the generic network's; if it is not stable, they dissolve.
2. *Structure first* (``"structure"``): longer training, first-layer decay, a smaller
   learning rate, a 64-unit first layer. Prediction: if pairs need spatially structured
   filters first, categorisation rises with localisation
   (:func:`eqlib.analysis.filter_localisation`).
3. *Where the penalty acts* (``"where"``): a strong penalty on images alone, on images and
   isotropic noise, on images and noise in the data subspace
   (``TrainConfig.noise_subspace``), from half-way or from the start. Prediction: a
   penalty that reaches the directions the images do not constrain pairs the filters.

Each hypothesis's verdict is computed from the numbers
(:func:`~eqlib.experiments.pairing_hypotheses.stability_verdict`,
:func:`~eqlib.experiments.pairing_hypotheses.structure_verdict`,
:func:`~eqlib.experiments.pairing_hypotheses.where_verdict`), and every setting is judged by
the criterion of the picture (:func:`~eqlib.experiments.pairing_hypotheses.shows_picture`).
Command line (writes ``pairing_hypotheses_<budget>.json``)::

    python -m eqlib.experiments.pairing_hypotheses --budget full --seeds 0,1,2

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr
from torch import nn

from ..analysis import filter_localisation, filter_pairing, paired_projection
from ..validation import check_float, check_int
from . import protocol
from .cifar_setup import build_mlp
from .filter_search import (SEARCH_BUDGETS, SearchSettings, _search_inputs, _search_measures, load_search_data,
                            search_train)

__all__ = ["HypothesisSettings", "BUDGETS", "settings", "HYPOTHESES", "hypotheses", "PICTURE", "shows_picture",
           "stability_verdict", "structure_verdict", "where_verdict", "pairing_hypotheses", "hypotheses_text",
           "main", "EXPERIMENT"]

#: A protocol shows the picture when on every seed (at least 3) at least ``categorised``
#: of the first 64 filters fall in a signed-permutation category, at least ``pairs`` of
#: them in mirrored or negated mirrored pairs, and the layer is not degenerate (median
#: absolute cosine between two filters, the search's ``filter_similarity``, below
#: ``HypothesisSettings.similarity_max``).
PICTURE = {"categorised": 32, "pairs": 8, "seeds": 3}


@dataclass(frozen=True)
class HypothesisSettings:
    """The settings of :func:`~eqlib.experiments.pairing_hypotheses.pairing_hypotheses`.

    Attributes:
        search: the networks, their training and the search's measures
            (:class:`~eqlib.experiments.filter_search.SearchSettings`): every setting of
            every hypothesis changes it.
        window: the side of the window of :func:`eqlib.analysis.filter_localisation`.
        similarity_max: a layer whose median ``|cos|`` between two filters reaches this is
            degenerate (collapsed onto few directions: categories say little there).
        survive: the share of the planted start's categorised filters (and of its filters
            in pairs) that must remain after training for the pairs to count as surviving.
        strong_weight, strong_decay: the penalty weight and first-layer decay of the
            ``"where"`` hypothesis (the search's strongest levers that left the layer
            non-degenerate).

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """

    search: SearchSettings = field(default_factory=SearchSettings)
    window: int = 7
    similarity_max: float = 0.5
    survive: float = 0.5
    strong_weight: float = 100.0
    strong_decay: float = 5.0

    def __post_init__(self):
        protocol.check_nested(self, "search", SearchSettings)
        check_int("window", self.window, 1, 32)
        check_float("similarity_max", self.similarity_max, 0.0, 1.0, low_open=True)
        check_float("survive", self.survive, 0.0, 1.0)
        check_float("strong_weight", self.strong_weight, 0.0, low_open=True)
        check_float("strong_decay", self.strong_decay, 0.0)


#: ``full``: the search's ``full`` networks (10,000 images, 15 epochs; 14 networks per seed,
#: 42 on 3 seeds: about 60–80 CPU-minutes on 1 thread, from the CPU time per training step
#: (47 s for a run of the protocol, 141 s for the triple length, 70–114 s with a noise
#: penalty) and from the ``laptop`` budget's 128 CPU-seconds for one seed, 1/15 the work);
#: ``laptop``: the search's laptop networks (2,000 images, 5 epochs), for a try and the tests
BUDGETS: dict[str, HypothesisSettings] = {
    "laptop": HypothesisSettings(search=SEARCH_BUDGETS["laptop"]),
    "full": HypothesisSettings(),
}


def settings(budget: str | None = None, **overrides: Any) -> HypothesisSettings:
    """The :class:`~eqlib.experiments.pairing_hypotheses.HypothesisSettings` of ``budget``
    (default ``$EQLIB_BUDGET``, else ``"laptop"``) with ``overrides`` (dotted keys reach
    the search's settings: ``search.train.epochs``).

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    return protocol.settings(BUDGETS, budget, **overrides)


#: the generic network: the chapter's protocol from its seeded initialisation
GENERIC = "chapter's protocol"
#: where a setting starts: the seeded initialisation, the planted layer with the rest
#: initialised as usual, or the planted layer with the rest of the trained generic network
STARTS = ("init", "planted", "planted, trained rest")


def hypotheses(s: HypothesisSettings) -> dict[str, dict[str, Any]]:
    """The three hypotheses for the settings ``s``: per hypothesis its ``question``,
    ``prediction`` and ``settings`` (name → ``{"changes": changes to s.search (dotted
    keys), "start": one of STARTS}``); the generic network is the first setting of the
    first two.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    t, h = s.search.train, s.search.hidden
    start_now = {"train.penalty_start": 0.0, "train.penalty_ramp": 0.1}
    strong = {"train.first_weight_decay": s.strong_decay, "train.penalty_weight": s.strong_weight}
    noise = {"train.penalty_noise": s.strong_weight}
    subspace = {**noise, "train.noise_subspace": s.search.subspace_k}
    one = lambda changes, start="init": {"changes": changes, "start": start}  # noqa: E731
    return {
        "stability": {
            "question": "Is a paired first layer stable under the protocol, though not reached from a "
                        "generic initialisation?",
            "prediction": "If pairing is stable but not reachable, the planted pairs survive training (the "
                          "categorised count stays high) and the reconstruction error matches the generic "
                          "network's within the seeds' spread; if it is not stable, the pairs dissolve.",
            "settings": {GENERIC: one({}), "planted": one({}, "planted"),
                         "planted, trained rest": one({}, "planted, trained rest"),
                         "planted, trained rest, penalty from the start": one(start_now, "planted, trained rest")}},
        "structure": {
            "question": "Do pairs emerge once the filters are spatially structured (localised)?",
            "prediction": "If pairs need structure first, the interventions that localise the filters raise "
                          "the categorised count with the localisation.",
            "settings": {GENERIC: one({}), f"epochs ×3 ({3 * t.epochs})": one({"train.epochs": 3 * t.epochs}),
                         f"first-layer decay {s.strong_decay:g}": one({"train.first_weight_decay": s.strong_decay}),
                         "learning rate ÷3": one({"train.lr": t.lr / 3}),
                         "64-unit first layer": one({"hidden": (64, h[1], h[2])})}},
        "where": {
            "question": "Does it matter where the (strong) penalty acts: on images, on isotropic noise, on "
                        "noise in the data subspace, from half-way or from the start?",
            "prediction": "If the images leave the pairing unconstrained, a penalty on noise (isotropic or in "
                          "the data subspace) pairs filters that a penalty on images alone makes symmetric.",
            "settings": {"images": one(strong), "images + isotropic noise": one({**strong, **noise}),
                         "images + subspace noise": one({**strong, **subspace}),
                         "images, from the start": one({**strong, **start_now}),
                         "images + isotropic noise, from the start": one({**strong, **noise, **start_now}),
                         "images + subspace noise, from the start": one({**strong, **subspace, **start_now})}},
    }


#: the per-run numbers the summaries report (min / mean / max over seeds)
KEYS = ("categorised_first64", "symmetric_first64", "antisymmetric_first64", "pairs_first64",
        "mirrored_pairs_first64", "negated_pairs_first64", "median_best_cos", "filter_similarity",
        "localisation_first64", "f1_horizontal_noise", "test_relative_error", "train_seconds")


def _layer_measures(W1: torch.Tensor, window: int) -> dict[str, Any]:
    """The first layer's categories among the first 64 filters and their localisation."""
    counts = filter_pairing(W1).counts(64)
    return {"categorised_first64": sum(v for k, v in counts.items() if k != "unmatched"),
            "symmetric_first64": counts["symmetric"], "antisymmetric_first64": counts["antisymmetric"],
            "pairs_first64": counts["mirrored pair"] + counts["negated mirrored pair"],
            "mirrored_pairs_first64": counts["mirrored pair"],
            "negated_pairs_first64": counts["negated mirrored pair"],
            "localisation_first64": float(np.median(filter_localisation(W1[:64], window)))}


def _planted_start(generic: nn.Module, s: SearchSettings, seed: int, start: str) -> tuple[nn.Module, dict]:
    """The network a planted setting starts from, and the planted layer's measures."""
    layer = paired_projection(generic.layers[0].weight.detach(), generic.layers[0].bias.detach())
    if start == "planted":
        model = build_mlp("tanh", "autoencode", s.hidden, seed=seed, first_init_scale=s.first_init_scale)
    else:
        model = copy.deepcopy(generic)
    with torch.no_grad():
        model.layers[0].weight.copy_(layer.weight)
        model.layers[0].bias.copy_(layer.bias)
    return model, {"kinds": layer.kinds(), "projection_median_cos": float(np.median(layer.score))}


def shows_picture(rows: Sequence[Mapping[str, Any]], similarity_max: float = 0.5) -> bool:
    """Whether one setting's ``rows`` (one per seed) show the picture (:data:`~eqlib.experiments.pairing_hypotheses.PICTURE`): at
    least 3 seeds, and on every one at least 32 of the first 64 filters categorised, at
    least 8 of them in mirrored or negated mirrored pairs, and ``filter_similarity`` below
    ``similarity_max`` (a non-degenerate layer).

    Examples:
        >>> row = {"categorised_first64": 40, "pairs_first64": 10, "filter_similarity": 0.1}
        >>> shows_picture([row] * 3), shows_picture([row] * 2), shows_picture([row, row, {**row, "pairs_first64": 7}])
        (True, False, False)

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    seeds = {r.get("seed", i) for i, r in enumerate(rows)}
    return len(seeds) >= PICTURE["seeds"] and all(
        r["categorised_first64"] >= PICTURE["categorised"] and r["pairs_first64"] >= PICTURE["pairs"]
        and r["filter_similarity"] < similarity_max for r in rows)


def _by_setting(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["setting"], []).append(r)
    return out


def _stat(rs: Sequence[Mapping[str, Any]], key: str) -> dict[str, float]:
    values = [float(r[key]) for r in rs]
    return {"min": min(values), "mean": float(np.mean(values)), "max": max(values)}


def stability_verdict(rows: Sequence[Mapping[str, Any]], survive: float = 0.5,
                      generic: str = GENERIC) -> dict[str, Any]:
    """The stability hypothesis judged from its ``rows`` (the generic setting's and each
    planted setting's, one per seed; a planted row carries its start's measures under
    ``"start"``). Per planted setting and seed, the pairs *survive* when the categorised
    count after training is at least ``survive`` times the start's and the count in pairs
    at least ``survive`` times the start's. The setting is ``"stable"`` when they survive
    on every seed, ``"not stable"`` on none, ``"mixed"`` otherwise. Its reconstruction
    *matches* the generic network's when the means differ by at most the larger seed
    spread (max − min) of the two, or 0.005, and is *as good* when it is at most that much
    worse (a start from the trained network's other layers has had more training, so it may
    well be better). The pairing is *not reached* from the generic start when the generic
    network has fewer than 8 filters in pairs on every seed; ``stable_not_reachable``: stable,
    as good, and not reached.

    Examples:
        >>> g = [{"setting": "chapter's protocol", "seed": k, "categorised_first64": 0,
        ...       "pairs_first64": 0, "test_relative_error": 0.50 + k / 100} for k in range(3)]
        >>> start = {"categorised_first64": 60, "pairs_first64": 50}
        >>> p = [{"setting": "planted", "seed": k, "categorised_first64": 50, "pairs_first64": 40,
        ...       "test_relative_error": 0.51, "start": start} for k in range(3)]
        >>> v = stability_verdict(g + p)["settings"]["planted"]
        >>> v["status"], v["reconstruction_matches"], v["stable_not_reachable"]
        ('stable', True, True)

    Raises:
        ValueError: no rows of the generic setting.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    check_float("survive", survive, 0.0, 1.0)
    groups = _by_setting(rows)
    if generic not in groups:
        raise ValueError(f"stability_verdict needs the rows of the generic setting {generic!r}")
    g = groups[generic]
    g_rec = _stat(g, "test_relative_error")
    reached = any(r["pairs_first64"] >= PICTURE["pairs"] for r in g)
    out = {"generic_pairs_max": max(r["pairs_first64"] for r in g), "not_reached": not reached, "settings": {}}
    lines = []
    for name, rs in groups.items():
        if name == generic:
            continue
        alive = [r["categorised_first64"] >= survive * r["start"]["categorised_first64"]
                 and r["pairs_first64"] >= survive * r["start"]["pairs_first64"] for r in rs]
        status = "stable" if all(alive) else ("not stable" if not any(alive) else "mixed")
        rec = _stat(rs, "test_relative_error")
        gap = rec["mean"] - g_rec["mean"]
        tol = max(g_rec["max"] - g_rec["min"], rec["max"] - rec["min"], 0.005)
        matches, as_good = abs(gap) <= tol, gap <= tol
        out["settings"][name] = {"survived": alive, "status": status, "reconstruction_gap": gap,
                                 "reconstruction_tolerance": tol, "reconstruction_matches": matches,
                                 "reconstruction_as_good": as_good,
                                 "stable_not_reachable": status == "stable" and as_good and not reached}
        what = {"stable": "the pairs survive on every seed", "not stable": "the pairs dissolve on every seed",
                "mixed": f"the pairs survive on {sum(alive)} of {len(alive)} seeds"}[status]
        how = "matches" if matches else ("is better than" if as_good else "is worse than")
        lines.append(f"{name}: {what}; reconstruction {how} the generic network's ({gap:+.3f}, tolerance "
                     f"{tol:.3f})")
    supported = [n for n, v in out["settings"].items() if v["stable_not_reachable"]]
    out["supported"] = bool(supported)
    out["text"] = "; ".join(lines) + (f". Stable but not reachable: supported by {', '.join(supported)}."
                                      if supported else ". Stable but not reachable: not supported.")
    return out


def structure_verdict(rows: Sequence[Mapping[str, Any]], generic: str = GENERIC) -> dict[str, Any]:
    """The structure-first hypothesis judged from its ``rows``: a setting *localises* the
    filters when its smallest localisation over seeds exceeds the generic setting's largest;
    it *raises* the categorisation when its smallest categorised count exceeds the generic
    setting's largest. ``"inconclusive"``: no setting localises the filters; ``"not
    supported"``: some setting localises them but none raises the count; ``"supported"``:
    every localising setting raises the count and the rank correlation (Spearman) of
    localisation and categorised count over all runs is positive; ``"mixed"`` otherwise.

    Examples:
        >>> row = lambda name, loc, cat: {"setting": name, "localisation_first64": loc,
        ...                                "categorised_first64": cat}
        >>> rows = [row("chapter's protocol", 0.10, 0), row("longer", 0.30, 0), row("decay", 0.05, 3)]
        >>> structure_verdict(rows)["status"]
        'not supported'

    Raises:
        ValueError: no rows of the generic setting.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    groups = _by_setting(rows)
    if generic not in groups:
        raise ValueError(f"structure_verdict needs the rows of the generic setting {generic!r}")
    g = groups[generic]
    loc_g, cat_g = max(r["localisation_first64"] for r in g), max(r["categorised_first64"] for r in g)
    localising = [n for n, rs in groups.items() if n != generic and min(r["localisation_first64"] for r in rs) > loc_g]
    raising = [n for n in localising if min(r["categorised_first64"] for r in groups[n]) > cat_g]
    loc = [r["localisation_first64"] for r in rows]
    cat = [r["categorised_first64"] for r in rows]
    rho = float(spearmanr(loc, cat).statistic) if len(set(loc)) > 1 and len(set(cat)) > 1 else float("nan")
    if not localising:
        status = "inconclusive"
    elif not raising:
        status = "not supported"
    elif len(raising) == len(localising) and rho > 0:
        status = "supported"
    else:
        status = "mixed"
    text = (f"{len(localising)} setting(s) localise the filters beyond the generic network on every seed "
            f"({', '.join(localising) or 'none'}); {len(raising)} of them raise the categorised count "
            f"({', '.join(raising) or 'none'}); Spearman's rank correlation of localisation and categorised "
            f"count over {len(rows)} runs: {rho:.2f} (nan: one of them constant). Structure first: {status}.")
    return {"localising": localising, "raising": raising, "spearman": rho, "status": status, "text": text}


def where_verdict(rows: Sequence[Mapping[str, Any]], similarity_max: float = 0.5) -> dict[str, Any]:
    """The where-the-penalty-acts hypothesis judged from its ``rows``: per setting the mean
    count in pairs, the mean categorised count and whether it shows the picture
    (:func:`~eqlib.experiments.pairing_hypotheses.shows_picture`); the setting with the most
    filters in pairs (mean over seeds, ties by the fewest on any seed); ``"supported"``
    when some setting with a noise penalty has more filters in pairs on every seed than
    every image-only setting has on any, ``"not supported"`` otherwise.

    Examples:
        >>> row = lambda name, pairs: {"setting": name, "pairs_first64": pairs, "categorised_first64": 40,
        ...                            "filter_similarity": 0.2}
        >>> v = where_verdict([row("images", 0), row("images + isotropic noise", 6)])
        >>> v["status"], v["most_pairs"]
        ('supported', 'images + isotropic noise')

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    groups = _by_setting(rows)
    per = {n: {"pairs_mean": float(np.mean([r["pairs_first64"] for r in rs])),
               "pairs_min": min(r["pairs_first64"] for r in rs),
               "categorised_mean": float(np.mean([r["categorised_first64"] for r in rs])),
               "shows_picture": shows_picture(rs, similarity_max)} for n, rs in groups.items()}
    best = max(per, key=lambda n: (per[n]["pairs_mean"], per[n]["pairs_min"]))
    images = [n for n in groups if "noise" not in n]
    image_max = max((r["pairs_first64"] for n in images for r in groups[n]), default=0)
    better = [n for n in groups if "noise" in n and per[n]["pairs_min"] > image_max]
    status = "supported" if better else "not supported"
    text = (f"most filters in pairs: {best} ({per[best]['pairs_mean']:.1f} of 64 on average); a noise penalty "
            f"pairs more filters than the images alone on every seed in: {', '.join(better) or 'none'}; "
            f"settings that show the picture: {', '.join(n for n in per if per[n]['shows_picture']) or 'none'}. "
            f"Where the penalty acts: {status}.")
    return {"settings": per, "most_pairs": best, "noise_better": better, "status": status, "text": text}


VERDICTS: dict[str, Callable[..., dict[str, Any]]] = {
    "stability": lambda rows, s: stability_verdict(rows, s.survive),
    "structure": lambda rows, s: structure_verdict(rows),
    "where": lambda rows, s: where_verdict(rows, s.similarity_max),
}


def pairing_hypotheses(train: Any, test: Any, s: HypothesisSettings | None = None, *, seeds: Sequence[int] = (0, 1, 2),
                       only: Sequence[str] | None = None,
                       on_row: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run the hypotheses (``only``: their names, default all three) on ``seeds``: every
    setting of :func:`~eqlib.experiments.pairing_hypotheses.hypotheses` trained through the
    model cache (a setting shared by two hypotheses is trained once), measured as the
    search does (``eqlib.experiments.filter_search``) plus the categories of the first 64
    filters in detail and their median localisation; per hypothesis the per-seed rows,
    the min / mean / max per setting with whether it shows the picture, and the verdict.

    Returns:
        ``{"settings", "criterion", "seeds", "hypotheses": {name: {"question",
        "prediction", "settings", "rows", "summary", "verdict"}}, "picture", "seconds"}``.

    Raises:
        ValueError: unknown hypotheses, no or repeated seeds.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    t0 = time.perf_counter()
    s = s or HypothesisSettings()
    if not isinstance(s, HypothesisSettings):
        raise TypeError(f"s must be a HypothesisSettings, got {type(s).__name__}")
    plan = hypotheses(s)
    only = list(plan) if only is None else list(only)
    if not only or set(only) - set(plan):
        raise ValueError(f"only must name some of {list(plan)}, got {only}")
    seeds = [int(x) for x in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct and non-empty, got {seeds}")
    X, Xt, _, evecs = _search_inputs(train, test, s.search)
    P = evecs[:, -s.search.subspace_k:]
    done: dict[str, tuple[dict[str, Any], nn.Module]] = {}

    def run(spec: Mapping[str, Any], seed: int) -> tuple[dict[str, Any], nn.Module]:
        key = json.dumps([spec["changes"], spec["start"], seed], sort_keys=True, default=list)
        if key not in done:
            ss = protocol.replace_settings(s.search, spec["changes"])
            start, extra = None, {}
            if spec["start"] != "init":
                _, generic = run({"changes": {}, "start": "init"}, seed)
                start, extra = _planted_start(generic, ss, seed, spec["start"])
                extra = {"start": {**_layer_measures(start.layers[0].weight.detach(), s.window), **extra}}
            t1 = time.perf_counter()
            result = search_train(ss, X, seed, start=start, cached=True)
            seconds = time.perf_counter() - t1
            row = _search_measures(ss, result.model, X, Xt, P, seed, seconds, result.history["task_loss"])
            row.update(_layer_measures(result.model.layers[0].weight.detach(), s.window), **extra,
                       from_cache=result.from_cache)
            done[key] = (row, result.model)
        return done[key]

    out = {}
    for name in only:
        h = plan[name]
        rows = []
        for setting, spec in h["settings"].items():
            for seed in seeds:
                row = {"hypothesis": name, "setting": setting, **run(spec, seed)[0]}
                rows.append(row)
                if on_row is not None:
                    on_row(row)
        summary = {n: {"seeds": [r["seed"] for r in rs], **{k: _stat(rs, k) for k in KEYS},
                       "shows_picture": shows_picture(rs, s.similarity_max)}
                   for n, rs in _by_setting(rows).items()}
        out[name] = {**h, "rows": rows, "summary": summary, "verdict": VERDICTS[name](rows, s)}
    picture = {f"{name}: {n}": v["shows_picture"] for name, h in out.items() for n, v in h["summary"].items()}
    return {"settings": protocol.settings_dict(s), "criterion": {**PICTURE, "similarity_max": s.similarity_max},
            "seeds": seeds, "hypotheses": out, "picture": picture, "seconds": time.perf_counter() - t0}


def hypotheses_text(record: Mapping[str, Any]) -> str:
    """The lines the command line prints at the end: per hypothesis and setting, the seeds'
    categorised counts, counts in pairs, median localisation and reconstruction errors,
    whether it shows the picture, then the verdict.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    lines = [f"pairing hypotheses, budget {record.get('budget', '?')}, seeds {record['seeds']}:"]
    for name, h in record["hypotheses"].items():
        rows = []
        for setting, rs in _by_setting(h["rows"]).items():
            col = lambda key, fmt: "/".join(format(r[key], fmt) for r in rs)  # noqa: E731
            rows.append([setting, col("categorised_first64", "d"), col("pairs_first64", "d"),
                         col("localisation_first64", ".2f"), col("test_relative_error", ".3f"),
                         "yes" if h["summary"][setting]["shows_picture"] else "no"])
        lines.append(f"\n{name}: {h['question']}")
        lines.append(protocol.text_table(["setting", "categorised", "in pairs", "localisation", "reconstr. error",
                                          "picture"], rows))
        lines.append(f"verdict: {h['verdict']['text']}")
    return "\n".join(lines)


def _only(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [x.strip() for x in text.split(",") if x.strip()]
    known = list(hypotheses(HypothesisSettings()))
    if not names or set(names) - set(known):
        raise ValueError(f"--only: unknown or empty {names}; choose from {known}")
    return names


def _outputs(s: HypothesisSettings, options: protocol.RunOptions) -> list[str]:
    _only(options.flags.get("only"))
    return [protocol.output_name("pairing_hypotheses", options.budget)]


def _run(s: HypothesisSettings, out: Path, options: protocol.RunOptions) -> dict[str, Any]:
    tr, te = load_search_data(options.data, download=options.download)
    record = pairing_hypotheses(tr, te, s, seeds=options.seeds, only=_only(options.flags.get("only")),
                                on_row=lambda row: print("hypothesis:", json.dumps(row), flush=True))
    record = {"budget": options.budget, "command": options.command, **record}
    protocol.write_outputs(out, protocol.output_name("pairing_hypotheses", options.budget), record)
    return record


#: the experiment as :func:`eqlib.experiments.protocol.main` runs it
#:
#: :meta hide-value:
EXPERIMENT = protocol.ExperimentCLI(
    prog="python -m eqlib.experiments.pairing_hypotheses",
    description="Chapter 11's picture as a designed experiment: three hypotheses (stability vs reachability "
                "of a planted paired layer, structure first, where the penalty acts), each setting on every "
                "seed, trained through the model cache (resumable), judged by verdicts computed from the "
                "numbers. Budgets: full (the search's networks), laptop (a try); --set changes any "
                "HypothesisSettings key (search.train.epochs=20, window=5).",
    budgets=BUDGETS, settings=settings, outputs=_outputs, run=_run, summary=hypotheses_text, progress=False,
    flags={"--only": {"default": None, "metavar": "A,B",
                      "help": "comma-separated hypotheses to run (stability, structure, where; default all)"}})


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m eqlib.experiments.pairing_hypotheses --budget full --seeds
    0,1,2`` runs :func:`~eqlib.experiments.pairing_hypotheses.pairing_hypotheses` and writes
    ``pairing_hypotheses_<budget>.json`` into ``--out``
    (:func:`eqlib.experiments.protocol.main`).

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    return protocol.main(EXPERIMENT, argv)


if __name__ == "__main__":
    main()
