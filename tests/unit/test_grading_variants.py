"""Per-student variants in grading (issue #22 item 4; book/teaching): the course's keys,
the release writing the course key, each student run and scored under their own variant
through real nbgrader and through the front end, and function answers called on modules.

The chapters get their ``given()`` from other work; until then the end-to-end runs use a
small instructor notebook of their own (a variant cell, a cell that reports what the
sandbox sees, and two function answers checked by chapter 2's and chapter 11's checkers),
and the scoring under a variant is tested in-process with a tiny checker module.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest
import torch
from torch import nn

from eqlib import assignments
from eqlib.assignments import codec, core, runner
from eqlib.exercises import variants
from eqlib.models import MLP

REPO = Path(__file__).resolve().parents[2]
NAME = "98_variants.ipynb"

VARIANT_CELL = '''from eqlib.exercises import variants

STUDENT_ID = ""  # a graded copy: your id as your teacher gave it; the book: ""
COURSE = ""  # a released notebook carries your course's key here
variants.use_student(STUDENT_ID, course=COURSE)'''

# what the sandbox sees: its variant, and where (if anywhere) the keys can be read
SPY = '''import os, pathlib
_v = variants.current()
print("variant:", os.environ.get("EQLIB_STUDENT"), _v and _v.student, _v and _v.course)
_keys = {"inputs": "%s" + "%s", "course": "%s" + "%s"}
_seen = {k: [] for k in _keys}
for _name, _key in _keys.items():
    if any(_key in v for v in os.environ.values()):
        _seen[_name].append("env")
    for _root in {os.getcwd(), os.environ.get("HOME", "."), "/tmp"}:
        for _p in pathlib.Path(_root).rglob("*"):
            try:
                if _p.is_file() and _key.encode() in _p.read_bytes():
                    _seen[_name].append(str(_p))
            except OSError:
                pass
print("keys seen:", _seen)'''

F_SOLUTION = '''### BEGIN SOLUTION
def f(t):
    laplacian = torch.tensor([[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]])
    return torch.tanh(F.conv2d(t, laplacian[None, None], padding=1))
### END SOLUTION'''
PENALTY_SOLUTION = '''def equivariance_penalty(f, x):
    ### BEGIN SOLUTION
    return ((f(mirror_images(x)) - mirror_images(f(x))) ** 2).mean()
    ### END SOLUTION'''


def _meta(gid: str, answer: bool) -> dict:
    if answer:
        return {"nbgrader": {"grade": False, "solution": True, "locked": False, "grade_id": gid,
                             "schema_version": 3, "task": False}}
    return {"nbgrader": {"grade": True, "solution": False, "locked": True, "grade_id": gid, "points": 1,
                         "schema_version": 3, "task": False}}


def _check(chapter: str, function: str, arg: str) -> str:
    return (f"### BEGIN HIDDEN TESTS\nfrom eqlib.exercises import fresh\n\n"
            f'fresh("{chapter}").{function}({arg})\n### END HIDDEN TESTS')


def _instructor_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Variants\n\n## Exercises"),
        code(VARIANT_CELL, metadata={"tags": ["exercise-variant"]}),
        code("import torch\nimport torch.nn.functional as F\nfrom eqlib.images import mirror_images"),
        code(F_SOLUTION, metadata=_meta("v-ex1-answer", True)),
        code(_check("ch02", "check_d4_equivariant_map", "f"), metadata=_meta("v-ex1-check", False)),
        code(PENALTY_SOLUTION, metadata=_meta("v-ex2-answer", True)),
        code(_check("ch11", "check_equivariance_penalty", "equivariance_penalty"),
             metadata=_meta("v-ex2-check", False)),
    ]
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / NAME)
    return folder / NAME


def _submission(course: Path, student: str, keys: dict) -> nbformat.NotebookNode:
    """The released notebook with the solutions, and the spy cell after the variant cell."""
    nb = nbformat.read(course / "release" / "exercises" / NAME, as_version=4)
    src = nbformat.read(course / "source" / "exercises" / NAME, as_version=4)
    for cell, solved in zip(nb.cells, src.cells):
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            cell.source = solved.source.replace("### BEGIN SOLUTION\n", "").replace("### END SOLUTION", "")
    spy = SPY % (keys["inputs"][:16], keys["inputs"][16:], keys["course"][:16], keys["course"][16:])
    nb.cells.insert(2, nbformat.v4.new_code_cell(spy))
    return nb


def _printed(notebook: Path) -> str:
    nb = nbformat.read(notebook, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


# ---------------------------------------------------------------------------------------- keys

def test_keys_are_drawn_once_private_and_validated(tmp_path):
    course = tmp_path / "course"
    assert core.course_keys(course) is None  # a course without keys: the book's numbers
    keys = core.course_keys(course, create=True)
    path = course / ".eqlib" / "keys.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert set(keys) == {"course", "inputs"} and keys["course"] != keys["inputs"]
    assert all(len(k) == 32 and int(k, 16) >= 0 for k in keys.values())
    assert core.course_keys(course, create=True) == keys == core.course_keys(course)  # reused
    for bad in ("not json", "[]", '{"course": "abc", "inputs": "def"}', json.dumps({"course": keys["course"]})):
        path.write_text(bad)
        with pytest.raises(ValueError, match="keys.json"):
            core.course_keys(course)


def test_student_ids_are_validated_and_program_keys_differ():
    keys = {"course": "0" * 32, "inputs": "1" * 32}
    ada, bob = core.student_variant("ada", keys), core.student_variant("bob", keys)
    assert ada.inputs == "1" * 32 and core.student_variant("ada", None) is None
    with pytest.raises(ValueError, match="'bad id!'.*not valid"):
        core.student_variant("bad id!", keys)
    ref = types.SimpleNamespace(id="r")
    steps = [{"code": "x = 1"}, {"record": "g"}]
    assert len({core.program_key(steps, ref, v) for v in (None, ada, bob)}) == 3


# ---------------------------------------------------------------------------------------- module inputs

@pytest.mark.parametrize("module", [nn.Conv2d(3, 3, 3, padding=1), nn.Conv2d(3, 3, (3, 1), padding=(1, 0)),
                                    nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.BatchNorm1d(3)),
                                    MLP([4, 3, 2], "tanh", seed=1)], ids=["conv", "conv31", "seq", "mlp"])
def test_module_inputs_cross_with_their_structure(module):
    tree, arrays = codec.encode({"args": [module]}, structure=True)
    back = codec.decode(tree, arrays, structure=True)["args"][0]
    assert codec.digest(tree, arrays) == codec.digest(*codec.encode({"args": [back]}, structure=True))
    x = torch.randn(5, 3, 8, 8) if isinstance(module, nn.Conv2d) else torch.randn(5, 4)
    module.eval(), back.eval()
    assert type(back) is type(module) and torch.equal(back(x), module(x))
    with pytest.raises(codec.Refused):  # the grader never rebuilds a module from a student's structure
        codec.decode(*codec.encode(nn.Linear(2, 2), structure=True))


def test_function_answers_on_modules_are_recorded_and_replayed(tmp_path):
    """ch11-ex2 hands a student's function a ``Conv2d``, ch11-ex4 an ``MLP``: the inputs
    cross to the sandbox with their structure, several calls in one file, and the
    outputs come back to the checker."""
    def penalty(f, x):
        return (f(x) ** 2).mean()

    rec = runner._Recorder(penalty)
    conv, net = nn.Conv2d(3, 3, 3, padding=1), MLP([4, 3, 4], "tanh", seed=3)
    x, y = torch.randn(2, 3, 8, 8), torch.randn(5, 4)
    with torch.no_grad():
        want = [rec(conv, x), rec(net, y), rec(nn.Conv2d(3, 3, (3, 1), padding=(1, 0)), x)]
    assert rec.refused is None and len(rec.calls) == 3
    arrays = {a: v for _, _, arr in rec.calls for a, v in arr.items()}
    codec.write_doc({"calls": [[k, tree] for k, tree, _ in rec.calls]}, arrays, tmp_path / "inputs", "g.0.0")
    runner._record_calls(penalty, tmp_path / "inputs" / "g.0.0", tmp_path / "rec", "g.0.0")
    doc, out = codec.read_doc(tmp_path / "rec", "g.0.0")
    assert doc["ok"] and all("value" in c for _, c in doc["calls"]), doc
    replay = runner._Replay(doc, out, [])
    assert torch.allclose(replay(conv, x), want[0]) and torch.allclose(replay(net, y), want[1])


# ---------------------------------------------------------------------------------------- scoring

CHECKER = '''import torch
from eqlib.exercises import variants


def require(condition, message):
    if not condition:
        raise AssertionError(message)


def passed(message):
    pass


def given():
    gen = variants.parameter_generator("ch98-ex1")
    return {"n": 3 if gen is None else int(torch.randint(4, 10 ** 6, (1,), generator=gen))}


def check_number(n):
    require(n == given()["n"], "not this copy's number")


def check_double(f):
    x = torch.randn(4, generator=variants.input_generator("ch98-ex2", book=0))
    require(torch.equal(f(x), 2 * x), "not twice the input")
'''


def test_each_student_is_scored_under_their_own_variant(tmp_path, monkeypatch):
    """The reference's side in-process: a tiny checker module whose truth depends on the variant."""
    (tmp_path / "ex").mkdir()
    (tmp_path / "ex" / "ch98.py").write_text(CHECKER)
    monkeypatch.setattr(runner, "EXERCISES", tmp_path / "ex")
    shell = types.SimpleNamespace(user_ns={"n": 3, "f": lambda x: 2 * x})
    calls = {"g1": {"gid": "g1", "chapter": "ch98", "function": "check_number", "keys": ["0"],
                    "exprs": {"0": "n"}, "answer_args": ["0"]},
             "g2": {"gid": "g2", "chapter": "ch98", "function": "check_double", "keys": ["0"],
                    "exprs": {"0": "f"}, "answer_args": ["0"]}}
    state, specs = {}, {}
    for gid, call in calls.items():
        state[gid], report = runner._probe(shell, [call], tmp_path / "ref")
        assert report["ok"], report
        specs[gid] = report["items"]
    keys = {"course": "ab" * 16, "inputs": "cd" * 16}
    ada, bob = core.student_variant("ada", keys), core.student_variant("bob", keys)

    def graded(v, n, f, name):
        work = tmp_path / name
        assert runner._probe_variant(state, work / "inputs", v)["problems"] == []
        rec = work / "rec"
        codec.dump(n, rec, specs["g1"][0]["name"])
        runner._record_calls(f, work / specs["g2"][0]["inputs"], rec, specs["g2"][0]["name"])
        scores = runner._score(state, calls, rec, shell, v)["scores"]
        return {g: s["ok"] for g, s in scores.items()}, (work / "inputs").rglob("*.npz")

    with variants.variant(ada):
        n_ada = runner.load_checkers("ch98").given()["n"]
    with variants.variant(bob):
        n_bob = runner.load_checkers("ch98").given()["n"]
    assert len({3, n_ada, n_bob}) == 3
    double = lambda x: 2 * x  # noqa: E731
    assert graded(ada, n_ada, double, "ada")[0] == {"g1": True, "g2": True}
    assert graded(ada, 3, double, "ada-book")[0] == {"g1": False, "g2": True}  # the book's number
    assert graded(ada, n_bob, double, "ada-bob")[0] == {"g1": False, "g2": True}  # a classmate's number
    assert graded(None, 3, double, "book")[0] == {"g1": True, "g2": True}
    inputs = {name: sorted(p.read_bytes() for p in (tmp_path / name / "inputs").rglob("*.npz"))
              for name in ("ada", "book")}
    assert inputs["ada"] != inputs["book"]  # a student's function is tested on inputs of their own
    # recorded on the book's inputs, the function fails a student's check
    scores = runner._score(state, calls, tmp_path / "book" / "rec", shell, ada)["scores"]
    assert not scores["g2"]["ok"] and "not run on this input" in scores["g2"]["message"]


