"""Classroom use of the book: a teacher's front end over nbgrader, with isolated grading.

The chapters are nbgrader source notebooks: answer cells (``solution: true``) hold code
between ``### BEGIN SOLUTION`` and ``### END SOLUTION``; each written solution (the
``{solution}`` dropdown) is a cell of its own, an nbgrader written answer worth 0 points;
check cells (``grade: true``, ``locked: true``) call ``eqlib.exercises.chNN``.

Command line (the teacher's guide, book/teaching)::

    python -m eqlib.assignments setup course/ --chapters 02 06   # nbgrader course folder
    python -m eqlib.assignments release course/                   # course/release/<assignment>/
    python -m eqlib.assignments grade submissions/ --course course/ --csv scores.csv

How grading works (``eqlib.assignments.core``): each submission runs in a sandbox
(``eqlib.assignments.sandbox``: bubblewrap or user namespaces; read-only file system,
no course folder, no network, resource limits); a check cell there only *records* the
answer as plain data (``eqlib.assignments.codec``); the checker runs in the grader's
own process on that data and on the chapter's context taken from the instructor's
notebook (``eqlib.assignments.runner``). The same step is nbgrader's autograde
preprocessor (``eqlib.assignments.preprocessor``), so ``nbgrader autograde`` and
``grade`` give the same scores.

Chapter: every chapter's *Exercises* section; the teacher's guide book/teaching.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from . import core, plan, sandbox
from .preprocessor import SandboxedExecute, UnfoldAnswers, WriteCourseKey

__all__ = ["SandboxedExecute", "UnfoldAnswers", "WriteCourseKey", "Flag", "StudentScore", "setup", "release", "grade", "match_notebooks", "main"]

BOOK = Path(__file__).resolve().parents[2] / "book"
ASSIGNMENT = "exercises"
COURSE_ID = "layerwise-equivariance"


def _chapter_files(book: Path, chapters: list[str]) -> list[Path]:
    found = {p.name[:2]: p for p in book.rglob("[0-9][0-9]_*.ipynb")
             if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts}
    bad = [c for c in chapters if c.zfill(2) not in found]
    if not chapters or bad:
        raise ValueError(f"chapters must be chapter numbers among {sorted(found)}, got {chapters!r}")
    return [found[c.zfill(2)] for c in chapters]


CONFIG = """\
# Written by python -m eqlib.assignments setup; plain `nbgrader autograde` uses it too.
# Each submission runs in a sandbox; checks are scored outside it (eqlib.assignments).
from nbgrader.converters.autograde import Autograde
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import Execute

from eqlib.assignments import SandboxedExecute, UnfoldAnswers, WriteCourseKey

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {course_id!r}
c.SandboxedExecute.timeout = {timeout}  # seconds per cell
c.SandboxedExecute.notebook_timeout = {notebook_timeout}  # seconds per notebook
c.OverwriteCells.add_missing_cells = True  # a deleted check cell is put back and scored
c.Autograde.autograde_preprocessors = [SandboxedExecute if p is Execute else p
    for p in Autograde.class_traits()['autograde_preprocessors'].default()]
# the book folds solutions and hidden tests; student versions open them; the variant
# cells get the course key (.eqlib/keys.json)
c.GenerateAssignment.preprocessors = [UnfoldAnswers, WriteCourseKey] + list(
    GenerateAssignment.class_traits()['preprocessors'].default())
