"""Checkers for the book's exercises: one module per chapter (``ch02``, ``ch06``, ...).

A checker takes the student's answer and raises :class:`ExerciseError` (an
``AssertionError``) saying what is wrong; otherwise it prints a short success message and
returns None, so nbgrader scores a check cell by whether it raises, never by what it
returns. :func:`fresh` loads a chapter's checkers anew from the installed file, for the
hidden tests that back every visible check (an answer cell cannot replace them).

Chapter: every chapter's *Exercises* section.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

__all__ = ["ExerciseError", "require", "passed", "fresh"]


class ExerciseError(AssertionError):
    """An answer is wrong; the message says how."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`ExerciseError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ExerciseError(message)


def passed(message: str) -> None:
    """Print a checker's success message (checkers return None).

    Chapter: every chapter's *Exercises* section.
    """
    print(message)


def fresh(chapter: str) -> ModuleType:
    """The checkers of ``chapter`` (e.g. ``"ch02"``) executed anew from this package's file.

    The module is not looked up in, nor added to, ``sys.modules``, so an answer cell that
    overwrote ``eqlib.exercises.ch02.check_*``, shadowed the name ``ch02`` or replaced
    ``sys.modules["eqlib.exercises.ch02"]`` does not change what it checks. Its checkers
    raise like the originals and print nothing.

    Raises:
        TypeError: if ``chapter`` is not a string.
        ValueError: if ``chapter`` is not of the form ``chNN`` or has no checker file.

    Chapter: the hidden tests of every chapter's check cells.
    """
    if not isinstance(chapter, str):
        raise TypeError(f"chapter must be a string like 'ch02', got {chapter!r}")
    if not re.fullmatch(r"ch\d\d", chapter):
        raise ValueError(f"chapter must be a string like 'ch02', got {chapter!r}")
    path = Path(__file__).with_name(f"{chapter}.py")
    if not path.is_file():
        raise ValueError(f"chapter {chapter!r} has no checkers: {path} does not exist")
    spec = importlib.util.spec_from_file_location(f"{__name__}.{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def strict_require(condition: bool, message: str) -> None:
        if not condition:
            raise ExerciseError(message)

    module.require, module.passed = strict_require, lambda message: None
    return module
