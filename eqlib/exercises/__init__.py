"""Checkers for the book's exercises: one module per chapter (``ch02``, ``ch05``, ...).

A checker takes the student's answer and raises :class:`ExerciseError` saying what is
wrong (never a bare True/False); it returns a short success message otherwise.

Chapter: every chapter's *Exercises* section.
"""
from __future__ import annotations

__all__ = ["ExerciseError", "require"]


class ExerciseError(AssertionError):
    """An answer is wrong; the message says how."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`ExerciseError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ExerciseError(message)
