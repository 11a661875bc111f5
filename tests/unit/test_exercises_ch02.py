"""Checkers of chapter 2's exercises accept right answers and explain wrong ones."""
import pytest
import torch
import torch.nn.functional as F

from eqlib import actions, groups
from eqlib.exercises import ExerciseError, ch02


def corners(r_points, s_points):
    G = groups.dihedral(4)
    return actions.PermutationAction.from_generators(G, {G["r"]: r_points, G["s"]: s_points})


def test_corner_representation_right():
    # corners 0..3 counter-clockwise from top-right; s swaps left and right: 0↔1, 2↔3
    G = groups.dihedral(4)
    gens = {G["r"]: [1, 2, 3, 0], G["s"]: [1, 0, 3, 2]}
    points = {}
    for g, word in zip(G, G.words):
        p = list(range(4))
        for k in word:  # the point map of a·s is i ↦ a(s(i))
            p = [p[j] for j in gens[G.generators[k]]]
        points[g] = p
    rho = actions.permutation(G, points)
    assert ch02.check_corner_representation(rho) is None


@pytest.mark.parametrize("make,message", [
    (lambda: actions.trivial(groups.dihedral(4), 4), "only 1 different"),
    (lambda: actions.regular(groups.dihedral(4)), "R\\^8"),
    (lambda: actions.regular(groups.cyclic(4)), "action of D4"),
    (lambda: None, "is None"),
    (lambda: torch.eye(4), "eqlib Action"),
], ids=["trivial", "regular-dim-8", "wrong-group", "no-answer", "not-an-action"])
def test_corner_representation_wrong(make, message):
    with pytest.raises(ExerciseError, match=message):
        ch02.check_corner_representation(make())


def _corners_along_words(r_points, s_points):
    """The corner representation built as the written solution builds it, from generator maps."""
    G = groups.dihedral(4)
    gens = {G["r"]: r_points, G["s"]: s_points}
    points = {}
    for g, word in zip(G, G.words):
        p = list(range(4))
        for k in word:
            p = [p[j] for j in gens[G.generators[k]]]
        points[g] = p
    return actions.permutation(G, points)


@pytest.mark.parametrize("s_points", [[1, 0, 3, 2], [3, 2, 1, 0]], ids=["corner0-top-right", "corner0-top-left"])
def test_corner_representation_every_numbering_right(s_points):
    # counter-clockwise numbering from any corner: s is i ↦ k − i (mod 4) with k odd
    assert ch02.check_corner_representation(_corners_along_words([1, 2, 3, 0], s_points)) is None


@pytest.mark.parametrize("r_points,s_points,message", [
    ([1, 2, 3, 0], [0, 3, 2, 1], "fixes 2 corners"),       # s a diagonal reflection (referee r1, r2)
    ([1, 2, 3, 0], [2, 1, 0, 3], "fixes 2 corners"),       # the other diagonal
    ([3, 0, 1, 2], [1, 0, 3, 2], "i \\+ 1 mod 4"),        # r clockwise, against the hint
    ([3, 0, 1, 2], [2, 1, 0, 3], "i \\+ 1 mod 4"),
], ids=["s-diagonal-02", "s-diagonal-13", "r-clockwise", "r-clockwise-s-diagonal"])
def test_corner_representation_faithful_but_wrong(r_points, s_points, message):
    # faithful permutation representations of D4 that are not the asked corner action:
    # the old checker (homomorphism, permutations, faithful, tr ρ(r) = 0) said "Correct"
    rho = _corners_along_words(r_points, s_points)
    assert len({tuple(m.flatten().tolist()) for m in rho.matrices()}) == 8
    with pytest.raises(ExerciseError, match=message):
        ch02.check_corner_representation(rho)


def test_corner_representation_signed_is_not_a_permutation():
    G = groups.dihedral(4)
    rho = actions.PermutationAction.from_generators(
        G, {G["r"]: [1, 2, 3, 0], G["s"]: [3, 2, 1, 0]}, {G["r"]: [-1, -1, -1, -1], G["s"]: [1, 1, 1, 1]})
    with pytest.raises(ExerciseError, match="permutation matrix"):
        ch02.check_corner_representation(rho)


