"""paired_features acting on the first layer's weight (the adjunction) gives the same
features as permuting the inputs."""
from __future__ import annotations

import pytest
import torch

from eqlib.images import mirror
from eqlib.groups import flip
from eqlib.latent import paired_features
from eqlib.models import MLP


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("layers", [1, 2])
def test_adjoint_features_match_permuted_inputs(seed, layers):
    G, act = flip(), mirror((3, 8, 8), "horizontal")
    net = MLP([192, 16, 8, 4], activations=["tanh", "gelu"], seed=seed)
    for g in G:
        fast = paired_features(net.prefix(layers), act, g, 500, seed=seed, chunk_size=128)
        slow = paired_features(net.prefix(layers), act, g, 500, seed=seed, chunk_size=128,
                               use_adjoint=False)
        for a, b in zip(fast, slow):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    # an independent reference for f(m y): mirror the images by flipping the last axis
    y = torch.randn(50, 3, 8, 8, generator=torch.Generator().manual_seed(seed))
    F, Fg = paired_features(net.prefix(1), act, G["m"], y.flatten(1))
    torch.testing.assert_close(Fg, net.prefix(1)(y.flip(-1).flatten(1)), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(F, net.prefix(1)(y.flatten(1)), rtol=1e-5, atol=1e-5)


# --- sampling="row_space": u = [W; W ρ(g)] y drawn as z R (the law of M y, another stream) ---

from eqlib.latent import linear_equivariance_error, plant_equivariant  # noqa: E402
from eqlib.latent.lstsq import SAMPLINGS, row_space_factor  # noqa: E402
from eqlib.actions import trivial  # noqa: E402
from eqlib.seeds import torch_generator


def _stacked(net, act, g):
    W = net.layers[0].weight.detach()
    eye = torch.eye(act.dim)
    return torch.cat([W, W @ act.act(g, eye).T])


@pytest.mark.parametrize("shape", [(6, 40), (40, 6), (12, 12)])
@pytest.mark.parametrize("seed", [0, 1])
def test_row_space_factor_reproduces_the_covariance(shape, seed):
    """RᵀR = M Mᵀ (so z R, z ~ N(0, I_r), has the covariance of M y), R is r × m with
    r = min(m, D), also for a rank-deficient M (repeated, permuted rows)."""
    gen = torch.Generator().manual_seed(seed)
    M = torch.randn(*shape, generator=gen, dtype=torch.float64)
    R = row_space_factor(M)
    assert R.shape == (min(shape), shape[0])
    torch.testing.assert_close(R.T @ R, M @ M.T)
    deficient = torch.cat([M, M.flip(0)])  # rank ≤ min(m, D) < 2m rows
    R = row_space_factor(deficient)
    torch.testing.assert_close(R.T @ R, deficient @ deficient.T)


def _moments(Z):
    """Empirical mean and covariance of the rows of Z with their standard errors
    (SE of a covariance entry: std of the products of the centred columns / √n)."""
    Z = Z.double()
    n = Z.shape[0]
    mean = Z.mean(0)
    A = Z - mean
    cov = A.T @ A / n
    fourth = (A * A).T @ (A * A) / n  # E[a_i² a_j²]
    return mean, (A.var(0) / n).sqrt(), cov, ((fourth - cov ** 2).clamp_min(0) / n).sqrt()


def _max_z(Z1, Z2):
    """Largest |z-score| of the differences of the means and covariances of two samples."""
    m1, sm1, c1, sc1 = _moments(Z1)
    m2, sm2, c2, sc2 = _moments(Z2)
    zm = (m1 - m2).abs() / (sm1 ** 2 + sm2 ** 2).sqrt().clamp_min(1e-12)
    zc = (c1 - c2).abs() / (sc1 ** 2 + sc2 ** 2).sqrt().clamp_min(1e-12)
    return max(float(zm.max()), float(zc.max()))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_row_space_draws_have_the_law_of_M_y(seed):
    """Means and covariances of z R and of M y (independent samples of one size) agree to
    sampling error (z-scores), also when M = [W; W ρ(g)] is rank-deficient (a planted
    equivariant layer: W ρ(g) = P W); a 5% change of scale is detected."""
    G = flip()
    rin = mirror((3, 4, 4))
    net, _ = plant_equivariant(G, rin, trivial(G, 2), [48, 8, 2], activation="tanh", seed=seed)
    M = _stacked(net, rin, G["m"])
    assert torch.linalg.matrix_rank(M) == 8 < M.shape[0]  # rank-deficient on purpose
    gen = torch.Generator().manual_seed(seed)
    n = 40_000
    R = row_space_factor(M)
    u_direct = torch.randn(n, 48, generator=gen) @ M.T
    u_row = torch.randn(n, R.shape[0], generator=gen) @ R
    assert _max_z(u_direct, u_row) < 6  # 136 entries: |z| > 6 has probability ~1e-7
    assert _max_z(u_direct, 1.05 * u_row) > 6  # the test has power
    assert not torch.allclose(u_direct, u_row)  # another random stream, the same law


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("layers", [1, 2])
def test_row_space_features_have_the_same_law(seed, layers):
    """Means and covariances of [f(y) | f(g y)] agree between the samplings to sampling
    error (z-scores), for the first layer and a deeper prefix, with noise_scale ≠ 1; a 5%
    change of the noise scale is detected."""
    G, act = flip(), mirror((3, 8, 8), "horizontal")
    net = MLP([192, 16, 8, 4], activations=["tanh", "gelu"], seed=seed)
    n = 30_000

    def both(sampling, scale, seed_):
        F, Fg = paired_features(net.prefix(layers), act, g, n, seed=seed_, noise_scale=scale, chunk_size=4096,
                                sampling=sampling)
        return torch.cat([F, Fg], 1)

    for g in G:
        ref = both("inputs", 0.7, seed)
        assert _max_z(ref, both("row_space", 0.7, seed + 10)) < 6
        assert _max_z(ref, both("row_space", 0.7 * 1.05, seed + 10)) > 6


def test_row_space_fits_agree_up_to_sampling_error():
    """The same fits: an exactly equivariant (planted) layer has a linear action under both
    samplings; a random layer's median error is the same to a few percent."""
    G = flip()
    rin = mirror((3, 8, 8))
    planted, _ = plant_equivariant(G, rin, trivial(G, 2), [192, 24, 2], activation="tanh", seed=0)
    for sampling in SAMPLINGS:
        fit = linear_equivariance_error(planted.prefix(1), rin, G["m"], 6000, solver="normal",
                                        sampling=sampling)
        assert fit.median_error < 1e-4, (sampling, fit)
    net = MLP([192, 24, 2], seed=3)
    errs = [linear_equivariance_error(net.prefix(1), rin, G["m"], 20_000, sampling=s, seed=s_)
            .median_error for s in ("inputs", "row_space") for s_ in (0, 1)]
    assert min(errs) > 0.05  # a random layer is far from linearly equivariant
    assert max(errs) / min(errs) < 1.05, errs


def test_auto_sampling_rule_and_bad_inputs():
    G, act = flip(), mirror((3, 8, 8))
    narrow = MLP([192, 16, 4], seed=0)  # 2d = 32 < D = 192: auto is the row space
    wide = MLP([192, 128, 4], seed=0)  # 2d = 256 ≥ D: auto is the inputs
    m = G["m"]
    for net, same_as in ((narrow, "row_space"), (wide, "inputs")):
        auto = paired_features(net.prefix(1), act, m, 300, seed=1, sampling="auto")
        ref = paired_features(net.prefix(1), act, m, 300, seed=1, sampling=same_as)
        for a, b in zip(auto, ref):
            assert torch.equal(a, b)
    # row space on a wide layer is still exact in law (r = D), just not faster
    F, Fg = paired_features(wide.prefix(1), act, m, 300, seed=1, sampling="row_space")
    assert F.shape == Fg.shape == (300, 128)
    y = torch.randn(50, 192, generator=torch_generator(100))
    given = paired_features(narrow.prefix(1), act, m, y, sampling="auto")  # given samples: inputs
    torch.testing.assert_close(given[0], narrow.prefix(1)(y))
    with pytest.raises(ValueError, match="row_space.*samples are given"):
        paired_features(narrow.prefix(1), act, m, y, sampling="row_space")
    with pytest.raises(ValueError, match="row_space.*not a Dense layer"):
        paired_features(lambda x: torch.tanh(x), act, m, 100, sampling="row_space")
    with pytest.raises(ValueError, match="sampling"):
        paired_features(narrow.prefix(1), act, m, 100, sampling="rows")
    with pytest.raises(ValueError, match="M must be a matrix"):
        row_space_factor(torch.ones(3))
    with pytest.raises((ValueError, TypeError), match="M"):
        row_space_factor(torch.ones(3, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="M"):
        row_space_factor(torch.tensor([[1.0, float("nan")]]))


@pytest.mark.parametrize("activation", ["tanh", "relu", "gelu", "sigmoid", "identity"])
def test_adjoint_path_without_bias_and_every_activation(activation):
    """The direct writes into the outputs (in-place σ) match running the prefix on y and g·y."""
    G, act = flip(), mirror((3, 8, 8))
    for bias in (True, False):
        net = MLP([192, 12, 4], activations=[activation, "identity"], bias=bias, seed=1)
        fast = paired_features(net.prefix(1), act, G["m"], 700, seed=2, noise_scale=1.3, chunk_size=256)
        slow = paired_features(net.prefix(1), act, G["m"], 700, seed=2, noise_scale=1.3, chunk_size=256,
                               use_adjoint=False)
        for a, b in zip(fast, slow):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_latent_actions_passes_the_sampling_through():
    from eqlib.actions import trivial
    from eqlib.images import mirror
    from eqlib.groups import flip
    from eqlib.latent import latent_actions, plant_equivariant
    G = flip()
    rin, rout = mirror((1, 4, 8)), trivial(G, 3)
    net, _ = plant_equivariant(G, rin, rout, [32, 8, 8, 3], activation="tanh", seed=0)
    for sampling in ("inputs", "row_space", "auto"):
        assert latent_actions(net, rin, rout, method="lstsq", samples=4000, sampling=sampling).ok
    with pytest.raises(ValueError, match="sampling"):
        latent_actions(net, rin, rout, method="lstsq", samples=4000, sampling="bogus")
