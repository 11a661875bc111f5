"""Networks equivariant by construction, with their layerwise structure hidden.

:func:`plant_equivariant` chooses a hidden representation for every hidden layer
(copies of the regular representation of G, twisted by random sign characters
χ: G → {±1} when signs are allowed, plus one-dimensional character units for the
remainder), draws random *equivariant* weights and biases, then applies a random element
of the parameter symmetry group K (:func:`eqlib.symmetries.apply_symmetry`) so that the
structure is no longer visible in the weights. The returned hidden actions are the
conjugated ones, k_i ρ_i(g) k_i^{-1}: the ground truth a recovery should find (up to the
layer's own stabilizer).

Equivariant weights (ρ_out(g) W = W ρ_in(g) for all g) are drawn in one of two ways:

- small layers (``d_out·d_in ≤ 256``): a Gaussian combination of the orthonormal basis of
  the intertwiners from :func:`eqlib.actions.equivariant_basis` (the null space of the
  stacked constraints ``ρ_out(h) ⊗ ρ_in(h⁻¹)ᵀ − I`` over the generators h; chapter 5);
- larger layers: the Reynolds average W = 1/``|G|`` Σ_g ρ_out(g) W₀ ρ_in(g)⁻¹ of a Gaussian
  W₀ (:func:`eqlib.actions.reynolds`, chapter 5: ``|G|`` index gathers for
  permutation-like actions, no d² × d² matrix).

For orthogonal actions both give an isotropic Gaussian on the space of equivariant maps
(the average is the orthogonal projection onto it), so the choice changes only the cost.

Chapter: *The main theorem* (book/part2/06_main_theorem).
"""
from __future__ import annotations

import itertools

import numpy as np
import torch

from ..actions import Action, equivariant_basis, reynolds
from ..groups import FiniteGroup
from ..models.activation import activation_record
from ..models.mlp import MLP
from ..symmetries import SymmetryElement, apply_symmetry, symmetry_group
from ..seeds import derive_seed, spawn, torch_generator
from ..validation import check_bool, check_float, check_int, check_sequence
from .result import MonomialAction

__all__ = ["sign_characters", "hidden_representation", "equivariant_weight", "plant_equivariant"]

Tensor = torch.Tensor

NULL_SPACE_MAX = 256


def sign_characters(group: FiniteGroup) -> list[np.ndarray]:
    """All homomorphisms χ: G → {±1}, each as a (``|G|``,) array (the trivial one first).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    gens = group.generators
    out = []
    for values in itertools.product([1.0, -1.0], repeat=len(gens)):
        chi = np.array([np.prod([values[k] for k in word]) if word else 1.0 for word in group.words])
        if np.array_equal(chi[:, None] * chi[None, :], chi[group.table]):
            out.append(chi)
    return out


def hidden_representation(group: FiniteGroup, dim: int, signed: bool, seed: int = 0) -> MonomialAction:
    """A (signed) permutation representation of G on R^dim.

    ``dim // |G|`` copies of the regular representation ρ(g) e_h = χ(g) e_{gh}, each with a
    random sign character χ (trivial if not ``signed``), and ``dim mod |G|`` one-dimensional
    units g ↦ χ(g).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    dim, signed = check_int("dim", dim, 0), check_bool("signed", signed)
    n = group.order
    rng = np.random.default_rng(seed)
    chars = sign_characters(group) if signed else [np.ones(n)]
    copies, rest = divmod(int(dim), n)
    inv = np.array([group.inverse(g).index for g in group])
    perm = np.empty((n, dim), dtype=np.int64)
    scales = np.empty((n, dim))
    for c in range(copies):
        chi = chars[rng.integers(len(chars))]
        # (ρ(g) z)_j = χ(g) z_{g⁻¹ j}
        perm[:, c * n:(c + 1) * n] = c * n + group.table[inv, :]
        scales[:, c * n:(c + 1) * n] = chi[:, None]
    for j in range(copies * n, dim):
        chi = chars[rng.integers(len(chars))]
        perm[:, j] = j
        scales[:, j] = chi
    return MonomialAction(group, torch.as_tensor(perm), torch.as_tensor(scales, dtype=torch.get_default_dtype()))


