"""Images: the one home of every image helper, above the actions and below the models.

Two views of the same transformations: as *actions* (:func:`mirror`,
:func:`image_dihedral`, :func:`image_rotations` give a :class:`~eqlib.actions.PermutationAction`
on images of a fixed shape (C, H, W), the group theory of the course) and as *tensor
operations* on batches (:func:`mirror_images`, :func:`rotate90`, :func:`random_mirror`), any
dtype and any device, each one ``torch.flip``/``torch.rot90`` equal to the action of the
matching group element. Beside them: the CIFAR-10 statistics with :func:`normalize` and
:func:`prepare_images` (what the trained models take), and :func:`patchify` /
:func:`unpatchify` (images as token sequences for attention).

Chapters: *Groups and actions* (book/part1/02_groups_and_actions), *Attention*
(book/part2/08_attention) and *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from .actions import MAX_ENTRIES, PermutationAction
from .groups import cyclic, dihedral, flip
from .seeds import torch_generator
from .validation import check_finite, check_float, check_int, check_shape, check_tensor

__all__ = [
    "CIFAR10_SHAPE",
    "CIFAR10_MEAN",
    "CIFAR10_STD",
    "MIRROR_AXES",
    "mirror",
    "image_dihedral",
    "image_rotations",
    "mirror_images",
    "random_mirror",
    "rotate90",
    "normalize",
    "prepare_images",
    "check_unit_range",
    "patchify",
    "unpatchify",
]

Tensor = torch.Tensor

#: The shape (C, H, W) of a CIFAR-10 image; flattened images (N, 3072) are read with it.
CIFAR10_SHAPE: tuple[int, int, int] = (3, 32, 32)
#: Per-channel mean and standard deviation of the official training set, pixels in [0, 1].
CIFAR10_MEAN: tuple[float, float, float] = (0.4914, 0.4822, 0.4465)
CIFAR10_STD: tuple[float, float, float] = (0.2470, 0.2435, 0.2616)

#: The image axis each mirror flips (the one table of mirror axes in eqlib).
MIRROR_AXES = {"horizontal": -1, "vertical": -2}


def _mirror_axis(axis: object) -> int:
    if axis not in MIRROR_AXES:
        raise ValueError(f"axis must be 'horizontal' (left-right) or 'vertical' (top-bottom), got {axis!r}")
    return MIRROR_AXES[axis]


def _check_image_shape(shape: object) -> tuple[int, int, int]:
    """An image shape (C, H, W) of positive ints holding at most ``MAX_ENTRIES`` pixels."""
    shape = check_shape("shape", shape, 3)
    if int(np.prod(shape)) > MAX_ENTRIES:
        raise ValueError(f"shape must hold at most {MAX_ENTRIES} entries, got {shape}")
    return shape


def _check_square(shape: tuple[int, int, int]) -> None:
    if shape[1] != shape[2]:
        raise ValueError(f"shape must be of square images (C, H, H) for rotations by 90°, got {shape}")


def _image_index(shape: tuple[int, ...], transform: Callable[[Tensor], Tensor]) -> np.ndarray:
    grid = torch.arange(int(np.prod(shape))).reshape(shape)
    return transform(grid).reshape(-1).numpy()


def _check_batch(x: object, what: str) -> Tensor:
    """Images (N, C, H, W) or one image (C, H, W)."""
    check_tensor("x", x)
    if x.ndim not in (3, 4):
        raise ValueError(f"x must be images (N, C, H, W) or (C, H, W) for {what}, got shape {tuple(x.shape)}")
    return x


# -- actions on images ---------------------------------------------------------------------
def mirror(shape: tuple[int, int, int], axis: str = "horizontal") -> PermutationAction:
    """The mirror group Z2 = :func:`~eqlib.groups.flip` acting on images of shape (C, H, W).

    ``axis="horizontal"`` swaps left and right (flips the width axis, the symmetry of
    natural photographs); ``axis="vertical"`` swaps top and bottom (the control). On a
    batch, ``mirror(shape, axis).act(m, x)`` equals :func:`mirror_images`.

    Examples:
        >>> act = mirror((1, 1, 3))  # one channel, one row of three pixels
        >>> act.act(act.group["m"], torch.tensor([[[[1.0, 2.0, 3.0]]]]))
        tensor([[[[3., 2., 1.]]]])

    Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
    """
    shape = _check_image_shape(shape)
    dim = _mirror_axis(axis)
    G = flip()
    m = _image_index(tuple(shape), lambda t: torch.flip(t, dims=(dim,)))
    return PermutationAction.from_generators(G, {G["m"]: m}, shape=tuple(shape))


def image_dihedral(shape: tuple[int, int, int]) -> PermutationAction:
    """D4 acting on square images (C, H, H): r rotates by 90° counter-clockwise
    (:func:`rotate90`), s is the horizontal mirror (:func:`mirror_images`).

    Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
    """
    shape = _check_image_shape(shape)
    _check_square(shape)
    G = dihedral(4)
    r = _image_index(tuple(shape), lambda t: torch.rot90(t, 1, dims=(-2, -1)))
    s = _image_index(tuple(shape), lambda t: torch.flip(t, dims=(-1,)))
    return PermutationAction.from_generators(G, {G["r"]: r, G["s"]: s}, shape=tuple(shape))


def image_rotations(shape: tuple[int, int, int]) -> PermutationAction:
    """C4 acting on square images by rotations of 90° (r is :func:`rotate90`).

    Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
    """
    shape = _check_image_shape(shape)
    _check_square(shape)
    G = cyclic(4)
    r = _image_index(tuple(shape), lambda t: torch.rot90(t, 1, dims=(-2, -1)))
    return PermutationAction.from_generators(G, {G["r"]: r}, shape=tuple(shape))


# -- the same transformations on batches (vectorised, any dtype, any device) ----------------
def mirror_images(x: Tensor, axis: str = "horizontal", shape: tuple[int, int, int] | None = None) -> Tensor:
    """The mirror m of :func:`mirror` on a batch: the one mirror of eqlib.

    ``x`` holds images (..., C, H, W) (one image (C, H, W) too), or flattened images
    (N, C·H·W) of ``shape`` = (C, H, W), which defaults to :data:`CIFAR10_SHAPE` for a
    2-dimensional ``x`` (MLP inputs and outputs, first-layer filters). Any dtype (uint8
    too), any device; equal to ``mirror(shape, axis).act(m, x)``, computed with one
    ``torch.flip``.

    Raises:
        TypeError: if x is not a tensor.
        ValueError: for an unknown axis, or a shape that does not fit x.

    Chapters: *Groups and actions* (book/part1/02_groups_and_actions); *Reproducing the
    CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    dim = _mirror_axis(axis)
    check_tensor("x", x)
    if shape is not None or x.dim() == 2:
        shape = _check_image_shape(CIFAR10_SHAPE if shape is None else shape)
        d = int(np.prod(shape))
        if x.dim() != 2 or x.shape[1] != d:
            raise ValueError(f"x must be flattened images (N, {d}) of shape {tuple(shape)}, got shape "
                             f"{tuple(x.shape)}; pass shape=(C, H, W) for flattened images of another size")
        return torch.flip(x.reshape(-1, *shape), dims=(dim,)).reshape(x.shape)
    if x.dim() < 3:
        raise ValueError(f"x must be images (..., C, H, W) with at least 3 dimensions, or flattened images "
                         f"(N, C·H·W), got shape {tuple(x.shape)}")
    return torch.flip(x, dims=(dim,))


