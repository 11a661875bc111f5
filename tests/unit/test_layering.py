"""The layering of eqlib is enforced: a module imports only from lower layers.

The table below is the one in CONTRIBUTING.md ("Layering"); ``test_contributing_table``
checks the two agree, so the table is written once and tested twice. Modules of one layer
are independent of each other, except inside one package (``eqlib.latent.*`` may import
``eqlib.latent.*``). Every import counts, module-level or inside a function, so a lazy
import cannot hide an upward edge.
"""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = ROOT / "eqlib"

# Lowest first. A module may import from any strictly lower layer.
LAYERS: list[tuple[str, ...]] = [
    ("validation",),
    ("seeds", "io", "budget", "device"),
    ("groups",),
    ("actions",),
    ("images",),
    ("models",),
    ("symmetries",),
    ("submodels",),
    ("latent",),
    ("matching", "data"),
    ("train",),
    ("analysis",),
    ("plots", "widgets"),
    ("experiments",),
    ("exercises",),
    ("assignments",),
]
RANK = {name: r for r, names in enumerate(LAYERS) for name in names}

# Core layers (validation … latent) must not hide imports inside functions.
CORE = {name for names in LAYERS[:RANK["latent"] + 1] for name in names}


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path, path.name == "__init__.py"


def _imports(name: str, path: pathlib.Path, is_pkg: bool):
    """(imported eqlib module relative to eqlib, line, inside a function?) for every import."""
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    tree = ast.parse(path.read_text())
    nested = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{mod}.{a.name}".strip(".") for a in node.names] if not node.module else [mod]
            elif (node.module or "").startswith("eqlib"):
                targets = [node.module.removeprefix("eqlib").lstrip(".")]
        elif isinstance(node, ast.Import):
            targets = [a.name.removeprefix("eqlib").lstrip(".") for a in node.names
                       if a.name == "eqlib" or a.name.startswith("eqlib.")]
        for t in targets:
            yield t, node.lineno, id(node) in nested


def _top(name: str) -> str:
    return name.split(".")[0]


def _edges():
    for name, path, is_pkg in _modules():
        if not name:
            continue  # eqlib/__init__.py re-exports the public layers
        for target, line, lazy in _imports(name, path, is_pkg):
            if target and _top(target) != _top(name):
                yield name, target, f"eqlib/{path.relative_to(PKG)}:{line}", lazy


def test_every_module_has_a_layer():
    missing = sorted({_top(n) for n, _, _ in _modules() if n and _top(n) not in RANK})
    assert not missing, f"modules without a layer in LAYERS (add them here and in CONTRIBUTING.md): {missing}"


def test_no_module_imports_from_a_higher_or_equal_layer():
    bad = [f"{where}: {src} imports {dst}" for src, dst, where, _ in _edges()
           if RANK[_top(dst)] >= RANK[_top(src)]]
    assert not bad, "imports against the layering (lowest first: " + " → ".join(
        "/".join(l) for l in LAYERS) + "):\n" + "\n".join(bad)


def test_plots_do_not_import_experiments():
    edges = [(s, d) for s, d, _, _ in _edges() if _top(s) == "plots" and _top(d) == "experiments"]
    assert not edges, f"plots import experiments: {edges}"


def test_core_has_no_function_level_imports():
    """In the core layers a function-level import of eqlib can only hide a cycle."""
    bad = [f"{where}: {src} imports {dst} inside a function" for src, dst, where, lazy in _edges()
           if lazy and _top(src) in CORE]
    assert not bad, "\n".join(bad)


def test_layering_detects_an_upward_import(tmp_path, monkeypatch):
    """The checker itself can fail: a synthetic groups module importing latent is caught."""
    fake = tmp_path / "eqlib"
    (fake / "groups.py").parent.mkdir(parents=True)
    (fake / "groups.py").write_text("from .latent import latent_actions\n")
    (fake / "latent").mkdir()
    (fake / "latent" / "__init__.py").write_text("def f():\n    from ..symmetries import x\n")
    monkeypatch.setitem(globals(), "PKG", fake)
    edges = {(s, d, lazy) for s, d, _, lazy in _edges()}
    assert ("groups", "latent", False) in edges
    assert ("latent", "symmetries", True) in edges
    with pytest.raises(AssertionError, match="groups imports latent"):
        test_no_module_imports_from_a_higher_or_equal_layer()


def _imports_of(pred) -> list[tuple[str, str, str]]:
    """(source module, imported module, where) for every eqlib import of the modules ``pred`` accepts."""
    return [(s, d, where) for s, d, where, _ in _edges() if pred(s)]


def test_data_imports_no_image_helpers():
    """``data`` only finds, downloads, verifies and decodes: mirrors, rotations and
    normalisation live in ``images``, the actions in ``actions``."""
    bad = [f"{where}: {s} imports {d}" for s, d, where in _imports_of(lambda s: _top(s) == "data")
           if _top(d) in ("actions", "images")]
    assert not bad, "\n".join(bad)


