"""The set-up cell and the front matter every chapter starts with (issue: Colab, Binder,
JupyterLab). Both are written by one migration script from ``_config.yml``: the macros of
``sphinx.config.mathjax3_config.tex.macros`` and the repository URL are defined there once.
The set-up cell's logic runs here offline: a no-op where eqlib is installed; where it is
missing, the exact install command (recorded, never run) and the data fetch."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((REPO / "_config.yml").read_text())
URL = CONFIG["repository"]["url"]
CHAPTERS = sorted(p for p in (REPO / "book").rglob("*.ipynb")
                  if re.match(r"\d\d_", p.name) and ".ipynb_checkpoints" not in p.parts
                  and "_build" not in p.parts)
IDS = [p.name for p in CHAPTERS]


def _cells(path: Path) -> dict[str, nbformat.NotebookNode]:
    nb = nbformat.read(path, as_version=4)
    return {c.get("id"): c for c in nb.cells}, nb


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_front_matter_carries_the_books_macros(path):
    cells, nb = _cells(path)
    front = nb.cells[0]
    assert front.get("id") == "eqlib-frontmatter" and front.cell_type == "markdown", \
        f"{path.name}: the first cell must be the front matter (id eqlib-frontmatter)"
    assert "remove-cell" in front.metadata.get("tags", []), "the book must not show it"
    text = front.source
    assert text.startswith("---\n") and text.rstrip().endswith("---")
    math = yaml.safe_load(text.strip().strip("-"))["math"]
    macros = CONFIG["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]
    expected = {f"\\{k}": (v[0] if isinstance(v, list) else v) for k, v in macros.items()}
    assert math == expected, f"{path.name}: its macros differ from _config.yml's (the one definition)"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_setup_cell_installs_from_the_configured_repository(path):
    cells, nb = _cells(path)
    setup = cells.get("eqlib-setup")
    assert setup is not None and setup.cell_type == "code", f"{path.name}: no set-up cell"
    assert nb.cells.index(setup) == 2, "the set-up cell follows the title"
    assert f'REPOSITORY = "{URL}"' in setup.source


def _run(source: str, monkeypatch, eqlib_present: bool):
    """Exec the cell with subprocess.run recorded (never run) and eqlib present or not."""
    calls, loads = [], []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw)))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "eqlib" and not eqlib_present
                        else real(name, *a))
    fake = types.ModuleType("eqlib.data")
    fake.load_cifar10 = lambda split, **kw: loads.append(split)
    monkeypatch.setitem(sys.modules, "eqlib.data", fake)
    exec(compile(source, "set-up cell", "exec"), {})
    return calls, loads


def _setup_source(path: Path) -> str:
    return _cells(path)[0]["eqlib-setup"].source


# one chapter that needs CIFAR-10 and one that does not (both kinds of set-up cell)
EXAMPLES = [next(p for p in CHAPTERS if "load_cifar10" in _setup_source(p)),
            next(p for p in CHAPTERS if "load_cifar10" not in _setup_source(p))]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_setup_cell_logic(path, monkeypatch):
    source = _setup_source(path)
    calls, loads = _run(source, monkeypatch, eqlib_present=True)
    assert calls == [] and loads == [], "with eqlib installed the cell does nothing"
    calls, loads = _run(source, monkeypatch, eqlib_present=False)
    assert [c for c, _ in calls] == [[sys.executable, "-m", "pip", "install", "-q",
                                      f"git+{URL}", "ipywidgets>=8,<9"]]
    assert calls[0][1] == {"check": True}
    uses_data = "load_cifar10" in source
    assert loads == (["test"] if uses_data else [])


def test_data_chapters_fetch_data_in_the_setup_cell():
    for path in CHAPTERS:
        cells, nb = _cells(path)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code"
                         and c.get("id") != "eqlib-setup")
        # code that loads images (reading a recorded JSON file does not count)
        uses = bool(re.search(r"load_cifar10\(|experiments import (cifar_mlp|gcnn_barrier)"
                              r"|experiments\.(cifar_mlp|gcnn_barrier)|load_merge_data\(|load_data\(",
                              code))
        assert ("load_cifar10" in cells["eqlib-setup"].source) == uses, path.name