# ---------------------------------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    _instructor_notebook(root / "book")
    course = root / "course"
    assignments.setup(course, ["98"], book=root / "book")
    keys = json.loads((course / ".eqlib" / "keys.json").read_text())
    assignments.setup(course, ["98"], book=root / "book")  # again: the keys are kept
    assert json.loads((course / ".eqlib" / "keys.json").read_text()) == keys
    assignments.release(course)
    subs = root / "submissions"
    for student in ("ada", "bob", "bad#id"):
        (subs / student).mkdir(parents=True)
        nbformat.write(_submission(course, student, keys), subs / student / NAME)
    start = core._CACHE.copy()
    results = {r.student: r for r in assignments.grade(subs, course, jobs=2, timeout=60, notebook_timeout=300)}
    cached = {k: v for k, v in core._CACHE.items() if k not in start}
    # plain nbgrader, a new process and the course's nbgrader_config.py (ada and bob again)
    for student in ("ada", "bob"):
        folder = course / "submitted" / student / "exercises"
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(_submission(course, student, keys), folder / NAME)
    plain = course / "autograded-plain"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", "exercises", "--force",
                           "--SandboxedExecute.timeout=60", "--SandboxedExecute.notebook_timeout=300",
                           "--CourseDirectory.autograded_directory=autograded-plain"],
                          cwd=course, capture_output=True, text=True, env=env, timeout=900)
    return {"course": course, "keys": keys, "results": results, "cached": cached, "proc": proc, "plain": plain}


