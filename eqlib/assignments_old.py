"""Classroom use of the book: a thin teacher's front end over nbgrader.

The chapters are nbgrader source notebooks: answer cells (``solution: true``) hold code
between ``### BEGIN SOLUTION`` and ``### END SOLUTION``; each written solution (the
``{solution}`` dropdown) is a cell of its own, an nbgrader written answer worth 0 points;
check cells (``grade: true``, ``locked: true``) call ``eqlib.exercises.chNN`` and end with
hidden tests that re-run the check with the checker loaded fresh from the installed file.

Command line (the README's *Teach with it*)::

    python -m eqlib.assignments setup course/ --chapters 02 06   # nbgrader course folder
    python -m eqlib.assignments release course/                   # course/release/<assignment>/
    python -m eqlib.assignments grade submissions/ --course course/ --csv scores.csv

``grade`` copies ``submissions/<student>/*.ipynb`` into the course, autogrades every
student with nbgrader (check cells, hidden tests and points come from the instructor's
copy; edited locked cells are restored), scans what each student wrote for tampering,
verifies after each student that the installed course files are unchanged, and writes one
CSV and one JSON of scores. A flagged submission is awarded 0 until the teacher reviews it.

Chapter: every chapter's *Exercises* section; see the README, *Teach with it*.
"""
from __future__ import annotations

import argparse
import ast
import copy
import csv
import hashlib
import json
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbgrader.preprocessors import Execute
from traitlets import Integer

__all__ = ["GuardedExecute", "Flag", "StudentScore", "TamperedInstallation", "setup", "release", "grade", "scan", "main"]

BOOK = Path(__file__).resolve().parents[1] / "book"
ASSIGNMENT = "exercises"


def _chapter_files(book: Path, chapters: list[str]) -> list[Path]:
    found = {p.name[:2]: p for p in book.rglob("[0-9][0-9]_*.ipynb")
             if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts}
    bad = [c for c in chapters if c.zfill(2) not in found]
    if not chapters or bad:
        raise ValueError(f"chapters must be chapter numbers among {sorted(found)}, got {chapters!r}")
    return [found[c.zfill(2)] for c in chapters]


