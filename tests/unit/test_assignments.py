"""The teacher's front end without running kernels: tampering scan, fresh checkers, arguments.

The real nbgrader round trip (release, autograde of simulated students) is in
test_nbgrader.py; that no solution survives any chapter's release is in
tests/book/test_exercises_roundtrip.py.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

from eqlib import assignments
from eqlib.exercises import ExerciseError, fresh

BOOK = Path(__file__).resolve().parents[2] / "book"
CHAPTERS = sorted(p for p in BOOK.rglob("[0-9][0-9]_*.ipynb") if "_build" not in p.parts)


def _nbg(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _names(chapter: Path):
    nb = nbformat.read(chapter, as_version=4)
    return assignments._protected_names(nb), assignments._imported_names(nb)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_honest_code_is_not_flagged(chapter):
    """The instructor's solutions and every other cell of the chapter pass the scan."""
    protected, modules = _names(chapter)
    for cell in nbformat.read(chapter, as_version=4).cells:
        # the Colab set-up cell is the instructor's and is trusted when unchanged
        if cell.get("id") == "eqlib-setup":
            continue
        if cell.cell_type == "code" and not _nbg(cell).get("grade"):
            source = re.sub(r"(?m)^\s*### (BEGIN|END) SOLUTION\s*\n?", "", cell.source)
            assert assignments.scan(source, protected, modules) == [], (chapter.name, cell.source)


CH02 = BOOK / "part1" / "02_groups_and_actions.ipynb"
CHEATS = {  # the cheats, and variants of them
    "import eqlib.exercises.ch02 as m\nm.check_corner_representation = lambda r: None": "m.check_corner",
    "from eqlib.exercises import ch02\nch02.check_d4_equivariant_map = print": "ch02.check_d4",
    "import types\nch02 = types.SimpleNamespace()": "rebinds 'ch02'",
    "def check_corner_representation(rho):\n    pass": "redefines",
    "from mymodule import ch02": "imports over 'ch02'",
    "import sys\nsys.modules['eqlib.exercises.ch02'] = None": "sys",
    "get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)": "set_custom_exc",
    "ip = get_ipython()\nip.custom_exceptions = (Exception,)": "custom_exceptions",
    "import builtins\nbuiltins.print = len": "builtins",
    "__builtins__.AssertionError = KeyError": "__builtins__",
    "open('/x/eqlib/exercises/__init__.py', 'a').write('pass')": "opens a file for writing",
    "from pathlib import Path\nPath('eqlib/exercises/ch02.py').write_text('')": "write_text",
    "setattr(__import__('eqlib.exercises.ch02'), 'x', 1)": "setattr",
    "exec('ch02.check_corner_representation = print')": "exec",
    "globals()['ch02'] = None": "globals",
    "import importlib\nimportlib.reload(ch02)": "importlib",
    "!echo pass >> eqlib/exercises/__init__.py": "system",
    "%%writefile eqlib/exercises/ch02.py\npass": "run_cell_magic",
    "import os\nos.remove('eqlib/exercises/ch02.py')": "os.remove",
    "import shutil\nshutil.copy('a', 'eqlib/exercises/ch02.py')": "shutil",
    "torch.allclose = lambda *a, **k: True": "torch.allclose",
    "actions.check_equivariance = lambda *a, **k: {}": "actions.check_equivariance",
}


@pytest.mark.parametrize("code", list(CHEATS), ids=range(len(CHEATS)))
def test_cheats_are_flagged_with_a_reason(code):
    reasons = assignments.scan(code, *_names(CH02))
    assert any(CHEATS[code] in r for r in reasons), reasons
    assert all(re.match(r"line \d+: ", r) for r in reasons)


def test_scan_flags_only_changed_cells(tmp_path):
    """Cells equal to the release are trusted; the flag names the cell and its grade_id."""
    nb = nbformat.read(CH02, as_version=4)
    answer = next(i for i, c in enumerate(nb.cells) if _nbg(c).get("grade_id") == "ch02-ex2-answer")
    nb.cells[answer].source = "import sys\nsys.modules.clear()"
    nbformat.write(nb, tmp_path / "sub.ipynb")
    [flag, *_] = assignments._scan_submission(tmp_path / "sub.ipynb", CH02, CH02)
    assert (flag.cell, flag.grade_id) == (answer, "ch02-ex2-answer") and "sys" in flag.reason
    assert assignments._scan_submission(CH02, CH02, CH02) == []


