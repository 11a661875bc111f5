"""Release and grade the real chapters: full marks for book/, zero for the released copies.

Grading re-executes a notebook, so by default only the released copies of Part I are
graded (zero marks expected): full marks for book/ already follow from the nbval pass
(every check cell runs there without error) and test_notebooks_clean (points > 0).
EQLIB_ROUNDTRIP=all grades both versions of Parts I and II (Part III trains; left out).
"""
from __future__ import annotations

import os

import nbformat
import pytest

from booktools import REPO
from eqlib import assignments

PARTS = ["part1", "part2"] if os.environ.get("EQLIB_ROUNDTRIP") == "all" else ["part1"]
CHAPTERS = sorted(p for part in PARTS for p in (REPO / "book" / part).glob("[0-9][0-9]_*.ipynb")
                  if any(c.get("metadata", {}).get("nbgrader", {}).get("grade")
                         for c in nbformat.read(p, as_version=4).cells))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_release_and_grade(chapter, tmp_path):
    if os.environ.get("EQLIB_ROUNDTRIP") == "all":
        full = assignments.grade(chapter, timeout=300)
        lost = [(i.grade_id, i.error) for i in full if i.points != i.max_points]
        assert not lost, f"{chapter.name}: the solution notebook loses points: {lost}"
    [student] = assignments.release(chapter, tmp_path)
    blank = assignments.grade(student, timeout=300, cwd=chapter.parent)
    earned = [(i.grade_id, i.points) for i in blank if i.points]
    assert not earned, f"{chapter.name}: the released notebook earns points without answers: {earned}"
    assert all(i.error for i in blank)
