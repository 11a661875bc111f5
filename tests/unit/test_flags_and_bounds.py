"""Flags, containers and bounds (issue 21, items 7-8): truthy strings are not flags, sets
are not sequences, empty element lists check nothing, and no huge number makes a call hang.
Each case was accepted (silently wrong) or hung on the code before."""
from __future__ import annotations

import time

import pytest
import torch

from eqlib import actions, groups, images
from eqlib.data import load_cifar10
from eqlib.models import MLP, Model
from eqlib.models.cnn import VGG
from eqlib.train import TrainConfig, image_preset, train
from eqlib.validation import check_sequence
from eqlib.seeds import torch_generator

#: the CIFAR-10 preset (mirror symmetry, normalisation) of the image runs here
IMG = image_preset()


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
    x = torch.rand(4, 3, generator=torch_generator(100))
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
        train(MLP([3072, 4, 3], seed=0), (images, labels), TrainConfig(epochs=1), device=device, progress=False, **IMG)


# -- symmetries: tolerances (NaN disabled the checks) ---------------------------------------------

def _tol_calls():
    from eqlib.symmetries import SymmetryElement, apply_symmetry, intertwines, symmetry_group
    k = SymmetryElement([1, 0], [1.0, -1.0])
    K = symmetry_group("tanh", 2)
    net = MLP([3, 2, 2], "tanh", seed=0)
    return {
        "from_matrix": lambda t: SymmetryElement.from_matrix(k.matrix(), tol=t),
        "allclose": lambda t: k.allclose(k, tol=t),
        "contains": lambda t: K.contains(k, tol=t),
        "intertwines": lambda t: intertwines("tanh", k, torch.randn(4, 2, generator=torch_generator(101)), tol=t),
        "apply_symmetry": lambda t: apply_symmetry(net, [k], tol=t),
    }


@pytest.mark.parametrize("name", ["from_matrix", "allclose", "contains", "intertwines", "apply_symmetry"])
@pytest.mark.parametrize("tol", [float("nan"), -1e-3, float("-inf"), "0.1", True, None])
def test_symmetry_tolerances_refuse_nan_and_negatives(name, tol):
    call = _tol_calls()[name]
    with pytest.raises((TypeError, ValueError), match="tol must be"):
        call(tol)


@pytest.mark.parametrize("name", ["from_matrix", "allclose", "contains", "intertwines", "apply_symmetry"])
def test_symmetry_tolerances_accept_zero_and_positive(name):
    call = _tol_calls()[name]
    call(0.0), call(1e-6), call(0.5)


@pytest.mark.parametrize("value", ["no", 0, None])
def test_apply_symmetry_check_must_be_a_bool(value):
    from eqlib.symmetries import SymmetryElement, apply_symmetry
    with pytest.raises(TypeError, match="check must be True or False"):
        apply_symmetry(MLP([3, 2, 2], "tanh", seed=0), [SymmetryElement([1, 0])], check=value)


# -- latent: flags, widths, gain, plant_degenerate's counts ---------------------------------------

def _latent_setup():
    from eqlib.latent import plant_equivariant
    G = groups.cyclic(2)
    rho_in, rho_out = actions.regular(G), actions.regular(G)
    net, _ = plant_equivariant(G, rho_in, rho_out, [2, 4, 2], activation="tanh", seed=0)
    return G, rho_in, rho_out, net


HEADS = [[0, 1], [1, 0]]


def MIRROR():
    from eqlib.latent.attention import patch_mirror_action
    return patch_mirror_action((1, 4, 4), 2)


def _flag_calls():
    from eqlib import latent
    from eqlib.latent import attention, conv, units, weights
    from eqlib.latent.plant import hidden_representation
    G, rho_in, rho_out, net = _latent_setup()
    A, B = torch.randn(5, 3, generator=torch_generator(102)), torch.randn(5, 3, generator=torch_generator(103))
    return {
        "latent_actions.reduce": lambda v: latent.latent_actions(net, rho_in, rho_out, reduce=v),
        "plant_equivariant.hide": lambda v: latent.plant_equivariant(G, rho_in, rho_out, [2, 4, 2], hide=v),
        "hidden_representation.signed": lambda v: hidden_representation(G, 4, v),
        "match_units.signed": lambda v: units.match_units(A, B, signed=v),
        "match_units.scaled": lambda v: units.match_units(A, B, scaled=v),
        "assign.signed": lambda v: units.assign(A.T @ B, v),
        "recover_by_weights.check_clones": lambda v: weights.recover_by_weights(net, rho_in, rho_out,
                                                                              check_clones=v),
        "paired_features.use_adjoint": lambda v: latent.paired_features(net, rho_in, G.elements[1], samples=8,
                                                                         use_adjoint=v),
        "plant_c4_conv.hide": lambda v: conv.plant_c4_conv([["trivial"], ["regular"], ["trivial"]], hide=v),
        "plant_attention_equivariant.hide": lambda v: attention.plant_attention_equivariant(
            MIRROR(), HEADS, hide=v),
        "plant_attention_equivariant.positional": lambda v: attention.plant_attention_equivariant(
            MIRROR(), HEADS, positional=v),
        "hide_attention_network.heads": lambda v: attention.hide_attention_network(
            Model([latent.plant_attention_equivariant(MIRROR(), HEADS).layer] * 2), heads=v),
    }