"""


def _config(course: Path, timeout: int = 60, notebook_timeout: int = 600):
    from nbgrader.converters.autograde import Autograde
    from nbgrader.converters.generate_assignment import GenerateAssignment
    from nbgrader.preprocessors import Execute
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(course.resolve())
    config.CourseDirectory.course_id = COURSE_ID
    config.SandboxedExecute.timeout = int(timeout)
    config.SandboxedExecute.notebook_timeout = int(notebook_timeout)
    config.OverwriteCells.add_missing_cells = True
    config.Autograde.autograde_preprocessors = [
        SandboxedExecute if p is Execute else p for p in Autograde.class_traits()["autograde_preprocessors"].default()]
    config.GenerateAssignment.preprocessors = [UnfoldAnswers, WriteCourseKey] + list(
        GenerateAssignment.class_traits()["preprocessors"].default())
    return config


def _api(course: Path, timeout: int = 60, notebook_timeout: int = 600):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    config = _config(course, timeout, notebook_timeout)
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def _quiet():
    """No SQLAlchemy or Jupyter deprecation noise on the teacher's terminal."""
    for pattern in (".*SQLAlchemy.*", ".*MovedIn20Warning.*", ".*kernel.*TCP.*", ".*Jupyter is migrating.*"):
        warnings.filterwarnings("ignore", message=pattern)
    warnings.filterwarnings("ignore", module="sqlalchemy")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    try:
        from sqlalchemy import exc as sa_exc
        warnings.filterwarnings("ignore", category=sa_exc.SAWarning)
    except Exception:
        pass
    for name in ("traitlets", "nbgrader", "NbGraderAPI", "Autograde", "sqlalchemy"):
        logging.getLogger(name).setLevel(logging.ERROR)


def setup(course: Path | str, chapters: list[str], assignment: str = ASSIGNMENT,
          book: Path | str = BOOK) -> list[Path]:
    """Create (or extend) an nbgrader course folder; ``assignment`` holds the chosen chapters.

    Writes ``course/nbgrader_config.py`` (isolated grading, see the module docstring) and
    ``course/source/<assignment>/NN_*.ipynb``, and draws the course's two keys once
    (``course/.eqlib/keys.json``, kept thereafter: the course key goes into the released
    notebooks, the input key stays here). Run it once per assignment of a multi-week
    course (``--assignment week1``, ``week2``, ...). Returns the copied notebooks.

    Raises:
        TypeError: if ``assignment`` is not a string.
        ValueError: if a chapter number does not exist, ``assignment`` is not a plain name,
            or the course's keys file is malformed.

    Chapter: the teacher's guide (book/teaching).
    """
    if not isinstance(assignment, str):
        raise TypeError(f"assignment must be a string (a plain name), got {assignment!r}")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", assignment):
        raise ValueError(f"assignment must be letters, digits, '-' or '_', got {assignment!r}")
    course = Path(course)
    files = _chapter_files(Path(book), chapters)
    source = course / "source" / assignment
    source.mkdir(parents=True, exist_ok=True)
    core.course_keys(course, create=True)
    (course / "nbgrader_config.py").write_text(CONFIG.format(course_id=COURSE_ID, timeout=60, notebook_timeout=600))
    copied = []
    for path in files:
        shutil.copy2(path, source / path.name)
        copied.append(source / path.name)
    return copied


def release(course: Path | str, assignment: str = ASSIGNMENT) -> list[Path]:
    """Run nbgrader's ``generate_assignment``: student versions in ``course/release/<assignment>/``.

    Raises:
        ValueError: if the course has no such source assignment.
        RuntimeError: if nbgrader fails (its log says why).

    Chapter: the teacher's guide (book/teaching).
    """
    _quiet()
    course = Path(course)
    if not (course / "source" / assignment).is_dir():
        raise ValueError(f"{course}/source/{assignment} does not exist: run `setup` first")
    result = _api(course).generate_assignment(assignment)
    if not result["success"]:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{result['error']}\n{result['log']}")
    return sorted((course / "release" / assignment).glob("*.ipynb"))


@dataclass
class Flag:
    """Something about a submission the teacher should look at (it never changes a score)."""

    notebook: str
    cell: int
    grade_id: str
    reason: str


@dataclass
class StudentScore:
    """One student's result. ``awarded`` is nbgrader's score (flags only ask for review)."""

    student: str
    nbgrader_score: float
    max_score: float
    awarded: float
    exercises: dict[str, float] = field(default_factory=dict)
    flags: list[Flag] = field(default_factory=list)
    note: str = ""
    accepted: bool = False


# ------------------------------------------------------------------------------------ notebooks

