"""A tiny book with the real configuration, to test the page checks themselves.

``make_fixture_book(root)`` writes a two-page book into ``root``: ``good`` has math
(with the course's macros), a figure, a proof directive, an exercise, a citation, a
glossary term, an ipywidgets control (through ``interactive_figure``) and a
kernel-free ``frames_player``; ``bad`` has the defects the checks must catch (raw TeX,
a missing image, a broken link and a broken anchor, content wider than the column).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]

GOOD_CELLS = [
    ("markdown", "# Good page\n\nInline math $\\rhoout(g) f(x) = f(\\rhoin(g) x)$ and a display:\n\n"
                 "$$\n\\fle{2} = f_2 \\circ f_1, \\qquad W \\in \\R^{3 \\times 3}, \\quad \\Ki{1} \\subseteq \\GL(V_1)\n$$\n\n"
                 "As {cite:t}`shahverdi2026identifiable` show, an {term}`equivariant` map ... "
                 "See [the other page](bad.md) and {prf:ref}`good-def`."),
    ("markdown", "```{prf:definition} Equivariance\n:label: good-def\n\n"
                 "$f(g\\cdot x) = g \\cdot f(x)$ for all $g$.\n```"),
    ("code", "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
             "import numpy as np\nfig, ax = plt.subplots(figsize=(3, 2))\nax.plot(np.arange(5) ** 2)\nplt.show()"),
    ("code", "# NBVAL_IGNORE_OUTPUT\nimport ipywidgets as widgets\nfrom eqlib.widgets import interactive_figure\n\n"
             "def draw(k=1):\n    fig, ax = plt.subplots(figsize=(3, 2))\n    ax.plot(np.arange(5) * k)\n    return fig\n\n"
             "_ = interactive_figure(draw, {'k': widgets.IntSlider(min=1, max=3)}, k=2)"),
    ("code", "from eqlib.widgets.jsplayer import frames_player\n"
             "frames = [np.full((8, 8), v) for v in (0.0, 0.5, 1.0)]\n"
             "_ = frames_player(frames, labels=['dark', 'grey', 'light'], title='Brightness', width=64)"),
    # the longest code line the course allows (88 characters) and a long printed line: both
    # fit the column (code at a smaller size, output wrapped)
    ("code", "values = {'a': 1}\nprint(" + repr("x" * 71) + ", values)\n"
             "print(' '.join(f'item{i:03d}' for i in range(40)))"),
    ("markdown", "## Exercises\n\n```{exercise}\n:label: good-ex1\n\nCompute $1 + 1$.\n```\n\n"
                 "```{solution} good-ex1\n:class: dropdown\n\nIt is $2$.\n```"),
]

BAD_MD = """# Bad page

```{raw} html
<p>Raw TeX that nothing typesets: \\(x^2\\).</p>
<img src="missing.png" alt="missing">
<p><a href="nowhere.html">a broken link</a> and <a href="good.html#no-such-anchor">a broken anchor</a>.</p>
<p style="width:2400px">A paragraph wider than the text column.</p>
```
"""


def make_fixture_book(root: Path) -> Path:
    """Write the fixture book into ``root`` (the real ``_config.yml``) and return it."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    shutil.copy(REPO / "references.bib", root / "references.bib")
    assets = root / "book" / "_assets"
    assets.parent.mkdir(parents=True, exist_ok=True)
    for folder in ("_assets",):
        if not (root / "book" / folder).exists():
            shutil.copytree(REPO / "book" / folder, root / "book" / folder)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src)
                for kind, src in GOOD_CELLS]
    nbformat.write(nb, root / "good.ipynb")
    (root / "bad.md").write_text(BAD_MD)
    (root / "glossary.md").write_text("# Glossary\n\n```{glossary}\nequivariant\n  Commutes with the action.\n```\n")
    (root / "refs.md").write_text("# References\n\n```{bibliography}\n```\n")
    (root / "index.md").write_text("# Fixture\n\nA test book.\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n- file: good\n- file: bad\n- file: glossary\n- file: refs\n")
    return root
