"""The clean book build (-W -n --keep-going) and static checks of its HTML."""
from __future__ import annotations

import html
import json
import re

import pytest

from booktools import REPO, chapter_pages, toc_pages

pytestmark = pytest.mark.book

_PRE = re.compile(r"<(pre|code|script|style)\b.*?</\1>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_RAW_DIRECTIVE = re.compile(r"```\{|:::\{|\{(?:prf:[a-z]+|cite(?::[pt])?|term|doc|ref|numref|eq|glue:?[a-z]*|eval)\}`|^:label:|:class: dropdown", re.M)


def _main(html: str) -> str:
    m = re.search(r"<main\b.*?</main>", html, re.S)
    return m.group(0) if m else html


def _visible_text(html: str) -> str:
    return _TAG.sub(" ", _PRE.sub(" ", _main(html)))


def _words(text: str) -> list[str]:
    """Lower-case words, so markup (`code`, $math$, *emphasis*, entities) does not matter."""
    return re.findall(r"[a-z0-9]+", html.unescape(text).lower())


def _source_heading(page: str, repo=REPO) -> str:
    """The first level-1 heading of the page's source (.ipynb or .md), read without Sphinx."""
    path = next(p for p in (repo / f"{page}.ipynb", repo / f"{page}.md") if p.is_file())
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    return next(line[2:] for line in text.splitlines() if line.startswith("# "))


def _built_title(path) -> str:
    title = re.search(r"<title>(.*?)</title>", path.read_text(encoding="utf-8"), re.S).group(1)
    title = html.unescape(title).rsplit(" \u2014 ", 1)[0]  # "<page> — <book title>"
    return re.sub(r"^\d+\.\s+", "", title)  # chapter number of numbered parts


def test_build_succeeds(built_book, repo=REPO):
    """The entry page redirects to the root of _toc.yml, and every page of _toc.yml is built
    with the title its source's first heading gives (read from the sources, not the build)."""
    redirect = re.search(r'url=([^"\s]+)', (built_book / "index.html").read_text(encoding="utf-8"))
    pages = toc_pages()
    assert redirect and redirect.group(1) == f"{pages[0]}.html", "index.html does not redirect to the root page"
    for page in pages:
        path = built_book / f"{page}.html"
        assert path.is_file(), f"{page} is in _toc.yml but {path} was not built"
        assert _words(_built_title(path)) == _words(_source_heading(page, repo)), (
            f"{page}: built title {_built_title(path)!r}, source heading {_source_heading(page, repo)!r}")


@pytest.mark.parametrize("page", toc_pages())
def test_page(built_book, page):
    path = built_book / f"{page}.html"
    assert path.is_file(), f"{page} is in _toc.yml but {path} was not built"
    html = path.read_text(encoding="utf-8")
    main = _main(html)
    errors = re.findall(r'class="[^"]*\boutput (?:traceback|error)\b', main)
    assert not errors, f"{page}: {len(errors)} cell outputs are errors"
    assert "Traceback (most recent call last)" not in main, f"{page}: a traceback is shown"
    reprs = re.findall(r"&lt;[\w.]+(?: object)? at 0x[0-9a-f]+&gt;|<[\w.]+(?: object)? at 0x[0-9a-f]+>", main)
    assert not reprs, f"{page}: object reprs shown to readers (a cell ending in a bare call): {reprs[:3]}"
    raw = _RAW_DIRECTIVE.findall(_visible_text(html))
    assert not raw, f"{page}: unrendered directive or role text: {raw[:5]}"
    has_widgets = "application/vnd.jupyter.widget-view+json" in html
    loads_widget_js = re.search(r'<script[^>]*\bsrc="[^"]*widgets/embed-amd\.js', html) is not None
    assert has_widgets == loads_widget_js, (
        f"{page}: widget views {has_widgets}, widget JavaScript loaded {loads_widget_js} "
        "(it must load exactly on pages with widgets; is there a _static/ folder adding it everywhere?)")
    for cdn in ("cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com/@jupyter-widgets", "mathjax@"):
        assert cdn not in html, f"{page}: references the CDN {cdn!r}; the book must render offline"
    if page in chapter_pages():
        n_img = len(re.findall(r"<img\b", main))
        assert n_img > 0, f"{page}: a chapter without a figure (no <img> in the page)"


EXPERIMENTS = {"book/part3/10_relu_cnns_gcnns": 1, "book/part3/11_cifar_mlp": 4}


@pytest.mark.parametrize("page", sorted(EXPERIMENTS))
def test_experiment_pages_show_html_tables_and_their_budget(built_book, page):
    html = (built_book / f"{page}.html").read_text(encoding="utf-8")
    text = _visible_text(html)
    tables = len(re.findall(r'<table class="eqlib-table"', html))
    assert tables >= EXPERIMENTS[page], f"{page}: {tables} HTML result tables"
    assert not re.search(r"^\s*\|[^\n]*\|\s*$", text, re.M), f"{page}: a raw '| … |' table"
    budget = re.search(r"This page was computed at the\s+(?:<[^>]+>\s*)*(\w+)", _main(html))
    assert budget and budget.group(1) in ("laptop", "full"), f"{page}: does not say its budget"
    recorded = (REPO / "eqlib/recorded/gcnn_barrier_full.json").is_file()
    if page.endswith("10_relu_cnns_gcnns"):
        assert ("No published-scale run has been recorded yet" in text) != recorded


def test_player_buttons_need_no_special_glyphs(built_book):
    for page in chapter_pages():
        html = (built_book / f"{page}.html").read_text(encoding="utf-8")
        for glyph in ("\u23ee", "\u23ed", "&#x23EE;", "&#x23ED;"):
            assert glyph not in html, f"{page}: player button glyph {glyph!r} (missing in many fonts)"


def test_solutions_and_hidden_tests_are_folded(built_book):
    # a reader tries an exercise before seeing its solution code or the hidden tests
    cell = re.compile(r'<div class="cell\b([^"]*)"')
    for page in chapter_pages():
        main = _main((built_book / f"{page}.html").read_text(encoding="utf-8"))
        starts = [m.start() for m in cell.finditer(main)] + [len(main)]
        folded = 0
        for a, b in zip(starts, starts[1:]):
            chunk = main[a:b]
            if "BEGIN SOLUTION" in chunk or "BEGIN HIDDEN TESTS" in chunk:
                head = chunk[:chunk.find("BEGIN")]
                assert "tag_hide-input" in cell.match(chunk).group(1) and \
                    re.search(r'<details class="[^"]*\bhide above-input', head), \
                    f"{page}: a cell shows solution code or hidden tests unfolded"
                folded += 1
        assert folded, f"{page}: no folded exercise cell found (did the markup change?)"
