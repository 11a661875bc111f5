"""Flags, containers and bounds (issue 21, items 7-8): truthy strings are not flags, sets
are not sequences, empty element lists check nothing, and no huge number makes a call hang.
Each case was accepted (silently wrong) or hung on the code before."""
from __future__ import annotations

import time

import pytest
import torch

from eqlib import actions, groups
from eqlib.data import load_cifar10
from eqlib.models import MLP
from eqlib.models.cnn import VGG
from eqlib.train import TrainConfig, train
from eqlib.validation import check_sequence


@pytest.mark.parametrize("value", ["no", "yes", 0, 1, None])
def test_vgg_batchnorm_must_be_a_bool(value):
    """VGG(batchnorm='no') kept BatchNorm."""
    with pytest.raises(TypeError, match="batchnorm must be True or False"):
        VGG([8, "M"], batchnorm=value)


@pytest.mark.parametrize("value", ["yes", "no", 1])
def test_load_cifar10_flags_must_be_bools(value, tmp_path):
    with pytest.raises(TypeError, match="cache must be True or False"):
        load_cifar10("test", root=tmp_path, cache=value)
    with pytest.raises(TypeError, match="download must be True or False"):
        load_cifar10("test", root=tmp_path, download=value)


@pytest.mark.parametrize("widths", [{6, 5, 4}, frozenset({6, 4}), {"a": 6, "b": 4}], ids=["set", "frozenset", "dict"])
def test_mlp_widths_must_be_ordered(widths):
    """MLP({6, 5, 4}) built an MLP of the sorted widths."""
    with pytest.raises(TypeError, match="widths must be a list"):
        MLP(widths)


def test_mlp_widths_must_be_integers():
    with pytest.raises(ValueError, match=r"widths\[1\]"):
        MLP([6, 5.9, 4])


def test_check_sequence():
    assert check_sequence("s", (1, 2)) == [1, 2] and check_sequence("s", range(2)) == [0, 1]
    for bad in ({1}, "ab", {"a": 1}, 3, None):
        with pytest.raises(TypeError, match="s must be a list or tuple"):
            check_sequence("s", bad)
    with pytest.raises(ValueError, match="s must not be empty"):
        check_sequence("s", [], nonempty=True)


def test_check_equivariance_refuses_no_elements_and_sets():
    """check_equivariance(elements=[]) returned {}: a check of nothing that reads as a pass."""
    rho = actions.regular(groups.cyclic(3))
    x = torch.rand(4, 3)
    with pytest.raises(ValueError, match="elements must not be empty"):
        actions.check_equivariance(lambda v: v, rho, rho, x, elements=[])
    with pytest.raises(TypeError, match="elements must be a list"):
        actions.check_equivariance(lambda v: v, rho, rho, x, elements=set(rho.group.elements))
    assert len(actions.check_equivariance(lambda v: v, rho, rho, x, elements=rho.group.elements[:2])) == 2


@pytest.mark.parametrize("n", [10**10, -(10**10) - 1, 10**100], ids=["1e10", "-1e10-1", "1e100"])
def test_huge_powers_do_not_hang(n):
    """g ** 10**10 looped 10**10 times."""
    g = groups.cyclic(7).elements[3]
    t0 = time.perf_counter()
    got = g ** n
    assert time.perf_counter() - t0 < 1.0
    assert got == g ** (n % 7)  # a^7 = e in C_7
    s = groups.symmetric(4)
    for a in s.elements[:6]:
        assert a ** n == a ** (n % a.order)


def test_small_powers_unchanged():
    g = groups.cyclic(5).elements[2]
    for n in range(-12, 13):
        want = g.group.identity
        for _ in range(abs(n)):
            want = want @ (g if n >= 0 else ~g)
        assert g ** n == want


def test_regular_of_a_big_group_is_refused_fast():
    """actions.regular(symmetric(7)) made 25 million act calls."""
    big = groups.cyclic(actions.REGULAR_MAX_ORDER + 1)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="orders above"):
        actions.regular(big)
    assert time.perf_counter() - t0 < 1.0
    assert actions.regular(groups.cyclic(4)).dim == 4


@pytest.mark.parametrize("device", ["cpu:1", "cpu:7", "meta"])
def test_train_refuses_devices_that_do_not_exist(device):
    """train(device='cpu:1') trained on the CPU and recorded 'cpu:1'."""
    images = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    labels = torch.randint(0, 3, (8,))
    with pytest.raises(ValueError, match="device"):
        train(MLP([3072, 4, 3], seed=0), images, labels, TrainConfig(epochs=1), device=device, progress=False)