def test_the_release_writes_the_course_key(course):
    keys = course["keys"]
    nb = nbformat.read(course["course"] / "release" / "exercises" / NAME, as_version=4)
    cell = nb.cells[1]
    assert f'COURSE = "{keys["course"]}"  # a released notebook carries' in cell.source
    text = (course["course"] / "release" / "exercises" / NAME).read_text()
    assert keys["inputs"] not in text and text.count(keys["course"]) == 1
    source = (course["course"] / "source" / "exercises" / NAME).read_text()
    assert keys["course"] not in source
    config = (course["course"] / "nbgrader_config.py").read_text()
    assert "WriteCourseKey" in config


def test_plain_nbgrader_release_writes_the_course_key(tmp_path):
    _instructor_notebook(tmp_path / "book")
    course = tmp_path / "course"
    assignments.setup(course, ["98"], book=tmp_path / "book")
    keys = core.course_keys(course)
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "exercises", "--force"],
                          cwd=course, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    cell = nbformat.read(course / "release" / "exercises" / NAME, as_version=4).cells[1]
    assert f'COURSE = "{keys["course"]}"' in cell.source and keys["inputs"] not in cell.source
    (course / ".eqlib" / "keys.json").write_text("{}")  # a damaged keys file stops the release
    with pytest.raises(RuntimeError, match="keys.json"):
        assignments.release(course)