_COPY = re.compile(r"^(copy of\s+)+|(-copy\d*|\s*\(\d+\)|\s+copy\d*|_copy\d*)+$", re.I)


def _normal(name: str) -> str:
    stem = Path(name).stem.strip()
    while True:
        new = _COPY.sub("", stem).strip()
        if new == stem:
            return stem.lower()
        stem = new


def _grade_ids(path: Path) -> set[str]:
    try:
        return {plan.nbg(c).get("grade_id") for c in plan.read(path).cells} - {None}
    except Exception:
        return set()


def match_notebooks(folder: Path, released: dict[str, Path]) -> tuple[dict[str, Path], list[str]]:
    """Which file of ``folder`` is which released notebook; notes on renamed or unmatched files.

    A file is matched by its name, by its name without the marks of a copy (``Copy of
    02_….ipynb``, ``02_…-Copy1.ipynb``, ``02_… (1).ipynb``), or else by the exercise ids its
    cells carry. Chapter: the teacher's guide (book/teaching).
    """
    files = sorted(p for p in Path(folder).rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts and not p.name.startswith("."))
    found, notes, used = {}, [], set()
    for name in released:
        exact = [p for p in files if p.name == name]
        if exact:
            found[name] = exact[0]
            used.add(exact[0])
    for name in released:
        if name in found:
            continue
        same = [p for p in files if p not in used and _normal(p.name) == _normal(name)]
        if same:
            found[name], reason = same[0], "renamed"
        else:
            ids = _grade_ids(released[name])
            scored = sorted(((len(ids & _grade_ids(p)), p) for p in files if p not in used), key=lambda t: -t[0])
            if not scored or scored[0][0] == 0:
                notes.append(f"no notebook for {name}")
                continue
            found[name], reason = scored[1 - 1][1], "renamed (matched by its exercises)"
        used.add(found[name])
        notes.append(f"{found[name].name} is {name} ({reason})")
    for p in files:
        if p not in used:
            notes.append(f"{p.name} matches no released notebook and was not graded")
    return found, notes


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _students(submissions: Path) -> list[Path]:
    return sorted(d for d in submissions.iterdir() if d.is_dir() and not d.name.startswith("."))


def _progress(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="nb", file=sys.stderr, disable=not total or None,
                dynamic_ncols=True, leave=True)


