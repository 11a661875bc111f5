"""One symbol, one meaning: book/reference/notation.md is the authority.

A plain parse of the notebooks and of the page (no book build):

* The page's tables (`| symbol | meaning | first in |`) give the symbols: every `$…$` span
  of a row's symbol column is a key, cut before its first `:`, `=`, `\\in` or `\\colon`
  and with spaces removed (`$f_i : V_{i-1} \\times \\Theta_i \\to V_i$` gives `f_i`). No
  key may appear in two rows: a symbol has one meaning.
* A chapter that introduces or restates a listed symbol marks the defining markdown cell
  with a MyST comment line, `% notation: KEY[, KEY …]` (invisible in the book and in
  JupyterLab). Every mark names a key of the page, the marked cell uses the key in its
  math, and the row's "first in" is the first chapter that marks it. Every row is marked
  somewhere, so every "first in" is checked.
* A defining phrase for a listed symbol ("let $X$ be", "write $X$ for", "$X$ denotes",
  "denote … by $X$", "where $X$ is", "define $X$", "$X$ stands for") in a cell that does
  not mark it is a second meaning: rename the symbol there, or mark the cell if it is
  the page's meaning.

Functions take text, not paths, so the planted tests below can feed them a clash.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "book"
PAGE = BOOK / "reference" / "notation.md"

def _split_keys(keys: str) -> list[str]:
    """The keys of one mark, split on commas outside (), [] and {} (a key may hold commas)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(keys):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(keys[start:i])
            start = i + 1
    return parts + [keys[start:]]


MARK = re.compile(r"^%\s*notation:\s*(?P<keys>.+?)\s*$", re.M)
_MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+)\$", re.S)
_CUT = re.compile(r"\s*(?::|=|\\in\b|\\colon\b)")
_DOC = re.compile(r"\{doc\}`/?book/part\d/(\d\d)_[\w-]+`")
_M = r"\$(?P<math>[^$\n]+)\$"
DEFINING = [re.compile(pattern, re.I) for pattern in (
    rf"\blet\s+{_M}\s+(?:be|denote)\b",
    rf"\bwrite\s+{_M}\s+for\b",
    rf"{_M}\s+(?:denotes|stands for|is defined)\b",
    rf"\bdenote\b[^.$]{{0,60}}\bby\s+{_M}",
    rf"\bwhere\s+{_M}\s+is\b",
    rf"\bdefine\s+{_M}",
    rf"{_M}\s+(?:is|be)\s+(?:the|a|an)\s+(?!same\b)",
    r"\$(?P<math>[^$\n]+?\s*\\in\s*\\(?:R|GL|mathbb\{R\}|mathrm\{GL\})\b[^$\n]*)\$",
)]


def _macros() -> dict[str, tuple[str, int]]:
    """The book's math macros (_config.yml), name -> (body, number of arguments)."""
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    macros = config["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]
    return {name: (body, 0) if isinstance(body, str) else (body[0], body[1]) for name, body in macros.items()}


MACROS = _macros()


def canon(tex: str) -> str:
    """One spelling per symbol: macros expanded, no spaces, no font switches, no braces.

    `\\rhoin`, `\\rho_{\\mathrm{in}}` and `\\rho_{in}` all give `\\rho_in`.
    """
    def expand(m: re.Match) -> str:
        body, nargs = MACROS[m[1]]
        return body.replace("#1", m[2] or "") if nargs else body
    names = "|".join(sorted(map(re.escape, MACROS), key=len, reverse=True))
    for _ in range(3):
        tex = re.sub(rf"\\({names})(?![A-Za-z])(?:\{{([^{{}}]*)\}})?", expand, tex)
    tex = re.sub(r"\\(?:mathrm|operatorname|text|rm|mathit)(?![A-Za-z])", "", tex)
    return re.sub(r"[\s{}]+", "", tex)


def key_of(math: str) -> str:
    """The symbol a math span defines: the text before `:`, `=`, `\\in`, in `canon` form."""
    return canon(_CUT.split(math.strip(), maxsplit=1)[0])


@dataclass
class Entry:
    keys: list[str]
    meaning: str
    first_in: int | None
    line: int


def parse_page(text: str) -> tuple[list[Entry], list[str]]:
    """The rows of the page's symbol tables and the problems of form."""
    entries, problems, header = [], [], None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if header is None:
            header = [cell.lower() for cell in cells]
            if header != ["symbol", "meaning", "first in"]:
                problems.append(f"line {number}: a table whose header is not | symbol | meaning | first in |")
            continue
        if all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells) or header != ["symbol", "meaning", "first in"]:
            continue
        if len(cells) != 3:
            problems.append(f"line {number}: {len(cells)} columns: {line[:80]}")
            continue
        keys = [key_of(a or b) for a, b in _MATH.findall(cells[0])]
        if not keys:
            problems.append(f"line {number}: no $symbol$ in the symbol column: {cells[0]!r}")
        chapter = _DOC.search(cells[2])
        if not chapter:
            problems.append(f"line {number}: 'first in' names no chapter with {{doc}}: {cells[2]!r}")
        entries.append(Entry(keys, cells[1], int(chapter[1]) if chapter else None, number))
    return entries, problems


