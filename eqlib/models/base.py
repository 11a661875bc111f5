"""The formalism of a model of depth L: layers f_i(x; θ_i) composed in sequence.

Chapter: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels).
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ..actions import Action, equivariance_residual
from ..validation import check_choice, check_float, check_int, check_tensor

__all__ = ["Layer", "EquivariantLayer", "Model"]


class Layer(nn.Module):
    """One layer f_i(·; θ_i): V_{i-1} → V_i. Its parameters θ_i are the module's.

    ``in_shape`` and ``out_shape`` are the shapes of one latent vector of V_{i-1} and V_i.

    Chapter: *Models, latent spaces and submodels*.
    """

    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]

    def _input(self, x: torch.Tensor, param: torch.Tensor, trailing: tuple[int | None, ...] | None = None,
               ndim: tuple[int, ...] | None = None, name: str = "x") -> torch.Tensor:
        """The layer's input gate: ``x`` must be a floating-point tensor (TypeError naming
        ``name``: a list, an array, an integer, bool or complex tensor is refused, never
        truncated) holding data (not ``meta``) on ``param``'s device, whose last dimensions
        are ``trailing`` (default ``in_shape``; None: any size) and, if given, whose number
        of dimensions is in ``ndim`` (ValueError). Another float precision is cast to
        ``param``'s dtype. The usual input (right dtype and device) costs a few comparisons
        and no copy."""
        trailing = self.in_shape if trailing is None else trailing
        if type(x) is torch.Tensor and x.dtype == param.dtype and x.device == param.device:
            shape = x.shape
            if (ndim is None or len(shape) in ndim) and _trailing_ok(shape, trailing):
                return x  # the fast path of every forward pass
        check_tensor(name, x, dtype="float", device=param.device)
        if (ndim is not None and x.ndim not in ndim) or not _trailing_ok(x.shape, trailing):
            want = ", ".join("*" if t is None else str(t) for t in trailing)
            lead = "N, " if ndim is None or max(ndim) > len(trailing) else ""
            raise ValueError(f"{name} must have shape ({lead}{want}), got {tuple(x.shape)}")
        return x.to(param.dtype)

    @property
    def in_dim(self) -> int:
        return int(torch.Size(self.in_shape).numel())

    @property
    def out_dim(self) -> int:
        return int(torch.Size(self.out_shape).numel())


class EquivariantLayer(Layer):
    """A layer that carries the actions it is equivariant for: f(ρ_in(g) x) = ρ_out(g) f(x).

    Subclasses set ``rho_in`` and ``rho_out`` (actions of one group on V_{i-1} and V_i)
    in their constructor and implement ``export``. The base gives every such layer
    the same two services: ``check_equivariance`` measures the equivariance of the
    layer itself, and ``export`` returns plain torch modules computing the same
    function without any parametrization (for deployment, or to compare with an
    unconstrained layer).

    Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
    """

    rho_in: Action
    rho_out: Action

    @torch.no_grad()
    def check_equivariance(self, x: torch.Tensor, *, atol: float | None = None,
                           elements: str = "generators") -> float:
        """The largest ``abs(f(ρ_in(g) x) − ρ_out(g) f(x))`` over the batch ``x`` and the group's
        generators (``elements="generators"``: enough, since ρ_in and ρ_out are
        homomorphisms) or all its elements (``elements="all"``).

        Args:
            x: a float batch (N, ``*in_shape``).
            atol: if given, an error above ``atol`` raises AssertionError naming the
                element (for tests and notebooks).
            elements: ``"generators"`` or ``"all"``.

        Returns:
            the largest absolute entry of the residual, a float (0 for an exactly
            equivariant layer, float32 rounding otherwise).

        Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
        """
        check_choice("elements", elements, ("generators", "all"))
        if atol is not None:
            atol = check_float("atol", atol, 0.0)
        check_tensor("x", x, dtype="float", nonempty=True, finite=True)
        G = self.rho_in.group
        gs = (list(G.generators) or [G.identity]) if elements == "generators" else list(G)
        fx = self(x)
        worst, where = 0.0, G.identity
        for g in gs:
            err = float(equivariance_residual(self, self.rho_in, self.rho_out, x, g=g, fx=fx).abs().max())
            if not err <= worst:  # NaN counts as the worst
                worst, where = err, g
        if atol is not None and not worst <= atol:
            raise AssertionError(f"{type(self).__name__} is not equivariant for {where.name}: "
                                 f"max |f(rho_in(g) x) - rho_out(g) f(x)| = {worst:.3g} > atol = {atol:.3g}")
        return worst

    def export(self) -> nn.Module:  # pragma: no cover - abstract
        """Plain torch modules (``torch.nn.Linear`` and the like) computing the same
        function as this layer, with the constrained weights copied in and no
        parametrization.

        Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
        """
        raise NotImplementedError


def _trailing_ok(shape: torch.Size, trailing: tuple[int | None, ...]) -> bool:
    """The last ``len(trailing)`` sizes of ``shape`` are ``trailing`` (None: any size)."""
    k = len(trailing)
    if len(shape) < k:
        return False
    for have, want in zip(shape[len(shape) - k:], trailing):
        if want is not None and have != want:
            return False
    return True


class Model(nn.Module):
    """A model of depth L: f(·; θ) = f_L(·; θ_L) ∘ … ∘ f_1(·; θ_1).

    Args:
        layers: the layers f_1, …, f_L; each one's ``out_shape`` must be the next
            one's ``in_shape``.

    Chapter: *Models, latent spaces and submodels*.
    """

    def __init__(self, layers: Sequence[Layer]):
        super().__init__()
        if len(layers) == 0:
            raise ValueError("a model needs at least one layer")
        for i, (a, b) in enumerate(zip(layers[:-1], layers[1:]), start=1):
            if tuple(a.out_shape) != tuple(b.in_shape):
                raise ValueError(f"layer {i} outputs {a.out_shape} but layer {i + 1} takes {b.in_shape}")
        self.layers = nn.ModuleList(layers)

    @property
    def depth(self) -> int:
        """L, the number of layers."""
        return len(self.layers)

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        """Shapes of one vector of V_0, V_1, …, V_L."""
        return [tuple(self.layers[0].in_shape)] + [tuple(l.out_shape) for l in self.layers]

    @property
    def dims(self) -> list[int]:
        """dim V_0, dim V_1, …, dim V_L."""
        return [int(torch.Size(s).numel()) for s in self.shapes]

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def check_input(self, x: torch.Tensor) -> torch.Tensor:
        """The model's input gate: ``x`` must be a floating-point tensor (TypeError; integer
        images are normalised first, e.g. with :func:`eqlib.images.prepare_images`) holding
        data (not ``meta``) on the parameters' device (ValueError naming both devices); a
        float of another precision is cast to the parameters' dtype (float16 or float64
        inputs give the model's own result, never a dtype-mismatch error)."""
        check_tensor("x", x, dtype="float")
        want = tuple(self.layers[0].in_shape)
        k = len(want)
        flat_ok = k == 1 and x.ndim > 2 and int(torch.Size(x.shape[1:]).numel()) == want[0]
        if tuple(x.shape[max(0, x.ndim - k):]) != want and not flat_ok:
            raise ValueError(f"x must have shape (N, {', '.join(map(str, want))}) (this model's input), got "
                             f"{tuple(x.shape)}")
        param = next(self.parameters(), None)
        if param is not None:
            if x.device != param.device:
                check_tensor("x", x, device=param.device)
            if x.dtype != param.dtype and param.is_floating_point():
                x = x.to(param.dtype)
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.check_input(x)
        for layer in self.layers:
            x = layer(x)
        return x

    def latents(self, x: torch.Tensor, upto: int | None = None) -> list[torch.Tensor]:
        """[f_{≤1}(x), f_{≤2}(x), …, f_{≤L}(x)] (stops after layer ``upto`` if given)."""
        x = self.check_input(x)
        upto = self.depth if upto is None else check_int("upto", upto, 1, self.depth)
        out = []
        for layer in self.layers[:upto]:
            x = layer(x)
            out.append(x)
        return out

    def prefix(self, i: int) -> "Model":
        """f_{≤i} = f_i ∘ … ∘ f_1 as a model sharing this model's parameters."""
        i = check_int("the prefix length i", i, 1, self.depth)
        return Model(list(self.layers[:i]))

    def check_finite(self) -> None:
        """Raise ValueError naming the first parameter holding NaN or inf."""
        for name, p in self.named_parameters():
            if not torch.isfinite(p).all():
                raise ValueError(f"parameter {name} holds NaN or inf values")
