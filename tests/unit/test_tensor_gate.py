"""One tensor gate (issue 21, item 5): ``validation.check_tensor`` and its use at the entry
points of models, actions and the trainer. Each case failed on the code before: obscure
errors on meta tensors and float16 inputs, integer inputs truncated by matrix actions,
images with ``requires_grad`` crashing ``train``, int32 labels crashing cross_entropy,
0..255 float images normalised as if in [0, 1], labels the model cannot output."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eqlib import groups
from eqlib import images
from eqlib.actions import MatrixAction
from eqlib.images import prepare_images
from eqlib.models import MLP
from eqlib.train import TrainConfig, evaluate_accuracy, image_preset, train
from eqlib.validation import check_tensor
from eqlib.seeds import torch_generator

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))


# -- the gate itself ------------------------------------------------------------------------------
def test_check_tensor_messages():
    x = torch.zeros(2, 3)
    assert check_tensor("x", x, dtype="float", ndim=2, finite=True, range=(0, 1), device="cpu") is x
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        check_tensor("x", [1.0])
    with pytest.raises(TypeError, match="x must be an integer tensor, got torch.float32"):
        check_tensor("x", x, dtype="integer")
    with pytest.raises(TypeError, match="must have dtype torch.int64, got torch.float32"):
        check_tensor("x", x, dtype=torch.int64)
    with pytest.raises(TypeError, match="real"):
        check_tensor("x", torch.zeros(2, dtype=torch.bool), dtype="real")
    with pytest.raises(ValueError, match="x is a meta tensor"):
        check_tensor("x", torch.zeros(2, device="meta"))
    assert check_tensor("x", torch.zeros(2, device="meta"), meta=True).is_meta
    with pytest.raises(ValueError, match=r"x is on cpu but must be on cuda:0; move it with x.to\('cuda:0'\)"):
        check_tensor("x", x, device="cuda:0")
    with pytest.raises(ValueError, match=r"x must lie in \[0, 1\], got values in \[0, 255\]"):
        check_tensor("x", torch.tensor([0.0, 255.0]), range=(0, 1))
    with pytest.raises(ValueError, match="must be finite"):
        check_tensor("x", torch.tensor([0.0, math.nan]), range=(0, 1))
    with pytest.raises(ValueError, match="2 dimensions"):
        check_tensor("x", torch.zeros(3), ndim=2)


# -- models ---------------------------------------------------------------------------------------
def test_models_refuse_meta_tensors_clearly():
    with pytest.raises(ValueError, match="x is a meta tensor"):
        MLP([4, 3, 2], seed=0)(torch.zeros(2, 4, device="meta"))


@pytest.mark.parametrize("dtype", FLOATS)
def test_models_take_any_float_precision(dtype):
    """float16 / bfloat16 / float64 inputs gave a dtype-mismatch RuntimeError in F.linear."""
    net = MLP([4, 3, 2], seed=0)
    x = torch.rand(5, 4, generator=torch_generator(100))
    out = net(x.to(dtype))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, net(x.to(dtype).float()))


@pytest.mark.parametrize("dtype", INTS + [torch.bool])
def test_models_refuse_integer_inputs_with_a_type_error(dtype):
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        MLP([4, 3, 2], seed=0)(torch.zeros(2, 4, dtype=dtype))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 5), transpose=st.booleans(), step=st.integers(1, 3), grad=st.booleans(),
       dtype=st.sampled_from(FLOATS))
def test_models_give_the_same_result_for_any_layout(n, transpose, step, grad, dtype):
    """Batch of 1, non-contiguous views, requires_grad, other precisions: the same numbers."""
    net = MLP([4, 3, 2], seed=0).double()
    base = torch.rand(n, 4, dtype=torch.float64, generator=torch_generator(101))
    x = base.t().contiguous().t() if transpose else base
    big = torch.zeros(n * step, 4, dtype=torch.float64)
    big[::step] = x
    x = big[::step].to(dtype).requires_grad_(grad)
    out = net(x)
    torch.testing.assert_close(out, net(x.detach().to(torch.float64)).to(out.dtype))


# -- actions --------------------------------------------------------------------------------------
def _rotations():
    c, s = math.cos(2 * math.pi / 3), math.sin(2 * math.pi / 3)
    r = torch.tensor([[c, -s], [s, c]])
    return MatrixAction(groups.cyclic(3), torch.stack([torch.eye(2), r, r @ r]))


@pytest.mark.parametrize("dtype", INTS[1:] + [torch.bool])
def test_matrix_actions_never_truncate_integer_inputs(dtype):
    """A 120° rotation of the integer vector [2, 0] gave [0, 0]."""
    rho = _rotations()
    g = rho.group.elements[1]
    x = torch.tensor([1, 0], dtype=dtype) if dtype == torch.bool else torch.tensor([2, 0], dtype=dtype)
    want = rho.act(g, x.float())
    got = rho.act(g, x)
    assert got.is_floating_point()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(rho.act_transpose(g, x), rho.act_transpose(g, x.float()))
    assert not torch.equal(got, torch.zeros(2))


def test_actions_refuse_meta_tensors_clearly():
    rho = _rotations()
    with pytest.raises(ValueError, match="meta tensor"):
        rho.act(rho.group.elements[1], torch.zeros(2, device="meta"))


# -- the trainer ----------------------------------------------------------------------------------
def _data(n=32):
    g = torch.Generator().manual_seed(0)
    return (torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g),
            torch.randint(0, 3, (n,), generator=g))


def _clf():
    return MLP([3072, 8, 3], activations="tanh", seed=0)


CFG = TrainConfig(task="classify", epochs=1, batch_size=16)
#: the CIFAR-10 preset (mirror symmetry, normalisation) of the image runs here
IMG = image_preset()


def test_train_detaches_images_that_require_grad():
    """Float images with requires_grad crashed with 'backward through the graph a second time'."""
    images, labels = _data()
    x = (images.float() / 255).requires_grad_()
    a = train(_clf(), (x, labels), CFG, device="cpu", progress=False, **IMG)
    b = train(_clf(), (x.detach(), labels), CFG, device="cpu", progress=False, **IMG)
    assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8, torch.int8])
def test_train_takes_any_integer_label_dtype(dtype):
    """int32 labels passed the check and crashed in cross_entropy."""
    images, labels = _data()
    a = train(_clf(), (images, labels.to(dtype)), CFG, device="cpu", progress=False,
              eval_data=(images[:8], labels[:8].to(dtype)), **IMG)
    b = train(_clf(), (images, labels), CFG, device="cpu", progress=False, eval_data=(images[:8], labels[:8]), **IMG)
    assert a.history["loss"] == b.history["loss"]


def test_prepare_images_refuses_0_to_255_floats():
    """0..255 float images were normalised as if in [0, 1]."""
    images, _ = _data(4)
    with pytest.raises(ValueError, match=r"float images must lie in \[0, 1\].*divide by 255"):
        prepare_images(images.float())
    torch.testing.assert_close(prepare_images(images.float() / 255), prepare_images(images))
    with pytest.raises(TypeError, match="uint8"):
        prepare_images(images.to(torch.int32))


def test_evaluate_accuracy_refuses_labels_the_model_cannot_output():
    images, labels = _data(8)
    with pytest.raises(ValueError, match="below the model's"):
        evaluate_accuracy(_clf(), images, labels + 5)
    assert 0.0 <= evaluate_accuracy(_clf(), images, labels.to(torch.int32)) <= 1.0


def test_finite_divergence_is_noticed():
    """A loss of 6e30 went unnoticed (only NaN/inf stopped training)."""
    images, labels = _data()
    net = _clf()
    with torch.no_grad():
        net.layers[-1].weight.mul_(1e30)
    with pytest.raises(FloatingPointError, match="diverged"):
        train(net, (images, labels), CFG.replace(lr=1e-30), device="cpu", progress=False, **IMG)


def test_train_config_refuses_seeds_beyond_64_bits():
    with pytest.raises(ValueError, match="TrainConfig.seed"):
        TrainConfig(seed=2**64)


# -- symmetries: SymmetryElement.act and act_on_layer (issue 21, item 5) --------------------------

@pytest.mark.parametrize("dtype", INTS + [torch.bool])
def test_symmetry_element_never_truncates_integer_inputs(dtype):
    """SymmetryElement.act applied a non-integer scale in the input's integer dtype (truncated)."""
    from eqlib.symmetries import SymmetryElement, act_on_layer
    k = SymmetryElement([1, 0], [0.5, -1.5])
    z = torch.tensor([[1, 1], [0, 1]], dtype=dtype)
    got = k.act(z)
    assert got.dtype == torch.get_default_dtype()
    assert torch.equal(got, k.act(z.to(torch.get_default_dtype())))
    w = torch.tensor([[1, 0], [1, 1]], dtype=dtype)
    b = torch.tensor([1, 1], dtype=dtype)
    w2, b2 = act_on_layer(w, b, k_out=k, k_in=k)
    wf, bf = act_on_layer(w.to(torch.get_default_dtype()), b.to(torch.get_default_dtype()), k_out=k, k_in=k)
    assert w2.dtype == b2.dtype == torch.get_default_dtype()
    assert torch.equal(w2, wf) and torch.equal(b2, bf)


