"""Sphinx extension: every page loads each script once.

Jupyter Book 1 with sphinx-thebe 0.3.1 adds sphinx-thebe's inline configuration
(``const THEBE_JS_URL = …``) twice to every page (and sphinx-togglebutton its selector), so the browser's console shows
"Identifier 'THEBE_JS_URL' has already been declared" on every page of the book. This
extension drops a script that repeats an earlier one (same file or same inline body, same
attributes) from each page's list just before the page is written.

Chapter: every chapter (the first is *Introduction*, book/part1/01_introduction).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["setup", "unique_scripts"]


def unique_scripts(scripts: Iterable[Any]) -> list[Any]:
    """``scripts`` (Sphinx's ``script_files`` entries, or plain file names) without the
    entries that repeat an earlier one, in their order.

    Examples:
        >>> unique_scripts(["a.js", "b.js", "a.js"])
        ['a.js', 'b.js']

    Chapter: every chapter (the first is *Introduction*, book/part1/01_introduction).
    """
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    out = []
    for script in scripts:
        attributes = getattr(script, "attributes", None) or {}
        # an inline script's file name is None or "" depending on who added it
        key = (str(getattr(script, "filename", script) or ""),
               tuple(sorted((str(k), str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            out.append(script)
    return out


def _dedupe(app, pagename, templatename, context, doctree) -> None:
    if "script_files" in context:
        context["script_files"] = unique_scripts(context["script_files"])


def setup(app) -> dict[str, Any]:
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