FLAGS = ["latent_actions.reduce", "plant_equivariant.hide", "hidden_representation.signed",
         "match_units.signed", "match_units.scaled", "assign.signed", "recover_by_weights.check_clones",
         "paired_features.use_adjoint", "plant_c4_conv.hide", "plant_attention_equivariant.hide",
         "plant_attention_equivariant.positional", "hide_attention_network.heads"]


@pytest.mark.parametrize("flag", FLAGS)
@pytest.mark.parametrize("value", ["no", 0, None])
def test_latent_flags_must_be_bools(flag, value):
    """latent_actions(reduce='no') reduced the network ('no' is truthy)."""
    call = _flag_calls()[flag]
    with pytest.raises(TypeError, match=rf"{flag.split('.')[1]} must be True or False"):
        call(value)


@pytest.mark.parametrize("widths", [{2, 4}, frozenset({2, 4, 2}), {"a": 2}, "242", 4],
                         ids=["set", "frozenset", "dict", "str", "int"])
def test_plant_equivariant_widths_must_be_a_sequence(widths):
    from eqlib.latent import plant_equivariant
    G, rho_in, rho_out, _ = _latent_setup()
    with pytest.raises(TypeError, match="widths must be a list"):
        plant_equivariant(G, rho_in, rho_out, widths)


@pytest.mark.parametrize("widths", [[2, 5.9, 2], [2, 4.5, 2], [2, float("nan"), 2], [2, 0, 2], [2, -4, 2]])
def test_plant_equivariant_widths_must_be_integers(widths):
    """plant_equivariant(widths=[6, 5.9, 4]) truncated 5.9 to 5."""
    from eqlib.latent import plant_equivariant
    G, rho_in, rho_out, _ = _latent_setup()
    with pytest.raises(ValueError, match=r"widths\[1\] must be an integer"):
        plant_equivariant(G, rho_in, rho_out, widths)


@pytest.mark.parametrize("gain", [float("nan"), 0.0, -1.0, float("inf"), 1e-45])
def test_plant_equivariant_gain_must_be_positive(gain):
    from eqlib.latent import plant_equivariant
    G, rho_in, rho_out, _ = _latent_setup()
    with pytest.raises(ValueError, match="gain must be"):
        plant_equivariant(G, rho_in, rho_out, [2, 4, 2], gain=gain)


def test_plant_equivariant_still_takes_integral_widths():
    import numpy as np
    from eqlib.latent import plant_equivariant
    G, rho_in, rho_out, _ = _latent_setup()
    net, _ = plant_equivariant(G, rho_in, rho_out, (2, np.int64(4), 4.0, 2))
    assert net.widths == [2, 4, 4, 2]


@pytest.mark.parametrize("count", ["n_dead", "n_constant", "n_clones", "n_negated"])
def test_plant_degenerate_counts_are_bounded_by_the_width(count):
    """plant_degenerate(n_dead=10**6) ran for minutes (a loop per neuron)."""
    from eqlib.submodels import plant_degenerate
    net = MLP([3, 5, 4, 2], "tanh", seed=0)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=rf"{count} must be an integer in 0\.\.4.*narrowest hidden layer"):
        plant_degenerate(net, **{count: 10**6})
    with pytest.raises(ValueError, match=rf"{count} must be an integer in 0\.\.4"):
        plant_degenerate(net, **{count: 5})
    assert time.perf_counter() - t0 < 1.0
    assert plant_degenerate(net, **{count: 4}).widths[1] > 5


# -- seeds and devices ----------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [2**63, 2**64, 2**100, -1, True, False, 1.5, float("nan"), "3"])
def test_seed_helpers_refuse_seeds_outside_63_bits(seed):
    """seeds >= 2**64 overflowed deep inside torch; bools were taken as 0/1."""
    from eqlib.seeds import numpy_rng, torch_generator
    for helper in (torch_generator, numpy_rng):
        with pytest.raises((TypeError, ValueError), match="seed must be"):
            helper(seed)


