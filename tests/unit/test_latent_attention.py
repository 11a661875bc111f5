"""Latent actions of attention: planted head permutations, token permutations, head products."""
import copy

import numpy as np
import pytest
import torch

from eqlib.actions import PermutationAction, token_permutation
from eqlib.actions import check_equivariance
from eqlib.groups import cyclic, from_permutations, symmetric
from eqlib.images import patchify, unpatchify
from eqlib.latent.attention import (TokenAction, head_products, patch_mirror_action,
                                    plant_attention_equivariant, recover_attention_action,
                                    recover_token_permutation)
from eqlib.models import AttentionNetwork, MultiHeadAttention
from eqlib.symmetries import apply_attention_symmetry, sample_attention_symmetry
from eqlib.seeds import torch_generator

SHAPE, PATCH = (1, 4, 6), 2  # a 2×3 grid of 2×2 patches


def c3_action():
    G = from_permutations([[1, 2, 0]], name="C3")
    feat = PermutationAction.from_generators(G, {G.generators[0]: [1, 2, 0, 4, 5, 3]})
    return TokenAction(G, feat)


def test_patch_mirror_matches_image_mirror():
    act = patch_mirror_action(SHAPE, PATCH)
    x = torch.randn(3, *SHAPE, generator=torch_generator(100))
    m = act.group["m"]
    torch.testing.assert_close(patchify(torch.flip(x, dims=(-1,)), PATCH), act.act(m, patchify(x, PATCH)))
    torch.testing.assert_close(unpatchify(patchify(x, PATCH), SHAPE, PATCH), x)
    assert act.token_permutation(m).tolist() == [2, 1, 0, 5, 4, 3]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_mirror_swap_recovered_exactly(seed):
    act = patch_mirror_action(SHAPE, PATCH)
    tau = np.array([[0, 1, 2, 3], [1, 0, 2, 3]])  # heads 0 and 1 swap under the mirror
    planted = plant_attention_equivariant(act, tau, d_k=4, d_v=4, seed=seed)
    x = patchify(torch.randn(8, *SHAPE, generator=torch.Generator().manual_seed(seed)), PATCH)
    res = recover_attention_action(planted.layer, act, x)
    assert res.equivariant, res.summary()
    assert res.head_perm["m"].tolist() == planted.head_perm["m"].tolist()
    assert res.head_perm_maps["m"].tolist() == planted.head_perm["m"].tolist()
    assert sorted(np.flatnonzero(res.head_perm["m"] != np.arange(4)).tolist()) != []  # a genuine swap
    assert res.token_perm["m"].tolist() == [2, 1, 0, 5, 4, 3]
    assert res.worst_residual() < 1e-4


def test_planted_three_cycle_and_homomorphism():
    act = c3_action()
    tau = np.stack([np.concatenate([p, [3]]) for p in act.group.permutations])
    planted = plant_attention_equivariant(act, tau, d_k=3, d_v=3, seed=4)
    res = recover_attention_action(planted.layer, act, torch.randn(6, 3, 6, generator=torch_generator(101)))
    assert res.equivariant, res.summary()
    for name, t in planted.head_perm.items():
        assert res.head_perm[name].tolist() == t.tolist()
    assert res.is_homomorphism()


def test_recovered_changes_of_basis_undo_the_hiding_symmetry():
    act = c3_action()
    tau = np.tile(np.arange(3), (3, 1))  # every head fixed
    planted = plant_attention_equivariant(act, tau, d_k=3, d_v=3, hide=False, seed=2)
    res = recover_attention_action(planted.layer, act, torch.randn(4, 3, 6, generator=torch_generator(102)))
    assert res.basis_residual["(1 2 0)"] < 1e-4


def test_token_permutation_recovered_from_maps():
    layer = MultiHeadAttention(5, 3, 3, heads=2, seed=3)
    G = symmetric(5)
    act = token_permutation(G, 5, 3)
    x = torch.randn(4, 5, 3, generator=torch_generator(103))
    for g in G.sample(5, seed=1):
        pi, resid = recover_token_permutation(layer.attention_maps(x), layer.attention_maps(act.act(g, x)))
        assert pi.tolist() == G.permutations[g.index].tolist()
        assert resid < 1e-5


