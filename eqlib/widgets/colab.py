"""Colab variants of the chapters: the same notebooks in plain Markdown.

Colab renders Markdown without MyST, so a chapter opened there as written shows its
``{prf:definition}`` boxes as code blocks, its roles (``{term}``, ``{prf:ref}``,
``{cite:t}``, ``{glue:text}`` …) as raw text, its front matter as a heading and the
book's math macros (``\\rhoin``, ``\\Ki{i}`` …) as errors. :func:`build` writes a variant
of every chapter that says the same in plain Markdown:

- directives become blockquotes with a bold title numbered as in the book
  ("**Definition 3.1 (Model of depth $L$).**", "**Exercise 3.2.**"), proofs blockquotes
  that start with "*Proof.*", written solutions collapsed ``<details>`` blocks;
- roles become text: a term its words, ``{doc}``/``{prf:ref}``/``{ref}`` links to the
  published site ("Definition 3.2"), citations author–year text from ``references.bib``,
  a glued number (``{glue:text}`key``` or ``{eval}`G("key", "fmt")```, see
  :mod:`eqlib.widgets.shown`) a pointer to the value the code above computes (variants
  are built from the unexecuted notebooks);
- the math macros of ``_config.yml`` are expanded; ``%`` comment lines, ``(label)=``
  targets and the front-matter cell are dropped; relative images point to the
  repository;
- code cells are unchanged (the set-up cell installs the course where it is missing).

Where things live is read from ``_config.yml``, nowhere else: the repository
(``repository.url``/``branch``), the site (``html.baseurl``, else the repository's GitHub
Pages address) and where Colab finds the variants (``launch_buttons.colab_branch`` and
``colab_folder``, the branch the book workflow pushes them to). As a Sphinx extension
(``sphinx.extra_extensions`` in ``_config.yml``) the module points each chapter's Colab
launch button at its variant.

Run (the book workflow does, after the build)::

    python -m eqlib.widgets.colab --out _build/html/colab          # every chapter
    python -m eqlib.widgets.colab --out /tmp/colab 03 book/part2/07_mlps
    python -m eqlib.widgets.colab --where                          # branch and folder

:func:`check_markdown` is the test of a variant: it renders a cell with a plain
CommonMark renderer and lists every raw directive, role, comment, label or macro left.

Chapter: every chapter (the first is *Introduction*, book/part1/01_introduction).
"""
from __future__ import annotations

import argparse
import copy
import functools
import posixpath
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .colab_bib import _last_names, cite, parse_bib
from .shown import EVAL_FORM
from .colab_book import (_FENCE, _OPEN, _TARGET, ROOT, Book, Box, _close, _github, _options, _yaml,
                         colab_link, expand_macros, load_book, number_boxes)

__all__ = ["ROOT", "STANDARD_TEX", "Book", "Box", "load_book", "build", "convert_notebook", "convert_markdown",
           "expand_macros", "parse_bib", "cite", "number_boxes", "check_markdown",
           "colab_link", "main", "setup"]
# the book's reading (colab_book) and its bibliography (colab_bib) live beside this module;
# their names stay importable from here
_MOVED = (Box, number_boxes, parse_bib, _last_names)


# ---------------------------------------------------------------------------------------
# Converting markdown.

_ROLE = r"\{(?P<name>[A-Za-z][\w:.\-]*)\}(?P<ticks>`+)(?P<body>.+?)(?P=ticks)(?!`)"
_CODE = r"(?P<cticks>`+)(?:.+?)(?P=cticks)(?!`)"
# A role or a code span, whichever starts first (a role starts at "{", before its backticks).
_ROLE_OR_CODE = re.compile(f"{_ROLE}|{_CODE}", re.S)
_LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?P<rest>[^)]*)\)")
_EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
_PY_ROLES = {"class", "func", "meth", "mod", "attr", "obj", "data", "exc", "const"}
_ADMONITIONS = {"note", "warning", "tip", "hint", "important", "caution", "attention", "danger",
                "error", "seealso", "admonition", "margin", "sidebar", "topic", "dropdown"}


@dataclass
class _Cell:
    """What converting one cell needs: the book, the chapter, and the glued keys met."""

    book: Book
    page: str
    glued: list[str] = field(default_factory=list)


def _explicit(body: str) -> tuple[str | None, str]:
    m = _EXPLICIT.match(body)
    return (m.group("text"), m.group("target")) if m and m.group("text") else (None, body)


