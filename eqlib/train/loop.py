"""The one training loop, :func:`~eqlib.train.train`: epochs of ``steps``, evaluation, snapshots,
checkpoints and hooks.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import torch
from torch import nn

from ..actions import Action
from ..device import default_device
from ..io import config_hash
from ..seeds import torch_generator
from ..validation import check_bool, check_int, show
from .checks import _check_device, _check_hooks, _check_model, _check_pair, _check_samples, _check_symmetry
from .config import TrainConfig, TrainResult
from .identity import _run_spec
from .state import _cpu_state, _empty_history, _make_optimizer, _resume, _save_checkpoint
from .steps import _Run, _task_loss

__all__ = ["train"]

#: least time between progress-bar redraws: a long run in a notebook sends few messages (a test
#: harness such as nbval reads them only after the cell ends, and a flood of them is dropped)
_PROGRESS_SECONDS = 2.0


@torch.no_grad()
def _evaluate(model: nn.Module, eval_data, task: str, preprocess: Callable | None, dev: torch.device,
              batch_size: int = 1000) -> tuple[float, float]:
    """(accuracy, nan) for classifiers, (nan, mean squared error) for autoencoders, on the
    preprocessed evaluation samples, in batches (one sync)."""
    ex, ey = eval_data
    n = len(ex)
    total = torch.zeros((), dtype=torch.float64, device=dev)
    model.eval()
    for i in range(0, n, batch_size):
        xb = ex[i:i + batch_size].to(dev)
        xb = preprocess(xb) if preprocess is not None else xb.float()
        out = model(xb)
        if task == "classify":
            total += (out.argmax(1) == ey[i:i + batch_size].to(dev)).sum()
        else:
            total += _task_loss(out, xb, None, "autoencode").double() * len(xb)
    model.train()
    value = float(total) / n
    return (value, float("nan")) if task == "classify" else (float("nan"), value)


def _record(history: dict[str, list], epoch: int, s: list[float], pw: float, lr: float, seconds: float, n: int,
            classify: bool, test: tuple[float, float] | None) -> None:
    """Append epoch ``epoch``'s values to ``history`` (``s`` from ``_epoch_means``)."""
    for key, value in (("epoch", epoch), ("loss", s[0]), ("task_loss", s[1]), ("penalty", s[2]),
                       ("noise_penalty", s[3]), ("penalty_weight", pw),
                       ("accuracy", s[4] if classify else float("nan")), ("lr", lr),
                       ("seconds", seconds), ("images_per_s", n / max(seconds, 1e-9))):
        history[key].append(value)
    if test is not None:
        history["test_accuracy"].append(test[0])
        history["test_loss"].append(test[1])