def test_seed_helpers_take_the_largest_seed():
    from eqlib.seeds import numpy_rng, torch_generator
    assert torch_generator(2**63 - 1).initial_seed() == 2**63 - 1
    numpy_rng(2**63 - 1), torch_generator(0), numpy_rng(None)


@pytest.mark.parametrize("name", ["cpu:1", "cpu:0 ", "gpu", "cuda:99", "", "meta", 3.5, True])
def test_default_device_refuses_devices_that_do_not_exist(name, monkeypatch):
    """default_device('cpu:1') returned device('cpu', index=1)."""
    from eqlib.device import default_device
    with pytest.raises((TypeError, ValueError), match="device"):
        default_device(name)
    monkeypatch.setenv("EQLIB_DEVICE", "cpu:1")
    with pytest.raises(ValueError, match="EQLIB_DEVICE"):
        default_device()


def test_default_device_takes_real_devices(monkeypatch):
    from eqlib.device import default_device
    assert default_device("cpu") == torch.device("cpu")
    assert default_device(torch.device("cpu")) == torch.device("cpu")
    assert default_device("cpu:0") == torch.device("cpu:0")
    if torch.cuda.is_available():
        assert default_device(f"cuda:{torch.cuda.device_count() - 1}").type == "cuda"
    monkeypatch.setenv("EQLIB_DEVICE", "cpu")
    assert default_device() == torch.device("cpu")


_HOLES = """
import sys, torch
if sys.argv[1] == "eqlib":
    from eqlib.device import limit_resident_memory
    assert limit_resident_memory()
def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) / 1024
big = torch.ones(2 ** 22)  # 16 MB freed: glibc raises its threshold to 16 MB
del big
start = rss()
pairs = [(torch.ones(2 ** 18), torch.ones(256)) for _ in range(64)]  # 1 MB + a small block
held = [small for _, small in pairs]  # the small blocks stay, between the holes
del pairs
print(rss() - start)
"""


def test_limit_resident_memory_returns_freed_tensors_to_the_system():
    """Chapter 11 kept 0.3 GiB of freed batches resident: glibc served them from its heap
    once its dynamic mmap threshold had grown. eqlib.device.limit_resident_memory fixes the
    threshold (importing eqlib alone changes nothing: it costs conv training speed)."""
    import os
    import subprocess
    import sys

    if not sys.platform.startswith("linux") or not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
        pytest.skip("glibc's malloc only")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    kept = {how: float(subprocess.run([sys.executable, "-c", _HOLES, how], env=env, check=True,
                                      capture_output=True, text=True).stdout)
            for how in ("torch", "eqlib")}
    assert kept["torch"] > 48 and kept["eqlib"] < 16, kept  # MB still resident of the 64 freed
    from eqlib.device import limit_resident_memory
    with pytest.raises(ValueError, match="threshold"):
        limit_resident_memory(0)


