"""Grading that a teacher can trust, end to end, with real nbgrader (book/teaching).

The teacher's guide's commands (``book/teaching.md``, every ``bash`` block, paths put in a
temporary folder) run as written on chapters 2 and 6, with students built from the
released notebooks by grade_id. Then real ``nbgrader autograde`` (a separate process, the
course's ``nbgrader_config.py``) grades the cheaters again. Expected scores come from the
instructor's check cells (points by grade_id).

| student | submission (chapter 2 only, except alice) | score |
|---|---|---|
| alice | the instructor's solutions, chapters 2 and 6 | all |
| wrong | wrong answers | 0 |
| tamper | wrong answers + every tampering cheat of issue #22 (gradebook writes with sqlite, a poisoned ``.pyc``, IPython input and AST transformers, a ``pre_run_cell`` hook printing an ``execute_result``, frame-walking to swap ``require``, ``print.__self__`` patches, patches only under ``NBGRADER_EXECUTION == 'autograde'``, ``set_custom_exc``) | 0 |
| liar | an ``int`` whose ``==`` and ``!=`` both hold, a tensor subclass whose ``allclose`` holds, a function returning such a tensor, an action subclass | 0 |
| saboteur | right answers to ex1 and ex3, wrong elsewhere; rewrites alice's and everyone's collected notebooks | ex1 + ex3 |
| habits | right answers + harmless habits (``%matplotlib inline``, ``plt.rcParams``, a variable named ``sum``, ``os.makedirs``, files, ``!echo``, warnings and stderr, ...), renamed ``Copy of …`` | all of chapter 2, unflagged |
| exits | right answers, ``os._exit(1)`` in the last exercise | all but ch02-ex5, flagged |
| (tamper) | its patches may kill its own Python: then it is flagged as well | 0 |
| blank | the released notebook unchanged (graded after the poisoners) | 0 |
"""
from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from eqlib import assignments
from eqlib.assignments import core

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "book" / "teaching.md"
CH02 = "02_groups_and_actions.ipynb"
TIMEOUT, NOTEBOOK_TIMEOUT = "60", "400"

WRONG = {
    "ch02-ex1-answer": "corners = actions.permutation(D4, {g: [0, 1, 2, 3] for g in D4})",
    "ch02-ex2-answer": "def f(t):\n    return 2 * t",
    "ch02-ex3-answer": "orbit3, stab3 = torch.eye(3), torch.eye(3)[None]",
    "ch02-ex5-answer": "n_involutions = 20",
}

TAMPER = r'''
import glob, os, sqlite3, sys, importlib.util, pathlib, py_compile
COURSE, SUBS = {course!r}, {subs!r}
try:  # 1. extra credit straight into the gradebook
    for db in glob.glob(COURSE + "/gradebook.db") + glob.glob("../../../gradebook.db"):
        con = sqlite3.connect(db)
        con.execute("UPDATE grade SET extra_credit = 100")
        con.commit()
except Exception as exc:
    print("sqlite:", exc)
try:  # 2. a poisoned .pyc of the checkers (for me and for everyone graded later)
    import eqlib.exercises.ch02 as mod
    src = pathlib.Path(mod.__file__).read_text() + (
        "\nfor _n in list(globals()):\n    if _n.startswith('check_'):\n"
        "        globals()[_n] = lambda *a, **k: None\n")
    pathlib.Path("poison.py").write_text(src)
    py_compile.compile("poison.py", cfile=importlib.util.cache_from_source(mod.__file__))
except Exception as exc:
    print("pyc:", exc)
ip = get_ipython()
try:  # 3. input and AST transformers: every check becomes `pass`
    ip.input_transformers_cleanup.append(
        lambda lines: ["pass\n"] if any("check_" in l for l in lines) else lines)
    import ast
    class Blank(ast.NodeTransformer):
        def visit_Call(self, node):
            if "check_" in ast.unparse(node.func):
                return ast.Constant(None)
            return self.generic_visit(node)
    ip.ast_transformers.append(Blank())
except Exception as exc:
    print("transformers:", exc)
try:  # 4. a pre_run_cell hook that shows an execute_result of full points
    ip.events.register("pre_run_cell", lambda *a: ip.displayhook(2))
except Exception as exc:
    print("hook:", exc)
try:  # 5. frame-walking: swap the checkers' require everywhere it is visible
    import eqlib.exercises as E
    E.require = lambda c, m: None
    E.fresh = lambda ch: type("M", (), {{"__getattr__": lambda s, n: (lambda *a, **k: None)}})()
    for name, m in list(sys.modules.items()):
        if name.startswith("eqlib.exercises.") and hasattr(m, "require"):
            m.require = lambda c, m_: None
    frame = sys._getframe()
    while frame is not None:
        if "require" in frame.f_globals:
            frame.f_globals["require"] = lambda c, m: None
        frame = frame.f_back
except Exception as exc:
    print("frames:", exc)
try:  # 6. builtins through print.__self__
    print.__self__.isinstance = lambda *a: True
    print.__self__.max = lambda *a, **k: 0
except Exception as exc:
    print("builtins:", exc)
if os.environ.get("NBGRADER_EXECUTION") == "autograde":  # 7. only while autograding
    import torch
    torch.allclose = lambda *a, **k: True
    torch.equal = lambda *a, **k: True
    for name, m in list(sys.modules.items()):
        if name.startswith("eqlib.exercises.ch"):
            for attr in dir(m):
                if attr.startswith("check_"):
                    setattr(m, attr, lambda *a, **k: None)
try:  # 8. swallow every exception
    ip.set_custom_exc((BaseException,), lambda *a, **k: None)
except Exception as exc:
    print("custom_exc:", exc)
'''

