"""Numbers in a chapter's prose that both the book and JupyterLab show.

A chapter computes a number in a code cell and quotes it in the markdown below. The book
(Sphinx, myst-nb) pastes glued values with ``{glue:text}``; JupyterLab (jupyterlab-myst)
knows no glue but evaluates inline expressions, ``{eval}`` roles, in the kernel when a
markdown cell runs. One object serves both::

    G = Shown()
    G.glue("acc", 0.7312)          # stores it and calls myst_nb's glue(..., display=False)

and in markdown ``{eval}`G("acc", ".2f")``` shows ``0.73``:

- in JupyterLab the kernel evaluates ``G("acc", ".2f")``: a :class:`ShownText`, a string
  whose repr is the text itself (no quotes);
- in the book this module, a Sphinx extension loaded after myst-nb (``_config.yml``),
  replaces myst-nb's ``eval`` role: it accepts exactly ``G("key")`` or
  ``G("key", "format")`` and pastes the glued value as ``{glue:text}`key:format``` would;
  anything else is a build warning (``-W`` fails).

Both format the same text (the value's ``text/plain``, as glue stores it) with the same
function (myst-nb's ``format_plain_text``), so the two show the same digits.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["Shown", "ShownText", "EVAL_FORM", "eval_markdown", "shown_code", "setup"]

#: The one form of ``{eval}`` the book accepts, ``G("key")`` or ``G("key", "format")``.
#:
#: :meta hide-value:
EVAL_FORM = re.compile(r'^G\(\s*"(?P<key>[^"\\]+)"\s*(?:,\s*"(?P<fmt>[^"\\]*)"\s*)?\)$')


class ShownText(str):
    """A string shown without quotes (its repr is itself), as ``{eval}`` displays it.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))


def _check_key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, got {type(key).__name__} {key!r}")
    if not key or '"' in key or "\\" in key or ":" in key:
        raise ValueError(f"key must be a non-empty str without '\"', '\\\\' or ':', got {key!r}")
    return key


class Shown:
    """The values a chapter quotes in its prose: ``G.glue(key, value)`` stores one (and
    glues it for the book), ``G(key, fmt)`` formats it as the book does.

    Examples:
        >>> G = Shown()
        >>> G._text["acc"] = "0.7312"        # what G.glue("acc", 0.7312) stores
        >>> G("acc", ".2f")
        0.73
        >>> G("acc")
        0.7312

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """

    def __init__(self) -> None:
        self._text: dict[str, str] = {}

    def glue(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` and call myst-nb's ``glue(key, value,
        display=False)`` (the book pastes it from the cell's output).

        Chapter: *Reproducing the CIFAR-10 experiment*.
        """
        from IPython.core.formatters import format_display_data
        from myst_nb import glue

        _check_key(key)
        bundle, _ = format_display_data(value)
        self._text[key] = bundle.get("text/plain", repr(value))
        glue(key, value, display=False)

    def __call__(self, key: str, fmt: str = "") -> ShownText:
        """The text of ``key`` formatted by ``fmt`` (a format spec such as ``".2f"``; empty:
        as ``{glue:text}`` shows it), exactly as the book shows it.

        Chapter: *Reproducing the CIFAR-10 experiment*.
        """
        from myst_nb.core.variables import format_plain_text

        _check_key(key)
        if not isinstance(fmt, str):
            raise TypeError(f"fmt must be a str (a format spec such as '.2f'), got {fmt!r}")
        if key not in self._text:
            raise KeyError(f"key {key!r} was not glued yet (glued: {sorted(self._text)}); "
                           "run the code cells above first")
        return ShownText(format_plain_text(self._text[key], fmt or "s"))

    def __contains__(self, key: object) -> bool:
        return key in self._text


# ---------------------------------------------------------------------------------------
# Converting a chapter written with myst-nb's glue (benchmarks/lab_markup.py).

_GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`(?P<key>[^`:]+)(?::(?P<fmt>[^`:]*))?`")
_GLUE_CALL = re.compile(r"(?<![\w.])glue\(")
_IMPORT = "from eqlib.widgets.shown import Shown"


def eval_markdown(source: str) -> str:
    """``{glue:text}`key:fmt``` (and ``{glue}`key```, ``{glue:text}`key```) in a markdown
    cell as ``{eval}`G("key", "fmt")``` (``{eval}`G("key")```); idempotent.

    Examples:
        >>> eval_markdown("reaches {glue:text}`acc:.2f` after {glue}`n` epochs")
        'reaches {eval}`G("acc", ".2f")` after {eval}`G("n")` epochs'

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    def one(m):
        fmt = m.group("fmt")
        return f'{{eval}}`G("{m.group("key")}"' + (f', "{fmt}")`' if fmt else ')`')

    return _GLUE_ROLE.sub(one, source)


