"""The Colab variants of the chapters read right without MyST (issue #23, item 3).

No book build: the variants are written from the stored notebooks into a temporary
folder, every markdown cell is rendered by a plain CommonMark renderer (markdown-it-py,
no MyST plugins) and :func:`eqlib.widgets.colab.check_markdown` lists whatever would show
raw there: directive fences, roles, ``%`` comments, ``(label)=`` targets, option lines,
front matter, and TeX commands that are neither standard nor expanded. Planted markup
shows that the check can fail; the citation text, the numbering, the macro expansion
and the Colab launch link are tested on small inputs with known answers.

The numbering scheme (each sphinx-proof kind counted on its own within a chapter,
"Definition 3.1" … "Example 3.1" …; exercises likewise; proofs unnumbered) was compared
with a Jupyter Book build of chapters 1–3: all 35 labelled boxes agreed.
"""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import yaml
from markdown_it import MarkdownIt

from booktools import REPO, chapter_pages
from eqlib.widgets import colab
from eqlib.widgets.colab import (Book, Box, check_markdown, cite, colab_link, convert_markdown,
                                 expand_macros, load_book, number_boxes, parse_bib)

CHAPTERS = chapter_pages()


@pytest.fixture(scope="module")
def book() -> Book:
    return load_book(REPO)


@pytest.fixture(scope="module")
def variants(tmp_path_factory, book) -> dict[str, nbformat.NotebookNode]:
    out = tmp_path_factory.mktemp("colab")
    paths = colab.build(out, book=book)
    assert [p.name for p in paths] == [Path(p).name + ".ipynb" for p in CHAPTERS]
    return {page: nbformat.read(out / (Path(page).name + ".ipynb"), as_version=4) for page in CHAPTERS}


def test_all_chapters_have_variants():
    assert len(CHAPTERS) == 11


@pytest.mark.parametrize("page", CHAPTERS)
def test_variant_renders_without_raw_myst(page, variants, book):
    nb = variants[page]
    md = MarkdownIt("commonmark")
    problems = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        html = md.render(cell.source)
        assert "{prf:" not in html and "{exercise}" not in html and "{solution}" not in html
        problems += [f"cell {cell.id}: {p}" for p in check_markdown(cell.source, book.macros)]
    assert not problems, f"{page}: Colab would show raw MyST:\n" + "\n".join(problems[:40])


