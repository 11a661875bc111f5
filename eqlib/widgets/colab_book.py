"""The book as the Colab variants see it: its configuration (``_config.yml``,
``_toc.yml``), its math macros, its chapters and the numbers of its boxes
(:func:`~eqlib.widgets.colab_book.load_book`, :class:`~eqlib.widgets.colab_book.Book`,
:func:`~eqlib.widgets.colab_book.number_boxes`, :func:`~eqlib.widgets.colab_book.expand_macros`).
:mod:`eqlib.widgets.colab` re-exports every name.

Chapter: every chapter (the first is *Introduction*, book/part1/01_introduction).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .colab_bib import _skip_group, parse_bib

__all__ = ["ROOT", "Book", "Box", "load_book", "expand_macros", "number_boxes", "colab_link"]

#: The repository root (where ``_config.yml`` and ``_toc.yml`` are).
ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------------------
# Configuration: the one place for every address is _config.yml.


def _yaml(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf8")) or {}


def _github(repo_url: str) -> tuple[str, str]:
    """``https://github.com/ORG/REPO`` -> (ORG, REPO)."""
    m = re.match(r"https?://github\.com/([^/]+)/([^/#?]+?)(?:\.git)?/?$", repo_url.strip())
    if not m:
        raise ValueError(f"repository.url must be a GitHub repository, got {repo_url!r}")
    return m.group(1), m.group(2)


def _site_url(config: dict) -> str:
    """``html.baseurl`` if set, else the repository's GitHub Pages address; ends with '/'."""
    base = (config.get("html") or {}).get("baseurl")
    if not base:
        org, repo = _github(config["repository"]["url"])
        base = f"https://{org.lower()}.github.io/{repo}/"
    return base.rstrip("/") + "/"


def _chapters_from_toc(toc: dict) -> list[tuple[str, int | None]]:
    """Every page of ``_toc.yml`` with its chapter number (None outside numbered parts)."""
    pages: list[tuple[str, int | None]] = []
    number = 0

    def walk(entries, numbered):
        nonlocal number
        for e in entries or []:
            if "file" in e:
                if numbered:
                    number += 1
                pages.append((e["file"], number if numbered else None))
            walk(e.get("sections"), False)

    pages.append((toc["root"], None))
    for part in toc.get("parts", []):
        walk(part.get("chapters"), bool(part.get("numbered")))
    walk(toc.get("chapters"), False)
    return pages


# ---------------------------------------------------------------------------------------
# Math macros (mathjax3_config.tex.macros of _config.yml).


def _macros(config: dict) -> dict[str, tuple[str, int]]:
    raw = config["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]
    return {name: (v, 0) if isinstance(v, str) else (v[0], int(v[1])) for name, v in raw.items()}


def _argument(text: str, i: int) -> tuple[str, int]:
    """One TeX argument at ``text[i:]`` (a braced group, a control word or one char)."""
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text):
        return "", i
    if text[i] == "{":
        end = _skip_group(text, i)
        return text[i + 1:end - 1], end
    m = re.compile(r"\\[A-Za-z]+|\\.").match(text, i)
    if m:
        return m.group(0), m.end()
    return text[i], i + 1


def expand_macros(text: str, macros: dict[str, tuple[str, int]]) -> str:
    """Replace every ``\\name`` of ``macros`` (``{name: (body, n_args)}``, the MathJax
    format) by its body, arguments substituted for ``#1`` … (``\\Ki{i}`` -> ``K_{i}``,
    ``\\Ki i`` too); repeats until no macro is left (macros may use macros).

    Chapter: every chapter (the macros are those of ``_config.yml``).
    """
    if not macros:
        return text
    pattern = re.compile(r"\\\\|\\(" + "|".join(sorted(map(re.escape, macros), key=len, reverse=True))
                         + r")(?![A-Za-z])")
    for _ in range(20):
        out, i, changed = [], 0, False
        for m in pattern.finditer(text):
            if m.start() < i or m.group(0) == "\\\\":
                continue
            body, nargs = macros[m.group(1)]
            j = m.end()
            args = []
            for _k in range(nargs):
                a, j = _argument(text, j)
                args.append(a)
            for k, a in enumerate(args, 1):
                body = body.replace(f"#{k}", a)
            out.append(text[i:m.start()] + body)
            i, changed = j, True
        text = "".join(out) + text[i:]
        if not changed:
            return text
    raise ValueError("math macros expand without end (a macro that uses itself?)")


# ---------------------------------------------------------------------------------------
# The book: chapters, numbers, labels.

_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|:{3,})\{(?P<name>[^}\s]+)\}[ \t]*(?P<arg>.*?)\s*$")
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")
_TARGET = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_PRF_UNNUMBERED = {"proof"}


@dataclass
class Box:
    """A numbered thing a label names: a prf box, an exercise, or a section target."""

    page: str
    kind: str            # "definition", "exercise", ..., "section"
    number: str | None   # "3.2" (None: unnumbered)
    title: str = ""

    def name(self) -> str:
        """The text a reference shows: "Definition 3.2", "Exercise 1.1", a section title."""
        if self.kind == "section":
            return self.title
        word = self.kind.capitalize()
        return f"{word} {self.number}" if self.number else word


