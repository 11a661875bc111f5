"""Code lines in the chapters fit the rendered page: at most 88 characters."""
import re
from pathlib import Path

import nbformat
import pytest

BOOK = Path(__file__).resolve().parents[2] / "book"
CHAPTERS = sorted(p for p in BOOK.rglob("*.ipynb") if re.match(r"\d\d_", p.name)
                  and ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts)
LIMIT = 88


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.name for p in CHAPTERS])
def test_code_lines_fit_the_page(path):
    nb = nbformat.read(path, as_version=4)
    long = [f"cell {i} ({len(line)} chars): {line.strip()[:60]}"
            for i, c in enumerate(nb.cells) if c.cell_type == "code"
            for line in c.source.splitlines() if len(line) > LIMIT]
    assert not long, f"{path.name}: {len(long)} code lines over {LIMIT} characters:\n  " \
        + "\n  ".join(long)