def _role(name: str, body: str, ctx: _Cell) -> str:
    book, page = ctx.book, ctx.page
    name = name.removeprefix("py:")
    text, target = _explicit(body.strip())
    if name == "term":
        return text or target
    if name == "doc":
        doc = target.removesuffix(".ipynb").removesuffix(".md")
        doc = doc.strip("/") if doc.startswith("/") else posixpath.normpath(
            posixpath.join(posixpath.dirname(page), doc))
        return f"[{text or book.titles.get(doc, doc)}]({book.page_url(doc)})"
    if name in {"prf:ref", "ref", "numref", "prf:numref"}:
        box = book.boxes.get(target)
        if box is None:
            raise KeyError(f"{{{name}}}`{body}` in {page}: no label {target!r} in the chapters")
        return f"[{text or box.name()}]({book.page_url(box.page, target)})"
    if name in {"cite", "cite:p", "cite:ps", "cite:alp"}:
        return cite(target, book.bib, "p")
    if name in {"cite:t", "cite:ts", "cite:alt"}:
        return cite(target, book.bib, "t")
    if name.startswith("glue") or name == "eval":   # a value the executed notebook inserts
        shown = EVAL_FORM.match(target.strip()) if name == "eval" else None  # G("key", "fmt")
        ctx.glued.append(shown.group("key") if shown else target if name == "eval"
                         else target.split(":", 1)[0])
        return f"`{ctx.glued[-1]}`"
    if name in _PY_ROLES:
        path = target.lstrip("~.")
        shown = text or (path.rsplit(".", 1)[-1] if target.startswith("~") else path)
        return f"[`{shown}`]({book.page_url('book/reference/api', path)})"
    if name == "math":
        return f"${target}$"
    if name in {"sub", "sup"}:
        return f"<{name}>{target}</{name}>"
    return text or target   # any other role: its text


def _inline(text: str, ctx: _Cell) -> str:
    """Roles to text, macros expanded, relative links absolute; code spans untouched."""
    out, i = [], 0
    for m in _ROLE_OR_CODE.finditer(text):
        out.append(_plain(text[i:m.start()], ctx))
        if m.group("name"):
            out.append(expand_macros(_role(m.group("name"), m.group("body"), ctx), ctx.book.macros))
        else:
            out.append(m.group(0))
        i = m.end()
    out.append(_plain(text[i:], ctx))
    return "".join(out)


def _plain(text: str, ctx: _Cell) -> str:
    book, page = ctx.book, ctx.page
    text = expand_macros(text, book.macros)
    base = posixpath.dirname(page)

    def link(m):
        target, bang = m.group("target"), m.group("bang")
        if re.match(r"^[a-z][a-z0-9+.\-]*:|^#", target):
            return m.group(0)     # absolute address or an anchor of this page
        path, _, anchor = target.partition("#")
        path = path.strip("/") if path.startswith("/") else posixpath.normpath(posixpath.join(base, path))
        if bang:
            org, repo = _github(book.repo_url)
            url = f"https://raw.githubusercontent.com/{org}/{repo}/{book.branch}/{path}"
        elif re.search(r"\.(md|ipynb)$", path):
            url = book.page_url(path.rsplit(".", 1)[0], anchor)
        else:
            url = f"{book.repo_url}/blob/{book.branch}/{path}"
        return f"{bang}[{m.group('text')}]({url}{m.group('rest')})"

    return _LINK.sub(link, text)


def _quote(lines: list[str]) -> list[str]:
    return [f"> {line}" if line.strip() else ">" for line in lines]


def _starts_paragraph(line: str) -> bool:
    return bool(line.strip()) and not re.match(r"^\s*([-*+]\s|\d+[.)]\s|\$\$|>|#|`{3}|~{3}|\||<|\\\[)", line)


