"""A cache of trained models on disk, keyed by the run's identity by content
(:func:`~eqlib.train.cached_train`).

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from ..actions import Action
from ..io import CACHE_WRITE_ERRORS, CorruptFileError, cache_dir, config_hash, load_torch, save_torch, warn_once
from ..validation import show
from .checks import _check_hooks, _check_pair, _check_samples, _check_symmetry
from .config import TrainConfig, TrainResult
from .identity import _preprocess_key, _run_spec
from .loop import train
from .state import _cpu_state

__all__ = ["cached_train"]


def cached_train(build_model: Callable[[], nn.Module], config: TrainConfig,
                 data: tuple[torch.Tensor, torch.Tensor | None], *,
                 symmetry: tuple[Action, Action] | None = None,
                 preprocess: Callable[[torch.Tensor], torch.Tensor] | None = None,
                 hooks: Mapping[str, Callable] | None = None,
                 cache_key_extra: Mapping[str, Any] | None = None, data_spec: Mapping[str, Any] | None = None,
                 device: str | torch.device | None = None, progress: bool = True,
                 eval_data: tuple[torch.Tensor, torch.Tensor | None] | None = None,
                 checkpoint_every: int = 1) -> TrainResult:
    """:func:`train` ``build_model()`` on ``data = (samples, labels)``, cached on disk.

    ``symmetry``, ``preprocess`` and ``hooks`` are passed to :func:`train`. The cache key
    is :func:`eqlib.io.config_hash` of everything that changes a number, by content
    (:func:`eqlib.io.content_hash` of the bytes, never a sample or a sum): the model's
    class, repr and initial weights (in order, so a permuted initialisation is another
    run), the config (which names the after-step hook), the samples, the labels
    (classifiers), ``eval_data``, the symmetry (its group and what each action does to a
    fixed probe), the preprocess's ``key``, ``data_spec`` (a description added to the
    content, never replacing it) and ``cache_key_extra`` (plain JSON). The after-epoch
    hook only observes and is not keyed. The result (weights, history, snapshots) is
    saved atomically under ``cache_dir("models")`` with that identity, and a file whose
    stored identity differs is retrained; while training, a checkpoint file beside it lets
    an interrupted run resume (:func:`train` resumes only a checkpoint of the same run). A
    corrupt cache file is rebuilt with a warning.

    Returns:
        :class:`TrainResult` with the model on the CPU in eval mode (``from_cache`` set
        when it was loaded).

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not callable(build_model) or isinstance(build_model, nn.Module):
        raise TypeError(f"build_model must be a function returning a fresh model, got {show(build_model)}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    images, labels = _check_pair("data", data)
    rho_in = _check_symmetry(symmetry)[0] if symmetry is not None else None
    _check_samples(images, labels, config.task, rho_in, preprocess)
    _preprocess_key(preprocess)
    _check_hooks(hooks, config)
    for name, value in (("cache_key_extra", cache_key_extra), ("data_spec", data_spec)):
        if value is not None and not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a mapping (JSON-serialisable), got {show(value)}")
    model = build_model()
    if not isinstance(model, nn.Module):
        raise TypeError(f"build_model must return a torch.nn.Module, got {show(model)}")
    if eval_data is not None:
        _check_pair("eval_data", eval_data)
    run_spec = _run_spec(model, images, labels, config, eval_data, symmetry, preprocess)
    for name, value in (("cache_key_extra", cache_key_extra), ("data_spec", data_spec)):
        if value is not None:
            try:
                config_hash({name: value})
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{name} must be plain JSON: {exc}") from None
    spec = {"run": run_spec, "data_spec": None if data_spec is None else dict(data_spec),
            "extra": dict(cache_key_extra or {})}
    identity = config_hash(spec, length=64)
    key = identity[:16]
    kwargs = {"symmetry": symmetry, "preprocess": preprocess, "hooks": hooks, "device": device,
              "progress": progress, "eval_data": eval_data}
    try:
        folder = cache_dir("models")
    except OSError as exc:  # read-only or full disk: the cache is optional
        warn_once(f"models-cache:{exc.filename}", f"the model cache cannot be created ({exc}); training "
                  "without it (set EQLIB_CACHE to a writable folder to keep the results)")
        result = train(model, (images, labels), config, **kwargs)
        result.model.to("cpu")
        return result
    path = folder / f"{type(model).__name__}-{config.task}-{key}.pt"
    ckpt = folder / f"{type(model).__name__}-{config.task}-{key}.ckpt"
    if path.exists():
        try:
            state = load_torch(path)
            if state.get("identity") != identity:
                raise ValueError("it was stored for another run (or by an older eqlib)")
            model.load_state_dict(state["model"])
            snapshots = [(int(e), s) for e, s in zip(state["snapshot_epochs"], state["snapshots"])]
            return TrainResult(model=model.eval(), history={k: list(v) for k, v in state["history"].items()},
                               snapshots=snapshots, config=config, from_cache=True)
        except (CorruptFileError, KeyError, RuntimeError, ValueError, TypeError) as exc:
            warnings.warn(f"cached model {path.name} is corrupt ({exc}); retraining it")
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
            model = build_model()
    result = train(model, (images, labels), config, checkpoints=ckpt, checkpoint_every=checkpoint_every, **kwargs)
    result.model.to("cpu")
    try:
        save_torch({"identity": identity, "model": _cpu_state(result.model), "history": result.history,
                    "snapshot_epochs": [e for e, _ in result.snapshots],
                    "snapshots": [s for _, s in result.snapshots], "config": json.dumps(config.to_dict())}, path)
        ckpt.unlink(missing_ok=True)
    except CACHE_WRITE_ERRORS as exc:  # read-only or full disk: the result is still good
        warn_once(f"models-cache-write:{folder}", f"could not write the model cache {path} "
                  f"({type(exc).__name__}: {exc}); the result is returned but not cached")
    return result
