"""Equivariance of a function between two actions: the residual f(ρ_in(g)x) − ρ_out(g)f(x)
and the relative error per group element.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions); used throughout.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..groups import GroupElement
from ..validation import check_finite, check_sequence, check_tensor, show
from .base import Action, Tensor


def equivariance_residual(
    f: Callable[[Tensor], Tensor], rho_in: Action, rho_out: Action, x: Tensor, *, g: GroupElement,
    fx: Tensor | None = None,
) -> Tensor:
    """The equivariance residual f(ρ_in(g)x) − ρ_out(g)f(x) on a batch x (autograd-friendly).

    The one kernel behind every equivariance error and penalty in eqlib; pass ``fx = f(x)``
    to reuse it across elements.

    Chapter: *Building equivariant layers* (book/part1/05_equivariant_layers).
    """
    if fx is None:
        fx = f(x)
    else:  # a given f(x) must be a tensor rho_out acts on: say so naming fx, not x
        rho_out._flat(fx, "fx")
    return f(rho_in.act(g, x)) - rho_out.act(g, fx)


def check_equivariance(
    f: Callable[[Tensor], Tensor],
    rho_in: Action | Tensor,
    rho_out: Action | None = None,
    x: Tensor | None = None,
    *, elements: Sequence[GroupElement] | None = None,
) -> dict[GroupElement, float]:
    """Relative equivariance error of f for each group element:

    .. math:: \\frac{\\lVert f(\\rho_{in}(g)x) - \\rho_{out}(g) f(x) \\rVert}{\\lVert f(x) \\rVert}

    over the whole batch x (Frobenius norms). Returns ``{g: error}``.

    ``check_equivariance(model, x)`` reads the actions from ``model.rho_in`` and
    ``model.rho_out`` (as :class:`~eqlib.models.equivariant.EquivariantDense` and
    :class:`~eqlib.models.equivariant.EquivariantMLP` carry them).

    Raises:
        ValueError: for an empty batch x, an empty list of elements (it would check
            nothing), elements of another group, or when f gives NaN/inf (on x or on a
            transformed x): the check then cannot say anything.
        TypeError: for elements given as a set or another unordered container.

    Examples:
        >>> import torch
        >>> from eqlib.actions import regular
        >>> from eqlib.groups import cyclic
        >>> rho = regular(cyclic(3))
        >>> from eqlib.seeds import torch_generator
        >>> x = torch.randn(5, 3, generator=torch_generator(0))
        >>> check_equivariance(lambda v: 2 * v, rho, rho, x)
        {C3[e]: 0.0, C3[r]: 0.0, C3[r2]: 0.0}

    Chapter: *Groups and actions*; used throughout.
    """
    if not callable(f):
        raise TypeError(f"f must be callable, got {show(f)}")
    if isinstance(rho_in, Tensor) and rho_out is None and x is None:  # check_equivariance(model, x)
        x = rho_in
        rho_in, rho_out = getattr(f, "rho_in", None), getattr(f, "rho_out", None)
        if rho_in is None or rho_out is None:
            raise TypeError("check_equivariance(f, x) needs f to carry actions f.rho_in and f.rho_out; "
                            f"{show(f)} does not: call check_equivariance(f, rho_in, rho_out, x)")
    if x is None:
        raise TypeError("check_equivariance needs a batch x: check_equivariance(f, rho_in, rho_out, x)")
    for name, rho in (("rho_in", rho_in), ("rho_out", rho_out)):
        if not isinstance(rho, Action):
            raise TypeError(f"{name} must be an Action, got {show(rho)}")
    if rho_in.group != rho_out.group:
        raise ValueError("rho_in and rho_out must be actions of the same group")
    check_tensor("x", x, nonempty=True, finite=True)
    elements = check_sequence("elements", elements, nonempty=True) if elements is not None \
        else rho_in.group.elements
    for g in elements:
        rho_in._check(g)
    with torch.no_grad():
        fx = f(x)
        check_finite("f(x)", fx)
        scale = fx.norm().clamp_min(1e-12)
        errors = {}
        for g in elements:
            res = equivariance_residual(f, rho_in, rho_out, x, g=g, fx=fx)
            check_finite(f"f(rho_in({g.name}) x)", res)
            errors[g] = (res.norm() / scale).item()
        return errors