@dataclass
class Book:
    """What the converter needs to know of the repository (see
    :func:`~eqlib.widgets.colab_book.load_book`)."""

    root: Path
    chapters: dict[str, int]               # page -> chapter number, in book order
    titles: dict[str, str]                 # page -> title (first heading)
    boxes: dict[str, Box]                  # label -> box
    macros: dict[str, tuple[str, int]]
    bib: dict[str, dict[str, str]]
    site: str                              # published site, ends with "/"
    repo_url: str
    branch: str                            # the repository's branch (images)
    colab: dict[str, str] = field(default_factory=dict)   # colab_url, org, repo, branch, folder

    def page_url(self, page: str, anchor: str = "") -> str:
        return f"{self.site}{page.strip('/')}.html" + (f"#{anchor}" if anchor else "")

    def variant_name(self, page: str) -> str:
        return Path(page).name + ".ipynb"


def _directives(lines: list[str]):
    """Yield (name, arg, options, body lines) of every top-level directive, in order."""
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        fm = _FENCE.match(lines[i])
        if m:
            end = _close(lines, i, m.group("fence"))
            opts, body = _options(lines[i + 1:end])
            yield m.group("name"), m.group("arg"), opts, body
            yield from _directives(body)
            i = end + 1
        elif fm:
            i = _close(lines, i, fm.group("fence")) + 1
        else:
            i += 1


def _close(lines: list[str], start: int, fence: str) -> int:
    """Index of the line that closes the fence opened at ``lines[start]`` (or len)."""
    closing = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
    for j in range(start + 1, len(lines)):
        if closing.match(lines[j]):
            return j
    return len(lines)


def _options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    opts, k = {}, 0
    while k < len(body) and (om := re.match(r"^\s*:([\w\-]+):\s*(.*?)\s*$", body[k])):
        opts[om.group(1)] = om.group(2)
        k += 1
    return opts, body[k:]


def number_boxes(pages: dict[str, int], sources: dict[str, list[str]]) -> dict[str, Box]:
    """Number every labelled box as the book does.

    ``pages`` maps each chapter to its number; ``sources`` maps it to its markdown cells.
    sphinx-proof numbers each kind on its own ("Definition 3.1", "Example 3.1", "Lemma
    3.1"), chapter by chapter; proofs are not numbered; ``:nonumber:`` boxes neither;
    sphinx-exercise numbers exercises the same way ("Exercise 3.1"). ``(label)=`` targets
    name the heading below them.

    Chapter: every chapter with numbered boxes (the first is *Introduction*).
    """
    boxes: dict[str, Box] = {}
    for page, chapter in pages.items():
        counts: dict[str, int] = {}
        for source in sources[page]:
            lines = source.splitlines()
            for name, arg, opts, _ in _directives(lines):
                kind = name.split(":", 1)[1] if name.startswith("prf:") else name
                if not (name.startswith("prf:") or name == "exercise") or kind in _PRF_UNNUMBERED:
                    continue
                number = None
                if "nonumber" not in opts:
                    counts[kind] = counts.get(kind, 0) + 1
                    number = f"{chapter}.{counts[kind]}"
                if "label" in opts:
                    boxes[opts["label"]] = Box(page, kind, number, arg)
            for j, line in enumerate(lines):
                if (t := _TARGET.match(line)):
                    title = next((h.group("title") for h in map(_HEADING.match, lines[j + 1:]) if h), "")
                    boxes[t.group("label")] = Box(page, "section", None, title)
    return boxes


def load_book(root: Path | str = ROOT) -> Book:
    """Read ``_config.yml``, ``_toc.yml``, ``references.bib`` and the chapters' markdown.

    Chapter: every chapter.
    """
    import nbformat

    root = Path(root)
    config = _yaml(root / "_config.yml")
    toc = _yaml(root / "_toc.yml")
    chapters = {page: n for page, n in _chapters_from_toc(toc) if n is not None}
    sources, titles = {}, {}
    for page in chapters:
        nb = nbformat.read(root / f"{page}.ipynb", as_version=4)
        sources[page] = [c.source for c in nb.cells if c.cell_type == "markdown"]
        titles[page] = next((h.group("title") for s in sources[page] for h in map(_HEADING.match, s.splitlines())
                             if h and s.lstrip().startswith("#")), Path(page).name)
    bibfiles = config.get("bibtex_bibfiles") or ["references.bib"]
    bib: dict[str, dict[str, str]] = {}
    for b in bibfiles:
        bib.update(parse_bib((root / b).read_text(encoding="utf8")))
    macros = _macros(config)
    titles = {p: expand_macros(t, macros) for p, t in titles.items()}
    repo = config["repository"]
    launch = config.get("launch_buttons") or {}
    org, name = _github(repo["url"])
    colab = {"colab_url": (launch.get("colab_url") or "https://colab.research.google.com").rstrip("/"),
             "org": org, "repo": name, "branch": launch.get("colab_branch", "gh-pages"),
             "folder": launch.get("colab_folder", "colab").strip("/")}
    return Book(root=root, chapters=chapters, titles=titles, boxes=number_boxes(chapters, sources),
                macros=macros, bib=bib, site=_site_url(config), repo_url=repo["url"].rstrip("/"),
                branch=repo.get("branch", "main"), colab=colab)


def colab_link(book: Book, page: str) -> str:
    """The address that opens the Colab variant of chapter ``page`` in Colab.

    Chapter: every chapter (its Colab launch button).
    """
    c = book.colab
    return f"{c['colab_url']}/github/{c['org']}/{c['repo']}/blob/{c['branch']}/{c['folder']}/{book.variant_name(page)}"
