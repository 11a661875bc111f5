"""Linear actions (representations) of finite groups on vectors, images and tokens.

An :class:`~eqlib.actions.Action` ``rho`` of a group G on R^d gives a matrix ``rho(g)`` for every
element and acts on batches with ``rho.act(g, x)`` (x of shape ``(..., d)``, or
``(..., *rho.shape)`` for actions on images and token sequences). Permutation-like
actions (token permutations, signed permutations, and the mirrors and rotations of
images built in ``eqlib.images``) act by indexing, so a 3072-dimensional image action
never builds a dense matrix.

The package's modules: ``base`` (the action types and the homomorphism check),
``equivariance`` (residuals and errors), ``intertwiners`` (equivariant linear maps) and
``factories`` (the standard actions); every public name is importable from
``eqlib.actions``.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from .base import MAX_ENTRIES, Action, DirectSum, MatrixAction, PermutationAction, check_homomorphism
from .equivariance import check_equivariance, equivariance_residual
from .intertwiners import equivariant_basis, equivariant_projector, intertwiner_dimension, reynolds
from .factories import (REGULAR_MAX_ORDER, from_matrices, permutation, regular, signed_permutation,
                        token_permutation, trivial)

__all__ = [
    "Action",
    "MatrixAction",
    "PermutationAction",
    "DirectSum",
    "from_matrices",
    "trivial",
    "permutation",
    "signed_permutation",
    "regular",
    "token_permutation",
    "check_homomorphism",
    "check_equivariance",
    "equivariance_residual",
    "equivariant_basis",
    "intertwiner_dimension",
    "reynolds",
    "equivariant_projector",
    "MAX_ENTRIES",
    "REGULAR_MAX_ORDER",
]
