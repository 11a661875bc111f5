"""Latent actions of multi-head attention: which head and which token goes where.

A group G acts on token sequences X ∈ R^{n×d} by permuting tokens and, optionally,
acting linearly on each token's features: ``g·X = Π_g X R_gᵀ`` (mirroring an image cut
into patches permutes the patches *and* mirrors the pixels inside each patch). For one
multi-head attention layer with positional encodings P the adjunction moves g onto the
parameters (our derivation, checked in the tests):

.. math:: g\\cdot\\theta = (R_g^{-\\top} W_Q^h,\\; R_g^{-\\top} W_K^h,\\; R_g^{-\\top} W_V^h,\\;
          W_O^h U_g^\\top,\\; \\Pi_g P R_g^\\top),

and f(·; g·θ) = g·f(g^{-1}·(·); θ), where U_g acts on the output features. So f is
G-equivariant iff f(·; g·θ) = f(·; θ) for every g; for θ identifiable up to head
symmetries this means g·θ = ξ_g·θ for a unique head symmetry ξ_g: a head permutation τ_g
with per-head changes of basis E_h (query–key) and F_h (value–output), and
Π_g P R_gᵀ = P (the positional encodings must be equivariant). The head products Q^h = W_Q^h W_K^{hᵀ} and
O^h = W_V^h W_O^h do not see E_h, F_h, so τ_g is found by matching transported products
to the original ones (:func:`scipy.optimize.linear_sum_assignment`). Convention: head
τ_g(h) on g·X does what head h does on X,
``attention_maps(g·X)[τ_g(h)] = Π_g attention_maps(X)[h] Π_gᵀ``.

The package is split as the MLP side is: :mod:`eqlib.latent.attention.tokens` (token
actions, patch tokens), :mod:`eqlib.latent.attention.plant` (planted and hidden layers)
and :mod:`eqlib.latent.attention.recover` (head matching and the recovery).

Chapter: *Attention* (book/part2/08_attention).
"""
from .tokens import ByElement, TokenAction, patch_mirror_action
from .recover import (AttentionLatentAction, head_products, match_heads, recover_attention_action,
                      recover_attention_network, recover_token_permutation, transport_parameters)
from .plant import PlantedAttention, hide_attention_network, plant_attention_equivariant

__all__ = [
    "TokenAction",
    "patch_mirror_action",
    "head_products",
    "transport_parameters",
    "match_heads",
    "recover_token_permutation",
    "AttentionLatentAction",
    "ByElement",
    "recover_attention_action",
    "recover_attention_network",
    "hide_attention_network",
    "PlantedAttention",
    "plant_attention_equivariant",
]