def test_symmetry_element_keeps_float_precisions():
    from eqlib.symmetries import SymmetryElement
    k = SymmetryElement([1, 0], [2.0, 3.0])
    for dtype in FLOATS:
        assert k.act(torch.ones(2, dtype=dtype)).dtype == dtype


def test_symmetries_refuse_meta_tensors_clearly():
    from eqlib.symmetries import SymmetryElement, act_on_layer
    k = SymmetryElement([1, 0])
    with pytest.raises(ValueError, match="z is a meta tensor"):
        k.act(torch.ones(3, 2, device="meta"))
    with pytest.raises(ValueError, match="weight is a meta tensor"):
        act_on_layer(torch.ones(2, 2, device="meta"), None, k, k)
    with pytest.raises(ValueError, match="bias is a meta tensor"):
        act_on_layer(torch.ones(2, 2), torch.ones(2, device="meta"), k, k)
    with pytest.raises(TypeError, match="weight must be a torch.Tensor"):
        act_on_layer([[1.0, 0.0], [0.0, 1.0]], None, k, k)


# -- a second, independent audit (benchmarks/audit_inputs.py) -------------------------------------
def test_matrix_actions_refuse_complex_and_meta_matrices():
    """Complex matrices were cast to real (the imaginary part dropped); meta ones crashed in .item()."""
    G = groups.cyclic(2)
    with pytest.raises(TypeError, match="matrices must be a real"):
        MatrixAction(G, torch.eye(2, dtype=torch.cfloat).repeat(2, 1, 1))
    with pytest.raises(ValueError, match="matrices is a meta tensor"):
        MatrixAction(G, torch.zeros(2, 2, 2, device="meta"))


