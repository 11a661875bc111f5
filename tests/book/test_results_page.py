"""book/reference/results.md is a ledger: every result, goal and summary bullet says how it is known.

A plain parse of the notebooks and of the page: no book build. The rules (one section
`## Chapter N: Title` per chapter, each with two tables):

* Table 1 (`| result | statement | status | source | checked by |`): exactly one row per
  `prf:` box of the chapter except `prf:proof`; every such box carries a `:label:`.
* Table 2 (`| claim | opens with | status | checked by |`): exactly one row per top-level
  bullet (`- ` at column 0) of the cell with `**Learning goals.**` (`chNN-goal-K`) and of
  the cell headed `## Summary` (`chNN-summary-K`), K counted from 1. *opens with* is the
  bullet's first 20 to 60 characters, verbatim (whitespace runs count as one space).
* status begins with `definition`, `proved here`, `proved in SOURCE`,
  `checked numerically on WHAT`, `conjecture`, `reading of SOURCE`, `recorded on WHAT` or
  (Table 2 only) `no fact`, with the parts each needs (see `check_status`).
* "only if": a statement or bullet with `only if` / `iff` / `exactly when` /
  `precisely when` / `the only` may not rest on `checked numerically` or `recorded` alone.
* checked by: comma-separated `` `cell:ID` `` (a code cell of that chapter with an
  assert or checker call and a `# checks: KEY` comment naming the row), ``
  `tests/PATH::name` `` (a test function that exists), {prf:ref} labels (for goal and
  summary rows that are `proved here`), or `—`; then optionally ` — ` and prose.

The validation is in plain functions (`check_ledger` and its helpers) so the planted-row
tests at the bottom can feed them bad text and see each rule fail.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "book"
PAGE = BOOK / "reference" / "results.md"
NOT_RESULTS = {"proof"}

RESULT_HEADER = ["result", "statement", "status", "source", "checked by"]
CLAIM_HEADER = ["claim", "opens with", "status", "checked by"]
ONLY_IF = re.compile(r"only if|\biff\b|exactly when|precisely when|\bthe only\b", re.I)

# an opening fence of 3+ backticks or colons, then {prf:kind}, then the option lines
_BOX = re.compile(r"^(?P<fence>`{3,}|:{3,})\{prf:(?P<kind>[\w-]+)\}[^\n]*\n(?P<opts>(?:[ \t]*:[\w-]+:[^\n]*\n)*)",
                  re.M)
_SECTION = re.compile(r"^## Chapter (\d+):[^\n]*$", re.M)
_CHECKER_CALL = re.compile(r"^(?!\s*#).*(\bassert\b|\bcheck_\w*\s*\(|\brequire\w*\s*\()", re.M)
_CHECKS_COMMENT = re.compile(r"^\s*#\s*checks:\s*(?P<keys>.+?)\s*$", re.M)


# ---------------------------------------------------------------------------------------
# the chapters


@dataclass
class Cell:
    id: str
    cell_type: str
    source: str


@dataclass
class Chapter:
    number: int
    name: str
    cells: list[Cell]

    @property
    def prefix(self) -> str:
        return f"ch{self.number:02d}"


@dataclass
class Box:
    kind: str
    label: str | None
    cell: int
    followed_by_proof: bool


def read_chapters(book: Path = BOOK) -> dict[int, Chapter]:
    """Every numbered chapter notebook under book/, keyed by its number."""
    chapters = {}
    for path in sorted(book.rglob("*.ipynb")):
        if "_build" in path.parts or ".ipynb_checkpoints" in path.parts:
            continue
        number = re.match(r"(\d\d)_", path.name)
        if not number:
            continue
        cells = [Cell(cell.get("id", ""), cell.cell_type, cell.source)
                 for cell in nbformat.read(path, as_version=4).cells]
        chapters[int(number[1])] = Chapter(int(number[1]), path.name, cells)
    return chapters


def chapter_boxes(chapter: Chapter) -> list[Box]:
    """Every counted prf box (all kinds but proof), with whether the next prf box is a proof."""
    found = []  # (kind, label, cell index) of every prf box, proofs included, in order
    for index, cell in enumerate(chapter.cells):
        if cell.cell_type != "markdown":
            continue
        for box in _BOX.finditer(cell.source + "\n"):
            label = re.search(r":label:\s*(\S+)", box["opts"])
            found.append((box["kind"], label[1] if label else None, index))
    boxes = []
    for position, (kind, label, index) in enumerate(found):
        if kind in NOT_RESULTS:
            continue
        following = found[position + 1][0] if position + 1 < len(found) else None
        boxes.append(Box(kind, label, index, following in NOT_RESULTS))
    return boxes


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _top_level_bullets(text: str) -> list[str]:
    bullets, current = [], None
    for line in text.splitlines():
        if line.startswith("- "):
            if current is not None:
                bullets.append(current)
            current = line[2:]
        elif current is not None and (line.startswith((" ", "\t")) or not line.strip()):
            current += "\n" + line
        elif current is not None:  # a column-0 line that is not a bullet ends the list item
            bullets.append(current)
            current = None
    if current is not None:
        bullets.append(current)
    return [normalise(bullet) for bullet in bullets]


def chapter_bullets(chapter: Chapter) -> tuple[dict[str, str], list[str]]:
    """{chNN-goal-K / chNN-summary-K: bullet text} and the problems finding them."""
    bullets, problems = {}, []
    for kind, marker in (("goal", re.compile(r"\*\*Learning goals\.\*\*")),
                         ("summary", re.compile(r"^## Summary\s*$", re.M))):
        cells = [cell for cell in chapter.cells if cell.cell_type == "markdown" and marker.search(cell.source)]
        if len(cells) != 1:
            problems.append(f"{chapter.name}: expected one markdown cell with {marker.pattern!r}, found {len(cells)}")
            continue
        source = cells[0].source
        after = source[marker.search(source).end():]
        for k, text in enumerate(_top_level_bullets(after), start=1):
            bullets[f"{chapter.prefix}-{kind}-{k}"] = text
    return bullets, problems


# ---------------------------------------------------------------------------------------
# the page


@dataclass
class Row:
    table: str  # "result" or "claim"
    cells: dict[str, str]
    line: int

    @property
    def key(self) -> str:
        if self.table == "result":
            label = re.fullmatch(r"\{prf:ref\}`([^`]+)`", self.cells["result"])
            return label[1] if label else self.cells["result"]
        return self.cells["claim"]


@dataclass
class Section:
    number: int
    line: int
    tables: list[list[str]] = field(default_factory=list)  # the header of every table, in order
    rows: list[Row] = field(default_factory=list)


def _split_row(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", body)]


def parse_page(text: str) -> tuple[dict[int, Section], list[str]]:
    """The chapter sections of the page with their tables and rows, and the problems of form."""
    sections, problems = {}, []
    lines = text.splitlines()
    current, header = None, None
    for number, line in enumerate(lines, start=1):
        heading = _SECTION.match(line)
        if heading:
            chapter = int(heading[1])
            if chapter in sections:
                problems.append(f"line {number}: a second section for chapter {chapter}")
            current = sections.setdefault(chapter, Section(chapter, number))
            header = None
            continue
        if line.startswith("## "):
            current, header = None, None
            continue
        if current is None:
            continue
        if not line.lstrip().startswith("|"):
            header = None
            continue
        cells = _split_row(line)
        if header is None:
            header = [cell.lower() for cell in cells]
            current.tables.append(header)
            continue
        if all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells):
            continue
        if len(cells) != len(header):
            problems.append(f"line {number}: {len(cells)} columns where the table has {len(header)}: {line[:80]}")
            continue
        table = "result" if header == RESULT_HEADER else "claim" if header == CLAIM_HEADER else None
        if table:
            current.rows.append(Row(table, dict(zip(header, cells)), number))
    for section in sections.values():
        if section.tables != [RESULT_HEADER, CLAIM_HEADER]:
            problems.append(
                f"section 'Chapter {section.number}' (line {section.line}) must hold exactly two tables, "
                f"{' | '.join(RESULT_HEADER)} then {' | '.join(CLAIM_HEADER)}; found headers {section.tables}")
    return sections, problems


# ---------------------------------------------------------------------------------------
# the rules

STATUSES = ("definition", "proved here", "proved in", "checked numerically on", "conjecture", "reading of",
            "recorded on", "no fact")
NEEDS_OBJECT = {"proved in", "checked numerically on", "reading of", "recorded on"}


def status_of(text: str) -> tuple[str | None, str]:
    """The status keyword the column begins with (None if none) and the rest of the column."""
    for status in STATUSES:
        if text == status or text.startswith(status + " ") or text.startswith(status + ";") \
                or text.startswith(status + ",") or text.startswith(status + "("):
            return status, text[len(status):].strip()
    return None, text


@dataclass
class Reference:
    cells: list[str]
    tests: list[str]
    labels: list[str]
    problems: list[str]


def parse_checked_by(text: str) -> Reference:
    """Split a checked-by column into cell ids, test ids and prf labels (then ` — ` prose)."""
    ref = Reference([], [], [], [])
    text = text.strip()
    if text == "—" or text.startswith("— "):
        return ref
    items = text.split(" — ", 1)[0]
    for item in (part.strip() for part in items.split(",")):
        if m := re.fullmatch(r"`cell:([\w-]+)`", item):
            ref.cells.append(m[1])
        elif m := re.fullmatch(r"`(tests/[\w./-]+\.py::[\w:\[\]-]+)`", item):
            ref.tests.append(m[1])
        elif m := re.fullmatch(r"\{prf:ref\}`([^`]+)`", item):
            ref.labels.append(m[1])
        else:
            ref.problems.append(f"unrecognised checked-by item {item!r} (expected `cell:ID`, "
                                f"`tests/PATH.py::name`, {{prf:ref}}`label` or —, then optionally ' — ' and prose)")
    return ref


def names_a_test_function(test_id: str, repo: Path) -> bool:
    path, _, name = test_id.partition("::")
    file = repo / path
    if not file.is_file():
        return False
    source = file.read_text()
    parts = [re.sub(r"\[.*\]$", "", part) for part in name.split("::")]
    return all(re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(part)}\b", source, re.M) for part in parts)


def cell_checks(cell: Cell) -> set[str]:
    """The keys a code cell's `# checks:` comments name."""
    return {key.strip() for m in _CHECKS_COMMENT.finditer(cell.source) for key in m["keys"].split(",") if key.strip()}


