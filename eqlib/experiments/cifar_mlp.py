"""The CIFAR-10 MLP experiment of Shahverdi, Marchetti, Bökman & Kohn (ICML 2026), at two budgets.

Four depth-4 MLPs: first nonlinearity Tanh or GELU (later ones GELU), each trained as a
mirror-equivariant autoencoder and as a mirror-invariant classifier, with a soft
equivariance / invariance penalty ramped in during the second half of training. Then:

- the first-layer filters, each classified as mirror-symmetric, mirror-antisymmetric,
  the mirror of another filter, or the negated mirror of another filter
  (:func:`eqlib.analysis.filter_pairing`);
- the table: median relative error of a least-squares linear map A_i with
  A_i f_{≤i}(y) ≈ f_{≤i}(m y), fitted on one half of the probes and scored on the other,
  for i = 1, 2, the horizontal mirror (trained) and the vertical one (control), probed
  with isotropic noise (the paper's protocol), test images, and Gaussian noise with the
  images' covariance (:func:`eqlib.analysis.equivariance_table`);
- an ablation of what makes the first-layer action emerge
  (:func:`~eqlib.experiments.cifar_parts.ablation`);
- checkpoints during training (:func:`~eqlib.experiments.cifar_parts.emergence`);
- a single-layer attention autoencoder on 4×4 patches and its head permutation
  (:func:`~eqlib.experiments.cifar_parts.attention_experiment`).

The analyses live in :mod:`eqlib.analysis`; the settings, networks and training in
:mod:`eqlib.experiments.cifar_setup`, the ablation, emergence and attention parts in
:mod:`eqlib.experiments.cifar_parts`, the filter search in
:mod:`eqlib.experiments.filter_search` (every name is re-exported here); this module runs
the parts, writes the outputs and follows :mod:`eqlib.experiments.protocol`. Command line (writes PNG figures and
``cifar_mlp_<budget>_seed<N>.json``; with ``--seeds 0,1,2`` one per seed and
``cifar_mlp_<budget>_seeds.json``; ``--help`` gives the measured run times)::

    python -m eqlib.experiments.cifar_mlp --budget full --device cuda --out results/

Budgets (:data:`~eqlib.experiments.cifar_setup.BUDGET_SETTINGS`): ``laptop`` (the default)
trains small networks on a 4,000-image subset
for a few epochs (minutes on 2 CPU cores); ``full`` trains widths 512/256/256 on all
50,000 images for 15 epochs and probes with 100,000 noise samples (the whole chapter
sized for about 30 minutes on 2 CPU cores, not measured; minutes on a GPU).
``--set KEY=VALUE`` changes any :class:`~eqlib.experiments.cifar_setup.Settings` key, e.g.
``--set train.epochs=60`` (the training is nested) or a
larger ablation.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..analysis import (AXES, CATEGORIES, NETWORKS, PAPER_TABLE, PROBES, FilterPairing, ablation_html,
                        ablation_text, end_to_end_error, equivariance_table, filter_pairing, input_spectrum,
                        probe_inputs, table_html, table_lookup, table_text)
from ..device import default_device
from ..images import prepare_images
from ..train import TrainResult
from . import protocol, writable_folder
from .cifar_parts import (ABLATION_PROBES, ABLATION_VARIANTS, PatchAttentionAutoencoder, ablation,
                          attention_experiment, emergence)
from .cifar_setup import (BUDGET_SETTINGS, BUDGETS, Settings, _data_spec, build_mlp, load_data, load_results,
                          parse_setting, settings, train_config, train_networks)
from .filter_search import (SEARCH_BUDGETS, SEARCH_KEYS, SEARCH_VARIANTS, SearchSettings, filter_search,
                            load_search, run_search, search_figures, search_html, search_outputs, search_summary,
                            search_text)

__all__ = [
    "Settings", "BUDGETS", "BUDGET_SETTINGS", "settings", "parse_setting", "PARTS", "build_mlp",
    "train_config", "load_data", "train_networks", "ablation", "ABLATION_VARIANTS", "load_results",
    "emergence", "PatchAttentionAutoencoder", "attention_experiment", "run", "run_seeds",
    "seed_spread", "SearchSettings", "SEARCH_VARIANTS", "SEARCH_KEYS", "filter_search",
    "search_summary", "search_figures", "search_html", "load_search", "main", "search_settings", "EXPERIMENT",
]
# analyses used here live in eqlib.analysis (chapters import them from there); the names
# stay importable from this module for old scripts
_ANALYSIS = (AXES, CATEGORIES, NETWORKS, PAPER_TABLE, PROBES, FilterPairing, ablation_html,
             ablation_text, input_spectrum, probe_inputs, table_html, table_text)
# the settings, networks, parts and the filter search live in cifar_setup, cifar_parts and
# filter_search; their names stay importable from here (the chapter reads them as E.<name>)
_MOVED = (ABLATION_PROBES, _data_spec)

#: the parts of :func:`run` (the command line's ``--parts``)
PARTS = ("table", "filters", "ablation", "emergence", "attention", "search")
#: the parts run when ``--parts`` is not given (the filter search is asked for by name)
DEFAULT_PARTS = PARTS[:-1]


# --------------------------------------------------------------------------- everything

def _accuracy(result: TrainResult) -> float | None:
    acc = [a for a in result.history.get("test_accuracy", []) if a == a]
    return acc[-1] if acc else None


def output_names(budget: str, seed: int, parts: Sequence[str] = PARTS,
                 ablation_networks: Sequence[str] = ("tanh-autoencoder",)) -> dict[str, str]:
    """The files a single-seed :func:`run` writes: ``{"json": name, <figure key>: name}``,
    each carrying the budget and the seed (``cifar_mlp_<budget>_seed<seed>.json``,
    ``cifar_mlp_<budget>_seed<seed>_<figure>.png``), so runs with different seeds never
    overwrite each other.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    keys = []
    if "filters" in parts:
        keys += [f"filters_{name}" for name in NETWORKS]
    if "table" in parts:
        keys.append("table")
    if "ablation" in parts:
        keys += (["ablation"] if len(ablation_networks) == 1
                 else [f"ablation_{net}" for net in ablation_networks])
    keys += [k for k in ("emergence", "attention") if k in parts]
    names = {"json": protocol.output_name("cifar_mlp", budget, seed)}
    names.update({k: protocol.output_name("cifar_mlp", budget, seed, f"_{k}.png") for k in keys})
    return names


