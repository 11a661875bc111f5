"""eqlib.latent: recovery of latent actions on planted, degenerate, non-equivariant and
non-identifiable networks; lstsq fits; unit matching."""
import math

import pytest
import torch

from eqlib.actions import from_matrices, regular, trivial
from eqlib.images import image_dihedral, mirror
from eqlib.groups import cyclic, dihedral, flip
from eqlib.latent import (fit_linear_action, latent_actions, linear_equivariance_error, match_units,
                          plant_equivariant, sign_characters)
from eqlib.models import MLP
from eqlib.symmetries import symmetry_group


def _cases():
    G2, C4, D4 = flip(), cyclic(4), dihedral(4)
    return {
        "mirror-tanh": (G2, mirror((1, 4, 4)), trivial(G2, 3), [16, 20, 14, 3], "tanh"),
        "mirror-relu-depth4": (G2, mirror((1, 4, 4)), mirror((1, 4, 4)), [16, 24, 18, 12, 16], "relu"),
        "cyclic-tanh-depth5": (C4, regular(C4), trivial(C4, 2), [4, 16, 12, 16, 8, 2], "tanh"),
        "dihedral-relu": (D4, image_dihedral((1, 4, 4)), regular(D4), [16, 32, 24, 8], "relu"),
        "dihedral-gelu-depth2": (D4, image_dihedral((1, 4, 4)), trivial(D4, 3), [16, 40, 3], "gelu"),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_weights_recovers_exact_homomorphisms(name):
    G, rin, rout, widths, act = _cases()[name]
    net, truth = plant_equivariant(G, rin, rout, widths, activation=act, seed=3)
    res = latent_actions(net, rin, rout, method="weights")
    assert res.equivariant and res.conclusion_recovered, res.summary()
    assert res.ok, res.summary()
    assert res.layer_errors.max() < 1e-5, res.summary()
    assert max(res.homomorphism_errors) < 1e-5
    for i, a in enumerate(res.actions, start=1):  # every k_i(g) lies in K_i
        K = symmetry_group(act, widths[i])
        assert all(K.contains(a.matrix(g), tol=1e-4) for g in G)
        # the recovered action agrees with the planted one up to float rounding
        for g in G:
            torch.testing.assert_close(a.matrix(g), truth[i - 1].matrix(g), atol=1e-4, rtol=1e-4)


def test_weights_big_mirror_network():
    G = flip()
    rin, rout = mirror((3, 16, 16)), trivial(G, 10)
    net, _ = plant_equivariant(G, rin, rout, [768, 1024, 1024, 10], activation="tanh", seed=0)
    res = latent_actions(net, rin, rout)
    assert res.ok and res.layer_errors.max() < 1e-5, res.summary()


def test_three_methods_agree_on_planted_tanh():
    G = flip()
    rin, rout = mirror((1, 4, 4)), trivial(G, 3)
    net, _ = plant_equivariant(G, rin, rout, [16, 12, 10, 3], activation="tanh", seed=1)
    x = torch.randn(400, 16, generator=torch.Generator().manual_seed(0))
    w = latent_actions(net, rin, rout, method="weights", x=x)
    a = latent_actions(net, rin, rout, method="activations", x=x)
    l = latent_actions(net, rin, rout, method="lstsq", x=x, samples=3000)
    assert w.ok and a.ok and l.ok, (w.summary(), a.summary(), l.summary())
    for i in (1, 2):
        torch.testing.assert_close(a.matrix(i, G["m"]), w.matrix(i, G["m"]))
        torch.testing.assert_close(l.matrix(i, G["m"]), w.matrix(i, G["m"]), atol=1e-3, rtol=0)
        assert l.in_group_distance[i - 1] < 1e-3


def test_weakly_identifiable_network_is_reduced_and_lifted():
    from eqlib.submodels import plant_degenerate

    G = flip()
    rin, rout = mirror((1, 4, 4)), trivial(G, 3)
    net, _ = plant_equivariant(G, rin, rout, [16, 12, 10, 3], activation="tanh", seed=2)
    deg = plant_degenerate(net, n_dead=1, n_constant=1, n_clones=1, n_negated=1, seed=0)
    deg = deg[0] if isinstance(deg, tuple) else deg
    res = latent_actions(deg, rin, rout, method="weights")
    assert any("reduced" in n for n in res.notes), res.summary()
    assert res.equivariant and res.conclusion_recovered, res.summary()
    assert res.layer_errors.max() < 1e-4 and max(res.homomorphism_errors) < 1e-4, res.summary()


def test_non_equivariant_network_is_reported():
    G = flip()
    rin, rout = mirror((1, 4, 4)), trivial(G, 3)
    res = latent_actions(MLP([16, 12, 3], "tanh", seed=0), rin, rout)
    assert not res.equivariant and res.conclusion_recovered is None and not res.ok
    assert res.equivariance_error > 0.1
    assert "NOT equivariant" in res.summary()


def _bypass_network():
    """f = identity on R², written as GELU bypass pairs; equivariant for rotations by 60°."""
    G = cyclic(6)
    c, s = math.cos(math.pi / 3), math.sin(math.pi / 3)
    rho = from_matrices(G, {G["r"]: torch.tensor([[c, -s], [s, c]])})
    net = MLP([2, 4, 2], "gelu")
    with torch.no_grad():
        net.layers[0].weight.copy_(torch.cat([torch.eye(2), -torch.eye(2)]))
        net.layers[0].bias.zero_()
        net.layers[1].weight.copy_(torch.cat([torch.eye(2), -torch.eye(2)], 1))
        net.layers[1].bias.zero_()
    return G, rho, net


def test_non_identifiable_bypass_network_is_reported():
    G, rho, net = _bypass_network()
    res = latent_actions(net, rho, rho, method="weights")
    assert res.equivariant and res.conclusion_recovered is False and 1 in res.failed_layers, res.summary()
    fit1 = linear_equivariance_error(net.prefix(1), rho, G["r"], samples=4000)
    fit2 = linear_equivariance_error(net.prefix(2), rho, G["r"], samples=4000)
    assert fit1.median_error > 0.05 and fit2.median_error < 1e-4


def test_hidden_identity_layer_is_refused():
    G = flip()
    with pytest.raises(ValueError, match="GL"):
        latent_actions(MLP([16, 8, 3], "identity"), mirror((1, 4, 4)), trivial(G, 3))


def test_bad_inputs():
    G = flip()
    net = MLP([16, 8, 3], "tanh")
    with pytest.raises(ValueError, match="method"):
        latent_actions(net, mirror((1, 4, 4)), trivial(G, 3), method="magic")
    with pytest.raises(ValueError, match="R\\^"):
        latent_actions(net, mirror((1, 4, 5)), trivial(G, 3))
    with pytest.raises(ValueError, match="odd"):
        plant_equivariant(G, mirror((1, 4, 4)), trivial(G, 3), [16, 8, 3], activation="relu",
                          hidden="signed_permutation")


def test_sign_characters():
    assert len(sign_characters(flip())) == 2
    assert len(sign_characters(cyclic(3))) == 1
    assert len(sign_characters(dihedral(4))) == 4


def test_fit_linear_action_rank_deficient():
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(3000, 40, generator=gen)
    X[:, :15] = 0  # dead units
    P = torch.eye(40)[torch.randperm(40, generator=gen)]
    for solver in ("gelsd", "normal"):
        fit = fit_linear_action(X, X @ P.T, solver=solver)
        assert fit.median_error < 1e-5 and fit.n_fit == 1500 and fit.errors.shape == (1500,)
    noisy = fit_linear_action(X, torch.randn(3000, 40, generator=gen))
    assert noisy.median_error > 0.5
    with pytest.raises(ValueError):
        fit_linear_action(X, X[:, :3])
    with pytest.raises(ValueError):
        fit_linear_action(X, X, fit_fraction=0)


def test_match_units_sign_and_scale():
    gen = torch.Generator().manual_seed(0)
    B = torch.randn(50, 9, generator=gen)
    p = torch.randperm(50, generator=gen)
    s = torch.rand(50, generator=gen) + 0.5
    perm, scales, sim = match_units(B[p] * -1, B, signed=True)
    assert torch.equal(perm, p) and bool((scales == -1).all()) and float(sim.min()) > 0.999
    perm, scales, _ = match_units(B[p] * s[:, None], B, signed=False, scaled=True)
    assert torch.equal(perm, p)
    torch.testing.assert_close(scales, s)
    with pytest.raises(ValueError):
        match_units(B, B[:3])


@pytest.mark.parametrize("method", ["null_space", "average"])
def test_equivariant_weight_both_ways(method):
    from eqlib.latent import equivariant_weight, hidden_representation

    D4 = dihedral(4)
    rin, rout = image_dihedral((1, 3, 3)), hidden_representation(D4, 12, signed=True, seed=0)
    W = equivariant_weight(rin, rout, seed=0, method=method)
    assert W.norm() > 0.1
    for g in D4:
        torch.testing.assert_close(rout.matrix(g) @ W, W @ rin.matrix(g), atol=1e-5, rtol=1e-5)


def _weak_case(seed, act="tanh"):
    """A planted D4 network with dead, constant and cloned units, and its recovery."""
    from eqlib.submodels import plant_degenerate

    D4 = dihedral(4)
    rin, rout = image_dihedral((1, 4, 4)), trivial(D4, 3)
    net, _ = plant_equivariant(D4, rin, rout, [16, 24, 16, 3], activation=act, seed=seed)
    deg = plant_degenerate(net, n_dead=2, n_constant=1, n_clones=2,
                           n_negated=1 if act == "tanh" else 0, seed=seed)
    return D4, rin, rout, deg, latent_actions(deg, rin, rout, method="weights")


@pytest.mark.parametrize("seed,act", [(0, "tanh"), (1, "tanh"), (2, "tanh"), (3, "relu"), (4, "gelu")])
def test_weak_case_homomorphisms_into_reduced_groups_and_lifts(seed, act):
    """Chapter 6's weak case: k̃_i: G → K̃_i on the reduced model, lifted to V_i."""
    from eqlib.latent import lift_action
    from eqlib.latent.result import layer_errors

    G, rin, rout, deg, res = _weak_case(seed, act)
    assert res.weak and res.ok and res.conclusion_recovered, res.summary()
    red = res.reduction
    assert red.model.dims != deg.dims and "weak case" in res.summary()
    x = torch.randn(128, 16, generator=torch.Generator().manual_seed(seed))
    for i in (1, 2):
        Kt, K = symmetry_group(act, red.model.dims[i]), symmetry_group(act, deg.dims[i])
        A, S = red.alpha[i], red.alpha_star[i]
        sizes = red.class_sizes(i)
        for g in G:
            kt, k = res.reduced_matrix(i, g), res.matrix(i, g)
            assert Kt.contains(kt, tol=1e-5)  # a homomorphism into K̃_i ...
            for h in G:
                torch.testing.assert_close(res.reduced_matrix(i, g @ h), kt @ res.reduced_matrix(i, h))
                torch.testing.assert_close(res.matrix(i, g @ h), k @ res.matrix(i, h), atol=1e-5, rtol=0)
            # ... lifted by k = α k̃ α* + (I − α α*), which preserves the image of α
            torch.testing.assert_close(k, A @ kt @ S + torch.eye(A.shape[0]) - A @ S, atol=1e-6, rtol=0)
            h = torch.randn(5, A.shape[1], generator=torch.Generator().manual_seed(1))
            torch.testing.assert_close(red.embed(i, h) @ k.T, red.embed(i, h @ kt.T), atol=1e-5, rtol=0)
            # the lift lies in K_i exactly when k̃(g) fixes every class of size > 1
            big = sizes > 1
            fixes = bool(torch.allclose(kt[:, big], torch.eye(kt.shape[0])[:, big]))
            assert K.contains(k, tol=1e-5) == fixes
    assert max(res.in_group_distance) > 0.05  # some lift is not in K_i (a clone class moves)
    # layers are equivariant on reachable latents only after discarding the dead units
    full = layer_errors(deg, rin, rout, res.actions, x=x)
    assert full.max() > 1e-2 and res.layer_errors.max() < 1e-4
    torch.testing.assert_close(lift_action(res.reduced_actions[0], red.alpha[1], red.alpha_star[1]).matrix(G["r"]),
                               res.matrix(1, G["r"]))


def test_reduced_matrix_needs_a_reduction():
    G = flip()
    net, _ = plant_equivariant(G, mirror((1, 4, 4)), trivial(G, 3), [16, 12, 3], activation="tanh", seed=0)
    res = latent_actions(net, mirror((1, 4, 4)), trivial(G, 3))
    assert not res.weak and res.reduced_actions is None
    with pytest.raises(ValueError, match="not reduced"):
        res.reduced_matrix(1, G["m"])


def test_homomorphism_error_sees_a_broken_monomial_action():
    """homomorphism_error (actions.check_homomorphism underneath): 0 for a planted action,
    ≥ the visible violation when one element's permutation is replaced, inf for NaN."""
    import torch

    from eqlib.groups import cyclic
    from eqlib.latent import MonomialAction, homomorphism_error

    G = cyclic(4)
    perm = torch.stack([torch.roll(torch.arange(4), k) for k in range(4)])
    good = MonomialAction(G, perm, torch.ones(4, 4))
    assert homomorphism_error(good) == 0.0
    bad_perm = perm.clone()
    bad_perm[1] = torch.tensor([0, 1, 3, 2])
    assert homomorphism_error(MonomialAction(G, bad_perm, torch.ones(4, 4))) > 0.1
    scales = torch.ones(4, 4)
    scales[2, 0] = float("nan")
    assert homomorphism_error(MonomialAction(G, perm, scales)) == float("inf")


def test_the_old_name_identifiable_is_gone():
    """`LatentActions.identifiable` overstated what it reports (the theorem's conclusion,
    not identifiability); after its deprecation period it is gone (issue #24: dead code)."""
    G = flip()
    rho_in, rho_out = mirror((1, 2, 2)), trivial(G, 1)
    net, _ = plant_equivariant(G, rho_in, rho_out, [4, 6, 1], activation="tanh", seed=0)
    res = latent_actions(net, rho_in, rho_out)
    assert res.conclusion_recovered is True and not hasattr(res, "identifiable")