def check_status(row: Row, where: str, text_for_only_if: str, ref: Reference,
                 proof_after: bool | None, result_status: dict[str, str]) -> list[tuple[str, str]]:
    """(rule, message) for every problem of a row's status against its checked-by column."""
    problems = []
    status, rest = status_of(row.cells["status"])
    if status is None:
        return [("status", f"{where}: status {row.cells['status']!r} does not begin with one of {list(STATUSES)}")]
    if status == "no fact" and row.table == "result":
        problems.append(("status", f"{where}: 'no fact' is for goal and summary rows; a labelled result has a status"))
    if status in NEEDS_OBJECT and not re.match(r"[^\s;,.(]", rest):
        problems.append(("status", f"{where}: '{status}' needs what it names after it (status {row.cells['status']!r})"))
    any_check = ref.cells or ref.tests
    if status == "proved here":
        if row.table == "result" and not proof_after:
            problems.append(("proof", f"{where}: 'proved here' but the chapter has no prf:proof right after the box"))
        if row.table == "claim":
            if not ref.labels:
                problems.append(("proof", f"{where}: 'proved here' on a goal/summary row must name the "
                                          "{prf:ref} result(s) that carry the proof in 'checked by'"))
            for label in ref.labels:
                if label not in result_status:
                    problems.append(("proof", f"{where}: checked by names {label!r}, which has no result row"))
                elif not result_status[label].startswith("proved"):
                    problems.append(("proof", f"{where}: checked by names {label!r}, whose status "
                                              f"{result_status[label]!r} is not a proof"))
    if status == "checked numerically on" and not any_check:
        problems.append(("checked-by", f"{where}: 'checked numerically' must name at least one `cell:ID` or test"))
    if status == "recorded on" and not ref.cells:
        problems.append(("checked-by", f"{where}: 'recorded on' must name the asserting `cell:ID`"))
    if status == "no fact" and (any_check or ref.labels):
        problems.append(("checked-by", f"{where}: 'no fact' rows have checked by '—'"))
    if ref.labels and not (row.table == "claim" and status == "proved here"):
        problems.append(("checked-by", f"{where}: {{prf:ref}} items in checked by are for 'proved here' goal/summary rows"))
    if status in ("checked numerically on", "recorded on") and ONLY_IF.search(text_for_only_if):
        later = row.cells["status"][len(status):]
        if not re.search(r"proved (here|in)|conjecture", later):
            phrase = ONLY_IF.search(text_for_only_if)[0]
            problems.append(("only-if", f"{where}: says {phrase!r} but rests on '{status}' alone; a planted example "
                                        "cannot check an 'only if': prove it, weaken the sentence, or call it a conjecture"))
    return problems


