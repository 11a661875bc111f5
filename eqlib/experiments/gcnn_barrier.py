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
        --set widths=0.0625 --set n_train=256 --set train.epochs=1 --parts barriers --out /tmp/tiny  # smoke test
    python -m eqlib.experiments.gcnn_barrier --budget full --device cuda --out results/   # a GPU
    bash benchmarks/record_medium.sh   # the medium record on a CPU: hours, resumable (kill and rerun)

Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..budget import budget as select_budget
from ..device import default_device
from ..io import atomic_write, cache_dir, config_hash, content_hash, warn_once
from ..models.cnn import MirrorGCNN
from ..train import cached_train, evaluate_accuracy, image_preset
from . import protocol
from .barrier_filters import (filter_distance, gcnn_filter_distance, min_scaled_filter_distance, normalize_kernels,
                              rescale_channels)
from .barrier_merge import (MergeData, gcnn_barrier, interpolation_curve, load_merge_data, merge_barrier,
                            summarize)
from .barrier_report import _figures, output_stem, summary_table, summary_table_html, summary_text
from .barrier_settings import (BUDGETS, MEDIUM_EPOCHS, MEDIUM_INVARIANCE_EPOCHS, VARIANTS, BarrierBudget,
                               CropBudget, apply_overrides, build_network, network_seeds, settings,
                               train_config)

__all__ = ["VARIANTS", "BarrierBudget", "CropBudget", "BUDGETS", "MergeData", "load_merge_data", "build_network",
           "train_config", "train_networks", "gcnn_barrier", "merge_barrier", "interpolation_curve",
           "summarize", "summary_table", "summary_table_html", "run_experiment", "main",
           "filter_distance", "gcnn_filter_distance", "normalize_kernels", "min_scaled_filter_distance",
           "rescale_channels", "network_seeds", "apply_overrides", "PARTS", "EXPERIMENT", "settings"]
# the settings, merges, filter distances and reports live in barrier_settings, barrier_merge,
# barrier_filters and barrier_report; their names stay importable from here (chapter 10 reads gb.<name>)
_MOVED = (MEDIUM_EPOCHS, MEDIUM_INVARIANCE_EPOCHS, output_stem, summary_text, replace)