def _measure(s: Settings, root: str | None, seed: int, device: str | None, progress: bool,
             parts: Sequence[str], on_ablation_row, download: bool | None, t_start: float
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The experiment itself: ``(summary, figures)`` (figures keyed as in ``output_names``)."""
    from ..plots.filters import plot_attention_heads, plot_filters
    from ..plots.training import plot_ablation, plot_emergence, plot_error_table

    tr, te = load_data(s, root, seed=seed, download=download)
    timings = {"data": time.perf_counter() - t_start}

    @contextmanager
    def timed(part: str):
        t = time.perf_counter()
        yield
        timings[part] = time.perf_counter() - t

    with timed("train"):
        results = train_networks(s, tr, te, seed=seed, device=device, progress=progress)
    models = {k: r.model for k, r in results.items()}
    dev = default_device(device)
    summary: dict[str, Any] = {"settings": s.to_dict(), "seed": seed, "device": str(dev),
                               "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                               "torch": torch.__version__, "networks": {}}
    figures = {}
    for name, r in results.items():
        act, task = NETWORKS[name]
        pairing = filter_pairing(r.model.layers[0].weight)
        summary["networks"][name] = {
            "test_accuracy": _accuracy(r), "final_task_loss": r.history["task_loss"][-1],
            "test_loss": (r.history["test_loss"][-1] if r.history["test_loss"] else None),
            "end_to_end_horizontal": end_to_end_error(r.model, te.images[:1000], task, "horizontal"),
            "end_to_end_vertical": end_to_end_error(r.model, te.images[:1000], task, "vertical"),
            "filters_first64": pairing.counts(64), "filters_all": pairing.counts(),
            "matched_fraction": pairing.matched_fraction,
            "epoch_seconds": float(np.mean(r.history["seconds"])) if r.history["seconds"] else None,
        }
        if "filters" in parts:
            figures[f"filters_{name}"] = plot_filters(
                r.model.layers[0].weight, pairing,
                title=f"{name}: first 64 first-layer filters by mirror category (seed {seed})")
    if "table" in parts:
        with timed("table"):
            summary["table"] = equivariance_table(models, s, tr, te, seed=seed, device=device)
            figures["table"] = plot_error_table(summary["table"])
    if "ablation" in parts:
        with timed("ablation"):
            summary["ablation"] = [row for net in s.ablation_networks
                                   for row in ablation(s, tr, te, network=net, seed=seed, device=device,
                                                       progress=progress, on_row=on_ablation_row)]
            for net in s.ablation_networks:
                key = "ablation" if len(s.ablation_networks) == 1 else f"ablation_{net}"
                figures[key] = plot_ablation([r for r in summary["ablation"] if r["network"] == net])
    if "emergence" in parts:
        with timed("emergence"):
            name = "tanh-autoencoder"
            build = lambda: build_mlp("tanh", "autoencode", s.hidden, seed=seed,  # noqa: E731
                                      first_init_scale=s.first_init_scale)
            em = emergence(results[name], build, te)
            summary["emergence"] = [{k: v for k, v in e.items() if k != "weight"} for e in em]
            figures["emergence"] = plot_emergence(em)
    if "attention" in parts:
        with timed("attention"):
            att = attention_experiment(s, tr, te, seed=seed, device=device, progress=progress)
            summary["attention"] = {k: att[k] for k in ("head_perm", "head_perm_maps", "swapped_heads",
                                                        "maps_residual", "maps_residual_maps",
                                                        "maps_residual_best", "output_residual",
                                                        "positional_residual", "end_to_end", "task_loss")}
            figures["attention"] = plot_attention_heads(att["model"], prepare_images(te.images[:1]),
                                                        att["head_perm"])
    summary["seconds"] = time.perf_counter() - t_start
    summary["part_seconds"] = timings
    return summary, figures


def run(budget: str | None = None, *, device: str | None = None, out: str | Path | None = None, seed: int = 0,
        root: str | None = None, progress: bool = True, parts: Sequence[str] = PARTS,
        overrides: Mapping[str, Any] | None = None,
        on_ablation_row: Callable[[dict[str, Any]], None] | None = None,
        download: bool | None = None) -> dict[str, Any]:
    """Run the whole experiment; return every number (and write figures + JSON to ``out``).

    ``overrides`` change :class:`~eqlib.experiments.cifar_setup.Settings` fields of the budget
    (recorded in the JSON).
    Only ``parts`` are run; the four networks are always trained (or loaded from the cache).
    ``out`` is checked before any work: a writable folder, in which no output name
    (``output_names``: they carry the budget and the seed) is taken by a folder
    (ValueError otherwise). The outputs are written to a temporary folder beside ``out``
    and moved in at once (:func:`eqlib.experiments.protocol.write_outputs`); when that
    fails, :class:`~eqlib.experiments.protocol.OutputsKept` names where they are kept
    (its ``record`` is the returned dict). ``download`` is passed to
    :func:`~eqlib.experiments.cifar_setup.load_data`.

    Returns:
        JSON-serialisable dict: ``settings``, ``networks`` (test accuracy / loss,
        end-to-end errors, filter counts), ``table``, ``ablation``, ``emergence``,
        ``attention``, ``seconds`` and ``part_seconds`` (wall time of each part; the
        training time is near zero when the networks came from the cache).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    import matplotlib.pyplot as plt

    t_start = time.perf_counter()
    unknown_parts = set(parts) - set(PARTS)
    if unknown_parts:
        raise ValueError(f"unknown parts {sorted(unknown_parts)}; choose from {list(PARTS)}")
    s = settings(budget, **dict(overrides or {}))
    names = output_names(s.name, seed, parts, s.ablation_networks)
    if out is not None:
        out = writable_folder(out)
        protocol.check_targets(out, names.values())
    summary, figures = _measure(s, root, seed, device, progress, parts, on_ablation_row, download, t_start)
    if out is None:
        for fig in figures.values():
            plt.close(fig)
        return summary
    protocol.write_outputs(out, names["json"], summary,
                           {names[k]: fig for k, fig in figures.items() if k in names})
    return summary


def summary_text(record: Mapping[str, Any]) -> str:
    """The few lines a run prints at the end, for people: one row per network (test
    accuracy or loss, end-to-end mirror errors, first-layer filters in mirror pairs, the
    layer-1 linear-equivariance error), then the time. Takes a :func:`run` summary or a
    :func:`run_seeds` record (then mean ± standard deviation over the seeds).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    runs = record.get("runs") or [record]
    seeds = [r.get("seed") for r in runs]

    def cell(values: list, digits: int = 3, scale: float = 1.0) -> str:
        v = [x * scale for x in values if isinstance(x, (int, float)) and not isinstance(x, bool) and x == x]
        if len(v) < len(values) or not v:
            return "–"  # missing, or not a number (NaN) on some seed
        if len(v) == 1:
            return f"{v[0]:.{digits}f}"
        return f"{np.mean(v):.{digits}f} ± {np.std(v, ddof=1):.{digits}f}"

    def f1(r, net, mirror):
        rows = [t for t in r.get("table", ()) if t["network"] == net and t["layers"] == 1
                and t["mirror"] == mirror and t["probe"] == "noise"]
        return rows[0]["median_error"] if rows else None

    header = ["network", "test accuracy (%)", "test loss", "end-to-end error: horiz. / vert.",
              "filters paired (of 64)", "layer-1 error: horiz. / vert."]
    rows = []
    for net in runs[0]["networks"]:
        nets = [r["networks"][net] for r in runs]
        paired = [sum(v for k, v in n["filters_first64"].items() if k != "unmatched") for n in nets]
        e2e = f"{cell([n['end_to_end_horizontal'] for n in nets])} / {cell([n['end_to_end_vertical'] for n in nets])}"
        layer1 = ([f1(r, net, "horizontal") for r in runs], [f1(r, net, "vertical") for r in runs])
        rows.append([net, cell([n["test_accuracy"] for n in nets], 1, 100.0), cell([n["test_loss"] for n in nets]),
                     e2e, cell(paired, 1 if len(runs) > 1 else 0),
                     f"{cell(layer1[0])} / {cell(layer1[1])}" if "table" in runs[0] else None])
    s = record["settings"]
    seeds_text = f"seed {seeds[0]}" if len(runs) == 1 else f"{len(runs)} seeds {seeds} (mean ± std)"
    secs = [r.get("seconds") for r in runs]
    train = [r.get("part_seconds", {}).get("train") for r in runs]
    lines = [f"CIFAR-10 MLP experiment, budget {s['name']}, {seeds_text}, on {runs[0].get('device', '?')}:",
             protocol.text_table(header, rows),
             textwrap.fill(
                 "end-to-end error: mean of |f(m x) - m f(x)| / |f(x)| over test images x, m the "
                 "horizontal mirror (trained) or the vertical one (control); for classifiers "
                 "|f(m x) - f(x)| / |f(x)| (invariance). layer-1 error: median relative error of the "
                 "best linear map A with A f_1(y) ≈ f_1(m y), f_1 the first layer, y noise probes. "
                 "filters paired: of the first 64 first-layer filters, those mirror-symmetric, "
                 "antisymmetric or in a (negated) mirror pair. –: missing or not a number.", 100)]
    if all(isinstance(x, (int, float)) for x in secs):
        lines.append(f"time: {sum(secs):.0f} s in all (training {sum(t or 0 for t in train):.0f} s; "
                     "near 0 when the networks came from the cache)")
    return "\n".join(lines)


def seed_spread(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean, standard deviation, min and max over seeds of the numbers the chapter quotes:
    every ``networks`` number (filter counts included) and every ``table`` row's
    ``median_error`` (keyed ``network|f<layers>|mirror|probe``).

    Raises:
        ValueError: for fewer than one summary, or summaries from different settings.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not summaries:
        raise ValueError("seed_spread needs at least one run summary")
    if any(s["settings"] != summaries[0]["settings"] for s in summaries):
        raise ValueError("the runs have different settings; spread over seeds only")

    def stats(values: list[float]) -> dict[str, float]:
        v = np.asarray(values, dtype=float)
        return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
                "min": float(v.min()), "max": float(v.max()), "n": len(v)}

    out: dict[str, Any] = {"networks": {}, "table": {}}
    for name in summaries[0]["networks"]:
        nets = [s["networks"][name] for s in summaries]
        entry = {}
        for key, value in nets[0].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                entry[key] = stats([n[key] for n in nets])
            elif isinstance(value, dict):
                entry[key] = {c: stats([n[key][c] for n in nets]) for c in value}
        out["networks"][name] = entry
    if all("table" in s for s in summaries):
        for r in summaries[0]["table"]:
            key = f"{r['network']}|f{r['layers']}|{r['mirror']}|{r['probe']}"
            out["table"][key] = stats([table_lookup(s["table"], r["network"], r["layers"],
                                                    r["mirror"], probe=r["probe"]) for s in summaries])
    return out


def run_seeds(seeds: Sequence[int], budget: str | None = None, out: str | Path | None = None,
              **kwargs: Any) -> dict[str, Any]:
    """:func:`run` once per seed (each seed its own data subset and initialisation), then
    :func:`seed_spread`. With ``out``, each seed's JSON and figures are written as that
    seed finishes (their names carry the seed, ``output_names``) and the record to
    ``out/cifar_mlp_<budget>_seeds.json`` at the end, each through a temporary folder
    beside ``out`` (:func:`eqlib.experiments.protocol.write_outputs`). ``kwargs`` go to
    :func:`run`.

    Returns:
        ``{"settings", "seeds", "runs": [summary per seed], "spread"}``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"seeds must be distinct integers ≥ 0, got {seeds}")
    if out is not None:
        out = writable_folder(out)
        s = settings(budget, **dict(kwargs.get("overrides") or {}))
        protocol.check_targets(out, [seeds_name(s.name)] + [
            n for seed in seeds for n in output_names(s.name, seed, kwargs.get("parts", PARTS),
                                                      s.ablation_networks).values()])
    runs = [run(budget, out=out, seed=seed, **kwargs) for seed in seeds]
    record = {"settings": runs[0]["settings"], "seeds": seeds, "runs": runs,
              "spread": seed_spread(runs), "networks": runs[0]["networks"]}
    if out is not None:
        protocol.write_outputs(out, seeds_name(runs[0]["settings"]["name"]), record)
    return record