def grade(submissions: Path | str, course: Path | str, assignment: str = ASSIGNMENT, *, timeout: int = 60,
          notebook_timeout: int = 600, csv_path: Path | str | None = None,
          json_path: Path | str | None = None, jobs: int | None = None, sandbox_method: str | None = None,
          students: list[str] | None = None) -> list[StudentScore]:
    """Grade ``submissions/<student>/*.ipynb`` in sandboxes; write the gradebook and score files.

    The submissions are hashed and copied into the course (nbgrader's
    ``submitted/<student>/<assignment>/``) before the first student runs; ``jobs``
    students run at once (default: the number of cores), each under their variant (the
    folder's name is the student id; a name that is not a valid id is reported, not
    graded); then nbgrader's autograde writes every score into the gradebook
    (``SandboxedExecute``). After the last student the
    submissions are hashed again: a changed one is flagged (it was graded from the copy).
    A notebook's full report (time limits, skipped cells, each check's message) is saved
    in ``<course>/reports/<assignment>/<student>/``. CSV and JSON are written after every
    student. Flags never change a score; ``--review``/``--accept`` deal with them.

    Raises:
        TypeError: a timeout that is not a number, ``jobs`` not an integer.
        ValueError: on bad arguments or a course that was not released.

    Chapter: the teacher's guide (book/teaching).
    """
    for name, value in (("timeout", timeout), ("notebook_timeout", notebook_timeout)):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"{name} must be a number of seconds, got {value!r}")
        if not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool)):
        raise TypeError(f"jobs must be an integer or None, got {jobs!r}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    _quiet()
    submissions, course = Path(submissions), Path(course)
    if not submissions.is_dir():
        raise ValueError(f"submissions must be a folder of student folders, got {submissions}")
    source_dir, release_dir = course / "source" / assignment, course / "release" / assignment
    if not release_dir.is_dir():
        raise ValueError(f"{release_dir} does not exist: run `release` first")
    csv_path = Path(csv_path or course / "scores.csv")
    json_path = Path(json_path or course / "scores.json")
    how = sandbox_method or sandbox.method()
    if how == "none" and sandbox_method is None:
        raise RuntimeError("no sandbox on this machine: install bubblewrap (apt-get install bubblewrap)")
    released = {p.name: p for p in sorted(release_dir.glob("*.ipynb"))}
    dirs = [d for d in _students(submissions) if students is None or d.name in students]
    keys = core.course_keys(course)
    variants, invalid = {}, {}
    for d in dirs:  # each student's numbers come from their id: their folder's name
        try:
            variants[d.name] = core.student_variant(d.name, keys)
        except ValueError as exc:
            invalid[d.name] = f"not graded: {exc}"
    # 1. snapshot: hash and copy every submission before any student code runs
    before = {d.name: _hashes(d) for d in dirs}
    notes, flags = {}, {}
    for d in dirs:
        if d.name in invalid:
            notes[d.name], flags[d.name] = [], []
            continue
        inner = d / assignment if (d / assignment).is_dir() else d
        found, notes[d.name] = match_notebooks(inner, released)
        flags[d.name] = []
        target = course / "submitted" / d.name / assignment
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name, path in found.items():
            shutil.copy2(path, target / name)
    # 2. the instructor's references (at once), then every student's notebooks in parallel
    # (sandboxed); 3. meanwhile, in this thread, nbgrader's autograde of each student whose
    # notebooks have run (it sanitises, restores locked cells, writes the gradebook)
    jobs = jobs or os.cpu_count() or 1
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        refs = dict(zip(released, pool.map(lambda name: core.reference_for(source_dir / name, timeout), released)))
        problems = [p for r in refs.values() for p in r.problems()]
        if problems:
            print("warning: the instructor's own answers fail some checks:\n  " + "\n  ".join(problems),
                  file=sys.stderr)
        limits = sandbox.Limits(wall_s=float(notebook_timeout), cpu_s=int(notebook_timeout * 2))
        hide = [course.resolve(), submissions.resolve(), *_book_folders()]

        def run(student: str, name: str) -> None:
            try:
                nb = plan.read(course / "submitted" / student / assignment / name)
                core.grade_notebook(nb, refs[name], limits, hide, float(timeout), how, variant=variants[student])
            except Exception:  # nbgrader's pass below reports it
                pass

        runs = {d.name: [pool.submit(run, d.name, name) for name in released
                         if d.name not in invalid and (course / "submitted" / d.name / assignment / name).is_file()]
                for d in dirs}
        results = _autograde_all(course, assignment, dirs, runs, refs, invalid, notes, flags, before, submissions,
                                 csv_path, json_path, timeout, notebook_timeout, how)
    finally:
        pool.shutdown(cancel_futures=True)
    return results


def _autograde_all(course, assignment, dirs, runs, refs, invalid, notes, flags, before, submissions, csv_path,
                   json_path, timeout, notebook_timeout, how) -> list[StudentScore]:
    """nbgrader's autograde of each student, in order, as soon as their sandboxed runs end."""
    api = _api(course, int(timeout), int(notebook_timeout))
    api.config.SandboxedExecute.sandbox = how
    results: list[StudentScore] = []
    reasons_dir = csv_path.parent / (csv_path.stem + "_reasons")
    accepted = _accepted(course, assignment)
    bar = _progress(len(dirs), "grading")
    try:
        for d in dirs:
            student = d.name
            for future in runs.get(student, []):
                future.result()
            if student in invalid:
                most = sum(sum(r.points.values()) for r in refs.values())
                results.append(StudentScore(student, 0.0, most, 0.0, {}, [Flag("-", -1, "-", invalid[student])]))
                _write(results, csv_path, json_path)
                bar.update()
                continue
            try:
                result = api.autograde(assignment, student, force=True, create=True)
            except Exception as exc:  # whatever nbgrader does, the other students are still graded
                result = {"success": False, "error": f"{type(exc).__name__}: {exc}", "log": ""}
            note = "; ".join(notes[student])
            student_flags = list(flags[student])
            if not result["success"]:
                reasons_dir.mkdir(parents=True, exist_ok=True)
                (reasons_dir / f"{student}.txt").write_text(f"{result.get('error', '')}\n\n{result.get('log', '')}")
                student_flags.append(Flag("-", -1, "-", f"nbgrader failed: see {reasons_dir / (student + '.txt')}"))
            student_flags += _report_flags(course, assignment, student)
            results.append(_score(api, assignment, student, student_flags, note, student in accepted))
            _write(results, csv_path, json_path)
            bar.update()
    finally:
        bar.close()
        # 4. verify the snapshot
        for r in results:
            d = submissions / r.student
            after = _hashes(d) if d.is_dir() else {}
            changed = sorted(k for k in before[r.student].keys() | after.keys()
                             if before[r.student].get(k) != after.get(k))
            if changed:
                r.flags.append(Flag("-", -1, "-", "the submission changed while grading ("
                                    + ", ".join(changed) + "); it was graded from the copy taken before"))
        _write(results, csv_path, json_path)
    return results


def _book_folders() -> list[Path]:
    root = sandbox.PACKAGE_ROOT
    return [p for p in (root / "book", root / ".git") if p.is_dir()]


def _report_flags(course: Path, assignment: str, student: str) -> list[Flag]:
    out = []
    for path in sorted((course / "reports" / assignment / student).glob("*.json")):
        doc = json.loads(path.read_text())
        for note in doc.get("notes", []):
            out.append(Flag(doc["notebook"] + ".ipynb", -1, "-", note))
    return out


def _accepted(course: Path, assignment: str) -> set[str]:
    path = course / "reports" / assignment / "accepted.json"
    return set(json.loads(path.read_text())) if path.is_file() else set()


def _score(api, assignment: str, student: str, flags: list[Flag], note: str, accepted: bool) -> StudentScore:
    exercises, total, most = {}, 0.0, 0.0
    with api.gradebook as gb:
        for nb in gb.find_assignment(assignment).notebooks:
            for cell in nb.grade_cells:
                most += cell.max_score
                try:
                    g = gb.find_grade(cell.name, nb.name, assignment, student)
                    score = float(g.score or 0.0)
                except Exception:  # no grade: the notebook was missing or not graded
                    score = 0.0
                exercises[cell.name] = score
                total += score
    return StudentScore(student, total, most, total, exercises, flags, note, accepted)


def _write(results: list[StudentScore], csv_path: Path, json_path: Path) -> None:
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    ids = sorted({k for r in results for k in r.exercises})
    with open(csv_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "awarded", "nbgrader_score", "max_score", "flags", *ids, "note"])
        for r in results:
            writer.writerow([r.student, r.awarded, r.nbgrader_score, r.max_score,
                             "; ".join(f"{x.notebook}: {x.reason}" for x in r.flags) + (" (accepted)" if
                                                                                       r.accepted and r.flags else ""),
                             *(r.exercises.get(i, 0.0) for i in ids), r.note])
    json_path.write_text(json.dumps([asdict(r) for r in results], indent=1, ensure_ascii=False))