def check_ledger(text: str, chapters: dict[int, Chapter], repo: Path = REPO) -> list[tuple[str, str]]:
    """Every (rule, message) the page breaks. Empty when the ledger is right."""
    sections, form = parse_page(text)
    problems = [("form", message) for message in form]
    for number in sorted(set(chapters) - set(sections)):
        problems.append(("form", f"no section '## Chapter {number}: …' for {chapters[number].name}"))
    for number in sorted(set(sections) - set(chapters)):
        problems.append(("form", f"section 'Chapter {number}' has no chapter notebook"))
    result_status = {row.key: row.cells["status"] for s in sections.values() for row in s.rows if row.table == "result"}

    for number, section in sorted(sections.items()):
        chapter = chapters.get(number)
        if chapter is None:
            continue
        boxes = chapter_boxes(chapter)
        proof_after = {box.label: box.followed_by_proof for box in boxes if box.label}
        bullets, bullet_problems = chapter_bullets(chapter)
        problems += [("bullets", message) for message in bullet_problems]
        cells = {cell.id: cell for cell in chapter.cells}

        # Table 1: one row per counted box
        for box in boxes:
            if box.label is None:
                problems.append(("rows", f"{chapter.name} cell {box.cell}: a prf:{box.kind} box without :label: "
                                         "(it cannot be listed on results.md)"))
        results = [row for row in section.rows if row.table == "result"]
        keys = [row.key for row in results]
        for key in sorted({k for k in keys if keys.count(k) > 1}):
            problems.append(("rows", f"Chapter {number}: {key} has more than one result row"))
        for box in boxes:
            if box.label and box.label not in keys:
                problems.append(("rows", f"Chapter {number}: no result row for {box.label} "
                                         f"(prf:{box.kind} in {chapter.name} cell {box.cell})"))
        for row in results:
            if row.key not in proof_after:
                problems.append(("rows", f"line {row.line}: result row {row.key!r} names no prf box of {chapter.name}"))

        # Table 2: one row per bullet, with a matching "opens with"
        claims = [row for row in section.rows if row.table == "claim"]
        keys = [row.key for row in claims]
        for key in sorted({k for k in keys if keys.count(k) > 1}):
            problems.append(("bullets", f"Chapter {number}: {key} has more than one row"))
        for key in bullets:
            if key not in keys:
                problems.append(("bullets", f"Chapter {number}: no row for {key} (bullet: {bullets[key][:60]!r})"))
        for row in claims:
            if row.key not in bullets:
                problems.append(("bullets", f"line {row.line}: row {row.key!r} names no goal or summary bullet of "
                                            f"{chapter.name} (keys: {chapter.prefix}-goal-K, {chapter.prefix}-summary-K)"))
                continue
            opens = normalise(row.cells["opens with"].replace("\\|", "|"))
            bullet = bullets[row.key]
            if not bullet.startswith(opens) or not (min(20, len(bullet)) <= len(opens) <= 60):
                problems.append(("opens-with", f"line {row.line}: {row.key} 'opens with' {opens!r} is not the "
                                               f"bullet's first 20 to 60 characters; the bullet opens "
                                               f"{bullet[:60]!r} (re-check the row when a bullet is rewritten)"))

        # status, checked by, the only-if rule
        for row in section.rows:
            where = f"line {row.line} ({row.key})"
            ref = parse_checked_by(row.cells["checked by"])
            problems += [("checked-by", f"{where}: {message}") for message in ref.problems]
            said = row.cells["statement"] if row.table == "result" else bullets.get(row.key, "")
            problems += check_status(row, where, said, ref, proof_after.get(row.key), result_status)
            for cell_id in ref.cells:
                cell = cells.get(cell_id)
                if cell is None:
                    problems.append(("cells", f"{where}: `cell:{cell_id}` is no cell of {chapter.name}"))
                elif cell.cell_type != "code":
                    problems.append(("cells", f"{where}: `cell:{cell_id}` is a {cell.cell_type} cell, not a code cell"))
                else:
                    if not _CHECKER_CALL.search(cell.source):
                        problems.append(("cells", f"{where}: `cell:{cell_id}` has no assert or checker call"))
                    if row.key not in cell_checks(cell):
                        problems.append(("cells", f"{where}: `cell:{cell_id}` has no '# checks: {row.key}' comment "
                                                  f"(it names {sorted(cell_checks(cell)) or 'nothing'}): the cell "
                                                  "must say it tests this statement"))
            for test_id in ref.tests:
                if not names_a_test_function(test_id, repo):
                    problems.append(("tests", f"{where}: {test_id} names no existing test function"))
    return problems