def seeds_name(budget: str) -> str:
    """The file name of a several-seed record: ``cifar_mlp_<budget>_seeds.json``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    return protocol.output_name("cifar_mlp", budget, suffix="_seeds.json")


#: the measured time of a laptop run with nothing cached (the help states it)
LAPTOP_COLD = "not measured"

#: the paper whose experiment this is (the help names it in full)
PAPER = ("Shahverdi, Marchetti, Bökman & Kohn, \"Identifiable Equivariant Networks are Layerwise "
         "Equivariant\" (ICML 2026)")

#: the command line's help after the flags: budgets with their measured run times, outputs
CLI_EPILOG = """budgets (measured run times; "not measured" where no run backs a figure):
  laptop  4 MLPs (widths {laptop.hidden_text}) on {laptop.n_train:,} images for {laptop.train.epochs} epochs.
          2 CPU cores: {laptop_cold}; with the trained networks
          already cached, 27-38 s per seed (the recorded three-seed run,
          eqlib/recorded/cifar_mlp_laptop_seeds.json). GPU: not measured.
  full    widths {full.hidden_text} on {full.n_train:,} images for {full.train.epochs} epochs, {full.noise_samples:,}
          noise probes. One H200 GPU: 79 s, training included (the recorded
          run, eqlib/recorded/cifar_mlp_full.json). 2 CPU cores: not
          measured. The recorded runs ship inside eqlib (eqlib/recorded/).
  ci      an old name of laptop, still accepted (older scripts, CI).

