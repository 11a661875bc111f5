"""eqlib.actions: every factory is a homomorphism; image and token actions do what they say."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from eqlib import actions, groups, images
from eqlib.seeds import torch_generator


def rotation_c4():
    G = groups.cyclic(4)
    return actions.from_matrices(G, {G["r"]: [[0.0, -1.0], [1.0, 0.0]]})


def rotation_c6_all_elements():
    G = groups.cyclic(6)
    mats = {g: [[math.cos(2 * math.pi * k / 6), -math.sin(2 * math.pi * k / 6)],
                [math.sin(2 * math.pi * k / 6), math.cos(2 * math.pi * k / 6)]] for k, g in enumerate(G)}
    return actions.from_matrices(G, mats)


def signed_swap():
    G = groups.flip()
    return actions.signed_permutation(G, {G["e"]: [0, 1], G["m"]: [1, 0]},
                                      {G["e"]: [1, 1], G["m"]: [-1, -1]})


ACTIONS = {
    "trivial-D3": lambda: actions.trivial(groups.dihedral(3), 2),
    "permutation-S3": lambda: actions.permutation(groups.symmetric(3), groups.symmetric(3).permutations),
    "signed-swap-Z2": signed_swap,
    "regular-D3": lambda: actions.regular(groups.dihedral(3)),
    "regular-C4": lambda: actions.regular(groups.cyclic(4)),
    "mirror-horizontal": lambda: images.mirror((2, 4, 5), "horizontal"),
    "mirror-vertical": lambda: images.mirror((2, 4, 5), "vertical"),
    "image-dihedral": lambda: images.image_dihedral((2, 4, 4)),
    "image-rotations": lambda: images.image_rotations((1, 5, 5)),
    "tokens-S3": lambda: actions.token_permutation(groups.symmetric(3), 3, 2),
    "matrices-C4-generator": rotation_c4,
    "matrices-C6-all": rotation_c6_all_elements,
    "direct-sum": lambda: rotation_c4() + actions.regular(groups.cyclic(4)),
}


@pytest.fixture(params=list(ACTIONS), ids=list(ACTIONS))
def rho(request):
    return ACTIONS[request.param]()


class _Broken(actions.Action):
    """ρ with ρ(g0) replaced by c·ρ(g0): not a homomorphism when c ≠ 1 (and g0 ≠ e)."""

    def __init__(self, rho, g0, c):
        self.rho, self.g0, self.c = rho, g0, c
        self.group, self.dim, self.shape = rho.group, rho.dim, rho.shape

    def act(self, g, x):
        y = self.rho.act(g, x)
        return self.c * y if g == self.g0 else y

    def matrix(self, g):
        return self.c * self.rho.matrix(g) if g == self.g0 else self.rho.matrix(g)


def _violation_by_matrices(rho):
    """max |ρ(g)ρ(h) − ρ(gh)| and |ρ(e) − I| entrywise over all pairs, from dense matrices."""
    G = rho.group
    M = torch.stack([rho.matrix(g).double() for g in G])
    err = float((M[G.identity.index] - torch.eye(rho.dim, dtype=torch.float64)).abs().max())
    for g, h in itertools.product(G, repeat=2):
        err = max(err, float((M[g.index] @ M[h.index] - M[(g @ h).index]).abs().max()))
    return err


def test_check_homomorphism_agrees_with_the_matrices(rho):
    """0 for every factory, and for a broken copy of it a violation of the size the dense
    matrices give: check_homomorphism works on probes, the reference on matrices."""
    assert _violation_by_matrices(rho) < 1e-5
    assert actions.check_homomorphism(rho) < 1e-6
    G = rho.group
    g0 = G.generators[0] if G.order > 1 else None
    if g0 is None:
        return
    broken = _Broken(rho, g0, 1.5)
    ref = _violation_by_matrices(broken)
    assert ref >= 0.5 - 1e-6  # ρ'(g0)ρ'(g0⁻¹) − ρ'(e) = (c − 1)I at least (c² − 1 when g0 = g0⁻¹)
    got = actions.check_homomorphism(broken, num_probes=64)
    # probes see a violation of the same order as the matrices (|Ax| ≤ ‖A‖_∞ |x|)
    assert got >= 0.5 - 1e-6 and 0.1 * ref <= got <= rho.dim * ref + 1e-6, (got, ref)


def test_matrices_multiply_like_the_group(rho):
    G = rho.group
    mats = rho.matrices()
    assert mats.shape == (G.order, rho.dim, rho.dim)
    assert_close(rho(G.identity), torch.eye(rho.dim))
    for g, h in itertools.product(G, repeat=2):
        assert_close(mats[g.index] @ mats[h.index], mats[(g @ h).index], msg=f"ρ({g})ρ({h}) ≠ ρ({g @ h})")


def test_act_agrees_with_matrix(rho):
    x = torch.randn(3, rho.dim, generator=torch.Generator().manual_seed(0))
    for g in rho.group:
        assert_close(rho.act(g, x), x @ rho(g).T)


def test_act_keeps_the_shape(rho):
    x = torch.randn(2, *rho.shape, generator=torch_generator(100))
    for g in rho.group:
        assert rho.act(g, x).shape == x.shape


def test_from_matrices_rejects_a_non_homomorphism():
    G = groups.flip()
    with pytest.raises(ValueError, match="do not define an action of Z2"):
        actions.from_matrices(G, {G["m"]: 2 * np.eye(2)})
    with pytest.raises(ValueError, match="do not define an action"):
        actions.from_matrices(G, {G["e"]: np.eye(2), G["m"]: [[0.0, 1.0], [0.0, 1.0]]})


def test_from_matrices_needs_every_generator():
    G = groups.dihedral(3)
    with pytest.raises(ValueError, match="every generator"):
        actions.from_matrices(G, {G["r"]: np.eye(2)})


def test_signed_permutation_rejects_a_non_homomorphism():
    G = groups.cyclic(3)
    bad = {G["e"]: [0, 1, 2], G["r"]: [1, 0, 2], G["r2"]: [1, 0, 2]}  # r∘r should be r2
    with pytest.raises(ValueError, match="do not define an action"):
        actions.permutation(G, bad)


def test_permutation_action_rejects_non_permutations():
    with pytest.raises(ValueError, match="permutation of 0..dim-1"):
        actions.PermutationAction(groups.flip(), [[0, 1], [0, 0]])


@pytest.mark.parametrize("axis,dim", [("horizontal", -1), ("vertical", -2)], ids=["horizontal", "vertical"])
def test_mirror_is_torch_flip(axis, dim):
    rho = images.mirror((3, 6, 7), axis)
    x = torch.randn(4, 3, 6, 7, generator=torch_generator(101))
    assert_close(rho.act(rho.group["m"], x), torch.flip(x, dims=(dim,)))
    assert_close(rho.act(rho.group["e"], x), x)


def test_mirror_rejects_unknown_axis():
    with pytest.raises(ValueError, match="axis must be"):
        images.mirror((3, 4, 4), "diagonal")


def test_image_dihedral_is_rot90_and_flip():
    rho = images.image_dihedral((3, 6, 6))
    G = rho.group
    x = torch.randn(2, 3, 6, 6, generator=torch_generator(102))
    for k in range(4):
        assert_close(rho.act(G["r"] ** k, x), torch.rot90(x, k, dims=(-2, -1)))
        # r^k s: mirror first, then rotate
        assert_close(rho.act(G["r"] ** k @ G["s"], x), torch.rot90(torch.flip(x, dims=(-1,)), k, dims=(-2, -1)))


def test_image_rotations_is_rot90():
    rho = images.image_rotations((1, 5, 5))
    x = torch.randn(3, 1, 5, 5, generator=torch_generator(103))
    for k, g in enumerate(rho.group):
        assert_close(rho.act(g, x), torch.rot90(x, k, dims=(-2, -1)))


@pytest.mark.parametrize("factory", [images.image_dihedral, images.image_rotations], ids=["D4", "C4"])
def test_rotations_need_square_images(factory):
    with pytest.raises(ValueError, match="square images"):
        factory((3, 4, 5))


def test_token_permutation_moves_token_i_to_g_of_i():
    G = groups.symmetric(4)
    rho = actions.token_permutation(G, 4, 3)
    x = torch.randn(2, 4, 3, generator=torch_generator(104))
    for g in G:
        p = G.permutations[g.index]
        y = rho.act(g, x)
        for i in range(4):
            assert_close(y[:, p[i]], x[:, i])


def test_token_permutation_needs_a_permutation_group():
    with pytest.raises(ValueError, match="permutations of 5 tokens"):
        actions.token_permutation(groups.symmetric(3), 5, 2)
    with pytest.raises(ValueError, match="permutations of"):
        actions.token_permutation(groups.cyclic(3), 3, 2)


def test_regular_representation_permutes_basis_vectors():
    G = groups.dihedral(3)
    rho = actions.regular(G)
    eye = torch.eye(G.order)
    for g, h in itertools.product(G, repeat=2):
        assert_close(rho(g) @ eye[h.index], eye[(g @ h).index])


def test_direct_sum_is_block_diagonal():
    a, b = rotation_c4(), actions.regular(groups.cyclic(4))
    s = a + b
    assert s.dim == a.dim + b.dim
    x = torch.randn(5, s.dim, generator=torch_generator(105))
    for g in s.group:
        assert_close(s(g), torch.block_diag(a(g), b(g)))
        assert_close(s.act(g, x), torch.cat([a.act(g, x[:, :2]), b.act(g, x[:, 2:])], dim=1))
    assert len((s + a).parts) == 3  # nested sums flatten


def test_direct_sum_needs_one_group():
    with pytest.raises(ValueError, match="one and the same group"):
        actions.regular(groups.cyclic(4)) + actions.regular(groups.cyclic(3))


def test_act_rejects_foreign_elements_and_shapes():
    rho = actions.regular(groups.cyclic(4))
    with pytest.raises(ValueError, match="not an element of C4"):
        rho.act(groups.cyclic(3)["r"], torch.zeros(4))
    with pytest.raises(ValueError, match="acts on vectors of shape"):
        rho.act(rho.group["r"], torch.zeros(5))


# -- equivariance checks ------------------------------------------------------------------
def test_check_equivariance_on_an_equivariant_map():
    rho = images.image_dihedral((1, 4, 4))
    x = torch.randn(6, 1, 4, 4, generator=torch.Generator().manual_seed(1))
    errors = actions.check_equivariance(torch.tanh, rho, rho, x)
    assert set(errors) == set(rho.group.elements)
    assert max(errors.values()) < 1e-6
    # an invariant map: the sum over the orbit, with the trivial action on the output
    orbit_sum = lambda z: sum(rho.act(g, z) for g in rho.group).flatten(1).sum(1, keepdim=True)  # noqa: E731
    errors = actions.check_equivariance(orbit_sum, rho, actions.trivial(rho.group, 1), x)
    assert max(errors.values()) < 1e-5


def test_check_equivariance_on_a_non_equivariant_map():
    rho = images.mirror((1, 4, 4))
    A = torch.randn(16, 16, generator=torch.Generator().manual_seed(0))
    f = lambda z: (z.flatten(1) @ A.T).reshape(z.shape)  # noqa: E731
    x = torch.randn(6, 1, 4, 4, generator=torch.Generator().manual_seed(1))
    errors = actions.check_equivariance(f, rho, rho, x)
    assert errors[rho.group.identity] < 1e-6
    assert errors[rho.group["m"]] > 0.3


def test_check_equivariance_on_given_elements_and_group_mismatch():
    rho = images.image_dihedral((1, 4, 4))
    x = torch.randn(2, 1, 4, 4, generator=torch_generator(106))
    errors = actions.check_equivariance(torch.tanh, rho, rho, x, elements=[rho.group["r"]])
    assert list(errors) == [rho.group["r"]]
    with pytest.raises(ValueError, match="same group"):
        actions.check_equivariance(torch.tanh, rho, images.mirror((1, 4, 4)), x)


# -- bad input is a clear error, never a silently wrong number (issue 16) ------------------------
def test_nan_matrices_are_rejected_naming_the_element():
    from eqlib.actions import MatrixAction, check_homomorphism, from_matrices
    from eqlib.groups import flip

    Z2 = flip()
    with pytest.raises(ValueError, match=r"matrices\[m\] must be finite"):
        from_matrices(Z2, {Z2["m"]: [[float("nan"), 0.0], [0.0, 1.0]]})
    # check_homomorphism used to return 0.0 here: max(0.0, nan) dropped the NaN
    rho = MatrixAction.__new__(MatrixAction)
    rho.group, rho.dim, rho.shape = Z2, 2, (2,)
    rho._matrices = torch.stack([torch.eye(2), torch.tensor([[float("nan"), 0.0], [0.0, 1.0]])])
    with pytest.raises(ValueError, match=r"rho\(m\) is not finite"):
        check_homomorphism(rho)


def test_from_matrices_empty_or_ragged_is_a_clear_error():
    from eqlib.actions import from_matrices
    from eqlib.groups import cyclic

    G = cyclic(3)
    with pytest.raises(ValueError, match="got none"):
        from_matrices(G, {})
    with pytest.raises(ValueError, match=r"matrices\[r2\] must be a 2x2 matrix"):
        from_matrices(G, {G["e"]: torch.eye(2), G["r"]: torch.eye(2), G["r2"]: torch.eye(3)})
    with pytest.raises(TypeError, match="matrices must be a mapping"):
        from_matrices(G, [torch.eye(2)])


@pytest.mark.parametrize("points", [[[0, 1], [1, 1]], [[0, 1], [7, 3]], [[0, 1], [1, -1]]])
def test_permutation_rejects_non_permutations(points):
    from eqlib.actions import permutation
    from eqlib.groups import flip

    with pytest.raises(ValueError, match=r"points\[m\] = .* is not a permutation of 0..1"):
        permutation(flip(), np.array(points))


def test_checks_on_empty_or_nan_data_fail_loudly():
    from eqlib.actions import check_equivariance, check_homomorphism, regular
    from eqlib.images import mirror
    from eqlib.groups import cyclic

    rho = regular(cyclic(3))
    x = torch.randn(4, 3, generator=torch_generator(107))
    with pytest.raises(ValueError, match="x must not be empty"):
        check_equivariance(lambda v: v, rho, rho, x[:0])
    with pytest.raises(ValueError, match=r"f\(x\) must be finite"):
        check_equivariance(lambda v: v * float("nan"), rho, rho, x)
    with pytest.raises(ValueError, match=r"num_probes must be an integer in 1\.\.100000, got 0"):
        check_homomorphism(rho, num_probes=0)
    with pytest.raises(ValueError, match=r"shape must be a tuple of integers >= 1"):
        mirror((3, 0, 4))
    with pytest.raises(ValueError, match=r"dim must be an integer in 1\.\."):
        from eqlib.actions import trivial
        trivial(cyclic(2), dim=0)