def test_permutation_action_must_be_a_homomorphism():
    """PermutationAction took index maps that define no action of the group."""
    from eqlib.actions import PermutationAction
    import numpy as np
    with pytest.raises(ValueError, match="index .* do not define an action of C3"):
        PermutationAction(groups.cyclic(3), np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1]]))
    rho = PermutationAction(groups.cyclic(3), np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]]))
    assert rho.dim == 3


def test_reynolds_refuses_nan_and_casts_integers():
    from eqlib.actions import regular, reynolds
    rho = regular(groups.cyclic(3))
    with pytest.raises(ValueError, match="W must be finite"):
        reynolds(torch.full((3, 3), math.nan), rho, rho)
    W = torch.arange(9).view(3, 3)
    torch.testing.assert_close(reynolds(W, rho, rho), reynolds(W.float(), rho, rho))


def test_symmetry_elements_check_scales_and_weights():
    """Scales of 1e-45 (no finite inverse) and complex scales were accepted; ``left`` took a
    weight with the wrong number of rows; ``right`` truncated integer weights."""
    from eqlib.symmetries import SymmetryElement
    with pytest.raises(ValueError, match="scale must hold numbers of magnitude"):
        SymmetryElement([0, 1], [1.0, 1e-45])
    with pytest.raises(TypeError, match="scale must be a real"):
        SymmetryElement([0, 1], torch.ones(2, dtype=torch.cfloat))
    with pytest.raises(TypeError, match="perm must be a list"):
        SymmetryElement({0, 1, 2})
    k = SymmetryElement([1, 0, 2], [1.0, 2.0, 0.5])
    with pytest.raises(ValueError, match="weight must have 3 rows"):
        k.left(torch.rand(4, 2, generator=torch_generator(102)))
    with pytest.raises(ValueError, match=r"weight must have shape \(m, 3\)"):
        k.right(torch.rand(2, 4, generator=torch_generator(103)))
    W = torch.ones(2, 3, dtype=torch.long)
    torch.testing.assert_close(k.right(W), k.right(W.float()))
    assert k.right(W).is_floating_point()


@pytest.mark.parametrize("bad, exc, match", [
    (torch.ones(2, 4, 3, dtype=torch.long), TypeError, "x must be a floating-point"),
    (torch.ones(2, 4, 3, device="meta"), ValueError, "x is a meta tensor"),
    (torch.ones(2, 5, 3), ValueError, r"x must have shape \(N, 4, 3\)"),
])
def test_attention_layers_gate_their_input(bad, exc, match):
    """Integer inputs crashed in einsum; meta tensors and a wrong token count were accepted."""
    from eqlib.models import MultiHeadAttention
    with pytest.raises(exc, match=match):
        MultiHeadAttention(4, 3, 3, 2, seed=0)(bad)