def test_fresh_checkers_ignore_patched_modules(monkeypatch):
    import eqlib.exercises.ch02 as ch02

    monkeypatch.setattr(ch02, "check_corner_representation", lambda rho: None)
    monkeypatch.setitem(sys.modules, "eqlib.exercises.ch02", None)
    monkeypatch.setattr("eqlib.exercises.require", lambda condition, message: None)
    with pytest.raises(ExerciseError, match="rho is None"):
        fresh("ch02").check_corner_representation(None)


def test_fresh_checkers_are_silent_and_return_none(capsys):
    import torch

    from eqlib.exercises import ch06
    from eqlib.groups import dihedral
    from eqlib.actions import image_dihedral
    from eqlib.models import MLP

    G, rho = dihedral(4), image_dihedral((1, 2, 2))
    net = MLP([4, 6, 2], "tanh", seed=0)
    answer = net.layers[0].weight.detach() @ rho.matrix(G["r"])
    assert fresh("ch06").check_transported_weight(net, rho, G["r"], answer) is None
    assert capsys.readouterr().out == ""
    assert ch06.check_transported_weight(net, rho, G["r"], answer) is None
    assert capsys.readouterr().out.startswith("Correct")
    with pytest.raises(AssertionError):
        fresh("ch06").check_transported_weight(net, rho, G["r"], torch.zeros_like(answer))


@pytest.mark.parametrize("bad", ["ch2", "../ch02", "ch99", 2])
def test_fresh_rejects_bad_chapters(bad):
    with pytest.raises(ValueError, match="ch"):
        fresh(bad)


def test_setup_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="chapters must be chapter numbers"):
        assignments.setup(tmp_path / "c", ["99"])
    with pytest.raises(ValueError, match="chapters must be chapter numbers"):
        assignments.setup(tmp_path / "c", [])
    with pytest.raises(ValueError, match="assignment must be"):
        assignments.setup(tmp_path / "c", ["02"], assignment="a b")


def test_setup_writes_an_nbgrader_course(tmp_path):
    [copied] = assignments.setup(tmp_path / "c", ["2"])
    assert copied == tmp_path / "c" / "source" / "exercises" / CH02.name
    assert copied.read_bytes() == CH02.read_bytes()
    config = (tmp_path / "c" / "nbgrader_config.py").read_text()
    assert "GuardedExecute" in config and "notebook_timeout" in config


@pytest.mark.parametrize("kwargs, message", [
    ({"timeout": 0}, "timeout must be a positive"), ({"timeout": -1}, "timeout must be a positive"),
    ({"notebook_timeout": 0}, "notebook_timeout must be a positive")])
def test_grade_rejects_non_positive_limits(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        assignments.grade(tmp_path, tmp_path, **kwargs)


def test_grade_needs_a_released_course(tmp_path):
    with pytest.raises(ValueError, match="run `release` first"):
        assignments.grade(tmp_path, tmp_path)
    with pytest.raises(ValueError, match="run `setup` first"):
        assignments.release(tmp_path)


def test_installed_files_hash_sees_package_and_course_changes(tmp_path):
    """Appending a no-op to an installed checker file (the issue's cheat) changes the hashes."""
    package, course = tmp_path / "eqlib", tmp_path / "course"
    (package / "exercises").mkdir(parents=True)
    (package / "exercises" / "__init__.py").write_text("def require(c, m): ...\n")
    (course / "source" / "exercises").mkdir(parents=True)
    (course / "source" / "exercises" / "02_x.ipynb").write_text("{}")
    before = assignments._installed_files(course, "exercises", package)
    assert before == assignments._installed_files(course, "exercises", package)
    with open(package / "exercises" / "__init__.py", "a") as f:
        f.write("require = lambda c, m: None\n")
    after = assignments._installed_files(course, "exercises", package)
    assert [p for p in before if before[p] != after[p]] == [str(package / "exercises" / "__init__.py")]
    assert str(assignments.PACKAGE / "exercises" / "ch02.py") in assignments._installed_files(course, "exercises")
