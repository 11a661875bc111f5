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
from .result import LatentActions, MonomialAction, homomorphism_error, layer_errors
from .weights import lift_action, recover_by_weights
from .activations import recover_by_activations
from .plant import equivariant_weight, hidden_representation, plant_equivariant, sign_characters
from .core import METHODS, latent_actions

__all__ += [
    "LatentActions", "MonomialAction", "homomorphism_error", "layer_errors", "lift_action", "recover_by_weights",
    "recover_by_activations", "equivariant_weight", "hidden_representation", "plant_equivariant",
    "sign_characters", "METHODS", "latent_actions",
]
