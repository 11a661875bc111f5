"""Analyses that chapters call on trained networks: how first-layer filters pair under a
mirror, and which are negated copies of each other (:mod:`~eqlib.analysis.filters`), probe
inputs and spectra (:mod:`~eqlib.analysis.probes`), and the linear-equivariance tables
(:mod:`~eqlib.analysis.tables`).

Layer: above ``latent``/``train``, below ``experiments``; ``plots`` import it, never the
experiments.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from .filters import (ANTISYMMETRIC, CATEGORIES, NEGATED_PAIR, PAIR, PAIRED, SYMMETRIC, UNMATCHED,
                      FilterPairing, NegatedCopies, filter_pairing, negated_copies)
from .probes import (AXES, PROBES, end_to_end_error, input_spectrum, mirror_symmetric_spectrum,
                     paired_latents, probe_inputs, whitening)
from .structure import PairedLayer, filter_localisation, involutive_matching, paired_projection
from .tables import (NETWORKS, PAPER_TABLE, ablation_html, ablation_text, equivariance_table,
                     html_table, table_html, table_lookup, table_text)

__all__ = ["CATEGORIES", "SYMMETRIC", "ANTISYMMETRIC", "PAIR", "NEGATED_PAIR", "UNMATCHED", "PAIRED",
           "FilterPairing", "filter_pairing", "NegatedCopies", "negated_copies", "PROBES", "AXES", "probe_inputs",
           "paired_latents",
           "input_spectrum", "mirror_symmetric_spectrum", "whitening", "end_to_end_error", "NETWORKS", "PAPER_TABLE", "equivariance_table",
           "table_lookup", "table_text", "table_html", "ablation_text", "ablation_html", "html_table",
           "PairedLayer", "paired_projection", "involutive_matching", "filter_localisation"]