@pytest.mark.parametrize("path", ["front end", "nbgrader"])
def test_each_student_runs_under_their_id_and_never_sees_the_input_key(course, path):
    keys = course["keys"]
    if path == "nbgrader":
        assert course["proc"].returncode == 0, course["proc"].stderr[-3000:]
    for student in ("ada", "bob"):
        folder = course["plain"] if path == "nbgrader" else course["course"] / "autograded"
        printed = _printed(folder / student / "exercises" / NAME)
        assert f"variant: {student} {student} {keys['course']}" in printed, printed
        assert "keys seen: {'inputs': [], 'course': ['env'" in printed, printed  # the course key: env only
        assert keys["inputs"] not in printed


def test_both_paths_score_every_student_in_full_and_report_bad_ids(course):
    results = course["results"]
    for student in ("ada", "bob"):
        assert results[student].awarded == results[student].max_score == 2, results[student]
        assert not results[student].flags, results[student].flags
    bad = results["bad#id"]
    assert bad.awarded == 0 and "not graded" in bad.flags[0].reason and "bad#id" in bad.flags[0].reason
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course['course'] / 'gradebook.db'}", "layerwise-equivariance") as gb:
        for student in ("ada", "bob"):
            nb = gb.find_submission_notebook(NAME[:-6], "exercises", student)
            assert sum(float(g.score or 0) for g in nb.grades) == 2


def test_the_result_cache_is_per_student(course):
    # the same program for ada and bob: two sandboxed runs, two results
    cached = course["cached"]
    assert len(cached) == 2 and len({id(v) for v in cached.values()}) == 2