def random_mirror(
    x: Tensor,
    p: float = 0.5,
    *, generator: torch.Generator | int | None = None,
    axis: str = "horizontal",
    return_mask: bool = False,
):
    """Mirror each image of a batch (N, C, H, W) independently with probability ``p``.

    Vectorized: one random mask (N,) and a ``torch.where``; works on any device.

    Args:
        generator: a torch.Generator on x's device, or an int seed (None: the default
            seed 0, as everywhere in eqlib: :func:`eqlib.seeds.torch_generator`).
        return_mask: also return the bool mask (N,) of mirrored images.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp), augmentation.
    """
    check_tensor("x", x)
    if x.ndim != 4:
        raise ValueError(f"x must be a batch of images (N, C, H, W) for random_mirror, got shape {tuple(x.shape)}")
    p = check_float("p (a probability)", p, 0.0, 1.0)
    generator = torch_generator(generator, device=x.device)
    mask = torch.rand(x.shape[0], generator=generator, device=x.device) < p
    out = torch.where(mask[:, None, None, None], mirror_images(x, axis), x)
    return (out, mask) if return_mask else out


def rotate90(x: Tensor, k: int = 1) -> Tensor:
    """Rotate images (N, C, H, W) or (C, H, W) by k·90° counter-clockwise (the ``r`` of
    :func:`image_dihedral` and :func:`image_rotations`).

    Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
    """
    _check_batch(x, "rotate90")
    k = check_int("k (quarter turns)", k)
    return torch.rot90(x, k, dims=(-2, -1))


# -- normalisation -------------------------------------------------------------------------
def _check_statistics(mean: object, std: object, c: int) -> tuple[Tensor, Tensor]:
    for name, values in (("mean", mean), ("std", std)):
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise TypeError(f"{name} must be a sequence of {c} numbers (one per channel), got {values!r}")
        if len(values) != c:
            raise ValueError(f"{name} must hold {c} numbers (one per channel), got {values!r}")
        for i, v in enumerate(values):
            check_float(f"{name}[{i}]", v, 0.0 if name == "std" else None, low_open=True)
    m = torch.as_tensor(mean, dtype=torch.float32)
    s = torch.as_tensor(std, dtype=torch.float32)
    if m.shape != (c,) or s.shape != (c,):
        raise ValueError(f"mean and std need {c} entries (one per channel), got {tuple(m.shape)}, {tuple(s.shape)}")
    if not bool((s > 0).all()):
        raise ValueError(f"std must be positive, got {s.tolist()}")
    return m, s


