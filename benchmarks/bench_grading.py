"""Grading time: fixed cost, cost per student and a class of 60, from two class sizes.

Each synthetic student hands in the released notebooks with the instructor's solutions
(every third with wrong answers), so every notebook runs to its end in its sandbox. For
each class size the script sets up and releases a fresh course in a temporary folder
(new keys, so every student has a variant of their own) and grades it with
``eqlib.assignments.grade`` (what ``python -m eqlib.assignments grade`` runs). From the
two sizes n1 < n2 and their wall times t1, t2 it prints the cost per student
(t2 − t1) / (n2 − n1), the fixed cost (the instructor's reference runs, nbgrader's
start) t1 − n1 · per student, and the projection fixed + 60 · per student. (No CPU
times: a sandbox's processes are not counted in the grader's ``RUSAGE_CHILDREN``, so
they would understate the work.) Not a test: it prints, it does not assert.

    python benchmarks/bench_grading.py [--students 4 10] [--chapters 02 06] [--jobs 2]
"""
from __future__ import annotations

import argparse
import os
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


def run(students: int, chapters: list[str], jobs: int | None) -> tuple[float, list]:
    """Wall seconds to grade ``students`` synthetic students in a fresh course."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        course, submissions = root / "course", root / "submissions"
        assignments.setup(course, chapters)
        assignments.release(course)
        _students(course, submissions, students)
        start = time.monotonic()
        try:
            results = assignments.grade(submissions, course, jobs=jobs, timeout=120, notebook_timeout=900)
        finally:
            core.close_references()  # the next size starts from nothing too
        return time.monotonic() - start, results


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, nargs=2, default=[4, 10], metavar=("N1", "N2"),
                        help="two class sizes, N1 < N2")
    parser.add_argument("--chapters", nargs="+", default=["02", "06"])
    parser.add_argument("--jobs", type=int, default=None)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    n1, n2 = args.students
    if not 0 < n1 < n2:
        raise SystemExit(f"--students needs two sizes 0 < N1 < N2, got {n1} {n2}")
    jobs = args.jobs or os.cpu_count() or 1
    times = {}
    for n in (n1, n2):
        times[n], results = run(n, args.chapters, jobs)
        print(f"{n} students x chapters {' '.join(args.chapters)}, jobs={jobs}: {times[n]:.0f} s")
        print("  scores:", sorted((r.student, r.awarded) for r in results))
    per = (times[n2] - times[n1]) / (n2 - n1)
    fixed = times[n1] - n1 * per
    print(f"fixed cost {fixed:.0f} s, {per:.1f} s per student: "
          f"60 students x {len(args.chapters)} chapters in about {(fixed + 60 * per) / 60:.0f} min")


if __name__ == "__main__":
    main()