# -- a second, independent audit (benchmarks/audit_inputs.py): each call below was accepted
# (silently), hung, exhausted memory or raised an error that did not name the argument -------
def _second_audit_cases():
    import math
    import tempfile

    import numpy as np

    from eqlib import io, matching, seeds, submodels, symmetries
    from eqlib.analysis import probes, tables
    from eqlib.latent import attention as latt, conv as lconv, generalized as lgen, result as lres
    from eqlib.latent.weights import maybe_degenerate
    from eqlib.models import AttentionNetwork
    from eqlib.models.cnn import warm_batchnorm
    from eqlib.models.convnet import conv_net

    C3 = groups.cyclic(3)
    net = MLP([3, 4, 3], seed=0)
    vgg = VGG([4, "M", 4], image_size=8, num_classes=3, seed=0)
    imgs = torch.rand(2, 3, 8, 8, generator=torch_generator(104))
    spec = matching.permutation_spec(vgg)
    nan = math.nan
    return [
        ("check_associativity", lambda: groups.FiniteGroup([[0, 1], [1, 0]], check_associativity="no")),
        ("generators", lambda: groups.from_permutations({(1, 0, 2)})),
        ("other", lambda: C3.elements[1] @ groups.dihedral(4).elements[1]),
        ("n", lambda: C3.sample(10**12)),
        ("dim", lambda: actions.trivial(C3, 10**12)),
        ("shape", lambda: images.mirror((3, 10**6, 10**6))),
        ("num_probes", lambda: actions.check_homomorphism(actions.regular(C3), 10**9)),
        ("rho_in", lambda: actions.equivariant_projector(actions.trivial(C3, 4000), actions.trivial(C3, 4000))),
        ("parts", lambda: actions.DirectSum()),
        ("widths", lambda: MLP([3, 10**12, 2])),
        ("activations", lambda: MLP([3, 2], activations="swish")),
        ("upto", lambda: net.latents(torch.rand(2, 3, generator=torch_generator(105)), upto=9)),
        ("config", lambda: VGG({4, 8})),
        ("width", lambda: VGG([4], width=1e9)),
        ("scale", lambda: warm_batchnorm(vgg, scale=nan)),
        ("channels", lambda: conv_net({2, 3}, 8)),
        ("dims", lambda: AttentionNetwork(4, {3, 5})),
        ("ks", lambda: symmetries.apply_symmetry(MLP([3, 3, 3]), {None})),
        ("log_scale", lambda: symmetries.symmetry_group("relu", 3).sample(0, log_scale=1e6)),
        ("return_correlations", lambda: matching.match_activations(vgg, vgg, imgs, return_correlations="no")),
        ("seed", lambda: matching.random_permutations(spec, seed=-1)),
        ("spec", lambda: matching.identity_permutations(None)),
        ("perms", lambda: matching.apply_permutation(vgg, {k: torch.arange(v).float() for k, v in spec.sizes.items()})),
        ("lr", lambda: TrainConfig(lr=1e30)),
        ("epochs", lambda: TrainConfig(epochs=10**12)),
        ("mean", lambda: image_preset(mean={0.1, 0.2, 0.3})),
        ("progress", lambda: train(VGG([2, "M"], num_classes=3, image_size=8),
                                   (torch.zeros(2, 3, 8, 8, dtype=torch.uint8), torch.tensor([0, 1])),
                                   TrainConfig(epochs=1), progress="no", **image_preset((3, 8, 8)))),
        ("penalty_samples", lambda: TrainConfig(epochs=1, penalty_samples=-1)),
        ("num_probes", lambda: lres.homomorphism_error(actions.regular(C3), num_probes=-1)),
        ("log_scale", lambda: latt.hide_attention_network(AttentionNetwork(4, [3, 3]), log_scale=nan)),
        ("token_dim", lambda: latt.TokenAction(C3, None, token_dim=0, token_perms=np.array([[0, 1, 2], [1, 2, 0],
                                                                                            [2, 0, 1]]))),
        ("tol", lambda: lgen.relating_sequences([net], [net], [], torch.rand(2, 3, generator=torch_generator(106)),
                                                tol=nan)),
        ("candidates", lambda: lgen.relating_sequences(list(net.layers), list(net.layers), {1}, torch.rand(2, 3,
                generator=torch_generator(107)))),
        ("tol", lambda: lconv.recover_conv_actions(lconv.plant_c4_conv([["trivial"], ["regular"]]).model,
                                                   torch.rand(2, 1, 7, 7, generator=torch_generator(108)), tol=nan)),
        ("cos_tol", lambda: maybe_degenerate(net, cos_tol=nan)),
        ("model", lambda: submodels.reduce(None)),
        ("length", lambda: io.content_hash(torch.zeros(2), length=-1)),
        ("parts", lambda: io.cache_dir("..")),
        ("parts", lambda: io.cache_dir(3)),
        ("write", lambda: io.atomic_write(tempfile.mktemp(), b"abc")),
        ("map_location", lambda: io.load_torch(io.save_torch({"a": torch.ones(2)}, tempfile.mktemp(suffix=".pt")),
                                               map_location="bogus")),
        ("device", lambda: seeds.torch_generator(0, device="meta")),
        ("max_images", lambda: probes.input_spectrum(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), max_images=0)),
        ("n", lambda: probes.probe_inputs("noise", 0, None, None, s=None)),
        ("layers", lambda: probes.paired_latents(vgg, imgs, {1}, ["horizontal"])),
        ("eps", lambda: probes.whitening(torch.ones(3), torch.eye(3), eps="a")),
        ("align_right_from", lambda: tables.html_table(["a"], [[1]], -1)),
        ("rows", lambda: tables.table_text({1})),
    ]


@pytest.mark.parametrize("case", range(len(_second_audit_cases())))
def test_second_audit_bad_arguments_raise_clear_errors(case, tmp_path, monkeypatch):
    """Each raises TypeError or ValueError naming the argument, at once."""
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))
    arg, call = _second_audit_cases()[case]
    start = time.perf_counter()
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert arg in str(info.value), (arg, str(info.value))
    assert time.perf_counter() - start < 10


def test_atomic_write_onto_a_directory_names_the_path(tmp_path):
    from eqlib.io import atomic_write
    with pytest.raises(IsADirectoryError, match="path .* is a directory"):
        atomic_write(tmp_path, lambda f: f.write(b"x"))
    assert list(tmp_path.iterdir()) == []  # no temporary file left