def _call_end(source: str, start: int) -> int:
    """Index of the parenthesis that closes the one opened at ``source[start]``."""
    depth, quote, i = 0, None, start
    while i < len(source):
        c = source[i]
        if quote:
            if c == "\\":
                i += 1
            elif source.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif c in "\"'":
            quote = source[i:i + 3] if source[i:i + 3] in ('"""', "'''") else c
            i += len(quote) - 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"unbalanced call at {source[start - 4:start + 40]!r}")


def shown_code(source: str) -> str:
    """A code cell written with myst-nb's ``glue(key, value, display=False)`` rewritten
    for :class:`Shown`: the calls become ``G.glue(key, value)``, the import of ``glue``
    becomes ``Shown``'s and ``G = Shown()`` follows the imports; idempotent.

    Examples:
        >>> print(shown_code('from myst_nb import glue\\nx = 1\\nglue("x", x, display=False)'))
        from eqlib.widgets.shown import Shown
        G = Shown()  # the numbers the prose quotes: {eval}`G("key", ".2f")`
        x = 1
        G.glue("x", x)

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    out, i = [], 0
    for m in _GLUE_CALL.finditer(source):
        if m.start() < i:
            continue
        end = _call_end(source, m.end() - 1)
        args = source[m.end():end]
        kept = re.sub(r",\s*display\s*=\s*False\s*$", "", args)
        if re.search(r"\bdisplay\s*=", kept):
            raise ValueError(f"glue({args}): only display=False glue calls convert (Shown "
                             "never displays)")
        out.append(source[i:m.start()] + f"G.glue({kept})")
        i = end + 1
    source = "".join(out) + source[i:]
    lines = source.split("\n")
    if "from myst_nb import glue" in lines:
        at = lines.index("from myst_nb import glue")
        lines[at] = _IMPORT
        end = at + 1   # after the import block (continuation lines are indented)
        while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t)#"
                                    or lines[end].startswith(("import ", "from "))):
            end += 1
        while end > at + 1 and not lines[end - 1].strip():
            end -= 1
        lines.insert(end, 'G = Shown()  # the numbers the prose quotes: {eval}`G("key", ".2f")`')
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Sphinx: the book's {eval} role pastes glued values.


def _eval_role(name, rawtext, text, lineno, inliner, options=None, content=()):
    from docutils.utils import unescape
    from myst_nb.ext.glue.roles import PasteTextRole

    m = EVAL_FORM.match(unescape(text).strip())
    if not m:
        msg = inliner.reporter.warning(
            f"{{eval}}`{text}`: the book evaluates only G(\"key\") or G(\"key\", \"format\") "
            "(eqlib.widgets.shown), the glued value of key", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    key, fmt = m.group("key"), m.group("fmt")
    target = key if fmt is None else f"{key}:{fmt}"
    return PasteTextRole()("glue:text", rawtext, target, lineno, inliner, options or {}, content)


def setup(app) -> dict[str, Any]:
    """Sphinx extension: ``{eval}`G("key", "fmt")``` pastes the glued value of ``key``
    (myst-nb's ``{glue:text}``). Listed after myst-nb, whose own ``eval`` role it replaces.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    app.setup_extension("myst_nb")
    app.add_role("eval", _eval_role, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
