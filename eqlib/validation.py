"""Argument checks for eqlib's public functions: one wording everywhere.

Each check raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind,
wrong value) with a message that names the argument, shows the value and says what
was expected, e.g. ``TrainConfig.epochs must be an integer >= 1, got 2.5``. This module
sits at the bottom of the layering and imports nothing from eqlib.

Chapter: none explains these helpers (they are the library's plumbing); their errors
show up wherever a chapter calls eqlib with a wrong argument.
"""
from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import torch

__all__ = [
    "show",
    "check_int",
    "check_float",
    "check_choice",
    "check_bool",
    "check_tensor",
    "check_finite",
    "check_shape",
    "check_sequence",
]


def show(value: Any, limit: int = 80) -> str:
    """A short repr of ``value`` for error messages (tensors by shape and dtype)."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _bounds(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high}")
    return (" " + " and ".join(parts)) if parts else ""


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int; integral floats (2.0) pass, bools, 2.5, NaN and inf do not.

    Examples:
        >>> check_int("width", 2.0, 1)
        2
        >>> for bad in (True, 0):
        ...     try:
        ...         check_int("width", bad, 1)
        ...     except (TypeError, ValueError) as exc:
        ...         print(type(exc).__name__, exc)
        TypeError width must be an integer >= 1, got True
        ValueError width must be an integer >= 1, got 0

    Chapter: used by every chapter (the argument checks of ``eqlib``).
    """
    what = f"an integer in {low}..{high}" if low is not None and high is not None else \
        f"an integer{_bounds(low, high, False, False)}"
    if isinstance(value, bool):
        raise TypeError(f"{name} must be {what}, got {show(value)}")
    if not isinstance(value, numbers.Real):
        try:  # integer-like objects: numpy and 0-d torch integers, group elements
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"{name} must be {what}, got {show(value)}") from None
    if not isinstance(value, numbers.Integral):
        as_float = float(value)
        if not (math.isfinite(as_float) and as_float.is_integer()):
            raise ValueError(f"{name} must be {what}, got {show(value)}")
    out = int(value)
    if (low is not None and out < low) or (high is not None and out > high):
        raise ValueError(f"{name} must be {what}, got {show(value)}")
    return out


def check_float(name: str, value: Any, low: float | None = None, high: float | None = None,
                *, low_open: bool = False, high_open: bool = False, finite: bool = True) -> float:
    """``value`` as a float; NaN is always refused, inf unless ``finite=False``.

    Examples:
        >>> check_float("lr", 1e-3, 0.0, low_open=True)
        0.001
        >>> try:
        ...     check_float("lr", float("nan"))
        ... except ValueError as exc:
        ...     print(exc)
        lr must be a finite number, got nan

    Chapter: used by every chapter (the argument checks of ``eqlib``).
    """
    what = f"a {'finite ' if finite else ''}number{_bounds(low, high, low_open, high_open)}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {what}, got {show(value)}")
    out = float(value)
    if math.isnan(out) or (finite and math.isinf(out)):
        raise ValueError(f"{name} must be {what}, got {show(value)}")
    if low is not None and (out < low or (low_open and out == low)):
        raise ValueError(f"{name} must be {what}, got {show(value)}")
    if high is not None and (out > high or (high_open and out == high)):
        raise ValueError(f"{name} must be {what}, got {show(value)}")
    return out


