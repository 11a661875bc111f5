"""Recovering latent group actions: the main theorem as an algorithm.

- :func:`latent_actions` recovers, for every hidden layer i and group element g, the
  action k_i(g) that makes every layer equivariant (methods ``"weights"``,
  ``"activations"``, ``"lstsq"``) and reports its diagnostics (:class:`LatentActions`).
- :func:`plant_equivariant` builds networks equivariant by construction, with the
  structure hidden by a random parameter symmetry.
- :func:`fit_linear_action`, :func:`linear_equivariance_error` measure how linearly
  equivariant features are; :func:`match_units` pairs units up to sign and scale.
- :mod:`eqlib.latent.attention` recovers head and token permutations of attention
  networks (:func:`recover_attention_action`).

Chapters: *The main theorem* (book/part2/06_main_theorem), *MLPs: tanh, ReLU, GELU*
(book/part2/07_mlps), *Attention* (book/part2/08_attention).
"""
from .lstsq import (SAMPLINGS, LinearFit, fit_linear_action, linear_equivariance_error, paired_features,
                    relative_errors, row_space_factor)
from .units import assign, match_units
from .result import LatentActions, MonomialAction, homomorphism_error, layer_errors
from .weights import lift_action, recover_by_weights
from .activations import recover_by_activations
from .plant import equivariant_weight, hidden_representation, plant_equivariant, sign_characters
from .core import METHODS, latent_actions
from .attention import (AttentionLatentAction, PlantedAttention, TokenAction, head_products, match_heads,
                        patch_mirror_action, plant_attention_equivariant, recover_attention_action,
                        recover_attention_network, recover_token_permutation, transport_parameters)

__all__ = [
    "LinearFit", "SAMPLINGS", "fit_linear_action", "linear_equivariance_error", "paired_features", "relative_errors",
    "row_space_factor",
    "assign", "match_units",
    "LatentActions", "MonomialAction", "homomorphism_error", "layer_errors", "lift_action", "recover_by_weights",
    "recover_by_activations", "equivariant_weight", "hidden_representation", "plant_equivariant",
    "sign_characters", "METHODS", "latent_actions",
    "TokenAction", "patch_mirror_action", "head_products", "transport_parameters",
    "match_heads", "recover_token_permutation", "AttentionLatentAction", "recover_attention_action",
    "recover_attention_network", "PlantedAttention", "plant_attention_equivariant",
]
