"""nbgrader's autograde step, isolated: ``SandboxedExecute`` replaces nbgrader's ``Execute``;
``UnfoldAnswers``, which opens the answer cells the book keeps folded; and
``WriteCourseKey``, which writes the course key into the released variant cells.

``setup`` writes a ``nbgrader_config.py`` that puts it in ``Autograde.autograde_preprocessors``,
so ``nbgrader autograde`` (and formgrader's autograde button) run each submission in the
sandbox and score each check cell by the checker run in the grader's own process: the
check cell gets the checker's verdict as its only output (nothing when right, an
``ExerciseError`` with the checker's message when wrong), and nbgrader's ``SaveAutoGrades``
writes the points into the gradebook as usual. The other cells get what they printed, for
the feedback. A report per notebook (time limits, skipped cells, every check's message)
goes to ``<course>/reports/<assignment>/<student>/<notebook>.json``. Each student is run and
scored under their variant (``eqlib.exercises.variants``: the student id is nbgrader's, the
keys are the course's ``.eqlib/keys.json``).

Chapter: book/teaching.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, Integer, List, Unicode

from . import core, plan, sandbox


def _stream(name: str, text: str):
    return nbformat.v4.new_output("stream", name=name, text=text)


def _error(ename: str, evalue: str):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class SandboxedExecute(NbGraderPreprocessor):
    """Run a submission in a sandbox; score its checks outside it (see the module docstring)."""

    timeout = Integer(60, help="seconds per cell").tag(config=True)
    notebook_timeout = Integer(600, help="seconds for the whole notebook").tag(config=True)
    memory_gb = Float(16.0, help="address-space limit of the sandbox, GiB").tag(config=True)
    sandbox = Unicode("auto", help="auto, bwrap, unshare or none (none gives no isolation, for trusted tests only)"
                      ).tag(config=True)
    hide = List(Unicode(), help="more folders the sandbox must not see").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        coursedir = CourseDirectory(config=self.config)
        root = Path(coursedir.root).resolve()
        assignment, notebook, student = info.get("assignment"), info.get("notebook"), info.get("student")
        source = Path(coursedir.format_path(coursedir.source_directory, ".", assignment)) / f"{notebook}.ipynb"
        variant = core.student_variant(str(student), core.course_keys(root))
        reference = core.reference_for(source, self.timeout)
        how = None if self.sandbox == "auto" else self.sandbox
        if how is None and sandbox.method() == "none":
            raise RuntimeError("no sandbox: install bubblewrap (apt-get install bubblewrap) or enable user "
                               "namespaces, or set SandboxedExecute.sandbox = 'none' for trusted notebooks only")
        limits = sandbox.Limits(wall_s=float(self.notebook_timeout), memory_bytes=int(self.memory_gb * 2 ** 30),
                                cpu_s=int(self.notebook_timeout * 2))
        hide = [root, *map(Path, self.hide), *_book_folders()]
        # the program is built from the collected file, as the front end builds it (so its
        # parallel runs are reused); locked cells still come from the instructor's source
        submitted = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment)) / \
            f"{notebook}.ipynb"
        try:
            student_nb = plan.read(submitted)
        except Exception:
            student_nb = nb
        result = core.grade_notebook(student_nb, reference, limits, hide, float(self.timeout), how,
                                     variant=variant)
        ids = set(reference.points)
        for n, step in enumerate(result.steps):
            i = step.get("cell")
            if i is None or "record" in step or i >= len(nb.cells) or i >= len(student_nb.cells):
                continue
            cell = nb.cells[i]
            if cell.cell_type != "code" or cell.source != student_nb.cells[i].get("source"):
                continue
            out = result.outputs[n]
            cell.outputs = []
            if out is None:
                continue
            if out.get("stdout"):
                cell.outputs.append(_stream("stdout", out["stdout"]))
            if out.get("stderr"):
                cell.outputs.append(_stream("stderr", out["stderr"]))
            if out.get("error"):
                cell.outputs.append(_error(str(out["error"][0]), str(out["error"][1])))
        for cell in nb.cells:
            gid = plan.nbg(cell).get("grade_id")
            if cell.cell_type == "code" and gid in ids:
                score = result.scores.get(gid, {"ok": False, "message": "not scored"})
                cell.outputs = [] if score["ok"] else [_error("ExerciseError", score["message"] or "wrong answer")]
                cell.execution_count = None
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.execution_count = None
        _write_report(root, assignment, student, notebook, result, reference)
        return nb, resources


def _book_folders() -> list[Path]:
    book = sandbox.PACKAGE_ROOT / "book"
    return [book, sandbox.PACKAGE_ROOT / ".git"] if book.is_dir() else []


def _write_report(root: Path, assignment: str, student: str, notebook: str, result, reference) -> None:
    folder = root / "reports" / str(assignment) / str(student)
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"notebook": notebook, "notes": result.notes, "checks": result.scores,
           "points": reference.points, "instructor_problems": reference.problems(),
           "seconds": round(result.seconds, 1), "sandbox_stderr": result.stderr[-5000:],
           "cell_errors": {str(s.get("cell")): o["error"] for s, o in zip(result.steps, result.outputs)
                           if o and o.get("error")}}
    (folder / f"{notebook}.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False))


FOLD_TAGS = ("hide-input", "hide-cell")


class UnfoldAnswers(NbGraderPreprocessor):
    """Open every folded cell in a student version (``generate_assignment``).

    The book folds solution code and hidden tests (the ``hide-input`` tag and JupyterLab's
    ``source_hidden``) so a reader tries first; in a released notebook those cells hold the
    student's answer cell and the visible checks, which must be open to be worked on.
    """

    def preprocess_cell(self, cell, resources, index):
        jupyter = cell.get("metadata", {}).get("jupyter", {})
        for key in ("source_hidden", "outputs_hidden"):
            jupyter.pop(key, None)
        if "jupyter" in cell.get("metadata", {}) and not jupyter:
            del cell.metadata["jupyter"]
        tags = cell.get("metadata", {}).get("tags")
        if tags:
            cell.metadata.tags = [t for t in tags if t not in FOLD_TAGS]
            if not cell.metadata.tags:
                del cell.metadata["tags"]
        return cell, resources


VARIANT_TAG = "exercise-variant"
_COURSE_LINE = re.compile(r'^COURSE = ""', re.M)


class WriteCourseKey(NbGraderPreprocessor):
    """Write the course key into a released notebook (``generate_assignment``).

    In every cell tagged ``exercise-variant`` (the first cell of a chapter's exercises) the
    line ``COURSE = ""`` becomes ``COURSE = "<course key>"``, the key ``setup`` drew
    (``<course>/.eqlib/keys.json``): a student who types their id in that cell then sees
    their own numbers. The input key never leaves the course folder.
    """

    def preprocess(self, nb, resources):
        cells = [c for c in nb.cells if VARIANT_TAG in c.get("metadata", {}).get("tags", [])]
        if not cells:
            return nb, resources
        root = Path(CourseDirectory(config=self.config).root).resolve()
        keys = core.course_keys(root)
        if keys is None:
            raise ValueError(f"{root} has no course keys ({core.KEYS}): run `python -m eqlib.assignments setup` "
                             "on it again (it keeps the notebooks and draws the keys once)")
        notebook = resources.get("nbgrader", {}).get("notebook", "a notebook")
        for cell in cells:
            if not _COURSE_LINE.search(cell.source):
                raise ValueError(f'{notebook}: its cell tagged {VARIANT_TAG!r} has no line `COURSE = ""`')
            cell.source = _COURSE_LINE.sub(f'COURSE = "{keys["course"]}"', cell.source, count=1)
        return nb, resources