def test_train_does_not_import_data():
    """The trainer takes tensors; CIFAR-10's statistics and transforms come from ``images``."""
    bad = [f"{where}: {s} imports {d}" for s, d, where in _imports_of(lambda s: _top(s) == "train")
           if _top(d) == "data"]
    assert not bad, "\n".join(bad)


def test_plots_and_analysis_do_not_import_train():
    """Figures and analyses take trained models; the image helpers they need live in ``images``."""
    bad = [f"{where}: {s} imports {d}" for s, d, where in _imports_of(lambda s: _top(s) in ("plots", "analysis"))
           if _top(d) == "train"]
    assert not bad, "\n".join(bad)


#: global seeding: torch's, numpy's and Python's module-level generators
GLOBAL_SEEDING = re.compile(r"\btorch\.(?:cuda\.)?manual_seed(?:_all)?\s*\(|\b(?:np|numpy)\.random\.seed\s*\("
                            r"|(?<![\w.])random\.seed\s*\(|\bfrom\s+torch\s+import\s+[^\n]*\bmanual_seed\b")


def _global_seeding_sites(root: pathlib.Path) -> list[str]:
    return [f"eqlib/{path.relative_to(root)}:{i}: {line.strip()}"
            for path in sorted(root.rglob("*.py")) if path.relative_to(root) != pathlib.Path("seeds.py")
            for i, line in enumerate(path.read_text().splitlines(), 1) if GLOBAL_SEEDING.search(line)]


def test_global_seeding_only_in_seeds():
    """``torch.manual_seed``, ``np.random.seed`` and ``random.seed`` appear only in
    ``eqlib/seeds.py``; everything else draws from seeded generators (``seeds.torch_generator``)."""
    bad = _global_seeding_sites(PKG)
    assert not bad, "global seeding outside eqlib/seeds.py (use eqlib.seeds):\n" + "\n".join(bad)


def test_global_seeding_checker_can_fail(tmp_path):
    """The pattern catches every spelling we had, and lets seeded generators through."""
    (tmp_path / "a.py").write_text("torch.manual_seed(0)\nnp.random.seed(1)\nrandom.seed(2)\n"
                                   "torch.cuda.manual_seed_all(3)\n")
    (tmp_path / "b.py").write_text("g = torch.Generator().manual_seed(0)\ngen.manual_seed(1)\n"
                                   "rng = np.random.default_rng(2)\nnumpy_rng.seed\n")
    (tmp_path / "seeds.py").write_text("torch.manual_seed(0)\n")
    assert [s.split(":")[1] for s in _global_seeding_sites(tmp_path)] == ["1", "2", "3", "4"]


def test_import_eqlib_imports_latent():
    import eqlib

    assert eqlib.latent.latent_actions is not None


@pytest.mark.parametrize("module", ["eqlib.latent.attention", "eqlib.latent.weights", "eqlib.matching",
                                    "eqlib.submodels"])
def test_core_modules_import_first_in_a_fresh_interpreter(module):
    """Importing a deep module first (not through ``import eqlib``) must not hit a cycle."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_contributing_table():
    """CONTRIBUTING.md's layering table lists exactly LAYERS, in order."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text.split("## Layering", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\|\s*(\d+)\s*\|([^|]*)\|", section, flags=re.M)
    table = [tuple(re.findall(r"`([a-z_]+)`", mods)) for _, mods in rows]
    assert table == LAYERS, f"CONTRIBUTING.md's table {table} differs from {LAYERS}"


def test_nothing_cites_files_outside_the_repository():
    pattern = re.compile(r"THEORY\.md|DESIGN\.md|ANCHORS\.md|\.\./shared")
    files = [p for p in ROOT.rglob("*") if p.suffix in {".py", ".md", ".ipynb", ".yml", ".toml", ".txt", ".cfg"}
             and p.is_file() and not {".git", "_build", ".ipynb_checkpoints"} & set(p.parts)]
    bad = [str(p.relative_to(ROOT)) for p in files if p.resolve() != pathlib.Path(__file__).resolve()
           and pattern.search(p.read_text(errors="ignore"))]
    assert not bad, f"files citing documents outside the repository: {bad}"


def test_only_the_command_line_switches_the_matplotlib_backend():
    """A library call (``run(out=...)`` from a notebook) never switches the user's backend;
    ``protocol.main``, a command line's process, is the one place that selects Agg."""
    found = {str(p.relative_to(ROOT)) for p in PKG.rglob("*.py") if "matplotlib.use(" in p.read_text()}
    assert found == {"eqlib/experiments/protocol.py"}, found


def test_one_assignment_helper():
    """Every optimal matching (units, channels, heads, tokens, filters) goes through
    ``eqlib.symmetries.best_assignment``, the one call of linear_sum_assignment."""
    found = {str(p.relative_to(ROOT)) for p in PKG.rglob("*.py") if "linear_sum_assignment(" in p.read_text()}
    assert found == {"eqlib/symmetries.py"}, found