def _error(ename: str, evalue: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class GuardedExecute(Execute):
    """nbgrader's executor with a total time limit per notebook and survival of kernel deaths.

    Cells left when ``notebook_timeout`` seconds have passed get an error instead of
    running (so their checks score 0). A cell that kills the kernel (``os._exit``, a
    crash) gets an error, and the notebook is run again in a fresh kernel with that cell
    replaced by ``raise RuntimeError(...)``, so the other exercises still count.
    """

    notebook_timeout = Integer(600, help="seconds for the whole notebook").tag(config=True)
    max_kernel_deaths = Integer(3, help="kernel deaths before the rest of the notebook scores 0").tag(config=True)

    def _get_timeout(self, cell):
        left = max(1, int(self._deadline - time.monotonic()))
        return min(self.timeout, left) if self.timeout and self.timeout > 0 else left

    def preprocess_cell(self, cell, resources, index):
        self._current = index
        if cell.cell_type == "code" and time.monotonic() >= self._deadline:
            cell.outputs = [_error("NotebookTimeLimit", f"not run: the notebook's {self.notebook_timeout} s "
                                                        "limit was reached")]
            return cell, resources
        return super().preprocess_cell(cell, resources, index)

    def preprocess(self, nb, resources=None, km=None):
        self._deadline = time.monotonic() + self.notebook_timeout
        crashed: dict[int, str] = {}
        while True:
            work = copy.deepcopy(nb)
            for i, why in crashed.items():
                work.cells[i].source = f"raise RuntimeError({why!r})"
            self._current = -1
            try:
                return super().preprocess(work, resources, km)
            except Exception as exc:  # a dead kernel or a failed start: never lose the notebook
                i = self._current
                why = f"this cell stopped the kernel ({type(exc).__name__}); it scores 0"
                if i < 0 or i in crashed or len(crashed) >= self.max_kernel_deaths \
                        or time.monotonic() >= self._deadline:
                    for j, cell in enumerate(work.cells):
                        if cell.cell_type == "code" and j >= max(i, 0):
                            cell.outputs = [_error(type(exc).__name__, f"not graded: {exc}"[:500])]
                    nb.cells = work.cells
                    return nb, resources
                crashed[i] = why
                self.log.warning("kernel died in cell %d; running the notebook again without it", i)


def _config(course: Path, timeout: int, notebook_timeout: int):
    from nbgrader.converters.autograde import Autograde
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(course.resolve())
    config.CourseDirectory.course_id = "layerwise-equivariance"
    config.Execute.timeout = timeout
    config.GuardedExecute.timeout = timeout
    config.GuardedExecute.notebook_timeout = notebook_timeout
    config.OverwriteCells.add_missing_cells = True  # a deleted check cell is put back and run
    config.Autograde.autograde_preprocessors = [
        GuardedExecute if p is Execute else p for p in Autograde.class_traits()["autograde_preprocessors"].default()]
    return config


def _api(course: Path, timeout: int = 60, notebook_timeout: int = 600):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    config = _config(course, timeout, notebook_timeout)
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def setup(course: Path | str, chapters: list[str], assignment: str = ASSIGNMENT,
          book: Path | str = BOOK) -> list[Path]:
    """Create an nbgrader course folder ``course`` whose assignment holds the chosen chapters.

    Writes ``course/nbgrader_config.py`` and ``course/source/<assignment>/NN_*.ipynb``.
    Returns the copied notebooks.

    Raises:
        ValueError: if a chapter number does not exist or ``assignment`` is not a plain name.

    Teacher's guide: the README, *Teach with it*.
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]+", assignment):
        raise ValueError(f"assignment must be letters, digits, '-' or '_', got {assignment!r}")
    course = Path(course)
    files = _chapter_files(Path(book), chapters)
    source = course / "source" / assignment
    source.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(
        "# Written by python -m eqlib.assignments setup; plain `nbgrader autograde` uses it too.\n"
        "from nbgrader.converters.autograde import Autograde\n"
        "from nbgrader.preprocessors import Execute\n\n"
        "from eqlib.assignments import GuardedExecute\n\n"
        "c = get_config()  # noqa: F821\n"
        "c.CourseDirectory.course_id = 'layerwise-equivariance'\n"
        "c.Execute.timeout = c.GuardedExecute.timeout = 60  # seconds per cell\n"
        "c.GuardedExecute.notebook_timeout = 600  # seconds per notebook\n"
        "c.OverwriteCells.add_missing_cells = True  # a deleted check cell is put back and run\n"
        "c.Autograde.autograde_preprocessors = [GuardedExecute if p is Execute else p\n"
        "    for p in Autograde.class_traits()['autograde_preprocessors'].default()]\n")
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

    Teacher's guide: the README, *Teach with it*.
    """
    course = Path(course)
    if not (course / "source" / assignment).is_dir():
        raise ValueError(f"{course}/source/{assignment} does not exist: run `setup` first")
    result = _api(course).generate_assignment(assignment)
    if not result["success"]:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{result['error']}\n{result['log']}")
    return sorted((course / "release" / assignment).glob("*.ipynb"))


@dataclass
class Flag:
    """A cell of a submission that tampers with the grading, and why it was flagged."""

    notebook: str
    cell: int
    grade_id: str
    reason: str


@dataclass
class StudentScore:
    """One student's result: nbgrader's score, the flags and the awarded score."""

    student: str
    nbgrader_score: float
    max_score: float
    awarded: float
    exercises: dict[str, float] = field(default_factory=dict)
    flags: list[Flag] = field(default_factory=list)
    note: str = ""


# builtins that rewrite objects or run hidden code (flagged when called by their bare name) ...
_FORBIDDEN_BUILTINS = {"setattr", "delattr", "exec", "eval", "compile", "__import__", "globals", "vars",
                       "get_ipython", "open_code"}
# ... and methods that do so whatever they are called on
_FORBIDDEN_CALLS = {"reload", "import_module", "spec_from_file_location", "settrace", "setprofile",
                    "set_custom_exc", "write_text", "write_bytes", "symlink_to", "run_cell", "run_line_magic",
                    "run_cell_magic", "system"}
# modules whose use in an answer can rewrite the grader, its files or the running kernel
_FORBIDDEN_NAMES = {"sys", "builtins", "__builtins__", "importlib", "subprocess", "shutil", "ctypes", "gc",
                    "inspect", "os", "custom_exceptions", "CustomTB", "__code__", "__globals__",
                    "__dict__", "__class__", "__subclasses__"}
_KERNEL_SAFE = {"os.path", "os.environ", "os.cpu_count", "os.getcwd", "os._exit"}  # reading paths and settings; a crash gains nothing


def _ipython_to_python(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def scan(source: str, protected: set[str], modules: set[str] = frozenset()) -> list[str]:
    """Reasons why the code ``source`` (an answer or other student cell) tampers with grading.

    Flags: assigning to an attribute of an imported module or of a checker (``ch02.check_x
    = ...``), rebinding a name the check cells use (``protected``: ``ch02``, ``check_x``,
    ``fresh``, ...), ``sys``/``sys.modules``/``builtins``/``importlib``/``os``/``shutil``,
    exception handlers (``set_custom_exc``, ``custom_exceptions``), dynamic code (``exec``,
    ``eval``, ``setattr``, ``globals()``), shell commands and magics, and writing files.
    ``modules`` names the modules the notebook imports (their attributes are protected).

    Teacher's guide: the README, *Teach with it*.
    """
    try:
        tree = ast.parse(_ipython_to_python(source))
    except SyntaxError:
        return []  # it fails when run; nothing to gain
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
    reasons = []

    def root(node):
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in protected:
            reasons.append(f"line {node.lineno}: redefines {node.name!r}, which a check cell uses")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module = getattr(node, "module", None) or ""
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                honest = alias.asname in (None, alias.name) and (
                    module.startswith("eqlib") if isinstance(node, ast.ImportFrom) else name == "eqlib")
                if name in protected and not honest:
                    reasons.append(f"line {node.lineno}: imports over {name!r}, which a check cell uses")
                if {alias.name.split(".")[0], module.split(".")[0]} & (_FORBIDDEN_NAMES - {"os"}):
                    reasons.append(f"line {node.lineno}: imports {module or alias.name} (can rewrite the grader)")
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Name) and isinstance(t.ctx, (ast.Store, ast.Del)) and t.id in protected:
                    reasons.append(f"line {node.lineno}: rebinds {t.id!r}, which a check cell uses")
            if isinstance(target, (ast.Attribute, ast.Subscript)):
                name = root(target)
                if name in imported | protected | set(modules) | _FORBIDDEN_NAMES | {"eqlib", "torch"}:
                    reasons.append(f"line {node.lineno}: assigns to {ast.unparse(target)} (patches a module)")
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in _FORBIDDEN_CALLS or (isinstance(func, ast.Name) and name in _FORBIDDEN_BUILTINS):
                reasons.append(f"line {node.lineno}: calls {name}() (can rewrite the grader or its files)")
            if name == "open" and any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                                      and set(a.value) & set("wax+") for a in [*node.args[1:2],
                                      *(k.value for k in node.keywords if k.arg == "mode")]):
                reasons.append(f"line {node.lineno}: opens a file for writing")
        if isinstance(node, ast.Attribute) and node.attr in _FORBIDDEN_NAMES:
            reasons.append(f"line {node.lineno}: uses .{node.attr}")
        if isinstance(node, ast.Name) and node.id in _FORBIDDEN_NAMES and node.id not in imported:
            reasons.append(f"line {node.lineno}: uses {node.id}")
        if isinstance(node, ast.Attribute) and root(node) in _FORBIDDEN_NAMES \
                and not any(ast.unparse(node).startswith(safe) for safe in _KERNEL_SAFE):
            reasons.append(f"line {node.lineno}: uses {ast.unparse(node)}")
    return list(dict.fromkeys(reasons))


