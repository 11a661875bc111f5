"""The teacher's round trip with real nbgrader on chapters 2 and 6 (README, *Teach with it*).

The guide's commands, read from the README, run as written (``setup``, ``release``,
``grade``; paths put in a temporary folder, short time limits added) on the book's
chapters as they are, with simulated students built from the released notebooks by
grade_id (so prose changes do not matter):

Expected scores are computed from the instructor's check cells (points by grade_id), so
they follow the chapters as exercises are added:

| student | submission | awarded |
|---|---|---|
| a_correct | the instructor's solutions | all points |
| b_wrong | wrong answers | 0 |
| c_tampered | wrong answers, check cells replaced by ``pass``, points set to 1000, a check cell deleted, checkers overwritten, ``set_custom_exc``, ``sys.modules`` and the name ``ch02`` shadowed | 0, flagged |
| d_looping | correct, but ``while True: pass`` in ch02-ex1 (and a check cell deleted) | all but ch02-ex1 |
| e_crash | correct, but ``raise SystemExit`` in ch02-ex2, ``os._exit(1)`` in ch06-ex2 | all but those two |
| f_files | rewrites an installed course file | 0, flagged; grading stops |
| g_after | correct (never graded: grading stopped) | - |
"""
from __future__ import annotations

import csv
import json
import re
import shlex
import time
from pathlib import Path

import nbformat
import pytest

from eqlib import assignments

REPO = Path(__file__).resolve().parents[2]
CHAPTERS = ["02", "06"]
TIMEOUT, NOTEBOOK_TIMEOUT = 30, 300  # seconds per cell / per notebook: short, for CI

WRONG = {  # answers that run but are wrong, by grade_id
    "ch02-ex1-answer": "corners = actions.permutation(D4, {g: [0, 1, 2, 3] for g in D4})",
    "ch02-ex2-answer": "def f(t):\n    return 2 * t",
    "ch02-ex3-answer": "orbit3, stab3 = torch.eye(3), torch.eye(3)[None]",
    "ch02-ex5-answer": "n_involutions = 20",
    "ch06-ex1-answer": "ex_net = MLP([2, 3, 1], 'tanh', seed=0)\nperm_ex1, signs_ex1 = [0, 1, 2], [1, 1, 1]",
    "ch06-ex2-answer": "def match_rows(A, B):\n    return torch.arange(len(A)), torch.ones(len(A))",
    "ch06-ex4-answer": "cloned = small\nk1_clone = torch.eye(2)",
}
CHEATS = {  # prepended to the first answer cell of each notebook
    "02": "import sys, types\nimport eqlib.exercises.ch02 as m\n"
          "m.check_corner_representation = lambda *a, **k: None\n"
          "m.check_d4_equivariant_map = lambda *a, **k: None\n"
          "sys.modules['eqlib.exercises.ch02'] = m\n"
          "ch02 = types.SimpleNamespace(check_d4_equivariant_map=lambda *a: None)\n"
          "get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)\n",
    "06": "import sys, types\nfake = types.ModuleType('eqlib.exercises.ch06')\n"
          "fake.check_transported_weight = fake.check_latent_action = lambda *a, **k: None\n"
          "fake.check_row_matcher = fake.check_clone_lift = lambda *a, **k: None\n"
          "sys.modules['eqlib.exercises.ch06'] = fake\n"
          "get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)\n",
}


def _gid(cell) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")


def _solution(cell) -> str:
    return re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", "", cell.source)


def _student(released: Path, source: Path, answer) -> nbformat.NotebookNode:
    nb = nbformat.read(released, as_version=4)
    solutions = {_gid(c): _solution(c) for c in nbformat.read(source, as_version=4).cells}
    for cell in nb.cells:
        if cell.cell_type == "code" and _gid(cell).endswith("-answer"):
            cell.source = answer(_gid(cell), solutions[_gid(cell)])
    return nb