def _convert_lines(lines: list[str], ctx: _Cell) -> list[str]:
    out: list[str] = []
    chunk: list[str] = []

    def flush():
        if chunk:
            out.extend(_inline("\n".join(chunk), ctx).split("\n"))
            chunk.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if (m := _OPEN.match(line)):
            flush()
            end = _close(lines, i, m.group("fence"))
            opts, body = _options(lines[i + 1:end])
            out.extend(_directive(m.group("name"), m.group("arg"), opts, body, ctx))
            i = end + 1
            continue
        if (fm := _FENCE.match(line)):
            flush()
            end = _close(lines, i, fm.group("fence"))
            out.extend(lines[i:end + 1])
            i = end + 1
            continue
        if re.match(r"^\s{0,3}%", line) or _TARGET.match(line):
            i += 1    # a MyST comment or a (label)= target: not for readers
            continue
        chunk.append(line)
        i += 1
    flush()
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def _directive(name: str, arg: str, opts: dict[str, str], body: list[str], ctx: _Cell) -> list[str]:
    book = ctx.book
    inner = _convert_lines(body, ctx)
    title = _inline(arg, ctx).strip() if arg else ""
    kind = name.split(":", 1)[1] if name.startswith("prf:") else name
    label = opts.get("label")
    if name == "solution":
        box = book.boxes.get(arg.strip())
        summary = f"Solution to {box.name()}" if box else "Solution"
        return ["<details>", f"<summary><b>{summary}</b></summary>", "", *inner, "", "</details>"]
    if name in {"math", "prf:math"}:
        return ["$$", *inner, "$$"]
    if kind == "proof":
        head = "*Proof.*" + (f" ({title})" if title else "")
    elif name.startswith("prf:") or name == "exercise":
        box = book.boxes.get(label) if label else None
        number = box.number if box else None
        word = kind.capitalize() + (f" {number}" if number else "")
        head = f"**{word}" + (f" ({title})" if title else "") + ".**"
    elif name in _ADMONITIONS:
        head = f"**{title or name.capitalize()}.**"
    else:   # figures, tables, anything else: its title and body
        head = f"**{title}**" if title else ""
    if inner and head and _starts_paragraph(inner[0]):
        inner = [f"{head} {inner[0].lstrip()}", *inner[1:]]
    elif head:
        inner = [head, "", *inner]
    return _quote(inner) + [""]


def convert_markdown(source: str, book: Book, page: str = "") -> str:
    """One markdown cell of chapter ``page`` in plain Markdown (see the module's docstring).

    Chapter: every chapter.
    """
    ctx = _Cell(book, page)
    lines = _convert_lines(source.splitlines(), ctx)
    if ctx.glued:
        lines += ["", f"*Names in code font such as `{ctx.glued[0]}` stand for numbers that the code "
                      f"above computes: see the value computed above, or [this chapter's page]"
                      f"({book.page_url(page)}), which shows the book's run.*"]
    out, fence = [], None
    for line in lines:
        if fence is None and not line.strip() and out and not out[-1].strip():
            continue    # one blank line between blocks is enough
        m = _FENCE.match(line.lstrip("> ").rstrip()) if not _OPEN.match(line) else None
        if m and (fence is None or m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence)):
            fence = m.group("fence") if fence is None else None
        out.append(line)
    return "\n".join(out).rstrip() + "\n"


def _is_front_matter(cell) -> bool:
    return cell.cell_type == "markdown" and bool(re.match(r"^---\s*\n.*?\n---\s*$", cell.source.strip() + "\n",
                                                          re.S))


def convert_notebook(page: str, book: Book):
    """The Colab variant of chapter ``page`` (e.g. ``"book/part1/03_models_and_submodels"``):
    a header cell linking to the book, then every cell, markdown converted, code as it is.

    Chapter: every chapter.
    """
    import nbformat

    if page not in book.chapters:
        raise ValueError(f"page must be a chapter of _toc.yml, got {page!r} (chapters: {list(book.chapters)})")
    nb = nbformat.read(book.root / f"{page}.ipynb", as_version=4)
    out = copy.deepcopy(nb)
    cells = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            if (k == 0 and _is_front_matter(cell)) or "remove-cell" in cell.metadata.get("tags", []):
                continue
            cell = copy.deepcopy(cell)
            cell.source = convert_markdown(cell.source, book, page).rstrip("\n")
            cell.pop("attachments", None)
        cells.append(cell)
    number, title = book.chapters[page], book.titles[page]
    header = nbformat.v4.new_markdown_cell(
        f"*Chapter {number} of [{_yaml_title(book)}]({book.site}), in the plain Markdown that Colab "
        f"shows. The book's page of this chapter is [{title}]({book.page_url(page)}). Run the first "
        "code cell: it installs the course here.*")
    header.id = "colab-header"
    out.cells = [header] + cells
    out.metadata.setdefault("colab", {})["name"] = book.variant_name(page)
    return out


