"""Binder's environment is a student's: the CPU build of torch, the chapters' needs, no maintainer tools."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BINDER = REPO / "binder" / "requirements.txt"
MAINTAINER_TOOLS = {"pytest", "pytest-timeout", "nbval", "nbgrader", "hypothesis", "playwright",
                    "jupyter-book", "sphinx-mathjax-offline", "sphinx-exercise", "sphinx-proof"}


def _requirements(path: Path) -> dict[str, str]:
    """name -> full line, for every requirement line (options and comments skipped)."""
    reqs = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        reqs[re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower()] = line
    return reqs


def test_binder_takes_the_cpu_build_of_the_pinned_torch():
    text = BINDER.read_text()
    assert re.search(r"^--(extra-)?index-url \S+/whl/cpu\s*$", text, re.M), "no CPU index for torch"
    top = _requirements(REPO / "requirements.txt")
    assert _requirements(BINDER)["torch"] == top["torch"], "binder pins another torch than requirements.txt"


def test_binder_installs_what_the_chapters_import_and_no_maintainer_tools():
    binder, top = _requirements(BINDER), _requirements(REPO / "requirements.txt")
    assert not MAINTAINER_TOOLS & set(binder), sorted(MAINTAINER_TOOLS & set(binder))
    assert "-e ." in BINDER.read_text().splitlines()
    needed = set(top) - MAINTAINER_TOOLS - {"nbformat", "nbclient"}
    assert needed <= set(binder), f"binder lacks {sorted(needed - set(binder))}"