def _table(results: list[StudentScore]) -> str:
    width = max([len("student")] + [len(r.student) for r in results])
    lines = [f"{'student':<{width}}  score  max  review", "-" * (width + 30)]
    for r in results:
        first = f"{r.flags[0].notebook}: {r.flags[0].reason}" if r.flags else ""
        more = f" (+{len(r.flags) - 1} more)" if len(r.flags) > 1 else ""
        mark = "accepted: " if r.accepted and r.flags else ""
        lines.append(f"{r.student:<{width}}  {r.awarded:5g}  {r.max_score:3g}  {mark}{first[:90]}{more}")
    return "\n".join(lines)


def review(course: Path | str, student: str, assignment: str = ASSIGNMENT) -> str:
    """What the grader saw for one student: every check's message, notes and flags.

    Chapter: the teacher's guide (book/teaching).
    """
    folder = Path(course) / "reports" / assignment / student
    if not folder.is_dir():
        raise ValueError(f"no report for student {student!r} in {folder.parent}: grade first")
    lines = [f"student {student} ({assignment})"]
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text())
        lines.append(f"\n{doc['notebook']}.ipynb ({doc['seconds']} s)")
        for gid, res in doc["checks"].items():
            pts = doc["points"].get(gid, 0)
            lines.append(f"  {gid}: {pts if res['ok'] else 0:g}/{pts:g}" + ("" if res["ok"] else
                         "  " + res["message"].replace("\n", "\n      ")[:600]))
        lines += [f"  note: {n}" for n in doc["notes"]]
        lines += [f"  cell {c} raised {e[0]}: {e[1][:200]}" for c, e in doc.get("cell_errors", {}).items()]
    return "\n".join(lines)


