"""What changes over training: the learning rate under ``TrainConfig.schedule`` and the ramped
penalty weights.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import math

from ..validation import check_float, check_int
from .config import TrainConfig

__all__ = ["penalty_weight_at", "learning_rate_at"]


def penalty_weight_at(config: TrainConfig, progress: float, *, noise: bool = False) -> float:
    """The penalty weight after fraction ``progress`` ∈ [0, 1] of training (0 before ``penalty_start``,
    then a linear ramp over ``penalty_ramp``, then ``penalty_weight``, or ``penalty_noise``
    with ``noise=True``).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_float("progress", progress, 0.0, 1.0)
    weight = config.penalty_noise if noise else config.penalty_weight
    if config.penalty == "none" or weight == 0:
        return 0.0
    if progress < config.penalty_start:
        return 0.0
    if config.penalty_ramp <= 0:
        return float(weight)
    return float(weight) * min(1.0, (progress - config.penalty_start) / config.penalty_ramp)


def learning_rate_at(config: TrainConfig, progress: float, *, steps: int | None = None) -> float:
    """The learning rate after fraction ``progress`` of training under ``config.schedule``;
    the ``"cosine"`` schedule counts steps, so it needs ``steps`` (the run's number of
    steps; ``progress · steps`` is the step).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    check_float("progress", progress, 0.0, 1.0)
    if config.schedule == "cosine":
        if steps is None:
            raise ValueError("the cosine schedule counts steps: pass steps (the run's number of steps)")
        steps = check_int("steps", steps, 1)
        return _lr_at(config, min(steps - 1, round(progress * steps)), steps)
    if config.schedule == "constant":
        return float(config.lr)
    if config.warmup > 0 and progress < config.warmup:
        return float(config.lr) * progress / config.warmup
    return float(config.lr) * max(0.0, (1.0 - progress) / max(1e-12, 1.0 - config.warmup))


def _lr_at(config: TrainConfig, step: int, steps: int) -> float:
    """The learning rate at step ``step`` (from 0) of ``steps``."""
    if config.schedule != "cosine":
        return learning_rate_at(config, step / steps)
    warm = max(1, int(steps * config.warmup))
    if step < warm:
        return float(config.lr) * ((step + 1) / warm)
    return float(config.lr) * (0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm))))