# ---------------------------------------------------------------------------------------
# the real book (these pass once every chapter section is a ledger)

RULES = ["form", "rows", "bullets", "opens-with", "status", "proof", "only-if", "checked-by", "cells", "tests"]


@pytest.fixture(scope="module")
def ledger_problems():
    return check_ledger(PAGE.read_text(), read_chapters())


def test_parsers_see_the_chapters_and_the_page():
    chapters = read_chapters()
    boxes = [box for chapter in chapters.values() for box in chapter_boxes(chapter)]
    assert len(chapters) >= 11 and len(boxes) >= 10
    assert {box.kind for box in boxes} >= {"definition", "theorem"}
    sections, _ = parse_page(PAGE.read_text())
    assert len(sections) == len(chapters)


@pytest.mark.parametrize("rule", RULES)
def test_the_results_page_keeps_the_ledger_rule(ledger_problems, rule):
    broken = [message for r, message in ledger_problems if r == rule]
    assert not broken, f"book/reference/results.md breaks the ledger rule {rule!r}:\n" + "\n".join(broken)


def test_page_is_in_the_table_of_contents():
    toc = (REPO / "_toc.yml").read_text()
    assert re.search(r"^\s*- file: book/reference/results\s*$", toc, re.M), "_toc.yml lacks book/reference/results"


