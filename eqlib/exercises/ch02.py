"""Checkers for the exercises of *Groups and actions* (book/part1/02_groups_and_actions).

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from ..actions import Action, check_equivariance, check_homomorphism, image_dihedral
from ..groups import dihedral
from . import passed, require

__all__ = ["check_corner_representation", "check_d4_equivariant_map"]


def check_corner_representation(rho) -> None:
    """ch02-ex1: the permutation representation of D4 on the 4 corners of a square.

    ``rho`` must be an :class:`~eqlib.actions.Action` of ``dihedral(4)`` on R^4 by
    permutation matrices, a homomorphism, faithful (8 distinct matrices), with ρ(r) a
    4-cycle (a quarter turn moves every corner) and ρ(s) a reflection of the square.

    Chapter: *Groups and actions*.
    """
    require(rho is not None, "rho is None: did you replace `raise NotImplementedError()` with your answer?")
    require(isinstance(rho, Action), f"rho must be an eqlib Action (e.g. from actions.permutation), got {type(rho).__name__}")
    G = dihedral(4)
    require(rho.group == G, f"rho must be an action of D4 = groups.dihedral(4), got one of {rho.group.name}")
    require(rho.dim == 4, f"the square has 4 corners, so rho must act on R^4; it acts on R^{rho.dim}")
    err = check_homomorphism(rho)
    require(err < 1e-6, f"rho is not a homomorphism: max |ρ(g)ρ(h) − ρ(gh)| = {err:.3g}")
    mats = rho.matrices()
    is_perm = ((mats == 0) | (mats == 1)).all() and (mats.sum(1) == 1).all() and (mats.sum(2) == 1).all()
    require(bool(is_perm), "every ρ(g) must be a permutation matrix (corners go to corners)")
    distinct = len({tuple(m.flatten().tolist()) for m in mats})
    require(distinct == 8, f"rho sends the 8 elements of D4 to only {distinct} different matrices; the symmetries of "
                           "a square move its corners in 8 different ways")
    r = rho.matrix(G["r"])
    require(int(torch.diagonal(r).sum()) == 0, "ρ(r) fixes a corner, but a quarter turn moves every corner")
    passed("Correct: D4 acts faithfully on the corners of the square.")


def check_d4_equivariant_map(f: Callable[[torch.Tensor], torch.Tensor], size: int = 8) -> None:
    """ch02-ex2: a map f on images (N, 1, size, size) that is D4-equivariant and is not a
    multiple of the identity.

    Chapter: *Groups and actions*.
    """
    require(f is not None, "f is None: did you replace `raise NotImplementedError()` with your answer?")
    require(callable(f), f"f must be a function of a batch of images, got {type(f).__name__}")
    rho = image_dihedral((1, size, size))
    x = torch.randn(16, 1, size, size, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        y = f(x)
    require(isinstance(y, torch.Tensor) and y.shape == x.shape,
            f"f must map images (N, 1, {size}, {size}) to images of the same shape, got "
            f"{tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__}")
    require(y.norm() > 1e-6 * x.norm(), "f returns (almost) zero: that is equivariant but too easy")
    c = (y * x).sum() / (x * x).sum()
    require((y - c * x).norm() > 1e-3 * y.norm(), "f is a multiple of the identity: equivariant, but too easy")
    errors = check_equivariance(f, rho, rho, x)
    worst = max(errors, key=errors.get)
    require(errors[worst] < 1e-5, f"f is not D4-equivariant: for g = {worst.name} the relative error "
                                  f"‖f(ρ(g)x) − ρ(g)f(x)‖/‖f(x)‖ is {errors[worst]:.3g}")
    passed("Correct: f commutes with every rotation and mirror of the square.")
