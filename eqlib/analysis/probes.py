"""Probe inputs for linear-equivariance fits (isotropic noise, test images, Gaussian noise
with the images' covariance), the input covariance spectrum, paired latents f(y), f(m y),
and the end-to-end mirror error of a trained network.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from ..actions import equivariance_residual, trivial
from ..data import CIFAR10
from ..images import mirror as mirror_action
from ..images import mirror_images, prepare_images
from ..seeds import torch_generator
from ..validation import check_float, check_int, check_sequence, check_tensor, show

__all__ = ["PROBES", "AXES", "probe_inputs", "paired_latents", "input_spectrum",
           "mirror_symmetric_spectrum", "whitening", "end_to_end_error"]

PROBES = ("noise", "images", "image_cov")
AXES = ("horizontal", "vertical")


def probe_inputs(kind: str, n: int, train: CIFAR10, test: CIFAR10, *, s: Any, seed: int = 0) -> torch.Tensor:
    """Flat probe inputs (n, 3072) in the networks' (normalised) input space.

    ``kind``: ``"noise"`` (isotropic N(0, 1), our reading of the paper's noise probes: each normalised pixel
    has unit variance, like the images); ``"images"`` (test images, n ≤ len(test));
    ``"image_cov"`` (Gaussian with the mean and covariance of ``s.cov_images`` training
    images: y = μ + Σ_k z_k (x_k − μ)/√K with z ~ N(0, I)). ``s`` is any settings object
    with a ``cov_images`` field (e.g. the experiment's budget settings).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    n = check_int("n", n, 1, 10**7)
    if kind not in PROBES:
        raise ValueError(f"kind must be one of {PROBES}, got {kind!r}")
    gen = torch_generator(seed)
    if kind == "noise":
        return torch.randn(n, 3072, generator=gen)
    if kind == "images":
        if n > len(test):
            raise ValueError(f"only {len(test)} test images, asked for {n}")
        return prepare_images(test.images[:n]).flatten(1)
    if kind == "image_cov":
        K = min(s.cov_images, len(train))
        X = prepare_images(train.images[:K]).flatten(1).double()
        mu = X.mean(0)
        Xc = (X - mu) / math.sqrt(K)
        mu, Xc = mu.float(), Xc.float()
        return torch.cat([mu + torch.randn(min(8192, n - i), K, generator=gen) @ Xc for i in range(0, n, 8192)])
    raise ValueError(f"probe kind must be one of {PROBES}, got {kind!r}")


@torch.no_grad()
def paired_latents(model: nn.Module, y: torch.Tensor, layers: Sequence[int], axes: Sequence[str],
                    *, chunk: int = 4096) -> dict[tuple[int, str | None], torch.Tensor]:
    """f_{≤i}(y) and f_{≤i}(m y) for every layer i and mirror m, one forward pass per chunk,
    keyed by ``(i, None)`` and ``(i, m)``. ``model`` has ``latents(x, upto=...)``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    _check_model(model)
    check_tensor("y", y, dtype="float", nonempty=True)
    layers = check_sequence("layers", layers, nonempty=True)
    depth = getattr(model, "depth", None)
    layers = [check_int(f"layers[{k}]", i, 1, depth) for k, i in enumerate(layers)]
    axes = check_sequence("axes", axes)
    for k, ax in enumerate(axes):
        if ax not in AXES:
            raise ValueError(f"axes[{k}] must be one of {AXES}, got {ax!r}")
    chunk = check_int("chunk", chunk, 1)
    dev = next(model.parameters()).device
    upto = max(layers)
    out: dict[tuple[int, str | None], list[torch.Tensor]] = {}
    for s0 in range(0, len(y), chunk):
        yb = y[s0:s0 + chunk].to(dev)
        for key in [None, *axes]:  # one copy of the chunk at a time (not all of them concatenated)
            lat = model.latents(yb if key is None else mirror_images(yb, key), upto=upto)
            for i in layers:
                out.setdefault((i, key), []).append(lat[i - 1])
    return {k: torch.cat(v) for k, v in out.items()}



def input_spectrum(images: torch.Tensor, max_images: int = 10_000) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues (ascending) and eigenvectors (columns) of the covariance of the first
    ``max_images`` uint8 ``images``, normalised and flattened as the networks see them.

    Directions with tiny eigenvalues carry almost no image variance: training hardly moves
    the first layer along them, while isotropic noise probes excite them fully.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    max_images = check_int("max_images", max_images, 1)
    evals, evecs = torch.linalg.eigh(_covariance(_nonempty(images)[:max_images]))
    return evals.float(), evecs.float()


def _covariance(images: torch.Tensor, axis: str | None = None, block: int = 1000) -> torch.Tensor:
    """The covariance (d, d), float64, of uint8 ``images`` normalised and flattened as the
    networks see them, pooled with their mirror images (``axis``) when given. Accumulated
    over blocks of ``block`` images (never a float copy of them all: the peak memory is the
    d×d matrices); the mirror's part is the images' second moment with rows and columns
    permuted (exact: the mirror permutes coordinates). Divides by (pooled count − 1)."""
    n, shape = len(images), tuple(images.shape[1:])
    d = math.prod(shape)
    second = torch.zeros(d, d, dtype=torch.float64)
    total = torch.zeros(d, dtype=torch.float64)
    for i in range(0, n, block):
        xb = prepare_images(images[i:i + block]).flatten(1).double()
        second.addmm_(xb.T, xb)
        total += xb.sum(0)
    count = n
    if axis is not None:  # (m x)_j = x_{idx[j]}: sum (m x)(m x)^T = S[idx][:, idx]
        idx = mirror_images(torch.arange(d, dtype=torch.float64).reshape(1, *shape), axis).flatten().long()
        second += second[idx[:, None], idx]  # one d×d temporary, not two
        total += total[idx]
        count = 2 * n
    mean = total / count
    second.addr_(mean, mean, alpha=-count)  # sum of (x - mean)(x - mean)^T
    return second.div_(max(1, count - 1))


def _nonempty(images: torch.Tensor) -> torch.Tensor:
    """A non-empty batch of images (N, C, H, W) with data (what prepare_images takes)."""
    return check_tensor("images", images, ndim=4, nonempty=True)


def _check_model(model: object) -> None:
    if not isinstance(model, nn.Module) or next(model.parameters(), None) is None:
        raise TypeError(f"model must be a torch.nn.Module with parameters, got {show(model)}")


@torch.no_grad()
def end_to_end_error(model: nn.Module, images: torch.Tensor, task: str, axis: str = "horizontal") -> float:
    """Mean over images of ‖f(m x) − m f(x)‖/‖f(x)‖ (autoencoders) or ‖f(m x) − f(x)‖/‖f(x)‖
    (classifier logits), for uint8 ``images`` (N, 3, 32, 32).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if task not in ("classify", "autoencode"):
        raise ValueError(f"task must be 'classify' or 'autoencode', got {task!r}")
    _check_model(model)
    _nonempty(images)
    model.eval()
    dev = next(model.parameters()).device
    x = prepare_images(images).to(dev)
    fx, rho = model(x), mirror_action(tuple(x.shape[1:]), axis)
    rho_out = rho if task == "autoencode" else trivial(rho.group, fx.shape[-1])
    diff = equivariance_residual(model, rho, rho_out, x, g=rho.group["m"], fx=fx)
    return float((diff.reshape(len(x), -1).norm(dim=1)
                  / fx.reshape(len(x), -1).norm(dim=1).clamp_min(1e-12)).mean())


def mirror_symmetric_spectrum(images: torch.Tensor, axis: str = "horizontal",
                              max_images: int = 10_000) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues (ascending) and eigenvectors of the covariance of the normalised images
    *and their mirror images* (``axis``). That covariance C commutes with the mirror M
    (M C Mᵀ = C, since M is an involutive permutation), so every function of C (a
    principal subspace, a whitening) commutes with M too.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    max_images = check_int("max_images", max_images, 1)
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, got {axis!r}")
    evals, evecs = torch.linalg.eigh(_covariance(_nonempty(images)[:max_images], axis))  # any image size
    return evals.float(), evecs.float()


def whitening(evals: torch.Tensor, evecs: torch.Tensor, kind: str = "zca",
              eps: float = 1e-2) -> torch.Tensor:
    """The whitening matrix Z (d, d) with x ↦ x Z: ``"zca"`` is V (Λ + ε)^{-1/2} Vᵀ
    (symmetric; commutes with any M that commutes with the covariance), ``"pca"`` is
    V (Λ + ε)^{-1/2} (coordinates in the eigenbasis; does not commute with M).

    Raises:
        ValueError: for another ``kind`` or ``eps`` ≤ 0.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if kind not in ("zca", "pca"):
        raise ValueError(f"kind must be 'zca' or 'pca', got {kind!r}")
    eps = check_float("eps", eps, 0.0, low_open=True)
    check_tensor("evals", evals, ndim=1, dtype="real", finite=True)
    check_tensor("evecs", evecs, ndim=2, dtype="real", finite=True)
    if evecs.shape != (len(evals), len(evals)):
        raise ValueError(f"evecs must have shape ({len(evals)}, {len(evals)}) (one column per eigenvalue), got "
                         f"{tuple(evecs.shape)}")
    scale = (evals.double().clamp_min(0) + eps).rsqrt()
    V = evecs.double()
    Z = V * scale if kind == "pca" else (V * scale) @ V.T
    return Z.float()