def _guide() -> list[list[str]]:
    """The `python -m eqlib.assignments` commands of the README's *Teach with it*, in order."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("**Teach with it.**"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = [shlex.split(line.split("#")[0]) for line in block.splitlines()]
    return [c[3:] for c in commands if c[:3] == ["python", "-m", "eqlib.assignments"]]


def _write(nb, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    root = tmp_path_factory.mktemp("teach")
    course, submissions = root / "course", root / "submissions"
    start = time.monotonic()
    paths = {"course/": str(course), "submissions/": str(submissions), "scores.csv": str(root / "scores.csv")}
    setup, release_, grade = [[paths.get(a, a) for a in c] for c in _guide()]
    assert [setup[0], release_[0], grade[0]] == ["setup", "release", "grade"]
    assert setup[setup.index("--chapters") + 1:] == CHAPTERS
    assert assignments.main(setup) == 0 and assignments.main(release_) == 0
    release, source = course / "release" / "exercises", course / "source" / "exercises"
    names = sorted(p.name for p in release.glob("*.ipynb"))
    assert [n[:2] for n in names] == CHAPTERS
    for name in names:
        rel, src = release / name, source / name
        _write(_student(rel, src, lambda g, s: s), submissions / "a_correct", name)
        _write(_student(rel, src, lambda g, s: WRONG[g]), submissions / "b_wrong", name)
        tampered = _student(rel, src, lambda g, s: WRONG[g])
        first = next(c for c in tampered.cells if _gid(c).endswith("-answer"))
        first.source = CHEATS[name[:2]] + first.source
        checks = [c for c in tampered.cells if _gid(c).endswith("-check")]
        for c in checks:
            c.source = "pass"
            c.metadata["nbgrader"]["points"] = 1000
        tampered.cells.remove(checks[-1])
        _write(tampered, submissions / "c_tampered", name)
        loop = "ch02-ex1-answer"
        looping = _student(rel, src, lambda g, s: "while True:\n    pass" if g == loop else s)
        looping.cells = [c for c in looping.cells if _gid(c) != "ch06-ex1-check"]  # put back, run: 2 points
        _write(looping, submissions / "d_looping", name)
        crash = {"ch02-ex2-answer": "raise SystemExit(1)", "ch06-ex2-answer": "import os\nos._exit(1)"}
        _write(_student(rel, src, lambda g, s: crash.get(g, s)), submissions / "e_crash", name)
    installed = source / names[0]
    rewrite = f"from pathlib import Path\nPath({str(installed)!r}).write_text('{{}}')\n"
    _write(_student(release / names[0], source / names[0],
                    lambda g, s: rewrite + s if g == "ch02-ex1-answer" else s), submissions / "f_files", names[0])
    _write(_student(release / names[0], source / names[0], lambda g, s: s), submissions / "g_after", names[0])
    code = assignments.main(grade + ["--json", str(root / "scores.json"), "--timeout", str(TIMEOUT),
                                     "--notebook-timeout", str(NOTEBOOK_TIMEOUT)])
    seconds = time.monotonic() - start
    print(f"nbgrader round trip: {seconds:.0f} s")
    scores = {r["student"]: r for r in json.loads((root / "scores.json").read_text())}
    return {"code": code, "scores": scores, "csv": root / "scores.csv", "release": release, "course": course,
            "source": source, "seconds": seconds}


def _points() -> dict[str, float]:
    """Points of every check cell of the instructor's chapters, by grade_id."""
    points = {}
    for path in sorted((REPO / "book").rglob("*.ipynb")):
        if path.name[:2] in CHAPTERS:
            for cell in nbformat.read(path, as_version=4).cells:
                if _gid(cell).endswith("-check"):
                    points[_gid(cell)] = float(cell.metadata["nbgrader"]["points"])
    return points


POINTS = _points()
TOTAL = sum(POINTS.values())
LOST = {"a_correct": [], "b_wrong": list(POINTS), "c_tampered": list(POINTS),
        "d_looping": ["ch02-ex1-check"], "e_crash": ["ch02-ex2-check", "ch06-ex2-check"]}


