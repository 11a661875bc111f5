"""Sphinx extension: a chapter that fails to execute still gets its page, headed by a warning.

With ``nb_execution_raise_on_error: false`` (``_config.yml``), myst-nb logs a failed
chapter as a warning and renders it with the outputs it has, the error included; the
other chapters build as usual, and ``jupyter-book build . -W`` (the tests, CI) still fails
at the end. This extension puts a warning box at the top of such a page, saying that
the chapter did not finish executing, which error stopped it, and where the full
traceback is (``_build/html/reports/<page>.err.log``), so a reader of a partly built
book knows the page is incomplete.

Chapter: every chapter (the first is *Introduction*, book/part1/01_introduction).
"""
from __future__ import annotations

import re

from docutils import nodes

__all__ = ["setup", "failure_summary"]


def failure_summary(traceback: str | None, error: str | None) -> str:
    """The line that names the exception in a cell-execution traceback: its last line that
    starts with an exception name (``ZeroDivisionError: division by zero``), else ``error``.

    Examples:
        >>> failure_summary("...\\n----> 1 1/0\\n\\nZeroDivisionError: division by zero\\n", "X")
        'ZeroDivisionError: division by zero'
        >>> failure_summary(None, "CellTimeoutError")
        'CellTimeoutError'

    Chapter: every chapter (the first is *Introduction*, book/part1/01_introduction).
    """
    clean = re.sub(r"\x1b\[[0-9;]*m", "", traceback or "")
    lines = [ln.strip() for ln in clean.splitlines()
             if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Timeout)\b:?", ln.strip())]
    return lines[-1][:300] if lines else (error or "unknown error")


def _flag_failed(app, doctree) -> None:
    try:
        from myst_nb.sphinx_ import NbMetadataCollector
    except ImportError:  # pragma: no cover - myst-nb is what executes the chapters
        return
    data = NbMetadataCollector.get_exec_data(app.env, app.env.docname)
    if not data or data.get("succeeded", True):
        return
    what = failure_summary(data.get("traceback"), data.get("error"))
    box = nodes.warning()
    box += nodes.paragraph(text=(
        f"This chapter did not finish executing when the book was built ({what}). Its outputs "
        "stop at the cell that failed; the cells after it show no output. The full traceback "
        f"is in the build's reports/{app.env.docname}.err.log."))
    box["classes"].append("eqlib-failed-execution")
    sections = list(doctree.findall(nodes.section))
    if sections:
        title = sections[0].next_node(nodes.title)
        index = sections[0].index(title) + 1 if title is not None else 0
        sections[0].insert(index, box)
    else:
        doctree.insert(0, box)


def setup(app):
    """Register the extension (``sphinx.extra_extensions`` in ``_config.yml``).

    Chapter: every chapter (the first is *Introduction*, book/part1/01_introduction).
    """
    app.connect("doctree-read", _flag_failed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
