"""The theorem under the generalized adjunction, run on convolutional networks.

G = C4 (or C2) rotates square images by quarter turns. A conv layer with an odd kernel,
zero padding k // 2 and stride 1 satisfies the *generalized adjunction*

    ψ(g)⁻¹ f_i(ψ(g) x; θ_i) = f_i(x; g⁻¹·θ_i),    g⁻¹·θ_i = (rot_g⁻¹ W_i, b_i),

where ψ(g) = rot_g turns every channel of an image and rot_g⁻¹ W turns every filter
back. On the input and the output G may also act on channels, ψ_0(g) = ζ_0(g) ⊗ rot_g
and ψ_L(g) = ζ_L(g) ⊗ rot_g (ζ_0, ζ_L signed permutations of channels; channels first,
as in the (C, H, W) layout); then
g⁻¹·θ_1 multiplies W_1 by ζ_0(g) on its input channels and g⁻¹·θ_L multiplies W_L and
b_L by ζ_L(g)⁻¹ on their output channels.

If f is equivariant, θ and g⁻¹·θ give the same function; for an identifiable θ there
are unique signed channel permutations k_i(g) (the parameter symmetries of a tanh conv
layer) with g⁻¹·θ_i = k_i(g)·θ_i·k_{i-1}(g)⁻¹ on the channel axes, and then
λ_i(g) = k_i(g) ⊗ rot_g makes every layer equivariant and g ↦ k_i(g) is a
homomorphism (the course's theorem under the generalized adjunction, chapter 8).
:func:`recover_conv_actions` runs this proof: it matches rows of the transported
filters to rows of the original ones up to sign, layer by layer.

Chapter: *Attention and convolutions* (book/part2/08_attention).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..actions import Action, MatrixAction
from ..groups import FiniteGroup, GroupElement, cyclic
from ..models.base import Model
from ..models.convnet import SameConv, conv_net
from ..symmetries import SymmetryElement
from ..seeds import spawn, torch_generator
from ..validation import check_bool, check_float, check_int, check_tensor
from .result import RecoveryResult
from .units import match_units

__all__ = ["rotate", "c4_channel_action", "act_on_images", "transport_conv", "PlantedConv",
           "plant_c4_conv", "ConvLatentActions", "recover_conv_actions"]

Tensor = torch.Tensor

#: r acting on channels, per block kind (matrices of the generator r of C4)
_BLOCKS = {
    "trivial": [[1.0]],
    "sign": [[-1.0]],                                   # r ↦ −1
    "pair": [[0.0, -1.0], [1.0, 0.0]],                  # (a, b) ↦ (−b, a), r² = −I
    "regular": [[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0],
                [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]],  # e_j ↦ e_{j+1}
}


def _quarter_turns(g: GroupElement) -> int:
    G = g.group
    if G.order not in (1, 2, 4) or not np.array_equal(G.table, cyclic(G.order).table):
        raise ValueError(f"g must be an element of cyclic(1), cyclic(2) or cyclic(4), got one of {G.name}")
    return g.index * (4 // G.order)


def rotate(x: Tensor, g: GroupElement) -> Tensor:
    """Turn images (…, H, W) with H = W by g: element k of cyclic(4) turns k quarter
    turns counterclockwise (``torch.rot90``), element k of cyclic(2) 2k quarter turns.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    check_tensor("x", x)
    if x.dim() < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"x must end in a square (H, W), got shape {tuple(x.shape)}")
    return torch.rot90(x, _quarter_turns(g), dims=(-2, -1))