def test_page_introduction_is_for_readers():
    intro = PAGE.read_text().split("\n## Chapter 1", 1)[0]
    for internal in ("tests/book", "test_results_page", "pytest", ":label:", "# checks:"):
        assert internal not in intro, f"results.md's introduction shows maintainer text {internal!r} (issue #23)"
    for status in ("proved here", "proved in", "checked numerically on", "conjecture", "reading of",
                   "recorded on", "no fact", "definition"):
        assert status in intro, f"results.md's introduction does not explain the status {status!r}"


# ---------------------------------------------------------------------------------------
# planted rows: each rule fails on a bad row

_FAKE_CELLS = [
    Cell("goals", "markdown", "# Fake\n\n**Learning goals.** After this chapter you can\n\n"
                              "- compute the group of an activation and check it;\n"
                              "- state when a map is equivariant,\n  and why it matters.\n"),
    Cell("thm", "markdown", ":::{prf:theorem} Fake\n:label: ch04-thm-fake\n\nA statement.\n:::\n\n"
                            ":::{prf:proof}\nA proof.\n:::\n"),
    Cell("prop", "markdown", ":::{prf:proposition} Only if\n:label: ch04-prop-iff\n\nHolds only if so.\n:::\n"),
    Cell("c0ffee01", "code", "# checks: ch04-thm-fake, ch04-summary-1\nx = 1\nassert x == 1\n"),
    Cell("c0ffee02", "code", "x = 2\nassert x == 2\n"),
    Cell("c0ffee03", "code", "# checks: ch04-prop-iff\nprint('no assertion here')\n"),
    Cell("summary", "markdown", "## Summary\n\n- A negated clone gives a stabilizer of the\n  parameter.\n"
                                "- Every layer is equivariant only if the weights are shared.\n\n## Exercises\n"),
]

