"""Classroom use of the book: release student notebooks, grade filled-in ones.

Follows nbgrader's conventions, so a teacher can also run nbgrader unchanged:
an answer cell has metadata ``nbgrader.solution: true`` and its solution between the
lines ``### BEGIN SOLUTION`` and ``### END SOLUTION``; a check cell has
``nbgrader.grade: true`` and ``nbgrader.points``; ``grade_id`` names each cell.

Command line::

    python -m eqlib.assignments release book/ --out assignments/
    python -m eqlib.assignments grade assignments/part1/02_groups_and_actions.ipynb [--json out.json]

``release`` writes student versions: each solution span replaced by
``raise NotImplementedError()``, ``{solution}`` directive blocks removed from markdown,
check cells kept, outputs and execution counts cleared. ``grade`` executes a notebook
(errors allowed, with a timeout) and gives a check cell its points when it runs without
error.

Chapter: every chapter's *Exercises* section; see the README, *Reading and teaching*.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat

__all__ = ["BEGIN", "END", "release_notebook", "release", "grade", "GradeItem", "main"]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = "raise NotImplementedError()"
# A ```{solution} ...``` or :::{solution} ... ::: block (any number of fence characters >= 3).
_SOLUTION_BLOCK = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution\}.*?^(?P=fence)[ \t]*$\n?", re.M | re.S)


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _strip_solution(source: str, where: str) -> str:
    """Replace every BEGIN/END SOLUTION span by ``raise NotImplementedError()`` (same indent)."""
    out, inside, indent = [], False, ""
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError(f"{where}: nested {BEGIN!r}")
            inside, indent = True, line[: len(line) - len(line.lstrip())]
            out.append(indent + STUB)
        elif stripped == END:
            if not inside:
                raise ValueError(f"{where}: {END!r} without {BEGIN!r}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{where}: {BEGIN!r} without {END!r}")
    return "\n".join(out)


def release_notebook(nb: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """Return the student version of a notebook (the input is not changed).

    Raises:
        ValueError: if a solution cell has no ``### BEGIN SOLUTION`` span, or the
            markers are unbalanced.
    """
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for i, cell in enumerate(nb.cells):
        where = f"{name}, cell {i} ({_nbgrader(cell).get('grade_id', 'no grade_id')})"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if _nbgrader(cell).get("solution"):
                if BEGIN not in cell.source:
                    raise ValueError(f"{where}: a solution cell without {BEGIN!r}")
                cell.source = _strip_solution(cell.source, where)
        elif cell.cell_type == "markdown":
            cell.source = _SOLUTION_BLOCK.sub("", cell.source).rstrip() + "\n" if "{solution}" in cell.source \
                else cell.source
    nb.metadata.pop("widgets", None)
    return nb


def release(src: Path | str, out: Path | str) -> list[Path]:
    """Write student versions of every notebook under ``src`` (a folder or one file) to ``out``.

    The folder structure below ``src`` is kept. Returns the written paths.
    """
    src, out = Path(src), Path(out)
    if not src.exists():
        raise ValueError(f"{src} does not exist")
    files = [src] if src.is_file() else sorted(p for p in src.rglob("*.ipynb")
                                                if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts)
    written = []
    for path in files:
        nb = nbformat.read(path, as_version=4)
        target = out / (path.name if src.is_file() else path.relative_to(src))
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(release_notebook(nb, name=str(path)), target)
        written.append(target)
    return written


@dataclass
class GradeItem:
    """The result of one check cell."""

    grade_id: str
    points: float
    max_points: float
    error: str


def grade(path: Path | str, timeout: int = 600, kernel_name: str = "python3",
          cwd: Path | str | None = None) -> list[GradeItem]:
    """Execute a notebook (errors allowed) and score its check cells.

    Args:
        path: the notebook to grade.
        timeout: seconds allowed per cell.
        kernel_name: the Jupyter kernel.
        cwd: working directory of the kernel (the notebook's folder when None).

    Returns:
        One :class:`GradeItem` per check cell (``nbgrader.grade: true``), in order.

    Raises:
        ValueError: if the notebook has no check cell.
    """
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    checks = [c for c in nb.cells if c.cell_type == "code" and _nbgrader(c).get("grade")]
    if not checks:
        raise ValueError(f"{path} has no check cell (metadata nbgrader.grade: true)")
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, allow_errors=True,
                            resources={"metadata": {"path": str(cwd or path.parent)}})
    client.execute()
    items = []
    for cell in checks:
        meta = _nbgrader(cell)
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        max_points = float(meta.get("points", 0))
        message = f"{errors[0].get('ename', '')}: {errors[0].get('evalue', '')}" if errors else ""
        if cell.get("execution_count") is None and not errors:
            message = "not executed"
        items.append(GradeItem(meta.get("grade_id", "?"), 0.0 if message else max_points, max_points, message))
    return items


def _table(items: list[GradeItem]) -> str:
    width = max(len("exercise"), *(len(i.grade_id) for i in items))
    lines = [f"{'exercise':<{width}}  points  max  error", "-" * (width + 24)]
    for i in items:
        lines.append(f"{i.grade_id:<{width}}  {i.points:6g}  {i.max_points:3g}  {i.error[:80]}")
    total, most = sum(i.points for i in items), sum(i.max_points for i in items)
    lines.append(f"{'total':<{width}}  {total:6g}  {most:3g}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqlib.assignments", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("release", help="write student versions of the notebooks")
    rel.add_argument("src", help="a notebook or a folder of notebooks (e.g. book/)")
    rel.add_argument("--out", required=True, help="output folder (e.g. assignments/)")
    gr = sub.add_parser("grade", help="execute a filled-in notebook and score its check cells")
    gr.add_argument("notebook")
    gr.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    gr.add_argument("--json", help="also write the scores to this JSON file")
    args = parser.parse_args(argv)
    if args.command == "release":
        for path in release(args.src, args.out):
            print(path)
        return 0
    items = grade(args.notebook, timeout=args.timeout)
    print(_table(items))
    report = {"notebook": args.notebook, "total": sum(i.points for i in items),
              "max_total": sum(i.max_points for i in items), "items": [asdict(i) for i in items]}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    else:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