def _yaml_title(book: Book) -> str:
    return _yaml(book.root / "_config.yml").get("title", "the book")


def build(out: Path | str, chapters: list[str] | None = None, root: Path | str = ROOT,
          book: Book | None = None) -> list[Path]:
    """Write the Colab variant of each chapter (all of ``_toc.yml``'s by default) into
    ``out`` as ``NN_name.ipynb``; a chapter may be given as its page, file or number
    ("03"). Returns the files written.

    Chapter: every chapter.
    """
    import nbformat

    book = book or load_book(root)
    pages = _select(book, chapters)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for page in pages:
        path = out / book.variant_name(page)
        nbformat.write(convert_notebook(page, book), path)
        written.append(path)
    return written


def _select(book: Book, chapters: list[str] | None) -> list[str]:
    if not chapters:
        return list(book.chapters)
    pages = []
    for c in chapters:
        stem = c.removesuffix(".ipynb").strip("/")
        hits = [p for p in book.chapters if p == stem or Path(p).name == Path(stem).name
                or (stem.isdigit() and book.chapters[p] == int(stem))]
        if len(hits) != 1:
            raise ValueError(f"chapters: {c!r} names no single chapter (chapters: {list(book.chapters)})")
        pages.append(hits[0])
    return pages


# ---------------------------------------------------------------------------------------
# The check: what a plain Markdown renderer would show raw.

#: TeX commands that MathJax (and Colab's renderer) know without the book's macros, that
#: is the ones the chapters use and their usual neighbours. A command outside this set and
#: the book's macros is reported (add it here if it is standard TeX).
STANDARD_TEX = frozenset("""
alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi
pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta
Lambda Xi Pi Sigma Upsilon Phi Psi Omega
mathbb mathbf mathcal mathrm mathit mathsf mathtt mathfrak mathscr boldsymbol bm rm bf it
text textrm textbf textit texttt mbox operatorname
frac dfrac tfrac binom dbinom tbinom sqrt over choose
sum prod coprod int iint oint bigcup bigcap bigoplus bigotimes bigvee bigwedge lim limsup
liminf sup inf max min arg argmax argmin det dim ker exp log ln sin cos tan tanh sinh cosh
deg gcd hom Pr mod bmod pmod
cdot cdots ldots dots dotsc dotsb vdots ddots times div pm mp circ bullet ast star oplus
otimes ominus odot wedge vee cap cup setminus sqcup
le leq ge geq ne neq lt gt ll gg approx sim simeq cong equiv propto prec succ preceq succeq
in notin ni subset subseteq supset supseteq subsetneq supsetneq emptyset varnothing forall
exists nexists neg lnot land lor mid nmid parallel nparallel perp top bot vdash models
to gets mapsto rightarrow leftarrow leftrightarrow Rightarrow Leftarrow Leftrightarrow
longrightarrow longleftarrow longmapsto implies iff hookrightarrow twoheadrightarrow
uparrow downarrow rightleftharpoons xrightarrow xleftarrow nearrow searrow
infty partial nabla ell hbar Re Im aleph prime backslash angle triangle square Box blacksquare
langle rangle lvert rvert lVert rVert vert Vert lfloor rfloor lceil rceil lbrace rbrace
left right middle big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr
hat widehat tilde widetilde bar overline underline vec dot ddot check breve acute grave
overbrace underbrace overset underset stackrel overrightarrow overleftarrow
quad qquad enspace thinspace hspace vspace phantom hphantom vphantom displaystyle textstyle
scriptstyle scriptscriptstyle limits nolimits not
begin end matrix pmatrix bmatrix Bmatrix vmatrix Vmatrix smallmatrix cases aligned align
gathered array split substack
rtimes ltimes wr dagger ddagger star diamond triangleleft triangleright lhd rhd unlhd unrhd
checkmark colon vartriangle top intercal
label tag nonumber notag color boxed cancel
""".split())


