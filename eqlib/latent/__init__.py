"""Recovering latent group actions: the main theorem as an algorithm.

- :func:`latent_actions` recovers, for every hidden layer i and group element g, the
  action k_i(g) that makes every layer equivariant (methods ``"weights"``,
  ``"activations"``, ``"lstsq"``) and reports its diagnostics (:class:`LatentActions`).
- :func:`plant_equivariant` builds networks equivariant by construction, with the
  structure hidden by a random parameter symmetry.
- :func:`fit_linear_action`, :func:`linear_equivariance_error` measure how linearly
  equivariant features are; :func:`match_units` pairs units up to sign and scale.

Chapters: *The main theorem* (book/part2/05_main_theorem), *MLPs: tanh, ReLU, GELU*
(book/part2/06_mlps).
"""
from .lstsq import LinearFit, fit_linear_action, linear_equivariance_error, paired_features, relative_errors
from .units import assign, compose_monomial, match_units, monomial_matrix

__all__ = [
    "LinearFit", "fit_linear_action", "linear_equivariance_error", "paired_features", "relative_errors",
    "assign", "compose_monomial", "match_units", "monomial_matrix",
]