_GOOD_PAGE = """# Results

Intro.

## Chapter 4: Fake

| result | statement | status | source | checked by |
|---|---|---|---|---|
| {prf:ref}`ch04-thm-fake` | a statement | proved here | the course's | `cell:c0ffee01` — by hand |
| {prf:ref}`ch04-prop-iff` | holds only if so | proved in [SMBK26], Thm 3.2 | [SMBK26] | — |

| claim | opens with | status | checked by |
|---|---|---|---|
| ch04-goal-1 | compute the group of an activation | no fact | — |
| ch04-goal-2 | state when a map is equivariant, and why | definition | — |
| ch04-summary-1 | A negated clone gives a stabilizer | checked numerically on one planted network | `cell:c0ffee01`, `tests/unit/test_fake.py::test_fake` |
| ch04-summary-2 | Every layer is equivariant only if | proved here | {prf:ref}`ch04-thm-fake` |
"""


@pytest.fixture
def fake(tmp_path):
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_fake.py").write_text("def test_fake():\n    pass\n")
    return {4: Chapter(4, "04_fake.ipynb", _FAKE_CELLS)}, tmp_path


def _rules(page, fake):
    chapters, repo = fake
    return check_ledger(page, chapters, repo)


def test_planted_good_page_passes(fake):
    assert _rules(_GOOD_PAGE, fake) == []


def _replace(old, new):
    assert old in _GOOD_PAGE, old
    return _GOOD_PAGE.replace(old, new)


