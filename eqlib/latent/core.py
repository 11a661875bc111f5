"""``latent_actions``: the one entry point for recovering latent actions.

It dispatches by model family: MLPs of Dense layers to the three methods (``weights``,
``activations``, ``lstsq``, each in its own module of ``eqlib.latent``), networks of
``SameConv`` layers to ``recover_conv_actions`` and attention layers or networks to
``recover_attention_action`` / ``recover_attention_network``. Every result is a
:class:`~eqlib.latent.result.RecoveryResult` (``ok``, ``layer_errors``, ``summary()``).

Chapter: *The main theorem* (book/part2/06_main_theorem).
"""
from __future__ import annotations

import numpy as np
import torch

from ..actions import Action
from ..groups import FiniteGroup
from ..models.activation import activation_record
from ..models.attention import MultiHeadAttention
from ..models.base import Model
from ..models.convnet import SameConv
from ..models.mlp import Dense
from ..seeds import torch_generator
from ..validation import check_bool, check_finite, check_float, check_int, check_tensor
from .lstsq import recover_by_lstsq
from .result import LatentActions, homomorphism_error, layer_errors
from .weights import _by_weights, hidden_groups, mlp_layers
from .activations import recover_by_activations
from .attention import recover_attention_action, recover_attention_network
from .conv import recover_conv_actions
from .result import AttentionNetworkActions, RecoveryResult

__all__ = ["latent_actions", "model_family", "METHODS", "FAMILIES"]

METHODS = ("weights", "activations", "lstsq")
#: the model families :func:`latent_actions` dispatches on
FAMILIES = ("mlp", "conv", "attention")

Tensor = torch.Tensor


def _probes(model, n: int, seed: int) -> Tensor:
    d0 = mlp_layers(model)[0].in_dim
    dev = mlp_layers(model)[0].weight.device
    return torch.randn(n, d0, generator=torch_generator(seed)).to(dev)


