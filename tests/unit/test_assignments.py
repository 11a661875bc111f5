"""The pieces of isolated grading, without nbgrader: plain-data answers, check plans, the
sandbox, renamed notebooks, arguments (book/teaching).

The end-to-end runs (the teacher's guide, cheating and honest students, real
``nbgrader autograde``) are in test_nbgrader.py; that no solution survives any chapter's
release is in tests/book/test_exercises_roundtrip.py.
"""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from eqlib import actions, groups
from eqlib.assignments import codec, match_notebooks, plan, runner, sandbox
from eqlib import assignments
from eqlib.models import MLP
from eqlib.seeds import torch_generator

BOOK = Path(__file__).resolve().parents[2] / "book"
CHAPTERS = sorted(p for p in BOOK.rglob("[0-9][0-9]_*.ipynb") if "_build" not in p.parts)
CH02 = BOOK / "part1" / "02_groups_and_actions.ipynb"


def _roundtrip(value, template=None, groups_=()):
    tree, arrays = codec.encode(value)
    return codec.decode(tree, arrays, template, groups_)


# ---------------------------------------------------------------------------------------- codec

def test_plain_values_roundtrip():
    value = {"a": [1, 2.5, True, None, "x", float("nan"), 3 + 4j], (1, 2): (torch.arange(6).reshape(2, 3),
             np.eye(2), np.float32(1.5)), 0.1: 2 ** 80}
    back = _roundtrip(value)
    assert back["a"][:5] == [1, 2.5, True, None, "x"] and np.isnan(back["a"][5]) and back["a"][6] == 3 + 4j
    t, e, s = back[(1, 2)]
    assert type(t) is torch.Tensor and torch.equal(t, torch.arange(6).reshape(2, 3))
    assert type(e) is np.ndarray and np.array_equal(e, np.eye(2)) and s == np.float32(1.5)
    assert back[0.1] == 2 ** 80


def test_course_objects_roundtrip():
    D4 = groups.dihedral(4)
    corners = actions.permutation(D4, {g: list(range(4)) for g in D4})
    rho = actions.from_matrices(D4, {D4["r"]: [[0.0, -1.0], [1.0, 0.0]], D4["s"]: [[-1.0, 0.0], [0.0, 1.0]]})
    net = MLP([2, 3, 1], "tanh", seed=1)
    back_corners, back_rho, back_g, back_net = _roundtrip([corners, rho, D4["r"], net], groups_=[D4])
    assert back_corners.group is D4 and type(back_corners) is actions.PermutationAction
    assert all(torch.equal(back_rho.matrix(g), rho.matrix(g)) for g in D4)
    assert back_g == D4["r"]
    x = torch.randn(5, 2, generator=torch_generator(100))
    assert type(back_net) is MLP and torch.equal(back_net(x), net(x))