PLANTED = {
    "a missing bullet row": (
        _replace("| ch04-goal-2 | state when a map is equivariant, and why | definition | — |\n", ""),
        "bullets", "no row for ch04-goal-2"),
    "a row for a bullet that does not exist": (
        _replace("| ch04-goal-2 |", "| ch04-goal-3 |"), "bullets", "names no goal or summary bullet"),
    "a wrong 'opens with'": (
        _replace("A negated clone gives a stabilizer", "A negated clone gives θ a nontrivial stabilizer"),
        "opens-with", "'opens with'"),
    "an 'opens with' shorter than 20 characters": (
        _replace("| compute the group of an activation |", "| compute the |"), "opens-with", "20 to 60"),
    "an unknown status": (
        _replace("| no fact | — |", "| obviously true | — |"), "status", "does not begin with one of"),
    "'checked numerically on' without what": (
        _replace("checked numerically on one planted network", "checked numerically on"), "status", "needs what"),
    "'proved here' without a proof after the box": (
        _replace("| holds only if so | proved in [SMBK26], Thm 3.2 |", "| holds only if so | proved here |"),
        "proof", "no prf:proof right after the box"),
    "'proved here' on a bullet without a {prf:ref}": (
        _replace("| proved here | {prf:ref}`ch04-thm-fake` |", "| proved here | — |"), "proof", "must name"),
    "'checked numerically' on an 'only if'": (
        _replace("| Every layer is equivariant only if | proved here | {prf:ref}`ch04-thm-fake` |",
                 "| Every layer is equivariant only if | checked numerically on 3 seeds | `cell:c0ffee01` |"),
        "only-if", "'only if'"),
    "'recorded on' on an 'only if' result": (
        _replace("| proved in [SMBK26], Thm 3.2 | [SMBK26] | — |",
                 "| recorded on 3 seeds (x.json) | [SMBK26] | `cell:c0ffee03` |"),
        "only-if", "'only if'"),
    "a cell without '# checks:' for the key": (
        _replace("`cell:c0ffee01`, `tests", "`cell:c0ffee02`, `tests"), "cells", "no '# checks: ch04-summary-1'"),
    "a cell without an assert": (
        _replace("| holds only if so | proved in [SMBK26], Thm 3.2 | [SMBK26] | — |",
                 "| holds only if so | proved in [SMBK26], Thm 3.2 | [SMBK26] | `cell:c0ffee03` |"),
        "cells", "no assert or checker call"),
    "a cell id that does not exist": (
        _replace("`cell:c0ffee01` — by hand", "`cell:deadbeef` — by hand"), "cells", "is no cell of"),
    "a markdown cell as checker": (
        _replace("`cell:c0ffee01` — by hand", "`cell:summary` — by hand"), "cells", "not a code cell"),
    "a missing test function": (
        _replace("test_fake.py::test_fake", "test_fake.py::test_gone"), "tests", "no existing test function"),
    "a missing test file": (
        _replace("tests/unit/test_fake.py", "tests/unit/test_gone.py"), "tests", "no existing test function"),
    "a checked-by item in free form": (
        _replace("`cell:c0ffee01` — by hand", "cell after the proof"), "checked-by", "unrecognised checked-by item"),
    "a missing result row": (
        _replace("| {prf:ref}`ch04-prop-iff` | holds only if so | proved in [SMBK26], Thm 3.2 | [SMBK26] | — |\n", ""),
        "rows", "no result row for ch04-prop-iff"),
    "a result row for a label that does not exist": (
        _replace("{prf:ref}`ch04-prop-iff` |", "{prf:ref}`ch04-prop-gone` |"), "rows", "names no prf box"),
    "a section without its second table": (
        _GOOD_PAGE.split("| claim |")[0], "form", "exactly two tables"),
    "'no fact' on a labelled result": (
        _replace("| proved in [SMBK26], Thm 3.2 | [SMBK26] |", "| no fact | [SMBK26] |"), "status", "'no fact' is for"),
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_planted_bad_row_fails(fake, case):
    page, rule, phrase = PLANTED[case]
    problems = _rules(page, fake)
    assert any(r == rule and phrase in message for r, message in problems), (case, problems)


def test_planted_missing_goals_cell_fails(fake):
    chapters, repo = fake
    cells = [cell for cell in _FAKE_CELLS if cell.id != "goals"]
    problems = check_ledger(_GOOD_PAGE, {4: Chapter(4, "04_fake.ipynb", cells)}, repo)
    assert any(r == "bullets" and "Learning goals" in message for r, message in problems), problems


def test_planted_unlabelled_box_fails(fake):
    chapters, repo = fake
    cells = _FAKE_CELLS + [Cell("lemma", "markdown", ":::{prf:lemma}\nNo label.\n:::\n")]
    problems = check_ledger(_GOOD_PAGE, {4: Chapter(4, "04_fake.ipynb", cells)}, repo)
    assert any(r == "rows" and "without :label:" in message for r, message in problems), problems
