"""A chapter that fails to execute does not lose the book: the other pages build, the
failed one says what failed, and the strict build (-W, as CI runs it) still fails."""
from __future__ import annotations

import shutil
import subprocess

import nbformat
import pytest

from booktools import BUILD_CMD, REPO

pytestmark = pytest.mark.book


def _notebook(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(s) if k == "md" else nbformat.v4.new_code_cell(s) for k, s in cells]
    nbformat.write(nb, path)


def test_a_failing_chapter_keeps_the_book(tmp_path):
    shutil.copy(REPO / "_config.yml", tmp_path / "_config.yml")
    shutil.copy(REPO / "references.bib", tmp_path / "references.bib")
    (tmp_path / "index.md").write_text("# Fixture\n\nA test book.\n")
    _notebook(tmp_path / "fine.ipynb", [("md", "# Fine chapter"), ("code", "print(6 * 7)")])
    _notebook(tmp_path / "broken.ipynb", [("md", "# Broken chapter"), ("code", "print('before')"),
                                          ("code", "1 / 0"), ("code", "print('never')"), ("md", "The end.")])
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n- file: broken\n- file: fine\n")
    proc = subprocess.run(BUILD_CMD, cwd=tmp_path, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, "a chapter failed, yet the strict build passed"
    assert "Executing notebook failed" in log
    html = tmp_path / "_build" / "html"
    assert "42" in (html / "fine.html").read_text(), "the chapter after the failing one was not built"
    assert (html / "index.html").is_file()
    broken = (html / "broken.html").read_text()
    assert "eqlib-failed-execution" in broken and "ZeroDivisionError: division by zero" in broken
    assert "before" in broken and "never" in broken  # its cells are there, the outputs up to the error
    assert (html / "reports" / "broken.err.log").is_file()