class LyingInt(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return True

    __hash__ = int.__hash__


class AlwaysClose(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.mark.parametrize("value", [LyingInt(3), torch.zeros(2).as_subclass(AlwaysClose), [1, LyingInt(2)],
                                   object(), lambda x: x, np.array(["a"]), np.array([object()]),
                                   {"k": torch.zeros(1).as_subclass(AlwaysClose)}],
                         ids=["int", "tensor", "nested", "object", "function", "str-array", "object-array",
                              "dict"])
def test_lying_and_foreign_objects_are_refused(value):
    with pytest.raises(codec.Refused):
        codec.encode(value)


def test_a_subclass_of_a_course_class_is_refused():
    D4 = groups.dihedral(4)
    base = type(actions.permutation(D4, {g: list(range(4)) for g in D4}))

    class Fake(base):
        def matrix(self, g):
            return torch.eye(4)

    with pytest.raises(codec.Refused):
        codec.encode(Fake(D4, [[0, 1, 2, 3]] * D4.order))


def test_answer_files_are_read_strictly(tmp_path):
    codec.dump([1, torch.ones(2)], tmp_path, "a")
    doc, arrays = codec.read_doc(tmp_path, "a")
    assert doc["ok"] and torch.equal(codec.decode(doc["value"], arrays)[1], torch.ones(2))
    np.save(tmp_path / "evil.npy", np.array([object()]), allow_pickle=True)
    (tmp_path / "b.json").write_text('{"ok": true, "value": {"t": "tensor", "a": "a0"}}')
    (tmp_path / "b.npz").write_bytes((tmp_path / "evil.npy").read_bytes())
    doc, arrays = codec.read_doc(tmp_path, "b")
    assert doc["ok"] is False and "unreadable" in doc["error"]  # no pickle, ever
    (tmp_path / "c.json").symlink_to(tmp_path / "a.json")
    assert codec.read_doc(tmp_path, "c") == (None, {})  # never through a link
    with pytest.raises(codec.Refused):
        codec.decode({"t": "module", "class": "os.system", "state": []}, {})


# ---------------------------------------------------------------------------------------- plans

@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_check_has_calls_and_answers(chapter):
    """Each check cell names a checker, and at least one argument is the student's."""
    for check in plan.checks(plan.read(chapter)):
        assert check.calls, check.grade_id
        for call in check.calls:
            assert call.answer_args, (check.grade_id, call.function)
            assert hasattr(runner.load_checkers(call.chapter), call.function)


def test_context_comes_from_the_chapter_and_answers_from_the_student():
    ch06 = next(p for p in CHAPTERS if p.name.startswith("06"))
    calls = {c.grade_id: c.calls[0] for c in plan.checks(plan.read(ch06))}
    ex1 = calls["ch06-ex1-check"]
    assert [ex1.expr(k) for k in ex1.answer_args] == ["perm_ex1", "signs_ex1"]  # ex_net, swap, m: given
    ex4 = calls["ch06-ex4-check"]
    assert [ex4.expr(k) for k in ex4.answer_args] == ["cloned", "k1_clone"]


def test_taint_follows_data_and_in_place_changes():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("given = 1\nnet = make()"),
        nbformat.v4.new_code_cell("x0 = given\n### BEGIN SOLUTION\nans = 2\nnet.weight.copy_(w)\n"
                                  "### END SOLUTION\nderived = ans + 1"),
        nbformat.v4.new_code_cell("from eqlib.exercises.ch02 import check_b3_involutions\n"
                                  "check_b3_involutions(ans, derived, given, x0, net)")])
    nb.cells[1].metadata["nbgrader"] = {"solution": True, "grade_id": "q-answer"}
    nb.cells[2].metadata["nbgrader"] = {"grade": True, "locked": True, "points": 1, "grade_id": "q-check"}
    [check] = plan.checks(nb)
    call = check.calls[0]
    assert [call.expr(k) for k in call.answer_args] == ["ans", "derived", "net"]


def test_student_program_restores_locked_cells_and_records_checks():
    source = plan.read(CH02)
    student = plan.read(CH02)
    checks = plan.checks(source)
    first_check = next(c for c in student.cells if plan.is_check(c))
    first_check.source = "pass  # the student's edit"
    del student.cells[[i for i, c in enumerate(student.cells) if plan.is_check(c)][-1]]
    steps = plan.student_program(student, source, checks)
    records = [s["record"] for s in steps if "record" in s]
    assert sorted(records) == sorted(c.grade_id for c in checks)
    assert steps[-1]["cell"] is None  # the deleted check is recorded at the end
    assert not any("the student's edit" in s.get("code", "") for s in steps)


# ---------------------------------------------------------------------------------------- sandbox

