"""The bibliography of the Colab variants: a small ``references.bib`` parser and
author–year citations (:func:`~eqlib.widgets.colab_bib.parse_bib`,
:func:`~eqlib.widgets.colab_bib.cite`). :mod:`eqlib.widgets.colab` re-exports them.

Chapter: every chapter (the first is *Introduction*, book/part1/01_introduction).
"""
from __future__ import annotations

import re
import unicodedata

__all__ = ["parse_bib", "cite", "author_year", "cite_text"]

# ---------------------------------------------------------------------------------------
# references.bib: a small parser (entries, braced/quoted/bare fields, LaTeX accents).

_ACCENTS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303",
            "=": "\u0304", ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b",
            "c": "\u0327", "k": "\u0328", "r": "\u030a"}
_LETTERS = {"ss": "ß", "o": "ø", "O": "Ø", "l": "ł", "L": "Ł", "ae": "æ", "AE": "Æ",
            "oe": "œ", "OE": "Œ", "aa": "å", "AA": "Å", "i": "ı", "j": "ȷ"}


def _delatex(text: str) -> str:
    """BibTeX text to Unicode: accents (``{\\"o}``, ``\\v{c}``), ``{\\L}``, ``--``, braces."""
    def accent(m):
        base = m.group(2) or m.group(3)
        base = _LETTERS.get(base.lstrip("\\"), base.lstrip("\\")) if base.startswith("\\") else base
        return unicodedata.normalize("NFC", base + _ACCENTS[m.group(1)])

    text = re.sub(r"\\([\"'`^~=.])\s*(?:\{(\\?[A-Za-z]+)\}|(\\?[A-Za-z]))", accent, text)
    text = re.sub(r"\\([uvHckr])(?:\{(\\?[A-Za-z]+)\}|\s+(\\?[A-Za-z]))", accent, text)
    text = re.sub(r"\\(ss|ae|AE|oe|OE|aa|AA|[oOlLij])(?![A-Za-z])\s*", lambda m: _LETTERS[m.group(1)], text)
    text = text.replace("---", "—").replace("--", "–").replace("~", "\u00a0")
    return re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()


def parse_bib(text: str) -> dict[str, dict[str, str]]:
    """Parse BibTeX into ``{key: {"type": ..., field: unicode value}}`` (fields lower-case).

    Handles ``@type{key, field = {...} | "..." | bare, ...}`` with nested braces; skips
    ``@comment``, ``@preamble`` and ``@string``. Values are LaTeX-decoded (accents,
    dashes, braces) by a small table, enough for author names and years.

    Chapter: every chapter that cites (the first is *Introduction*).
    """
    entries: dict[str, dict[str, str]] = {}
    i, n = 0, len(text)
    while True:
        at = text.find("@", i)
        if at < 0:
            return entries
        m = re.compile(r"@\s*([A-Za-z]+)\s*([{(])").match(text, at)
        if not m:
            i = at + 1
            continue
        kind, i = m.group(1).lower(), m.end()
        close = "}" if m.group(2) == "{" else ")"
        if kind in {"comment", "preamble", "string"}:
            i = _skip_group(text, m.end() - 1)
            continue
        comma = text.find(",", i)
        key = text[i:comma].strip()
        i = comma + 1
        fields = {"type": kind}
        while True:
            while i < n and text[i] in " \t\r\n,":
                i += 1
            if i >= n or text[i] == close:
                i += 1
                break
            fm = re.compile(r"([A-Za-z][\w\-:]*)\s*=\s*").match(text, i)
            if not fm:
                raise ValueError(f"references.bib: cannot read a field of {key!r} near {text[i:i + 40]!r}")
            name, i = fm.group(1).lower(), fm.end()
            parts = []
            while True:   # value, possibly concatenated with #
                if text[i] == "{":
                    end = _skip_group(text, i)
                    parts.append(text[i + 1:end - 1])
                elif text[i] == '"':
                    end = text.index('"', i + 1)
                    while text[i + 1:end].count("{") != text[i + 1:end].count("}"):
                        end = text.index('"', end + 1)
                    parts.append(text[i + 1:end])
                    end += 1
                else:
                    bm = re.compile(r"[^,}\s#)]+").match(text, i)
                    end = bm.end()
                    parts.append(bm.group(0))
                i = end
                while i < n and text[i] in " \t\r\n":
                    i += 1
                if i < n and text[i] == "#":
                    i += 1
                    while text[i] in " \t\r\n":
                        i += 1
                    continue
                break
            fields[name] = _delatex("".join(parts))
        entries[key] = fields


def _skip_group(text: str, i: int) -> int:
    """Index after the brace (or parenthesis) group that opens at ``text[i]``."""
    open_, close = text[i], "}" if text[i] == "{" else ")"
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError(f"unbalanced {open_!r} at offset {i}")


def _last_names(author: str) -> list[str]:
    people = [p.strip() for p in re.split(r"\s+and\s+", author) if p.strip()]
    names = []
    for p in people:
        if p == "others":
            names.append("others")
        elif "," in p:
            names.append(p.split(",")[0].strip())
        else:  # "First von Last": the last word (a braced corporate name stays whole)
            names.append(p.split()[-1])
    return names


def _authors(entry: dict[str, str]) -> str:
    names = _last_names(entry.get("author") or entry.get("editor") or "Anonymous")
    if len(names) >= 3 or "others" in names:
        return f"{names[0]} et al."
    return " and ".join(names)


def cite(keys: str, bib: dict[str, dict[str, str]], mode: str = "p") -> str:
    """Author–year text of ``{cite:t}`` (``mode="t"``: "Author (year)") or ``{cite:p}``
    (``mode="p"``: "(Author, year)"); several comma-separated keys are joined with ";".

    As sphinxcontrib-bibtex's author-year style: one author by name, two joined by
    "and", three or more as "First et al.".

    Chapter: every chapter that cites (the first is *Introduction*).
    """
    return cite_text(author_year(keys, bib, mode), mode)


def author_year(keys: str, bib: dict[str, dict[str, str]], mode: str = "p") -> list[tuple[str, str]]:
    """``[(key, "Author (year)" or "Author, year"), ...]`` for the comma-separated
    ``keys``: the pieces of :func:`~eqlib.widgets.colab_bib.cite`, one per key.

    Chapter: every chapter that cites (the first is *Introduction*).
    """
    if mode not in {"t", "p"}:
        raise ValueError(f"mode must be 't' or 'p', got {mode!r}")
    parts = []
    for key in [k.strip() for k in keys.split(",") if k.strip()]:
        if key not in bib:
            raise KeyError(f"citation key {key!r} is not in references.bib")
        who, year = _authors(bib[key]), bib[key].get("year", "n.d.")
        parts.append((key, f"{who} ({year})" if mode == "t" else f"{who}, {year}"))
    return parts


def cite_text(parts: list[tuple[str, str]], mode: str = "p") -> str:
    """Join the texts of :func:`~eqlib.widgets.colab_bib.author_year` (already formatted,
    links for instance) as a citation: "A (2020); B (2021)" or "(A, 2020; B, 2021)".

    Chapter: every chapter that cites (the first is *Introduction*).
    """
    texts = [text for _, text in parts]
    return "; ".join(texts) if mode == "t" else "(" + "; ".join(texts) + ")"
