"""Pointwise activations as records: the one place that knows what an activation is.

An :class:`Activation` holds everything the library needs to know about σ: the function,
whether it is odd (σ(−z) = −σ(z)), the kind of its monomial intertwiner group
K = {k : σ(k z) = k σ(z)} (the names of ``eqlib.symmetries.KINDS``), and an in-place form.
``ACTIVATIONS``, ``ODD_ACTIVATIONS`` (:mod:`eqlib.models.mlp`), the symmetry groups of
:func:`eqlib.symmetries.symmetry_group`, the latent-action recoveries and the in-place
activations of the least-squares fits all read these records.

Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..validation import check_tensor

__all__ = ["Activation", "ACTIVATION_RECORDS", "activation_record"]


def _identity(z: torch.Tensor) -> torch.Tensor:
    return z


@dataclass(frozen=True)
class Activation:
    """One pointwise activation σ.

    Attributes:
        name: its name (``"tanh"``, ``"relu"``, ``"gelu"``, ``"sigmoid"``, ``"identity"``).
        fn: σ on tensors.
        odd: σ(−z) = −σ(z).
        kind: the kind of the intertwiner group K of σ (tanh: signed permutations; relu:
            positively scaled permutations; gelu, sigmoid: permutations; identity: the
            nonzero-scaled permutations, the monomial part of GL(d)).
        in_place: σ applied in place (same numbers as ``fn``), or None where torch has no
            in-place form.

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """

    name: str
    fn: Callable[[torch.Tensor], torch.Tensor]
    odd: bool
    kind: str
    in_place: Callable[[torch.Tensor], torch.Tensor] | None = None

    @property
    def linear(self) -> bool:
        """Whether σ is the identity; then K is all of GL(d) and units cannot be matched."""
        return self.name == "identity"

    def apply_(self, z: torch.Tensor) -> torch.Tensor:
        """σ(z) written into z (in place where torch can, else by a copy); z must be a
        floating-point tensor (σ of an integer is not an integer: TypeError)."""
        if not (type(z) is torch.Tensor and z.is_floating_point()):
            check_tensor("z", z, dtype="float")
        return self.in_place(z) if self.in_place is not None else z.copy_(self.fn(z))

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        """σ(z); an integer z is cast to the default float dtype, bool / complex z and
        non-tensors are refused (TypeError naming z). A float tensor costs one check."""
        if not (type(z) is torch.Tensor and z.is_floating_point()):
            check_tensor("z", z, dtype="real")
            z = z if z.is_floating_point() else z.to(torch.get_default_dtype())
        return self.fn(z)


#: every activation eqlib knows, by name
ACTIVATION_RECORDS: dict[str, Activation] = {a.name: a for a in (
    Activation("tanh", torch.tanh, odd=True, kind="signed_permutation", in_place=torch.tanh_),
    Activation("relu", F.relu, odd=False, kind="scaled_permutation", in_place=torch.relu_),
    Activation("gelu", F.gelu, odd=False, kind="permutation"),
    # sigmoid: the linear part of K only; the affine flips σ(−z) = 1 − σ(z) are not in K (chapter 4)
    Activation("sigmoid", torch.sigmoid, odd=False, kind="permutation", in_place=torch.sigmoid_),
    # σ = id commutes with all of GL(d); eqlib models only its monomial subgroup
    Activation("identity", _identity, odd=True, kind="nonzero_scaled_permutation", in_place=_identity),
)}


def activation_record(activation: str | Activation) -> Activation:
    """The :class:`Activation` named ``activation`` (a record is returned as it is).

    Raises:
        ValueError: for an unknown name (the message lists the known ones).
        TypeError: for something that is neither a name nor a record.

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """
    if isinstance(activation, Activation):
        return activation
    if not isinstance(activation, str):
        raise TypeError(f"activation must be a name or an Activation, got {type(activation).__name__}")
    if activation not in ACTIVATION_RECORDS:
        raise ValueError(f"unknown activation {activation!r}; choose from {sorted(ACTIVATION_RECORDS)}")
    return ACTIVATION_RECORDS[activation]