def _autocast(b: BarrierBudget, device) -> contextlib.AbstractContextManager:
    if b.amp == "none":
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def train_networks(b: BarrierBudget, train_data, *, device=None, progress: bool = False,
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
                config = train_config(variant, s, b)

                def epoch_done(epoch, model, history, name=name, cpu=cpu, epochs=config.epochs):
                    used, cpu[0] = time.process_time() - cpu[0], time.process_time()  # this process's CPU time
                    test = "" if test_data is None else \
                        f", test {100 * evaluate_accuracy(model, *test_data, batch_size=1000):.2f} %"
                    log(f"{name}: epoch {epoch}/{epochs} in {history['seconds'][-1]:.1f} s (CPU time "
                        f"{used:.0f} s), train loss {history['task_loss'][-1]:.4f}, train "
                        f"{100 * history['accuracy'][-1]:.2f} %{test}")

                t0 = time.perf_counter()
                with _autocast(b, dev):
                    res = cached_train(lambda: build_network(variant, w, s, b).to(memory_format=fmt),
                                       config, train_data, device=dev, progress=progress,
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


def _cache_path(name: str) -> Path | None:
    """``name`` in the results cache, or None (with one warning) where there is none."""
    try:
        return cache_dir("results") / name
    except OSError as exc:
        warn_once("gcnn-cache-dir", f"no results cache ({exc}); computing without one")
        return None


def _fingerprint(networks, data) -> str:
    """The identity of a run's inputs: every network's parameters and buffers and every
    merge and test image and label, hashed byte for byte (:func:`eqlib.io.content_hash`)."""
    nets = {f"{v}@{w:g}": [{k: content_hash(t) for k, t in n.state_dict().items()} for n in ns]
            for (v, w), ns in networks.items()}
    _, md = data
    return config_hash({"nets": nets, "match": content_hash(md.match),
                        "test_images": content_hash(md.test_images),
                        "test_labels": content_hash(md.test_labels)})


def run_experiment(budget: str | BarrierBudget | None = None, *, device=None, data_root: str | None = None,
                   progress: bool = False, curves: bool = True, networks=None, data=None,
                   cache: bool = True, log: Callable[[str], None] | None = None) -> dict[str, Any]:
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
            the networks' weights and the data, and reuse them (``from_cache`` is then True);
            each merge is cached on its own too, keyed by its networks' weights, the data and
            the curve's points, so an interrupted run resumes merge by merge and a changed
            budget re-measures only the merges of networks it changed.
        log: called with one line per merge measured (its seconds), e.g. ``print``.

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
    path = _cache_path(f"gcnn_barrier-{key}.json") if cache else None
    if path is not None:
        results = _load_cached(path)
        if results is not None:
            results["from_cache"] = True
            return results
    cells = {}
    data_id = {"match": content_hash(merge_data.match), "test_images": content_hash(merge_data.test_images),
               "test_labels": content_hash(merge_data.test_labels)}
    for (variant, w), nets in networks.items():
        nets = [n.to(dev).eval() for n in nets]
        md = MergeData(merge_data.match.to(dev), merge_data.test_images, merge_data.test_labels)
        curve = curves and w == b.widths[0]
        net_ids = [{k: content_hash(t) for k, t in n.state_dict().items()} for n in nets]

        def measured(name, idx, alphas, fn):
            # one merge, cached on its own (so an interrupted run resumes merge by merge), keyed
            # by what it reads: the networks' and the data's bytes, the curve's points, the code's
            # version (a budget change that leaves a variant's networks alone keeps its merges)
            merge_key = config_hash({"version": _RESULTS_VERSION, "merge": name, "alphas": alphas,
                                     "nets": [net_ids[i] for i in idx], "data": data_id})
            merge_path = _cache_path(f"gcnn_merge-{merge_key}.json") if cache else None
            found = _load_cached(merge_path) if merge_path is not None else None
            if found is not None:
                return found
            t_merge = time.perf_counter()
            report = fn(*[nets[i] for i in idx], md, alphas)
            if merge_path is not None:
                _store_cached(merge_path, report)
            if log is not None:
                log(f"{variant}@{w:g} {name} {'-'.join(map(str, idx))}: measured in "
                    f"{time.perf_counter() - t_merge:.0f} s")
            return report

        selfs = [measured("self_flip", (i,), b.alphas if (curve and i == 0) else None, gcnn_barrier)
                 for i in range(len(nets))]
        pairs = [measured("two_network", (i, j), b.alphas if (curve and (i, j) == (0, 1)) else None,
                          merge_barrier)
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


#: what the CLI's ``--parts`` can select: the barrier measurements (always needed) and the figures
PARTS = ("barriers", "figures")


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
          flips (mirror, invariance; invariance-loss weight 1), 15 epochs of SGD
          (25 for the invariance networks; batch 500, lr 0.08, warm-up and linear
          decay), 10,000 test images: a CPU record, resumable
          (benchmarks/record_medium.sh). CPU, OMP_NUM_THREADS=1 on 2 cores shared
          with other jobs: 20-35 s per epoch for a plain network (about 5-8 min
          each), test accuracy 75.6-75.9 % (plain, seeds 0-2); the three invariance
          networks trained side by side in 32 min (45-77 s per epoch, 62-98 s with
          the loss, each with a test evaluation), 77.3-77.6 %; the 24 barrier
          measurements took 36 min on one thread at nice 19 (40-93 s each, the
          longest those with an 11-point curve; the record made with 15-epoch
          invariance networks); the record again with them at 25 measured their
          six merges in 4 min on two threads (the other 18 from the cache). The
          whole record's training was spread over several sessions: not measured
          end to end.
  ci      an old name of laptop, still accepted (older scripts, CI).

outputs in --out (written to a temporary folder beside --out and moved in at
once; if the move fails they are kept there and the error names it):
  gcnn_barrier_<budget>.json        every number, the settings and the command
                                    (several network seeds: the default, --seeds)
  gcnn_barrier_<budget>_seed<N>.json  the same for one network seed (--seed N)
  <the same stem>_barriers.png, <stem>_interpolation_<variant>_w<width>.png
                                    the figures (--parts figures)
A table of the main numbers is printed at the end."""


def _budget(b: BarrierBudget, options: protocol.RunOptions) -> BarrierBudget:
    """The budget a command line runs: ``b`` with ``--seed``/``--seeds``, when given, as its network seeds."""
    return replace(b, seeds=tuple(options.seeds)) if options.seeds_given else b


def _outputs(b: BarrierBudget, options: protocol.RunOptions) -> list[str]:
    """The JSON's name, checked before any work (``--parts`` must include the barriers)."""
    if "barriers" not in options.parts:
        raise ValueError("--parts must include 'barriers' (the figures are drawn from them)")
    return [output_stem(options.budget, network_seeds(_budget(b, options))) + ".json"]


def _run(b: BarrierBudget, out: Path, options: protocol.RunOptions) -> dict[str, Any]:
    """Train (or load), measure and write the outputs: the command line's run."""
    name, b = options.budget, _budget(b, options)
    stem = output_stem(name, network_seeds(b))
    data = load_merge_data(b, options.data, download=options.download)
    networks = train_networks(b, data[0], device=default_device(options.device), progress=options.progress,
                              log=lambda line: print(line, flush=True),
                              test_data=(data[1].test_images, data[1].test_labels))
    results = run_experiment(b, device=options.device, networks=networks, data=data,
                             log=lambda line: print(line, flush=True))
    results["budget_name"] = name
    results["settings"] = protocol.settings_dict(b)
    results["seeds"] = list(network_seeds(b))
    results["overrides"] = list(options.overrides)
    results["command"] = options.command
    results["versions"] = {"python": platform.python_version(), "torch": torch.__version__,
                           "machine": platform.machine()}
    figures = _figures(results, stem) if "figures" in options.parts else {}
    results["figures"] = list(figures)
    protocol.write_outputs(out, stem + ".json", results, figures, dpi=120)
    return results


#: the experiment as :func:`eqlib.experiments.protocol.main` runs it
#:
#: :meta hide-value:
EXPERIMENT = protocol.ExperimentCLI(
    prog="python -m eqlib.experiments.gcnn_barrier",
    description="The GCNN barrier on CIFAR-10 (Bökman & Kahl, \"Investigating how ReLU-networks encode "
                "symmetries\", NeurIPS 2023): is a trained ReLU CNN close to a mirror-GCNN? Each network "
                "is merged with its channel-aligned mirrored copy (their midpoint is a mirror-GCNN) and, "
                "for comparison, with an independently trained network; the barrier is the test accuracy "
                "the midpoint loses. Chapter 10 of the course.",
    budgets=BUDGETS, settings=settings, outputs=_outputs, run=_run, summary=summary_text,
    epilog=CLI_EPILOG, parts=PARTS, progress=False)


def main(argv=None) -> dict[str, Any]:
    """CLI: ``python -m eqlib.experiments.gcnn_barrier --budget laptop|full|medium --device cpu|cuda
    [--seeds 0,1,2 | --seed N] [--set KEY=VALUE ...] [--parts barriers,figures] --out results/``
    (:func:`eqlib.experiments.protocol.main`; ``--set train.epochs=1`` reaches the training).

    Without ``--seed``/``--seeds`` every cell has the budget's networks (seeds
    ``0 .. networks − 1``). Writes ``gcnn_barrier_<budget>.json`` (with one network seed
    ``gcnn_barrier_<budget>_seed<N>.json``: every number, ``settings``, the command that
    made it and the package versions) and, with the part ``figures``, PNG figures, all
    through a temporary folder beside ``--out`` moved in at once. Prints a table of the
    main numbers at the end.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    return protocol.main(EXPERIMENT, argv)


if __name__ == "__main__":
    main()
