"""Compute budgets of the experiment chapters: ``ci`` (minutes on 2 CPU cores) or ``full``.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/10_cifar_mlp).
"""
from __future__ import annotations

import os

__all__ = ["BUDGETS", "budget"]

BUDGETS = ("ci", "full")


def budget(name: str | None = None) -> str:
    """``name`` if given, else ``$EQLIB_BUDGET``, else ``"full"``.

    Raises:
        ValueError: for a name other than ``"ci"`` or ``"full"``.
    """
    value = (name or os.environ.get("EQLIB_BUDGET") or "full").strip().lower()
    if value not in BUDGETS:
        raise ValueError(f"unknown budget {value!r} (from EQLIB_BUDGET?); choose one of {BUDGETS}")
    return value
