"""Citations that JupyterLab shows: author–year links into the book's bibliography.

jupyterlab-myst (2.7) resolves no ``{cite}`` key: its citation table is always empty, and
a notebook can carry nothing (front matter, metadata) that fills it, so every ``{cite}``
shows "Citation Not Found" there. The chapters therefore cite in plain MyST links,
written from ``references.bib`` by :func:`convert_cites` (run by
``benchmarks/lab_markup.py``)::

    {cite:t}`shahverdi2026identifiable`
      ->  [Shahverdi et al. (2026)](../reference/bibliography.md#cite-shahverdi2026identifiable)
    {cite:p}`a,b`  ->  ([A, 2020](...#cite-a); [B, 2021](...#cite-b))

with the author–year text of :func:`eqlib.widgets.colab_bib.author_year` (the book's
``author_year`` style). JupyterLab shows the text and opens the bibliography page; in
the book, ``_config.yml`` sets ``bibtex_cite_id: "cite-{key}"`` so each entry of the
bibliography has the anchor :func:`cite_id`, and this module, a Sphinx extension, resolves
the links to it (myst-parser alone accepts ``page.md#id`` only for headings); a link to
an entry that is not in the bibliography is a build warning.

Chapter: every chapter that cites (the first is *Introduction*, book/part1/01_introduction).
"""
from __future__ import annotations

import posixpath
from typing import Any

from .colab import _ROLE_OR_CODE
from .colab_book import _FENCE, _OPEN
from .colab_bib import author_year, cite_text

__all__ = ["BIBLIOGRAPHY", "cite_id", "cite_links", "convert_cites", "setup"]

#: The book's bibliography page (its ``{bibliography}`` lists every entry).
BIBLIOGRAPHY = "book/reference/bibliography"
_MODES = {"cite": "p", "cite:p": "p", "cite:ps": "p", "cite:alp": "p",
          "cite:t": "t", "cite:ts": "t", "cite:alt": "t"}


def cite_id(key: str) -> str:
    """The HTML id of ``key``'s bibliography entry, as sphinxcontrib-bibtex writes it with
    ``bibtex_cite_id: "cite-{key}"``.

    Examples:
        >>> cite_id("shahverdi2026identifiable")
        'cite-shahverdi2026identifiable'

    Chapter: every chapter that cites.
    """
    from docutils.nodes import make_id

    return make_id(f"cite-{key}")


def cite_links(keys: str, bib: dict[str, dict[str, str]], mode: str, href: str) -> str:
    """Markdown for a citation of the comma-separated ``keys``: author–year text, each
    author a link to ``href#cite_id(key)`` (``href``: the bibliography page, relative to
    the citing page). ``mode``: ``"t"`` (Author (year)) or ``"p"`` ((Author, year)).

    Examples:
        >>> bib = {"a": {"author": "Ann Smith", "year": "2020"}}
        >>> cite_links("a", bib, "t", "refs.md")
        '[Smith (2020)](refs.md#cite-a)'

    Chapter: every chapter that cites.
    """
    if not isinstance(href, str) or not href:
        raise ValueError(f"href must be a non-empty path, got {href!r}")
    parts = [(key, f"[{text}]({href}#{cite_id(key)})")
             for key, text in author_year(keys, bib, mode)]
    return cite_text(parts, mode)


def convert_cites(source: str, bib: dict[str, dict[str, str]], page: str) -> str:
    """Every ``{cite}``, ``{cite:p}`` and ``{cite:t}`` role in the markdown ``source`` of
    ``page`` (a path from the book's root, such as ``book/part1/01_introduction.ipynb``) as
    :func:`cite_links`; code spans, code blocks and everything else unchanged
    (idempotent).

    Examples:
        >>> bib = {"a": {"author": "Ann Smith", "year": "2020"}}
        >>> print(convert_cites("```{note}\\nAs {cite:t}`a`, `{cite}` x.\\n```\\n"
        ...                     "```\\n{cite}`a`\\n```", bib, "book/p/01_x.ipynb"))
        ```{note}
        As [Smith (2020)](../reference/bibliography.md#cite-a), `{cite}` x.
        ```
        ```
        {cite}`a`
        ```

    Chapter: every chapter that cites.
    """
    href = posixpath.relpath(f"{BIBLIOGRAPHY}.md", posixpath.dirname(page) or ".")

    def one(m):
        mode = _MODES.get(m.group("name") or "")
        return m.group(0) if mode is None else cite_links(m.group("body"), bib, mode, href)

    # fence lines are left alone (a directive's body is MyST and converted; a code block's
    # is not), so that no fence passes for a code span
    out, chunk, fences = [], [], []   # fences: the open ones, (marker, is a code block)
    for line in source.split("\n") + [None]:
        fence = _FENCE.match(line) if line is not None else None
        if line is None or fence or (fences and fences[-1][1]):
            if chunk:
                out.append(_ROLE_OR_CODE.sub(one, "\n".join(chunk)))
                chunk = []
            if line is None:
                break
            if fence:
                marker = fence.group("fence")
                info = line.strip()[len(marker):].strip()
                top = fences[-1][0] if fences else ""
                if top and not info and marker[0] == top[0] and len(marker) >= len(top):
                    fences.pop()
                elif not (fences and fences[-1][1]):
                    fences.append((marker, not _OPEN.match(line)))
            out.append(line)
        else:
            chunk.append(line)
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Sphinx: a link page.md#cite-KEY goes to KEY's entry in the bibliography.


def _resolve_cite_links(transform) -> None:
    from docutils import nodes
    from sphinx import addnodes
    from sphinx.util import logging

    env, doctree = transform.env, transform.document
    logger = logging.getLogger(__name__)
    entries = {c.citation_id: c.bibliography_key.docname for c in env.get_domain("cite").citations}
    for node in list(doctree.findall(addnodes.pending_xref)):
        target_id = node.get("reftargetid") or ""
        if node.get("refdomain") != "doc" or not target_id.startswith("cite-"):
            continue
        where = entries.get(target_id)
        if where != node["reftarget"]:
            logger.warning(f"citation link to {node['reftarget']}#{target_id}: no such entry in "
                           f"a bibliography (entries are 'cite-KEY', KEY from references.bib)",
                           location=node, type="eqlib", subtype="cite_link")
            node.replace_self(nodes.inline("", "", *(node[0].children if len(node) else [])))
            continue
        uri = transform.app.builder.get_relative_uri(env.docname, where) + "#" + target_id
        ref = nodes.reference("", "", internal=True, refuri=uri, classes=["eqlib-cite"])
        ref.extend(node[0].children if len(node) else [nodes.Text(target_id)])
        node.replace_self(ref)


def setup(app) -> dict[str, Any]:
    """Sphinx extension: resolve links to ``bibliography.md#cite-KEY`` (a post-transform
    before myst-parser's, which would look for a heading of that name).

    Chapter: every chapter that cites.
    """
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class CiteLinks(SphinxPostTransform):
        default_priority = 8   # myst-parser's resolver: 9, Sphinx's: 10

        def run(self, **kwargs: Any) -> None:
            _resolve_cite_links(self)

    app.setup_extension("sphinxcontrib.bibtex")
    app.add_post_transform(CiteLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
