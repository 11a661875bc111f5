"""book/reference/results.md lists every numbered result of the chapters, and nothing else.

A plain parse of the notebooks and of the page: no book build. Counted: every `prf:` box in a
markdown cell except `prf:proof` (see the page's introduction). Each counted box needs a
`:label:`; each label needs exactly one row, in the section of its chapter; each row needs a
label that exists.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "book"
PAGE = BOOK / "reference" / "results.md"
NOT_RESULTS = {"proof"}

# an opening fence of 3+ backticks or colons, then {prf:kind}, then the option lines
_BOX = re.compile(r"^(?P<fence>`{3,}|:{3,})\{prf:(?P<kind>[\w-]+)\}[^\n]*\n(?P<opts>(?:[ \t]*:[\w-]+:[^\n]*\n)*)",
                  re.M)
_ROW = re.compile(r"^\|\s*\{prf:ref\}`(?P<label>[^`]+)`\s*\|", re.M)
_SECTION = re.compile(r"^## Chapter (\d+):", re.M)


def chapter_boxes() -> list[tuple[int, str, str, str | None]]:
    """(chapter number, notebook name, kind, label or None) for every counted prf box."""
    boxes = []
    for path in sorted(BOOK.rglob("*.ipynb")):
        if "_build" in path.parts or ".ipynb_checkpoints" in path.parts:
            continue
        number = re.match(r"(\d\d)_", path.name)
        if not number:
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for box in _BOX.finditer(cell.source + "\n"):
                if box["kind"] in NOT_RESULTS:
                    continue
                label = re.search(r":label:\s*(\S+)", box["opts"])
                boxes.append((int(number[1]), path.name, box["kind"], label[1] if label else None))
    return boxes


def page_rows() -> list[tuple[int | None, str]]:
    """(chapter section number or None, label) for every row of the results page."""
    text = PAGE.read_text()
    rows = []
    for row in _ROW.finditer(text):
        sections = _SECTION.findall(text[: row.start()])
        rows.append((int(sections[-1]) if sections else None, row["label"]))
    return rows


def test_parsers_see_the_chapters_and_the_page():
    boxes, rows = chapter_boxes(), page_rows()
    assert len(boxes) >= 10 and {kind for _, _, kind, _ in boxes} >= {"definition", "theorem"}
    assert len(rows) >= 10


def test_every_counted_box_has_a_label():
    unlabelled = [(name, kind) for _, name, kind, label in chapter_boxes() if label is None]
    assert not unlabelled, f"prf boxes without :label: (they cannot be listed on results.md): {unlabelled}"


def test_every_result_has_exactly_one_row_in_its_chapter_section():
    rows = page_rows()
    labels = [label for _, label in rows]
    duplicated = sorted({label for label in labels if labels.count(label) > 1})
    assert not duplicated, f"book/reference/results.md lists these labels more than once: {duplicated}"
    section_of = dict((label, section) for section, label in rows)
    missing, misplaced = [], []
    for chapter, name, kind, label in chapter_boxes():
        if label is None:
            continue
        if label not in section_of:
            missing.append(f"{label} ({kind} in {name})")
        elif section_of[label] != chapter:
            misplaced.append(f"{label} is under 'Chapter {section_of[label]}', belongs to chapter {chapter}")
    assert not missing, f"results without a row on book/reference/results.md: {missing}"
    assert not misplaced, f"rows in the wrong chapter section: {misplaced}"


def test_every_row_names_an_existing_result():
    existing = {label for _, _, _, label in chapter_boxes() if label}
    stale = sorted(label for _, label in page_rows() if label not in existing)
    assert not stale, f"book/reference/results.md has rows for labels that no chapter defines: {stale}"


def test_page_is_in_the_table_of_contents():
    toc = (REPO / "_toc.yml").read_text()
    assert re.search(r"^\s*- file: book/reference/results\s*$", toc, re.M), "_toc.yml lacks book/reference/results"