def symmetric_blur(x):
    k = torch.tensor([[1.0, 2, 1], [2, 4, 2], [1, 2, 1]]) / 16
    return F.conv2d(x, k[None, None], padding=1)


def test_d4_equivariant_map_right():
    assert ch02.check_d4_equivariant_map(symmetric_blur) is None
    assert ch02.check_d4_equivariant_map(lambda x: torch.tanh(x) + x ** 2) is None


@pytest.mark.parametrize("f,message", [
    (lambda x: F.conv2d(x, torch.tensor([[[[0.0, 0, 0], [1, 0, -1], [0, 0, 0]]]]), padding=1), "not D4-equivariant"),
    (lambda x: torch.roll(x, 1, dims=-1), "not D4-equivariant"),
    (lambda x: 3 * x, "multiple of the identity"),
    (lambda x: torch.zeros_like(x), "zero"),
    (lambda x: x.sum(), "same shape"),
    (None, "is None"),
], ids=["horizontal-gradient", "shift", "scalar", "zero", "wrong-shape", "no-answer"])
def test_d4_equivariant_map_wrong(f, message):
    with pytest.raises(ExerciseError, match=message):
        ch02.check_d4_equivariant_map(f)


def _b3():
    mats = ch02._signed_permutation_matrices(3)
    x = torch.tensor([2.0, 2.0, -5.0])
    return mats, x


def test_b3_orbit_stabilizer_right():
    mats, x = _b3()
    assert len(mats) == 48
    orbit = torch.unique(mats @ x, dim=0)
    stab = mats[(mats @ x == x).all(1)]
    assert ch02.check_b3_orbit_stabilizer(orbit, stab) is None


@pytest.mark.parametrize("which,message", [
    ("repeats", "repeats points"), ("short", "misses points"), ("identity-only", "whole stabilizer"),
    ("moves", "moves x"), ("none", "is None")])
def test_b3_orbit_stabilizer_wrong(which, message):
    mats, x = _b3()
    orbit = torch.unique(mats @ x, dim=0)
    stab = mats[(mats @ x == x).all(1)]
    if which == "repeats":
        orbit = mats @ x
    elif which == "short":
        orbit = orbit[:12]
    elif which == "identity-only":
        stab = torch.eye(3)[None]
    elif which == "moves":
        stab = torch.stack([torch.eye(3), -torch.eye(3)])
    elif which == "none":
        orbit = None
    with pytest.raises(ExerciseError, match=message):
        ch02.check_b3_orbit_stabilizer(orbit, stab)


def test_b3_involutions():
    assert ch02.check_b3_involutions(19) is None
    with pytest.raises(ExerciseError, match="identity too"):
        ch02.check_b3_involutions(20)
    with pytest.raises(ExerciseError, match="not the number"):
        ch02.check_b3_involutions(5)
    with pytest.raises(ExerciseError, match="must be an int"):
        ch02.check_b3_involutions(19.0)
    with pytest.raises(ExerciseError, match="must be an int"):
        ch02.check_b3_involutions(torch.tensor(19.0))
    # a count made with torch or numpy is accepted (referee r2)
    import numpy as np
    assert ch02.check_b3_involutions(torch.tensor(19)) is None
    assert ch02.check_b3_involutions(np.int64(19)) is None
    with pytest.raises(ExerciseError, match="not the number"):
        ch02.check_b3_involutions(torch.tensor(5))


def test_b3_messages_do_not_give_the_counts_away():
    mats, x = _b3()
    orbit = torch.unique(mats @ x, dim=0)
    for orbit_, stab in ((orbit[:12], mats[(mats @ x == x).all(1)]), (orbit, torch.eye(3)[None])):
        with pytest.raises(ExerciseError) as err:
            ch02.check_b3_orbit_stabilizer(orbit_, stab)
        assert "24" not in str(err.value) and "48 /" not in str(err.value)
