"""Checkers for the exercises of *Groups and actions* (book/part1/02_groups_and_actions).

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable

import torch

from ..actions import Action, check_equivariance, check_homomorphism
from ..images import image_dihedral
from ..groups import dihedral
from . import passed, require, variants

__all__ = ["given", "check_corner_representation", "check_d4_equivariant_map",
           "check_b3_orbit_stabilizer", "check_b3_involutions"]

#: The numbers the book's exercises give (no variant).
_BOOK = {"b3_point": (2, 2, -5), "b3_element": ((1, 0, 0), (0, 1, 0), (0, 0, 1))}


def given() -> dict:
    """The numbers this copy's exercises give, for the current variant
    (``eqlib.exercises.variants.current()``).

    - ``"b3_point"`` (ch02-ex3): the point x of R^3 whose orbit and stabilizer under B_3
      are asked, a tuple of 3 integers. Book: ``(2, 2, -5)``. A variant draws two
      different sizes a, b from 1..9 ((a, b) ≠ (2, 5), so the orbit differs from the
      book's), puts ±b at a random position and ±a at the other two, with random signs:
      the two entries of equal size make the stabilizer non-trivial (order 2: the swap of
      those two neurons, with the signs that keep them), the orbit has 24 points.
    - ``"b3_element"`` (ch02-ex5): the signed permutation matrix h of 3 neurons (a tuple
      of 3 rows of integers) with which the involutions to count must commute. Book: the
      identity, so every involution of B3 counts (19). A variant draws h uniformly from
      the 46 elements of B3 other than ±I (the centre), and redraws it while only one
      involution, -I, commutes with it (16 of them; an answer of 1 is easy to guess),
      leaving 30: the involutions generate B3, so fewer than all 19 commute with h, and
      at least 3 do.

    Examples:
        >>> given()["b3_point"]              # the book: no variant
        (2, 2, -5)

    Chapter: *Groups and actions*.
    """
    numbers = dict(_BOOK)
    gen = variants.parameter_generator("ch02-ex3")
    if gen is not None:
        a, b = 2, 5
        while (a, b) == (2, 5):
            a, b = (int(v) + 1 for v in torch.randperm(9, generator=gen)[:2])
        odd = int(torch.randint(3, (1,), generator=gen))
        signs = (torch.randint(2, (3,), generator=gen) * 2 - 1).tolist()
        numbers["b3_point"] = tuple(s * (b if i == odd else a) for i, s in enumerate(signs))
    gen = variants.parameter_generator("ch02-ex5")
    if gen is not None:
        mats = _signed_permutation_matrices(3)
        eye = torch.eye(3)
        central = torch.isclose(mats, eye).all(-1).all(-1) | torch.isclose(mats, -eye).all(-1).all(-1)
        involution = torch.isclose(mats @ mats, eye).all(-1).all(-1)
        commute = torch.isclose(mats[:, None] @ mats[None], mats[None] @ mats[:, None]).all(-1).all(-1)
        counts = (commute & involution[None]).sum(1) - 1      # involutions commuting with each h
        choices, few = mats[~central], counts[~central] < 3
        pick = int(torch.randint(len(choices), (1,), generator=gen))
        while few[pick]:                                      # redraw an answer of 1
            pick = int(torch.randint(len(choices), (1,), generator=gen))
        h = choices[pick]
        numbers["b3_element"] = tuple(tuple(int(v) for v in row) for row in h.tolist())
    return numbers


def check_corner_representation(rho) -> None:
    """ch02-ex1: the permutation representation of D4 on the 4 corners of a square.

    ``rho`` must be an :class:`~eqlib.actions.Action` of ``dihedral(4)`` on R^4 by
    permutation matrices, a homomorphism, faithful (8 distinct matrices), with ρ(r)
    sending corner i to corner i + 1 mod 4 (corners numbered counter-clockwise, r the
    counter-clockwise quarter turn) and ρ(s) fixing no corner (s is the left-right
    mirror, a reflection through the midpoints of two edges, not a diagonal one). These
    two conditions accept every correct numbering (whichever corner is 0) and refuse a
    diagonal reflection for s and a clockwise r.

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
    r, s = rho.matrix(G["r"]), rho.matrix(G["s"])
    require(int(torch.diagonal(r).sum()) == 0, "ρ(r) fixes a corner, but a quarter turn moves every corner")
    turn = torch.eye(4)[:, [1, 2, 3, 0]]                    # e_i ↦ e_{i+1 mod 4}
    require(bool(torch.equal(r, turn)), "ρ(r) must send corner i to corner i + 1 mod 4 (the hint): with the "
            "corners numbered counter-clockwise, r turns counter-clockwise; check the direction of your r")
    fixed = int(torch.diagonal(s).sum())
    require(fixed == 0, f"ρ(s) fixes {fixed} corners, but the left-right mirror s fixes no corner of the square "
            "(it is a reflection through the midpoints of two edges, not through a diagonal)")
    passed("Correct: D4 acts faithfully on the corners of the square.")


def check_d4_equivariant_map(f: Callable[[torch.Tensor], torch.Tensor], size: int = 8) -> None:
    """ch02-ex2: a map f on images (N, 1, size, size) that is D4-equivariant and is not a
    multiple of the identity.

    Chapter: *Groups and actions*.
    """
    require(f is not None, "f is None: did you replace `raise NotImplementedError()` with your answer?")
    require(callable(f), f"f must be a function of a batch of images, got {type(f).__name__}")
    rho = image_dihedral((1, size, size))
    x = torch.randn(16, 1, size, size, generator=variants.input_generator("ch02-ex2", book=0))
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


def _signed_permutation_matrices(d: int) -> torch.Tensor:
    """All 2^d d! signed permutation matrices of size d (B_d), as a (n, d, d) tensor."""
    perms = torch.tensor(list(itertools.permutations(range(d))))
    signs = torch.tensor(list(itertools.product((1.0, -1.0), repeat=d)))
    eye = torch.eye(d)
    P = eye[:, perms].permute(1, 0, 2)                      # P[k] e_j = e_{perm_k[j]}
    return (signs[:, None, :, None] * P[None]).reshape(-1, d, d)


def check_b3_orbit_stabilizer(orbit, stabilizer) -> None:
    """ch02-ex3: the orbit (n, 3) and the stabilizer (k, 3, 3) of x = ``given()["b3_point"]``
    (the book: (2, 2, -5)) under the signed permutations of 3 neurons.

    Chapter: *Groups and actions*.
    """
    for name, value, ndim in (("orbit3", orbit, 2), ("stab3", stabilizer, 3)):
        require(value is not None, f"{name} is None: did you replace `raise NotImplementedError()`?")
        require(isinstance(value, torch.Tensor) and value.ndim == ndim and value.shape[-1] == 3,
                f"{name} must be a tensor of shape {'(n, 3)' if ndim == 2 else '(k, 3, 3)'}, got "
                f"{tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__}")
    mats = _signed_permutation_matrices(3)
    x = torch.tensor(given()["b3_point"], dtype=torch.float32)
    truth = {tuple(v.tolist()) for v in mats @ x}
    stab_truth = int((mats @ x == x).all(1).sum())
    got = [tuple(v.tolist()) for v in orbit.float()]
    require(len(set(got)) == len(got), f"orbit3 repeats points: {len(got)} rows but {len(set(got))} "
            "distinct; keep each point of the orbit once (torch.unique(..., dim=0))")
    require(set(got) <= truth, f"orbit3 holds {sorted(set(got) - truth)[:2]}, which no signed "
            "permutation reaches from x = given['b3_point']: its entries must be those of x, "
            "rearranged, with any signs")
    require(set(got) == truth, "orbit3 misses points of the orbit: every position of the entry whose size "
            "occurs once, and every sign pattern, occurs")
    stab = stabilizer.float()
    require(stab.shape[1:] == (3, 3), f"stab3 must hold 3x3 matrices, got shape {tuple(stab.shape)}")
    members = {tuple(m.flatten().tolist()) for m in mats}
    require(all(tuple(m.flatten().tolist()) in members for m in stab),
            "stab3 holds a matrix that is not a signed permutation matrix")
    require(bool(torch.allclose(stab @ x, x.expand(len(stab), 3))), "stab3 holds a matrix that moves x")
    require(len({tuple(m.flatten().tolist()) for m in stab}) == len(stab),
            "stab3 repeats a matrix; keep each element of the stabilizer once")
    require(len(stab) == stab_truth, "stab3 does not hold the whole stabilizer, or holds too much: find every "
            "signed permutation that fixes x, and compare |orbit| · |stabilizer| with |B3|")
    passed(f"Correct: |orbit| · |stabilizer| = {len(got)} · {len(stab)} = 48 = |B3|.")


def check_b3_involutions(count) -> None:
    """ch02-ex5: the number of involutions (g ≠ e, g² = e) of the signed permutations of
    3 neurons that commute with h = ``given()["b3_element"]`` (the book: h = I, so all
    the involutions of B3).

    Chapter: *Groups and actions*.
    """
    require(count is not None, "n_involutions is None: did you replace `raise NotImplementedError()`?")
    if isinstance(count, torch.Tensor) and count.numel() == 1 and not count.is_floating_point() \
            and count.dtype != torch.bool:
        count = int(count)                      # a count computed with torch, e.g. (...).sum()
    require(isinstance(count, numbers.Integral) and not isinstance(count, bool),
            f"n_involutions must be an int, got {type(count).__name__}")
    count = int(count)                          # numpy integers too
    mats = _signed_permutation_matrices(3)
    h = torch.tensor(given()["b3_element"], dtype=torch.float32)
    eye = torch.eye(3)
    squares_to_e = torch.isclose(mats @ mats, eye).all(-1).all(-1)
    commutes = torch.isclose(mats @ h, h @ mats).all(-1).all(-1)
    truth = int((squares_to_e & commutes).sum()) - 1          # leave out the identity
    require(count != truth + 1, f"{count} counts the identity too: an involution is g ≠ e with g² = e")
    require(count == truth, f"{count} is not the number of involutions of B3 that commute with "
            "h = given['b3_element']; check g @ g == identity and g h == h g for all 48 elements "
            "and leave out the identity")
    passed(f"Correct: {count} involutions of B3 commute with h.")
