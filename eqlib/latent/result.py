"""The result of latent-action recovery and its diagnostics.

Chapter: *The main theorem* (book/part2/06_main_theorem).
"""
from __future__ import annotations

import abc

from dataclasses import dataclass, field

import numpy as np
import torch

from ..actions import Action, check_homomorphism, equivariance_residual
from ..actions.base import _check_group
from ..groups import FiniteGroup, GroupElement
from ..symmetries import SymmetryElement
from ..validation import check_int, check_sequence, check_tensor

__all__ = ["RecoveryResult", "AttentionNetworkActions", "MonomialAction", "LatentActions", "layer_errors",
           "homomorphism_error"]

Tensor = torch.Tensor


class RecoveryResult(abc.ABC):
    """The base every latent-action recovery result shares, whatever the model family.

    Every result has ``ok`` (the network is equivariant and every layer is equivariant
    under the recovered actions), ``layer_errors`` (an array whose first axis is the
    layer: each layer's equivariance error under the recovered actions) and a readable
    ``summary()``. :class:`LatentActions` (MLPs), ``ConvLatentActions`` (conv networks)
    and :class:`AttentionNetworkActions` (attention networks) implement it.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """

    layer_errors: np.ndarray

    @property
    @abc.abstractmethod
    def ok(self) -> bool:
        """The network is equivariant and every layer is, under the recovered actions."""

    @abc.abstractmethod
    def summary(self) -> str:
        """A readable report."""


class AttentionNetworkActions(RecoveryResult):
    """The latent actions of an attention network, one attention report per layer.

    Attributes:
        layers: one ``AttentionLatentAction`` per layer (what
            ``recover_attention_network`` returns), each with its own ``summary()``.
        layer_errors: (L,) each layer's worst residual.

    Chapter: *Attention* (book/part2/08_attention).
    """

    def __init__(self, layers: list):
        self.layers = list(layers)
        self.layer_errors = np.array([r.worst_residual() for r in self.layers])

    @property
    def ok(self) -> bool:
        return all(r.equivariant for r in self.layers)

    def summary(self) -> str:
        lines = [f"latent actions of an attention network of depth {len(self.layers)}: "
                 + ("LAYERWISE EQUIVARIANT" if self.ok else "NOT layerwise equivariant")]
        for i, r in enumerate(self.layers, start=1):
            lines += [f"  layer {i}: " + r.summary().replace("\n", "\n  ")]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


class MonomialAction(Action):
    """An action by monomial matrices: ``(k(g) z)_j = scales[g, j] · z_{perm[g, j]}``.

    Signed permutations (tanh), positively scaled permutations (ReLU) and permutations
    (GELU) are all of this form: k(g) is the parameter symmetry
    :class:`~eqlib.symmetries.SymmetryElement` ``element(g)``, stored for all g at once. It
    does not check the homomorphism property (a recovered action may fail it;
    :func:`homomorphism_error` measures by how much).

    Args:
        group: the group.
        perm: (``|G|``, d) long tensor.
        scales: (``|G|``, d) tensor.

    Raises:
        TypeError: if perm or scales is not a tensor.
        ValueError: if their shapes are not (``|G|``, d).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """

    def __init__(self, group: FiniteGroup, perm: Tensor, scales: Tensor):
        _check_group(group)
        check_tensor("perm", perm, dtype="integer")  # data (not meta), integer indices
        check_tensor("scales", scales, dtype="real", device=perm.device)
        if not scales.is_floating_point():
            scales = scales.to(torch.get_default_dtype())
        if perm.shape != scales.shape or perm.ndim != 2 or perm.shape[0] != group.order:
            raise ValueError(f"need perm and scales of shape ({group.order}, d), got {tuple(perm.shape)}, "
                             f"{tuple(scales.shape)}")
        if perm.is_floating_point() or perm.is_complex() or perm.dtype == torch.bool:
            raise TypeError(f"perm must hold integer indices, got {perm.dtype}")
        if perm.numel() and not torch.equal(perm.sort(dim=1).values.cpu(),
                                            torch.arange(perm.shape[1]).expand(perm.shape[0], -1)):
            raise ValueError(f"perm must hold one permutation of 0..{perm.shape[1] - 1} per element, got "
                             f"{perm.tolist()[:4]}")
        self.group, self.perm, self.scales = group, perm.long(), scales
        self.dim = perm.shape[1]
        self.shape = (self.dim,)

    def element(self, g: GroupElement) -> SymmetryElement:
        """k(g) as a :class:`~eqlib.symmetries.SymmetryElement`."""
        i = self._check(g)
        return SymmetryElement.unchecked(self.perm[i], self.scales[i])

    def act(self, g: GroupElement, x: Tensor) -> Tensor:
        return self.element(g).act(self._vectors(x))

    def act_transpose(self, g: GroupElement, x: Tensor) -> Tensor:
        # k(g) has entries [j, perm_j] = scale_j: (k(g)ᵀ x)_{perm_j} = scale_j x_j
        i = self._check(g)
        x = self._vectors(x)
        q = torch.argsort(self.perm[i]).to(x.device)
        return x[..., q] * self.scales[i][q].to(device=x.device, dtype=x.dtype)

    def matrix(self, g: GroupElement) -> Tensor:
        return self.element(g).matrix()

    def _vectors(self, x: Tensor) -> Tensor:
        """x: a real tensor (..., d) with data (integers and bools cast to the default float
        dtype, never applied in integer arithmetic; complex refused)."""
        check_tensor("x", x)
        if x.is_complex():
            raise TypeError(f"x must be a real tensor, got {x.dtype}")
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (..., {self.dim}), got {tuple(x.shape)}")
        return x if x.is_floating_point() else x.to(torch.get_default_dtype())

    def is_signed_permutation(self, tol: float = 1e-5) -> bool:
        return bool(((self.scales.abs() - 1).abs() <= tol).all())


