"""Per-student variants: each graded copy of an exercise has its own numbers.

The book has no variant: every exercise shows the numbers printed in the chapter. A
teacher's course has two keys, drawn by ``python -m eqlib.assignments setup``:

- the **course key**, written into every released notebook. With it and a student's id,
  :func:`parameter_seed` draws the numbers that student's copy shows (the orbit of *which*
  point, the count for *which* group), so the book's solutions and a classmate's values do
  not answer another student's copy.
- the **input key**, which stays in the teacher's course folder. With it, the grader
  draws the inputs on which a student's *function* is tested (:func:`input_seed`), so
  they cannot be looked up from a student's own notebook.

A notebook selects its variant with :func:`use_student` (the released notebooks do it in
the first cell of their *Exercises* section). The grader selects it from the submission's
folder name, whatever the student typed, through the environment variables
``EQLIB_STUDENT`` and ``EQLIB_COURSE`` (which win over the arguments) and, in its own
process, :func:`variant`.

Chapter: every chapter's *Exercises* section; book/teaching (grading).
"""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..seeds import derive_seed, torch_generator

__all__ = ["Variant", "use_student", "current", "variant", "parameter_seed", "input_seed",
           "parameter_generator", "input_generator"]

_ID = re.compile(r"[A-Za-z0-9_.@+-]{1,128}")
_KEY = re.compile(r"[0-9a-f]{16,64}")


@dataclass(frozen=True)
class Variant:
    """One student's copy in one course: ``student`` (nbgrader's student id), ``course``
    (the course key, hex) and ``inputs`` (the teacher's input key, hex; empty outside the
    grader)."""

    student: str
    course: str
    inputs: str = ""

    def __post_init__(self):
        if not isinstance(self.student, str) or not _ID.fullmatch(self.student):
            raise ValueError(f"student must be an id of 1-128 letters, digits or _.@+-, got {self.student!r}")
        for name in ("course", "inputs"):
            value = getattr(self, name)
            if not isinstance(value, str) or not (value == "" and name == "inputs" or _KEY.fullmatch(value)):
                raise ValueError(f"{name} must be a key of 16-64 lower-case hex digits"
                                 f"{' (or empty)' if name == 'inputs' else ''}, got {value!r}")


_current: Variant | None = None


def use_student(student: str = "", course: str = "") -> Variant | None:
    """Select this process's variant: the numbers :func:`parameter_seed` draws and the
    checks use. ``student`` is your id as your teacher gave it, ``course`` the key your
    released notebook carries. The environment variables ``EQLIB_STUDENT`` and
    ``EQLIB_COURSE`` win over both (the grader sets them); an empty ``student`` falls back
    to ``JUPYTERHUB_USER``. With no course key (the book) or no student id, there is no
    variant: the exercises keep the book's numbers. Returns the variant (or None).

    Raises:
        TypeError: if ``student`` or ``course`` is not a string.
        ValueError: if the id or the key is malformed.

    Examples:
        >>> use_student("", course="") is None          # the book's numbers
        True

    Chapter: every chapter's *Exercises* section.
    """
    global _current
    for name, value in (("student", student), ("course", course)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    student = os.environ.get("EQLIB_STUDENT") or student.strip() or os.environ.get("JUPYTERHUB_USER", "")
    course = os.environ.get("EQLIB_COURSE") or course.strip()
    _current = Variant(student, course) if student and course else None
    return _current


def current() -> Variant | None:
    """The variant this process uses (None: the book's numbers).

    Chapter: every chapter's *Exercises* section.
    """
    return _current


@contextlib.contextmanager
def variant(v: Variant | None) -> Iterator[Variant | None]:
    """Use ``v`` inside the block (the grader scores each student under their variant).

    Chapter: book/teaching (grading).
    """
    global _current
    if v is not None and not isinstance(v, Variant):
        raise TypeError(f"v must be a Variant or None, got {type(v).__name__}")
    saved, _current = _current, v
    try:
        yield v
    finally:
        _current = saved


def _check_exercise(exercise: str) -> None:
    if not isinstance(exercise, str) or not re.fullmatch(r"ch\d\d-ex\d+[a-z]?", exercise):
        raise ValueError(f"exercise must be an id like 'ch02-ex3', got {exercise!r}")


def parameter_seed(exercise: str) -> int | None:
    """The seed of ``exercise``'s numbers in the current variant; None in the book (the
    exercise then uses its printed numbers).

    Examples:
        >>> with variant(Variant("ada", "0123456789abcdef")):
        ...     a = parameter_seed("ch02-ex3")
        >>> with variant(Variant("bob", "0123456789abcdef")):
        ...     b = parameter_seed("ch02-ex3")
        >>> a != b and parameter_seed("ch02-ex3") is None
        True

    Chapter: every chapter's *Exercises* section.
    """
    _check_exercise(exercise)
    v = _current
    if v is None:
        return None
    return derive_seed(0, f"parameters\x00{v.course}\x00{v.student}\x00{exercise}")


def input_seed(exercise: str, book: int = 0) -> int:
    """The seed of the inputs a checker tests a function answer on: ``book`` outside a
    variant; in the grader, drawn from the teacher's input key, the course and the student.

    Chapter: every chapter's *Exercises* section.
    """
    _check_exercise(exercise)
    v = _current
    if v is None:
        return book
    return derive_seed(book, f"inputs\x00{v.inputs}\x00{v.course}\x00{v.student}\x00{exercise}")


def parameter_generator(exercise: str) -> torch.Generator | None:
    """A generator seeded with :func:`parameter_seed` (None in the book).

    Chapter: every chapter's *Exercises* section.
    """
    seed = parameter_seed(exercise)
    return None if seed is None else torch_generator(seed)


def input_generator(exercise: str, book: int = 0) -> torch.Generator:
    """A generator seeded with :func:`input_seed`.

    Chapter: every chapter's *Exercises* section.
    """
    return torch_generator(input_seed(exercise, book))
