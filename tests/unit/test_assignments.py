"""Release and grade a small fixture notebook with eqlib.assignments."""
import json

import nbformat
import pytest

from eqlib import assignments


def _meta(**kw):
    base = {"schema_version": 3, "locked": False, "solution": False, "grade": False, "task": False}
    base.update(kw)
    return {"nbgrader": base}


def _fixture(path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    md = nbformat.v4.new_markdown_cell(
        "```{exercise}\n:label: t-ex1\n\nWrite `square`.\n```\n\n"
        "```{solution} t-ex1\n:class: dropdown\n\nMultiply x by itself.\n```")
    ans = nbformat.v4.new_code_cell("def square(x):\n    ### BEGIN SOLUTION\n    return x * x\n    ### END SOLUTION",
                                    metadata=_meta(solution=True, grade_id="t-ex1-answer"))
    ans.outputs = [nbformat.v4.new_output("stream", text="stale output\n")]
    ans.execution_count = 3
    chk = nbformat.v4.new_code_cell("assert square(3) == 9, 'square(3) should be 9'",
                                    metadata=_meta(grade=True, locked=True, points=2, grade_id="t-ex1-check"))
    chk2 = nbformat.v4.new_code_cell("assert square(-2) == 4",
                                     metadata=_meta(grade=True, locked=True, points=1, grade_id="t-ex1-check2"))
    nb.cells = [nbformat.v4.new_markdown_cell("# T"), md, ans, chk, chk2]
    nbformat.write(nb, path)
    return path


def test_release_strips_solutions_and_outputs(tmp_path):
    (tmp_path / "src").mkdir()
    src = _fixture(tmp_path / "src" / "t.ipynb")
    out = tmp_path / "out"
    [written] = assignments.release(tmp_path / "src", out)
    nb = nbformat.read(written, as_version=4)
    answer = nb.cells[2]
    assert "return x * x" not in answer.source and "    raise NotImplementedError()" in answer.source
    assert "BEGIN SOLUTION" not in answer.source and answer.outputs == [] and answer.execution_count is None
    assert "{solution}" not in nb.cells[1].source and "Multiply" not in nb.cells[1].source
    assert "{exercise}" in nb.cells[1].source
    assert nb.cells[3].metadata["nbgrader"]["points"] == 2 and "assert square(3)" in nb.cells[3].source
    assert nbformat.read(src, as_version=4).cells[2].source.count("return x * x") == 1  # source untouched


def test_grade_full_and_zero_marks(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    src = _fixture(tmp_path / "src" / "t.ipynb")
    full = assignments.grade(src, timeout=60)
    assert [(i.grade_id, i.points, i.max_points) for i in full] == [("t-ex1-check", 2, 2), ("t-ex1-check2", 1, 1)]
    [student] = assignments.release(src, tmp_path / "out")
    assert assignments.main(["grade", str(student), "--json", str(tmp_path / "g.json"), "--timeout", "60"]) == 0
    report = json.loads((tmp_path / "g.json").read_text())
    assert report["total"] == 0 and report["max_total"] == 3
    assert all("NotImplementedError" in i["error"] for i in report["items"]), report
    assert "total" in capsys.readouterr().out


def test_bad_markers_raise(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1\n### END SOLUTION", metadata=_meta(solution=True, grade_id="a"))]
    with pytest.raises(ValueError, match="without"):
        assignments.release_notebook(nb)
    nb.cells[0].source = "x = 1"
    with pytest.raises(ValueError, match="solution cell without"):
        assignments.release_notebook(nb)
    with pytest.raises(ValueError, match="no check cell"):
        nbformat.write(nb, tmp_path / "n.ipynb")
        assignments.grade(tmp_path / "n.ipynb")