def test_attention_layers_take_float64():
    from eqlib.models import MultiHeadAttention
    layer = MultiHeadAttention(4, 3, 3, 2, seed=0)
    x = torch.rand(2, 4, 3, generator=torch_generator(104))
    torch.testing.assert_close(layer(x.double()), layer(x))


def test_models_check_the_input_shape():
    """A VGG took images of the wrong size; an MLP failed in F.linear on the wrong width."""
    from eqlib.models.cnn import VGG
    with pytest.raises(ValueError, match=r"x must have shape \(N, 3, 8, 8\)"):
        VGG([4, "M", 4], image_size=8, num_classes=3)(torch.rand(2, 3, 6, 6, generator=torch_generator(105)))
    with pytest.raises(ValueError, match=r"x must have shape \(N, 3\)"):
        MLP([3, 4, 3])(torch.rand(2, 5, generator=torch_generator(106)))
    net = MLP([12, 4, 3])
    torch.testing.assert_close(net(torch.rand(2, 3, 2, 2, generator=torch_generator(107))).shape, torch.Size([2,
            3]))  # images are flattened


def test_reduce_works_on_float64_networks():
    """reduce() of a float64 MLP crashed (float32 maps met float64 weights)."""
    from eqlib.submodels import plant_degenerate, reduce
    net = plant_degenerate(MLP([3, 6, 3], seed=1), n_clones=1).double()
    red = reduce(net)
    errs = red.diagram_errors(torch.rand(5, 3, dtype=torch.float64, generator=torch_generator(108)))
    assert max(errs.values()) < 1e-12
    assert torch.get_default_dtype() == torch.float32


def test_matching_refuses_raw_pixel_images():
    """reset_bn took 0..255 float images as if normalised."""
    from eqlib.matching import reset_bn
    from eqlib.models.cnn import VGG
    net = VGG([4, "M", 4], image_size=8, num_classes=3)
    with pytest.raises(ValueError, match="images must be normalised"):
        reset_bn(net, torch.randint(0, 256, (4, 3, 8, 8)).float())


def test_latent_helpers_refuse_nan_and_bad_shapes():
    from eqlib.analysis.probes import whitening
    from eqlib.latent.conv import act_on_images
    from eqlib.latent.result import MonomialAction
    from eqlib.latent.units import assign
    with pytest.raises(ValueError, match="similarity must be finite"):
        assign(torch.full((3, 3), math.nan), True)
    with pytest.raises(ValueError, match="evals must be finite"):
        whitening(torch.full((3,), math.nan), torch.eye(3))
    with pytest.raises(ValueError, match="x must have 4 dimensions"):
        act_on_images(groups.cyclic(4)[1], None, torch.ones(2, 4, 4))
    with pytest.raises(ValueError, match="perm must hold one permutation"):
        MonomialAction(groups.cyclic(3), torch.zeros(3, 3, dtype=torch.long), torch.ones(3, 3))


def test_mirror_symmetric_spectrum_takes_any_image_size():
    """It failed on images other than 32x32 (it mirrored flattened 3072-vectors)."""
    from eqlib.analysis.probes import mirror_symmetric_spectrum
    imgs = torch.randint(0, 256, (6, 3, 8, 8), dtype=torch.uint8)
    evals, evecs = mirror_symmetric_spectrum(imgs)
    assert evals.shape == (192,) and evecs.shape == (192, 192)


@pytest.mark.parametrize("axis", ["horizontal", "vertical"])
def test_mirrored_covariance_equals_the_pooled_images_covariance(axis):
    """The mirror's part is the second moment permuted (one d x d temporary, blocks of 3)."""
    from eqlib.analysis.probes import _covariance
    from eqlib.images import mirror_images, prepare_images
    imgs = torch.randint(0, 256, (7, 3, 4, 6), dtype=torch.uint8)
    x = prepare_images(imgs).double()
    pooled = torch.cat([x, mirror_images(x, axis)]).flatten(1)
    assert torch.allclose(_covariance(imgs, axis, block=3), torch.cov(pooled.T), atol=1e-12)


def test_train_gives_the_same_weights_for_any_memory_layout():
    """channels-last images trained to other weights than the same images contiguous."""
    from eqlib.models.cnn import VGG
    imgs = torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8)
    labels = torch.tensor([0, 1, 2, 1])
    cfg = TrainConfig(epochs=1, batch_size=2)
    runs = [train(VGG([2, "M"], num_classes=3, image_size=8), (x, labels), cfg, progress=False,
                  **image_preset((3, 8, 8))).model.state_dict()
            for x in (imgs, imgs.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2))]
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])