def test_head_products_invariant_under_attention_symmetries():
    layer = MultiHeadAttention(4, 6, 5, heads=3, d_k=2, d_v=2, seed=0)
    sym = sample_attention_symmetry(layer, seed=7)
    moved = apply_attention_symmetry(layer, sym)
    Q, O = head_products(layer)
    Q2, O2 = head_products(moved)
    torch.testing.assert_close(Q2, Q[sym.perm], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(O2, O[sym.perm], atol=1e-5, rtol=1e-4)
    assert (moved.W_Q - layer.W_Q[sym.perm]).abs().max() > 1e-2  # the factors did change


def test_random_layer_reported_not_equivariant():
    act = patch_mirror_action(SHAPE, PATCH)
    layer = MultiHeadAttention(6, 4, 4, heads=4, positional=True, seed=1)
    res = recover_attention_action(layer, act, patchify(torch.randn(4, *SHAPE, generator=torch_generator(104)), PATCH))
    assert not res.equivariant
    assert "NOT equivariant" in res.summary()
    assert res.output_residual["m"] > 0.1


def test_without_positional_encodings_equivariant_to_all_token_permutations():
    net = AttentionNetwork(4, [3, 5, 2], heads=2, positional=False, seed=0)
    G = symmetric(4)
    errs = check_equivariance(net, token_permutation(G, 4, 3), token_permutation(G, 4, 2), torch.randn(6, 4, 3,
            generator=torch_generator(105)))
    assert max(errs.values()) < 1e-5
    with_p = AttentionNetwork(4, [3, 5, 2], heads=2, positional=True, seed=0)
    errs = check_equivariance(with_p, token_permutation(G, 4, 3), token_permutation(G, 4, 2), torch.randn(6, 4, 3,
            generator=torch_generator(106)))
    assert max(errs.values()) > 1e-2


def test_pure_token_permutation_forces_invariant_positions():
    """With no action on features, an equivariant planted layer has P constant on orbits."""
    G = cyclic(4)
    G4 = from_permutations([[1, 2, 3, 0]], name="C4")
    act = TokenAction(G4, None, token_dim=3)
    planted = plant_attention_equivariant(act, np.tile(np.arange(2), (4, 1)), d_out=3, d_k=2, d_v=2, hide=True, seed=0)
    P = planted.layer.P
    torch.testing.assert_close(P, P[:1].expand_as(P))
    res = recover_attention_action(planted.layer, act, torch.randn(3, 4, 3, generator=torch_generator(107)))
    assert res.equivariant, res.summary()
    assert G.order == 4


def test_bad_inputs():
    act = patch_mirror_action(SHAPE, PATCH)
    with pytest.raises(ValueError, match="homomorphism"):
        plant_attention_equivariant(act, np.array([[1, 0], [0, 1]]))
    with pytest.raises(ValueError, match="shape"):
        recover_attention_action(MultiHeadAttention(6, 4, 4, 2), act, torch.randn(2, 5, 4, generator=torch_generator(108)))
    with pytest.raises(ValueError, match="multiple"):
        patch_mirror_action((1, 5, 6), 2)


def test_two_layer_network_layer_by_layer():
    from eqlib.actions import permutation
    from eqlib.latent.attention import recover_attention_network
    from eqlib.models import Model

    act = patch_mirror_action((1, 2, 4), 2)                       # 2 tokens of dimension 4
    G = act.group
    hidden = permutation(G, {G["e"]: [0, 1, 2, 3], G["m"]: [1, 0, 2, 3]})  # an action on V_1 = R^4
    first = plant_attention_equivariant(act, np.array([[0, 1, 2], [1, 0, 2]]), d_out=4, out_features=hidden,
                                        d_k=2, d_v=2, seed=0)
    second = plant_attention_equivariant(TokenAction(G, hidden, token_perms=act.perms), np.array([[0, 1], [1, 0]]),
                                         d_out=4, out_features=act.feature_action, d_k=2, d_v=2,
                                         positional=False, seed=1)
    net = Model([first.layer, second.layer])
    x = patchify(torch.randn(16, 1, 2, 4, generator=torch_generator(109)), 2)
    results = recover_attention_network(net, act, x)
    assert all(r.equivariant for r in results), "\n".join(r.summary() for r in results)
    assert results[0].head_perm["m"].tolist() == first.head_perm["m"].tolist()
    assert results[1].head_perm["m"].tolist() == second.head_perm["m"].tolist()
    # a hidden space with a direction no head writes to: the fit is refused, not made up
    wide = permutation(G, {G["e"]: list(range(6)), G["m"]: [1, 0, 3, 2, 4, 5]})
    degenerate = plant_attention_equivariant(act, np.array([[0, 1, 2], [1, 0, 2]]), d_out=6, out_features=wide,
                                             d_k=2, d_v=2, seed=0)
    tail = plant_attention_equivariant(TokenAction(G, wide, token_perms=act.perms), np.array([[0], [0]]), d_out=4,
                                       out_features=act.feature_action, d_k=2, d_v=2, positional=False, seed=1)
    with pytest.raises(ValueError, match="unused directions"):
        recover_attention_network(Model([degenerate.layer, tail.layer]), act, x)


def _planted_two_layers(seed):
    from eqlib.actions import permutation
    from eqlib.models import Model

    act = patch_mirror_action(SHAPE, PATCH)                      # 6 tokens of dimension 4
    G = act.group
    hidden = permutation(G, {G["e"]: list(range(6)), G["m"]: [1, 0, 3, 2, 4, 5]})
    first = plant_attention_equivariant(act, np.array([[0, 1, 2], [1, 0, 2]]), d_out=6, out_features=hidden,
                                        d_k=3, d_v=3, seed=seed)
    second = plant_attention_equivariant(TokenAction(G, hidden, token_perms=act.perms),
                                         np.array([[0, 1, 2, 3], [1, 0, 3, 2]]), d_out=4,
                                         out_features=act.feature_action, d_k=3, d_v=3, positional=True,
                                         seed=seed + 1)
    return act, hidden, first, second, Model([first.layer, second.layer])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_deep_attention_hidden_by_feature_basis_recovered_layer_by_layer(seed):
    from eqlib.latent.attention import hide_attention_network, recover_attention_network

    act, hidden, first, second, net = _planted_two_layers(seed)
    hid, Ms = hide_attention_network(net, seed=seed + 5, heads=False)
    x = patchify(torch.randn(12, *SHAPE, generator=torch.Generator().manual_seed(seed)), PATCH)
    with torch.no_grad():
        torch.testing.assert_close(hid(x), net(x), atol=1e-5, rtol=1e-4)       # same function
        assert (hid.layers[1].W_Q - net.layers[1].W_Q).abs().max() > 1e-2    # other parameters
    reports = recover_attention_network(hid, act, x)
    m = act.group["m"]
    for r, planted in zip(reports, (first, second)):
        assert r.equivariant, r.summary()
        assert r.is_homomorphism() and r.feature_homomorphism_error() < 1e-4
        assert r.head_perm["m"].tolist() == planted.head_perm["m"].tolist()
        assert r.token_perm["m"].tolist() == act.token_permutation(m).tolist()
        assert r.head_space_residual["m"] < 1e-4
    # the fitted action on V_1 is the planted one in the hidden basis: M S M^{-1}
    S1 = reports[0].S["m"]
    torch.testing.assert_close(S1, Ms[0] @ hidden.matrix(m) @ torch.linalg.inv(Ms[0]), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(S1, hidden.matrix(m), atol=1e-2)              # hidden, not a permutation


def test_hide_attention_network_with_head_symmetries_keeps_function():
    from eqlib.latent.attention import hide_attention_network, recover_attention_network

    act, _, first, second, net = _planted_two_layers(3)
    hid, Ms = hide_attention_network(net, seed=9)
    x = patchify(torch.randn(12, *SHAPE, generator=torch.Generator().manual_seed(3)), PATCH)
    with torch.no_grad():
        torch.testing.assert_close(hid(x), net(x), atol=1e-5, rtol=1e-4)
    reports = recover_attention_network(hid, act, x)
    assert all(r.equivariant for r in reports) and len(Ms) == 1
    # hiding conjugates τ: the cycle type (number of fixed heads) is kept
    for r, planted in zip(reports, (first, second)):
        assert sorted(np.bincount(r.head_perm["m"] == np.arange(len(r.head_perm["m"])), minlength=2)) == sorted(
            np.bincount(planted.head_perm["m"] == np.arange(len(planted.head_perm["m"])), minlength=2))
    with pytest.raises(TypeError, match="MultiHeadAttention"):
        hide_attention_network(MultiHeadAttention(6, 4, 4, 2))


def test_head_space_action_fails_for_a_random_layer():
    act = patch_mirror_action(SHAPE, PATCH)
    layer = MultiHeadAttention(6, 4, 4, heads=3, d_k=2, d_v=2, positional=True, seed=4)
    x = patchify(torch.randn(6, *SHAPE, generator=torch_generator(110)), PATCH)
    res = recover_attention_action(layer, act, x)
    assert not res.equivariant and res.head_space_residual["m"] > 1e-2
    assert res.feature_homomorphism_error() < 1e-6                         # the given S is an action


def test_results_are_keyed_by_element_and_names_still_work():
    from eqlib.latent.attention import ByElement
    from eqlib.groups import flip

    G = flip()
    d = ByElement(G, {"m": 1})
    d[G.identity] = 0
    assert set(d) == set(G.elements) and d["m"] == d[G["m"]] == 1 and "e" in d and "x" not in d
    with pytest.raises(TypeError, match="keys must be elements"):
        d[3] = 1


# -- regression: R_g = I with U_g a swap of output features; degenerate heads; ties ---------
def pairs_action(token_dim=3):
    """Z2 swapping 4 tokens pairwise, features untouched (R_g = I)."""
    return TokenAction(from_permutations([[1, 0, 3, 2]], name="Z2"), None, token_dim=token_dim)


def swap_features(G, dim, swapped=(0, 1)):
    from eqlib.actions import permutation

    p = list(range(dim))
    p[swapped[0]], p[swapped[1]] = swapped[1], swapped[0]
    return permutation(G, {g: p if g != G.identity else list(range(dim)) for g in G})


def conjugated(action, seed):
    """The action M ρ(g) M^{-1} for a random well-conditioned M: not orthogonal, so
    R^{-ᵀ} ≠ R and a transposition slip in a formula shows."""
    from eqlib.actions import MatrixAction
    from eqlib.symmetries import random_invertible

    M = random_invertible(1, action.dim, torch.Generator().manual_seed(seed), 0.5)[0]
    mats = torch.stack([M @ action.matrix(g) @ torch.linalg.inv(M) for g in action.group])
    return MatrixAction(action.group, mats)


def _assert_recovered(res, planted, ident_tol=1e-5, duplicates=False):
    G = res.group
    e = G.identity
    assert res.equivariant, res.summary()
    assert res.is_homomorphism()
    # g = e: the identity permutation and residuals at rounding level, always
    assert res.head_perm[e].tolist() == list(range(len(res.head_perm[e])))
    assert res.head_perm_maps[e].tolist() == res.head_perm[e].tolist()
    assert max(float(res.head_residual[e].max()), res.basis_residual[e], res.maps_residual[e],
               res.output_residual[e], res.head_space_residual[e]) < ident_tol, res.summary()
    for g in G:  # where both readings of τ agree, so do the two maps residuals
        if res.head_perm_maps[g].tolist() == res.head_perm[g].tolist():
            assert res.maps_residual_maps[g] == pytest.approx(res.maps_residual[g], abs=1e-6)
        # no head permutation does better than the best one, τ included
        assert res.maps_residual_best[g] <= min(res.maps_residual[g], res.maps_residual_maps[g]) + 1e-6
    for g in G:
        moved = np.flatnonzero(planted.head_perm[g] != np.arange(len(planted.head_perm[g])))
        if duplicates and len(moved):
            # heads that trade places are exact copies (R_g = U_g = I): τ_g is not determined;
            # the report must name the tie, and both matchings must agree on a valid τ_g
            assert sorted(moved.tolist()) in res.head_ties[g], res.summary()
            assert res.head_perm_maps[g].tolist() == res.head_perm[g].tolist()
            assert res.head_perm[g].tolist() in (planted.head_perm[g].tolist(), list(range(len(moved) + 1)))
            continue
        assert res.head_perm[g].tolist() == planted.head_perm[g].tolist(), (g.name, res.summary())
        assert res.head_perm_maps[g].tolist() == planted.head_perm[g].tolist(), (g.name, res.summary())
        assert res.head_ties[g] == [] or duplicates


def test_reviewer_case_identity_features_swapped_outputs():
    """R_g = I, U_g swaps output features 0 and 1: the two heads that trade places have
    equal Q products (so identical attention maps) and O products differing by U_g. The
    layer is equivariant (though not identifiable up to head symmetries, see the next
    test); the recovery must say so, with a zero residual at g = e, and the activations
    must name the planted head permutation, not the identity."""
    act = pairs_action()
    G = act.group
    swap, e = G.generators[0], G.identity
    swap_out = swap_features(G, 3)
    x = torch.randn(4, 4, 3, generator=torch.Generator().manual_seed(2))
    for seed in range(5):
        planted = plant_attention_equivariant(act, np.array([[0, 1, 2], [1, 0, 2]]), d_out=3,
                                              out_features=swap_out, d_k=2, d_v=2, seed=seed)
        layer = planted.layer
        with torch.no_grad():  # equivariant, checked directly
            torch.testing.assert_close(layer(act.act(swap, x)), layer(x)[:, [1, 0, 3, 2]][..., [1, 0, 2]],
                                       atol=1e-5, rtol=1e-5)
            maps = layer.attention_maps(x)
        for w in (layer.W_Q, layer.W_K, layer.W_V, layer.W_O):  # no degenerate head planted
            assert torch.linalg.matrix_rank(w.detach()).tolist() == [2, 2, 2]
        h, h2 = np.flatnonzero(planted.head_perm[swap] != np.arange(3))
        torch.testing.assert_close(maps[:, h], maps[:, h2], atol=1e-6, rtol=1e-5)  # maps cannot tell them apart
        res = recover_attention_action(layer, act, x, out_features=swap_out)
        _assert_recovered(res, planted)
        assert res.basis_residual[e] < 1e-6 and res.basis_residual[swap] < 1e-5
        assert res.head_ties[swap] == []          # the outputs told the two heads apart
        assert "EQUIVARIANT" in res.summary()


def test_equal_q_products_are_not_identifiable():
    """Chapter 8, ch08-prop-duplicates: two heads with equal Q products (here the layer
    above, R_g = I, U_g a swap, whose traded heads have O products that differ) admit the
    family O^h + tD, O^h' − tD (columns of D in col(O^h), rows in row(O^h')): every new
    product has rank ≤ d_v, the function is kept, and the new O^h is none of the old
    O^j, so no head symmetry relates the two parameters."""
    act = pairs_action()
    swap = act.group.generators[0]
    swap_out = swap_features(act.group, 3)
    x = torch.randn(8, 4, 3, generator=torch.Generator().manual_seed(2))
    for seed in range(3):
        planted = plant_attention_equivariant(act, np.array([[0, 1, 2], [1, 0, 2]]), d_out=3,
                                              out_features=swap_out, d_k=2, d_v=2, seed=seed)
        layer = planted.layer
        h, h2 = np.flatnonzero(planted.head_perm[swap] != np.arange(3))
        Q, O = head_products(layer)
        torch.testing.assert_close(Q[h], Q[h2], atol=1e-5, rtol=1e-5)
        assert float((O[h] - O[h2]).norm()) > 1e-2          # not duplicates
        D = O[h].norm() * torch.outer(torch.linalg.svd(O[h]).U[:, 0], torch.linalg.svd(O[h2]).Vh[0])
        for t in (0.5, 2.0):
            other = copy.deepcopy(layer)
            with torch.no_grad():
                for j, new in ((h, O[h] + t * D), (h2, O[h2] - t * D)):
                    U, sv, Vh = torch.linalg.svd(new)
                    other.W_V[j].copy_(U[:, :2] * sv[:2])
                    other.W_O[j].copy_(Vh[:2])
                torch.testing.assert_close(other(x), layer(x), atol=1e-5, rtol=1e-5)
            _, O2 = head_products(other)
            torch.testing.assert_close(O2[h], O[h] + t * D, atol=1e-5, rtol=1e-5)
            assert min(float((O2[h] - O[j]).norm()) for j in range(3)) > 0.1


def _cases():
    """(name, action_in, head_perms, d_out, out_features) over R_g = I and R_g ≠ I,
    orthogonal and not, with the default and with explicit output actions."""
    pairs = pairs_action()
    Z2 = pairs.group
    swap2 = np.array([[0, 1, 2], [1, 0, 2]])
    c3 = c3_action()
    tau3 = np.stack([np.concatenate([p, [3]]) for p in c3.group.permutations])
    mirror = patch_mirror_action(SHAPE, PATCH)
    swapm = np.array([[0, 1, 2, 3], [1, 0, 2, 3]])
    from eqlib.actions import trivial

    oblique = conjugated(swap_features(Z2, 3, (1, 2)), seed=11)
    return [
        ("R=I, S=I", pairs, swap2, 3, None),
        ("R=I, S swap", pairs, swap2, 3, swap_features(Z2, 3)),
        ("R=I, S oblique", pairs, swap2, 4, conjugated(swap_features(Z2, 4), seed=12)),
        ("R oblique, S default", TokenAction(Z2, oblique, token_perms=pairs.perms), swap2, 3, None),
        ("R oblique, S oblique", TokenAction(Z2, oblique, token_perms=pairs.perms), swap2, 4,
         conjugated(swap_features(Z2, 4, (0, 3)), seed=13)),
        ("C3 perm, S default", c3, tau3, 6, None),
        ("C3 perm, S trivial", c3, tau3, 2, trivial(c3.group, 2)),
        ("mirror, S default", mirror, swapm, 4, None),
        ("mirror, S swap", mirror, swapm, 3, swap_features(mirror.group, 3)),
    ]


@pytest.mark.parametrize("case", range(len(_cases())), ids=[c[0] for c in _cases()])
def test_random_planted_layers_recovered_with_zero_identity_residual(case):
    name, act, tau, d_out, out = _cases()[case]
    n, d = act.shape
    for seed in range(4):
        planted = plant_attention_equivariant(act, tau, d_out=d_out, out_features=out, d_k=2, d_v=2, seed=seed)
        x = torch.randn(6, n, d, generator=torch.Generator().manual_seed(100 + seed))
        res = recover_attention_action(planted.layer, act, x, out_features=planted.out_features)
        _assert_recovered(res, planted, duplicates=name == "R=I, S=I")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identity_element_gives_zero_residuals_on_any_layer(seed):
    """g = e is a symmetry of every layer: whatever θ, its residuals are 0 and τ_e = id."""
    pairs = pairs_action()
    act = TokenAction(pairs.group, conjugated(swap_features(pairs.group, 3), seed), token_perms=pairs.perms)
    e = act.group.identity
    for positional in (False, True):
        layer = MultiHeadAttention(4, 3, 4, heads=3, d_k=2, d_v=3, positional=positional, seed=seed)
        out = conjugated(swap_features(act.group, 4), seed + 1)
        res = recover_attention_action(layer, act, torch.randn(5, 4, 3, generator=torch_generator(111)), out_features=out)
        assert res.head_perm[e].tolist() == [0, 1, 2] == res.head_perm_maps[e].tolist()
        assert max(float(res.head_residual[e].max()), res.basis_residual[e], res.maps_residual[e],
                   res.output_residual[e], res.head_space_residual[e], res.positional_residual[e] or 0) < 1e-6
        assert not res.equivariant                 # but a random layer is not equivariant


@pytest.mark.parametrize("seed", [0, 1])
def test_transport_is_the_adjunction_for_oblique_actions(seed):
    """f(X; g·θ) = g·f(g^{-1}·X; θ) with non-orthogonal R_g and U_g (so R^{-ᵀ} ≠ R)."""
    import copy

    from eqlib.latent.attention import transport_parameters

    pairs = pairs_action()
    G = pairs.group
    act = TokenAction(G, conjugated(swap_features(G, 3), seed), token_perms=pairs.perms)
    out = conjugated(swap_features(G, 4, (2, 3)), seed + 7)
    act_out = TokenAction(G, out, token_perms=pairs.perms)
    layer = MultiHeadAttention(4, 3, 4, heads=2, d_k=2, d_v=3, positional=True, seed=seed)
    x = torch.randn(5, 4, 3, generator=torch.Generator().manual_seed(seed))
    for g in G:
        moved = transport_parameters(layer, act, g, out.matrix(g))
        other = copy.deepcopy(layer)
        with torch.no_grad():
            for k, v in moved.items():
                getattr(other, k).copy_(v)
            torch.testing.assert_close(other(x), act_out.act(g, layer(act.act(~g, x))), atol=1e-5, rtol=1e-4)


def test_duplicate_heads_are_reported_as_ties():
    """Two identical heads: neither the weights nor the activations can tell them apart;
    the report lists them as a tie and the two matchings agree."""
    G = symmetric(4)
    act = TokenAction(G, None, token_dim=3)
    layer = MultiHeadAttention(4, 3, 3, heads=3, d_k=2, d_v=2, positional=False, seed=0)
    with torch.no_grad():
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            getattr(layer, name)[2] = getattr(layer, name)[0]
    res = recover_attention_action(layer, act, torch.randn(4, 4, 3, generator=torch_generator(112)))
    assert res.equivariant, res.summary()
    for g in G:
        assert res.head_ties[g] == [[0, 2]]
        assert res.head_perm_maps[g].tolist() == res.head_perm[g].tolist()
        assert res.head_perm[g][1] == 1
    assert "look alike" in res.summary()


def test_bad_inputs_to_transport_and_recovery():
    from eqlib.latent.attention import match_heads, transport_parameters

    act = pairs_action()
    g = act.group.generators[0]
    layer = MultiHeadAttention(4, 3, 3, heads=2, seed=0)
    with pytest.raises(ValueError, match=r"out_features must be the matrix U_g of shape \(3, 3\)"):
        transport_parameters(layer, act, g, torch.eye(2))
    with pytest.raises(TypeError, match="out_features must be a torch.Tensor"):
        match_heads(layer, act, g, [[1, 0, 0]])
    with pytest.raises(TypeError, match="action_in must be a TokenAction"):
        recover_attention_action(layer, swap_features(act.group, 3), torch.randn(2, 4, 3, generator=torch_generator(113)))
    with pytest.raises(ValueError, match="action_in acts on"):
        recover_attention_action(MultiHeadAttention(4, 5, 3, heads=2), act, torch.randn(2, 4, 5,
                generator=torch_generator(114)))
    with pytest.raises(TypeError, match="out_features must be an Action"):
        recover_attention_action(layer, act, torch.randn(2, 4, 3, generator=torch_generator(115)), out_features=torch.eye(3))
    with pytest.raises(ValueError, match="out_features must be an action of Z2 on R\\^3"):
        recover_attention_action(layer, act, torch.randn(2, 4, 3, generator=torch_generator(116)),
                                 out_features=swap_features(act.group, 4))
    with pytest.raises(ValueError, match="tol must be"):
        recover_attention_action(layer, act, torch.randn(2, 4, 3, generator=torch_generator(117)), tol=0)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        recover_attention_action(layer, act, np.zeros((2, 4, 3)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_degenerate_heads_do_not_spoil_the_basis_fit(seed):
    """A head whose W_Q, W_K, W_V have rank 1 < d_k = d_v = 2 (then hidden by random
    per-head bases): W_Q alone does not determine E_h, and fitting it alone gave a
    singular E_h and a basis residual of order 1 even for g = e. Every layer without
    positional encodings is S_4-equivariant with τ_g = id, so the report must say so."""
    G = symmetric(4)
    act = TokenAction(G, None, token_dim=3)
    layer = MultiHeadAttention(4, 3, 3, heads=2, d_k=2, d_v=2, positional=False, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name in ("W_Q", "W_K", "W_V"):
            w = getattr(layer, name)
            w[0] = w[0][:, :1] @ torch.randn(1, 2, generator=gen)     # rank 1
    layer = apply_attention_symmetry(layer, sample_attention_symmetry(layer, seed=seed))
    assert torch.linalg.matrix_rank(layer.W_Q.detach()).tolist().count(1) == 1
    res = recover_attention_action(layer, act, torch.randn(4, 4, 3, generator=gen))
    assert res.equivariant, res.summary()
    assert max(res.basis_residual.values()) < 1e-5
    assert all(torch.linalg.matrix_rank(a).tolist() == [2, 2] for a in res.A.values())  # invertible E_h


# -- the partner-basis fit: structured (Sylvester) solve against the dense Kronecker SVD ----
def _partner_system(seed, H, m, p, d, ranks=None, noise=0.0):
    """W1, W1g = W1 C (+ noise), W2, W2g = W2 C^{-ᵀ} for a planted well-conditioned C per
    head; with ``ranks`` = (r1, r2), head 0's W1 has rank r1 and W2g rank r2 (None: full),
    so that the joint system leaves C free on ker W1 ⊗ ker W2g, (d − r1)(d − r2)
    directions."""
    from eqlib.symmetries import random_invertible

    gen = torch.Generator().manual_seed(seed)
    W1 = torch.randn(H, m, d, generator=gen, dtype=torch.float64)
    W2 = torch.randn(H, p, d, generator=gen, dtype=torch.float64)
    C = random_invertible(H, d, gen, 0.5).double()
    W2g = W2 @ torch.linalg.inv(C).mT
    if ranks is not None:
        r1, r2 = (d if r is None else r for r in ranks)
        b1 = torch.linalg.qr(torch.randn(d, r1, generator=gen, dtype=torch.float64))[0]
        b2 = torch.linalg.qr(torch.randn(d, r2, generator=gen, dtype=torch.float64))[0]
        W1[0] = W1[0] @ b1 @ b1.T
        W2g[0] = W2g[0] @ b2 @ b2.T
        W2[0] = W2g[0] @ C[0].T
    W1g = W1 @ C + noise * torch.randn(H, m, d, generator=gen, dtype=torch.float64)
    return (W1, W1g, W2, W2g), C


PARTNER_CASES = {  # (H, m, p, d, (rank of W1, rank of W2g) of head 0, noise)
    "full rank, exact": (3, 6, 6, 4, None, 0.0),
    "full rank, noisy": (2, 48, 48, 12, None, 0.1),
    "chapter size (d_in 48, 6 heads)": (6, 48, 48, 8, None, 0.0),
    "d = 16, noisy": (2, 32, 32, 16, None, 0.01),
    "W1 rank 1 of 2, W2g rank 1": (2, 3, 3, 2, (1, 1), 0.0),
    "W1 rank 3 of 6, W2g rank 3": (2, 8, 8, 6, (3, 3), 0.0),
    "W1 rank 3 of 6, W2g rank 4, noisy": (2, 8, 8, 6, (3, 4), 0.05),
    "W1 rank 2 of 5, W2g full (unique)": (2, 7, 5, 5, (2, None), 0.0),
    "m + p < d": (2, 2, 1, 5, None, 0.0),
}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("case", list(PARTNER_CASES))
def test_structured_partner_basis_matches_the_dense_solve(case, seed):
    """The Sylvester/SVD solve returns the dense Kronecker SVD's C (the same minimum-norm
    solution, the same free directions and candidates on degenerate heads) and the same
    residual, to rounding."""
    from eqlib.latent.attention.recover import _fit_partner_basis, _fit_partner_basis_dense

    H, m, p, d, ranks, noise = PARTNER_CASES[case]
    args, _ = _partner_system(seed, H, m, p, d, ranks, noise)
    C, err = _fit_partner_basis(*args)
    C_ref, err_ref = _fit_partner_basis_dense(*args)
    assert C.dtype == C_ref.dtype == torch.float64 and C.shape == (H, d, d)
    torch.testing.assert_close(C, C_ref, atol=1e-9 * max(1.0, float(C_ref.abs().max())), rtol=0)
    assert err == pytest.approx(err_ref, abs=1e-10)
    assert np.isfinite(err) and (err < 1e-10 if noise == 0 else err < 10 * noise)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_structured_partner_basis_returns_the_planted_basis(seed):
    """A unique solution (full-rank heads) is the planted C, at the sizes the CIFAR
    attention test uses (d_in = 192, d_k = 48), where the dense system would need
    18,432 × 2,304 float64 per head."""
    from eqlib.latent.attention.recover import _fit_partner_basis

    args, C_true = _partner_system(seed, 2, 192, 192, 48)
    C, err = _fit_partner_basis(*(a.float() for a in args))
    assert C.dtype == torch.float32 and err < 1e-5
    torch.testing.assert_close(C.double(), C_true, atol=1e-4, rtol=1e-4)


def test_partner_basis_degenerate_edge_cases_agree_with_the_dense_solve():
    """All-zero factors (everything free: I is chosen, as before); a system whose only
    solution is singular (reported ∞ by both); and bad shapes (ValueError)."""
    from eqlib.latent.attention.recover import _fit_partner_basis, _fit_partner_basis_dense

    z = torch.zeros(1, 3, 4, dtype=torch.float64)
    for fit in (_fit_partner_basis, _fit_partner_basis_dense):
        C, err = fit(z, z, z, z)
        torch.testing.assert_close(C, torch.eye(4, dtype=torch.float64)[None])
        assert err == 0
    eye = torch.eye(3, dtype=torch.float64)[None]
    singular = torch.diag(torch.tensor([1.0, 2.0, 0.0], dtype=torch.float64))[None]
    W2 = torch.zeros(1, 2, 3, dtype=torch.float64)
    assert _fit_partner_basis(eye, singular, W2, W2)[1] == float("inf")
    assert _fit_partner_basis_dense(eye, singular, W2, W2)[1] == float("inf")
    torch.testing.assert_close(_fit_partner_basis(eye, singular, W2, W2)[0], singular)
    with pytest.raises(ValueError, match="partner-basis fit needs"):
        _fit_partner_basis(eye, eye, torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="partner-basis fit needs"):
        _fit_partner_basis(eye[0], eye[0], W2[0], W2[0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovery_is_unchanged_by_the_structured_solve(seed, monkeypatch):
    """The whole recovery, with the dense solver swapped in, gives the same E_h, F_h and
    residuals, on planted layers and on a layer with a degenerate head."""
    import eqlib.latent.attention.recover as attention

    act = patch_mirror_action(SHAPE, PATCH)
    planted = plant_attention_equivariant(act, np.array([[0, 1, 2, 3], [1, 0, 2, 3]]), d_k=4, d_v=4, seed=seed)
    G = symmetric(4)
    flat = TokenAction(G, None, token_dim=3)
    layer = MultiHeadAttention(4, 3, 3, heads=2, d_k=2, d_v=2, positional=False, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name in ("W_Q", "W_K", "W_V"):
            w = getattr(layer, name)
            w[0] = w[0][:, :1] @ torch.randn(1, 2, generator=gen)     # a degenerate head
    layer = apply_attention_symmetry(layer, sample_attention_symmetry(layer, seed=seed))
    for lay, a, x in ((planted.layer, act, patchify(torch.randn(6, *SHAPE, generator=gen), PATCH)),
                      (layer, flat, torch.randn(4, 4, 3, generator=gen))):
        res = recover_attention_action(lay, a, x)
        with monkeypatch.context() as mp:
            mp.setattr(attention, "_fit_partner_basis", attention._fit_partner_basis_dense)
            ref = recover_attention_action(lay, a, x)
        assert res.equivariant and ref.equivariant, (res.summary(), ref.summary())
        for g in a.group:
            torch.testing.assert_close(res.A[g], ref.A[g], atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(res.B[g], ref.B[g], atol=1e-4, rtol=1e-4)
            assert res.basis_residual[g] == pytest.approx(ref.basis_residual[g], abs=1e-5)
            assert res.head_perm[g].tolist() == ref.head_perm[g].tolist()
            assert res.head_ties[g] == ref.head_ties[g]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("heads", [1, 3, 5])
def test_best_maps_residual_is_the_minimum_over_head_permutations(seed, heads):
    import itertools

    from eqlib.latent.attention.recover import _best_maps_residual

    g = torch.Generator().manual_seed(seed)
    maps_gx = torch.rand(4, heads, 6, 6, generator=g)
    expected = maps_gx[:, torch.randperm(heads, generator=g)] + 0.1 * torch.rand(4, heads, 6, 6, generator=g)
    brute = min(float((maps_gx[:, list(t)] - expected).norm() / maps_gx.norm())
                for t in itertools.permutations(range(heads)))
    assert _best_maps_residual(maps_gx, expected) == pytest.approx(brute, rel=1e-6, abs=1e-9)
    assert _best_maps_residual(maps_gx, maps_gx[:, torch.arange(heads).flip(0)]) == pytest.approx(0, abs=1e-6)