@pytest.mark.parametrize("student", sorted(LOST))
def test_scores(round_trip, student):
    r = round_trip["scores"][student]
    expected = TOTAL - sum(POINTS[g] for g in LOST[student])
    nbgrader_expected = 0 if student == "c_tampered" else expected
    assert (r["nbgrader_score"], r["max_score"], r["awarded"]) == (nbgrader_expected, TOTAL, expected), r
    assert bool(r["flags"]) == (student == "c_tampered"), r["flags"]


def test_tampering_is_flagged_with_cell_and_reason(round_trip):
    flags = round_trip["scores"]["c_tampered"]["flags"]
    reasons = " | ".join(f"{f['notebook']} {f['grade_id']}: {f['reason']}" for f in flags)
    for expected in ("check_corner_representation", "sys.modules", "set_custom_exc", "rebinds 'ch02'"):
        assert expected in reasons, reasons
    assert all(f["grade_id"].endswith("-answer") for f in flags), reasons


def test_hidden_tests_catch_patched_checkers(round_trip):
    """The tampered student's visible checks ran patched no-op checkers, so the ExerciseError
    (reported although set_custom_exc hid the traceback) came from the hidden tests."""
    for path in sorted((round_trip["course"] / "autograded" / "c_tampered" / "exercises").glob("*.ipynb")):
        checks = [c for c in nbformat.read(path, as_version=4).cells if _gid(c).endswith("-check")]
        n_checks = sum(g.startswith(f"ch{path.name[:2]}-") for g in POINTS)
        assert len(checks) == n_checks, path.name  # the deleted check cell is back
        for cell in checks:
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert [e.ename for e in errors] == ["ExerciseError"], (path.name, _gid(cell), errors)


def test_installed_files_changed_stops_grading(round_trip):
    assert round_trip["code"] == 3
    r = round_trip["scores"]["f_files"]
    assert r["awarded"] == 0 and any("changed installed course files" in f["reason"] for f in r["flags"])
    assert "g_after" not in round_trip["scores"]


def test_csv_has_every_graded_student(round_trip):
    with open(round_trip["csv"]) as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert set(rows) == set(round_trip["scores"])
    assert float(rows["a_correct"]["awarded"]) == TOTAL and float(rows["c_tampered"]["awarded"]) == 0


@pytest.mark.parametrize("bad", ["0", "-5", "abc"])
def test_timeout_must_be_positive(bad, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        assignments.main(["grade", str(tmp_path), "--course", str(tmp_path), "--timeout", bad])
    assert exit_.value.code == 2 and "--timeout" in capsys.readouterr().err


def _run_guarded(sources: list[str], **limits) -> list[list[str]]:
    """Run cells with GuardedExecute; return the error names of each cell."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    executor = assignments.GuardedExecute(**limits)
    nb, _ = executor.preprocess(nb, {"metadata": {"path": str(REPO)}})
    return [[o.ename for o in c.outputs if o.output_type == "error"] for c in nb.cells]


def test_guarded_execute_survives_a_dead_kernel():
    """The cell that kills the kernel errs; the notebook runs again without it, so later cells count."""
    errors = _run_guarded(["x = 1", "import os\nos._exit(1)", "assert x == 1", "raise SystemExit(1)",
                           "assert x == 1"], timeout=20, notebook_timeout=60)
    assert errors[0] == [] and errors[1] == ["RuntimeError"] and errors[2] == [] and errors[4] == []
    assert errors[3] == ["SystemExit"]


def test_guarded_execute_total_time_limit():
    """A cell gets at most the time left (here < its own 20 s); cells left after the limit err."""
    start = time.monotonic()
    errors = _run_guarded(["import time\ntime.sleep(1)", *["time.sleep(30)"] * 3], timeout=20, notebook_timeout=6)
    assert time.monotonic() - start < 20  # kernel start, 6 s of cells and one interrupt
    assert errors[0] == [] and "CellTimeoutError" in errors[1] and errors[3] == ["NotebookTimeLimit"], errors
