"""Inactive and redundant neurons, reduce and the embedding maps (eqlib.submodels)."""
import pytest
import torch

from eqlib.models import MLP, AttentionNetwork
from eqlib.submodels import find_clones, find_inactive, plant_degenerate, reduce
from eqlib.seeds import torch_generator

X = torch.randn(256, 6, generator=torch.Generator().manual_seed(0))


def planted(act, seed=0, widths=(6, 10, 8, 7, 3), **kw):
    net = MLP(list(widths), act, seed=seed)
    counts = dict(n_dead=2, n_constant=2, n_clones=3, n_negated=2 if act == "tanh" else 0)
    counts.update(kw)
    return net, plant_degenerate(net, seed=seed + 1, **counts)


@pytest.mark.parametrize("act", ["tanh", "relu", "gelu", "sigmoid"])
def test_plant_keeps_function_and_reduce_recovers_it(act):
    net, big = planted(act)
    extra = 2 + 2 + 3 + (2 if act == "tanh" else 0)
    assert big.widths == [6] + [w + extra for w in net.widths[1:-1]] + [3]
    with torch.no_grad():
        torch.testing.assert_close(big(X), net(X), atol=1e-5, rtol=1e-5)
        red = reduce(big)
        assert red.model.widths == net.widths
        torch.testing.assert_close(red.model(X), net(X), atol=1e-5, rtol=1e-5)
    errs = red.diagram_errors(X)
    assert errs["alpha_star_alpha"] == 0.0
    assert errs["layers"] < 1e-5 and errs["end_to_end"] < 1e-5 and errs["beta_roundtrip"] < 1e-5


@pytest.mark.parametrize("act", ["tanh", "relu", "gelu", "sigmoid"])
def test_beta_commutes_for_other_submodel_parameters(act):
    _, big = planted(act, seed=3)
    red = reduce(big)
    other = MLP(red.model.widths, act, seed=11)  # a parameter θ̃ that is not the reduced one
    errs = red.diagram_errors(X, other)
    assert errs["layers"] < 1e-5 and errs["end_to_end"] < 1e-5
    full = red.beta(other)
    assert full.widths == big.widths
    # the embedded parameter has the same degeneracies: it reduces back to θ̃
    again = reduce(full)
    for p, q in zip(again.model.parameters(), other.parameters()):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-5)


def test_reduce_is_idempotent_and_a_generic_net_is_already_reduced():
    _, big = planted("tanh", seed=5)
    red = reduce(big)
    red2 = reduce(red.model)
    assert red2.model.widths == red.model.widths
    for p, q in zip(red2.model.parameters(), red.model.parameters()):
        assert torch.equal(p, q)
    net = MLP([6, 20, 20, 3], "gelu", seed=4)
    assert reduce(net).model.widths == net.widths
    assert all(len(g) == 0 for g in find_clones(net))
    assert all(d["dead"].numel() == 0 and d["constant"].numel() == 0 for d in find_inactive(net))


def test_embedding_maps_shapes_and_identities():
    _, big = planted("relu", seed=2)
    red = reduce(big)
    L = big.depth
    assert len(red.alpha) == len(red.alpha_star) == len(red.live) == L + 1
    for i in range(L + 1):
        A, S = red.alpha[i], red.alpha_star[i]
        assert A.shape == (big.dims[i], red.model.dims[i]) and S.shape == A.shape[::-1]
        torch.testing.assert_close(S @ A, torch.eye(A.shape[1]))
        h = torch.randn(5, A.shape[1], generator=torch_generator(100))
        torch.testing.assert_close(red.project(i, red.embed(i, h)), h)
    assert red.kinds[1].count("dead") >= 2 and red.kinds[1].count("constant") >= 2


def test_find_inactive_and_clones_on_hand_made_net():
    net = MLP([3, 5, 2], "tanh", seed=0)
    with torch.no_grad():
        W1, b1, W2 = net.layers[0].weight, net.layers[0].bias, net.layers[1].weight
        W1[1] = 0.0  # neuron 1: constant tanh(b1[1])
        W2[:, 2] = 0.0  # neuron 2: dead
        W1[4], b1[4] = -W1[3], -b1[3]  # neuron 4: negated clone of 3
    ina = find_inactive(net)[0]
    assert ina["constant"].tolist() == [1] and ina["dead"].tolist() == [2]
    assert find_clones(net) == [[[(3, 1.0), (4, -1.0)]]]
    red = reduce(net)
    assert red.model.widths == [3, 2, 2]
    with torch.no_grad():
        torch.testing.assert_close(red.model(X[:, :3]), net(X[:, :3]), atol=1e-6, rtol=1e-6)
    # for GELU the negated copy is not redundant
    net.layers[0].activation = "gelu"
    assert find_clones(net) == [[]]