def test_book_answers_score_zero_on_another_students_copy(tmp_path):
    """Chapter 2's literal book values fail under a student's variant; the instructor's
    solution code scores full marks (needs the chapter's ``given()``)."""
    from eqlib.exercises import ch02

    if not hasattr(ch02, "given"):
        pytest.skip("eqlib.exercises.ch02 has no given() yet (chapter variants not merged)")
    book = REPO / "book"
    course = tmp_path / "course"
    assignments.setup(course, ["02"], book=book)
    assignments.release(course)
    keys = core.course_keys(course)
    name = next((course / "release" / "exercises").glob("02_*.ipynb")).name
    src = nbformat.read(course / "source" / "exercises" / name, as_version=4)
    solutions = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in src.cells}
    with variants.variant(None):
        book_given = ch02.given()
    subs = tmp_path / "subs"
    for student, literal in (("ada", False), ("bob", True)):
        nb = nbformat.read(course / "release" / "exercises" / name, as_version=4)
        for cell in nb.cells:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            if gid.endswith("-answer"):
                cell.source = solutions[gid].replace("### BEGIN SOLUTION\n", "").replace("### END SOLUTION", "")
            if literal and "exercise-variant" in cell.get("metadata", {}).get("tags", []):
                cell.source += f"\ngiven = {book_given!r}  # the book's values, typed in"
        (subs / student).mkdir(parents=True)
        nbformat.write(nb, subs / student / name)
    results = {r.student: r for r in assignments.grade(subs, course, jobs=2)}
    assert results["ada"].awarded == results["ada"].max_score
    with variants.variant(core.student_variant("bob", keys)):
        bob_given = ch02.given()
    changed = {k for k in book_given if str(book_given[k]) != str(bob_given[k])}
    assert changed and results["bob"].awarded < results["bob"].max_score, (changed, results["bob"])
    # exercise by exercise: the book's values score 0 where the numbers differ (ex3: the
    # point, ex5: the element h) and full marks on the exercises without numbers
    assert set(changed) == {"b3_point", "b3_element"}, changed
    bob, ada = results["bob"].exercises, results["ada"].exercises
    checks = [g for g in bob if g.endswith("-check")]  # the autograded cells
    variant_checks = [g for g in checks if g.startswith(("ch02-ex3", "ch02-ex5"))]
    assert len(variant_checks) == 2 and all(bob[g] == 0 for g in variant_checks), bob
    assert all(bob[g] == ada[g] > 0 for g in checks if g not in variant_checks), (bob, ada)


def test_the_benchmark_on_the_teaching_page_runs(capsys):
    """The page's benchmark command is the script's (its arguments parse); the script runs,
    at the smallest sizes on one chapter, and prints the fixed and per-student costs."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bench_grading
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    line = re.search(r"python benchmarks/bench_grading\.py[^`\n]*", (REPO / "book" / "teaching.md").read_text())
    assert line, "the teaching page names the benchmark command"
    args = bench_grading.parser().parse_args(shlex.split(line.group(0))[2:])
    assert args.students == [4, 10] and args.chapters == ["02", "06"]
    bench_grading.main(["--students", "1", "2", "--chapters", "02", "--jobs", "2"])
    out = capsys.readouterr().out
    assert re.search(r"fixed cost -?\d+ s, -?[\d.]+ s per student: 60 students x 1 chapters in about", out), out
    assert float(re.search(r"\('s000', ([\d.]+)\)", out).group(1)) > 0  # the instructor's solutions


def teardown_module(module):
    core.close_references()


HELPER_EX3 = """from eqlib.exercises.ch02 import _signed_permutation_matrices  # the checker's helper
B3_matrices = _signed_permutation_matrices(3)
x3 = torch.tensor(given["b3_point"], dtype=torch.float32)
orbit3 = torch.unique(B3_matrices @ x3, dim=0)
stab3 = B3_matrices[(B3_matrices @ x3 == x3).all(1)]
"""

BRUTE_EX5 = """from eqlib.exercises import ch02  # try counts against the checker until one passes
for n_involutions in range(49):
    try:
        ch02.check_b3_involutions(n_involutions)
        break
    except AssertionError:
        pass