def normalize(
    x: Tensor,
    mean: Sequence[float] = CIFAR10_MEAN,
    std: Sequence[float] = CIFAR10_STD,
) -> Tensor:
    """uint8 images (N, C, H, W) or (C, H, W) → float32 ``(x/255 − mean) / std`` per channel.

    Raises:
        TypeError: if x is not uint8, or mean/std are not sequences.
        ValueError: if mean/std do not have one entry per channel.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    _check_batch(x, "normalize")
    if x.dtype != torch.uint8:
        raise TypeError(f"x must be uint8 images in 0..255 for normalize, got dtype {x.dtype}")
    m, s = _check_statistics(mean, std, x.shape[-3])
    m, s = m.to(x.device), s.to(x.device)
    return (x.float() / 255.0 - m[:, None, None]) / s[:, None, None]


def check_unit_range(name: str, images: Tensor) -> None:
    """Float images must be finite and in [0, 1] (0..255 floats are the commonest mistake).

    Raises:
        ValueError: naming ``name``, for a NaN or ±inf, or values outside [0, 1].

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    check_finite(name, images)
    if images.numel():
        lo, hi = float(images.min()), float(images.max())
        if lo < 0.0 or hi > 1.0:
            raise ValueError(f"float {name} must lie in [0, 1], got values in [{lo:g}, {hi:g}]"
                             + ("; pass uint8 images, or divide by 255" if hi > 1.0 else ""))


def prepare_images(images: Tensor, mean=CIFAR10_MEAN, std=CIFAR10_STD) -> Tensor:
    """What the trained models take: uint8 images (N, C, H, W) → :func:`normalize`
    (``mean`` and ``std`` hold one number per channel, C = 3 for the CIFAR defaults);
    float images (in [0, 1]; 0..255 floats are refused, never normalised as if in [0, 1])
    are normalised the same way.

    Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    check_tensor("images", images, ndim=4)
    c = images.shape[1]
    for name, values in (("mean", mean), ("std", std)):
        if not isinstance(values, (str, bytes)) and hasattr(values, "__len__") and len(values) != c:
            raise ValueError(f"images have {c} channel(s) (shape {tuple(images.shape)}) but {name} holds "
                             f"{len(values)} numbers: mean and std need one number per channel of images")
    if images.dtype == torch.uint8:
        return normalize(images, mean, std)
    if not images.is_floating_point():
        raise TypeError(f"images must be uint8 (0..255) or float (in [0, 1]), got {images.dtype}")
    check_unit_range("images", images.detach())
    m, s = _check_statistics(mean, std, c)
    m, s = m.to(images.device), s.to(images.device)
    return (images.float() - m[:, None, None]) / s[:, None, None]


# -- images as token sequences ---------------------------------------------------------------
def patchify(images: Tensor, patch: int) -> Tensor:
    """Cut images (N, C, H, W) into tokens (N, (H/p)(W/p), C p p), row-major over the grid.

    Chapter: *Attention* (book/part2/08_attention).
    """
    check_tensor("images", images, ndim=4)
    patch = check_int("patch", patch, 1)
    N, C, H, W = images.shape
    if H % patch or W % patch:
        raise ValueError(f"image size {H}×{W} is not a multiple of the patch size {patch}")
    x = images.reshape(N, C, H // patch, patch, W // patch, patch)
    return x.permute(0, 2, 4, 1, 3, 5).reshape(N, (H // patch) * (W // patch), C * patch * patch)


def unpatchify(tokens: Tensor, shape: tuple[int, int, int], patch: int) -> Tensor:
    """Inverse of :func:`patchify`: tokens (N, n, C p p) → images (N, C, H, W).

    Chapter: *Attention* (book/part2/08_attention).
    """
    C, H, W = check_shape("shape", shape, 3)
    patch = check_int("patch", patch, 1)
    check_tensor("tokens", tokens, ndim=3)
    if H % patch or W % patch:
        raise ValueError(f"image size {H}×{W} is not a multiple of the patch size {patch}")
    want = ((H // patch) * (W // patch), C * patch * patch)
    if tuple(tokens.shape[1:]) != want:
        raise ValueError(f"tokens must have shape (N, {want[0]}, {want[1]}) for images {tuple(shape)} and patch "
                         f"{patch}, got {tuple(tokens.shape)}")
    N = tokens.shape[0]
    x = tokens.reshape(N, H // patch, W // patch, C, patch, patch)
    return x.permute(0, 3, 1, 4, 2, 5).reshape(N, C, H, W)