def test_relu_scaled_clones_merge():
    net = MLP([3, 4, 2], "relu", seed=0)
    with torch.no_grad():
        net.layers[0].weight[2] = 2.5 * net.layers[0].weight[0]
        net.layers[0].bias[2] = 2.5 * net.layers[0].bias[0]
    groups = find_clones(net)[0]
    assert len(groups) == 1 and groups[0][0] == (0, 1.0) and groups[0][1][0] == 2
    assert abs(groups[0][1][1] - 2.5) < 1e-5
    red = reduce(net)
    assert red.model.widths == [3, 3, 2]
    with torch.no_grad():
        torch.testing.assert_close(red.model(X[:, :3]), net(X[:, :3]), atol=1e-6, rtol=1e-6)


def test_cascade_needs_several_passes():
    # merging two clones in layer 1 makes two rows of layer 2 equal
    net = MLP([3, 3, 2, 1], "tanh", seed=0)
    with torch.no_grad():
        l1, l2 = net.layers[0], net.layers[1]
        l1.weight[1], l1.bias[1] = l1.weight[0], l1.bias[0]
        l2.weight[0] = torch.tensor([1.0, 0.0, 0.5])
        l2.weight[1] = torch.tensor([0.0, 1.0, 0.5])
        l2.bias[1] = l2.bias[0]
    assert find_clones(net)[1] == []  # not visible in one pass
    red = reduce(net)
    assert red.model.widths == [3, 2, 1, 1]
    with torch.no_grad():
        torch.testing.assert_close(red.model(X[:, :3]), net(X[:, :3]), atol=1e-6, rtol=1e-6)
    # the two rows of layer 2 agree only in their class sums; β keeps θ's deviation
    # (1, -1, 0) of the derived clone, so β(reduce(θ)) = θ (it was 1.0 off before)
    errs = red.diagram_errors(X[:, :3])
    assert errs["beta_roundtrip"] < 1e-5
    assert errs["layers"] < 1e-5 and errs["end_to_end"] < 1e-5
    other = MLP(red.model.widths, "tanh", seed=5)
    errs = red.diagram_errors(X[:, :3], other)
    assert errs["layers"] < 1e-5 and errs["end_to_end"] < 1e-5
    full = red.beta(other)
    W2 = full.layers[1].weight.detach()
    torch.testing.assert_close(W2[1] - W2[0], torch.tensor([-1.0, 1.0, 0.0]))


def _derived_clone_net(seed):
    """Clones that only a second pass finds: rows of layer 2 that agree in class sums."""
    net = MLP([6, 5, 4, 3, 2], "tanh", seed=seed)
    with torch.no_grad():
        W1, b1 = net.layers[0].weight, net.layers[0].bias
        W2, b2, W3 = net.layers[1].weight, net.layers[1].bias, net.layers[2].weight
        W1[4], b1[4] = -W1[3], -b1[3]  # negated clone: class sum W_2[:, 3] - W_2[:, 4]
        e = torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0])  # zero class sums
        W2[1], b2[1] = W2[0] + 0.7 * e, b2[0]  # a derived clone of neuron 0
        W2[3], b2[3] = -W2[2] + 0.5 * e, -b2[2]  # a derived negated clone of neuron 2
        W3[:, 3] = W3[:, 2]  # ... whose class {2, 3} is then dead
    return net


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beta_keeps_the_deviation_of_derived_clones(seed):
    net = _derived_clone_net(seed)
    assert find_clones(net)[1] == []
    red = reduce(net)
    assert red.model.widths == [6, 4, 1, 3, 2]
    assert red.kinds[2] == ["live", "live", "dead", "dead"]
    errs = red.diagram_errors(X)
    assert errs["beta_roundtrip"] < 1e-5  # 0.7 with β(θ̃) rows = c_j × representative's
    other = MLP(red.model.widths, "tanh", seed=seed + 9)
    for sub in (red.model, other):
        errs = red.diagram_errors(X, sub)
        assert errs["layers"] < 1e-5 and errs["end_to_end"] < 1e-5
        full = red.beta(sub)
        with torch.no_grad():
            lat, lat_sub = full.latents(X), sub.latents(X)
            for i in range(1, full.depth):
                keep, keep_next = red.live[i].float(), red.live[i + 1].float()
                # condition (b) on reached latents, and the lemma J_i y_i = α_i(ỹ_i)
                gap = (full.layers[i](lat[i - 1] * keep) - full.layers[i](lat[i - 1])) * keep_next
                assert float(gap.abs().max()) < 1e-5
                torch.testing.assert_close(lat[i - 1] * keep, red.embed(i, lat_sub[i - 1]),
                                           atol=1e-5, rtol=0)
            # the dead class {2, 3} of layer 2 keeps h_3 = -h_2 on reached latents
            torch.testing.assert_close(lat[1][:, 3], -lat[1][:, 2], atol=1e-6, rtol=0)
        again = reduce(full).model
        for p, q in zip(again.parameters(), sub.parameters()):
            torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-5)


