"""Chapter 11 runs from a folder with no ``recorded/`` beside it (issue 23, "Done when").

A student who downloads one notebook (Colab, a copy elsewhere) has the chapter and an
installed ``eqlib``, nothing else. The test copies ``11_cifar_mlp.ipynb`` alone into an
empty temporary folder and executes it there under nbclient, from the first cell through
the last cell that reads a recorded run (every cell the record-reading cells depend on:
the live networks they compare with the records; the exercises after them are left out).
On the old layout the chapter stopped at its first record with ``FileNotFoundError``.

Runtime: the chapter's models come from ``EQLIB_CACHE``, which the chapters' own nbval run
has filled before ``tests/book`` runs (the order of ``testpaths``). Measured with a warm
cache on 2 CPU cores shared with other jobs (load about 12): 169 s (156 s in the cells;
the slowest: the live equivariance table 29 s, the input spectrum 23 s, the ablation
18 s); chapter 11's whole nbval run took 443 s under the same load. At a lower load: 104 s
(98 s in the cells), when chapter 11's nbval run took 44 s.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).resolve().parents[2]
CHAPTER = REPO / "book" / "part3" / "11_cifar_mlp.ipynb"
TIMEOUT = 900  # seconds for the whole run (one cell at most 600)


def _record_reading_prefix(nb: nbformat.NotebookNode) -> list:
    """The code cells from the first through the last one that calls ``load_recorded``."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    readers = [i for i, c in enumerate(code) if "load_recorded(" in c.source]
    assert len(readers) >= 5, "chapter 11 reads its records through load_recorded"
    return code[:readers[-1] + 1]


def _seconds(cell) -> float:
    """A cell's run time from nbclient's timing metadata."""
    from datetime import datetime
    meta = cell.get("metadata", {}).get("execution", {})
    start, end = meta.get("iopub.execute_input"), meta.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


@pytest.mark.timeout(TIMEOUT)
def test_chapter_11_runs_without_recorded_beside_it(tmp_path):
    folder = tmp_path / "downloaded"
    folder.mkdir()
    shutil.copy2(CHAPTER, folder / CHAPTER.name)  # the notebook alone
    nb = nbformat.read(folder / CHAPTER.name, as_version=4)
    cells = _record_reading_prefix(nb)
    guard = nbformat.v4.new_code_cell(
        "import os\n"
        f"assert os.path.realpath(os.getcwd()) == {str(folder.resolve())!r}, os.getcwd()\n"
        "assert not os.path.exists('recorded') and os.listdir('.') == "
        f"[{CHAPTER.name!r}], os.listdir('.')")
    nb.cells = [guard] + cells
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(folder)}})
    client.execute()  # raises CellExecutionError (with the cell and traceback) on an error
    seconds = sorted(((_seconds(c), c.get("id", "?")) for c in nb.cells), reverse=True)
    print(f"chapter 11 from {folder}: {sum(t for t, _ in seconds):.0f} s in its cells; slowest:",
          ", ".join(f"{i} {t:.0f} s" for t, i in seconds[:5]))
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    assert sorted(p.name for p in folder.iterdir() if p.name != ".ipynb_checkpoints") == [
        CHAPTER.name], "the chapter wrote into the student's folder"