# -- errors that name the argument (the input audit's 13 "obscure" calls) ---------------------------
def _audit_cases():
    from eqlib import actions
    from eqlib.latent import attention as latt, conv as lconv, lstsq, units
    from eqlib.latent import result as lres
    from eqlib.models.cnn import VGG
    c3 = groups.cyclic(3)
    reg3 = actions.regular(c3)
    net = MLP([3, 4, 3], seed=0)
    x3 = torch.rand(5, 3, generator=torch_generator(109))
    vgg = VGG([4, "M", 4], image_size=8, num_classes=3, seed=0)
    planted = lambda: lconv.plant_c4_conv([["trivial"], ["regular"]]).model  # noqa: E731
    img = torch.randint(0, 256, (4, 1, 8, 8), dtype=torch.uint8)
    return [
        (ValueError, "group must have order at most 1024", lambda: actions.regular(groups.symmetric(7))),
        (ValueError, r"x must be images \(\.\.\., C, H, W\)", lambda: images.mirror_images(torch.zeros(5))),
        (ValueError, r"fx must have shape \(\.\.\., 3\)", lambda: actions.equivariance_residual(
            net, reg3, reg3, x3, g=c3.elements[1], fx=torch.zeros(2, 2))),
        (ValueError, r"x must have shape \(N, 3, 8, 8\) \(a batch", lambda: vgg(torch.rand(3, 8, 8,
                generator=torch_generator(110)))),
        (TypeError, "x must be a floating-point tensor", lambda: lconv.recover_conv_actions(
            planted(), torch.ones(2, 1, 7, 7, dtype=torch.long))),
        (ValueError, "features_transformed must have the shape of features", lambda: lstsq.fit_linear_action(
            torch.rand(10, 3, generator=torch_generator(111)), torch.rand(9, 3, generator=torch_generator(112)))),
        (ValueError, "features must have enough rows", lambda: lstsq.fit_linear_action(
            torch.rand(0, 3, generator=torch_generator(113)), torch.rand(0, 3, generator=torch_generator(114)))),
        (ValueError, "X must have rows of length 3", lambda: lstsq.relative_errors(
            torch.eye(3), torch.rand(4, 2, generator=torch_generator(115)), torch.rand(4, 3,
                    generator=torch_generator(116)))),
        (ValueError, r"Y must have shape \(4, 3\)", lambda: lstsq.relative_errors(
            torch.eye(3), torch.rand(4, 3, generator=torch_generator(117)), torch.rand(4, 2,
                    generator=torch_generator(118)))),
        (TypeError, "A must be a floating-point tensor", lambda: units.match_units(
            torch.ones(3, 4, dtype=torch.long), torch.ones(3, 4, dtype=torch.long))),
        (ValueError, r"hidden must hold 1 action\(s\)", lambda: lres.layer_errors(net, reg3, reg3, [], x=x3)),
        (TypeError, "x must be a floating-point tensor", lambda: lres.layer_errors(
            net, reg3, reg3, [reg3], x=torch.ones(2, 3, dtype=torch.long))),
        (ValueError, "maps_gx must have the shape of maps_x", lambda: latt.recover_token_permutation(
            torch.rand(2, 4, 4, generator=torch_generator(119)), torch.rand(2, 3, 3, generator=torch_generator(120)))),
        (ValueError, r"images have 1 channel\(s\) .* but mean holds 3 numbers", lambda: prepare_images(img)),
        (ValueError, r"images have 1 channel\(s\) .* but std holds 3 numbers", lambda: prepare_images(
            img, mean=(0.5,))),
    ]


@pytest.mark.parametrize("case", range(15))
def test_bad_inputs_are_refused_naming_the_argument(case):
    """Each raised an error that did not name the argument (or a deep torch RuntimeError)
    before: the input audit's 'obscure' calls."""
    exc, match, call = _audit_cases()[case]
    with pytest.raises(exc, match=match):
        call()


def test_the_new_gates_keep_legitimate_calls():
    """The checks above refuse only what was broken: one image in a batch, 1-channel
    images with 1-channel mean/std (uint8 and float give the same result)."""
    from eqlib.models.cnn import VGG
    vgg = VGG([4, "M", 4], image_size=8, num_classes=3, seed=0).eval()
    x = torch.rand(3, 8, 8, generator=torch_generator(121))
    assert vgg(x.unsqueeze(0)).shape == (1, 3)
    img = torch.randint(0, 256, (4, 1, 8, 8), dtype=torch.uint8)
    a = prepare_images(img, mean=(0.5,), std=(0.25,))
    torch.testing.assert_close(a, (img.float() / 255 - 0.5) / 0.25)
    torch.testing.assert_close(prepare_images(img.float() / 255, mean=(0.5,), std=(0.25,)), a)
