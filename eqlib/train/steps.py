"""One epoch of :func:`~eqlib.train.train`: batches in a seeded order, crops, per-sample group
elements, the task loss and the symmetry penalty, the optimizer steps, and the epoch's means.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import functools
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

from ..actions import Action, PermutationAction, equivariance_residual
from ..validation import check_tensor
from .checks import _check_symmetry
from .preset import _mirror_of
from .schedules import _lr_at, penalty_weight_at

__all__ = ["penalty_term"]

#: an epoch's mean loss above this is divergence even when finite (losses of normalised data
#: start near 1; 1e15 is no training)
_DIVERGED = 1e15
#: images normalised per block in the training loop: on a GPU, large blocks mean few kernel launches;
#: on a CPU, blocks that stay in cache are faster (8,192 images at once took 4x longer than 1,024)
_PREP_IMAGES_CPU = 1024
_PREP_IMAGES_GPU = 8192


@functools.lru_cache(maxsize=32)
def _fixed(group, shape: tuple[int, ...]) -> PermutationAction:
    """The trivial action of ``group`` on tensors of ``shape`` (invariance: ρ_out(g) = I)."""
    d = int(torch.Size(shape).numel())
    return PermutationAction(group, torch.arange(d).repeat(group.order, 1).numpy(), shape=shape)


def penalty_term(model: nn.Module, x: torch.Tensor, kind: str, *, axis: str = "horizontal",
                 out: torch.Tensor | None = None, symmetry: tuple[Action, Action] | None = None,
                 elements: list | None = None) -> torch.Tensor:
    """The equivariance penalty of ``model`` on a batch ``x``, as a mean over coordinates.

    Without ``symmetry`` (the mirror penalties; x images (N, C, H, W)):
    ``kind="equivariance"``: mean of (f(m x) − m f(x))² (outputs are images or flattened
    images); ``kind="invariance"``: mean of (f(m x) − f(x))².

    With ``symmetry=(rho_in, rho_out)``: the mean over ``elements`` (default: all of G) of
    mean (f(ρ_in(g)x) − ρ_out(g)f(x))², with ρ_out replaced by the identity for
    ``kind="invariance"``. Both go through :func:`eqlib.actions.equivariance_residual`.

    ``out`` = f(x) if already computed. Zero for an exactly equivariant / invariant model.

    Chapter: *Reproducing the CIFAR-10 experiment*; *Building equivariant layers*.
    """
    if kind not in ("equivariance", "invariance"):
        raise ValueError(f"kind must be 'equivariance' or 'invariance', got {kind!r}")
    fx = model(x) if out is None else out
    if symmetry is None:
        check_tensor("x", x, ndim=4)
        rho_in = _mirror_of(tuple(x.shape[1:]), axis)
        elements = [rho_in.group["m"]]
        rho_out = rho_in
    else:
        rho_in, rho_out = _check_symmetry(symmetry)
        elements = list(rho_in.group) if elements is None else list(elements)
    if kind == "invariance":
        rho_out = _fixed(rho_in.group, tuple(fx.shape[1:]))
    terms = [equivariance_residual(model, rho_in, rho_out, x, g=g, fx=fx).pow(2).mean() for g in elements]
    return terms[0] if len(terms) == 1 else torch.stack(terms).mean()


def _act_each(rho: Action, index: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """ρ(g_n) x_n for every sample n, with g_n = the group's element number ``index[n]``
    (a selection per element of G, without a device sync)."""
    out = x
    for g in rho.group:
        if g != rho.group.identity:
            mask = (index == g.index).view(-1, *([1] * (x.dim() - 1)))
            out = torch.where(mask, rho.act(g, x), out)
    return out


def _draw_elements(group, k: int, gen: torch.Generator, dev: torch.device) -> torch.Tensor:
    """Numbers of ``k`` elements of ``group`` drawn uniformly: for a group of two elements a
    fair coin per sample (``rand < 1/2`` picks the non-identity element, as the mirror
    augmentation always drew), otherwise ``randint(|G|)``."""
    if group.order == 2:
        coin = (torch.rand(k, generator=gen, device=dev) < 0.5).long()
        e = group.identity.index
        return coin if e == 0 else 1 - coin
    return torch.randint(group.order, (k,), generator=gen, device=dev)


def _random_crops(x: torch.Tensor, offsets: torch.Tensor, pad: int) -> torch.Tensor:
    """Window ``x[n, :, dy:dy+H, dx:dx+W]`` of each image zero-padded by ``pad`` pixels, with
    ``(dy, dx) = offsets[n]`` in 0 .. 2·pad: one gather on the batch, no loop over samples."""
    n, c, h, w = x.shape
    wp = w + 2 * pad
    xp = F.pad(x, (pad, pad, pad, pad)).view(n, c, -1)
    ar_h, ar_w = torch.arange(h, device=x.device), torch.arange(w, device=x.device)
    index = (offsets[:, 0, None, None] + ar_h.view(1, h, 1)) * wp + offsets[:, 1, None, None] + ar_w.view(1, 1, w)
    return xp.gather(2, index.view(n, 1, h * w).expand(n, c, h * w)).view(n, c, h, w)


def _task_loss(out: torch.Tensor, x: torch.Tensor, y: torch.Tensor | None, task: str) -> torch.Tensor:
    if task == "classify":
        return F.cross_entropy(out, y)
    return F.mse_loss(out, x.reshape(out.shape))


def _epoch_means(task_losses: list[torch.Tensor], terms: list[tuple[list[float], list[torch.Tensor]]],
                 correct: torch.Tensor | None, n: int, batch_size: int) -> list[float]:
    """[loss, task loss, penalty on the batches, penalty on noise, accuracy] averaged over the
    epoch's ``n`` samples, from the per-batch values; ``terms`` holds, per penalty, the
    weight of each batch and the values of the batches with weight > 0. One device sync."""
    k = torch.full((len(task_losses),), float(batch_size), dtype=torch.float64)
    k[-1] = n - batch_size * (len(task_losses) - 1)  # the last batch may be smaller
    task = torch.stack(task_losses).double().cpu()
    loss, pens = task, []
    for weights, values in terms:
        pen = torch.zeros_like(task)
        if values:
            pen[torch.tensor([w > 0 for w in weights])] = torch.stack(values).double().cpu()
        loss = loss + torch.tensor(weights, dtype=torch.float64) * pen
        pens.append(pen)
    means = [float((v * k).sum() / n) for v in (loss, task, *pens)]
    return [*means, float(correct) / n if correct is not None else float("nan")]


def _noise_basis(x_all: torch.Tensor, prep, rho_in: Action, k: int, dev: torch.device,
                 block: int = 1024) -> torch.Tensor:
    """(d, k): orthonormal top-``k`` principal directions of the preprocessed samples
    ``prep(x_all)`` (flattened, d coordinates) pooled with their images under every element
    of ``rho_in``'s group, so that the subspace of a permutation action, such as the mirror,
    is mapped to itself up to rounding. With fewer pooled samples than coordinates, from
    the SVD of the centred samples; otherwise from the eigenvectors of their covariance,
    mean_g ρ(g) E[x xᵀ] ρ(g)ᵀ − μ μᵀ with μ = mean_g ρ(g) E[x] (float32: seconds on a CPU
    for 3,072 coordinates)."""
    n = x_all.shape[0]
    shape = tuple(x_all.shape[1:]) if rho_in is None else tuple(rho_in.shape)
    group = [None] if rho_in is None else list(rho_in.group)
    acts = [(lambda v: v) if g is None else (lambda v, g=g: rho_in.act(g, v.reshape(-1, *shape)).flatten(1))
            for g in group]
    d = int(torch.Size(shape).numel())
    if k > d:
        raise ValueError(f"TrainConfig.noise_subspace={k} exceeds the samples' {d} coordinates")
    if n * len(group) < d:  # few samples: the SVD of the pooled, centred samples
        x = prep(x_all).flatten(1).double()
        pooled = torch.cat([act(x) for act in acts])
        vecs = torch.linalg.svd(pooled - pooled.mean(0), full_matrices=False)[2]
        if k > vecs.shape[0]:
            raise ValueError(f"TrainConfig.noise_subspace={k} exceeds the rank of the {len(pooled)} pooled samples")
        return vecs[:k].T.float().contiguous()
    total = torch.zeros(1, d, device=dev)
    second = torch.zeros(d, d, device=dev)
    for i in range(0, n, block):
        xb = prep(x_all[i:i + block]).flatten(1).float()
        total += xb.sum(0, keepdim=True)
        second += xb.T @ xb
    mean = sum(act(total / n) for act in acts) / len(group)
    moment = sum(act(act(second / n).T).T for act in acts) / len(group)  # ρ on the rows, then the columns
    cov = moment - mean.T @ mean
    return torch.linalg.eigh((cov + cov.T) / 2)[1][:, -k:].flip(1).contiguous()


def _noise(x: torch.Tensor, config, basis: torch.Tensor | None, gen: torch.Generator) -> torch.Tensor:
    """The penalty's noise for a batch shaped like ``x``: isotropic, ``noise_std · N(0, I)``,
    or with ``basis`` (d, k) isotropic in its span with the same mean squared norm."""
    if basis is None:
        return torch.randn(x.shape, generator=gen, device=x.device) * config.noise_std
    d, k = basis.shape
    z = torch.randn(x.shape[0], k, generator=gen, device=x.device) * (config.noise_std * math.sqrt(d / k))
    return (z @ basis.T).reshape(x.shape)


class _Run:
    """What one epoch of :func:`train` needs besides the model and the config."""

    def __init__(self, config, rho_in, rho_out, prep, x_all, y_all, gen, dev, optimizer, hooks, bar):
        self.config, self.rho_in, self.rho_out, self.prep = config, rho_in, rho_out, prep
        self.x_all, self.y_all, self.gen, self.dev, self.optimizer, self.hooks, self.bar = \
            x_all, y_all, gen, dev, optimizer, hooks, bar
        self.group = rho_in.group if rho_in is not None else None
        self.others = [g for g in self.group if g != self.group.identity] if self.group is not None else []
        self.per_batch = config.augment_mirror and config.augment_per_batch
        self.n = x_all.shape[0]
        self.bs = min(config.batch_size, self.n)
        self.steps_per_epoch = math.ceil(self.n / self.bs)
        self.total_steps = config.epochs * self.steps_per_epoch
        self.block = max(1, (_PREP_IMAGES_CPU if dev.type == "cpu" else _PREP_IMAGES_GPU) // self.bs)
        self.label_max = int(y_all.max()) if y_all is not None else None
        self.basis = (_noise_basis(x_all, prep, rho_in, config.noise_subspace, dev)
                      if config.noise_subspace and config.penalty_noise > 0 else None)

    def epoch(self, model: nn.Module, epoch: int) -> tuple[list[float], float, float, float]:
        """Train one epoch: (epoch means of ``_epoch_means``, last penalty weight, last lr,
        seconds); a diverged loss raises."""
        t0 = time.perf_counter()
        s, pw, lr = self._steps(model, epoch)
        seconds = time.perf_counter() - t0
        if self.bar is not None:  # no device sync inside the epoch; the bar redraws at most every few seconds
            self.bar.set_postfix(epoch=epoch + 1, loss=f"{s[0]:.4f}", img_s=f"{self.n / max(seconds, 1e-9):.0f}",
                                 refresh=False)
        if not math.isfinite(s[0]) or abs(s[0]) > _DIVERGED:
            raise FloatingPointError(f"training diverged in epoch {epoch + 1} (loss {s[0]:g}); lower lr or "
                                     f"penalty_weight, or lengthen penalty_ramp")
        return s, pw, lr, seconds

    def _steps(self, model: nn.Module, epoch: int) -> tuple[list[float], float, float]:
        """The epoch's steps: (epoch means of ``_epoch_means``, last penalty weight, last lr)."""
        config, gen, dev, bs, group = self.config, self.gen, self.dev, self.bs, self.group
        perm = torch.randperm(self.n, generator=gen, device=dev)
        elements = _draw_elements(group, self.n, gen, dev) if config.augment_mirror and not self.per_batch else None
        pad = config.augment_crop
        offsets = torch.randint(2 * pad + 1, (self.n, 2), generator=gen, device=dev) if pad else None
        # per batch, kept on the device until the epoch ends (one sync per epoch):
        task_losses: list[torch.Tensor] = []
        terms: list[tuple[list[float], list[torch.Tensor]]] = [([], []), ([], [])]  # (weights, values): x, noise
        predictions: list[torch.Tensor] = []
        pw, lr = 0.0, config.lr
        for b in range(self.steps_per_epoch):
            if b % self.block == 0:  # crop, preprocess (and act on) the next `block` batches in one go
                idx = perm[b * bs:(b + self.block) * bs]
                raw = self.x_all[idx]
                if offsets is not None:  # crop the zero-padded (for uint8 images: black) samples
                    raw = _random_crops(raw, offsets[idx], pad)
                xs = self.prep(raw)
                if elements is not None:
                    xs = _act_each(self.rho_in, elements[idx], xs)
                x_batches = xs.split(bs)
                y_batches = self.y_all[idx].split(bs) if self.y_all is not None else None
            x = x_batches[b % self.block]
            y = y_batches[b % self.block] if y_batches is not None else None
            if self.per_batch:
                x = _act_each(self.rho_in, _draw_elements(group, len(x), gen, dev), x)
            step = epoch * self.steps_per_epoch + b
            lr = _lr_at(config, step, self.total_steps)
            for param_group in self.optimizer.param_groups:
                param_group["lr"] = lr
            frac = step / self.total_steps
            pw, pn = penalty_weight_at(config, frac), penalty_weight_at(config, frac, noise=True)
            out = model(x)
            if self.label_max is not None:  # once: the labels must index the model's outputs
                if out.dim() != 2 or self.label_max >= out.shape[1]:
                    raise ValueError(f"labels must be class indices below the model's {tuple(out.shape[1:])} "
                                     f"outputs, got a label {self.label_max}")
                self.label_max = None
            task_loss = _task_loss(out, x, y, config.task)
            loss = task_loss
            noise = _noise(x, config, self.basis, gen) if pn > 0 else None
            picks = None
            if (pw > 0 or pn > 0) and config.penalty_samples:
                drawn = torch.randint(group.order, (config.penalty_samples,), generator=gen, device=dev)
                picks = [group[int(i)] for i in drawn]
            for (weights, values), w, inputs in zip(terms, (pw, pn), (x, noise)):
                weights.append(w)
                if w > 0:
                    pen = penalty_term(model, inputs, config.penalty, out=out if inputs is x else None,
                                       symmetry=(self.rho_in, self.rho_out), elements=picks or self.others)
                    loss = loss + w * pen
                    values.append(pen.detach())
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            self.optimizer.step()
            if "after_step" in self.hooks:
                self.hooks["after_step"](model, step)
            task_losses.append(task_loss.detach())
            if y is not None:
                predictions.append(out.argmax(1))
            if self.bar is not None:
                self.bar.update(1)
        correct = (torch.cat(predictions) == self.y_all[perm]).sum() if predictions else None
        return _epoch_means(task_losses, terms, correct, self.n, bs), pw, lr
