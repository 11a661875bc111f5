"""eqlib.images: the one home of the image helpers, each checked against an independent
reference (explicit index loops, ``torch.flip``/``torch.rot90`` on one image at a time,
the closed-form normalisation) and against the matching group action."""
from __future__ import annotations

import math
import pathlib
import re

import numpy as np
import pytest
import torch
from torch.testing import assert_close

import eqlib
from eqlib import images

ROOT = pathlib.Path(__file__).resolve().parents[2]


def fake_images(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)


@pytest.fixture
def batch():
    return torch.from_numpy(fake_images(6, seed=7))


@pytest.mark.parametrize("axis,dim", [("horizontal", -1), ("vertical", -2)], ids=["horizontal", "vertical"])
def test_mirror_matches_flip_and_the_action(batch, axis, dim):
    assert_close(images.mirror_images(batch, axis), torch.flip(batch, dims=(dim,)))
    rho = images.mirror((3, 32, 32), axis)
    assert_close(images.mirror_images(batch, axis).float(), rho.act(rho.group["m"], batch.float()))
    assert_close(images.mirror_images(images.mirror_images(batch, axis), axis), batch)


def test_mirror_rejects_bad_input(batch):
    with pytest.raises(ValueError, match="axis must be"):
        images.mirror_images(batch, "diagonal")
    with pytest.raises(ValueError, match=r"x must be flattened images \(N, 3072\) of shape \(3, 32, 32\)"):
        images.mirror_images(batch[0, 0])  # a 2-D (H, W) is read as flattened CIFAR images, and refused
    with pytest.raises(ValueError, match=r"x must be images \(\.\.\., C, H, W\)"):
        images.mirror_images(batch[0, 0, 0])
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        images.mirror_images(batch.numpy())


def test_random_mirror_is_seeded_and_per_sample(batch):
    out, mask = images.random_mirror(batch, 0.5, generator=3, return_mask=True)
    out2, mask2 = images.random_mirror(batch, 0.5, generator=torch.Generator().manual_seed(3), return_mask=True)
    assert_close(out, out2) and torch.equal(mask, mask2)
    expected = torch.stack([torch.flip(x, dims=(-1,)) if m else x for x, m in zip(batch, mask)])
    assert_close(out, expected)
    assert_close(images.random_mirror(batch, 0.0, generator=0), batch)
    assert_close(images.random_mirror(batch, 1.0, generator=0), torch.flip(batch, dims=(-1,)))
    big = torch.zeros(4000, 1, 1, 2)
    frac = images.random_mirror(big, 0.3, generator=1, return_mask=True)[1].float().mean()
    assert abs(frac - 0.3) < 0.03
    with pytest.raises(ValueError, match="probability"):
        images.random_mirror(batch, 1.5)


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
def test_rotate90(batch, k):
    assert_close(images.rotate90(batch, k), torch.rot90(batch, k, dims=(-2, -1)))
    assert_close(images.rotate90(images.rotate90(batch, k), 4 - k), batch)


def test_rotate90_is_the_r_of_image_dihedral(batch):
    small = batch[:, :, :6, :6]
    rho = images.image_dihedral((3, 6, 6))
    assert_close(images.rotate90(small, 1).float(), rho.act(rho.group["r"], small.float()))


def test_normalize(batch):
    y = images.normalize(batch)
    assert y.dtype == torch.float32 and y.shape == batch.shape
    m, s = torch.tensor(images.CIFAR10_MEAN), torch.tensor(images.CIFAR10_STD)
    assert_close(y[:, 1], (batch[:, 1].float() / 255 - m[1]) / s[1])
    ones = images.normalize(torch.full((1, 3, 2, 2), 255, dtype=torch.uint8), mean=(0, 0, 0), std=(1, 1, 1))
    assert_close(ones, torch.ones(1, 3, 2, 2))
    with pytest.raises(TypeError, match="uint8"):
        images.normalize(batch.float())
    with pytest.raises(ValueError, match="one per channel"):
        images.normalize(batch, mean=(0.5,), std=(0.5,))



@pytest.mark.gpu
def test_transforms_on_cuda(batch):
    x = batch.cuda()
    assert_close(images.mirror_images(x).cpu(), images.mirror_images(batch))
    assert_close(images.rotate90(x, 1).cpu(), images.rotate90(batch, 1))
    assert_close(images.normalize(x).cpu(), images.normalize(batch))
    out, mask = images.random_mirror(x, 0.5, generator=0, return_mask=True)
    assert out.device.type == "cuda" and mask.device.type == "cuda"
    expected = torch.where(mask.cpu()[:, None, None, None], torch.flip(batch, dims=(-1,)), batch)
    assert_close(out.cpu(), expected)


# -- integrity of what is read ----------------------------------------------------------------