@dataclass
class Cell:
    chapter: int
    index: int
    source: str


def read_cells(book: Path = BOOK) -> list[Cell]:
    """Every markdown cell of every numbered chapter, with its chapter number and index."""
    cells = []
    for path in sorted(book.rglob("*.ipynb")):
        number = re.match(r"(\d\d)_", path.name)
        if not number or "_build" in path.parts or ".ipynb_checkpoints" in path.parts:
            continue
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "markdown":
                cells.append(Cell(int(number[1]), index, cell.source))
    return cells


def marks(cell: Cell) -> list[str]:
    return [canon(key) for m in MARK.finditer(cell.source) for key in _split_keys(m["keys"]) if key.strip()]


def definitions(cell: Cell) -> list[tuple[str, str]]:
    """(key, spelling, phrase) for every defining phrase of the cell ("let $X$ be", ...)."""
    found = []
    for pattern in DEFINING:
        for m in pattern.finditer(cell.source):
            raw = _CUT.split(m["math"].strip(), maxsplit=1)[0].strip()
            found.append((key_of(m["math"]), raw, re.sub(r"\s+", " ", m[0])))
    return found


def check_notation(page: str, cells: list[Cell]) -> list[tuple[str, str]]:
    """Every (rule, message) broken by the page and the chapters. Empty when all is right."""
    entries, form = parse_page(page)
    problems = [("form", message) for message in form]
    row_of: dict[str, Entry] = {}
    for entry in entries:
        for key in entry.keys:
            if key in row_of:
                problems.append(("one-meaning", f"notation.md lines {row_of[key].line} and {entry.line} both "
                                                f"list ${key}$: one symbol, one meaning"))
            else:
                row_of[key] = entry
    first_mark: dict[str, Cell] = {}
    for cell in cells:
        where = f"chapter {cell.chapter} cell {cell.index}"
        marked = marks(cell)
        for key in marked:
            if key not in row_of:
                problems.append(("marks", f"{where}: '% notation: {key}' names no symbol of notation.md "
                                          "(add a row, or fix the key: the symbol as in its $…$, without spaces)"))
                continue
            if not any(key in canon(a or b) for a, b in _MATH.findall(cell.source)):
                problems.append(("marks", f"{where}: marks {key} but has no ${key}$ in its math"))
            first_mark.setdefault(key, cell)
        for key, raw, phrase in definitions(cell):
            if key in row_of and key not in marked:
                entry = row_of[key]
                problems.append(("second-meaning", f"{where}: {phrase!r} defines ${raw}$, which notation.md "
                                                   f"(line {entry.line}) gives as '{entry.meaning[:70]}'; rename "
                                                   f"the symbol here, or add '% notation: {raw}' if it is that "
                                                   "meaning"))
    for entry in entries:
        marked = [first_mark[key] for key in entry.keys if key in first_mark]
        if not marked:
            problems.append(("first-use", f"notation.md line {entry.line} (${'$, $'.join(entry.keys)}$): no chapter "
                                          "marks it with '% notation: KEY' in its defining cell"))
            continue
        first = min(cell.chapter for cell in marked)
        if entry.first_in is not None and entry.first_in != first:
            cell = min(marked, key=lambda c: (c.chapter, c.index))
            problems.append(("first-use", f"notation.md line {entry.line} (${entry.keys[0]}$) says first in chapter "
                                          f"{entry.first_in}, but chapter {first} marks it first (cell {cell.index})"))
    return problems


# ---------------------------------------------------------------------------------------
# the real book (the first-use and second-meaning rules pass once the notation plan's
# renames and marks are in the chapters)

RULES = ["form", "one-meaning", "marks", "first-use", "second-meaning"]


@pytest.fixture(scope="module")
def notation_problems():
    return check_notation(PAGE.read_text(), read_cells())


def test_the_page_parses():
    entries, problems = parse_page(PAGE.read_text())
    assert not problems, problems
    assert len(entries) >= 30


@pytest.mark.parametrize("rule", RULES)
def test_notation_keeps_the_rule(notation_problems, rule):
    broken = [message for r, message in notation_problems if r == rule]
    assert not broken, f"notation rule {rule!r} broken:\n" + "\n".join(broken)


def test_page_is_in_the_table_of_contents():
    toc = (REPO / "_toc.yml").read_text()
    assert re.search(r"^\s*- file: book/reference/notation\s*$", toc, re.M), "_toc.yml lacks book/reference/notation"