LIAR = {
    "ch02-ex5-answer": "class Liar(int):\n    def __eq__(self, other):\n        return True\n"
                       "    def __ne__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
                       "n_involutions = Liar(0)",
    "ch02-ex3-answer": "class T(torch.Tensor):\n    @classmethod\n"
                       "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                       "        if func in (torch.allclose, torch.equal):\n            return True\n"
                       "        return super().__torch_function__(func, types, args, kwargs or {})\n"
                       "orbit3, stab3 = torch.zeros(3, 3).as_subclass(T), torch.eye(3)[None].as_subclass(T)",
    "ch02-ex2-answer": "def f(t):\n    return (2 * t).as_subclass(T)",
    "ch02-ex1-answer": "class Fake(type(actions.permutation(D4, {g: [0, 1, 2, 3] for g in D4}))):\n"
                       "    def matrix(self, g):\n        return torch.eye(4)\n"
                       "corners = Fake(D4, [[0, 1, 2, 3]] * D4.order)",
}

SABOTAGE = r'''
import glob
for path in glob.glob({subs!r} + "/*/*.ipynb") + glob.glob({course!r} + "/submitted/*/*/*.ipynb") \
        + glob.glob({course!r} + "/autograded/*/*/*.ipynb") + glob.glob({course!r} + "/source/*/*.ipynb"):
    try:
        open(path, "w").write("{{}}")
    except OSError as exc:
        print("sabotage:", exc)
'''

HABITS = r'''%matplotlib inline
import os, sys, warnings, pathlib, shutil, inspect, subprocess, importlib, builtins
import matplotlib.pyplot as plt
import numpy as np
plt.rcParams["figure.dpi"] = 80
os.makedirs("my_outputs", exist_ok=True)
pathlib.Path("my_outputs/notes.txt").write_text("scratch")
with open("my_outputs/log.txt", "w") as fh:
    fh.write("log")
sum = 0  # a variable named sum
for k in range(3):
    sum += k
del sum
np.random.seed(0)
torch.manual_seed(0)
print(sys.version.split()[0], inspect.isfunction(print), len(globals()) > 0, vars() is not None)
value = eval("1 + 1")
exec("other = 2")
warnings.warn("a harmless warning")
print("a note on stderr", file=sys.stderr)
shutil.rmtree("my_outputs")
!echo shell commands work
%time _ = 1
'''
WARNING_F = ("import warnings, sys\n\n\n"
             "def f(t):\n    warnings.warn('f: a harmless warning')\n    print('stderr too', file=sys.stderr)\n"
             "    laplacian = torch.tensor([[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]])\n"
             "    return torch.tanh(F.conv2d(t, laplacian[None, None], padding=1))")


def _gid(cell) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")


def _solution(cell) -> str:
    return re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", "", cell.source)


def _student(released: Path, source: Path, answer, first: str = "") -> nbformat.NotebookNode:
    nb = nbformat.read(released, as_version=4)
    solutions = {_gid(c): _solution(c) for c in nbformat.read(source, as_version=4).cells}
    done = False
    for cell in nb.cells:
        if cell.cell_type == "code" and _gid(cell).endswith("-answer"):
            cell.source = answer(_gid(cell), solutions[_gid(cell)])
            if first and not done:
                cell.source = first + "\n" + cell.source
                done = True
    return nb


def _blocks() -> list[list[list[str]]]:
    """The teaching page's bash blocks, as argument lists."""
    text = GUIDE.read_text()
    return [[shlex.split(line) for line in block.splitlines() if line.strip()]
            for block in re.findall(r"```bash\n(.*?)```", text, re.S)]