class _DenseAction(Action):
    """Action given by stacked matrices, without the homomorphism check of MatrixAction."""

    def __init__(self, group: FiniteGroup, matrices: Tensor):
        _check_group(group)
        check_tensor("matrices", matrices, ndim=3, dtype="real")
        if matrices.shape[0] != group.order or matrices.shape[1] != matrices.shape[2]:
            raise ValueError(f"matrices must have shape ({group.order}, d, d) (one square matrix per element of "
                             f"{group.name}), got {tuple(matrices.shape)}")
        if not matrices.is_floating_point():
            matrices = matrices.to(torch.get_default_dtype())
        self.group, self._m = group, matrices
        self.dim = matrices.shape[1]
        self.shape = (self.dim,)

    def act(self, g: GroupElement, x: Tensor) -> Tensor:
        check_tensor("x", x, dtype="real")
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (..., {self.dim}), got {tuple(x.shape)}")
        x = x if x.is_floating_point() else x.to(self._m.dtype)  # never in integer arithmetic
        return x @ self._m[self._check(g)].to(device=x.device, dtype=x.dtype).T

    def matrix(self, g: GroupElement) -> Tensor:
        return self._m[self._check(g)].clone()


def homomorphism_error(action: Action, num_probes: int = 4, seed: int = 0) -> float:
    """Largest relative violation of k(e) = I and k(gh) = k(g) k(h) over all pairs g, h.

    :func:`eqlib.actions.check_homomorphism` on random probes; ``inf`` when some k(g)
    maps the probes to NaN or ±inf (a failed recovery), instead of an error.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    num_probes = check_int("num_probes", num_probes, 1, 10**5)
    if action.dim == 0:
        return 0.0
    try:
        return check_homomorphism(action, num_probes=num_probes, seed=seed)
    except ValueError:  # not finite on the probes
        return float("inf")


def layer_errors(model, rho_in: Action, rho_out: Action, hidden: list[Action], *, x: Tensor,
                 live: list[Tensor] | None = None) -> np.ndarray:
    """Relative equivariance error of every layer under given latent actions.

    Entry [i-1, g] is ``‖f_i(k_{i-1}(g) y) − k_i(g) f_i(y)‖ / ‖f_i(y)‖`` over the batch
    y = f_{≤i-1}(x), with k_0 = ρ_in and k_L = ρ_out.

    Args:
        model: a :class:`~eqlib.models.Model` of depth L.
        rho_in, rho_out: the actions on V_0 and V_L.
        hidden: L − 1 actions on V_1 … V_{L-1}.
        x: (N, d_0) probe inputs.
        live: optional bool masks per latent space 0..L; only live coordinates of V_i
            are compared (dead neurons are never read by the next layer).

    Returns:
        (L, ``|G|``) array.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    hidden = check_sequence("hidden", hidden)
    if len(hidden) != model.depth - 1:
        raise ValueError(f"hidden must hold {model.depth - 1} action(s) (one per hidden layer of this depth-"
                         f"{model.depth} model), got {len(hidden)}")
    check_tensor("x", x, dtype="float", nonempty=True)
    if x.ndim == 0:
        raise ValueError("x must be a batch of probe inputs (N, d_0), got a 0-d tensor")
    x = model.check_input(x) if hasattr(model, "check_input") else x  # the model's dtype and device
    ks = [rho_in, *hidden, rho_out]
    G = rho_in.group
    out = np.zeros((model.depth, G.order))
    with torch.no_grad():
        y = x.reshape(x.shape[0], -1)
        for i, layer in enumerate(model.layers):
            fy = layer(y)
            m = live[i + 1].to(fy.device) if live is not None else slice(None)
            scale = fy[:, m].norm().clamp_min(1e-12)
            for g in G:
                diff = equivariance_residual(layer, ks[i], ks[i + 1], y, g=g, fx=fy)
                out[i, g.index] = float(diff[:, m].norm() / scale)
            y = fy
    return out