outputs in --out (names carry the budget and the seed, so runs never overwrite
each other; all are written to a temporary folder beside --out and moved in at
once, and kept there, with the error naming it, if the move fails):
  cifar_mlp_<budget>_seed<N>.json           every number of one seed's run
  cifar_mlp_<budget>_seed<N>_<figure>.png   its figures
  cifar_mlp_<budget>_seeds.json             with --seeds: the spread over seeds
  cifar_mlp_search_<budget>.json            with --parts search (the filter search at the
                                            budget: full is the recorded one; --set
                                            train.KEY=VALUE reaches it too)
A table of the main numbers is printed at the end."""


class _Described:
    """A budget's settings for the help text (``hidden_text``: ``512/256/256``)."""

    def __init__(self, s: Settings):
        self._s = s
        self.hidden_text = "/".join(map(str, s.hidden))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)


def _outputs(s: Settings, options: protocol.RunOptions) -> list[str]:
    """Every name a command line writes, checked before any work."""
    names = search_outputs("cifar_mlp_search", options) if "search" in options.parts else []
    if any(part != "search" for part in options.parts):
        for seed in options.seeds:
            names += output_names(options.budget, seed, options.parts, s.ablation_networks).values()
        if len(options.seeds) > 1:
            names.append(seeds_name(options.budget))
    return names