def test_no_bias_and_sigmoid_constants_are_kept():
    net = MLP([3, 4, 2], "sigmoid", bias=False, seed=0)
    with torch.no_grad():
        net.layers[0].weight[1] = 0.0  # outputs sigmoid(0) = 1/2, no bias to fold it into
    red = reduce(net)
    assert red.model.widths == [3, 4, 2]
    net_t = MLP([3, 4, 2], "tanh", bias=False, seed=0)
    with torch.no_grad():
        net_t.layers[0].weight[1] = 0.0  # outputs tanh(0) = 0: droppable
    assert reduce(net_t).model.widths == [3, 3, 2]


def test_errors():
    net = MLP([3, 4, 2], "tanh", seed=0)
    with torch.no_grad():
        net.layers[1].weight.zero_()
    with pytest.raises(ValueError, match="every neuron of hidden layer 1 is inactive"):
        reduce(net)
    bad = MLP([3, 4, 2], "tanh", seed=0)
    with torch.no_grad():
        bad.layers[1].bias[0] = float("nan")
    with pytest.raises(ValueError, match="layers.1.bias"):
        reduce(bad)
    with pytest.raises(TypeError, match="MLP"):
        reduce(AttentionNetwork(3, [4, 4]))
    with pytest.raises(TypeError, match="MLP"):
        find_inactive(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="tol"):
        reduce(MLP([3, 4, 2]), tol=-1)
    with pytest.raises(ValueError, match="odd"):
        plant_degenerate(MLP([3, 4, 2], "relu"), n_negated=1)
    with pytest.raises(ValueError, match="biases"):
        plant_degenerate(MLP([3, 4, 2], "relu", bias=False), n_constant=1)
    red = reduce(MLP([3, 4, 2], "tanh", seed=1))
    with pytest.raises(ValueError, match="widths"):
        red.beta(MLP([3, 5, 2], "tanh"))


def test_class_sizes_count_clones():
    """Reduction.class_sizes: units per live class (used by chapter 6's lift criterion)."""
    net = MLP([6, 10, 8, 3], "tanh", seed=2)
    big = plant_degenerate(net, n_dead=1, n_constant=1, n_clones=2, n_negated=1, seed=4)
    red = reduce(big)
    for i in (1, 2):
        sizes = red.class_sizes(i)
        assert sizes.shape == (red.model.dims[i],) and bool((sizes >= 1).all())
        kinds = red.kinds[i]
        assert int(sizes.sum()) == sum(k == "live" for k in kinds)  # every live unit, once
        assert int((sizes - 1).sum()) == 3  # two clones and one negated clone per layer
    assert bool((red.class_sizes(0) == 1).all())


# -- bad input names the argument (issue 16) ----------------------------------------------------
@pytest.mark.parametrize("call,message", [
    (lambda net: reduce(net, tol=float("inf")), "tol must be a finite number >= 0"),
    (lambda net: reduce(net, tol="small"), "tol must be a finite number"),
    (lambda net: reduce(net, max_passes=0), "max_passes must be an integer >= 1"),
    (lambda net: find_clones(net, tol=-1e-3), "tol must be a finite number >= 0"),
    (lambda net: plant_degenerate(net, n_dead=1.5), "n_dead must be an integer >= 0"),
    (lambda net: plant_degenerate(net, seed=-3), "seed must be an integer >= 0"),
    (lambda net: reduce(net).diagram_errors(torch.zeros(0, 4)), "x must not be empty"),
])
def test_submodel_arguments_are_checked(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call(MLP([4, 5, 3], activations="tanh", seed=0))
