"""The reference pages cover the library and the glossary covers the terms the chapters use."""
from __future__ import annotations

import pkgutil
import re

import nbformat
import pytest

import eqlib
from booktools import REPO

REF = REPO / "book" / "reference"


def _public_modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(eqlib.__path__, "eqlib.")
            if not any(part.startswith("_") for part in m.name.split("."))]


def test_api_page_lists_every_public_module():
    api = (REF / "api.md").read_text()
    listed = set(re.findall(r"^\.\. automodule:: (\S+)", api, re.M))
    missing = sorted(set(_public_modules()) - listed)
    assert not missing, f"book/reference/api.md lacks an automodule for: {missing}"
    stale = sorted(listed - set(_public_modules()) - {"eqlib"})
    assert not stale, f"book/reference/api.md documents modules that do not exist: {stale}"


def test_glossary_defines_every_term_used():
    glossary = (REF / "glossary.md").read_text()
    block = glossary.split("```{glossary}", 1)[1].split("```", 1)[0]
    defined = {line.strip().lower() for line in block.splitlines() if line and not line[0].isspace() and not line.startswith(":")}
    used = set()
    for path in sorted((REPO / "book").rglob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                for term in re.findall(r"\{term\}`([^`]+)`", cell.source):
                    m = re.match(r"(.*)<(.+)>$", term)  # {term}`text <target>`
                    used.add((m.group(2) if m else term).strip().lower())
    assert not used - defined, f"terms used with {{term}} but not in the glossary: {sorted(used - defined)}"
    assert len(defined) >= 19
