"""Grading time per student: N synthetic students × chapters 2 and 6, with ``--jobs``.

Each synthetic student hands in the released notebooks with the instructor's solutions
(every third with wrong answers), so every notebook runs to its end in its sandbox. The
script sets up and releases a course in a temporary folder, grades it with
``python -m eqlib.assignments grade`` and prints the wall time, the time per student and
the projection for a class of 60. Not a test: it prints, it does not assert.

    python benchmarks/bench_grading.py [--students 6] [--chapters 02 06] [--jobs 2]
"""
from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import nbformat

from eqlib import assignments
from eqlib.assignments import core

WRONG = "raise ValueError('a wrong answer')"


def _gid(cell) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")


def _students(course: Path, submissions: Path, n: int) -> None:
    release, source = course / "release" / "exercises", course / "source" / "exercises"
    for path in sorted(release.glob("*.ipynb")):
        solutions = {_gid(c): re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", "", c.source)
                     for c in nbformat.read(source / path.name, as_version=4).cells}
        for k in range(n):
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "code" and _gid(cell).endswith("-answer"):
                    cell.source = WRONG if k % 3 == 2 else solutions[_gid(cell)]
                    cell.source += f"\n_student_{k} = {k}"  # every notebook a distinct program
            (submissions / f"s{k:03d}").mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, submissions / f"s{k:03d}" / path.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--chapters", nargs="+", default=["02", "06"])
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        course, submissions = root / "course", root / "submissions"
        assignments.setup(course, args.chapters)
        assignments.release(course)
        _students(course, submissions, args.students)
        start = time.monotonic()
        results = assignments.grade(submissions, course, jobs=args.jobs, timeout=120, notebook_timeout=900)
        seconds = time.monotonic() - start
        core.close_references()
    per = seconds / max(1, args.students)
    print(f"{args.students} students x chapters {' '.join(args.chapters)}, jobs={args.jobs or 'cores'}: "
          f"{seconds:.0f} s in all (including the instructor's reference runs), {per:.1f} s per student; "
          f"a class of 60: about {60 * per / 60:.0f} min")
    print("scores:", sorted((r.student, r.awarded) for r in results))


if __name__ == "__main__":
    main()
