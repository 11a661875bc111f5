"""Every chapter notebook under book/ is stored clean and follows the chapter conventions.

Generic: it applies to every chapter that exists now or later (one test per notebook).
"""
import re
from pathlib import Path

import nbformat
import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
NOTEBOOKS = sorted(p for p in BOOK.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts)
CHAPTERS = [p for p in NOTEBOOKS if re.match(r"\d\d_", p.name)]


def _ids(paths):
    return [str(p.relative_to(BOOK)) for p in paths]


def _nbg(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or execution counts; clear them before committing"
    assert "widgets" not in nb.metadata, f"{path.name}: stored widget state in the notebook metadata; clear it"


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_sections_and_exercises(path):
    nb = nbformat.read(path, as_version=4)
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for heading in ("## Summary", "## Exercises"):
        assert re.search(rf"^{re.escape(heading)}\s*$", md, re.M), f"{path.name}: no '{heading}' section"
    # The macro front matter (read by jupyterlab-myst, hidden in the book) may come first.
    cells = [c for c in nb.cells if c.get("id") != "eqlib-frontmatter"]
    assert cells and cells[0].cell_type == "markdown" and cells[0].source.startswith("# "), \
        f"{path.name}: the first cell must be the '# Title'"
    exercises = re.findall(r"\{exercise\}\s*\n:label:\s*(\S+)", md)
    assert exercises, f"{path.name}: the Exercises section has no {{exercise}} directive with a :label:"
    # written solutions: one markdown cell per exercise holding only its {solution} dropdown, an
    # nbgrader written answer (solution + grade, 0 points) that generate_assignment blanks out
    written = {_nbg(c).get("grade_id"): c for c in nb.cells if c.cell_type == "markdown" and _nbg(c).get("solution")}
    for label in exercises:
        cell = written.get(f"{label}-written")
        assert cell is not None, f"{path.name}: exercise {label} has no written-answer cell {label}-written"
        assert re.fullmatch(rf"(`{{3,}}|:{{3,}})\{{solution\}} {re.escape(label)}\n:class: dropdown\n.*\n\1\s*",
                            cell.source, re.S), f"{path.name}: {label}-written must hold only its {{solution}} dropdown"
        assert _nbg(cell).get("grade") is True and _nbg(cell).get("points") == 0, \
            f"{path.name}: {label}-written must be an nbgrader written answer (grade: true, points: 0)"
    stray = [c.source[:60] for c in nb.cells if c.cell_type == "markdown" and "{solution}" in c.source
             and not _nbg(c).get("solution")]
    assert not stray, f"{path.name}: {{solution}} blocks outside written-answer cells: {stray}"
    answers = [c for c in nb.cells if c.cell_type == "code" and _nbg(c).get("solution")]
    checks = [c for c in nb.cells if c.cell_type == "code" and _nbg(c).get("grade")]
    assert answers and checks, f"{path.name}: exercises need nbgrader answer cells (solution: true) and check cells (grade: true)"
    for c in answers:
        gid = _nbg(c).get("grade_id", "?")
        assert "### BEGIN SOLUTION" in c.source and "### END SOLUTION" in c.source, \
            f"{path.name}: answer cell {gid} lacks ### BEGIN SOLUTION / ### END SOLUTION"
        assert c.source.index("### BEGIN SOLUTION") < c.source.index("### END SOLUTION"), f"{path.name}: {gid} markers reversed"
    for c in checks:
        gid = _nbg(c).get("grade_id", "?")
        points = _nbg(c).get("points")
        assert isinstance(points, (int, float)) and points > 0, f"{path.name}: check cell {gid} has no positive points"
        assert _nbg(c).get("locked") is True, f"{path.name}: check cell {gid} is not locked"
        visible, _, hidden = c.source.partition("### BEGIN HIDDEN TESTS")
        assert re.search(r"\bcheck_\w+\(", visible) and not re.search(r"print\(\s*(\w+\.)?check_", visible), \
            f"{path.name}: check cell {gid} must call a checker (which prints; no print(...) around it)"
        assert re.search(r"fresh\(\"ch\d\d\"\)\.check_\w+\(", hidden) and "### END HIDDEN TESTS" in hidden, \
            f"{path.name}: check cell {gid} must end with hidden tests re-checking with fresh(\"chNN\")"
    # solutions and hidden tests are folded (book: hide-input; JupyterLab: source_hidden), so a
    # reader tries first; nbgrader's student versions open them again (UnfoldAnswers)
    open_cells = [_nbg(c).get("grade_id", "?") for c in answers + checks
                  if "hide-input" not in c.metadata.get("tags", [])
                  or not c.metadata.get("jupyter", {}).get("source_hidden")]
    assert not open_cells, (f"{path.name}: answer/check cells {open_cells} are not folded: give them the "
                            "tag hide-input and metadata.jupyter.source_hidden = true")
    gids = [_nbg(c).get("grade_id") for c in answers + checks + list(written.values())]
    assert all(gids) and len(set(gids)) == len(gids), f"{path.name}: grade_ids missing or repeated: {gids}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_widget_cells_ignore_output(path):
    nb = nbformat.read(path, as_version=4)
    bad = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and re.search(r"\binteractive_figure\s*\(", c.source)
           and not c.source.startswith("# NBVAL_IGNORE_OUTPUT")]
    assert not bad, f"{path.name}: cells {bad} call interactive_figure but do not start with '# NBVAL_IGNORE_OUTPUT'"


def test_chapters_cite_and_quote_numbers_as_jupyterlab_shows_them():
    """No {cite} or {glue} in a chapter: JupyterLab shows neither (see CONTRIBUTING.md,
    "Chapters read right in JupyterLab"); benchmarks/lab_markup.py converts them."""
    import os
    import subprocess
    import sys

    script = BOOK.parent / "benchmarks" / "lab_markup.py"
    proc = subprocess.run([sys.executable, str(script), "--check", *map(str, CHAPTERS)],
                          capture_output=True, text=True, cwd=BOOK.parent,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              filter(None, [str(BOOK.parent), os.environ.get("PYTHONPATH")]))})
    pending = [line for line in proc.stdout.splitlines() if not line.endswith(": 0 cell(s) to change")]
    assert proc.returncode == 0 and not pending, (
        f"chapters with {{cite}} or {{glue}} markup (run python benchmarks/lab_markup.py on them): "
        f"{pending}\n{proc.stderr[-2000:]}")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if "part3" in str(p)], ids=lambda p: p.name[:2])
def test_experiment_bookkeeping_is_folded(path):
    """In the experiment chapters, the bookkeeping (cells that glue numbers into the prose,
    and the long cells that check the claims against the records) is folded in the book
    (hide-input) and in JupyterLab (source_hidden): a reader sees the prose, tables and
    figures, and the code is one click away. nbval still runs every cell."""
    nb = nbformat.read(path, as_version=4)
    open_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                  and ("G.glue(" in c.source or len(c.source.splitlines()) > 60)
                  and ("hide-input" not in c.metadata.get("tags", [])
                       or not c.metadata.get("jupyter", {}).get("source_hidden"))]
    assert not open_cells, (f"{path.name}: bookkeeping cells {open_cells} are not folded: give them the "
                            "tag hide-input and metadata.jupyter.source_hidden = true")