def model_family(model) -> str | None:
    """``"mlp"`` (Dense layers), ``"conv"`` (SameConv layers), ``"attention"`` (a
    MultiHeadAttention layer or a Model of them), or None.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    if isinstance(model, MultiHeadAttention):
        return "attention"
    layers = list(getattr(model, "layers", []) or []) if isinstance(model, Model) else []
    for family, cls in (("mlp", Dense), ("conv", SameConv), ("attention", MultiHeadAttention)):
        if layers and all(isinstance(l, cls) for l in layers):
            return family
    return None


def _other_family(family: str, model, rho_in, rho_out, method: str, x, tol, num_probes: int, seed: int,
                  group: FiniteGroup | None) -> RecoveryResult:
    """The conv and attention recoveries (the constructive proof: method ``"weights"``)."""
    if method != "weights":
        raise ValueError(f"method {method!r} recovers MLPs only; a {family} network is recovered from its "
                         "weights: use method='weights'")
    tol = 1e-4 if tol is None else check_float("tol", tol, 0.0)
    check_int("num_probes", num_probes, 1), check_int("seed", seed, 0)
    first = model if isinstance(model, MultiHeadAttention) else model.layers[0]
    if x is None:
        x = torch.randn(num_probes, *first.in_shape, generator=torch_generator(seed))
    if family == "conv":
        return recover_conv_actions(model, x, rho_in, rho_out, group=group, tol=tol, seed=seed)
    if isinstance(model, MultiHeadAttention):
        return AttentionNetworkActions([recover_attention_action(model, rho_in, x, out_features=rho_out, tol=tol)])
    return AttentionNetworkActions(recover_attention_network(model, rho_in, x, out_features=rho_out, tol=tol))


def latent_actions(model, rho_in: Action | None, rho_out: Action | None, *, method: str = "weights",
                   x: Tensor | None = None, tol: float | None = None, reduce: bool = True, num_probes: int = 256,
                   seed: int = 0, samples: int | Tensor = 100_000, fit_fraction: float = 0.5, ridge: float = 0.0,
                   solver: str | None = None, noise_scale: float = 1.0, sampling: str = "inputs",
                   group: FiniteGroup | None = None) -> RecoveryResult:
    """Recover the latent actions k_i(g) of an equivariant network and diagnose them.

    Dispatches by model family (``model_family``): an MLP goes through ``method``;
    a network of ``SameConv`` layers to :func:`~eqlib.latent.conv.recover_conv_actions`
    (result ``ConvLatentActions``); a MultiHeadAttention layer or a Model of them to
    :func:`~eqlib.latent.recover_attention_action` /
    :func:`~eqlib.latent.recover_attention_network` (result
    :class:`~eqlib.latent.result.AttentionNetworkActions`). Every result has ``ok``,
    ``layer_errors`` and ``summary()`` (:class:`~eqlib.latent.result.RecoveryResult`).

    Args:
        model: an :class:`~eqlib.models.MLP` (Dense layers) of depth L, a conv network
            or an attention layer/network.
        rho_in, rho_out: the actions of G on the input V_0 and the output V_L (conv:
            channel actions, None for none; attention: the token action and the action on
            output features, None for the default).
        method: ``"weights"`` (the constructive proof: match rows of the weights),
            ``"activations"`` (match units of f_{≤i}(x) and f_{≤i}(g x) on inputs x) or
            ``"lstsq"`` (fit unconstrained linear maps A_i(g) with
            A_i f_{≤i}(y) ≈ f_{≤i}(g y) on noise samples).
        x: (N, d_0) inputs: the probes of the diagnostics and the inputs of
            ``"activations"``; default ``num_probes`` seeded Gaussian vectors.
        tol: relative tolerance of every check (default 1e-4; 1e-3 for ``"lstsq"``).
        reduce: (``"weights"``) reduce the network first (:func:`eqlib.submodels.reduce`),
            so weakly identifiable networks (dead, constant or cloned units) work: the
            homomorphisms k̃_i: G → K̃_i are recovered on the reduced network and lifted
            to V_i (the weak case of the theorem; see :class:`~eqlib.latent.LatentActions`).
        num_probes, seed: default probes (seeded Gaussian inputs of the model's input shape).
        samples, fit_fraction, ridge, solver, noise_scale, sampling: (``"lstsq"``) as in
            :func:`~eqlib.latent.linear_equivariance_error`.
        group: (conv) the group when both actions are None (default cyclic(4)).

    Returns:
        :class:`~eqlib.latent.LatentActions`: the actions, each layer's equivariance error under them,
        homomorphism errors, ``equivariant`` (end to end), ``conclusion_recovered``,
        ``failed_layers`` and a readable ``summary()``; in the weak case also the
        ``reduction``, the ``reduced_actions`` k̃_i and their ``reduced_layer_errors``,
        and in ``in_group_distance`` how far each lift is from K_i. A network that is not
        equivariant gets ``equivariant=False`` (and ``ok`` False) whatever its actions;
        an equivariant one whose relations fail at some layer gets
        ``conclusion_recovered=False`` and those layers in ``failed_layers``.

    Raises:
        ValueError: unknown method, mismatched actions, a hidden layer without
            nonlinearity (``"weights"``/``"activations"``).
        TypeError: a model that is not an MLP of Dense layers.

    Examples:
        >>> from eqlib.actions import regular
        >>> from eqlib.groups import flip
        >>> from eqlib.latent import plant_equivariant
        >>> rho = regular(flip())
        >>> net, _ = plant_equivariant(flip(), rho, rho, [2, 4, 2], seed=0)
        >>> result = latent_actions(net, rho, rho)
        >>> result.ok, len(result.actions)
        (True, 1)
        >>> result.matrix(1, flip()["m"]).shape
        torch.Size([4, 4])

    Chapter: *The main theorem* (book/part2/06_main_theorem); methods compared in
    *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {METHODS}")
    family = model_family(model)
    if family in ("conv", "attention"):
        return _other_family(family, model, rho_in, rho_out, method, x, tol, num_probes, seed, group)
    layers = _check_mlp_arguments(model, rho_in, rho_out, x=x, tol=tol, reduce=reduce, num_probes=num_probes,
                                  seed=seed, fit_fraction=fit_fraction, ridge=ridge, noise_scale=noise_scale)
    G = rho_in.group
    tol = tol if tol is not None else (1e-3 if method == "lstsq" else 1e-4)
    notes: list[str] = []
    x = _mlp_probes(model, x, num_probes, seed)
    e2e_err = _end_to_end_error(model, rho_in, rho_out, x)
    equivariant = e2e_err <= tol
    L = len(layers)
    groups = hidden_groups(model, matching=method != "lstsq")  # K_i, built once per layer
    in_group = [0.0] * (L - 1)
    weak = {"reduction": None, "reduced_actions": None, "reduced_layer_errors": None}

    if method == "weights":
        actions, match, failed, weak = _by_weights(model, rho_in, rho_out, x, tol, groups, notes, reduce)
        if weak["reduction"] is not None:
            in_group = [_distance_to_group(K, a) for K, a in zip(groups, actions)]
    elif method == "activations":
        actions, residuals = recover_by_activations(model, rho_in, x, groups=groups)
        match = list(residuals)
        failed = [i + 1 for i, r in enumerate(residuals) if not r <= tol]
    else:
        linear = [activation_record(l.activation).linear for l in layers[:-1]]
        actions, match, in_group = recover_by_lstsq(
            model, rho_in, [None if lin else K for lin, K in zip(linear, groups)], samples=samples, seed=seed,
            noise_scale=noise_scale, sampling=sampling, fit_fraction=fit_fraction, ridge=ridge, solver=solver)
        failed = [i for i, worst in enumerate(match, start=1) if not worst <= tol]
        notes.append("lstsq actions are unconstrained linear maps; 'distance to K_i' is the relative Frobenius "
                     "distance to the nearest element of the layer's symmetry group")

    live = None if weak["reduction"] is None else weak["reduction"].live
    errs = layer_errors(model, rho_in, rho_out, actions, x=x, live=live)
    failed = _failed_layers(errs, match, failed, tol, L, check_last=method != "weights")
    homs = [homomorphism_error(a) for a in actions]
    recovered = _conclusion(G, e2e_err, equivariant, failed, tol, weak["reduction"] is not None, notes)
    return LatentActions(G, method, actions, e2e_err, equivariant, errs, homs, match, in_group, failed,
                         recovered, tol, notes, **weak)


def _check_mlp_arguments(model, rho_in, rho_out, *, x, tol, reduce, num_probes, seed, fit_fraction, ridge,
                         noise_scale) -> list:
    """Check the arguments of :func:`latent_actions` for an MLP; its Dense layers."""
    for name, rho in (("rho_in", rho_in), ("rho_out", rho_out)):
        if not isinstance(rho, Action):
            raise TypeError(f"{name} must be an eqlib Action, got {type(rho).__name__}")
    if tol is not None:
        check_float("tol", tol, 0.0)
    check_bool("reduce", reduce)
    check_int("num_probes", num_probes, 1), check_int("seed", seed, 0)
    check_float("fit_fraction", fit_fraction, 0.0, 1.0, low_open=True)
    check_float("ridge", ridge, 0.0), check_float("noise_scale", noise_scale, 0.0, low_open=True)
    if x is not None:
        check_tensor("x", x, dtypes="float", nonempty=True, finite=True)
    layers = mlp_layers(model)
    for name, param in model.named_parameters():
        check_finite(f"the model's parameter {name!r}", param.detach())
    if rho_in.group != rho_out.group:
        raise ValueError("rho_in and rho_out must be actions of one group")
    if rho_in.dim != layers[0].in_dim or rho_out.dim != layers[-1].out_dim:
        raise ValueError(f"rho_in acts on R^{rho_in.dim} and rho_out on R^{rho_out.dim}, but the network maps "
                         f"R^{layers[0].in_dim} → R^{layers[-1].out_dim}")
    if len(layers) < 2:
        raise ValueError("a network of depth 1 has no hidden layers")
    return layers


def _mlp_probes(model, x: Tensor | None, num_probes: int, seed: int) -> Tensor:
    """The probes (N, d_0) of the diagnostics: ``x`` in the model's dtype and on its device,
    flattened, or ``num_probes`` seeded Gaussian inputs."""
    if x is None:
        x = _probes(model, num_probes, seed)
    elif x.ndim == 0:
        raise ValueError("x must be a batch of probe inputs (N, d_0), got a 0-d tensor")
    else:
        x = model.check_input(x)  # another float precision: the model's dtype (and its device)
    return x.reshape(x.shape[0], -1)


def _failed_layers(errs, match: list[float], failed: list[int], tol: float, L: int, *,
                   check_last: bool) -> list[int]:
    """The layers (from 1) whose match or equivariance error is over ``tol``, sorted. With
    ``check_last`` (methods that recover no action on the output) the last layer's error is
    appended to ``match`` as its match."""
    if check_last:
        last = float(errs[-1].max())
        match.append(last)
        if not last <= tol and L not in failed:
            failed.append(L)
    for i in range(1, L + 1):
        if not float(errs[i - 1].max()) <= tol and i not in failed:
            failed.append(i)
    failed.sort()
    return failed


def _conclusion(G: FiniteGroup, e2e_err: float, equivariant: bool, failed: list[int], tol: float,
                reduced: bool, notes: list[str]) -> bool | None:
    """``conclusion_recovered``: None for a network that is not equivariant, False when some
    layers fail, True otherwise; the reason goes in ``notes``."""
    if not equivariant:
        notes.append(f"the network is not {G.name}-equivariant (relative error {e2e_err:.3g} > tol {tol:g}): "
                     "no latent actions are claimed")
        return None
    if failed:
        where = "the reduced network" if reduced else "the network"
        notes.append(f"the network is equivariant but layers {failed} of {where} are not equivariant under "
                     "the recovered actions: by the theorem (contrapositive) this is evidence that those "
                     "parameters are not identifiable")
        return False
    return True


def _end_to_end_error(model, rho_in: Action, rho_out: Action, x: Tensor) -> float:
    """max_g ‖f(ρ_in(g) x) − ρ_out(g) f(x)‖ / ‖f(x)‖ (the error of
    :func:`eqlib.actions.check_equivariance`), with one forward pass over every g·x."""
    elements = list(rho_in.group)
    with torch.no_grad():
        out = model(torch.cat([x] + [rho_in.act(g, x) for g in elements]))
        n = x.shape[0]
        fx, fgx = out[:n], out[n:].reshape(len(elements), n, *out.shape[1:])
        check_finite("f(x)", fx)
        scale = fx.norm().clamp_min(1e-12)
        worst = 0.0
        for j, g in enumerate(elements):
            res = fgx[j] - rho_out.act(g, fx)
            check_finite(f"f(rho_in({g.name}) x)", res)
            worst = max(worst, (res.norm() / scale).item())
    return worst


def _distance_to_group(K, action) -> float:
    """max_g relative Frobenius distance of k(g) to the layer's symmetry group K_i."""
    dist = 0.0
    for g in action.group:
        M = action.matrix(g).float()
        dist = max(dist, K.project(M)[1] / float(M.norm().clamp_min(1e-12)))
    return dist
