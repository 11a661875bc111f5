"""Reader-page defects found in the rendered chapters (issue #23), checked on the sources.

* ``exercise {ref}`label``` rendered as "exercise Exercise 4.2": the role already says
  "Exercise".
* A code cell whose last line is a bare ``torch.manual_seed(...)`` shows
  ``<torch._C.Generator at 0x…>`` in the page.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "book").glob("part*/*.ipynb"))
_DOUBLED_EXERCISE = re.compile(r"\b[Ee]xercises? \{ref\}`")


def _code(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))


def doubled_exercise_words(markdown: str) -> list[str]:
    return [markdown[max(0, m.start() - 30):m.end() + 20] for m in _DOUBLED_EXERCISE.finditer(markdown)]


def shows_a_generator(source: str) -> bool:
    """True when the cell's last statement is a bare ``….manual_seed(…)`` expression."""
    try:
        body = ast.parse(_code(source)).body
    except SyntaxError:
        return False
    last = body[-1] if body else None
    return (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            and isinstance(last.value.func, ast.Attribute) and last.value.func.attr == "manual_seed")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_chapter_text_reads_right(path):
    nb = nbformat.read(path, as_version=4)
    doubled = [s for c in nb.cells if c.cell_type == "markdown" for s in doubled_exercise_words(c.source)]
    assert not doubled, f"{path.name}: 'exercise {{ref}}' renders as 'exercise Exercise N': {doubled}"
    shown = [c.source.splitlines()[-1] for c in nb.cells if c.cell_type == "code" and shows_a_generator(c.source)]
    assert not shown, f"{path.name}: a cell ends in a bare manual_seed call, shown as a Generator repr: {shown}"


def test_the_checks_find_the_defects():
    assert doubled_exercise_words("as in exercise {ref}`ch04-ex2` and Exercises {ref}`a`") != []
    assert doubled_exercise_words("as {ref}`ch04-ex2` shows") == []
    assert shows_a_generator("import torch\ntorch.manual_seed(0)")
    assert not shows_a_generator("import torch\n_ = torch.manual_seed(0)")
    assert not shows_a_generator("torch.manual_seed(0)\nx = 1")


def test_no_docstring_shows_a_traceback():
    """The API reference page renders docstrings, and a page that shows
    "Traceback (most recent call last)" reads as broken: doctested errors print the
    exception instead."""
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "eqlib").rglob("*.py")
             if "Traceback (most recent call last)" in p.read_text()]
    assert not found, found


def test_course_map_names_every_page_of_the_book():
    """The front page's "Map of the course" links every page of the table of contents."""
    import yaml
    repo = Path(__file__).resolve().parents[2]
    toc = yaml.safe_load((repo / "_toc.yml").read_text())
    pages = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    index = (repo / "book" / "index.md").read_text()
    course_map = index.split("## Map of the course", 1)[1].split("\n## ", 1)[0]
    linked = set(re.findall(r"\{doc\}`/?([^`<]+?)`", course_map))
    missing = [p for p in pages if p not in linked]
    assert not missing, f"the course map on book/index.md misses {missing}"