@dataclass
class LatentActions(RecoveryResult):
    """Recovered latent actions k_i(g) of a network and their diagnostics.

    Attributes:
        group: the group G.
        method: ``"weights"``, ``"activations"`` or ``"lstsq"``.
        actions: one :class:`~eqlib.actions.Action` per hidden layer (index 0 is V_1).
        equivariance_error: relative end-to-end error ``max_g ‖f(ρ_in(g)x) − ρ_out(g)f(x)‖/‖f(x)‖``.
        equivariant: whether that error is within the tolerance.
        layer_errors: (L, ``|G|``) array, each layer's equivariance error under the actions.
        homomorphism_errors: per hidden layer, the error of g ↦ k_i(g) as a homomorphism.
        match_residuals: per layer i = 1..L, the relative residual of the weight relation
            (``"weights"``), of the activation match (``"activations"``) or the median
            held-out lstsq error (``"lstsq"``, hidden layers only), max over g.
        in_group_distance: per hidden layer, max over g of the relative Frobenius
            distance of k_i(g) to the layer's symmetry group K_i (0 for
            ``"activations"`` and for ``"weights"`` on a reduced network; for the lifts of
            the weak case it is positive when a clone's class is moved, and for
            ``"lstsq"`` it says how far the fitted maps are from K_i).
        failed_layers: layers (1..L) whose relation does not hold within the tolerance.
        conclusion_recovered: whether the *conclusion* of the theorem was recovered, not
            whether θ is identifiable (no finite computation decides that). True: the
            network is equivariant and the method found actions in K_i (in K̃_i on the
            reduced network, in the weak case) under which every layer is equivariant;
            this says nothing about uniqueness, so θ may still be unidentifiable (the
            six-unit GELU network of chapter 7 is an example). False: the network is
            equivariant but some layer is not equivariant under the recovered actions.
            By the contrapositive of the theorem this is evidence that θ is not
            (weakly) identifiable; it is proof only when the method's search is exact,
            as the ``"weights"`` row matching is for tanh layers whose rows of
            [W_i | b_i] are pairwise non-parallel (exercise ch06-ex3). None: undecided
            (the network is not equivariant).
        tol: the tolerance used.
        notes: readable remarks (reduction, fallbacks, failures).
        reduction: the weak case (``"weights"`` on a degenerate network): the
            :class:`~eqlib.submodels.Reduction` (reduced model f̃, embeddings α_i,
            α_i*, live masks); None otherwise.
        reduced_actions: the weak case: the homomorphisms k̃_i: G → K̃_i on the reduced
            latent spaces Ṽ_i (what the theorem gives), of which ``actions`` are the
            lifts k_i = α_i k̃_i α_i* + (I − α_i α_i*).
        reduced_layer_errors: the weak case: (L, ``|G|``) layer errors of the reduced
            network under k̃ (no unit discarded).

    In the weak case, ``layer_errors`` are those of the *full* network under the lifts,
    computed on the latents the network reaches and after discarding the dead units
    (the weak case of the theorem: each layer is equivariant after discarding inactive
    units; constant units are fixed by the lifts).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """

    group: FiniteGroup
    method: str
    actions: list[Action]
    equivariance_error: float
    equivariant: bool
    layer_errors: np.ndarray
    homomorphism_errors: list[float]
    match_residuals: list[float]
    in_group_distance: list[float]
    failed_layers: list[int]
    conclusion_recovered: bool | None
    tol: float
    notes: list[str] = field(default_factory=list)
    reduction: object | None = None
    reduced_actions: list[Action] | None = None
    reduced_layer_errors: np.ndarray | None = None

    @property
    def weak(self) -> bool:
        """Was the network reduced (the weakly identifiable case of the theorem)?"""
        return self.reduction is not None

    @property
    def ok(self) -> bool:
        """Equivariant, every layer equivariant under the actions (after discarding dead
        units in the weak case, where the reduced layers must be equivariant too), and
        every action a homomorphism."""
        return (self.equivariant and not self.failed_layers
                and bool(np.all(self.layer_errors <= self.tol))
                and (self.reduced_layer_errors is None or bool(np.all(self.reduced_layer_errors <= self.tol)))
                and all(h <= self.tol for h in self.homomorphism_errors))

    def matrix(self, layer: int, g: GroupElement) -> Tensor:
        """k_layer(g) as a dense (d, d) tensor (layer in 1..L-1)."""
        if not 1 <= layer <= len(self.actions):
            raise ValueError(f"hidden layers are 1..{len(self.actions)}, got {layer}")
        return self.actions[layer - 1].matrix(g)

    def reduced_matrix(self, layer: int, g: GroupElement) -> Tensor:
        """k̃_layer(g) ∈ K̃_layer on the reduced latent space (the weak case only).

        Raises:
            ValueError: if the network was not reduced, or for a layer outside 1..L-1.
        """
        if self.reduced_actions is None:
            raise ValueError("the network was not reduced (no dead, constant or cloned units were found, or "
                             "reduce=False): use matrix()")
        if not 1 <= layer <= len(self.reduced_actions):
            raise ValueError(f"hidden layers are 1..{len(self.reduced_actions)}, got {layer}")
        return self.reduced_actions[layer - 1].matrix(g)

    def structured(self, layer: int, g: GroupElement) -> tuple[Tensor, Tensor]:
        """(perm, scales) of k_layer(g): ``(k z)_j = scales_j z_{perm_j}``.

        Raises:
            ValueError: for a layer whose action is not monomial (lstsq, or a
                reduction with merged clones).
        """
        a = self.actions[layer - 1]
        if not isinstance(a, MonomialAction):
            raise ValueError(f"layer {layer}'s action is a dense matrix (method {self.method!r}), not monomial")
        k = a.element(g)
        return k.perm.clone(), k.scale.clone()

    def summary(self) -> str:
        lines = [f"Latent actions of {self.group.name} (method {self.method!r}, tol {self.tol:g})",
                 f"  end-to-end equivariance error: {self.equivariance_error:.3g}"
                 + ("" if self.equivariant else "  -> NOT equivariant: the actions below are not valid")]
        L = self.layer_errors.shape[0]
        for i in range(1, L + 1):
            err = float(self.layer_errors[i - 1].max())
            row = f"  layer {i}: equivariance error {err:.3g}, match residual {self.match_residuals[i - 1]:.3g}"
            if i < L:
                row += f", homomorphism error {self.homomorphism_errors[i - 1]:.3g}"
                if self.in_group_distance[i - 1] > 0:
                    row += f", distance to K_{i} {self.in_group_distance[i - 1]:.3g}"
            if i in self.failed_layers:
                row += "  FAILED"
            lines.append(row)
        verdict = {True: "holds", False: "fails at layers " + str(self.failed_layers)
                   + " (evidence that the parameters are not identifiable)",
                   None: "undecided (the network is not equivariant)"}[self.conclusion_recovered]
        if self.weak:
            red = self.reduction
            lines.append(f"  weak case: reduced widths {red.model.dims} (full {red.original.dims})")
            for i in range(1, L):
                err = float(self.reduced_layer_errors[i - 1].max())
                hom = homomorphism_error(self.reduced_actions[i - 1])
                lines.append(f"  reduced layer {i}: k̃_{i}: G → K̃_{i} on R^{red.model.dims[i]}, equivariance "
                             f"error {err:.3g}, homomorphism error {hom:.3g}")
            lines.append(f"  reduced layer {L}: equivariance error {float(self.reduced_layer_errors[L - 1].max()):.3g}")
            lifts = ["yes" if d <= self.tol else "no" for d in self.in_group_distance]
            lines.append(f"  lifts k_i in K_i (i = 1..{L - 1}): {', '.join(lifts)}")
            lines.append(f"  theorem's conclusion on the reduced network (homomorphisms into K̃_i): {verdict}")
            lines.append("  full network layerwise equivariant after discarding dead units: "
                         f"{'yes' if self.ok else 'no'}")
        else:
            lines.append(f"  theorem's conclusion (homomorphisms into K_i, every layer equivariant): {verdict}")
            lines.append(f"  layerwise equivariant: {'yes' if self.ok else 'no'}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


def dense_action(group: FiniteGroup, matrices: Tensor) -> Action:
    """Wrap stacked (``|G|``, d, d) matrices as an action (no homomorphism check)."""
    return _DenseAction(group, matrices)
