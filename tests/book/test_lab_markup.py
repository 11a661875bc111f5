"""The book side of what JupyterLab needs: ``{eval}`G("key", "fmt")``` numbers
(eqlib.widgets.shown) and author–year citation links (eqlib.widgets.labcite), in a tiny
book built with the real ``_config.yml`` and ``-W``.

The good page must show the glued numbers and link each citation to its bibliography
entry; the bad page (an ``{eval}`` that is not ``G("key", ...)``, a link to an entry that
does not exist) must give exactly those two warnings, so ``-W`` fails on them.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import nbformat
import pytest

from booktools import BUILD_CMD, REPO
from eqlib.widgets.labcite import cite_id

pytestmark = pytest.mark.book

GOOD = [
    ("code", "from eqlib.widgets.shown import Shown\nG = Shown()\n"
             "G.glue(\"acc\", 0.7312)\nG.glue(\"n\", 7)\nG.glue(\"budget\", \"laptop\")"),
    ("markdown", "# Good\n\nAccuracy {eval}`G(\"acc\", \".2f\")` after {eval}`G(\"n\")` epochs at "
                 "the {eval}`G(\"budget\")` budget, as [Shahverdi et al. (2026)]"
                 "(refs.md#cite-shahverdi2026identifiable) show.\n\n"
                 "```{prf:remark}\nInside a box: {eval}`G(\"acc\", \".3f\")`.\n```"),
]
BAD = [
    ("code", "acc = 0.5"),
    ("markdown", "# Bad\n\nAn expression the book cannot evaluate: {eval}`acc`; an entry that "
                 "does not exist: [Nobody (2000)](refs.md#cite-nobody2000)."),
]


def _notebook(cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src)
                for kind, src in cells]
    return nb


@pytest.fixture(scope="module")
def lab_book(tmp_path_factory):
    fetch = subprocess.run([sys.executable, "-m", "eqlib.widgets.assets", "--if-missing"], cwd=REPO,
                           capture_output=True, text=True)
    assert fetch.returncode == 0, f"could not fetch the widget JavaScript (needs npm):\n{fetch.stdout}{fetch.stderr}"
    root = tmp_path_factory.mktemp("lab_book")
    for name in ("_config.yml", "references.bib"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "book" / "_assets", root / "book" / "_assets")
    nbformat.write(_notebook(GOOD), root / "good.ipynb")
    nbformat.write(_notebook(BAD), root / "bad.ipynb")
    (root / "refs.md").write_text("# References\n\n```{bibliography}\n:all:\n```\n")
    (root / "index.md").write_text("# Lab markup\n\nA test book.\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n- file: good\n- file: bad\n"
                                   "- file: refs\n")
    proc = subprocess.run(BUILD_CMD, cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    return root / "_build" / "html", proc.returncode, proc.stdout + proc.stderr


def test_numbers_and_citation_links_in_the_book(lab_book):
    html, _, log = lab_book
    good = (html / "good.html").read_text()
    text = re.sub(r"<[^>]+>", "", good)
    assert "Accuracy 0.73 after 7 epochs at the laptop budget" in text, log[-3000:]
    assert "Inside a box: 0.731." in text
    assert re.search(r'<a class="[^"]*eqlib-cite[^"]*" href="refs.html#cite-shahverdi2026identifiable">',
                     good), "the citation does not link to its bibliography entry"
    refs = (html / "refs.html").read_text()
    assert 'id="cite-shahverdi2026identifiable"' in refs
    # the bibliography still lists every entry of references.bib
    keys = re.findall(r"^@\w+\{([^,]+),", (REPO / "references.bib").read_text(), re.M)
    missing = [k for k in keys if f'id="{cite_id(k)}"' not in refs]
    assert not missing, f"entries missing from the bibliography: {missing}"


def test_anything_else_is_a_warning(lab_book):
    _, code, log = lab_book
    warnings = [line for line in log.splitlines() if "WARNING" in line
                and "Kernel is running over TCP" not in line]
    assert code != 0, "the -W build passed with a bad {eval} and a bad citation link"
    assert any("bad" in w and 'the book evaluates only G("key")' in w for w in warnings), warnings
    assert any("bad" in w and "cite-nobody2000: no such entry" in w for w in warnings), warnings
    assert len(warnings) == 2, "\n".join(warnings)