def test_a_checkout_and_data_under_tmp_stay_visible_in_the_sandbox(tmp_path, monkeypatch):
    """The sandbox's /tmp is empty; a CI clone or a data copy under /tmp is bound back read-only."""
    checkout, data = Path("/tmp") / tmp_path.name / "checkout", tmp_path / "data"
    checkout.mkdir(parents=True)
    data.mkdir()
    monkeypatch.setattr(sandbox, "PACKAGE_ROOT", checkout)
    monkeypatch.setenv("EQLIB_DATA", str(data))
    cmd, _ = sandbox.command(tmp_path / "scratch", ["true"], [], "bwrap")
    binds = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--ro-bind"]
    assert str(checkout.resolve()) in binds and str(data.resolve()) in binds
    assert cmd.index("--tmpfs") < cmd.index(str(checkout.resolve()))  # after the empty /tmp
    checkout.rmdir()
    checkout.parent.rmdir()


@pytest.mark.skipif(sandbox.method() == "none", reason="no bubblewrap and no user namespaces here")
@pytest.mark.parametrize("how", ["bwrap", "unshare"])
def test_sandbox_hides_forbids_and_limits(how, tmp_path):
    if how == "bwrap" and not sandbox._works(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"]):
        pytest.skip("bubblewrap missing")
    secret = tmp_path / "course"
    secret.mkdir()
    (secret / "gradebook.db").write_text("grades")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    package = Path(sandbox.__file__).resolve().parents[1] / "exercises" / "__init__.py"
    probe = f"""
import os, socket, pathlib
out = []
out.append(os.path.exists({str(secret / 'gradebook.db')!r}))
for target in [{str(package)!r}, {str(secret / 'x')!r}, "/root/x"]:
    try:
        open(target, "a").write("x")
        out.append("wrote " + target)
    except OSError:
        out.append("denied")
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    out.append("network")
except OSError:
    out.append("no network")
pathlib.Path("result.txt").write_text(repr(out))
"""
    result = sandbox.run(scratch, [sys.executable, "-c", probe], [secret], sandbox.Limits(wall_s=60), how)
    assert result.returncode == 0, result.stderr
    assert eval((scratch / "result.txt").read_text()) == [False, "denied", "denied", "denied", "no network"]
    assert sorted(p.name for p in secret.iterdir()) == ["gradebook.db"]
    slow = sandbox.run(scratch, [sys.executable, "-c", "while True: pass"], [], sandbox.Limits(wall_s=3), how)
    assert slow.timed_out


# ---------------------------------------------------------------------------------------- front end

def test_renamed_notebooks_are_matched(tmp_path):
    released = {CH02.name: CH02}
    for name in ("Copy of " + CH02.name, CH02.stem + "-Copy1.ipynb", CH02.stem + " (1).ipynb", "mine.ipynb"):
        folder = tmp_path / name.replace(" ", "_")
        folder.mkdir()
        (folder / name).write_bytes(CH02.read_bytes())
        found, notes = match_notebooks(folder, released)
        assert found == {CH02.name: folder / name} and "renamed" in notes[0], (name, notes)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "other.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    found, notes = match_notebooks(empty, released)
    assert found == {} and any("no notebook for" in n for n in notes)
    assert any("matches no released notebook" in n for n in notes)


def test_setup_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="chapters must be chapter numbers"):
        assignments.setup(tmp_path / "c", ["99"])
    with pytest.raises(ValueError, match="chapters must be chapter numbers"):
        assignments.setup(tmp_path / "c", [])
    with pytest.raises(ValueError, match="assignment must be"):
        assignments.setup(tmp_path / "c", ["02"], assignment="a b")


def test_setup_writes_an_isolated_nbgrader_course(tmp_path):
    [copied] = assignments.setup(tmp_path / "c", ["2"])
    assert copied == tmp_path / "c" / "source" / "exercises" / CH02.name
    assert copied.read_bytes() == CH02.read_bytes()
    config = (tmp_path / "c" / "nbgrader_config.py").read_text()
    assert "SandboxedExecute" in config and "notebook_timeout" in config
    from traitlets.config import Config

    c = Config()
    exec(compile(config, "nbgrader_config.py", "exec"), {"get_config": lambda: c})
    names = [p.__name__ for p in c.Autograde.autograde_preprocessors]
    assert "SandboxedExecute" in names and "Execute" not in names and "SaveAutoGrades" in names