def accept(course: Path | str, student: str, assignment: str = ASSIGNMENT) -> None:
    """Mark a flagged student reviewed (the table and score files say "accepted").

    Chapter: the teacher's guide (book/teaching).
    """
    folder = Path(course) / "reports" / assignment
    if not (folder / student).is_dir():
        raise ValueError(f"no report for student {student!r} in {folder}: grade first")
    accepted = _accepted(Path(course), assignment) | {student}
    (folder / "accepted.json").write_text(json.dumps(sorted(accepted)))


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, got {text}")
    return value


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of students at once, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqlib.assignments", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("setup", help="create an nbgrader course folder from chosen chapters")
    st.add_argument("course", help="the course folder to create (e.g. course/)")
    st.add_argument("--chapters", nargs="+", required=True, help="chapter numbers, e.g. 02 06")
    st.add_argument("--assignment", default=ASSIGNMENT)
    rel = sub.add_parser("release", help="nbgrader generate_assignment: the student notebooks")
    rel.add_argument("course")
    rel.add_argument("--assignment", default=ASSIGNMENT)
    gr = sub.add_parser("grade", help="grade every student in sandboxes, write CSV and JSON, print a table")
    gr.add_argument("submissions", nargs="?", help="a folder with one folder of notebooks per student")
    gr.add_argument("--course", required=True)
    gr.add_argument("--assignment", default=ASSIGNMENT)
    gr.add_argument("--timeout", type=_positive, default=60, help="seconds per cell (> 0)")
    gr.add_argument("--notebook-timeout", type=_positive, default=600, help="seconds per notebook (> 0)")
    gr.add_argument("--jobs", type=_jobs, default=None, help="students graded at once (default: the cores)")
    gr.add_argument("--csv", help="score file (default <course>/scores.csv)")
    gr.add_argument("--json", help="score file (default <course>/scores.json)")
    gr.add_argument("--review", metavar="STUDENT", help="show what the grader saw for STUDENT")
    gr.add_argument("--accept", metavar="STUDENT", help="mark STUDENT's flags as reviewed")
    args = parser.parse_args(argv)
    try:
        if args.command == "setup":
            for path in setup(args.course, args.chapters, args.assignment):
                print(path)
        elif args.command == "release":
            for path in release(args.course, args.assignment):
                print(path)
        elif args.review or args.accept:
            if args.review:
                print(review(args.course, args.review, args.assignment))
            if args.accept:
                accept(args.course, args.accept, args.assignment)
                print(f"{args.accept}: accepted")
        else:
            if not args.submissions:
                parser.error("grade needs the submissions folder (or --review/--accept STUDENT)")
            try:
                results = grade(args.submissions, args.course, args.assignment, timeout=args.timeout,
                                notebook_timeout=args.notebook_timeout, csv_path=args.csv, json_path=args.json,
                                jobs=args.jobs)
            finally:
                core.close_references()
            print(_table(results))
            print(f"scores: {args.csv or Path(args.course) / 'scores.csv'}, "
                  f"{args.json or Path(args.course) / 'scores.json'}")
    except ValueError as exc:
        parser.error(str(exc))
    return 0