def check_bool(name: str, value: Any) -> bool:
    """``value`` must be True or False (not 0/1, not a string)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {show(value)}")
    return value


def check_choice(name: str, value: Any, options: Sequence[Any]) -> Any:
    """``value`` must be one of ``options``."""
    try:
        ok = value in tuple(options)
    except TypeError:  # unhashable / incomparable
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {tuple(options)}, got {show(value)}")
    return value


_DTYPE_FAMILIES = {
    "float": ("a floating-point", lambda t: t.is_floating_point()),
    "integer": ("an integer", lambda t: not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)),
    "real": ("a real (integer or floating-point)", lambda t: not (t.is_complex() or t.dtype == torch.bool)),
}


def check_tensor(name: str, value: Any, *, ndim: int | Sequence[int] | None = None,
                 dtypes: Sequence[torch.dtype] | str | None = None, nonempty: bool = False,
                 finite: bool = False, dtype: torch.dtype | Sequence[torch.dtype] | str | None = None,
                 device: str | torch.device | None = None, range: tuple[float | None, float | None] | None = None,
                 meta: bool = False) -> torch.Tensor:
    """The one tensor gate: ``value`` must be a ``torch.Tensor`` with

    - ``ndim``: that number of dimensions (an int or several allowed);
    - ``dtype`` (or its older name ``dtypes``): a dtype, several, or a family ``"float"``,
      ``"integer"`` or ``"real"`` (TypeError otherwise);
    - ``device``: on that device (ValueError naming both devices and the fix);
    - never on the ``meta`` device (no data: ValueError) unless ``meta=True``;
    - ``nonempty``: at least one entry;
    - ``finite``: no NaN or ±inf (float tensors);
    - ``range=(low, high)``: every value within [low, high] (either may be None), with
      the observed range in the message.

    Returns ``value`` unchanged (callers cast where they own the conversion).
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__} {show(value)}")
    if dtype is not None and dtypes is not None:
        raise TypeError("check_tensor takes dtype or dtypes, not both")
    dtype = dtypes if dtype is None else dtype
    if ndim is not None:
        dims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if value.ndim not in dims:
            want = " or ".join(str(d) for d in dims)
            raise ValueError(f"{name} must have {want} dimensions, got shape {tuple(value.shape)}")
    if isinstance(dtype, str):
        if dtype not in _DTYPE_FAMILIES:
            raise ValueError(f"check_tensor: unknown dtype family {dtype!r}")
        what, ok = _DTYPE_FAMILIES[dtype]
        if not ok(value):
            raise TypeError(f"{name} must be {what} tensor, got {value.dtype}")
    elif dtype is not None:
        allowed = (dtype,) if isinstance(dtype, torch.dtype) else tuple(dtype)
        if value.dtype not in allowed:
            raise TypeError(f"{name} must have dtype {' or '.join(map(str, allowed))}, got {value.dtype}")
    if value.device.type == "meta" and not meta:
        raise ValueError(f"{name} is a meta tensor (shape {tuple(value.shape)}, no data); pass a tensor on a "
                         "real device (cpu, cuda)")
    if device is not None:
        want = torch.device(device)
        have = value.device
        if have.type != want.type or (want.index is not None and have.index is not None and have.index != want.index):
            raise ValueError(f"{name} is on {have} but must be on {want}; move it with {name}.to({str(want)!r})")
    if nonempty and value.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(value.shape)}")
    if finite:
        check_finite(name, value)
    if range is not None and value.numel():
        low, high = range
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must be a real tensor to have a range, got {value.dtype}")
        check_finite(name, value) if value.is_floating_point() else None
        lo, hi = value.min().item(), value.max().item()
        if (low is not None and lo < low) or (high is not None and hi > high):
            raise ValueError(f"{name} must lie in [{'-inf' if low is None else low}, "
                             f"{'inf' if high is None else high}], got values in [{lo:g}, {hi:g}]")
    return value


def check_finite(name: str, value: torch.Tensor) -> torch.Tensor:
    """Raise ValueError if a float tensor holds NaN or ±inf (says how many, and where the first is)."""
    if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()):
        bad = ~torch.isfinite(value)
        if bool(bad.any()):
            first = tuple(int(i) for i in torch.nonzero(bad)[0])
            raise ValueError(f"{name} must be finite, got {int(bad.sum())} NaN/inf entries of "
                             f"{value.numel()} (first at index {first}: {value[first].item()})")
    return value


def check_shape(name: str, value: Any, length: int | None = None, low: int = 1) -> tuple[int, ...]:
    """A shape: a sequence of integers >= ``low`` (of ``length`` entries if given)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, torch.Size)):
        raise TypeError(f"{name} must be a tuple of integers, got {show(value)}")
    if length is not None and len(value) != length:
        raise ValueError(f"{name} must have {length} entries, got {show(value)}")
    try:
        return tuple(check_int(f"{name}[{i}]", v, low) for i, v in enumerate(value))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} must be a tuple of integers >= {low}, got {show(value)} ({exc})") from None


def check_sequence(name: str, value: Any, nonempty: bool = False) -> list:
    """``value`` as a list: an ordered sequence (list, tuple, range, 1-D array or tensor);
    a set (no order, and ordered differently in every process), a mapping, a string or a
    non-iterable raises TypeError; an empty one raises ValueError if ``nonempty``."""
    if isinstance(value, (str, bytes, set, frozenset)) or isinstance(value, Mapping) or not (
            isinstance(value, Sequence) or (hasattr(value, "__len__") and hasattr(value, "__getitem__"))):
        raise TypeError(f"{name} must be a list or tuple (an ordered sequence), got {type(value).__name__} "
                        f"{show(value)}")
    out = list(value)
    if nonempty and not out:
        raise ValueError(f"{name} must not be empty, got {show(value)}")
    return out