@pytest.mark.parametrize("kwargs, message", [
    ({"timeout": 0}, "timeout must be a positive"), ({"timeout": -1}, "timeout must be a positive"),
    ({"notebook_timeout": 0}, "notebook_timeout must be a positive"), ({"jobs": 0}, "jobs must be")])
def test_grade_rejects_bad_limits(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        assignments.grade(tmp_path, tmp_path, **kwargs)


def test_grade_needs_a_released_course(tmp_path):
    with pytest.raises(ValueError, match="run `release` first"):
        assignments.grade(tmp_path, tmp_path)
    with pytest.raises(ValueError, match="run `setup` first"):
        assignments.release(tmp_path)
    with pytest.raises(ValueError, match="grade first"):
        assignments.review(tmp_path, "alice")


@pytest.mark.skipif(sandbox.method() == "none", reason="no bubblewrap and no user namespaces here")
@pytest.mark.parametrize("how", ["bwrap", "unshare"])
def test_sandbox_keeps_a_checkout_under_tmp_readable(how, tmp_path, monkeypatch):
    # a CI clone lies under /tmp, which the sandbox empties: the package and the data come back
    if how == "bwrap" and not sandbox._works(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"]):
        pytest.skip("bubblewrap missing")
    checkout, data, scratch = tmp_path / "clone" / "main", tmp_path / "data", tmp_path / "scratch"
    for folder in (checkout, data, scratch):
        folder.mkdir(parents=True)
    (checkout / "eqlib.txt").write_text("package")
    (data / "cifar.txt").write_text("data")
    (tmp_path / "other.txt").write_text("hidden")
    monkeypatch.setattr(sandbox, "PACKAGE_ROOT", checkout)
    monkeypatch.setenv("EQLIB_DATA", str(data))
    probe = f"""
import os, pathlib
out = [pathlib.Path({str(checkout / 'eqlib.txt')!r}).read_text(),
       pathlib.Path({str(data / 'cifar.txt')!r}).read_text(),
       os.path.exists({str(tmp_path / 'other.txt')!r})]
try:
    open({str(checkout / 'eqlib.txt')!r}, "a").write("x")
    out.append("wrote")
except OSError:
    out.append("denied")
pathlib.Path("result.txt").write_text(repr(out))
"""
    result = sandbox.run(scratch, [sys.executable, "-c", probe], [], sandbox.Limits(wall_s=60), how)
    assert result.returncode == 0, result.stderr
    assert eval((scratch / "result.txt").read_text()) == ["package", "data", False, "denied"]
    assert (checkout / "eqlib.txt").read_text() == "package"


def _folded(cell) -> bool:
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden")) or \
        "hide-input" in cell.metadata.get("tags", [])


@pytest.mark.parametrize("how", ["front end", "plain nbgrader"])
def test_released_answer_cells_are_unfolded(tmp_path, how):
    # the book folds solutions and hidden tests; a student's copy must show its answer cells
    [source] = assignments.setup(tmp_path / "c", ["02"])
    nb = nbformat.read(source, as_version=4)
    graded = [c for c in nb.cells if plan.nbg(c).get("solution") or plan.nbg(c).get("grade")]
    assert graded
    for cell in graded:
        cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
        cell.metadata["tags"] = ["hide-input", "keep-me"]
    nbformat.write(nb, source)
    if how == "front end":
        [released] = assignments.release(tmp_path / "c")
    else:
        proc = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "exercises",
                               "--force"], cwd=tmp_path / "c", capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        [released] = sorted((tmp_path / "c" / "release" / "exercises").glob("*.ipynb"))
    cells = nbformat.read(released, as_version=4).cells
    answers = [c for c in cells if plan.nbg(c).get("solution") or plan.nbg(c).get("grade")]
    assert len(answers) == len(graded) and not any(_folded(c) for c in answers)
    assert all(c.metadata.get("tags") == ["keep-me"] for c in answers)  # other tags kept
