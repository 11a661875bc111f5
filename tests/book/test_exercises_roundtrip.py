"""Every chapter through nbgrader's generate_assignment: no solution survives the release.

One nbgrader course holds every chapter (``python -m eqlib.assignments setup`` and
``release``). In each student version, no line of a written solution, of a solution
region or of a hidden test appears anywhere (cells, metadata, outputs) unless the same
line also appears outside the solutions in the instructor's chapter; every answer cell
holds the stub, every written answer "YOUR ANSWER HERE". Grading itself is tested in
tests/unit/test_nbgrader.py.
"""
from __future__ import annotations

import json
import re

import nbformat
import pytest

from booktools import REPO
from eqlib import assignments

CHAPTERS = sorted(p for p in (REPO / "book").rglob("[0-9][0-9]_*.ipynb") if "_build" not in p.parts)
REGION = re.compile(r"^[^\n]*(BEGIN SOLUTION|BEGIN HIDDEN TESTS).*?(END SOLUTION|END HIDDEN TESTS)[^\n]*$",
                    re.M | re.S)


def _nbg(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _secret_and_public(nb) -> tuple[set[str], set[str]]:
    """Lines of the solutions and hidden tests; lines of everything else."""
    secret, public = set(), set()
    for cell in nb.cells:
        if _nbg(cell).get("solution") and cell.cell_type == "markdown" and not REGION.search(cell.source):
            hidden, shown = cell.source, ""
        else:
            hidden = "\n".join(m.group(0) for m in REGION.finditer(cell.source))
            shown = REGION.sub("", cell.source)
        secret |= {line.strip() for line in hidden.splitlines()}
        public |= {line.strip() for line in shown.splitlines()}
    return secret, public


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    assignments.setup(course, [p.name[:2] for p in CHAPTERS])
    return {p.name: p for p in assignments.release(course)}


def test_every_chapter_is_released(released):
    assert sorted(released) == sorted(p.name for p in CHAPTERS)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_solution_survives(chapter, released):
    source = nbformat.read(chapter, as_version=4)
    secret, public = _secret_and_public(source)
    leaks = {line for line in secret - public if len(line) > 3}
    assert leaks, f"{chapter.name}: no solution lines found; is the chapter an nbgrader source notebook?"
    text = released[chapter.name].read_text()
    student = nbformat.reads(text, as_version=4)
    dump = json.dumps(student, ensure_ascii=False) + "\n" + "\n".join(c.source for c in student.cells)
    found = sorted(line for line in leaks if line in dump)
    assert not found, f"{chapter.name}: solution text in the student version: {found[:5]}"
    assert "{solution}" not in dump and "HIDDEN TESTS" not in dump and "fresh(" not in dump
    answers = [c for c in student.cells if _nbg(c).get("solution")]
    stub = {"markdown": "YOUR ANSWER HERE", "code": "raise NotImplementedError()"}
    assert answers and all(stub[c.cell_type] in c.source for c in answers), [c.source for c in answers]
    written = [c for c in answers if c.cell_type == "markdown"]
    exercises = re.findall(r"\{exercise\}", "\n".join(c.source for c in student.cells if c.cell_type == "markdown"))
    assert len(written) == len(exercises) > 0, f"{chapter.name}: one written answer per exercise"