def _points(chapters=("02", "06")) -> dict[str, float]:
    points = {}
    for path in sorted((REPO / "book").rglob("*.ipynb")):
        if path.name[:2] in chapters:
            for cell in nbformat.read(path, as_version=4).cells:
                if _gid(cell).endswith("-check"):
                    points[_gid(cell)] = float(cell.metadata["nbgrader"]["points"])
    return points


POINTS = _points()
CH02_POINTS = {g: p for g, p in POINTS.items() if g.startswith("ch02")}


def _write(nb, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)


def _run_guide_command(argv: list[str], paths: dict[str, str], cwd: Path):
    argv = [paths.get(a, a) for a in argv]
    assert argv[:3] == ["python", "-m", "eqlib.assignments"], argv
    extra = []
    if argv[3] == "grade" and "--review" not in argv and "--accept" not in argv:
        extra = ["--timeout", TIMEOUT, "--notebook-timeout", NOTEBOOK_TIMEOUT, "--jobs", "2"]
    return assignments.main(argv[3:] + extra)


@pytest.fixture(scope="module")
def guide(tmp_path_factory):
    root = tmp_path_factory.mktemp("teach")
    course, subs = root / "course", root / "submissions"
    paths = {"course/": str(course), "submissions/": str(subs), "scores.csv": str(root / "scores.csv"),
             "submissions-week1/": str(root / "week1")}
    main_block, weeks_block = _blocks()
    start = time.monotonic()
    setup, release, grade_, review, accept = main_block
    assert _run_guide_command(setup, paths, root) == 0 and _run_guide_command(release, paths, root) == 0
    rel, src = course / "release" / "exercises", course / "source" / "exercises"
    names = sorted(p.name for p in rel.glob("*.ipynb"))
    assert [n[:2] for n in names] == ["02", "06"]
    for name in names:
        _write(_student(rel / name, src / name, lambda g, s: s), subs / "alice", name)
    r2, s2 = rel / CH02, src / CH02
    fill = {"course": str(course), "subs": str(subs)}
    _write(_student(r2, s2, lambda g, s: WRONG[g]), subs / "wrong", CH02)
    _write(_student(r2, s2, lambda g, s: WRONG[g], TAMPER.format(**fill)), subs / "tamper", CH02)
    _write(_student(r2, s2, lambda g, s: LIAR[g]), subs / "liar", CH02)
    honest = {"ch02-ex1-answer", "ch02-ex3-answer"}
    _write(_student(r2, s2, lambda g, s: s if g in honest else WRONG[g], SABOTAGE.format(**fill)),
           subs / "saboteur", CH02)
    habits = _student(r2, s2, lambda g, s: WARNING_F if g == "ch02-ex2-answer" else s, HABITS)
    _write(habits, subs / "habits", "Copy of " + CH02)
    _write(_student(r2, s2, lambda g, s: s + "\nimport os\nos._exit(1)" if g == "ch02-ex5-answer" else s),
           subs / "exits", CH02)
    _write(nbformat.read(r2, as_version=4), subs / "zz_blank", CH02)
    before = {p: p.read_bytes() for p in sorted((REPO / "eqlib").rglob("*")) if p.is_file()}
    assert _run_guide_command(grade_, paths, root) == 0
    seconds = time.monotonic() - start
    scores = {r["student"]: r for r in json.loads((course / "scores.json").read_text())}
    assert _run_guide_command(review, paths, root) == 0
    assert _run_guide_command(accept, paths, root) == 0
    # the multi-week block, as written (its week-1 submissions: alice's chapter 2)
    _write(nbformat.read(subs / "alice" / CH02, as_version=4), root / "week1" / "alice", CH02)
    for argv in weeks_block:
        assert _run_guide_command(argv, paths, root) == 0
    weeks = json.loads((course / "scores.json").read_text())
    feedback = subprocess.run(["nbgrader", "generate_feedback", "exercises"], cwd=course, capture_output=True,
                              text=True, timeout=300)
    after = {p: p.read_bytes() for p in sorted((REPO / "eqlib").rglob("*")) if p.is_file()}
    print(f"front end: {seconds:.0f} s for {len(scores)} students")
    return {"scores": scores, "course": course, "subs": subs, "root": root, "weeks": weeks,
            "feedback": feedback, "package_changed": sorted(str(p) for p in before.keys() | after.keys()
                                                            if before.get(p) != after.get(p))}


EXPECTED = {
    "alice": set(POINTS), "wrong": set(), "tamper": set(), "liar": set(),
    "saboteur": {"ch02-ex1-check", "ch02-ex3-check"}, "habits": set(CH02_POINTS),
    "exits": set(CH02_POINTS) - {"ch02-ex5-check"}, "zz_blank": set(),
}


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_front_end_scores(guide, student):
    r = guide["scores"][student]
    earned = {g for g, v in r["exercises"].items() if v > 0}
    assert earned == EXPECTED[student], (student, r)
    assert r["awarded"] == r["nbgrader_score"] == sum(POINTS[g] for g in EXPECTED[student])
    assert r["max_score"] == sum(POINTS.values())