def c4_channel_action(blocks: list[str], group: FiniteGroup | None = None) -> MatrixAction:
    """A signed-permutation action of C4 on channels, a direct sum of blocks.

    Blocks: ``"trivial"`` (r ↦ 1), ``"sign"`` (r ↦ −1), ``"pair"`` ((a, b) ↦ (−b, a))
    and ``"regular"`` (four channels shifted cyclically).

    Args:
        blocks: the block kinds, in channel order.
        group: ``cyclic(4)`` (default).

    Raises:
        ValueError: on an unknown block kind or an empty list.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    group = cyclic(4) if group is None else group
    if group.order != 4 or not np.array_equal(group.table, cyclic(4).table):
        raise ValueError(f"group must be cyclic(4), got {group.name}")
    if not blocks:
        raise ValueError("blocks must name at least one block")
    bad = [b for b in blocks if b not in _BLOCKS]
    if bad:
        raise ValueError(f"unknown blocks {bad}; use {sorted(_BLOCKS)}")
    r = torch.block_diag(*[torch.tensor(_BLOCKS[b]) for b in blocks])
    return MatrixAction(group, torch.stack([torch.linalg.matrix_power(r, k) for k in range(4)]))


def act_on_images(g: GroupElement, channels: Action | Tensor | None, x: Tensor) -> Tensor:
    """C(g) ⊗ rot_g on images (N, C, H, W): mix channels by C(g), turn by g.

    ``channels`` is an action on R^C, a (C, C) matrix, or None (channels untouched).

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    check_tensor("x", x, ndim=4)
    if channels is not None:
        m = channels.matrix(g) if isinstance(channels, Action) else channels
        if x.dim() < 3 or m.shape != (x.shape[-3], x.shape[-3]):
            raise ValueError(f"channel matrix of shape {tuple(m.shape)} does not fit images of shape "
                             f"{tuple(x.shape)}")
        x = torch.einsum("oc,...chw->...ohw", m.to(x), x)
    return rotate(x, g)


def _layers(model: Model) -> list[SameConv]:
    layers = list(model.layers) if isinstance(model, Model) else None
    if not layers or not all(isinstance(l, SameConv) for l in layers):
        raise TypeError(f"model must be a Model of SameConv layers, got {type(model).__name__}")
    return layers


def _channel_matrix(action: Action | None, g: GroupElement, c: int, name: str) -> Tensor:
    if action is None:
        return torch.eye(c)
    if action.dim != c or action.group != g.group:
        raise ValueError(f"{name} must be an action of {g.group.name} on R^{c}, got {action!r}")
    return action.matrix(g)


