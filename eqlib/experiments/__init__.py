"""One module per reproduced experiment, each with a command-line interface and a JSON of its numbers.

- :mod:`eqlib.experiments.cifar_mlp`: the CIFAR-10 MLP experiment of Shahverdi, Marchetti, Bökman and
  Kohn (2026) (``python -m eqlib.experiments.cifar_mlp --budget full --out results/``).
- :mod:`eqlib.experiments.gcnn_barrier`: GCNN classifiers and their interpolation barriers.
- :mod:`eqlib.experiments.pairing_hypotheses`: chapter 11's missing picture as three hypothesis
  experiments (``python -m eqlib.experiments.pairing_hypotheses --budget full --seeds 0,1,2``).
- :mod:`eqlib.experiments.protocol`: the protocol both follow (budgets, ``--set``,
  ``--seeds``, the shared command line, atomic JSON, the recorded-run check).

Chapters: Part III, *Experiments* (book/part3).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..analysis.tables import html_table

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
