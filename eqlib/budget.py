"""Compute budgets of the experiment chapters: ``laptop`` (the default) or ``full``.

``laptop`` runs every experiment chapter in minutes on 2 CPU cores; ``full`` is the
published scale, meant for a GPU, and is only used when asked for (``EQLIB_BUDGET=full``
or ``--budget full``). ``medium`` is declared only by the GCNN-barrier experiment (chapter
10): a CPU record over hours. ``ci`` is accepted as a deprecated name of ``laptop``.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import os
import warnings

__all__ = ["BUDGETS", "DEFAULT_BUDGET", "budget", "budget_choices"]

BUDGETS = ("laptop", "medium", "full")
DEFAULT_BUDGET = "laptop"
#: old names still accepted (with a DeprecationWarning)
_ALIASES = {"ci": "laptop"}


def budget(name: str | None = None) -> str:
    """``name`` if given, else ``$EQLIB_BUDGET``, else ``"laptop"``; ``"ci"`` means ``"laptop"``.

    Raises:
        ValueError: for a name other than ``"laptop"``, ``"medium"`` or ``"full"``.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if name is not None and not isinstance(name, str):
        raise TypeError(f"budget must be a string, got {type(name).__name__} {name!r}")
    value = (name or os.environ.get("EQLIB_BUDGET") or DEFAULT_BUDGET).strip().lower()
    if value in _ALIASES:
        warnings.warn(f"budget {value!r} is deprecated; use {_ALIASES[value]!r}",
                      DeprecationWarning, stacklevel=2)
        value = _ALIASES[value]
    if value not in BUDGETS:
        raise ValueError(f"unknown budget {value!r} (from EQLIB_BUDGET?); "
                         f"choose one of {BUDGETS}")
    return value


def budget_choices() -> list[str]:
    """Names a command line accepts for ``--budget`` (the budgets and the old aliases)."""
    return sorted(BUDGETS + tuple(_ALIASES))