@pytest.mark.parametrize("page", CHAPTERS)
def test_variant_keeps_code_and_drops_front_matter(page, variants, book):
    source = nbformat.read(REPO / f"{page}.ipynb", as_version=4)
    nb = variants[page]
    code = [(c.id, c.source) for c in source.cells if c.cell_type == "code"]
    assert [(c.id, c.source) for c in nb.cells if c.cell_type == "code"] == code
    assert nb.cells[0].id == "colab-header" and book.page_url(page) in nb.cells[0].source
    assert nb.cells[1].cell_type == "markdown" and nb.cells[1].source.startswith("# ")
    assert all("remove-cell" not in c.metadata.get("tags", []) for c in nb.cells if c.cell_type == "markdown")
    # every macro of _config.yml is gone from the markdown (code spans aside)
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    names = config["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]
    text = "\n".join(re.sub(r"`[^`]*`", "", c.source) for c in nb.cells if c.cell_type == "markdown")
    left = [n for n in names if re.search(r"(?<!\\)\\" + n + r"(?![A-Za-z])", text)]
    assert not left, f"{page}: macros left unexpanded: {left}"


def test_variants_number_boxes_and_fold_solutions(variants, book):
    nb = variants["book/part1/03_models_and_submodels"]
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "> **Definition 3.1 (Model of depth $L$).**" in text
    assert re.search(r"^> \*Proof\.\*", text, re.M)
    assert "<details>\n<summary><b>Solution to Exercise 3.1</b></summary>" in text
    assert re.search(r"^> \*\*Exercise 3\.1\.\*\*", text, re.M)
    assert "Shahverdi et al. (2026)" in text
    # cross references link to the published site, numbered as in the book
    site = book.site
    assert re.search(r"\[Proposition 3\.\d+\]\(" + re.escape(site) + r"book/part1/03_models_and_submodels"
                     r"\.html#ch03-prop-reduce\)", text)


def test_glued_numbers_point_to_the_code(variants):
    nb = variants["book/part3/11_cifar_mlp"]
    cells = [c.source for c in nb.cells if c.cell_type == "markdown" and "see the value computed above" in c.source]
    assert cells, "chapter 11 glues numbers into its prose; the variant must say where they are"
    assert all("`" in c for c in cells)


# --------------------------------------------------------------------------------------
# The check can fail.

PLANTED = {
    "directive": "```{prf:definition} Group\n:label: x\nA group.\n```",
    "colon directive": ":::{note}\nText\n:::",
    "term": "A {term}`group` acts.",
    "prf:ref": "By {prf:ref}`ch03-def-submodel`.",
    "cite:t": "As {cite:t}`shahverdi2026identifiable` show.",
    "cite:p": "Known {cite:p}`sussmann1992uniqueness`.",
    "glue": "It reaches {glue:text}`acc-tanh-classifier:.2f`.",
    "doc": "See {doc}`/book/part1/01_introduction`.",
    "eval": "It reaches {eval}`f\"{acc:.2f}\"`.",
    "eval G": "It reaches {eval}`G(\"acc-tanh-classifier\", \".2f\")`.",
    "comment": "Text.\n\n% notation: K_i\n",
    "target": "(ch11-search)=\n## Search",
    "front matter": "---\nmath:\n  \\R: \\mathbb{R}\n---",
    "option": "Text\n:label: ch01-x",
    "macro": "The space $\\rhoin$.",
    "macro with argument": "The group $\\Ki{i}$.",
    "unknown command": "A $\\frobnicate x$.",
}


@pytest.mark.parametrize("name", PLANTED)
def test_check_catches_planted_markup(name, book):
    assert check_markdown(PLANTED[name], book.macros), f"planted {name} not caught"


def test_check_passes_clean_markdown(book):
    clean = ("Use `{term}` in MyST; here $\\mathbb{R}^{n}$, $\\begin{pmatrix}a\\\\c\\end{pmatrix}$, "
             "$K_{i}$ and `\\rhoin` in code.\n\n> **Definition 1.1 (Group).** A set.\n\n"
             "<details>\n<summary><b>Solution to Exercise 1.1</b></summary>\n\nIt is.\n\n</details>\n")
    assert check_markdown(clean, book.macros) == []


def test_converting_a_planted_cell_leaves_nothing_raw(book):
    source = "\n\n".join(v for k, v in PLANTED.items()
                         if k not in {"unknown command", "front matter", "prf:ref", "glue", "option"})
    out = convert_markdown(source, book, "book/part1/01_introduction")
    assert check_markdown(out, book.macros) == []
    assert "\\rho_{\\mathrm{in}}" in out and "K_{i}" in out


# --------------------------------------------------------------------------------------
# Citations, macros, numbering, links.

BIB = r"""
@comment{ignored}
@article{one2001,
  author = {B{\"o}kman, Georg},
  title  = {A {ReLU} title, with "quotes"},
  year   = 2001
}
@inproceedings{two2002,
  author    = "Vla{\v{c}}i{\'c}, Verner and Kaiser, {\L}ukasz",
  year      = {2002},
}
@misc{three2003, author = {Ann Smith and Bo Jones and Cy Lee}, year = {20} # {03}}
@book{many2004,
  author = {Doe, Jane and others},
  year = {2004}
}
"""


def test_parse_bib_decodes_names_and_fields():
    bib = parse_bib(BIB)
    assert set(bib) == {"one2001", "two2002", "three2003", "many2004"}
    assert bib["one2001"]["author"] == "Bökman, Georg" and bib["one2001"]["year"] == "2001"
    assert bib["one2001"]["title"] == 'A ReLU title, with "quotes"'
    assert bib["two2002"]["author"] == "Vlačić, Verner and Kaiser, Łukasz"
    assert bib["three2003"]["year"] == "2003" and bib["many2004"]["type"] == "book"


def test_cite_author_year():
    bib = parse_bib(BIB)
    assert cite("one2001", bib, "t") == "Bökman (2001)"
    assert cite("one2001", bib, "p") == "(Bökman, 2001)"
    assert cite("two2002", bib, "t") == "Vlačić and Kaiser (2002)"
    assert cite("three2003", bib, "p") == "(Smith et al., 2003)"
    assert cite("many2004", bib, "t") == "Doe et al. (2004)"
    assert cite("one2001, two2002", bib, "p") == "(Bökman, 2001; Vlačić and Kaiser, 2002)"
    with pytest.raises(KeyError, match="nope"):
        cite("nope", bib)
    with pytest.raises(ValueError, match="mode"):
        cite("one2001", bib, "x")


def test_references_bib_names_agree_with_pybtex():
    """Our small parser against pybtex (installed with sphinxcontrib-bibtex): every entry's
    last names and year."""
    pybtex = pytest.importorskip("pybtex.database")
    latexcodec = pytest.importorskip("latexcodec")  # noqa: F841  (registers the codec)
    import codecs

    text = (REPO / "references.bib").read_text()
    ours = parse_bib(text)
    ref = pybtex.parse_string(text, "bibtex")
    assert set(ours) == set(ref.entries)
    for key, entry in ref.entries.items():
        want = [codecs.decode(" ".join(p.last_names), "ulatex").replace("{", "").replace("}", "")
                for p in entry.persons.get("author", [])]
        assert colab._last_names(ours[key]["author"]) == want, key
        assert ours[key]["year"] == entry.fields["year"], key


MACROS = {"R": ("\\mathbb{R}", 0), "Ki": ("K_{#1}", 1), "fle": ("f_{\\le #1}", 1),
          "rhoin": ("\\rho_{\\mathrm{in}}", 0), "two": ("\\Ki{#1}\\R", 1)}


@pytest.mark.parametrize("source, want", [
    ("$\\R^n$", "$\\mathbb{R}^n$"),
    ("$\\Ki{i}$ and $\\Ki i$ and $\\Ki{\\sigma(1)}$", "$K_{i}$ and $K_{i}$ and $K_{\\sigma(1)}$"),
    ("$\\fle{i+1}(x)$", "$f_{\\le i+1}(x)$"),
    ("$\\rhoin \\Rightarrow \\Rin$", "$\\rho_{\\mathrm{in}} \\Rightarrow \\Rin$"),
    ("$a \\\\R b$", "$a \\\\R b$"),                      # \\ then the letter R: no macro
    ("$\\two{j}$", "$K_{j}\\mathbb{R}$"),                # macros inside macros
])
def test_expand_macros(source, want):
    assert expand_macros(source, MACROS) == want


def test_expand_macros_refuses_a_loop():
    with pytest.raises(ValueError, match="without end"):
        expand_macros("$\\a$", {"a": ("\\a", 0)})


def test_numbering_as_sphinx_proof():
    sources = {
        "ch/a": ["```{prf:definition} D\n:label: a-def1\nx\n```\n\n```{prf:example}\n:label: a-ex1\ny\n```",
                 "```{prf:proof}\nz\n```\n```{prf:definition} E\n:label: a-def2\n:nonumber:\nw\n```",
                 "```{prf:definition}\n:label: a-def3\n```\n```{exercise}\n:label: a-x1\n```\n"
                 "(a-sec)=\n## A section\n```{exercise}\n:label: a-x2\n```"],
        "ch/b": ["```{prf:theorem} T\n:label: b-thm\n```\n```{prf:definition}\n:label: b-def\n```"],
    }
    boxes = number_boxes({"ch/a": 4, "ch/b": 5}, sources)
    got = {k: (b.page, b.name()) for k, b in boxes.items()}
    assert got == {"a-def1": ("ch/a", "Definition 4.1"), "a-ex1": ("ch/a", "Example 4.1"),
                   "a-def2": ("ch/a", "Definition"), "a-def3": ("ch/a", "Definition 4.2"),
                   "a-x1": ("ch/a", "Exercise 4.1"), "a-x2": ("ch/a", "Exercise 4.2"),
                   "a-sec": ("ch/a", "A section"),
                   "b-thm": ("ch/b", "Theorem 5.1"), "b-def": ("ch/b", "Definition 5.1")}


def _toy_book() -> Book:
    return Book(root=REPO, chapters={"book/p/01_a": 1, "book/p/02_b": 2},
                titles={"book/p/01_a": "First", "book/p/02_b": "Second"},
                boxes={"b-def": Box("book/p/02_b", "definition", "2.3", "Thing"),
                       "b-ex": Box("book/p/02_b", "exercise", "2.1")},
                macros=MACROS, bib=parse_bib(BIB), site="https://x.github.io/y/",
                repo_url="https://github.com/x/y", branch="main",
                colab={"colab_url": "https://colab.research.google.com", "org": "x", "repo": "y",
                       "branch": "gh-pages", "folder": "colab"})


def test_convert_roles_and_directives():
    book = _toy_book()
    src = ("```{prf:definition} Space $\\R$\n:label: a-def\nBy {prf:ref}`b-def` and {ref}`b-ex`, "
           "{term}`group`s and {term}`acts <action>`; {cite:t}`one2001` in\n{doc}`/book/p/02_b`, "
           "{class}`~eqlib.models.MLP` and {glue:text}`acc:.2f`.\n% notation: K\n```\n\n"
           "```{solution} b-ex\n:class: dropdown\n\n$\\Ki{1}$\n```\n\n![f](recorded/f.png)\n\n"
           "`{term}` stays in code.")
    out = convert_markdown(src, book, "book/p/01_a")
    assert out.startswith("> **Definition (Space $\\mathbb{R}$).** By "
                          "[Definition 2.3](https://x.github.io/y/book/p/02_b.html#b-def) and "
                          "[Exercise 2.1](https://x.github.io/y/book/p/02_b.html#b-ex), groups and acts; "
                          "Bökman (2001) in\n> [Second](https://x.github.io/y/book/p/02_b.html), "
                          "[`MLP`](https://x.github.io/y/book/reference/api.html#eqlib.models.MLP) "
                          "and `acc`.\n\n<details>\n<summary><b>Solution to Exercise 2.1</b></summary>"
                          "\n\n$K_{1}$\n\n</details>\n\n"
                          "![f](https://raw.githubusercontent.com/x/y/main/book/p/recorded/f.png)\n\n"
                          "`{term}` stays in code.\n\n*Names in code font such as `acc` stand for numbers")
    assert "see the value computed above" in out
    assert convert_markdown("Accuracy {eval}`round(acc, 2)`.", book, "book/p/01_a").startswith(
        "Accuracy `round(acc, 2)`.\n\n*Names in code font")
    # the chapters' form of a glued number (eqlib.widgets.shown): the variant names its key
    assert convert_markdown('Accuracy {eval}`G("acc", ".2f")` and {eval}`G("n")`.', book,
                            "book/p/01_a").startswith("Accuracy `acc` and `n`.\n\n*Names in code font")
    # the chapters' citations (eqlib.widgets.labcite): links to the site's bibliography entry
    linked = convert_markdown("As [Bökman (2001)](../reference/bibliography.md#cite-one2001) show.",
                              book, "book/part1/01_a")
    assert linked == ("As [Bökman (2001)](https://x.github.io/y/book/reference/bibliography.html"
                      "#cite-one2001) show.\n")
    with pytest.raises(KeyError, match="no-such"):
        convert_markdown("{prf:ref}`no-such`", book, "book/p/01_a")


def test_colab_link_and_launch_button():
    book = _toy_book()
    assert colab_link(book, "book/p/02_b") == \
        "https://colab.research.google.com/github/x/y/blob/gh-pages/colab/02_b.ipynb"
    real = load_book(REPO)
    page = CHAPTERS[2]

    def context():   # as sphinx-book-theme's add_launch_buttons leaves it
        return {"header_buttons": [{"type": "group", "label": "launch-buttons", "buttons": [
            {"type": "link", "text": "Binder", "url": "https://mybinder.org/v2/gh/o/r/main?urlpath=x"},
            {"type": "link", "text": "Colab", "url": f"https://colab.research.google.com/github/o/r/blob/main/{page}.ipynb"},
        ]}]}

    app = SimpleNamespace(srcdir=str(REPO))
    ctx = context()
    colab._rewrite_colab_button(app, page, "page.html", ctx, None)
    buttons = {b["text"]: b["url"] for b in ctx["header_buttons"][0]["buttons"]}
    assert buttons["Colab"] == colab_link(real, page)
    assert buttons["Colab"].endswith(f"/blob/{real.colab['branch']}/{real.colab['folder']}/{Path(page).name}.ipynb")
    assert buttons["Binder"] == context()["header_buttons"][0]["buttons"][0]["url"]
    other = context()
    colab._rewrite_colab_button(app, "book/reference/glossary", "page.html", other, None)
    assert other == context()


def test_config_and_workflow_agree():
    """_config.yml enables the extension and says where the variants live; the book
    workflow writes them with the CLI and pushes them to that branch and folder."""
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    assert "eqlib.widgets.colab" in config["sphinx"]["extra_extensions"]
    assert config["launch_buttons"]["colab_branch"] and config["launch_buttons"]["colab_folder"]
    flow = (REPO / ".github" / "workflows" / "book.yml").read_text()
    assert "python -m eqlib.widgets.colab --out _build/html/" in flow
    assert "python -m eqlib.widgets.colab --where" in flow
    assert "contents: write" in flow


def test_cli_writes_and_checks(tmp_path, capsys):
    assert colab.main(["--out", str(tmp_path), "03", "book/part2/07_mlps"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["03_models_and_submodels.ipynb", "07_mlps.ipynb"]
    assert colab.main(["--where"]) == 0
    assert capsys.readouterr().out.strip().endswith("gh-pages colab")
    with pytest.raises(ValueError, match="names no single chapter"):
        colab.main(["--out", str(tmp_path), "99"])