def check_markdown(source: str, macros: dict[str, Any] | None = None) -> list[str]:
    """What a plain CommonMark renderer would show raw in a markdown cell: directive
    fences (three backticks or colons, then a brace: ``:::{note}``), roles (a braced
    name, then a code span), ``%`` comment lines, ``(label)=`` targets, directive option lines, front matter, and TeX commands
    in math that are neither standard (:data:`STANDARD_TEX`) nor expanded (any name in
    ``macros`` is an error). Returns one message per problem (empty: clean).

    Chapter: every chapter (the test of its Colab variant).
    """
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    problems: list[str] = []
    macros = macros or {}
    if re.match(r"^---\s*\n.*?\n---\s*(\n|$)", source.lstrip(), re.S):
        problems.append("front matter (--- ... ---) at the top of the cell")
    html = md.render(source)
    for token in md.parse(source):
        if token.type == "fence" and token.info.strip().startswith("{"):
            problems.append(f"raw directive fence ```{token.info.strip()}")
        if token.type != "inline":
            continue
        text = token.content
        prose = []     # the text outside code spans
        i = 0
        for m in _ROLE_OR_CODE.finditer(text):
            prose.append(text[i:m.start()])
            if m.group("name"):
                problems.append(f"raw role {m.group(0)[:60]!r}")
            i = m.end()
        prose.append(text[i:])
        prose_text = " ".join(prose)
        for m in re.finditer(r"\{[A-Za-z][\w:.\-]*\}`", prose_text):
            problems.append(f"raw role {m.group(0)!r} (unclosed)")
        for line in text.splitlines():
            if re.match(r"^\s*%", line):
                problems.append(f"comment line {line.strip()[:60]!r}")
            if _TARGET.match(line):
                problems.append(f"label target {line.strip()!r}")
            if re.match(r"^\s*:[\w\-]+:(\s|$)", line):
                problems.append(f"directive option {line.strip()[:60]!r}")
            if re.match(r"^\s*(`{3,}|:{3,})\{", line):
                problems.append(f"raw directive fence {line.strip()[:60]!r}")
        for m in re.finditer(r"\\\\|\\([A-Za-z]+)", prose_text):
            name = m.group(1)
            if name is None:
                continue
            if name in macros:
                problems.append(f"unexpanded macro \\{name}")
            elif name not in STANDARD_TEX:
                problems.append(f"unknown TeX command \\{name} (neither standard nor a book macro)")
    if re.search(r"\{[A-Za-z][\w:.\-]*\}<code>", html):
        problems.append("a role rendered as text followed by code")
    return problems


# ---------------------------------------------------------------------------------------
# Sphinx: the Colab launch button of each chapter opens its variant.


@functools.lru_cache(maxsize=4)
def _book_at(root: str) -> Book:
    return load_book(root)


def _rewrite_colab_button(app, pagename, templatename, context, doctree) -> None:
    book = _book_at(str(app.srcdir))
    if pagename not in book.chapters:
        return
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") == "Colab":
                button["url"] = colab_link(book, pagename)
                button["tooltip"] = "Launch on Colab (this chapter in plain Markdown)"


def setup(app) -> dict[str, Any]:
    """Sphinx extension: every chapter's Colab button opens its variant (after the
    theme's launch buttons, which run at priority 501).

    Chapter: every chapter.
    """
    app.connect("html-page-context", _rewrite_colab_button, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# ---------------------------------------------------------------------------------------
# CLI


def main(argv: list[str] | None = None) -> int:
    """``python -m eqlib.widgets.colab --out DIR [CHAPTER ...]``: write and check variants."""
    parser = argparse.ArgumentParser(
        prog="python -m eqlib.widgets.colab",
        description="Write the Colab variants of the chapters (plain Markdown, no MyST) and check "
                    "that nothing raw is left. The book workflow publishes them where Colab opens them.")
    parser.add_argument("chapters", nargs="*", help="chapters (page, file name or number); default: all")
    parser.add_argument("--out", type=Path, help="folder for the variants (NN_name.ipynb)")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: %(default)s)")
    parser.add_argument("--where", action="store_true",
                        help="print 'BRANCH FOLDER' where Colab opens the variants, and exit")
    args = parser.parse_args(argv)
    if args.where:
        book = load_book(args.root)
        print(book.colab["branch"], book.colab["folder"])
        return 0
    if args.out is None:
        parser.error("--out is required (or --where)")
    import nbformat

    book = load_book(args.root)
    written = build(args.out, args.chapters or None, book=book)
    macros = book.macros
    bad = 0
    for path in written:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                for p in check_markdown(cell.source, macros):
                    print(f"{path.name} cell {cell.get('id')}: {p}", file=sys.stderr)
                    bad += 1
        print(f"wrote {path}")
    if bad:
        print(f"{bad} problem(s): Colab would show raw MyST", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