def test_flags_only_where_a_teacher_should_look(guide):
    flagged = {s for s, r in guide["scores"].items() if r["flags"]}
    # a cheater whose patches break its own Python is flagged too (and still scores 0)
    assert "exits" in flagged and flagged <= {"exits", "tamper"}, {s: guide["scores"][s]["flags"] for s in flagged}
    assert "stopped the Python process" in guide["scores"]["exits"]["flags"][0]["reason"]
    assert "Copy of" in guide["scores"]["habits"]["note"] and "renamed" in guide["scores"]["habits"]["note"]


def test_nothing_outside_the_sandbox_changed(guide):
    assert guide["package_changed"] == []  # no poisoned .pyc, no rewritten checker
    alice = nbformat.read(guide["subs"] / "alice" / CH02, as_version=4)
    assert len(alice.cells) > 10  # the saboteur could not rewrite it
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{guide['course'] / 'gradebook.db'}", "layerwise-equivariance") as gb:
        extra = [g.extra_credit for s in gb.students for nb in gb.find_submission("exercises", s.id).notebooks
                 for g in nb.grades]
    assert not any(extra)


def test_review_accept_weeks_and_feedback(guide, capsys):
    course = guide["course"]
    text = assignments.review(course, "alice")
    assert "ch02-ex1-check: 2/2" in text and "ch06-ex1-check: 2/2" in text
    assert json.loads((course / "reports" / "exercises" / "accepted.json").read_text()) == ["alice"]
    assert "NameError" in assignments.review(course, "exits")
    week1 = {r["student"]: r for r in guide["weeks"]}
    assert week1["alice"]["awarded"] == sum(CH02_POINTS.values())
    assert guide["feedback"].returncode == 0, guide["feedback"].stderr[-2000:]
    assert list((course / "feedback" / "alice" / "exercises").glob("*.html"))


def test_wrong_answers_say_why(guide):
    text = assignments.review(guide["course"], "liar")
    assert "refused" in text and "Liar" in text


def test_csv_has_every_student(guide):
    with open(guide["root"] / "scores.csv") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert set(rows) == set(EXPECTED)


@pytest.fixture(scope="module")
def plain_nbgrader(tmp_path_factory):
    """The cheaters again, through `nbgrader autograde` itself (a new process, no front end)."""
    root = tmp_path_factory.mktemp("plain")
    course, subs = root / "course", root / "subs"
    assignments.setup(course, ["02"])
    assignments.release(course)
    rel, src = course / "release" / "exercises" / CH02, course / "source" / "exercises" / CH02
    fill = {"course": str(course), "subs": str(subs)}
    cheat = _student(rel, src, lambda g, s: LIAR[g], TAMPER.format(**fill))
    _write(cheat, course / "submitted" / "cheater" / "exercises", CH02)
    _write(_student(rel, src, lambda g, s: s + "\nimport os\nos._exit(1)" if g == "ch02-ex5-answer" else s),
           course / "submitted" / "exits" / "exercises", CH02)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", "exercises", "--force",
                           "--SandboxedExecute.timeout=60", "--SandboxedExecute.notebook_timeout=400"],
                          cwd=course, capture_output=True, text=True, env=env, timeout=900)
    print(f"nbgrader autograde: {time.monotonic() - start:.0f} s")
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "layerwise-equivariance") as gb:
        for student in ("cheater", "exits"):
            nb = gb.find_submission_notebook("02_groups_and_actions", "exercises", student)
            scores[student] = {g.name: float(g.score or 0) for g in nb.grades if g.name.endswith("-check")}
    return {"proc": proc, "scores": scores}


def test_plain_nbgrader_gives_the_same_scores(plain_nbgrader):
    assert plain_nbgrader["proc"].returncode == 0, plain_nbgrader["proc"].stderr[-3000:]
    scores = plain_nbgrader["scores"]
    assert sum(scores["cheater"].values()) == 0, scores["cheater"]
    assert {g for g, v in scores["exits"].items() if v > 0} == EXPECTED["exits"], scores["exits"]


@pytest.mark.parametrize("bad", ["0", "-5", "abc"])
def test_timeout_must_be_positive(bad, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        assignments.main(["grade", str(tmp_path), "--course", str(tmp_path), "--timeout", bad])
    assert exit_.value.code == 2 and "--timeout" in capsys.readouterr().err


def test_jobs_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        assignments.main(["grade", str(tmp_path), "--course", str(tmp_path), "--jobs", "0"])
    assert exit_.value.code == 2 and "--jobs" in capsys.readouterr().err


def teardown_module(module):
    core.close_references()