def train(model: nn.Module, data: tuple[torch.Tensor, torch.Tensor | None], config: TrainConfig, *,
          symmetry: tuple[Action, Action] | None = None,
          preprocess: Callable[[torch.Tensor], torch.Tensor] | None = None,
          hooks: Mapping[str, Callable] | None = None, device: str | torch.device | None = None,
          progress: bool = True, checkpoints: str | Path | None = None, checkpoint_every: int = 1,
          eval_data: tuple[torch.Tensor, torch.Tensor | None] | None = None) -> TrainResult:
    """Train ``model`` on ``data = (samples, labels)`` under ``config``: the one training loop.

    Each step takes a batch in a seeded order, cropped when ``config.augment_crop``,
    ``preprocess``-ed on the device (None: the samples as floats), acted on by a random element of G per sample when
    ``config.augment_mirror``, and adds to the task loss the penalty
    mean_g mean (f(ρ_in(g)x) − ρ_out(g)f(x))² (ρ_out = identity for ``penalty="invariance"``)
    on the batch and, with ``config.penalty_noise``, on isotropic noise, each with its
    ramped weight. Images are a preset, not a mode: ``**image_preset(shape)`` passes the
    mirror and :class:`Normalize`.

    Random draws, in order, from one generator seeded with ``config.seed``: per epoch the
    batch order, then the augmentation elements of the epoch's samples (with
    ``config.augment_per_batch``, each batch's at the start of the batch instead), then
    the crop offsets (``config.augment_crop``); per batch, the penalty noise, then the
    sampled penalty elements. Crops are cut from the raw samples, before ``preprocess``.

    Args:
        model: any module mapping preprocessed samples to logits (N, K) or to
            reconstructions of the samples' shape or their flattening.
        data: (samples, labels); samples are moved once to the device; labels are integer
            class indices (N,) for ``task="classify"`` (used as int64; ignored otherwise).
        config: the :class:`TrainConfig`.
        symmetry: ``(rho_in, rho_out)``, actions of one finite group on the preprocessed
            samples and on the outputs; needed by the augmentation and the penalty.
        preprocess: a function applied to blocks of raw samples on the device; its
            ``check(samples, name)``, when it has one, validates the data; its ``key`` is
            its cache key (:class:`Normalize` has both).
        hooks: ``{"after_step": f(model, step), "after_epoch": g(epoch, model, history)}``;
            ``f`` runs after every optimizer step (``step`` counts from 0; its name goes in
            ``config.after_step``), ``g`` after every epoch (after the checkpoint).
        device: where to train (default :func:`eqlib.device.default_device`).
        progress: show a ``tqdm.auto`` bar with loss and samples/s, kept when done (a hidden
            bar would be stored as an empty box in an executed notebook).
        checkpoints: a file path; every ``checkpoint_every`` epochs the full state
            (weights, optimizer, random generator, history) is saved there atomically
            with the run's identity (a content hash of the initial weights, the data,
            config, symmetry and the preprocess's key), and if the file exists when
            ``train`` starts, training resumes from it only when its identity is this
            run's; a checkpoint of another run is reported and training starts afresh.
        eval_data: optional (samples, labels) for test accuracy (classifiers) or test loss
            after every epoch.

    Returns:
        :class:`TrainResult`; same seed and same device give the same weights.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    _check_model(model)
    check_bool("progress", progress)
    images, labels = _check_pair("data", data)
    rho_in, rho_out = _check_symmetry(symmetry) if symmetry is not None else (None, None)
    if preprocess is not None and not callable(preprocess):
        raise TypeError(f"preprocess must be callable, got {show(preprocess)}")
    wants = config.augment_mirror or (config.penalty != "none" and config.penalty_weight + config.penalty_noise > 0)
    if rho_in is None and wants:
        raise ValueError("config's augmentation and penalty act by a symmetry: pass symmetry=(rho_in, rho_out) "
                         "(images: **eqlib.train.image_preset(shape))")
    _check_samples(images, labels, config.task, rho_in, preprocess)
    if config.augment_crop and images.dim() != 4:
        raise ValueError(f"TrainConfig.augment_crop crops images (N, C, H, W), got samples of shape "
                         f"{tuple(images.shape)}")
    if eval_data is not None:
        ex, ey = _check_pair("eval_data", eval_data)
        _check_samples(ex, ey, config.task, rho_in, preprocess, "eval images")
        eval_data = (ex.detach(), None if ey is None else ey.detach().long())
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, 1)
    hooks = _check_hooks(hooks, config)
    dev = _check_device(default_device(device))
    model.to(dev)
    images = images.detach()  # the library owns the graph: an input with requires_grad must not join it
    x_all = images.to(dev).contiguous()  # once; any memory layout gives the same numbers
    y_all = labels.detach().to(dev, torch.long) if (labels is not None and config.task == "classify") else None
    gen = torch_generator(int(config.seed), dev)
    ckpt_path = Path(checkpoints) if checkpoints is not None else None
    identity = None
    if ckpt_path is not None:  # what the checkpoint must belong to: this run, by content
        identity = config_hash(_run_spec(model, images, labels, config, eval_data, symmetry, preprocess), length=64)
    # the optimizer after the identity (neither touches the weights), so that the config goes through
    # loop > checks > identity > config > state > steps > schedules and comes back to none of them
    optimizer = _make_optimizer(model, config)
    history, snapshots, start_epoch = _empty_history(), [], 0
    if ckpt_path is not None and ckpt_path.exists():
        optimizer, history, snapshots, start_epoch = _resume(ckpt_path, identity, model, optimizer, gen, config)
    if config.snapshot_every and start_epoch == 0 and not snapshots:
        snapshots.append((0, _cpu_state(model)))
    prep = preprocess if preprocess is not None else (lambda x: x.float())
    run = _Run(config, rho_in, rho_out, prep, x_all, y_all, gen, dev, optimizer, hooks, None)
    n = run.n
    if progress:
        from tqdm.auto import tqdm
        run.bar = tqdm(total=run.total_steps, initial=start_epoch * run.steps_per_epoch,
                       desc=f"train {config.task}", unit="step", leave=True, mininterval=_PROGRESS_SECONDS)
    model.train()
    for epoch in range(start_epoch, config.epochs):
        s, pw, lr, seconds = run.epoch(model, epoch)
        test = _evaluate(model, eval_data, config.task, preprocess, dev) if eval_data is not None else None
        _record(history, epoch + 1, s, pw, lr, seconds, n, y_all is not None, test)
        if config.snapshot_every and (epoch + 1) % config.snapshot_every == 0:
            snapshots.append((epoch + 1, _cpu_state(model)))
        if ckpt_path is not None and ((epoch + 1) % checkpoint_every == 0 or epoch + 1 == config.epochs):
            ckpt_path = _save_checkpoint(ckpt_path, {
                "identity": identity, "model": _cpu_state(model), "optimizer": optimizer.state_dict(),
                "generator": gen.get_state(), "history": history, "epoch": epoch + 1,
                "snapshot_epochs": [e for e, _ in snapshots], "snapshots": [s for _, s in snapshots]})
        if "after_epoch" in hooks:
            hooks["after_epoch"](epoch + 1, model, history)
    if run.bar is not None:
        run.bar.close()
    model.eval()
    return TrainResult(model=model, history=history, snapshots=snapshots, config=config)