# -- one mirror, for images, flattened images and any shape --------------------------------------
@pytest.mark.parametrize("axis", ["horizontal", "vertical"])
def test_mirror_images_on_flattened_images_is_the_per_image_mirror(batch, axis):
    """Flattened CIFAR images (N, 3072) (MLP inputs, outputs, filters) are mirrored as the
    images they are: reshape, flip one image at a time, flatten."""
    flat = batch.flatten(1).float()
    dim = images.MIRROR_AXES[axis]
    expected = torch.stack([torch.flip(x.view(3, 32, 32), dims=(dim,)).reshape(-1) for x in flat])
    assert_close(images.mirror_images(flat, axis), expected)
    rho = images.mirror((3, 32, 32), axis)
    assert_close(images.mirror_images(flat, axis), rho.act(rho.group["m"], flat))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mirror_images_with_a_shape_matches_an_index_loop(seed):
    """Any image size: pixel (c, i, j) of m x is pixel (c, i, W-1-j) of x (horizontal)."""
    g = torch.Generator().manual_seed(seed)
    C, H, W = 1 + seed, 2 + seed, 3 + 2 * seed
    x = torch.randn(4, C * H * W, generator=g)
    y = images.mirror_images(x, "horizontal", shape=(C, H, W)).view(4, C, H, W)
    xs = x.view(4, C, H, W)
    for c in range(C):
        for i in range(H):
            for j in range(W):
                assert torch.equal(y[:, c, i, j], xs[:, c, i, W - 1 - j])
    with pytest.raises(ValueError, match=r"x must be flattened images \(N, 3\) of shape \(1, 1, 3\)"):
        images.mirror_images(x, shape=(1, 1, 3))


def test_mirror_images_takes_one_image_and_leading_dimensions(batch):
    assert_close(images.mirror_images(batch[0]), torch.flip(batch[0], dims=(-1,)))
    five = batch.view(2, 3, 3, 32, 32)
    assert_close(images.mirror_images(five, "vertical"), torch.flip(five, dims=(-2,)))


def test_prepare_images_is_normalize_on_uint8_and_on_unit_floats(batch):
    assert_close(images.prepare_images(batch), images.normalize(batch))
    assert_close(images.prepare_images(batch.double() / 255), images.normalize(batch))
    m, s = images.CIFAR10_MEAN, images.CIFAR10_STD
    closed = torch.stack([(batch[:, c].float() / 255 - m[c]) / s[c] for c in range(3)], 1)
    assert_close(images.prepare_images(batch.float() / 255), closed)


def test_prepare_images_checks_mean_and_std_on_float_images_too(batch):
    """Float images went around normalize's checks: a NaN mean gave NaN images silently."""
    x = batch.float() / 255
    with pytest.raises(ValueError, match=r"mean\[0\]"):
        images.prepare_images(x, mean=(math.nan, 0.5, 0.5))
    with pytest.raises(ValueError, match=r"std\[1\]"):
        images.prepare_images(x, std=(1.0, 0.0, 1.0))
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        images.prepare_images(x * 255)


@pytest.mark.parametrize("patch", [1, 2, 4])
def test_patchify_matches_an_index_loop(patch):
    g = torch.Generator().manual_seed(patch)
    x = torch.randn(2, 3, 8, 4, generator=g)
    tokens = images.patchify(x, patch)
    gw = 4 // patch
    for a in range(8 // patch):
        for b in range(gw):
            block = x[:, :, a * patch:(a + 1) * patch, b * patch:(b + 1) * patch]
            assert torch.equal(tokens[:, a * gw + b], block.reshape(2, -1))
    assert torch.equal(images.unpatchify(tokens, (3, 8, 4), patch), x)
    with pytest.raises(ValueError, match="not a multiple of the patch size 3"):
        images.patchify(x, 3)


# -- one home ---------------------------------------------------------------------------------
MOVED = {
    "actions": ["mirror", "mirror_images", "MIRROR_AXES", "image_dihedral", "image_rotations"],
    "data": ["mirror", "random_mirror", "rotate90", "normalize", "CIFAR10_MEAN", "CIFAR10_STD"],
    "train": ["mirror_images", "prepare_images", "CIFAR_MEAN", "CIFAR_STD"],
    "latent": ["patchify", "unpatchify"],
    "latent.attention": ["patchify", "unpatchify"],
}


@pytest.mark.parametrize("module", sorted(MOVED))
def test_old_homes_keep_no_alias(module):
    """One concept, one home: the modules the helpers left neither export them nor (except
    the trainer, which uses some) hold them at all."""
    import importlib

    mod = importlib.import_module(f"eqlib.{module}")
    exported = [name for name in MOVED[module] if name in getattr(mod, "__all__", ())]
    assert not exported, f"eqlib.{module} still exports {exported}"
    if module != "train":
        held = [name for name in MOVED[module] if hasattr(mod, name)]
        assert not held, f"eqlib.{module} still holds {held}"


def test_every_image_helper_is_defined_once():
    """``def NAME`` / ``NAME =`` for each helper of eqlib.images appears in eqlib/images.py only."""
    names = [n for n in images.__all__ if n not in ("mirror",)]
    pattern = re.compile(r"^\s*(?:def\s+(%s)\s*\(|(%s)\s*[:=])" % ("|".join(names), "|".join(names)), re.M)
    bad = [f"{p.relative_to(ROOT)}: {m.group(0).strip()}" for p in sorted((ROOT / "eqlib").rglob("*.py"))
           if p.name != "images.py" for m in pattern.finditer(p.read_text())]
    assert not bad, "image helpers defined outside eqlib/images.py:\n" + "\n".join(bad)
    assert eqlib.images is images
