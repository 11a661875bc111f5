import pytest
import torch

from eqlib.actions import trivial
from eqlib.images import mirror
from eqlib.exercises import ExerciseError
from eqlib.exercises.ch06 import (check_clone_lift, check_latent_action, check_row_matcher,
                                  check_transported_weight)
from eqlib.groups import flip
from eqlib.latent import latent_actions, match_units, plant_equivariant
from eqlib.models import MLP


@pytest.fixture(scope="module")
def planted():
    G = flip()
    rin, rout = mirror((1, 4, 4)), trivial(G, 3)
    net, _ = plant_equivariant(G, rin, rout, [16, 12, 3], activation="tanh", seed=0)
    return G, rin, rout, net


def test_transported_weight(planted):
    G, rin, _, net = planted
    W = net.layers[0].weight.detach()
    assert check_transported_weight(net, rin, G["m"], W @ rin.matrix(G["m"])) is None
    with pytest.raises(ExerciseError):
        check_transported_weight(net, rin, G["m"], W * 2)


def test_latent_action(planted):
    G, rin, rout, net = planted
    perm, signs = latent_actions(net, rin, rout).structured(1, G["m"])
    assert check_latent_action(net, rin, G["m"], perm, signs) is None
    with pytest.raises(ExerciseError):
        check_latent_action(net, rin, G["m"], perm, -signs)
    with pytest.raises(ExerciseError):
        check_latent_action(net, rin, G["m"], torch.zeros(12), signs)


def test_transported_weight_wrong_shape(planted):
    G, rin, _, net = planted
    with pytest.raises(ExerciseError, match="shape"):
        check_transported_weight(net, rin, G["m"], torch.zeros(3, 3))


def _reference_matcher(A, B):
    perm, signs, _ = match_units(A, B, signed=True)
    return perm, signs


def test_row_matcher(planted):
    G, rin, rout, net = planted
    res = latent_actions(net, rin, rout)
    assert check_row_matcher(_reference_matcher, net, rin, res) is None

    def unsigned(A, B):                      # ignores signs: wrong on a sign flip
        perm, _ = _reference_matcher(A, B)
        return perm, torch.ones(len(perm))

    with pytest.raises(ExerciseError, match="expected perm"):
        check_row_matcher(unsigned, net, rin, res)
    with pytest.raises(ExerciseError, match="pair"):
        check_row_matcher(lambda A, B: _reference_matcher(A, B)[0], net, rin, res)
    with pytest.raises(ExerciseError, match="function"):
        check_row_matcher(None, net, rin, res)


def _small():
    net = MLP([2, 2, 2, 1], "tanh", seed=0)
    weights = [([[2.0, -1.0], [1.0, -2.0]], [0.5, -0.5]),
               ([[1.0, 0.5], [-0.5, -1.0]], [0.3, 0.3]), ([[1.0, 1.0]], [0.2])]
    with torch.no_grad():
        for layer, (W, b) in zip(net.layers, weights):
            layer.weight.copy_(torch.tensor(W))
            layer.bias.copy_(torch.tensor(b))
    return net


def _cloned(small, first=0.5, second=0.5):
    net = MLP([2, 3, 2, 1], "tanh", seed=0)
    with torch.no_grad():
        W1, b1, W2 = small.layers[0].weight, small.layers[0].bias, small.layers[1].weight
        net.layers[0].weight.copy_(torch.cat([W1, W1[:1]]))
        net.layers[0].bias.copy_(torch.cat([b1, b1[:1]]))
        net.layers[1].weight.copy_(
            torch.cat([W2[:, :1] * first, W2[:, 1:], W2[:, :1] * second], 1))
        net.layers[1].bias.copy_(small.layers[1].bias)
        net.layers[2].weight.copy_(small.layers[2].weight)
        net.layers[2].bias.copy_(small.layers[2].bias)
    return net


def test_clone_lift_messages(capsys):
    """A wrong answer names the wrong rows without printing the lift; the success message
    says "not in K_1" only when the lift is not in K_1 (at g = e it is the identity)."""
    G, m = flip(), flip()["m"]
    swap, rout = mirror((1, 1, 2)), trivial(G, 1)
    small = _small()
    lift = torch.tensor([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [-1.0, -1.0, 1.0]])
    wrong = lift.clone()
    wrong[2] = torch.tensor([0.0, 0.0, 1.0])
    with pytest.raises(ExerciseError) as err:
        check_clone_lift(small, _cloned(small), swap, rout, m, wrong)
    assert "row(s) [3]" in str(err.value) and "-1.0, -1.0, 1.0" not in str(err.value)
    assert "expected" not in str(err.value)
    check_clone_lift(small, _cloned(small), swap, rout, m, lift)
    out = capsys.readouterr().out
    assert "3 nonzero entries" in out and "not in K_1" in out
    check_clone_lift(small, _cloned(small), swap, rout, G["e"], torch.eye(3))
    out = capsys.readouterr().out
    assert "is in K_1" in out and "not in K_1" not in out


def test_clone_lift():
    G, m = flip(), flip()["m"]
    swap, rout = mirror((1, 1, 2)), trivial(G, 1)
    small = _small()
    lift = torch.tensor([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [-1.0, -1.0, 1.0]])
    assert check_clone_lift(small, _cloned(small), swap, rout, m, lift) is None
    with pytest.raises(ExerciseError, match="not the lift"):   # the reduced action, padded
        pad = torch.zeros(3, 3)
        pad[:2, :2], pad[2, 2] = lift[:2, :2], 1.0
        check_clone_lift(small, _cloned(small), swap, rout, m, pad)
    with pytest.raises(ExerciseError, match="different function"):
        check_clone_lift(small, _cloned(small, first=1.0, second=1.0), swap, rout, m, lift)
    with pytest.raises(ExerciseError, match="widths"):
        check_clone_lift(small, small, swap, rout, m, lift)


def test_clone_lift_rejects_a_dead_unit():
    """Referee round 2, B3: a third unit that is dead (random row, zero outgoing column)
    keeps the function but is no clone; the checker must not call its lift correct."""
    G, m = flip(), flip()["m"]
    swap, rout = mirror((1, 1, 2)), trivial(G, 1)
    small = _small()
    dead = MLP([2, 3, 2, 1], "tanh", seed=0)
    with torch.no_grad():
        W1, b1, W2 = small.layers[0].weight, small.layers[0].bias, small.layers[1].weight
        dead.layers[0].weight.copy_(torch.cat([W1, torch.tensor([[0.7, 0.1]])]))
        dead.layers[0].bias.copy_(torch.cat([b1, torch.tensor([0.2])]))
        dead.layers[1].weight.copy_(torch.cat([W2, torch.zeros(2, 1)], 1))
        dead.layers[1].bias.copy_(small.layers[1].bias)
        dead.layers[2].weight.copy_(small.layers[2].weight)
        dead.layers[2].bias.copy_(small.layers[2].bias)
    answer = latent_actions(dead, swap, rout).matrix(1, m)
    with pytest.raises(ExerciseError, match="clone"):
        check_clone_lift(small, dead, swap, rout, m, answer)