def equivariant_weight(rho_in: Action, rho_out: Action, seed: int = 0, method: str | None = None) -> Tensor:
    """A random W of shape (d_out, d_in) with ρ_out(g) W = W ρ_in(g) for every g.

    Args:
        rho_in, rho_out: actions of one group.
        seed: seed of the Gaussian draw.
        method: ``"null_space"`` or ``"average"``; default by size (null space up to
            d_out·d_in = 256; the SVD of the d_out·d_in-column constraint matrix grows as its cube).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    G = rho_in.group
    d_in, d_out = rho_in.dim, rho_out.dim
    gen = torch_generator(seed)
    method = method or ("null_space" if d_in * d_out <= NULL_SPACE_MAX else "average")
    if method == "null_space":
        if not G.generators:
            return torch.randn(d_out, d_in, generator=gen)
        basis = equivariant_basis(rho_in, rho_out)  # the null space of chapter 5
        if basis.shape[0] == 0:
            return torch.zeros(d_out, d_in)
        c = torch.randn(basis.shape[0], generator=gen, dtype=torch.float64).to(basis.dtype)
        return torch.einsum("k,kij->ij", c, basis)
    if method != "average":
        raise ValueError(f"method must be 'null_space' or 'average', got {method!r}")
    return reynolds(torch.randn(d_out, d_in, generator=gen), rho_in, rho_out)  # chapter 5


def _invariant_vector(rho: Action, gen: torch.Generator) -> Tensor:
    b0 = torch.randn(rho.dim, generator=gen)
    return torch.stack([rho.act(g, b0) for g in rho.group]).mean(0)


def plant_equivariant(group: FiniteGroup, rho_in: Action, rho_out: Action, widths, *, activation: str = "tanh",
                      hidden: str | None = None, seed: int = 0, gain: float = 1.5, bias_scale: float = 0.5,
                      hide: bool = True) -> tuple[MLP, list[MonomialAction]]:
    """A random G-equivariant MLP whose layerwise structure is hidden by a symmetry.

    Args:
        group: G.
        rho_in, rho_out: actions of G on V_0 = R^{widths[0]} and V_L = R^{widths[-1]}.
        widths: [d_0, d_1, …, d_L].
        activation: hidden activation (tanh, relu, gelu, sigmoid); the last layer is linear.
        hidden: ``"signed_permutation"`` (signed hidden representations; needs an odd
            activation) or ``"permutation"``; default signed for odd activations.
        seed: seeds everything (representations, weights, the hiding symmetry).
        gain: the rows of every weight have mean norm ``gain`` (pre-activations of order 1).
        bias_scale: scale of the (equivariant) biases.
        hide: apply a random element of K = Π K_i (:func:`eqlib.symmetries.apply_symmetry`).

    Returns:
        (model, hidden_actions): the MLP and, per hidden layer, the action that makes
        every layer equivariant (as a :class:`~eqlib.latent.MonomialAction`).

    Raises:
        TypeError: ``widths`` not an ordered sequence (a set), a flag not True/False.
        ValueError: mismatched dimensions, non-integer widths, ``gain`` not a normal
            positive number, a signed hidden representation with a non-odd activation,
            an unknown ``hidden``.

    Examples:
        >>> from eqlib.actions import check_equivariance, regular
        >>> from eqlib.groups import flip
        >>> G = flip()
        >>> rho = regular(G)
        >>> net, hidden = plant_equivariant(G, rho, rho, [2, 4, 2], seed=0)
        >>> len(hidden), hidden[0].dim
        (1, 4)
        >>> x = torch.randn(8, 2, generator=torch_generator(1))
        >>> max(check_equivariance(net, rho, rho, x).values()) < 1e-5
        True

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    widths = [check_int(f"widths[{i}]", w, 1) for i, w in enumerate(check_sequence("widths", widths))]
    tiny = torch.finfo(torch.get_default_dtype()).tiny  # below it the weights underflow
    if check_float("gain", gain, 0.0, low_open=True) < tiny:
        raise ValueError(f"gain must be >= {tiny:g} (the smallest normal {torch.get_default_dtype()}; smaller "
                         f"gains give weights that underflow to zero), got {gain!r}")
    check_float("bias_scale", bias_scale, 0.0), check_bool("hide", hide)
    if len(widths) < 3:
        raise ValueError(f"need at least one hidden layer: widths {widths}")
    if rho_in.group != group or rho_out.group != group:
        raise ValueError("rho_in and rho_out must be actions of the given group")
    if rho_in.dim != widths[0] or rho_out.dim != widths[-1]:
        raise ValueError(f"rho_in acts on R^{rho_in.dim} and rho_out on R^{rho_out.dim}, widths are {widths}")
    if hidden is None:
        hidden = "signed_permutation" if activation_record(activation).odd else "permutation"
    if hidden not in ("signed_permutation", "permutation"):
        raise ValueError(f"hidden must be 'signed_permutation' or 'permutation', got {hidden!r}")
    if hidden == "signed_permutation" and not activation_record(activation).odd:
        raise ValueError(f"signed hidden representations need an odd activation (tanh); {activation!r} does not "
                         "commute with sign flips: use hidden='permutation'")
    L = len(widths) - 1
    reps: list[Action] = [rho_in]
    for i in range(1, L):
        reps.append(hidden_representation(group, widths[i], hidden == "signed_permutation", seed=derive_seed(seed, f"hidden representation {i}")))
    reps.append(rho_out)
    model = MLP(widths, activations=activation, seed=seed)
    gen = spawn(seed, "biases")
    with torch.no_grad():
        for i, layer in enumerate(model.layers):
            W = equivariant_weight(reps[i], reps[i + 1], seed=derive_seed(seed, f"weight {i}"))
            W = W * (gain * W.shape[0] ** 0.5 / W.norm().clamp_min(1e-12))
            layer.weight.copy_(W)
            if layer.bias is not None:
                layer.bias.copy_(_invariant_vector(reps[i + 1], gen) * bias_scale)
    actions = [r for r in reps[1:-1]]
    if hide:
        ks = [symmetry_group(activation, widths[i]).sample(seed=spawn(seed, f"hiding symmetry {i}")) for i in range(1, L)]
        model = apply_symmetry(model, ks)
        hidden_actions = []
        for k, rep in zip(ks, actions):
            perm, scales = [], []
            for g in group:
                c = k @ SymmetryElement(rep.perm[g.index], rep.scales[g.index]) @ ~k
                perm.append(c.perm)
                scales.append(c.scale)
            hidden_actions.append(MonomialAction(group, torch.stack(perm), torch.stack(scales)))
        actions = hidden_actions
    return model, actions