def search_settings(budget: str, assignments: Sequence[str] = ()) -> SearchSettings:
    """The filter search's settings at ``budget`` with those ``--set`` assignments that are
    search settings too (``train.epochs=2`` reaches both the networks and the search; the
    others change the networks only).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    base = SEARCH_BUDGETS[budget]
    keys = protocol.setting_keys(base)
    return protocol.replace_settings(base, protocol.parse_settings(
        [a for a in assignments if a.partition("=")[0].strip() in keys], base))


def _run(s: Settings, out: Path, options: protocol.RunOptions) -> dict[str, Any]:
    """The command line's run: the filter search (``--parts search``), then the other parts."""
    record: dict[str, Any] = {}
    if "search" in options.parts:
        record = run_search(search_settings(options.budget, options.overrides), out, options, stem="cifar_mlp_search")
        print(search_text(record))
    parts = tuple(x for x in options.parts if x != "search")
    if not parts:
        return record

    def print_row(row: dict[str, Any]) -> None:  # ablation rows as they finish
        print("ablation:", json.dumps({k: v for k, v in row.items() if k != "changes"}, default=float), flush=True)

    common = dict(device=options.device, root=options.data, progress=options.progress, parts=parts,
                  overrides=protocol.parse_settings(options.overrides, s), on_ablation_row=print_row,
                  download=options.download)
    if len(options.seeds) > 1:
        return run_seeds(options.seeds, options.budget, out, **common)
    return run(options.budget, out=out, seed=options.seeds[0], **common)


