"""The GCNN barrier's reports: the tables (text and HTML), the figures and the output names.
:mod:`eqlib.experiments.gcnn_barrier` re-exports every name.

Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from . import html_table, protocol

__all__ = ['summary_table', 'summary_table_html', 'output_stem', 'summary_text']


_KINDS = ("barrier", "barrier_reset", "barrier_repair")


def summary_table(results: dict[str, Any], spread: str = "std") -> tuple[list[str], list[list[str]]]:
    """The main table of :func:`~eqlib.experiments.gcnn_barrier.run_experiment`'s results:
    one row per "variant@width" with
    test accuracy, GCNN and two-network barriers (interpolated statistics / BN reset /
    REPAIR, in ppt), the same three loss barriers (midpoint's cross-entropy minus the
    endpoints' mean, nats; when the results have them), the normalised filter distance from
    the GCNN constraint (:func:`~eqlib.experiments.barrier_filters.gcnn_filter_distance`) and
    its scale-invariant form at the matched permutations and minimised
    (:func:`~eqlib.experiments.barrier_filters.min_scaled_filter_distance`; when present),
    the matched permutations' distance from an involution and
    the invariance error of the network and of its self-flip midpoint.

    Args:
        spread: ``"std"`` writes mean ± sample standard deviation, ``"range"`` writes
            mean [min, max] over the networks (pairs).

    Returns:
        ``(header, rows)`` of strings, one value per cell; a header ``"group: label"`` is a
        column of a group (``"GCNN barrier (ppt): BN reset"``), which
        :func:`summary_table_html` puts under one heading.

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
    ways = ("interp.", "BN reset", "REPAIR")
    groups = ["GCNN barrier (ppt)", "two-network barrier (ppt)"]
    if has_loss:
        groups += ["GCNN loss barrier (nats)", "two-network loss barrier (nats)"]
    header = ["variant @ width", "test acc. (%)"] + [f"{g}: {w}" for g in groups for w in ways]
    header += ["filter distance d"] + (["scale-inv. d̂: matched", "scale-inv. d̂: min"] if has_scaled else []) + [
        "π distance from involution", "invariance error θ → midpoint"]
    rows = []
    for key, cell in results["cells"].items():
        s = cell["summary"]
        sf, tn = s["self_flip"], s.get("two_network")
        row = [key, fmt(sf["acc_a"])] + [fmt(sf[k]) for k in _KINDS] + (
            [fmt(tn[k]) for k in _KINDS] if tn else ["–"] * 3)
        if has_loss:
            row += [lfmt(sf["loss_" + k]) for k in _KINDS] if "loss_barrier" in sf else ["–"] * 3
            row += [lfmt(tn["loss_" + k]) for k in _KINDS] if tn and "loss_barrier" in tn else ["–"] * 3
        row += [fmt2(sf.get("filter_distance_mean"))]
        if has_scaled:
            row += [fmt2(sf.get("filter_distance_scaled_mean")), fmt2(sf.get("filter_distance_min_mean"))]
        row += [f"{sf['involution_distance_mean']['mean']:.3f}",
                f"{sf['invariance_a']['mean']:.3f} → {sf['invariance_mid_reset']['mean']:.1e}"]
        rows.append(row)
    return header, rows


def summary_table_html(results: dict[str, Any], spread: str = "std") -> str:
    """:func:`summary_table` as HTML tables (display them with ``IPython.display.HTML``), one
    row per cell and one column per measurement, narrow enough for a page: the test accuracy
    and accuracy barriers, the loss barriers (when the results have them), then the filter
    distances and invariance errors. A barrier's three columns (interpolated statistics, BN
    reset, REPAIR) sit under one heading; a range sits below its mean.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    header, rows = summary_table(results, spread)
    # "GCNN barrier (ppt): interp." → the group "GCNN barrier (ppt)" over the column "interp."
    header = [tuple(h.split(": ", 1)) if ": " in h else h for h in header]
    rows = [[v.replace(" [", "\n[") for v in r] for r in rows]  # a mean above its range

    def columns(pick):
        keep = [0] + [i for i, h in enumerate(header) if i and pick(h)]
        return html_table([header[i] for i in keep], [[r[i] for i in keep] for r in rows])
    # three tables narrow enough for the page: accuracy barriers, loss barriers, the rest
    acc = lambda h: isinstance(h, tuple) and "loss" not in h[0] or h == "test acc. (%)"  # noqa: E731
    loss = lambda h: isinstance(h, tuple) and "loss" in h[0]  # noqa: E731
    tables = [columns(acc)]
    if any(loss(h) for h in header):
        tables.append(columns(loss))
    tables.append(columns(lambda h: not acc(h) and not loss(h)))
    return "\n".join(tables)


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
