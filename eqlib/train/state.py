"""The state of a run besides its weights: the optimizer the config describes, the history,
and checkpoints that save the whole state and resume it.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..io import CACHE_WRITE_ERRORS, CorruptFileError, load_torch, save_torch, warn_once
from ..seeds import torch_generator
from .config import TrainConfig


def _first_weight(model: nn.Module) -> nn.Parameter:
    """The first layer's weight: the first trainable parameter with two or more dimensions."""
    for p in model.parameters():
        if p.requires_grad and p.dim() >= 2:
            return p
    raise ValueError("TrainConfig.first_weight_decay needs a parameter with two or more dimensions (a layer's weight)")


def _make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    params: list | list[dict] = [p for p in model.parameters() if p.requires_grad]
    decays = [config.weight_decay]
    if config.first_weight_decay is not None:  # the first layer's weight in a group of its own
        first = _first_weight(model)
        params = [{"params": [first], "weight_decay": config.first_weight_decay},
                  {"params": [p for p in params if p is not first], "weight_decay": config.weight_decay}]
        decays.append(config.first_weight_decay)
    if config.optimizer == "adam":
        if max(decays) > 0:
            return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
        return torch.optim.Adam(params, lr=config.lr)
    return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)


def _cpu_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _empty_history() -> dict[str, list]:
    keys = ("epoch", "loss", "task_loss", "penalty", "noise_penalty", "penalty_weight", "accuracy",
            "test_accuracy", "test_loss", "lr", "images_per_s", "seconds")
    return {k: [] for k in keys}


class _NotResumed(Exception):
    """A checkpoint that is not this run's (already reported)."""


def _resume(ckpt_path: Path, identity: str, model: nn.Module, optimizer: torch.optim.Optimizer,
            gen: torch.Generator, config: TrainConfig):
    """(optimizer, history, snapshots, start epoch) from the checkpoint when it is this run's,
    else a fresh start (reported)."""
    initial_state = {k: v.clone() for k, v in model.state_dict().items()}
    try:
        state = load_torch(ckpt_path, map_location="cpu")
        if not isinstance(state, dict) or state.get("identity") != identity:
            warnings.warn(f"the checkpoint {ckpt_path} belongs to another run (other data, settings or initial "
                          "weights, or an older eqlib that stored no identity); it is not resumed: training "
                          "from scratch (it will be overwritten)")
            state = None
    except CorruptFileError as exc:
        warnings.warn(f"ignoring unreadable checkpoint {ckpt_path} ({exc}); training from scratch")
        state = None
    try:
        if state is None:
            raise _NotResumed
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        history = {k: list(v) for k, v in state["history"].items()}
        snapshots = [(int(e), s) for e, s in zip(state["snapshot_epochs"], state["snapshots"])]
        return optimizer, history, snapshots, int(state["epoch"])
    except (_NotResumed, KeyError, RuntimeError, ValueError, TypeError) as exc:
        if not isinstance(exc, _NotResumed):
            warnings.warn(f"ignoring unreadable checkpoint {ckpt_path} ({exc}); training from scratch")
        model.load_state_dict(initial_state)
        gen.set_state(torch_generator(config.seed, device=gen.device).get_state())  # restart
        return _make_optimizer(model, config), _empty_history(), [], 0


def _save_checkpoint(path: Path, state: dict[str, Any]) -> Path | None:
    """Write ``state`` to ``path`` atomically; ``path``, or None (warned once) when it cannot
    be written: the checkpoint is optional."""
    try:
        save_torch(state, path)
        return path
    except CACHE_WRITE_ERRORS as exc:  # read-only or full disk
        warn_once(f"checkpoint:{path.parent}", f"could not write the checkpoint {path} "
                  f"({type(exc).__name__}: {exc}); training on without checkpoints")
        return None