def transport_conv(model: Model, g: GroupElement, rho_in: Action | None = None,
                   rho_out: Action | None = None) -> list[tuple[Tensor, Tensor]]:
    """g⁻¹·θ for every layer, from the generalized adjunction (see the module docstring).

    Returns:
        [(W'_i, b'_i)]: filters turned back by g (``rot_g⁻¹``), the first layer's input
        channels mixed by ζ_0(g), the last layer's output channels by ζ_L(g)⁻¹.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    layers = _layers(model)
    C0 = _channel_matrix(rho_in, g, layers[0].in_shape[0], "rho_in")
    CL = _channel_matrix(rho_out, g, layers[-1].out_shape[0], "rho_out")
    out = []
    with torch.no_grad():
        for i, layer in enumerate(layers):
            W, b = rotate(layer.weight.detach(), ~g), layer.bias.detach().clone()
            if i == 0:
                W = torch.einsum("oihw,ij->ojhw", W, C0)
            if i == len(layers) - 1:
                CLi = torch.linalg.inv(CL)
                W, b = torch.einsum("po,oihw->pihw", CLi, W), CLi @ b
            out.append((W, b))
    return out


@dataclass
class PlantedConv:
    """A planted C4-equivariant conv net.

    Attributes:
        model: the network (hidden by random signed channel permutations when ``hidden``).
        hidden_actions: per hidden layer, the planted channel action of the returned
            model (the chosen action conjugated by the hiding permutation).
        rho_in, rho_out: channel actions on the input and the output.
        hidden: whether the structure was hidden.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """

    model: Model
    hidden_actions: list[MatrixAction]
    rho_in: MatrixAction
    rho_out: MatrixAction
    hidden: bool


def plant_c4_conv(blocks: list[list[str]], *, size: int = 7, kernel: int = 3, hide: bool = True,
                  seed: int = 0) -> PlantedConv:
    """A conv net whose every layer is C4-equivariant, with channel actions you choose.

    Layer i maps images with channel action ζ_{i-1} to images with channel action ζ_i;
    its filters are averaged over the group so that
    ``ζ_i(g)⁻¹ (rot_g⁻¹ W) ζ_{i-1}(g) = W`` and ``ζ_i(g) b = b`` for every g, which is
    exactly f_i(rot_g ζ_{i-1}(g) x) = rot_g ζ_i(g) f_i(x). With ``hide``, random signed
    channel permutations Q_i of the hidden layers (W_i ↦ Q_i W_i Q_{i-1}⁻¹, b_i ↦ Q_i b_i,
    a parameter symmetry of tanh layers) hide the structure; the planted actions become
    Q_i ζ_i Q_i⁻¹.

    Args:
        blocks: [blocks of ζ_0, …, blocks of ζ_L] as in :func:`c4_channel_action`.
        size, kernel: image side and odd kernel side.
        hide: apply the random channel symmetry.
        seed: seed of everything random.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    check_bool("hide", hide)
    if not isinstance(blocks, (list, tuple)):
        raise TypeError(f"blocks must be a list of channel blocks, got {type(blocks).__name__}")
    if len(blocks) < 2:
        raise ValueError(f"blocks must list the channel blocks of at least V_0 and V_1, got {blocks!r}")
    acts = [c4_channel_action(list(b)) for b in blocks]
    model = conv_net([a.dim for a in acts], size, kernel, seed=seed)
    G = acts[0].group
    gen = spawn(seed, "equivariant weights")
    with torch.no_grad():
        for i, layer in enumerate(model.layers):
            Cin, Cout = acts[i].matrices(), acts[i + 1].matrices()
            W, b = layer.weight.detach().clone(), layer.bias.detach().clone()
            Wbar = sum(torch.einsum("po,oihw,ij->pjhw", torch.linalg.inv(Cout[g.index]),
                                    rotate(W, ~g), Cin[g.index]) for g in G) / G.order
            bbar = sum(torch.linalg.inv(Cout[g.index]) @ b for g in G) / G.order
            layer.weight.copy_(Wbar)
            layer.bias.copy_(bbar)
        hidden = [acts[i] for i in range(1, len(acts) - 1)]
        if hide:
            Qs = [torch.eye(acts[0].dim)]
            for a in hidden:
                perm = torch.randperm(a.dim, generator=gen)
                signs = torch.where(torch.rand(a.dim, generator=gen) < 0.5, -1.0, 1.0)
                Qs.append(SymmetryElement.unchecked(perm, signs).matrix())
            Qs.append(torch.eye(acts[-1].dim))
            for i, layer in enumerate(model.layers):
                Qin_inv = Qs[i].T  # signed permutations are orthogonal
                layer.weight.copy_(torch.einsum("po,oihw,ij->pjhw", Qs[i + 1], layer.weight, Qin_inv))
                layer.bias.copy_(Qs[i + 1] @ layer.bias)
            hidden = [MatrixAction(G, Q @ a.matrices() @ Q.T) for Q, a in zip(Qs[1:-1], hidden)]
    return PlantedConv(model, hidden, acts[0], acts[-1], hide)


