"""One recovery protocol (issue 24, item 4): ``latent_actions`` dispatches MLP, conv and
attention networks, every result is a RecoveryResult, and the Activation records agree
with the tables they replaced."""
import numpy as np
import pytest
import torch

from eqlib.actions import trivial
from eqlib.groups import dihedral, flip
from eqlib.images import image_dihedral, mirror, patchify
from eqlib.latent import latent_actions, plant_equivariant
from eqlib.latent.attention import patch_mirror_action, plant_attention_equivariant
from eqlib.latent.conv import ConvLatentActions, plant_c4_conv
from eqlib.latent.core import model_family
from eqlib.latent.result import AttentionNetworkActions, LatentActions, RecoveryResult
from eqlib.models import ACTIVATIONS, MLP, ODD_ACTIVATIONS, Model
from eqlib.models.activation import ACTIVATION_RECORDS, activation_record
from eqlib.models.convnet import conv_net
from eqlib.symmetries import KINDS, symmetry_group


def _check(res):
    assert isinstance(res, RecoveryResult)
    assert isinstance(res.summary(), str) and res.summary()
    assert np.asarray(res.layer_errors).ndim >= 1
    return res


@pytest.mark.parametrize("seed", [0, 1])
def test_mlp_through_the_one_entry_point(seed):
    D4 = dihedral(4)
    rin, rout = image_dihedral((1, 4, 4)), trivial(D4, 3)
    net, _ = plant_equivariant(D4, rin, rout, [16, 24, 16, 3], activation="tanh", seed=seed)
    for method in ("weights", "activations"):
        res = _check(latent_actions(net, rin, rout, method=method))
        assert isinstance(res, LatentActions) and res.ok, res.summary()
    assert model_family(net) == "mlp"


def test_keyword_only_after_the_three_essentials():
    G = flip()
    net, _ = plant_equivariant(G, mirror((1, 4, 4)), trivial(G, 3), [16, 12, 3], activation="tanh", seed=0)
    with pytest.raises(TypeError):
        latent_actions(net, mirror((1, 4, 4)), trivial(G, 3), "weights")


@pytest.mark.parametrize("seed", [0, 3])
def test_conv_through_the_one_entry_point(seed):
    p = plant_c4_conv([["trivial"], ["regular", "sign"], ["regular"], ["trivial"]], seed=seed)
    res = _check(latent_actions(p.model, p.rho_in, p.rho_out))
    assert isinstance(res, ConvLatentActions) and res.ok, res.summary()
    assert res.layer_errors.shape == (len(p.model.layers), 4) and res.layer_errors.max() <= res.tol
    for i, action in enumerate(p.hidden_actions):
        for g in action.group:
            assert torch.equal(res.k[i][g.name], action.matrix(g))
    bad = _check(latent_actions(conv_net([1, 8, 8, 1], 7, seed=0), None, None))
    assert not bad.ok
    with pytest.raises(ValueError, match="weights"):
        latent_actions(p.model, p.rho_in, p.rho_out, method="lstsq")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_attention_through_the_one_entry_point(seed):
    act = patch_mirror_action((1, 4, 6), 2)
    tau = np.array([[0, 1, 2, 3], [1, 0, 2, 3]])
    planted = plant_attention_equivariant(act, tau, d_k=4, d_v=4, seed=seed)
    x = patchify(torch.randn(8, 1, 4, 6, generator=torch.Generator().manual_seed(seed)), 2)
    for model in (planted.layer, Model([planted.layer])):
        assert model_family(model) == "attention"
        res = _check(latent_actions(model, act, None, x=x))
        assert isinstance(res, AttentionNetworkActions) and res.ok, res.summary()
        assert res.layers[0].head_perm["m"].tolist() == planted.head_perm["m"].tolist()
        assert res.layer_errors.shape == (1,) and res.layer_errors.max() < 1e-4


def test_activation_records_agree_with_the_tables_they_replace():
    assert set(ACTIVATIONS) == set(ACTIVATION_RECORDS)
    assert ODD_ACTIVATIONS == {"tanh", "identity"}
    expected = {"tanh": "signed_permutation", "relu": "scaled_permutation", "gelu": "permutation",
                "sigmoid": "permutation", "identity": "nonzero_scaled_permutation"}
    z = torch.randn(64, generator=torch.Generator().manual_seed(0))
    for name, rec in ACTIVATION_RECORDS.items():
        assert rec.kind == expected[name] in KINDS
        assert symmetry_group(name, 3).kind == rec.kind == symmetry_group(rec, 3).kind
        assert rec.odd == bool(torch.allclose(rec.fn(-z), -rec.fn(z)))
        torch.testing.assert_close(rec.apply_(z.clone()), rec.fn(z))
    with pytest.raises(ValueError, match="unknown activation"):
        activation_record("swish")
    with pytest.raises(TypeError):
        activation_record(3)
    assert MLP([4, 5, 2], "relu").layers[0].sigma is activation_record("relu")
    assert conv_net([1, 2, 1], 5).layers[-1].sigma.linear