def _imported_names(source_nb) -> set[str]:
    names = set()
    for cell in source_nb.cells:
        if cell.cell_type == "code":
            try:
                tree = ast.parse(_ipython_to_python(cell.source))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    return names


def _protected_names(source_nb) -> set[str]:
    names = {"get_ipython", "eqlib", "fresh", "print", "AssertionError", "Exception", "BaseException",
             "isinstance", "type", "float", "len", "abs", "max", "min", "sum", "any", "all"}
    for cell in source_nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            tree = ast.parse(cell.source)
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.Call):
                    func = node.func
                    names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names - {""}


def _scan_submission(submitted: Path, released: Path, source: Path) -> list[Flag]:
    """Flags for every code cell the student wrote or changed (cells equal to the release are trusted)."""
    released_sources = {c.source for c in nbformat.read(released, as_version=4).cells}
    source_nb = nbformat.read(source, as_version=4)
    protected, modules = _protected_names(source_nb), _imported_names(source_nb)
    flags = []
    try:
        nb = nbformat.read(submitted, as_version=4)
    except Exception as exc:  # an unreadable file earns nothing; say so
        return [Flag(submitted.name, -1, "-", f"unreadable notebook: {exc}"[:200])]
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or cell.source in released_sources:
            continue
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", f"cell {i}")
        for reason in scan(cell.source, protected, modules):
            flags.append(Flag(submitted.name, i, gid, reason))
    return flags


