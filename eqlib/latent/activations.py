"""Latent actions from activations: match the units of f_{≤i}(x) and f_{≤i}(g·x).

For each hidden layer, the Pearson correlation between unit j of f_{≤i}(g x) and unit c
of f_{≤i}(x) over a batch (``torch.corrcoef``) is a similarity; the assignment
(``linear_sum_assignment``, on ``|correlation|`` when K_i allows signs) gives the
permutation, the sign of the correlation gives the sign (odd activations), and a
least-squares ratio gives positive scales (ReLU).

Chapter: *The main theorem* (book/part2/06_main_theorem).
"""
from __future__ import annotations

import numpy as np
import torch

from ..actions import Action
from .result import MonomialAction
from .units import assign
from ..symmetries import SymmetryGroup
from ..validation import check_tensor
from .weights import _MATCH_FLAGS, hidden_groups, mlp_layers

__all__ = ["recover_by_activations"]

Tensor = torch.Tensor


def recover_by_activations(model, rho_in: Action, x: Tensor, *, groups: list[SymmetryGroup] | None = None):
    """Recover k_i(g) for every hidden layer and g by matching activations on inputs x.

    Args:
        model: MLP (Dense layers).
        rho_in: the input action.
        x: (N, d_0) inputs, N > 1 (more samples than units makes the match reliable).
        groups: the hidden layers' groups K_i (``hidden_groups``); built here if None.

    Returns:
        (actions, residuals): one :class:`~eqlib.latent.MonomialAction` per hidden layer; per hidden
        layer the max over g of ``‖H_g − H k_iᵀ‖ / ‖H_g‖`` (H = f_{≤i}(x), H_g = f_{≤i}(g x)).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    layers = mlp_layers(model)
    G = rho_in.group
    L = len(layers)
    check_tensor("x", x, dtype="float", nonempty=True, finite=True)
    if x.ndim == 0:
        raise ValueError("x must be a batch of inputs (N, d_0), got a 0-d tensor")
    x = model.check_input(x)  # another float precision: the model's dtype (and its device)
    if x.shape[0] < 2:
        raise ValueError("activation matching needs at least two inputs")
    groups = hidden_groups(model) if groups is None else groups
    flags = [_MATCH_FLAGS[K.kind] for K in groups]
    perms = [torch.empty(G.order, l.out_dim, dtype=torch.long) for l in layers[:-1]]
    scales = [torch.empty(G.order, l.out_dim) for l in layers[:-1]]
    residuals = np.zeros(L - 1)
    x = x.reshape(x.shape[0], -1)
    with torch.no_grad():
        H = model.latents(x, upto=L - 1)
        for g in G:
            Hg = model.latents(rho_in.act(g, x), upto=L - 1)
            for i in range(L - 1):
                a, b = Hg[i], H[i]
                d = a.shape[1]
                C = torch.corrcoef(torch.cat([a, b], dim=1).T)[:d, d:]
                C = torch.nan_to_num(C, nan=0.0)
                # constant units: match by value (their correlation is undefined)
                signed, scaled = flags[i]
                p = assign(C, signed)
                bp = b[:, p]
                if scaled:
                    s = (a * bp).sum(0) / (bp * bp).sum(0).clamp_min(1e-30)
                    if not signed:
                        s = s.clamp_min(1e-12)
                elif signed:
                    s = torch.where(C.gather(1, p[:, None])[:, 0] < 0, -1.0, 1.0)
                else:
                    s = torch.ones(d)
                perms[i][g.index], scales[i][g.index] = p.cpu(), s.cpu().float()
                residuals[i] = max(residuals[i], float((a - bp * s).norm() / a.norm().clamp_min(1e-12)))
    return [MonomialAction(G, p, s) for p, s in zip(perms, scales)], residuals