@dataclass
class ConvLatentActions(RecoveryResult):
    """What :func:`recover_conv_actions` found.

    Attributes:
        group: G.
        k: per hidden layer i (1 … L-1), {g.name: k_i(g)}, a signed channel permutation.
        weight_residual: per layer, {g.name: ‖g⁻¹·θ_i − k_i θ_i k_{i-1}⁻¹‖ / ‖θ_i‖}.
        layer_error: per layer, {g.name: ‖f_i(λ_{i-1}(g) y) − λ_i(g) f_i(y)‖ / ‖f_i(y)‖}
            on the probes y = f_{<i}(x) and on Gaussian y, with λ_i(g) = k_i(g) ⊗ rot_g.
        output_error: {g.name: ‖f(ψ_0(g) x) − ψ_L(g) f(x)‖ / ‖f(x)‖}.
        tol: tolerance of :attr:`equivariant` and :attr:`layerwise`.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """

    group: FiniteGroup
    k: list[dict[str, Tensor]] = field(default_factory=list)
    weight_residual: list[dict[str, float]] = field(default_factory=list)
    layer_error: list[dict[str, float]] = field(default_factory=list)
    output_error: dict[str, float] = field(default_factory=dict)
    tol: float = 1e-4

    @property
    def equivariant(self) -> bool:
        """f is equivariant (end to end) on the probes."""
        return max(self.output_error.values()) <= self.tol

    @property
    def layerwise(self) -> bool:
        """Every weight relation holds and every layer is equivariant under λ_i."""
        worst = max(max(d.values()) for d in self.weight_residual + self.layer_error)
        return worst <= self.tol

    @property
    def ok(self) -> bool:
        """Equivariant end to end and layer by layer."""
        return self.equivariant and self.layerwise

    @property
    def layer_errors(self) -> np.ndarray:
        """(L, ``|G|``) each layer's equivariance error under λ_i(g), elements in group order."""
        return np.array([[d[g.name] for g in self.group] for d in self.layer_error])

    def homomorphism_error(self) -> float:
        """max over hidden layers and pairs (g, h) of ‖k_i(gh) − k_i(g) k_i(h)‖."""
        G, worst = self.group, 0.0
        for ki in self.k:
            for g in G:
                for h in G:
                    worst = max(worst, float((ki[(g @ h).name] - ki[g.name] @ ki[h.name]).abs().max()))
        return worst

    def is_signed_permutation(self) -> bool:
        """Every k_i(g) is a signed permutation matrix (an element of K_i)."""
        for ki in self.k:
            for m in ki.values():
                if not (torch.equal(m.abs().sum(0), torch.ones(m.shape[0]))
                        and torch.equal(m.abs().sum(1), torch.ones(m.shape[0]))
                        and bool(((m == 0) | (m.abs() == 1)).all())):
                    return False
        return True

    def summary(self) -> str:
        head = (f"latent actions of {self.group.name} on a conv net: "
                + ("LAYERWISE EQUIVARIANT" if self.equivariant and self.layerwise else
                   "end-to-end equivariant but NOT related layer by layer" if self.equivariant else
                   "NOT equivariant"))
        lines = [head]
        for i, ki in enumerate(self.k, start=1):
            r = self.group.generators[0].name if self.group.generators else "e"
            m = ki[r]
            perm = m.abs().argmax(1).tolist()
            sign = [int(s) for s in m[torch.arange(m.shape[0]), m.abs().argmax(1)].sign().tolist()]
            lines.append(f"  k_{i}({r}): (k z)_c = sign_c · z_perm[c], perm {perm}, signs {sign}")
        worst_w = max(max(d.values()) for d in self.weight_residual)
        worst_l = max(max(d.values()) for d in self.layer_error)
        lines.append(f"  worst weight residual {worst_w:.1e}, worst layer error {worst_l:.1e}, "
                     f"homomorphism error {self.homomorphism_error():.1e}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _rel(a: Tensor, b: Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-12))


def _rows(W: Tensor, b: Tensor) -> Tensor:
    return torch.cat([W.reshape(W.shape[0], -1), b[:, None]], dim=1)


def recover_conv_actions(model: Model, x: Tensor, rho_in: Action | None = None,
                         rho_out: Action | None = None, *, group: FiniteGroup | None = None,
                         tol: float = 1e-4, seed: int = 0) -> ConvLatentActions:
    """The theorem's proof under the generalized adjunction, as an algorithm (conv nets).

    For every g: transport θ to g⁻¹·θ (:func:`transport_conv`); k_1(g) is the signed
    permutation matching the rows [W'_1 | b'_1] to [W_1 | b_1]; for later layers
    k_i(g) matches [W'_i k_{i-1}(g) | b'_i] to [W_i | b_i]; the last layer must satisfy
    W'_L k_{L-1}(g) = W_L, b'_L = b_L. Then λ_i(g) = k_i(g) ⊗ rot_g is checked on every
    layer (probes f_{<i}(x) and Gaussian inputs).

    Args:
        model: a Model of :class:`~eqlib.models.convnet.SameConv` layers (tanh hidden
            layers: their parameter symmetries are signed channel permutations).
        x: probe images (N, c_0, H, H).
        rho_in, rho_out: channel actions on the input and the output (default: none).
        group: cyclic(4) or cyclic(2) (default: the actions' group, else cyclic(4)).
        tol: tolerance of the reported checks.
        seed: seed of the Gaussian probes.

    Chapter: *Attention and convolutions* (book/part2/08_attention).
    """
    layers = _layers(model)
    if any(l.activation != "tanh" for l in layers[:-1]):
        raise ValueError("every layer but the last must be a tanh layer (K_i = signed permutations)")
    if group is None:
        group = rho_in.group if rho_in is not None else rho_out.group if rho_out is not None else cyclic(4)
    check_tensor("x", x, dtype="float")  # integer images: refused by name, not deep in a conv
    if x.dim() != 4 or tuple(x.shape[1:]) != tuple(layers[0].in_shape):
        raise ValueError(f"x must have shape (N, {', '.join(map(str, layers[0].in_shape))}), "
                         f"got {tuple(x.shape)}")
    x = x.to(layers[0].weight.dtype)  # another float precision: the layers' dtype
    tol = check_float("tol", tol, 0.0)
    res = ConvLatentActions(group, tol=tol)
    L = len(layers)
    res.k = [dict() for _ in range(L - 1)]
    res.weight_residual = [dict() for _ in range(L)]
    res.layer_error = [dict() for _ in range(L)]
    gen = torch_generator(seed)
    with torch.no_grad():
        probes, h = [], x
        for layer in layers:
            gauss = torch.randn(h.shape, generator=gen)
            probes.append(torch.cat([h, gauss]))
            h = layer(h)
        fx = model(x)
        for g in group:
            moved = transport_conv(model, g, rho_in, rho_out)
            C0 = _channel_matrix(rho_in, g, layers[0].in_shape[0], "rho_in")
            CL = _channel_matrix(rho_out, g, layers[-1].out_shape[0], "rho_out")
            k_prev = torch.eye(layers[0].in_shape[0])
            lam_prev = C0
            for i, (layer, (W2, b2)) in enumerate(zip(layers, moved)):
                M = torch.einsum("oihw,ij->ojhw", W2, k_prev)
                target = _rows(layer.weight.detach(), layer.bias.detach())
                if i < L - 1:
                    perm, signs, _ = match_units(_rows(M, b2), target, signed=True)
                    k = SymmetryElement.unchecked(perm, signs).matrix()
                    res.k[i][g.name] = k
                else:
                    k = torch.eye(layer.out_shape[0])
                lam = k if i < L - 1 else CL
                W_expect = torch.einsum("po,oihw->pihw", k, layer.weight.detach())
                res.weight_residual[i][g.name] = _rel(_rows(M, b2), _rows(W_expect, k @ layer.bias.detach()))
                y = probes[i]
                lhs = layer(act_on_images(g, lam_prev, y))
                rhs = act_on_images(g, lam, layer(y))
                res.layer_error[i][g.name] = _rel(lhs, rhs)
                k_prev, lam_prev = k, lam
            res.output_error[g.name] = _rel(model(act_on_images(g, C0, x)), act_on_images(g, CL, fx))
    return res