PACKAGE = Path(__file__).resolve().parent  # the eqlib the kernels import (and fresh() reads)


def _installed_files(course: Path, assignment: str, package: Path = PACKAGE) -> dict[str, str]:
    """SHA-256 of eqlib's files and the course's instructor files."""
    paths = [p for p in Path(package).rglob("*") if p.is_file() and p.suffix in {".py", ".json", ".js", ".css"}
             and "__pycache__" not in p.parts]
    paths += [p for p in (course / "source" / assignment).rglob("*") if p.is_file()]
    paths += [p for p in (course / "release" / assignment).rglob("*") if p.is_file()]
    paths += [course / "nbgrader_config.py"]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(paths) if p.exists()}


class TamperedInstallation(RuntimeError):
    """Installed course files changed while grading a submission (``results``: the scores so far)."""

    def __init__(self, results: list[StudentScore], message: str):
        super().__init__(message)
        self.results = results


def _students(submissions: Path) -> list[Path]:
    return sorted(d for d in submissions.iterdir() if d.is_dir() and not d.name.startswith("."))


def grade(submissions: Path | str, course: Path | str, assignment: str = ASSIGNMENT, timeout: int = 60,
          notebook_timeout: int = 600, csv_path: Path | str | None = None,
          json_path: Path | str | None = None) -> list[StudentScore]:
    """Autograde ``submissions/<student>/*.ipynb`` with nbgrader; write the score files.

    Each student's notebooks run in a fresh kernel, in that student's own copy of the
    assignment (nbgrader's ``autograded/<student>/``). The score files (CSV and JSON) are
    written after every student, so they exist whatever happens later.

    Args:
        submissions: a folder with one sub-folder per student (``alice/02_….ipynb``).
        course: the course folder made by :func:`setup` and :func:`release`.
        assignment: the nbgrader assignment name.
        timeout: seconds per cell (> 0).
        notebook_timeout: seconds per notebook (> 0).
        csv_path, json_path: score files (default ``<course>/scores.csv`` and ``.json``).

    Raises:
        ValueError: on bad arguments or a course that was not released.
        eqlib.assignments.TamperedInstallation: if eqlib's or the course's files changed while grading a
            student (that student is flagged and awarded 0; grading stops).

    Teacher's guide: the README, *Teach with it*.
    """
    for name, value in (("timeout", timeout), ("notebook_timeout", notebook_timeout)):
        if not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    submissions, course = Path(submissions), Path(course)
    if not submissions.is_dir():
        raise ValueError(f"submissions must be a folder of student folders, got {submissions}")
    source_dir, release_dir = course / "source" / assignment, course / "release" / assignment
    if not release_dir.is_dir():
        raise ValueError(f"{release_dir} does not exist: run `release` first")
    csv_path = Path(csv_path or course / "scores.csv")
    json_path = Path(json_path or course / "scores.json")
    api = _api(course, int(timeout), int(notebook_timeout))
    notebooks = sorted(p.name for p in release_dir.glob("*.ipynb"))
    results: list[StudentScore] = []
    before = _installed_files(course, assignment)
    try:
        for student_dir in _students(submissions):
            student = student_dir.name
            inner = student_dir / assignment if (student_dir / assignment).is_dir() else student_dir
            target = course / "submitted" / student / assignment
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            flags = []
            for name in notebooks:
                if (inner / name).is_file():
                    shutil.copy2(inner / name, target / name)
                    flags += _scan_submission(target / name, release_dir / name, source_dir / name)
            try:
                result = api.autograde(assignment, student, force=True, create=True)
            except Exception as exc:  # whatever nbgrader does, the other students are still graded
                result = {"success": False, "error": f"{type(exc).__name__}: {exc}"}
            after = _installed_files(course, assignment)
            changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
            if changed:
                flags.append(Flag("-", -1, "-", "changed installed course files: " + ", ".join(changed)))
            results.append(_score(api, assignment, student, flags,
                                  "" if result["success"] else "nbgrader: " + result["error"][-300:]))
            _write(results, csv_path, json_path)
            if changed:
                raise TamperedInstallation(results,
                    f"grading {student} changed installed course files: {', '.join(changed)}. Restore them "
                    f"(e.g. `git checkout -- eqlib` and re-run `setup`/`release`) before grading on; scores "
                    f"so far are in {csv_path}.")
    finally:
        _write(results, csv_path, json_path)
    return results