def _summary(record: Mapping[str, Any]) -> str:
    """``summary_text`` of a run, or of a search alone."""
    return summary_text(record) if "networks" in record else search_text(record)


#: the experiment as :func:`eqlib.experiments.protocol.main` runs it
#:
#: :meta hide-value:
EXPERIMENT = protocol.ExperimentCLI(
    prog="python -m eqlib.experiments.cifar_mlp",
    description=f"The CIFAR-10 MLP experiment of {PAPER}: first-layer filters, the "
                "linear-equivariance table, an ablation, the emergence over training and an attention "
                "layer's heads; --parts search: the search for a training protocol under which the "
                "filters pair up (at the same --budget; the --set keys it shares, train.*, reach it). "
                "Chapter 11 of the course.",
    budgets=BUDGETS, settings=settings, outputs=_outputs, run=_run, summary=_summary,
    epilog=CLI_EPILOG.format(laptop_cold=LAPTOP_COLD, laptop=_Described(BUDGETS["laptop"]),
                             full=_Described(BUDGETS["full"])),
    parts=PARTS, default_parts=DEFAULT_PARTS)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line (:func:`eqlib.experiments.protocol.main`, the flags every experiment
    shares): ``python -m eqlib.experiments.cifar_mlp --budget laptop --out results/``
    writes ``cifar_mlp_<budget>_seed<N>.json`` and its figures (``output_names``);
    ``--seeds 0,1,2`` runs each seed and also writes ``cifar_mlp_<budget>_seeds.json``;
    ``--parts search`` runs the filter search at the budget
    (``cifar_mlp_search_<budget>.json``). Prints a table of the main numbers at the end
    (``summary_text``). When the outputs cannot be moved into ``--out``, prints where they
    are kept and exits with status 1.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    return protocol.main(EXPERIMENT, argv)


if __name__ == "__main__":
    main()
