"""What a submission sees of ``eqlib.exercises`` while it is graded: a stand-in package.

Inside the sandbox a check cell only records the answer (the grader checks it outside),
so a submission needs nothing of the checker modules but each chapter's ``given()``, the
numbers of the student's copy. The sandbox shows, in place of ``eqlib/exercises``, a
package that has

- ``given()`` returning this student's numbers, computed by the grader under the
  student's variant and stored as plain data and tensors (read back with
  ``torch.load(..., weights_only=True)``),
- every public checker as a function that does nothing and returns None (a chapter's own
  cells may still import and call them), and ``variants`` as it is,
- none of the checkers' private helpers: a submission cannot import the reference
  computations the checkers use as its answers, nor try answers against a checker.

Chapter: book/teaching (grading).
"""
from __future__ import annotations

import ast
import importlib
import shutil
import threading
from pathlib import Path

import torch

from ..exercises import variants
from .plan import _parse

EXERCISES = Path(__file__).resolve().parents[1] / "exercises"
# variants.variant() sets one process-wide variant: students graded in parallel threads
# must not draw their numbers under each other's
_VARIANT_LOCK = threading.Lock()

_INIT = '''"""Stand-in for the checkers while a submission is graded (eqlib.assignments.standin)."""
import importlib


class ExerciseError(AssertionError):
    """An answer is wrong (never raised while grading: the grader checks outside)."""


def require(condition, message):
    return None


def passed(message):
    return None


def fresh(chapter):
    return importlib.import_module(f"{__name__}.{chapter}")
'''

_CHAPTER = '''"""Stand-in for the checkers of {chapter} while a submission is graded: given() is this
copy's numbers; the checkers do nothing (the grader checks outside the sandbox)."""
from pathlib import Path

import torch


def _nothing(*args, **kwargs):
    return None


'''

_GIVEN = '''def given():
    return torch.load(Path(__file__).with_name("_given") / "{chapter}.pt", weights_only=True)


'''


def public_names(path: Path) -> list[str]:
    """The names in the ``__all__`` of a checker module, read without running it.

    Chapter: book/teaching (grading).
    """
    tree = _parse(Path(path).read_text())  # one parse at a time across threads (plan._parse)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            names = ast.literal_eval(node.value)
            if not all(isinstance(n, str) and n.isidentifier() for n in names):
                raise ValueError(f"{path}: __all__ must list identifiers")
            return list(names)
    return []


def write(folder: Path, variant: variants.Variant | None) -> Path:
    """Write the stand-in package into ``folder`` (new) for ``variant`` (None: the book's
    numbers) and return it.

    Chapter: book/teaching (grading).
    """
    folder = Path(folder)
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(_INIT)
    shutil.copy(EXERCISES / "variants.py", folder / "variants.py")
    (folder / "_given").mkdir()
    for path in sorted(EXERCISES.glob("ch[0-9][0-9].py")):
        chapter, names = path.stem, public_names(path)
        body = _CHAPTER.format(chapter=chapter)
        if "given" in names:
            body += _GIVEN.format(chapter=chapter)
            module = importlib.import_module(f"eqlib.exercises.{chapter}")
            with _VARIANT_LOCK, variants.variant(variant):
                numbers = module.given()
            torch.save(numbers, folder / "_given" / f"{chapter}.pt")
        body += "".join(f"{name} = _nothing\n" for name in names if name != "given")
        (folder / f"{chapter}.py").write_text(body)
    return folder