def _score(api, assignment: str, student: str, flags: list[Flag], note: str) -> StudentScore:
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
    awarded = 0.0 if flags else total
    if flags:
        note = (note + "; " if note else "") + "flagged: awarded 0 until reviewed"
    return StudentScore(student, total, most, awarded, exercises, flags, note)


def _write(results: list[StudentScore], csv_path: Path, json_path: Path) -> None:
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    ids = sorted({k for r in results for k in r.exercises})
    with open(csv_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "awarded", "nbgrader_score", "max_score", "flags", *ids, "note"])
        for r in results:
            writer.writerow([r.student, r.awarded, r.nbgrader_score, r.max_score,
                             "; ".join(f"{x.notebook} cell {x.cell} ({x.grade_id}): {x.reason}" for x in r.flags),
                             *(r.exercises.get(i, 0.0) for i in ids), r.note])
    json_path.write_text(json.dumps([asdict(r) for r in results], indent=1, ensure_ascii=False))


def _table(results: list[StudentScore]) -> str:
    width = max([len("student")] + [len(r.student) for r in results])
    lines = [f"{'student':<{width}}  awarded  nbgrader  max  flags", "-" * (width + 36)]
    for r in results:
        first = f"{r.flags[0].notebook} cell {r.flags[0].cell}: {r.flags[0].reason}" if r.flags else ""
        more = f" (+{len(r.flags) - 1} more)" if len(r.flags) > 1 else ""
        lines.append(f"{r.student:<{width}}  {r.awarded:7g}  {r.nbgrader_score:8g}  {r.max_score:3g}  "
                     f"{first[:90]}{more}")
    return "\n".join(lines)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, got {text}")
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
    gr = sub.add_parser("grade", help="autograde every student, write CSV and JSON, print a table")
    gr.add_argument("submissions", help="a folder with one folder of notebooks per student")
    gr.add_argument("--course", required=True)
    gr.add_argument("--assignment", default=ASSIGNMENT)
    gr.add_argument("--timeout", type=_positive, default=60, help="seconds per cell (> 0)")
    gr.add_argument("--notebook-timeout", type=_positive, default=600, help="seconds per notebook (> 0)")
    gr.add_argument("--csv", help="score file (default <course>/scores.csv)")
    gr.add_argument("--json", help="score file (default <course>/scores.json)")
    args = parser.parse_args(argv)
    try:
        if args.command == "setup":
            for path in setup(args.course, args.chapters, args.assignment):
                print(path)
        elif args.command == "release":
            for path in release(args.course, args.assignment):
                print(path)
        else:
            try:
                results = grade(args.submissions, args.course, args.assignment, args.timeout,
                                args.notebook_timeout, args.csv, args.json)
            except TamperedInstallation as exc:
                print(_table(exc.results))
                print(f"error: {exc}", file=sys.stderr)
                return 3
            print(_table(results))
            print(f"scores: {args.csv or Path(args.course) / 'scores.csv'}, "
                  f"{args.json or Path(args.course) / 'scores.json'}")
    except ValueError as exc:
        parser.error(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