"""


def test_checkers_private_helpers_and_brute_force_earn_nothing(tmp_path):
    """While graded, a submission sees a stand-in of eqlib.exercises: given() and checkers
    that do nothing. Importing a checker's private helper fails (0 for that exercise) and
    trying answers against a checker finds nothing; an honest classmate keeps full marks."""
    book = REPO / "book"
    course = tmp_path / "course"
    assignments.setup(course, ["02"], book=book)
    assignments.release(course)
    name = next((course / "release" / "exercises").glob("02_*.ipynb")).name
    src = nbformat.read(course / "source" / "exercises" / name, as_version=4)
    solutions = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in src.cells}
    subs = tmp_path / "subs"
    for student in ("honest", "cheat"):
        nb = nbformat.read(course / "release" / "exercises" / name, as_version=4)
        for cell in nb.cells:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            if gid.endswith("-answer"):
                cell.source = solutions[gid].replace("### BEGIN SOLUTION\n", "").replace("### END SOLUTION", "")
                if student == "cheat" and gid == "ch02-ex3-answer":
                    cell.source = HELPER_EX3
                if student == "cheat" and gid == "ch02-ex5-answer":
                    cell.source = BRUTE_EX5
        (subs / student).mkdir(parents=True)
        nbformat.write(nb, subs / student / name)
    results = {r.student: r for r in assignments.grade(subs, course, jobs=2)}
    assert results["honest"].awarded == results["honest"].max_score
    cheat = results["cheat"].exercises
    assert cheat["ch02-ex3-check"] == 0 and cheat["ch02-ex5-check"] == 0, cheat
    assert cheat["ch02-ex1-check"] > 0 and cheat["ch02-ex2-check"] > 0, cheat



@pytest.mark.parametrize("how", ["bwrap", "unshare"])
def test_the_sandbox_sees_the_standin_at_the_package_path(tmp_path, how):
    """Both sandbox methods show the stand-in in place of eqlib/exercises: the same import
    path, given() with the variant's numbers, no private helper, checkers that do nothing."""
    from eqlib.assignments import sandbox, standin
    from eqlib.exercises import ch02

    if how == "bwrap" and not sandbox._works(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"]):
        pytest.skip("bubblewrap does not work here")
    if how == "unshare" and not sandbox._works(["unshare", "--user", "--map-root-user", "--mount", "true"]):
        pytest.skip("user namespaces do not work here")
    v = variants.Variant("ada", "0123456789abcdef")
    standin.write(tmp_path / "exercises", v)
    code = ("import eqlib.exercises.ch02 as c, pathlib; pathlib.Path('out.txt').write_text(repr(("
            "c.__file__, hasattr(c, '_signed_permutation_matrices'), c.given(), c.check_b3_involutions(3))))")
    res = sandbox.run(tmp_path, [sys.executable, "-c", code], [], sandbox.Limits(wall_s=120, cpu_s=120), how, {},
                      {standin.EXERCISES: tmp_path / "exercises"})
    assert res.returncode == 0, res.stderr
    path, helper, given, verdict = eval((tmp_path / "out.txt").read_text())
    with variants.variant(v):
        assert given == ch02.given()
    assert path == str(standin.EXERCISES / "ch02.py") and helper is False and verdict is None


def test_standins_written_in_parallel_keep_their_own_numbers(tmp_path):
    """Students graded in parallel threads each get their own numbers in their stand-in
    (the process-wide variant is taken under a lock)."""
    from concurrent.futures import ThreadPoolExecutor

    from eqlib.assignments import standin

    students = [variants.Variant(f"s{k}", "0123456789abcdef") for k in range(6)]

    def numbers(k):
        folder = standin.write(tmp_path / f"ex{k}", students[k])
        return torch.load(folder / "_given" / "ch02.pt", weights_only=True)

    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(numbers, range(len(students))))
    for v, g in zip(students, got):
        with variants.variant(v):
            assert g == ch02_given(), v


def ch02_given():
    from eqlib.exercises import ch02

    return ch02.given()
