"""Paths and the table of contents of the book, for the tests in tests/book."""
from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "_build"
HTML = BUILD / "html"
SCREENSHOTS = BUILD / "screenshots"
BUILD_CMD = ["jupyter-book", "build", ".", "-W", "-n", "--keep-going"]


def toc_pages() -> list[str]:
    """Every page of _toc.yml (root first), as paths without suffix, e.g. book/part1/01_introduction."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    pages = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                pages.append(e["file"])
            walk(e.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return pages


def chapter_pages() -> list[str]:
    """The chapters (pages under book/partN/)."""
    return [p for p in toc_pages() if p.startswith("book/part")]
