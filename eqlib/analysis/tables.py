"""The linear-equivariance table of the CIFAR-10 experiment of Shahverdi et al. (2026)
(and its text/HTML forms), the paper's numbers, and the ablation tables.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from ..data import CIFAR10
from ..device import default_device
from ..latent import fit_linear_action
from ..validation import check_int, check_sequence
from .probes import AXES, PROBES, paired_latents, probe_inputs

__all__ = ["NETWORKS", "PAPER_TABLE", "equivariance_table", "table_lookup", "table_text",
           "table_html", "ablation_text", "ablation_html", "html_table"]

#: The four networks, as name → (first activation, task).
NETWORKS: dict[str, tuple[str, str]] = {
    "tanh-autoencoder": ("tanh", "autoencode"),
    "gelu-autoencoder": ("gelu", "autoencode"),
    "tanh-classifier": ("tanh", "classify"),
    "gelu-classifier": ("gelu", "classify"),
}

#: the paper's numbers (read from the paper; approximate):
#: (task, layers, mirror) → {"tanh": ..., "gelu": ...}; layers 1 = f_1, 2 = f_2∘f_1
PAPER_TABLE: dict[tuple[str, int, str], dict[str, float]] = {
    ("autoencode", 1, "horizontal"): {"tanh": 0.029, "gelu": 0.40},
    ("autoencode", 2, "horizontal"): {"tanh": 0.022, "gelu": 0.11},
    ("autoencode", 1, "vertical"): {"tanh": 0.15, "gelu": 0.49},
    ("classify", 1, "horizontal"): {"tanh": 0.077, "gelu": 0.19},
    ("classify", 2, "horizontal"): {"tanh": 0.054, "gelu": 0.064},
    ("classify", 1, "vertical"): {"tanh": 0.48, "gelu": 0.56},
}


def html_table(header: Sequence[str | tuple[str, str]], rows: Sequence[Sequence[object]],
               align_right_from: int = 1) -> str:
    """An HTML ``<table>`` (escaped text; columns from ``align_right_from`` on are right
    aligned, for numbers). Chapters display it with ``IPython.display.HTML``; it wraps
    to the page width where a text table would be cut.

    A line break in a value starts a new line in its cell (a mean above its range keeps
    columns narrow). A header entry may be a pair ``(group, label)``: neighbouring columns of one group share
    a heading above their own labels (a second header row), so one quantity measured several
    ways gets one column per way instead of several numbers in one cell.

    Raises:
        ValueError: if a row does not have one cell per header column.
        TypeError: if a header entry is neither a string nor a pair of strings.

    Chapters: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns) and *Reproducing the
    CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    cols: list[tuple[str | None, str]] = []
    for i, h in enumerate(check_sequence("header", header)):
        if isinstance(h, tuple):
            if len(h) != 2 or not all(isinstance(x, str) for x in h):
                raise TypeError(f"header[{i}] must be a string or a (group, label) pair of strings, got {h!r}")
            cols.append((h[0], h[1]))
        else:
            cols.append((None, str(h)))
    rows = check_sequence("rows", rows)
    check_int("align_right_from", align_right_from, 0)
    bad = [i for i, r in enumerate(rows) if len(r) != len(cols)]
    if bad:
        raise ValueError(f"rows {bad} do not have {len(cols)} cells (the header's length)")

    def cell(tag: str, i: int, value: object, extra: str = "", align: str | None = None) -> str:
        align = align or ("right" if i >= align_right_from else "left")
        # a number and its "± spread" never split across lines
        text = html.escape(str(value)).replace(" ± ", "\u00a0±\u00a0").replace("\n", "<br>")
        return f'<{tag}{extra} style="text-align:{align};padding:0.1em 0.4em">{text}</{tag}>'

    if any(g is not None for g, _ in cols):
        top, sub, i = [], [], 0
        while i < len(cols):
            group, label = cols[i]
            if group is None:
                top.append(cell("th", i, label, ' rowspan="2"'))
                i += 1
                continue
            j = i
            while j < len(cols) and cols[j][0] == group:
                sub.append(cell("th", j, cols[j][1]))
                j += 1
            top.append(cell("th", i, group, f' colspan="{j - i}"', align="center"))
            i = j
        head = f"<tr>{''.join(top)}</tr><tr>{''.join(sub)}</tr>"
    else:
        head = "<tr>" + "".join(cell("th", i, label) for i, (_, label) in enumerate(cols)) + "</tr>"
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>"
                   for r in rows)
    return (f'<table class="eqlib-table" style="font-size:0.8em">'
            f"<thead>{head}</thead><tbody>{body}</tbody></table>")


