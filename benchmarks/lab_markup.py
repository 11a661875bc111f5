"""Rewrite chapters so that JupyterLab (jupyterlab-myst) shows their numbers and citations
as the book does (issue 23, item 2). Idempotent: rerun it after any edit of a chapter.

- Glued numbers: ``{glue:text}`key:fmt``` / ``{glue}`key``` in markdown become
  ``{eval}`G("key", "fmt")```, which JupyterLab evaluates in the kernel and the book pastes
  from the glued value (:mod:`eqlib.widgets.shown`); in code, ``glue(key, value,
  display=False)`` becomes ``G.glue(key, value)`` and ``from myst_nb import glue`` the
  import of ``Shown`` (``G = Shown()`` after the imports).
- Citations: ``{cite}``, ``{cite:p}``, ``{cite:t}`` become author–year links into the
  book's bibliography (:mod:`eqlib.widgets.labcite`), text from ``references.bib``.

Cells are edited with nbformat (ids kept, no outputs written). Prints what changed.

Run: ``python benchmarks/lab_markup.py book/part3/11_cifar_mlp.ipynb [...]``
(``--check``: change nothing, exit 1 if a chapter would change).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from eqlib.widgets.colab_bib import parse_bib
from eqlib.widgets.labcite import convert_cites
from eqlib.widgets.shown import eval_markdown, shown_code

ROOT = Path(__file__).resolve().parents[1]


def convert(path: Path, bib: dict, write: bool = True) -> int:
    """Convert one chapter; returns the number of cells changed."""
    page = path.resolve().relative_to(ROOT).as_posix()
    nb = nbformat.read(path, as_version=4)
    changed = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            new = convert_cites(eval_markdown(cell.source), bib, page)
        elif cell.cell_type == "code":
            new = shown_code(cell.source)
        else:
            continue
        if new != cell.source:
            cell.source = new
            changed += 1
    if changed and write:
        nbformat.write(nb, path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="+", type=Path, help="chapter notebooks")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if any would change")
    args = parser.parse_args(argv)
    bib = parse_bib((ROOT / "references.bib").read_text())
    pending = 0
    for path in args.chapters:
        n = convert(path, bib, write=not args.check)
        pending += n
        print(f"{path}: {n} cell(s) {'to change' if args.check else 'changed'}")
    return 1 if args.check and pending else 0


if __name__ == "__main__":
    sys.exit(main())
