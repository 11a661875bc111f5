"""paired_features acting on the first layer's weight (the adjunction) gives the same
features as permuting the inputs."""
from __future__ import annotations

import pytest
import torch

from eqlib.actions import mirror
from eqlib.groups import flip
from eqlib.latent import paired_features
from eqlib.models import MLP


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("layers", [1, 2])
def test_adjoint_features_match_permuted_inputs(seed, layers):
    G, act = flip(), mirror((3, 8, 8), "horizontal")
    net = MLP([192, 16, 8, 4], activations=["tanh", "gelu"], seed=seed)
    for g in G:
        fast = paired_features(net.prefix(layers), act, g, 500, seed, chunk_size=128)
        slow = paired_features(net.prefix(layers), act, g, 500, seed, chunk_size=128,
                               use_adjoint=False)
        for a, b in zip(fast, slow):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    # an independent reference for f(m y): mirror the images by flipping the last axis
    y = torch.randn(50, 3, 8, 8, generator=torch.Generator().manual_seed(seed))
    F, Fg = paired_features(net.prefix(1), act, G["m"], y.flatten(1))
    torch.testing.assert_close(Fg, net.prefix(1)(y.flip(-1).flatten(1)), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(F, net.prefix(1)(y.flatten(1)), rtol=1e-5, atol=1e-5)