def equivariance_table(models: dict[str, nn.Module], s: Any, train: CIFAR10, test: CIFAR10,
                       *, probes: Sequence[str] = PROBES, layers: Sequence[int] = (1, 2), axes: Sequence[str] = AXES,
                       seed: int = 0, device: str | torch.device | None = None) -> list[dict[str, Any]]:
    """Median relative linear-equivariance errors of f_{≤i} for every network, layer, mirror, probe.

    For each probe kind, ``n`` inputs (``s.noise_samples`` noise, ``s.cov_samples``
    covariance samples, all test images) are drawn; A_i is fitted on the first half
    (:func:`eqlib.latent.fit_linear_action`: gelsd on the CPU) and the median of
    ‖f(m y) − A_i f(y)‖/‖f(y)‖ is reported on the second half. (The same numbers as
    :func:`eqlib.latent.linear_equivariance_error`, with each network's features computed
    once for all layers and mirrors.)

    Returns:
        rows ``{"network", "activation", "task", "layers", "mirror", "probe", "n_fit",
        "n_test", "median_error", "fit_median_error", "paper"}`` (``paper`` is the
        reported number when the paper has one for that row, else None).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    dev = default_device(device)
    rows = []
    for probe in probes:
        n = {"images": len(test), "image_cov": s.cov_samples}.get(probe, s.noise_samples)
        y = probe_inputs(probe, n, train, test, s=s, seed=seed)
        for name, model in models.items():
            act_name, task = NETWORKS[name]
            model = model.to(dev).eval()
            feats = paired_latents(model, y, layers, axes)
            for i in layers:
                for ax in axes:
                    X, Y = feats[(i, None)], feats[(i, ax)]
                    if X.device.type != "cpu":
                        X, Y = X.double(), Y.double()
                    fit = fit_linear_action(X, Y, fit_fraction=0.5)
                    paper = PAPER_TABLE.get((task, i, ax), {}).get(act_name) if probe == "noise" else None
                    rows.append({"network": name, "activation": act_name, "task": task, "layers": i, "mirror": ax,
                                 "probe": probe, "n_fit": fit.n_fit, "n_test": fit.n_test,
                                 "median_error": fit.median_error, "fit_median_error": fit.fit_median_error,
                                 "paper": paper})
            model.to("cpu")
    return rows


def table_lookup(rows: Sequence[dict], network: str, layers: int, mirror: str, *, probe: str = "noise") -> float:
    """The ``median_error`` of one row of :func:`equivariance_table`.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    for r in rows:
        if (r["network"], r["layers"], r["mirror"], r["probe"]) == (network, layers, mirror, probe):
            return r["median_error"]
    raise KeyError(f"no row for network={network!r}, layers={layers!r}, mirror={mirror!r}, probe={probe!r}")


def _table_rows(rows: Sequence[dict], probes: Sequence[str]) -> tuple[list[str], list[list]]:
    rows = check_sequence("rows", rows)
    for k, r in enumerate(rows):
        if not isinstance(r, dict):
            raise TypeError(f"rows[{k}] must be a dict (a row of equivariance_table), got {type(r).__name__}")
    networks = list(dict.fromkeys(r["network"] for r in rows))
    layers = sorted({r["layers"] for r in rows})
    header = ["network", "layers", "mirror", *probes, "paper"]
    body = []
    for name in networks:
        act, task = NETWORKS[name]
        for i in layers:
            for ax in AXES:
                vals = [table_lookup(rows, name, i, ax, probe=p) for p in probes]
                paper = PAPER_TABLE.get((task, i, ax), {}).get(act)
                prefix = "∘".join(f"f{k}" for k in range(i, 0, -1))
                body.append([name, prefix, ax, *(f"{v:.3f}" for v in vals),
                             f"{paper:.3f}" if paper is not None else "—"])
    return header, body


def table_text(rows: Sequence[dict], probes: Sequence[str] = PROBES) -> str:
    """The rows of :func:`equivariance_table` as a text table: one line per network, prefix
    and mirror, one column per probe kind, and the paper's number where it has one.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    header, body = _table_rows(rows, probes)
    widths = [18, 8, 11] + [10] * len(probes) + [7]
    fmt = lambda r: " ".join(f"{v:{w}s}" if i < 3 else f"{v:>{w}s}"  # noqa: E731
                             for i, (v, w) in enumerate(zip(r, widths)))
    return "\n".join(fmt(r) for r in [header, *body])


def table_html(rows: Sequence[dict], probes: Sequence[str] = PROBES) -> str:
    """:func:`table_text` as an HTML table, which fits the page.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    header, body = _table_rows(rows, probes)
    return html_table(header, body, align_right_from=3)


_ABLATION_COLUMNS = (("f1 H", "f1_horizontal_noise", ".3f"), ("f1 V", "f1_vertical_noise", ".3f"),
                     ("f1 H img", "f1_horizontal_images", ".3f"),
                     ("f1 V img", "f1_vertical_images", ".3f"), ("matched", "matched_filters", ".2f"),
                     ("end-to-end", "end_to_end", ".3f"), ("task loss", "task_loss", ".3f"))


def _ablation_rows(rows: Sequence[dict]) -> tuple[list[str], list[list[str]], int]:
    several = len({r.get("network") for r in rows}) > 1
    first = ["network", "variant"] if several else ["variant"]
    header = first + [name for name, _, _ in _ABLATION_COLUMNS]
    body = [([r.get("network", "")] if several else []) + [r["variant"]]
            + [format(r[key], spec) for _, key, spec in _ABLATION_COLUMNS] for r in rows]
    return header, body, len(first)


def ablation_text(rows: Sequence[dict]) -> str:
    """The rows of :func:`eqlib.experiments.cifar_mlp.ablation` as a text table (f_1 errors for both mirrors and probe
    kinds, matched filters, end-to-end error, final task loss).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    header, body, n_text = _ablation_rows(rows)
    widths = ([18, 34] if n_text == 2 else [34]) + [7, 7, 9, 9, 8, 10, 9]
    fmt = lambda r: " ".join(f"{v:{w}s}" if i < n_text else f"{v:>{w}s}"  # noqa: E731
                             for i, (v, w) in enumerate(zip(r, widths)))
    return "\n".join(fmt(r) for r in [header, *body])


def ablation_html(rows: Sequence[dict]) -> str:
    """:func:`ablation_text` as an HTML table, which fits the page.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    header, body, n_text = _ablation_rows(rows)
    return html_table(header, body, align_right_from=n_text)
