"""One module per reproduced experiment, each with a command-line interface and a JSON of its numbers.

- :mod:`eqlib.experiments.cifar_mlp`: the CIFAR-10 MLP experiment of [SMBK26]
  (``python -m eqlib.experiments.cifar_mlp --budget full --out results/``).
- :mod:`eqlib.experiments.gcnn_barrier`: GCNN classifiers and their interpolation barriers.

Chapters: Part III, *Experiments* (book/part3).
"""
from __future__ import annotations

import html
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["writable_folder", "html_table"]


def writable_folder(path: str | os.PathLike, argument: str = "--out") -> Path:
    """Create folder ``path`` if needed and check that a file can be written in it.

    The experiment CLIs call this before any work, so that a bad output folder fails
    in a second rather than after the training.

    Raises:
        ValueError: naming ``argument``, the path and why it cannot be written.

    Chapters: Part III, *Experiments* (book/part3).
    """
    folder = Path(path).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise ValueError(f"{argument} {str(path)!r} is not a writable folder "
                         f"({exc.strerror or exc}); choose another") from exc
    return folder


def html_table(header: Sequence[str], rows: Sequence[Sequence[object]],
               align_right_from: int = 1) -> str:
    """An HTML ``<table>`` (escaped text; columns from ``align_right_from`` on are right
    aligned, for numbers). Chapters display it with ``IPython.display.HTML``; it wraps
    to the page width where a text table would be cut.

    Raises:
        ValueError: if a row does not have one cell per header column.

    Chapters: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns) and *Reproducing the
    CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    header = [str(h) for h in header]
    bad = [i for i, r in enumerate(rows) if len(r) != len(header)]
    if bad:
        raise ValueError(f"rows {bad} do not have {len(header)} cells (the header's length)")

    def cell(tag: str, i: int, value: object) -> str:
        align = "right" if i >= align_right_from else "left"
        # a number and its "± spread" never split across lines
        text = html.escape(str(value)).replace(" ± ", "\u00a0±\u00a0")
        return f'<{tag} style="text-align:{align};padding:0.1em 0.5em">{text}</{tag}>'

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>"
                   for r in rows)
    return (f'<table class="eqlib-table" style="font-size:0.85em">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
