"""Property-based tests (hypothesis) of eqlib's public boundary.

Bad inputs, generated per kind of argument (integers, tolerances, fractions, options,
tensors), must raise ValueError or TypeError with a message that names the argument:
never another exception, never a silently wrong result. Good inputs keep their
invariants: group axioms, homomorphisms, functions preserved by parameter symmetries and
by ``reduce``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eqlib import actions, data, groups, images, latent, submodels, symmetries
from eqlib.models import MLP, VGG, AttentionNetwork, DeepSetsLayer, Dense, MultiHeadAttention
from eqlib.models.sets import cycle_graph
from eqlib.train import TrainConfig, evaluate_accuracy, image_preset, learning_rate_at, penalty_weight_at, train
from eqlib.seeds import torch_generator

settings.register_profile("eqlib", max_examples=12, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("eqlib")

#: tries and clear errors, over the whole module (printed at the end: the audit's measure)
AUDIT = {"tried": 0, "clear": 0}

NAN, INF = float("nan"), float("inf")
JUNK = st.sampled_from([None, "3", b"3", [1], (1,), {1: 2}, object(), 1j])


# -- strategies of bad values, per kind of argument -----------------------------------------------
def bad_int(low: int | None = None, high: int | None = None, none_ok: bool = False):
    """Everything that is not an integer in [low, high] (integral floats count as integers)."""
    options = [JUNK.filter(lambda v: v is not None) if none_ok else JUNK, st.booleans(), st.sampled_from([NAN, INF, -INF]),
               st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: not v.is_integer())]
    if low is not None:
        options.append(st.integers(max_value=low - 1))
    if high is not None:
        options.append(st.integers(min_value=high + 1, max_value=10**9))
    return st.one_of(options)


def bad_float(low: float | None = None, high: float | None = None, low_open: bool = False, none_ok: bool = False):
    options = [JUNK.filter(lambda v: v is not None) if none_ok else JUNK, st.booleans(), st.sampled_from([NAN, INF, -INF])]
    if low is not None:
        options.append(st.floats(max_value=low, exclude_max=not low_open, allow_nan=False, allow_infinity=False))
    if high is not None:
        options.append(st.floats(min_value=high, exclude_min=True, allow_nan=False, allow_infinity=False))
    return st.one_of(options)


def bad_choice(options):
    return st.one_of(JUNK, st.integers(), st.text(max_size=8)).filter(lambda v: v not in tuple(options))


def expect_clear(call, value, name: str) -> None:
    """``call(value)`` raises ValueError/TypeError whose message names ``name``."""
    AUDIT["tried"] += 1
    with pytest.raises((ValueError, TypeError)) as info:
        call(value)
    assert name in str(info.value), f"{name!r} not named in: {info.value}"
    AUDIT["clear"] += 1


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    print(f"\n[audit] bad inputs tried: {AUDIT['tried']}, clear errors: {AUDIT['clear']}")


# -- small fixed objects ---------------------------------------------------------------------------
Z2, C3, S3 = groups.flip(), groups.cyclic(3), groups.symmetric(3)
RHO3 = actions.regular(C3)
NET = MLP([4, 5, 3], activations="tanh", seed=0)
K5 = symmetries.symmetry_group("tanh", 5)


def _tiny_images(n=8):
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g), torch.randint(0, 3, (n,), generator=g)


def _train(**kw):
    images, labels = kw.pop("images", None), kw.pop("labels", None)
    x, y = _tiny_images()
    cfg = kw.pop("config", TrainConfig(epochs=1, batch_size=4))
    return train(kw.pop("model", MLP([3072, 4, 3])), (x if images is None else images, y if labels is None else labels),
                 cfg, device="cpu", progress=False, **image_preset(), **kw)


FEATURES = (torch.randn(8, 2, generator=torch_generator(100)), torch.randn(8, 2, generator=torch_generator(101)))

# (entry point, call taking the bad value, argument named in the error, strategy of bad values)
SCALAR_BOUNDARY = [
    ("cyclic", groups.cyclic, "n", bad_int(1, 5040)),
    ("dihedral", groups.dihedral, "n", bad_int(1, 2520)),
    ("symmetric", groups.symmetric, "n", bad_int(1, 7)),
    ("FiniteGroup.sample", lambda v: C3.sample(v), "n", bad_int(0)),
    ("FiniteGroup.compose", lambda v: C3.compose(v, 0), "element index", bad_int(0, 2)),
    ("from_permutations.max_order", lambda v: groups.from_permutations([[1, 0]], max_order=v), "max_order",
     bad_int(1)),
    ("trivial.dim", lambda v: actions.trivial(C3, v), "dim", bad_int(1)),
    ("check_homomorphism.num_probes", lambda v: actions.check_homomorphism(RHO3, num_probes=v), "num_probes",
     bad_int(1)),
    ("token_permutation.n_tokens", lambda v: actions.token_permutation(S3, v, 2), "n_tokens", bad_int(1)),
    ("token_permutation.token_dim", lambda v: actions.token_permutation(S3, 3, v), "token_dim", bad_int(1)),
    ("mirror.shape", lambda v: images.mirror((3, v, 4)), "shape", bad_int(1)),
    ("MLP.widths", lambda v: MLP([4, v, 2]), "widths[1]", bad_int(1)),
    ("MLP.init_scale", lambda v: MLP([4, 3, 2], init_scale=v), "init_scale", bad_float()),
    ("MLP.seed", lambda v: MLP([4, 3, 2], seed=v), "seed", bad_int(0, none_ok=True)),
    ("Dense.in_dim", lambda v: Dense(v, 3), "in_dim", bad_int(1)),
    ("MultiHeadAttention.heads", lambda v: MultiHeadAttention(4, 6, 6, heads=v), "heads", bad_int(1)),
    ("AttentionNetwork.dims", lambda v: AttentionNetwork(4, [6, v]), "d_out", bad_int(1)),
    ("DeepSetsLayer.n", lambda v: DeepSetsLayer(v, 2, 2), "n", bad_int(1)),
    ("cycle_graph.n", cycle_graph, "n", bad_int(3)),
    ("VGG.width", lambda v: VGG([4, "M"], width=v), "width", bad_float(0.0, low_open=True)),
    ("VGG.num_classes", lambda v: VGG([4, "M"], num_classes=v), "num_classes", bad_int(1)),
    ("SymmetryGroup.dim", lambda v: symmetries.SymmetryGroup("permutation", v), "dim", bad_int(1)),
    ("SymmetryElement.identity", symmetries.SymmetryElement.identity, "dim", bad_int(1)),
    ("SymmetryGroup.sample", lambda v: K5.sample(0, log_scale=v), "log_scale", bad_float(0.0)),
    ("SymmetryGroup.contains", lambda v: K5.contains(torch.eye(5), tol=v), "tol", bad_float(0.0)),
    ("intertwines.tol", lambda v: symmetries.intertwines("tanh", K5.identity(), torch.ones(2, 5), tol=v), "tol",
     bad_float(0.0)),
    ("reduce.tol", lambda v: submodels.reduce(NET, tol=v), "tol", bad_float(0.0)),
    ("reduce.max_passes", lambda v: submodels.reduce(NET, max_passes=v), "max_passes", bad_int(1)),
    ("find_clones.tol", lambda v: submodels.find_clones(NET, tol=v), "tol", bad_float(0.0)),
    ("plant_degenerate.n_dead", lambda v: submodels.plant_degenerate(NET, n_dead=v), "n_dead", bad_int(0)),
    ("latent_actions.tol", lambda v: latent.latent_actions(NET, actions.trivial(Z2, 4), actions.trivial(Z2, 3),
                                                           tol=v), "tol", bad_float(0.0, none_ok=True)),
    ("latent_actions.num_probes", lambda v: latent.latent_actions(
        NET, actions.trivial(Z2, 4), actions.trivial(Z2, 3), num_probes=v), "num_probes", bad_int(1)),
    ("fit_linear_action.fit_fraction", lambda v: latent.fit_linear_action(*FEATURES, fit_fraction=v), "fit_fraction",
     bad_float(0.0, 1.0, low_open=True)),
    ("fit_linear_action.ridge", lambda v: latent.fit_linear_action(*FEATURES, ridge=v), "ridge", bad_float(0.0)),
    ("fit_linear_action.solver", lambda v: latent.fit_linear_action(*FEATURES, solver=v), "solver",
     bad_choice((None, "gelsd", "normal"))),
    ("subset.n", lambda v: data.subset(data.CIFAR10(*_tiny_images(20)), v, stratified=False), "n",
     bad_int(1, 20)),
    ("random_mirror.p", lambda v: images.random_mirror(torch.zeros(2, 3, 4, 4), p=v), "p", bad_float(0.0, 1.0)),
    ("rotate90.k", lambda v: images.rotate90(torch.zeros(2, 3, 4, 4), v), "k", bad_int()),
    ("normalize.std", lambda v: images.normalize(torch.zeros(1, 3, 2, 2, dtype=torch.uint8), std=(v, 1.0, 1.0)),
     "std", bad_float(0.0, low_open=True)),
    ("normalize.mean", lambda v: images.normalize(torch.zeros(1, 3, 2, 2, dtype=torch.uint8), mean=(v, 0.0, 0.0)),
     "mean", bad_float()),
    ("TrainConfig.epochs", lambda v: TrainConfig(epochs=v), "TrainConfig.epochs", bad_int(1)),
    ("TrainConfig.batch_size", lambda v: TrainConfig(batch_size=v), "TrainConfig.batch_size", bad_int(1)),
    ("TrainConfig.lr", lambda v: TrainConfig(lr=v), "TrainConfig.lr", bad_float(0.0, low_open=True)),
    ("TrainConfig.penalty_weight", lambda v: TrainConfig(penalty_weight=v), "TrainConfig.penalty_weight",
     bad_float(0.0)),
    ("TrainConfig.weight_decay", lambda v: TrainConfig(weight_decay=v), "TrainConfig.weight_decay",
     bad_float(0.0)),
    ("TrainConfig.warmup", lambda v: TrainConfig(warmup=v), "TrainConfig.warmup", bad_float(0.0, 1.0)),
    ("image_preset.std", lambda v: image_preset(std=(v, 1.0, 1.0)), "std", bad_float(0.0, low_open=True)),
    ("image_preset.mean", lambda v: image_preset(mean=(v, 0.0, 0.0)), "mean", bad_float()),
    ("TrainConfig.task", lambda v: TrainConfig(task=v), "TrainConfig.task", bad_choice(("classify", "autoencode"))),
    ("TrainConfig.seed", lambda v: TrainConfig(seed=v), "TrainConfig.seed", bad_int(0)),
    ("penalty_weight_at.progress", lambda v: penalty_weight_at(TrainConfig(), v), "progress",
     bad_float(0.0, 1.0)),
    ("learning_rate_at.progress", lambda v: learning_rate_at(TrainConfig(), v), "progress", bad_float(0.0, 1.0)),
    ("evaluate_accuracy.batch_size", lambda v: evaluate_accuracy(MLP([3072, 4, 3]), *_tiny_images(), batch_size=v),
     "batch_size", bad_int(1)),
    ("train.checkpoint_every", lambda v: _train(checkpoint_every=v), "checkpoint_every", bad_int(1)),
]


@pytest.mark.parametrize("call,name,values", [e[1:] for e in SCALAR_BOUNDARY], ids=[e[0] for e in SCALAR_BOUNDARY])
@given(st.data())
def test_bad_scalars_are_clear_errors(call, name, values, data):
    expect_clear(call, data.draw(values, label=name), name)


# -- bad tensors ------------------------------------------------------------------------------------
def _with_nan(shape, where):
    x = torch.rand(*shape, generator=torch_generator(106))
    x.view(-1)[where % x.numel()] = NAN
    return x


@given(where=st.integers(0, 10**6), value=st.sampled_from([NAN, INF, -INF]))
def test_non_finite_tensors_are_named(where, value):
    x = torch.rand(4, 4, generator=torch_generator(107))
    x.view(-1)[where % 16] = value
    expect_clear(lambda v: actions.check_equivariance(lambda t: t, actions.trivial(Z2, 4),
                                                      actions.trivial(Z2, 4), v), x, "x must be finite")
    expect_clear(lambda v: latent.fit_linear_action(v, torch.rand(4, 4, generator=torch_generator(108))), x, "features")
    expect_clear(lambda v: symmetries.intertwining_error("tanh", symmetries.SymmetryElement.identity(4), v), x,
                 "z must be finite")
    net = MLP([4, 3, 2])
    with torch.no_grad():
        net.layers[1].weight.view(-1)[where % 6] = value
    expect_clear(lambda m: latent.latent_actions(m, actions.trivial(Z2, 4), actions.trivial(Z2, 2)), net,
                 "layers.1.weight")
    images = torch.rand(8, 3, 32, 32, generator=torch_generator(109))
    images.view(-1)[where % images.numel()] = value
    expect_clear(lambda v: _train(images=v), images, "images")
    expect_clear(lambda v: actions.from_matrices(Z2, {Z2["m"]: v}), torch.eye(4).index_put_(
        (torch.tensor(where % 4), torch.tensor(where % 4)), torch.tensor(value)), "matrices[m]")


@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=5))
def test_empty_or_misshapen_tensors_are_clear_errors(shape):
    x = torch.zeros(shape)
    if x.numel() == 0 or x.ndim == 0 or shape[-1] != 3:
        expect_clear(lambda v: actions.check_equivariance(lambda t: t, RHO3, RHO3, v), x, "x must")
    if len(shape) != 4 or 0 in shape or shape[1] != 3:
        expect_clear(lambda v: _train(images=v.to(torch.uint8)), x, "images")
    if len(shape) < 2 or (len(shape) == 2 and shape[1] != 3 * 32 * 32):
        expect_clear(images.mirror_images, x, "x must be")


@given(scale=st.floats(1.0001, 1e6), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_float_images_outside_0_1_are_refused(scale, dtype):
    images = torch.rand(8, 3, 32, 32, dtype=dtype, generator=torch_generator(110)) * scale + 1e-3
    expect_clear(lambda v: _train(images=v), images, "images must lie in [0, 1]")


@given(label=st.one_of(st.integers(max_value=-1), st.integers(min_value=10, max_value=10**6)))
def test_labels_out_of_range_are_refused(label):
    x, y = _tiny_images(4)
    y[1] = label
    expect_clear(lambda v: data.CIFAR10(x, v), y, "labels")
    expect_clear(lambda v: _train(labels=v), y, "labels")


@given(points=st.lists(st.integers(-2, 5), min_size=2, max_size=4))
def test_permutation_accepts_exactly_the_permutations(points):
    p = np.asarray(points)
    table = np.stack([np.arange(len(p)), p])
    if sorted(points) != list(range(len(p))):
        expect_clear(lambda v: actions.permutation(Z2, v), table, "points[m]")
    elif np.array_equal(p[p], np.arange(len(p))):  # an involution: an action of Z2
        assert actions.check_homomorphism(actions.permutation(Z2, table)) == 0
    else:  # a permutation, but m² ≠ e
        expect_clear(lambda v: actions.permutation(Z2, v), table, "do not define an action of Z2")


# -- good inputs keep their invariants ---------------------------------------------------------------
@st.composite
def permutation_generators(draw):
    k = draw(st.integers(1, 5))
    count = draw(st.integers(1, 3))
    return [draw(st.permutations(range(k))) for _ in range(count)]


@given(permutation_generators())
def test_groups_from_permutations_satisfy_the_axioms(gens):
    G = groups.from_permutations(gens)
    t, e = G.table, G.identity.index
    n = G.order
    assert (t[e] == np.arange(n)).all() and (t[:, e] == np.arange(n)).all()
    inv = np.array([G.inverse(g).index for g in G])
    assert (t[np.arange(n), inv] == e).all() and (t[inv, np.arange(n)] == e).all()
    a, b, c = np.meshgrid(*(np.arange(n),) * 3, indexing="ij")
    assert np.array_equal(t[t[a, b], c], t[a, t[b, c]])  # associativity, all triples
    p = G.permutations  # the table is composition of maps: (ab)[i] = a[b[i]]
    assert all(np.array_equal(p[t[i, j]], p[i][p[j]]) for i in range(n) for j in range(n))
    assert actions.check_homomorphism(actions.regular(G)) == 0


@given(n=st.integers(1, 12), kind=st.sampled_from(["cyclic", "dihedral"]))
def test_factory_groups_are_groups_and_regular_actions_homomorphisms(n, kind):
    G = getattr(groups, kind)(n)
    assert G.order == (n if kind == "cyclic" else 2 * n)
    assert actions.check_homomorphism(actions.regular(G)) == 0
    for g in G.testing_elements():
        assert g ** g.order == G.identity and (~g) @ g == G.identity


@given(widths=st.lists(st.integers(1, 6), min_size=3, max_size=4), act=st.sampled_from(["tanh", "relu", "gelu"]),
       seed=st.integers(0, 1000))
def test_parameter_symmetries_preserve_the_function(widths, act, seed):
    net = MLP(widths, activations=act, seed=seed)
    ks = [K.sample(seed + i) for i, K in enumerate(symmetries.layer_symmetry_groups(net))]
    moved = symmetries.apply_symmetry(net, ks)
    x = torch.randn(5, widths[0], generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        assert torch.allclose(moved(x), net(x), atol=1e-4, rtol=1e-4)


@given(widths=st.lists(st.integers(2, 5), min_size=3, max_size=4), seed=st.integers(0, 1000),
       n_dead=st.integers(0, 2), n_clones=st.integers(0, 2))
def test_reduce_preserves_the_function(widths, seed, n_dead, n_clones):
    net = MLP(widths, activations="tanh", seed=seed)
    wide = submodels.plant_degenerate(net, n_dead=n_dead, n_constant=1, n_clones=n_clones, seed=seed)
    red = submodels.reduce(wide)
    x = torch.randn(6, widths[0], generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        assert torch.allclose(red.model(x), wide(x), atol=1e-4)
        assert torch.allclose(wide(x), net(x), atol=1e-4)
    assert all(b <= a for a, b in zip(wide.widths, red.model.widths))


@given(cfg=st.builds(TrainConfig, epochs=st.integers(1, 50), batch_size=st.integers(1, 512),
                     lr=st.floats(1e-6, 1.0), weight_decay=st.floats(0, 1), warmup=st.floats(0, 1),
                     penalty_start=st.floats(0, 1), seed=st.integers(0, 2**31)),
       progress=st.floats(0, 1))
def test_train_config_roundtrips_and_schedules_stay_in_range(cfg, progress):
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    assert 0 <= learning_rate_at(cfg, progress) <= cfg.lr
    assert 0 <= penalty_weight_at(cfg, progress) <= max(cfg.penalty_weight, 0)


@given(n=st.integers(1, 4), axis=st.sampled_from(["horizontal", "vertical"]))
def test_mirror_is_an_involution_matching_the_action(n, axis):
    x = torch.randint(0, 256, (n, 3, 4, 4), dtype=torch.uint8)
    assert torch.equal(images.mirror_images(images.mirror_images(x, axis), axis), x)
    rho = images.mirror((3, 4, 4), axis)
    assert torch.equal(rho.act(rho.group["m"], x.float()), images.mirror_images(x, axis).float())


# -- dtypes and strides (second audit): parameter symmetries act exactly on any real input -------
DTYPES = [torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool, torch.float16, torch.float32,
          torch.float64]


@given(d=st.integers(1, 5), m=st.integers(1, 4), seed=st.integers(0, 2**16), dtype=st.sampled_from(DTYPES),
       transpose=st.booleans(), which=st.sampled_from(["act", "left", "right", "right_inverse"]))
def test_symmetry_elements_act_exactly_on_any_dtype_and_layout(d, m, seed, dtype, transpose, which):
    """k z, k W, W k and W k⁻¹ equal the dense products in float64 for integer, bool and
    low-precision inputs and for transposed (non-contiguous) ones; ``right`` truncated
    integer weights to integers before."""
    gen = torch.Generator().manual_seed(seed)
    k = symmetries.SymmetryElement(torch.randperm(d, generator=gen), torch.rand(d, generator=gen) * 3 + 0.25)
    shape = (d, m) if which == "left" else (m, d)
    raw = torch.randint(0, 3, shape[::-1] if transpose else shape, generator=gen)
    W = (raw.T if transpose else raw).to(dtype)
    assert W.shape == shape
    K = k.matrix().double()
    ref = {"act": lambda w: w @ K.T, "left": lambda w: K @ w, "right": lambda w: w @ K,
           "right_inverse": lambda w: w @ torch.linalg.inv(K)}[which](W.double())
    out = getattr(k, which)(W)
    assert out.is_floating_point()
    tol = 1e-2 if dtype == torch.float16 else 1e-5
    torch.testing.assert_close(out.double(), ref, atol=tol, rtol=tol)
