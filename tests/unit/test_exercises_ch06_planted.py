import pytest
import torch

from eqlib.actions import mirror, trivial
from eqlib.exercises import ExerciseError
from eqlib.exercises.ch06 import check_latent_action, check_transported_weight
from eqlib.groups import flip
from eqlib.latent import latent_actions, plant_equivariant


@pytest.fixture(scope="module")
def planted():
    G = flip()
    rin, rout = mirror((1, 4, 4)), trivial(G, 3)
    net, _ = plant_equivariant(G, rin, rout, [16, 12, 3], "tanh", seed=0)
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
