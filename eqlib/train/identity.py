"""The identity of a training run, by content: what keys the model cache and what a checkpoint
must belong to (pinned by ``tests/unit/test_train_identity_pin.py``: a refactoring must not
change it).

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from ..actions import Action
from ..io import config_hash, content_hash
from ..seeds import torch_generator
from .config import TrainConfig


def _preprocess_key(preprocess: Callable | None) -> Any:
    """The cache key of a preprocess: None, or its ``key`` attribute (plain JSON), never its repr."""
    if preprocess is None:
        return None
    key = getattr(preprocess, "key", None)
    if key is None:
        raise TypeError("a cached or checkpointed run needs a stable name for preprocess: give it a `key` "
                        "attribute (plain JSON), as eqlib.train.Normalize has")
    return key


def _action_spec(rho: Action) -> dict[str, Any]:
    """A cache-key description of an action: its type, group, shape, and the content hash
    of what each group element does to a fixed (seeded) probe."""
    probe = torch.randn(2, *rho.shape, generator=torch_generator(12345))
    acts = [content_hash(rho.act(g, probe).double()) for g in rho.group.elements]
    return {"type": type(rho).__name__, "group": repr(rho.group), "shape": list(rho.shape),
            "probe": config_hash({"acts": acts}, length=64)}


def _state_hash(state: Mapping[str, torch.Tensor]) -> str:
    """Content hash of a state dict: every entry's name, dtype, shape and bytes, in order
    (a permutation of hidden units, which keeps the function, changes it)."""
    return config_hash({"names": list(state), "tensors": [content_hash(v) for v in state.values()]}, length=64)


def _model_spec(model: nn.Module) -> dict[str, Any]:
    shapes = {k: list(v.shape) for k, v in model.state_dict().items()}
    return {"class": type(model).__name__, "repr": repr(model), "shapes": shapes}


def _run_spec(model: nn.Module, images: torch.Tensor, labels: torch.Tensor | None, config: TrainConfig,
              eval_data: tuple[torch.Tensor, torch.Tensor] | None, symmetry: tuple[Action, Action] | None,
              preprocess: Callable | None) -> dict[str, Any]:
    """Everything that changes a number of a training run, by content: the model's class,
    repr and initial weights (bytes), the config (with the after-step hook's name), the
    bytes of the images, of the labels (classifiers) and of the evaluation data, the
    symmetry (what each action does to a fixed probe) and the preprocess's key."""
    used_labels = labels if config.task == "classify" else None
    spec = {"model": _model_spec(model), "init": _state_hash(model.state_dict()), "config": config.to_dict(),
            "images": content_hash(images), "labels": None if used_labels is None else content_hash(used_labels),
            "eval": None if eval_data is None else [content_hash(eval_data[0]),
                                                     None if eval_data[1] is None else content_hash(eval_data[1])],
            "preprocess": _preprocess_key(preprocess)}
    if symmetry is not None:
        spec["symmetry"] = {"rho_in": _action_spec(symmetry[0]), "rho_out": _action_spec(symmetry[1])}
    return spec