# ---------------------------------------------------------------------------------------
# planted clashes

_PAGE = """# Notation

| symbol | meaning | first in |
|---|---|---|
| $m$ | the mirror | {doc}`/book/part1/01_introduction` |
| $A_i$, $A_i^*$ | linear parts of $\\alpha_i$, $\\alpha_i^*$ | {doc}`/book/part1/03_models_and_submodels` |
| $f_i : V_{i-1} \\to V_i$ | layer $i$ | {doc}`/book/part1/03_models_and_submodels` |
"""

_CELLS = [
    Cell(1, 4, "Here $G = \\{e, m\\}$: write $m$ for the mirror.\n\n% notation: m\n"),
    Cell(3, 5, "A model has layers $f_i$.\n\n% notation: f_i\n"),
    Cell(3, 16, "Let $A_i$ be the linear part of $\\alpha_i$, and $A_i^*$ that of $\\alpha_i^*$.\n\n"
                "% notation: A_i, A_i^*\n"),
    Cell(4, 2, "Take a matrix $A$ with $A^2 = I$."),  # A is not listed: a local letter
]


def test_planted_good_notation_passes():
    assert check_notation(_PAGE, _CELLS) == []


def test_key_of_cuts_the_definition_off():
    assert key_of("f_i : V_{i-1} \\times \\Theta_i \\to V_i") == "f_i"
    assert key_of("B_d = \\{\\pm 1\\}^d") == "B_d"
    assert key_of("\\alpha \\in [0, 1]") == "\\alpha"
    assert key_of("\\hat\\rho_i(g)") == "\\hat\\rho_i(g)"
    assert key_of("\\rhoin") == key_of("\\rho_{\\mathrm{in}}") == key_of("\\rho_{in}") == "\\rho_in"
    assert key_of("\\fle{i}") == key_of("f_{\\le i}")


def _problems(page=_PAGE, cells=_CELLS):
    return check_notation(page, cells)


def test_planted_clash_in_another_chapter_fails():
    # chapter 11 reuses A_i for a least-squares fit: the clash the issue found
    cells = _CELLS + [Cell(11, 18, "Let $A_i$ be the least-squares map with $A_i f(y) \\approx f(my)$.")]
    problems = _problems(cells=cells)
    assert any(r == "second-meaning" and "chapter 11 cell 18" in m and "$A_i$" in m for r, m in problems), problems


@pytest.mark.parametrize("phrase", ["Let $m$ be the width", "Write $m$ for the width", "where $m$ is the width",
                                    "$m$ denotes the width", "denote the width by $m$", "Define $m = 3$"])
def test_planted_defining_phrases_are_seen(phrase):
    problems = _problems(cells=_CELLS + [Cell(4, 24, phrase + " of the bypass block.")])
    assert any(r == "second-meaning" and "chapter 4 cell 24" in m for r, m in problems), (phrase, problems)


def test_planted_symbol_listed_twice_fails():
    page = _PAGE + "| $m$ | a width | {doc}`/book/part1/03_models_and_submodels` |\n"
    assert any(r == "one-meaning" and "$m$" in m for r, m in _problems(page=page))


def test_planted_wrong_first_use_fails():
    page = _PAGE.replace("linear parts of $\\alpha_i$, $\\alpha_i^*$ | {doc}`/book/part1/03_models_and_submodels`",
                         "linear parts of $\\alpha_i$, $\\alpha_i^*$ | {doc}`/book/part3/11_cifar_mlp`")
    assert any(r == "first-use" and "says first in chapter 11" in m for r, m in _problems(page=page))


def test_planted_unmarked_row_fails():
    cells = [cell for cell in _CELLS if cell.index != 5]
    assert any(r == "first-use" and "$f_i$" in m for r, m in _problems(cells=cells))


def test_planted_mark_of_an_unlisted_symbol_fails():
    cells = _CELLS + [Cell(5, 9, "The average $\\mathcal{R}(W)$.\n\n% notation: \\mathcal{R}\n")]
    assert any(r == "marks" and "names no symbol" in m for r, m in _problems(cells=cells))


def test_planted_mark_away_from_its_symbol_fails():
    cells = _CELLS + [Cell(6, 3, "Nothing about mirrors here.\n\n% notation: m\n")]
    assert any(r == "marks" and "has no $m$" in m for r, m in _problems(cells=cells))


def test_marked_restatement_is_allowed():
    cells = _CELLS + [Cell(6, 4, "As before, let $m$ be the mirror.\n\n% notation: m\n")]
    assert _problems(cells=cells) == []


def test_a_mark_may_name_a_key_that_holds_commas():
    assert _split_keys(r"\mathrm{Hom}_G(\rhoin, \rhoout), \mathbb{Z}_2, W") == [
        r"\mathrm{Hom}_G(\rhoin, \rhoout)", r" \mathbb{Z}_2", " W"]
