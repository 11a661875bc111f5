"""eqlib.seeds: the one place that seeds global generators (``torch_seeded``,
``seed_everything``); checked against torch's, numpy's and Python's own seeding."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from eqlib import seeds


@pytest.mark.parametrize("seed", [0, 1, 2**40])
def test_torch_seeded_draws_as_manual_seed_and_restores_the_global_state(seed):
    torch.manual_seed(99)
    before = torch.get_rng_state()
    with seeds.torch_seeded(seed):
        inside = torch.rand(5)
    assert torch.equal(torch.get_rng_state(), before)
    assert torch.equal(inside, torch.rand(5, generator=torch.Generator().manual_seed(seed)))


def test_torch_seeded_none_is_the_default_seed():
    with seeds.torch_seeded(None):
        a = torch.rand(3)
    with seeds.torch_seeded(seeds.DEFAULT_SEED):
        b = torch.rand(3)
    assert torch.equal(a, b)


@pytest.mark.parametrize("seed", [0, 7, 2**33 + 5])
def test_seed_everything_seeds_torch_numpy_and_random(seed):
    seeds.seed_everything(seed)
    got = (torch.rand(3), np.random.rand(3), random.random())
    ref_t = torch.rand(3, generator=torch.Generator().manual_seed(seed))
    ref_np = np.random.RandomState(seed % 2**32).rand(3)
    ref_py = random.Random(seed).random()
    assert torch.equal(got[0], ref_t) and np.array_equal(got[1], ref_np) and got[2] == ref_py


@pytest.mark.parametrize("bad,exc", [(-1, ValueError), (1.5, ValueError), (True, TypeError), ("0", TypeError),
                                     (2**63, ValueError)])
def test_seeding_refuses_bad_seeds(bad, exc):
    with pytest.raises(exc, match="seed"):
        seeds.seed_everything(bad)
    with pytest.raises(exc, match="seed"):
        with seeds.torch_seeded(bad):
            pass


def test_spawned_streams_are_reproducible_and_unrelated():
    a = torch.rand(1000, generator=seeds.spawn(1, "data"))
    assert torch.equal(a, torch.rand(1000, generator=seeds.spawn(1, "data")))
    # the offset scheme's collision (stream "data" of seed 1 == stream of seed 2) is gone
    others = [seeds.spawn(2, "data"), seeds.spawn(1, "init"), seeds.spawn(0, "data"),
              seeds.torch_generator(1), seeds.torch_generator(2)]
    for g in others:
        assert abs(torch.corrcoef(torch.stack([a, torch.rand(1000, generator=g)]))[0, 1]) < 0.15
    assert seeds.derive_seed(None, "x") == seeds.derive_seed(seeds.DEFAULT_SEED, "x")
    assert 0 <= seeds.derive_seed(2**63 - 1, "x") <= seeds.MAX_SEED


@pytest.mark.parametrize("key", [3, "", None, b"k"])
def test_spawn_refuses_a_key_that_is_not_a_name(key):
    with pytest.raises(TypeError, match="key"):
        seeds.spawn(0, key)
